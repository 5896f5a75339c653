//! The shipped microcoded COLLECT (`examples/esp-microcode/collect.snap`) against the
//! built-in (`esp_proto::exec::execute`): two stores built alike, random pre-populated
//! values and child counts (small ones, so counts reach 0, and 0, so they wrap), random
//! value and counter tags (one tag as both included), values over the whole u64 range,
//! all six operators, time advancing so bindings expire, a store small enough to fill.
//! Equal verdicts, aborts (MissingState, StoreFull) and operands, and equal store contents
//! after every packet.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use esp_micro::Microcode;
use esp_proto::exec::{Abort, Context, Env, execute};
use esp_proto::instr::{CombineOp, Instruction};
use ess::{HashKey, Instant, Tag, Value};
use proptest::prelude::*;
use support::{Pre, TAGS, populated, pre, same_contents, store, value};

const COLLECT: &str = include_str!("../microcode/collect.snap");

/// (value tag index, val, counter tag index, operator index, ticks since the last packet).
type Packets = Vec<(usize, u64, usize, usize, u64)>;

/// Runs `packets` through the built-in COLLECT and through `micro` on two stores
/// pre-populated by `pre`; the first difference, if any.
fn differ(micro: &Microcode, pre: &Pre, packets: &Packets) -> Result<(), String> {
    let (mut a, mut b, mut now) = populated(pre);
    let env = Env::new(1, HashKey::from_seed(9));
    for (i, &(v, val, c, op, dt)) in packets.iter().enumerate() {
        now += dt;
        let at = Instant::from_ticks(now);
        let (value, counter) = (Tag(TAGS[v]), Tag(TAGS[c]));
        let op_enum = CombineOp::ALL[op];
        let mut instr = Instruction::Collect {
            value,
            val: Value(val),
            counter,
            op: op_enum,
        };
        let built_in = execute(&mut Context::new(&mut a, &env, 5), at, &mut instr);
        let mut operands = [value.0, val, counter.0, op as u64];
        let microcoded = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut operands);
        if built_in != microcoded {
            return Err(format!(
                "packet {i} (value {:#x}, val {val:#x}, counter {:#x}, {op_enum:?}): built-in \
                 {built_in:?}, microcode {microcoded:?}",
                value.0, counter.0
            ));
        }
        let Instruction::Collect {
            value: v,
            val: x,
            counter: c,
            op: o,
        } = instr
        else {
            unreachable!()
        };
        let expect = [v.0, x.0, c.0, u8::from(o).into()];
        if expect != operands {
            return Err(format!("packet {i}: operands {expect:?} vs {operands:?}"));
        }
        same_contents(i, &mut a, &mut b, at)?;
    }
    Ok(())
}

