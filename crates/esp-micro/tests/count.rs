//! The shipped microcoded COUNT (`examples/esp-microcode/count.snap`) against the built-in
//! (`esp_proto::exec::execute`): two stores built alike, random pre-populated counters
//! (saturation included), random counter tags and thresholds (the whole u64 range), time
//! advancing so bindings expire, a store small enough to fill. Equal verdicts, aborts and
//! operands, and equal store contents after every packet.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use esp_micro::Microcode;
use esp_proto::exec::{Context, Env};
use ess::{HashKey, Instant, Tag, Value};
use proptest::prelude::*;
use support::{Packets, Pre, TAGS, count_differs, count_packets, pre, store};

const COUNT: &str = include_str!("../microcode/count.snap");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn microcoded_count_is_the_built_in(pre in pre(6), packets in count_packets()) {
        let micro = Microcode::assemble(COUNT).unwrap();
        prop_assert_eq!(count_differs(&micro, &pre, &packets), Ok(()));
    }
}

/// The comparison can fail: wrong microcode is caught on a plain stream.
#[test]
fn wrong_microcode_is_caught() {
    let stream: Packets = (0..6).map(|_| (3, 2, 1)).collect();
    let right = Microcode::assemble(COUNT).unwrap();
    assert_eq!(count_differs(&right, &Vec::new(), &stream), Ok(()));
    // Off by one: forward while count < thresh (drop when thresh <= count).
    let compare = "    swap                ; [c, t, t', n']\n    wlt ";
    assert!(COUNT.contains(compare));
    let off_by_one = COUNT.replace(compare, "    wlt\n    lnot ");
    let wrong = Microcode::assemble(&off_by_one).unwrap();
    assert!(count_differs(&wrong, &Vec::new(), &stream).is_err());
    // Signed compare: right for small thresholds, wrong for thresholds from 2^63 on.
    let signed = COUNT.replace("    pushh @bias\n    wadd", "");
    let wrong = Microcode::assemble(&signed).unwrap();
    assert_eq!(count_differs(&wrong, &Vec::new(), &stream), Ok(()));
    assert!(count_differs(&wrong, &Vec::new(), &vec![(3, u64::MAX, 1)]).is_err());
}

/// A full store: both abort with StoreFull and leave the store as it was.
#[test]
fn store_full_aborts_alike() {
    let pre: Pre = (0..8).map(|t| (t, 1, 0)).collect();
    let micro = Microcode::assemble(COUNT).unwrap();
    // Tags 8 and 9 find no room until the pre-populated bindings expire at tick 40.
    let stream: Packets = vec![(8, 5, 1), (9, 5, 1), (0, 5, 1), (8, 5, 40)];
    assert_eq!(count_differs(&micro, &pre, &stream), Ok(()));
    let mut b = store();
    for &t in &TAGS[..8] {
        b.put(Instant::from_ticks(0), Tag(t), Value(1)).unwrap();
    }
    let env = Env::new(1, HashKey::from_seed(9));
    let mut operands = [8, 5];
    assert_eq!(
        micro.run(
            &mut Context::new(&mut b, &env, 5),
            Instant::from_ticks(1),
            &mut operands
        ),
        Err(esp_proto::exec::Abort::StoreFull)
    );
    assert_eq!(b.get(Instant::from_ticks(1), Tag(8)), None);
}
