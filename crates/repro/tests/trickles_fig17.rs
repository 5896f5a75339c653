//! `waist repro trickles-fig17`: the shape the paper reports for one client fetching
//! objects of growing size on fresh connections.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use repro::trickles_fig17::{SIZES, link, measure};

#[test]
fn trickles_with_syn_data_leads_on_small_objects_and_converges_on_large_ones() {
    let small = measure(SIZES[0], 3, link(), 7);
    assert!(small.byte_exact, "{small:?}");
    // The request in the SYN saves TCP's handshake round trip and its control packets.
    assert!(small.ratio() > 1.3, "{small:?}");
    assert!(small.trickles_packets < small.tcp_packets, "{small:?}");
    assert!(small.tcp_us - small.trickles_us >= 150.0, "{small:?}");
    let large = measure(1_000_000, 2, link(), 7);
    assert!(large.byte_exact, "{large:?}");
    // Large objects: the transfer dominates and the two are within 10%.
    assert!((0.9..1.1).contains(&large.ratio()), "{large:?}");
    assert!(small.ratio() > large.ratio());
}