fn packets() -> impl Strategy<Value = Packets> {
    // Value tags and counter tags mostly from small, overlapping ranges, so counters exist,
    // reach 0, and sometimes are the value tag itself.
    let tag = prop_oneof![3 => 0..5usize, 1 => 0..TAGS.len()];
    proptest::collection::vec((tag.clone(), value(4), tag, 0..6usize, 0u64..12), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn microcoded_collect_is_the_built_in(pre in pre(4), packets in packets()) {
        let micro = Microcode::assemble(COLLECT).unwrap();
        prop_assert_eq!(differ(&micro, &pre, &packets), Ok(()));
    }
}

/// Every operator, across the sign bit, folding into an existing value with a child count
/// of 1 (forwarded) and of 2 (dropped), and the value tag also the counter.
#[test]
fn every_operator_across_the_sign_bit() {
    let micro = Microcode::assemble(COLLECT).unwrap();
    let values = [0, 1, (1 << 63) - 1, 1 << 63, u64::MAX];
    for op in 0..6 {
        for &stored in &values {
            for &val in &values {
                for children in [1, 2] {
                    let pre: Pre = vec![(3, stored, 0), (4, children, 0)];
                    let stream: Packets = vec![(3, val, 4, op, 1), (3, val, 3, op, 1)];
                    assert_eq!(differ(&micro, &pre, &stream), Ok(()), "{op} {stored} {val}");
                }
            }
        }
    }
}

/// The comparison can fail: wrong microcode is caught.
#[test]
fn wrong_microcode_is_caught() {
    let right = Microcode::assemble(COLLECT).unwrap();
    // Two children report into value tag 3 (counter tag 4) with max.
    let pre: Pre = vec![(4, 2, 0)];
    let stream: Packets = vec![(3, 9, 4, 2, 1), (3, 5, 4, 2, 1)];
    assert_eq!(differ(&right, &pre, &stream), Ok(()));
    // Min for max.
    let swapped = COLLECT.replace("    ji min\n    ji max", "    ji max\n    ji min");
    assert_ne!(swapped, COLLECT);
    let wrong = Microcode::assemble(&swapped).unwrap();
    assert!(differ(&wrong, &pre, &stream).is_err());
    // Signed max: wrong only across the sign bit.
    let max = "max:                    ; [.., a, b]: a if a >u b, else b\n    pull 0\n    pushh @bias\n    wadd\n    pull 2\n    pushh @bias\n    wadd";
    assert!(COLLECT.contains(max));
    let wrong = Microcode::assemble(&COLLECT.replace(max, "max:\n    pull 0\n    pull 2")).unwrap();
    assert_eq!(differ(&wrong, &pre, &stream), Ok(()));
    assert!(differ(&wrong, &pre, &vec![(3, 1, 4, 2, 1), (3, u64::MAX, 4, 2, 1)]).is_err());
    // The child count read before the fold: wrong when one tag is both operands.
    let store = "store:                  ; [V, val, C, op, r]\n    pull 4\n    pull 1\n    calls \"ess.put\"     ; value <- r\n    pop\n    pull 2\n    calls \"ess.get\"";
    assert!(COLLECT.contains(store));
    let early = "store:\n    pull 2\n    calls \"ess.get\"\n    pull 5\n    pull 2\n    calls \"ess.put\"\n    pop";
    let wrong = Microcode::assemble(&COLLECT.replace(store, early)).unwrap();
    assert_eq!(differ(&wrong, &pre, &stream), Ok(()));
    assert!(differ(&wrong, &vec![(3, 2, 0)], &vec![(3, 1, 3, 0, 1)]).is_err());
    // Forwarding before the count reaches 0 (left ≠ 0 taken as done).
    let done = "    push 0\n    weq                 ; [V, val, C, op, r, left = 0]\n    bez wait";
    assert!(COLLECT.contains(done));
    let wrong =
        Microcode::assemble(&COLLECT.replace(done, "    push 0\n    weq\n    bne wait")).unwrap();
    assert!(differ(&wrong, &pre, &stream).is_err());
}

/// No child count: both abort with MissingState before writing anything.
#[test]
fn missing_count_aborts_alike() {
    let micro = Microcode::assemble(COLLECT).unwrap();
    let stream: Packets = vec![(3, 7, 4, 0, 1), (3, 7, 3, 0, 1)];
    assert_eq!(differ(&micro, &Vec::new(), &stream), Ok(()));
    let mut b = store();
    let env = Env::new(1, HashKey::from_seed(9));
    let mut operands = [3, 7, 4, 0];
    assert_eq!(
        micro.run(
            &mut Context::new(&mut b, &env, 5),
            Instant::from_ticks(1),
            &mut operands
        ),
        Err(Abort::MissingState)
    );
    assert_eq!(b.get(Instant::from_ticks(1), Tag(3)), None);
    assert_eq!(operands, [3, 7, 4, 0]);
}

/// A full store: a new value binding aborts with StoreFull on both and leaves the store
/// (the child count included) as it was.
#[test]
fn store_full_aborts_alike() {
    let pre: Pre = (0..8).map(|t| (t, 3, 0)).collect();
    let micro = Microcode::assemble(COLLECT).unwrap();
    let stream: Packets = vec![(8, 5, 0, 0, 1), (1, 5, 0, 0, 1), (8, 5, 0, 0, 40)];
    assert_eq!(differ(&micro, &pre, &stream), Ok(()));
    let mut b = store();
    for &t in &TAGS[..8] {
        b.put(Instant::from_ticks(0), Tag(t), Value(3)).unwrap();
    }
    let env = Env::new(1, HashKey::from_seed(9));
    let mut operands = [8, 5, 0, 0];
    assert_eq!(
        micro.run(
            &mut Context::new(&mut b, &env, 5),
            Instant::from_ticks(1),
            &mut operands
        ),
        Err(Abort::StoreFull)
    );
    assert_eq!(b.get(Instant::from_ticks(1), Tag(0)), Some(Value(3)));
}

/// An operator outside 0..=5 is malformed (checked on all 64 bits).
#[test]
fn bad_operator_is_malformed() {
    let micro = Microcode::assemble(COLLECT).unwrap();
    let env = Env::new(1, HashKey::from_seed(9));
    for op in [6, 1 << 32 | 1, u64::MAX] {
        let mut b = store();
        b.put(Instant::from_ticks(0), Tag(4), Value(1)).unwrap();
        let mut operands = [3, 5, 4, op];
        let r = micro.run(
            &mut Context::new(&mut b, &env, 5),
            Instant::from_ticks(1),
            &mut operands,
        );
        assert!(matches!(r, Err(Abort::Malformed(_))), "op {op}: {r:?}");
        assert_eq!(b.get(Instant::from_ticks(1), Tag(4)), Some(Value(1)));
    }
}
