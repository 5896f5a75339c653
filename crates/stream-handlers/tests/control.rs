//! Control messages on arbitrary bytes: the property `fuzz/fuzz_targets/stream_control.rs`
//! fuzzes, checked here on every test run. Whatever parses emits to as many bytes and parses
//! back equal; messages without a predicate emit exactly their input.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use stream_handlers::control::ControlMessage;

/// Bytes that are often a control message: version 1 (mostly), an opcode around the valid
/// ones, and for predicates a kind and width near the valid ones, then arbitrary operands
/// and sometimes a byte too many or too few.
fn near_control() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![9 => Just(1u8), 1 => any::<u8>()],
        0u8..9,
        0u8..6,
        0u8..6,
        proptest::collection::vec(any::<u8>(), 0..20),
        -1i8..=1,
    )
        .prop_map(|(version, op, kind, width, operands, slack)| {
            let mut b = vec![version, op];
            let len = match op {
                1 | 3 | 5 => 4,
                2 => 14,
                4 => 8,
                6 => 2,
                7 => 16,
                _ => operands.len(),
            };
            let mut ops: Vec<u8> = operands.iter().copied().cycle().take(len).collect();
            ops.resize(len, 0);
            // The predicate's kind, then after its 2-byte offset its width: after the
            // 2-byte handler (and for a destination's predicate, the 2-byte destination).
            let at = match op {
                2 => Some(2),
                7 => Some(4),
                _ => None,
            };
            if let Some(at) = at {
                ops[at] = kind;
                ops[at + 3] = width;
            }
            b.extend_from_slice(&ops);
            match slack {
                -1 => {
                    b.pop();
                }
                1 => b.push(0),
                _ => {}
            }
            b
        })
}

fn check(data: &[u8]) -> Result<bool, TestCaseError> {
    let Ok(m) = ControlMessage::parse(data) else {
        return Ok(false);
    };
    let mut out = Vec::new();
    m.emit(&mut out);
    prop_assert_eq!(out.len(), data.len());
    prop_assert_eq!(ControlMessage::parse(&out), Ok(m));
    if !matches!(
        m,
        ControlMessage::SetPredicate { .. } | ControlMessage::SetDestPredicate { .. }
    ) {
        prop_assert_eq!(&out[..], data);
    }
    Ok(true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn whatever_parses_emits_and_parses_back_equal(data in near_control()) {
        check(&data)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..24)) {
        check(&data)?;
    }
}

/// The generator is not vacuous: it reaches every opcode's success path, predicates included.
#[test]
fn the_generator_reaches_every_message() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = [false; 8];
    let mut kinds = [[false; 5]; 2];
    for _ in 0..6_000 {
        let data = near_control().new_tree(&mut runner).unwrap().current();
        if ControlMessage::parse(&data).is_ok() {
            seen[usize::from(data[1])] = true;
            // The predicate's kind byte.
            match data[1] {
                2 => kinds[0][usize::from(data[4])] = true,
                7 => kinds[1][usize::from(data[6])] = true,
                _ => {}
            }
        }
    }
    assert_eq!(&seen[1..], &[true; 7]);
    assert_eq!(kinds, [[true; 5]; 2]);
}
