//! Random instruction streams on a real store against a reference interpreter that follows
//! the paper's pseudo-code (Figs. 3, 6 and 9) literally, with `get`/`put` on the ESS model:
//! the same verdicts, aborts and rewritten operands, and the same store contents after
//! every instruction, with time advancing so bindings expire mid-stream.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use esp_proto::exec::{Abort, Context, Env, Verdict, execute};
use esp_proto::idmap::IdMap;
use esp_proto::instr::{CombineOp, Instruction, Robust};
use ess::oracle::Oracle;
use ess::{Ess, EssConfig, Full, HashKey, Instant, Tag, Value};
use proptest::prelude::*;
use support::instruction;

/// The paper's pseudo-code over the plain model. COLLECT and RCOLLECT check that the state
/// they need exists first, as ours do (the paper folds the value in, then aborts), and a
/// multi-tag instruction first checks the store has room for every binding it may create
/// (nil operand tags, counted per operand); every read and write is otherwise in the
/// figures' order.
fn reference(
    o: &mut Oracle,
    env: &Env,
    cid: u32,
    now: Instant,
    instr: &mut Instruction,
) -> Result<Verdict, Abort> {
    let put =
        |o: &mut Oracle, t: Tag, v: u64| o.put(now, t, Value(v)).map_err(|Full| Abort::StoreFull);
    let get0 = |o: &Oracle, t: Tag| o.get(now, t).map_or(0, |v| v.0);
    let pass = |c: bool| if c { Verdict::Forward } else { Verdict::Drop };
    let word = |t: Tag, i: usize| Tag(t.0.wrapping_add(i as u64));
    let room = |o: &Oracle, need: usize| {
        if need == 0 || o.live(now) + need <= o.capacity() {
            Ok(())
        } else {
            Err(Abort::StoreFull)
        }
    };
    match instr {
        Instruction::Count { counter, thresh } => {
            let a = get0(o, *counter).saturating_add(1);
            put(o, *counter, a)?;
            Ok(pass(a <= *thresh))
        }
        Instruction::Compare { value, current, op } => match o.get(now, *value) {
            Some(a) if !op.holds(a.0, current.0) => Ok(Verdict::Drop),
            _ => {
                put(o, *value, current.0)?;
                Ok(Verdict::Forward)
            }
        },
        Instruction::Collect {
            value,
            val,
            counter,
            op,
        } => {
            o.get(now, *counter).ok_or(Abort::MissingState)?;
            let a = match o.get(now, *value) {
                None => val.0,
                Some(a) => op.apply(a.0, val.0),
            };
            put(o, *value, a)?;
            // Read after the write, as in Fig. 6 (it matters when V and C are one tag).
            let b = get0(o, *counter).wrapping_sub(1);
            put(o, *counter, b)?;
            if b == 0 {
                *val = Value(a);
            }
            Ok(pass(b == 0))
        }
        Instruction::Rchld {
            children,
            counter,
            robust,
        } => {
            let w = usize::from(robust.idmap.words());
            let nil = (0..w)
                .filter(|&i| o.get(now, word(*children, i)).is_none())
                .count()
                + usize::from(o.get(now, *counter).is_none());
            room(o, nil)?;
            for i in 0..w {
                let a = get0(o, word(*children, i)) | robust.idmap.word(i);
                put(o, word(*children, i), a)?;
            }
            let b = get0(o, *counter).saturating_add(1);
            put(o, *counter, b)?;
            if b <= u64::from(robust.thresh) {
                robust.idmap = IdMap::for_node(&env.idmap_key, cid, robust.k, w as u8);
            }
            Ok(pass(b <= u64::from(robust.thresh)))
        }
        Instruction::Rcollect {
            value,
            val,
            heard,
            children,
            forwarded,
            op,
            robust,
        } => {
            let w = usize::from(robust.idmap.words());
            if (0..w).any(|i| o.get(now, word(*children, i)).is_none()) {
                return Err(Abort::MissingState);
            }
            let duplicate = (0..w).all(|i| {
                let m = robust.idmap.word(i);
                get0(o, word(*heard, i)) & m == m
            });
            if duplicate && o.get(now, *value).is_none() {
                return Err(Abort::MissingState);
            }
            let mut nil = usize::from(o.get(now, *forwarded).is_none());
            if !duplicate {
                nil += (0..w)
                    .filter(|&i| o.get(now, word(*heard, i)).is_none())
                    .count()
                    + usize::from(o.get(now, *value).is_none());
            }
            room(o, nil)?;
            // α is the figure's local variable; β is read after the writes.
            let mut alpha: Vec<u64> = (0..w).map(|i| get0(o, word(*heard, i))).collect();
            let xi = if duplicate {
                get0(o, *value)
            } else {
                for (i, a) in alpha.iter_mut().enumerate() {
                    *a = get0(o, word(*heard, i)) | robust.idmap.word(i);
                    put(o, word(*heard, i), *a)?;
                }
                let x = match o.get(now, *value) {
                    None => val.0,
                    Some(x) => op.apply(x.0, val.0),
                };
                put(o, *value, x)?;
                x
            };
            if (0..w).any(|i| alpha[i] != get0(o, word(*children, i))) {
                return Ok(Verdict::Drop);
            }
            let nu = get0(o, *forwarded).saturating_add(1);
            put(o, *forwarded, nu)?;
            if nu <= u64::from(robust.thresh) {
                robust.idmap = IdMap::for_node(&env.idmap_key, cid, robust.k, w as u8);
                *val = Value(xi);
            }
            Ok(pass(nu <= u64::from(robust.thresh)))
        }
        Instruction::Get { tag, value } => {
            *value = o.get(now, *tag).ok_or(Abort::MissingState)?;
            Ok(Verdict::Forward)
        }
        Instruction::Put { tag, value } => put(o, *tag, value.0).map(|()| Verdict::Forward),
        Instruction::Update { tag, value, op } => {
            let x = match o.get(now, *tag) {
                None => value.0,
                Some(a) => op.apply(a.0, value.0),
            };
            put(o, *tag, x)?;
            *value = Value(x);
            Ok(Verdict::Forward)
        }
        Instruction::Mark { tag } => put(o, *tag, env.node).map(|()| Verdict::Forward),
        Instruction::LastMark { tag, node } => {
            if o.get(now, *tag).is_some() {
                *node = Value(env.node);
            }
            Ok(Verdict::Forward)
        }
        Instruction::Subcast { tag } | Instruction::Exists { tag } => {
            Ok(pass(o.get(now, *tag).is_some()))
        }
        Instruction::Absent { tag } => Ok(pass(o.get(now, *tag).is_none())),
        Instruction::Param { param, op, value } => {
            *value = Value(op.apply(value.0, env.param(*param)));
            Ok(Verdict::Forward)
        }
        Instruction::PutParam { tag, param } => {
            put(o, *tag, env.param(*param)).map(|()| Verdict::Forward)
        }
        Instruction::Test { tag, value, op } => Ok(pass(
            o.get(now, *tag).is_some_and(|s| op.holds(s.0, value.0)),
        )),
        Instruction::Cswap { tag, expect, new } => {
            let old = get0(o, *tag);
            // CSWAP creates its binding whether or not it swaps.
            put(o, *tag, old)?;
            let swapped = old == expect.0;
            if swapped {
                put(o, *tag, new.0)?;
            }
            *expect = Value(old);
            Ok(pass(swapped))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn store_and_packets_match_the_reference_interpreter(
        capacity_log2 in 1u8..4,
        lifetime in 1u64..12,
        seed in any::<u64>(),
        stream in proptest::collection::vec((0u64..3, instruction()), 1..200),
    ) {
        let config = EssConfig::new(capacity_log2, lifetime, 1, HashKey::from_seed(seed)).unwrap();
        let (mut ess, mut model) = (Ess::new(config), Oracle::new(&config));
        let mut now = 0u64;
        for (step, instr) in stream {
            now += step;
            let t = Instant::from_ticks(now);
            let (mut ours, mut theirs) = (instr, instr);
            let env = Env { iface: 2, queue_len: now, timestamp: now * 10, ..Env::new(0xA, HashKey::from_seed(seed ^ 1)) };
            let got = execute(&mut Context::new(&mut ess, &env, 7), t, &mut ours);
            let want = reference(&mut model, &env, 7, t, &mut theirs);
            prop_assert_eq!(got, want, "{:?} at t{}", instr, now);
            prop_assert_eq!(ours, theirs, "rewritten operands of {:?}", instr);
            if ours != instr {
                prop_assert!(instr.rewrites_operands(), "{:?} changed operands but claims it never does", instr);
            }
            for tag in 0..6 {
                prop_assert_eq!(ess.get(t, Tag(tag)), model.get(t, Tag(tag)), "tag {} after {:?}", tag, instr);
            }
        }
    }
}

/// RCOLLECT from `child` (its IDmap: the single bit `child`) carrying `val`.
fn report(child: u32, val: u64) -> Instruction {
    let mut idmap = IdMap::empty(2);
    idmap.set(child);
    Instruction::Rcollect {
        value: Tag(10),
        val: Value(val),
        heard: Tag(20),
        children: Tag(30),
        forwarded: Tag(40),
        op: CombineOp::Add,
        robust: Robust {
            thresh: 2,
            k: 1,
            idmap,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// §4.3.1: a packet RCOLLECT recognises as a duplicate never changes the computation's
    /// state (the running value and the filter of children heard from), however often and
    /// in whatever order copies arrive; the node forwards the aggregate of each child's
    /// first report, at most `thresh` times, and only once every child has reported.
    #[test]
    fn rcollect_duplicates_never_change_the_computation(
        children in 1u32..40,
        order in proptest::collection::vec((0u32..40, 0u64..1000), 1..200),
    ) {
        let config = EssConfig::new(6, 1_000, 1, HashKey::from_seed(3)).unwrap();
        let mut ess = Ess::new(config);
        let env = Env::new(1, HashKey::from_seed(4));
        let t = Instant::from_ticks(0);
        for c in 0..children {
            let mut i = Instruction::Rchld {
                children: Tag(30),
                counter: Tag(50),
                robust: Robust { thresh: 1, k: 1, idmap: match report(c, 0) {
                    Instruction::Rcollect { robust, .. } => robust.idmap,
                    _ => unreachable!(),
                } },
            };
            execute(&mut Context::new(&mut ess, &env, 7), t, &mut i).unwrap();
        }
        let mut first: std::collections::BTreeMap<u32, u64> = Default::default();
        let mut forwarded = 0;
        for (c, val) in order {
            let c = c % children;
            let state = |ess: &Ess| (ess.get(t, Tag(10)), ess.get(t, Tag(20)), ess.get(t, Tag(21)));
            let before = state(&ess);
            let mut i = report(c, val);
            let v = execute(&mut Context::new(&mut ess, &env, 7), t, &mut i).unwrap();
            if let std::collections::btree_map::Entry::Vacant(e) = first.entry(c) {
                e.insert(val);
            } else {
                prop_assert_eq!(state(&ess), before, "a duplicate from child {} changed state", c);
            }
            if v == Verdict::Forward {
                forwarded += 1;
                prop_assert_eq!(first.len() as u32, children, "forwarded before every child reported");
                let Instruction::Rcollect { val: Value(sum), .. } = i else { unreachable!() };
                prop_assert_eq!(sum, first.values().sum::<u64>());
            }
        }
        prop_assert!(forwarded <= 2);
        if first.len() as u32 == children {
            prop_assert!(forwarded >= 1, "complete but never forwarded");
        }
    }
}
