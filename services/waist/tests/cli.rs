//! The command line end to end: the demo's story and both reproductions' figures.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use clap::Parser;
use waist::repro::{Options, ess_collisions, ess_fig11};

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waist-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(args: &[&str]) -> String {
    let cli = waist::Cli::try_parse_from(args).unwrap();
    let mut out = Vec::new();
    waist::run(cli, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn is_png(path: &PathBuf) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 10_000)
}

#[test]
fn demo_shows_expiry_on_schedule_refusal_and_rate_sizing() {
    let text = run(&["waist", "demo"]);
    // Each binding vanishes exactly τ = 10 s after creation; writes did not move 0xb0b's.
    assert!(text.contains("t =  10.0 s  expired: 0xa11ce "), "{text}");
    assert!(text.contains("t =  12.5 s  expired: 0xb0b "), "{text}");
    assert!(text.contains("t =  15.0 s  expired: 0xcafe "), "{text}");
    assert!(text.contains("put 999 → refused"), "{text}");
    assert!(
        text.contains("all 8 of 8 earlier bindings still readable"),
        "{text}"
    );
    assert!(
        text.contains("t =  10.0 s  the oldest expires; put 999 → accepted, get 999 = 42"),
        "{text}"
    );
    assert!(
        text.contains("at the rate: 3000000 creations over 30 s → created 3000000, refused 0"),
        "{text}"
    );
    assert!(
        text.contains("at twice the rate") && text.contains("first refusal at"),
        "{text}"
    );
    assert!(text.contains("32.0 bytes per binding"), "{text}");
}

#[test]
fn fig11_matches_chaining_theory_and_the_papers_claims() {
    let opts = Options {
        dir: out_dir("fig11"),
        log2: 12,
        seed: 7,
    };
    let mut out = Vec::new();
    let points = ess_fig11::run(&opts, &mut out).unwrap();
    assert_eq!(points.len(), 30);
    for p in &points {
        assert!((p.hit_probes - p.hit_theory()).abs() < 0.06, "{p:?}");
        assert!((p.miss_probes - p.miss_theory()).abs() < 0.1, "{p:?}");
    }
    // Paper: at h = 2 find stays (nearly) constant up to full; at h = 0.5 it stays < 3 µs.
    let full = |q: u8| points.iter().rev().find(|p| p.h.quarters() == q).unwrap();
    assert!(full(8).hit_probes < 1.3);
    assert!(full(2).hit_probes * ess_fig11::IXP_US_PER_ENTRY < 3.0);
    assert!(is_png(&opts.dir.join("ess-fig11.png")));
    let csv = std::fs::read_to_string(opts.dir.join("ess-fig11.csv")).unwrap();
    assert_eq!(csv.lines().count(), 31);
}

#[test]
fn collisions_reproduce_fig2_and_the_billion_tag_claim() {
    let opts = Options {
        dir: out_dir("collisions"),
        log2: 12,
        seed: 1,
    };
    let mut out = Vec::new();
    let rows = ess_collisions::run(&opts, &mut out).unwrap();
    assert_eq!(rows.len(), 13);
    // Quadrupling per doubling of users (some collision), doubling (a given tag).
    for w in rows.windows(2) {
        assert!((w[1].any / w[0].any - 4.0).abs() < 0.1);
        assert!((w[1].given / w[0].given - 2.0).abs() < 1e-6);
    }
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("1e9 tags → 2.67%"), "{text}");
    assert!(is_png(&opts.dir.join("ess-collisions.png")));
}

#[test]
fn unknown_repro_is_rejected() {
    assert!(waist::Cli::try_parse_from(["waist", "repro", "no-such-figure"]).is_err());
}
