//! The closed form against TCP Reno run one acknowledgment at a time (paper Appendix B).

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use trickles::cwnd::{RenoSim, tcp_cwnd};

/// Every request from `tcp_base` to `tcp_base + n` agrees.
fn agree(tcp_base: u64, start: u32, ssthresh: u32, n: u64) {
    let mut reno = RenoSim::new(start, ssthresh);
    assert_eq!(tcp_cwnd(tcp_base, tcp_base, start, ssthresh), reno.cwnd);
    for k in tcp_base + 1..=tcp_base + n {
        reno.ack();
        let w = tcp_cwnd(k, tcp_base, start, ssthresh);
        assert_eq!(
            w, reno.cwnd,
            "k {k}, TCPBase {tcp_base}, startCwnd {start}, ssthresh {ssthresh}"
        );
    }
}

#[test]
fn every_request_up_to_a_million_over_many_parameter_sets() {
    let mut sets = Vec::new();
    for ssthresh in [1, 2, 3, 4, 8, 16, 64, 100, 1_000, 8_191, 65_535] {
        for start in [1, 2, 3, ssthresh / 2, ssthresh] {
            for base in [0, 40, 1_234_567] {
                sets.push((base, start.max(1), ssthresh));
            }
        }
    }
    for &(base, start, ssthresh) in &sets {
        agree(base, start, ssthresh, 1_000_000);
    }
    assert!(sets.len() >= 150);
}

/// Fig. 9's initial conditions. The figure's table is not in our copy of the paper, so
/// these values are Reno's (the simulation's), written out: slow start 40..45, eight
/// requests at 8 (45..53), nine at 9, ten at 10.
#[test]
fn figure_9_initial_conditions() {
    let w: Vec<u32> = (40..=72).map(|k| tcp_cwnd(k, 40, 3, 8)).collect();
    let mut expect = vec![3, 4, 5, 6, 7];
    expect.extend([8; 8]);
    expect.extend([9; 9]);
    expect.extend([10; 10]);
    expect.push(11);
    assert_eq!(w, expect);
    agree(40, 3, 8, 10_000);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_epochs_agree(base in 0u64..1 << 40, ssthresh in 1u32..5_000, start in 1u32..5_000, n in 0u64..20_000) {
        agree(base, start, ssthresh, n);
    }

    /// Anywhere in an epoch, however far, the window never shrinks and grows by at most one
    /// packet per request (what lets §2.5 split a trickle at most once per request).
    #[test]
    fn monotone_and_increasing_by_at_most_one(k in 0u64..1 << 50, ssthresh in 1u32..100_000, start in 1u32..100_000) {
        let (a, b) = (tcp_cwnd(k, 0, start, ssthresh), tcp_cwnd(k + 1, 0, start, ssthresh));
        prop_assert!(b == a || b == a + 1, "{} then {}", a, b);
    }
}
