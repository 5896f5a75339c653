//! `waist repro ixp-fig4` and `ixp-fig5`: the stream-handler reproductions on the IXP1200
//! model run end to end and show the paper's shape.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use repro::{Options, ixp_fig4, ixp_fig5};

fn opts(name: &str) -> Options {
    Options {
        dir: std::env::temp_dir().join(format!("waist-{name}-{}", std::process::id())),
        log2: 10,
        seed: 1,
        runs: None,
        progress: Default::default(),
    }
}

#[test]
fn fig4_ixp_routing_is_never_slower_and_cuts_large_message_latency() {
    let mut out = Vec::new();
    let o = opts("ixp-fig4");
    let rows = ixp_fig4::run(&o, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("deviations above 10%"), "{text}");
    assert!(o.dir.join("ixp-fig4.csv").exists());
    assert_eq!(rows.len(), ixp_fig4::PAPER.len());
    for r in &rows {
        assert!(r.ixp <= r.host, "{r:?}");
        assert!(r.ixp_stream <= r.host_stream * 1.0001, "{r:?}");
    }
    // The paper: "more than 25%" for large messages.
    let big = rows.last().unwrap();
    assert!(big.reduction() > 25.0, "{big:?}");
    // Per-message stream times of 1–10 kB messages match the paper within 10%.
    for r in rows.iter().filter(|r| (1_000..=10_000).contains(&r.size)) {
        assert!(r.host_stream_dev().abs() < 10.0, "{r:?}");
        assert!(r.ixp_stream_dev().abs() < 10.0, "{r:?}");
    }
}

#[test]
fn fig5_ixp_wins_small_messages_and_format_favours_the_host_as_sizes_grow() {
    let mut out = Vec::new();
    let rows = ixp_fig5::run(&opts("ixp-fig5"), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("claims (paper → ours)"), "{text}");
    assert_eq!(rows.len(), ixp_fig5::HANDLERS.len() * ixp_fig5::SIZES.len());
    let get = |h: &str, s: u64| rows.iter().find(|r| r.handler == h && r.size == s).unwrap();
    for h in ixp_fig5::HANDLERS {
        assert!(get(h, 100).ratio() > 1.5, "{:?}", get(h, 100));
    }
    // The format handler (ByteSwap): the IXP's in-transit context runs out as messages
    // grow; the host wins.
    assert!(get("format", 50_000).ratio() < 1.0);
    assert!(get("format", 100).ratio() > get("format", 50_000).ratio());
    // Non-computational handlers: the IXP at least matches the host everywhere.
    for h in ["route", "mirror", "filter", "multicast", "delta"] {
        for s in ixp_fig5::SIZES {
            assert!(get(h, s).ratio() >= 0.999, "{:?}", get(h, s));
        }
    }
    // IXP mirroring is only slightly affected by size above one packet.
    let m1 = get("mirror", 1_000).ixp;
    let m50 = get("mirror", 50_000).ixp;
    assert!((m50 - m1).abs() / m50 < 0.05, "{m1} {m50}");
}
