//! Random instruction streams on a real store against a reference interpreter that follows
//! the paper's pseudo-code (Figs. 3 and 6) literally, with `get`/`put` on the ESS model:
//! the same verdicts, aborts and rewritten operands, and the same store contents after
//! every instruction, with time advancing so bindings expire mid-stream.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use esp_proto::exec::{Abort, Verdict, execute};
use esp_proto::instr::{CombineOp, CompareOp, Instruction};
use ess::oracle::Oracle;
use ess::{Ess, EssConfig, Full, HashKey, Instant, Tag, Value};
use proptest::prelude::*;

/// The paper's pseudo-code over the plain model. COLLECT checks that its child count exists
/// first, as ours does (the paper folds the value in, then aborts); every read and write is
/// otherwise in Fig. 6's order.
fn reference(o: &mut Oracle, now: Instant, instr: &mut Instruction) -> Result<Verdict, Abort> {
    let put =
        |o: &mut Oracle, t: Tag, v: u64| o.put(now, t, Value(v)).map_err(|Full| Abort::StoreFull);
    match instr {
        Instruction::Count { counter, thresh } => {
            let a = o.get(now, *counter).map_or(0, |v| v.0).saturating_add(1);
            put(o, *counter, a)?;
            Ok(if a <= *thresh {
                Verdict::Forward
            } else {
                Verdict::Drop
            })
        }
        Instruction::Compare { value, current, op } => match o.get(now, *value) {
            None => {
                put(o, *value, current.0)?;
                Ok(Verdict::Forward)
            }
            Some(a) if op.holds(a.0, current.0) => {
                put(o, *value, current.0)?;
                Ok(Verdict::Forward)
            }
            Some(_) => Ok(Verdict::Drop),
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
            let b = o
                .get(now, *counter)
                .ok_or(Abort::MissingState)?
                .0
                .wrapping_sub(1);
            put(o, *counter, b)?;
            if b == 0 {
                *val = Value(a);
                Ok(Verdict::Forward)
            } else {
                Ok(Verdict::Drop)
            }
        }
    }
}

fn instruction() -> impl Strategy<Value = Instruction> {
    let tag = (0u64..6).prop_map(Tag);
    let cmp = (0u8..6).prop_map(|b| CompareOp::try_from(b).unwrap());
    let comb = (0u8..6).prop_map(|b| CombineOp::try_from(b).unwrap());
    prop_oneof![
        (tag.clone(), 0u64..4).prop_map(|(counter, thresh)| Instruction::Count { counter, thresh }),
        (tag.clone(), 0u64..8, cmp).prop_map(|(value, c, op)| Instruction::Compare {
            value,
            current: Value(c),
            op
        }),
        (tag.clone(), 0u64..8, tag, comb).prop_map(|(value, v, counter, op)| {
            Instruction::Collect {
                value,
                val: Value(v),
                counter,
                op,
            }
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn store_and_packets_match_the_reference_interpreter(
        capacity_log2 in 1u8..4,
        lifetime in 1u64..12,
        seed in any::<u64>(),
        stream in proptest::collection::vec((0u64..3, instruction()), 1..150),
    ) {
        let config = EssConfig::new(capacity_log2, lifetime, 1, HashKey::from_seed(seed)).unwrap();
        let (mut ess, mut model) = (Ess::new(config), Oracle::new(&config));
        let mut now = 0u64;
        for (step, instr) in stream {
            now += step;
            let t = Instant::from_ticks(now);
            let (mut ours, mut theirs) = (instr, instr);
            let got = execute(&mut ess, t, &mut ours);
            let want = reference(&mut model, t, &mut theirs);
            prop_assert_eq!(got, want, "{:?} at t{}", instr, now);
            prop_assert_eq!(ours, theirs, "rewritten operands of {:?}", instr);
            for tag in 0..6 {
                prop_assert_eq!(ess.get(t, Tag(tag)), model.get(t, Tag(tag)), "tag {} after {:?}", tag, instr);
            }
        }
    }
}
