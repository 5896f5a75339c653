//! `waist repro trickles-failover` and `trickles-fig23` end to end (a test binary of their
//! own: they are CPU-heavy simulations and must not run beside `cli.rs`'s timed tests).

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use repro::Options;

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waist-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn is_png(path: &PathBuf) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 10_000)
}

#[test]
fn trickles_failover_completes_and_migration_loses_nothing() {
    let opts = Options {
        dir: out_dir("trickles-failover"),
        log2: 12,
        seed: 1,
        runs: Some(2),
        progress: Default::default(),
    };
    let mut out = Vec::new();
    let rows = repro::trickles_failover::run(&opts, &mut out).unwrap();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.exact));
    for r in rows.iter().filter(|r| r.failover == Some(true)) {
        assert_eq!(r.lost, 0);
        assert!(r.stall_us.is_some());
    }
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("migrated"), "{text}");
    assert!(is_png(&opts.dir.join("trickles-failover.png")));
}

#[test]
fn trickles_fig23_parallel_requests_beat_skip_alone_on_small_objects() {
    let opts = Options {
        dir: out_dir("trickles-fig23"),
        log2: 12,
        seed: 1,
        runs: None,
        progress: Default::default(),
    };
    let mut out = Vec::new();
    let rows = repro::trickles_fig23::run(&opts, &mut out).unwrap();
    assert!(rows.iter().all(|r| r.exact));
    // Objects four times their region still arrive (byte-exact, above), at a cost.
    assert!(
        rows.iter().all(|r| r.overflow > 0.0 && r.overflow < r.skip),
        "{rows:?}"
    );
    let small = rows.iter().find(|r| r.size == 20_000).unwrap();
    assert!(small.parallel > 1.5 * small.skip, "{small:?}");
    assert!(small.parallel > 0.9 * small.tcp, "{small:?}");
    // Large objects: the link, not the continuations, is the limit for both.
    let large = rows.last().unwrap();
    assert!((large.parallel / large.skip - 1.0).abs() < 0.1, "{large:?}");
    assert!(is_png(&opts.dir.join("trickles-fig23.png")));
}
