//! The shipped microcoded COMPARE (`examples/esp-microcode/compare.snap`) against the
//! built-in (`esp_proto::exec::execute`): two stores built alike, random pre-populated
//! values, random value tags, current values over the whole u64 range and all six
//! operators, time advancing so bindings expire (a refreshed lifetime on either side would
//! show as a binding one store still has), a store small enough to fill. Equal verdicts,
//! aborts and operands, and equal store contents after every packet.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use esp_micro::Microcode;
use esp_proto::exec::{Abort, Context, Env, execute};
use esp_proto::instr::{CompareOp, Instruction};
use ess::{HashKey, Instant, Tag, Value};
use proptest::prelude::*;
use support::{Pre, TAGS, populated, pre, same_contents, store, value};

const COMPARE: &str = include_str!("../microcode/compare.snap");

/// (tag index, current, operator index, ticks since the last packet).
type Packets = Vec<(usize, u64, usize, u64)>;

/// Runs `packets` through the built-in COMPARE and through `micro` on two stores
/// pre-populated by `pre`; the first difference, if any.
fn differ(micro: &Microcode, pre: &Pre, packets: &Packets) -> Result<(), String> {
    let (mut a, mut b, mut now) = populated(pre);
    let env = Env::new(1, HashKey::from_seed(9));
    for (i, &(t, current, op, dt)) in packets.iter().enumerate() {
        now += dt;
        let at = Instant::from_ticks(now);
        let value = Tag(TAGS[t]);
        let op_enum = CompareOp::ALL[op];
        let mut instr = Instruction::Compare {
            value,
            current: Value(current),
            op: op_enum,
        };
        let built_in = execute(&mut Context::new(&mut a, &env, 5), at, &mut instr);
        let mut operands = [value.0, current, op as u64];
        let microcoded = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut operands);
        if built_in != microcoded {
            return Err(format!(
                "packet {i} (tag {:#x}, current {current:#x}, {op_enum:?}): built-in \
                 {built_in:?}, microcode {microcoded:?}",
                value.0
            ));
        }
        let Instruction::Compare {
            value: v,
            current: c,
            op: o,
        } = instr
        else {
            unreachable!()
        };
        if [v.0, c.0, u8::from(o).into()] != operands {
            return Err(format!(
                "packet {i}: operands {:?} vs {operands:?}",
                [v.0, c.0]
            ));
        }
        same_contents(i, &mut a, &mut b, at)?;
    }
    Ok(())
}

fn packets() -> impl Strategy<Value = Packets> {
    proptest::collection::vec((0..TAGS.len(), value(6), 0..6usize, 0u64..12), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn microcoded_compare_is_the_built_in(pre in pre(6), packets in packets()) {
        let micro = Microcode::assemble(COMPARE).unwrap();
        prop_assert_eq!(differ(&micro, &pre, &packets), Ok(()));
    }
}

/// Every operator on both sides of the sign bit, each tag pre-populated.
#[test]
fn every_operator_across_the_sign_bit() {
    let micro = Microcode::assemble(COMPARE).unwrap();
    let values = [0, 1, (1 << 63) - 1, 1 << 63, u64::MAX];
    for op in 0..6 {
        for &stored in &values {
            for &current in &values {
                let pre: Pre = vec![(3, stored, 0)];
                let stream: Packets = vec![(3, current, op, 1)];
                assert_eq!(
                    differ(&micro, &pre, &stream),
                    Ok(()),
                    "{op} {stored} {current}"
                );
            }
        }
    }
}

/// The comparison can fail: wrong microcode is caught.
#[test]
fn wrong_microcode_is_caught() {
    let right = Microcode::assemble(COMPARE).unwrap();
    let stream: Packets = (0..6).map(|op| (3, 7, op, 1)).collect();
    let pre: Pre = vec![(3, 7, 0)];
    assert_eq!(differ(&right, &pre, &stream), Ok(()));
    // `<=` computed as `<`: wrong when stored = current.
    let le = "le:\n    swap\n    wlt\n    lnot ";
    assert!(COMPARE.contains(le));
    let wrong =
        Microcode::assemble(&COMPARE.replace(le, "le:\n    wlt\n    nop\n    nop ")).unwrap();
    assert!(differ(&wrong, &pre, &stream).is_err());
    // Signed compare: wrong only across the sign bit.
    let signed = COMPARE.replace(
        "    pushh @bias\n    wadd                ; [v, c, op, s']",
        "",
    );
    let signed = signed.replace("    pull 2\n    pushh @bias\n    wadd", "    pull 2");
    assert_ne!(signed, COMPARE);
    let wrong = Microcode::assemble(&signed).unwrap();
    assert_eq!(differ(&wrong, &pre, &stream), Ok(()));
    assert!(differ(&wrong, &pre, &vec![(3, u64::MAX, 0, 1)]).is_err());
    // A nil value must be taken whatever the operator: here it is compared with 0 instead.
    let nil = "    pop                 ; nil: take the current value\n    ji take";
    assert!(COMPARE.contains(nil));
    let wrong =
        Microcode::assemble(&COMPARE.replace(nil, "    pop\n    push 0\n    ji present")).unwrap();
    assert!(differ(&wrong, &Vec::new(), &vec![(3, 5, 2, 1)]).is_err());
}

/// A full store: both abort with StoreFull on a new binding and leave the store as it
/// was; an existing binding still compares.
#[test]
fn store_full_aborts_alike() {
    let pre: Pre = (0..8).map(|t| (t, 1, 0)).collect();
    let micro = Microcode::assemble(COMPARE).unwrap();
    // Tags 8 and 9 find no room until the pre-populated bindings expire at tick 40.
    let stream: Packets = vec![
        (8, 5, 0, 1),
        (9, 5, 0, 1),
        (0, 5, 0, 1),
        (0, 0, 0, 1),
        (8, 5, 0, 40),
    ];
    assert_eq!(differ(&micro, &pre, &stream), Ok(()));
    let mut b = store();
    for &t in &TAGS[..8] {
        b.put(Instant::from_ticks(0), Tag(t), Value(1)).unwrap();
    }
    let env = Env::new(1, HashKey::from_seed(9));
    let mut operands = [8, 5, 0];
    assert_eq!(
        micro.run(
            &mut Context::new(&mut b, &env, 5),
            Instant::from_ticks(1),
            &mut operands
        ),
        Err(Abort::StoreFull)
    );
    assert_eq!(b.get(Instant::from_ticks(1), Tag(8)), None);
}

/// An operator outside 0..=5 is malformed, as a bad operator byte is for the built-in; the
/// check is on all 64 bits (2^32 + 1 is not operator 1).
#[test]
fn bad_operator_is_malformed() {
    let micro = Microcode::assemble(COMPARE).unwrap();
    let env = Env::new(1, HashKey::from_seed(9));
    for op in [6, 1 << 32 | 1, u64::MAX] {
        let mut b = store();
        let mut operands = [3, 5, op];
        let r = micro.run(
            &mut Context::new(&mut b, &env, 5),
            Instant::from_ticks(1),
            &mut operands,
        );
        assert!(matches!(r, Err(Abort::Malformed(_))), "op {op}: {r:?}");
        assert_eq!(b.get(Instant::from_ticks(1), Tag(3)), None);
    }
}
