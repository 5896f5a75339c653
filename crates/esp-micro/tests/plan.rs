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
use proptest::prelude::*;
use snap_vm::plan::{Options, ServiceSig, compile_micro};
use support::{Packets, count_differs, count_packets, pre};

const COUNT_PLAN: &str = include_str!("../microcode/count.plan");

fn compile(source: &str) -> Microcode {
    let opts = Options {
        fold_bound: 0,
        services: ServiceSig::esp_micro(),
        entry: "count".into(),
    };
    let compiled = compile_micro(source, &opts).unwrap();
    Microcode::new(&compiled.program).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn plan_count_is_the_built_in(
        pre in pre(6),
        packets in count_packets(),
    ) {
        prop_assert_eq!(count_differs(&compile(COUNT_PLAN), &pre, &packets), Ok(()));
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
    assert_eq!(
        count_differs(&compile(COUNT_PLAN), &Vec::new(), &stream),
        Ok(())
    );
    let body = "ess.count(counter) > thresh";
    assert!(COUNT_PLAN.contains(body));
    // Off by one: drop from count = thresh on.
    let off_by_one = compile(&COUNT_PLAN.replace(body, "ess.count(counter) >= thresh"));
    assert!(count_differs(&off_by_one, &Vec::new(), &stream).is_err());
    // Counting twice.
    let twice = COUNT_PLAN.replace(
        body,
        "ess.count(counter) > thresh andalso ess.count(counter) > thresh",
    );
    assert!(count_differs(&compile(&twice), &Vec::new(), &stream).is_err());
    // A threshold from 2^63 on: caught only if `>` on words were signed; it is not.
    let top: Packets = vec![(3, u64::MAX, 1), (3, 1 << 63, 1)];
    assert_eq!(
        count_differs(&compile(COUNT_PLAN), &Vec::new(), &top),
        Ok(())
    );
}
