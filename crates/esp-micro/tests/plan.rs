//! COUNT written in PLAN (`examples/esp-microcode/count.plan`, compiled by
//! `snap_vm::plan::compile_micro`) against the built-in (`esp_proto::exec::execute`), as
//! `tests/count.rs` checks the hand-written `count.snap`: random pre-populated stores,
//! counter tags and thresholds over the whole u64 range, time advancing, a store small
//! enough to fill. Equal verdicts, aborts, operands and store contents after every packet.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use esp_micro::Microcode;
use esp_micro::body::{MAX_BODY_LEN, encode};
use esp_proto::exec::{Context, Env, execute};
use esp_proto::instr::Instruction;
use ess::{HashKey, Instant, Tag};
use proptest::prelude::*;
use snap_vm::plan::{Options, ServiceSig, compile_micro};
use support::{Pre, TAGS, populated, pre, same_contents, value};

const COUNT_PLAN: &str = include_str!("../../../examples/esp-microcode/count.plan");

fn compile(source: &str) -> Microcode {
    let opts = Options {
        fold_bound: 0,
        services: ServiceSig::esp_micro(),
        entry: "count".into(),
    };
    let compiled = compile_micro(source, &opts).unwrap();
    Microcode::new(&compiled.program).unwrap()
}

/// (tag index, threshold, ticks since the last packet).
type Packets = Vec<(usize, u64, u64)>;

/// The first difference between the built-in COUNT and `micro` on `packets`.
fn differ(micro: &Microcode, pre: &Pre, packets: &Packets) -> Result<(), String> {
    let (mut a, mut b, mut now) = populated(pre);
    let env = Env::new(1, HashKey::from_seed(9));
    for (i, &(t, thresh, dt)) in packets.iter().enumerate() {
        now += dt;
        let at = Instant::from_ticks(now);
        let counter = Tag(TAGS[t]);
        let mut instr = Instruction::Count { counter, thresh };
        let built_in = execute(&mut Context::new(&mut a, &env, 5), at, &mut instr);
        let mut operands = [counter.0, thresh];
        let plan = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut operands);
        if built_in != plan {
            return Err(format!(
                "packet {i} (tag {:#x}, thresh {thresh}): built-in {built_in:?}, PLAN {plan:?}",
                counter.0
            ));
        }
        if instr
            != (Instruction::Count {
                counter: Tag(operands[0]),
                thresh: operands[1],
            })
        {
            return Err(format!("packet {i}: operands {instr:?} vs {operands:?}"));
        }
        same_contents(i, &mut a, &mut b, at)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn plan_count_is_the_built_in(
        pre in pre(6),
        packets in proptest::collection::vec((0..TAGS.len(), value(6), 0u64..12), 1..40),
    ) {
        prop_assert_eq!(differ(&compile(COUNT_PLAN), &pre, &packets), Ok(()));
    }
}

#[test]
fn plan_count_fits_inline() {
    let opts = Options {
        fold_bound: 0,
        services: ServiceSig::esp_micro(),
        entry: "count".into(),
    };
    let compiled = compile_micro(COUNT_PLAN, &opts).unwrap();
    let field = encode(&compiled.program, &[7, u64::MAX]).unwrap();
    assert!(field.len() <= MAX_BODY_LEN, "{} bytes", field.len());
}

/// The comparison can fail: COUNT written wrong in PLAN is caught.
#[test]
fn wrong_plan_count_is_caught() {
    let stream: Packets = (0..6).map(|_| (3, 2, 1)).collect();
    assert_eq!(differ(&compile(COUNT_PLAN), &Vec::new(), &stream), Ok(()));
    let body = "ess.count(counter) > thresh";
    assert!(COUNT_PLAN.contains(body));
    // Off by one: drop from count = thresh on.
    let off_by_one = compile(&COUNT_PLAN.replace(body, "ess.count(counter) >= thresh"));
    assert!(differ(&off_by_one, &Vec::new(), &stream).is_err());
    // Counting twice.
    let twice = COUNT_PLAN.replace(
        body,
        "ess.count(counter) > thresh andalso ess.count(counter) > thresh",
    );
    assert!(differ(&compile(&twice), &Vec::new(), &stream).is_err());
    // A threshold from 2^63 on: caught only if `>` on words were signed; it is not.
    let top: Packets = vec![(3, u64::MAX, 1), (3, 1 << 63, 1)];
    assert_eq!(differ(&compile(COUNT_PLAN), &Vec::new(), &top), Ok(()));
}
