//! The command line end to end: the demo's story and both reproductions' figures.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use clap::Parser;
use repro::{Options, esp_aggregation, esp_fig8, ess_collisions, ess_fig11, snap_table2};

/// The SNAP table times real round trips: it takes this lock exclusively, every other test
/// here shares it, so nothing else in this binary runs while it measures.
static TIMING: std::sync::RwLock<()> = std::sync::RwLock::new(());

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
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let text = run(&["waist", "demo", "--sim"]);
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
    // Trickles: a lossy transfer completes and the server's memory does not grow.
    assert!(text.contains("1% loss each way: byte-exact in"), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("500 clients at once: all byte-exact; server memory "))
        .unwrap_or_else(|| panic!("{text}"));
    let numbers: Vec<&str> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| w.len() > 3)
        .collect();
    assert_eq!(numbers.len(), 2, "{line}");
    assert_eq!(
        numbers[0], numbers[1],
        "server memory grew with clients: {line}"
    );
    // ESP on simulated networks: Fig. 1 with full and partial deployment, then aggregation.
    assert!(
        text.contains("every router runs ESP        → B learns: the paths part at R2"),
        "{text}"
    );
    assert!(
        text.contains("R2 does not run ESP          → B learns: the paths part at R1"),
        "{text}"
    );
    assert!(text.contains("no common ESP-capable router"), "{text}");
    assert!(text.contains("robust 10/10"), "{text}");
    // Fast path: cached answers equal the LPM's; a liar costs only itself and its victim.
    assert!(
        text.contains("every next hop equals the uncached LPM answer"),
        "{text}"
    );
    let liar = text
        .lines()
        .find(|l| l.contains("a liar flow reuses flow 0's index: liar 0 hits"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        liar.contains("→ 0 hits; flows 1–7 unchanged") && liar.ends_with("answers still exact"),
        "{liar}"
    );
    // Threaded indices: the shortest path before and after link R1–R2 fails.
    let traces: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("R0 → R5, the label"))
        .collect();
    assert_eq!(traces.len(), 2, "{text}");
    assert!(
        traces[0].contains("R0[#")
            && traces[0].contains("→ R2[#")
            && traces[0].ends_with("cost 3 = shortest"),
        "{}",
        traces[0]
    );
    assert!(
        traces[1].contains("→ R4[#")
            && !traces[1].contains("R2[")
            && traces[1].ends_with("cost 5 = shortest"),
        "{}",
        traces[1]
    );
    assert!(text.contains("link R1–R2 down: reconverged in"), "{text}");
    // IXP: each destination gets its filtered copies; admission; find on both executors.
    assert!(
        text.contains(
            "received: 1 got 2, 2 got 1, 3 got 4, 4 got 2: each exactly its filtered copies"
        ),
        "{text}"
    );
    let six = text
        .lines()
        .find(|l| l.contains("6 microengines, 64-byte messages"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        six.contains("format ") && six.ends_with("to the host: none"),
        "{six}"
    );
    let one = text
        .lines()
        .find(|l| l.contains("1 microengine, 256-byte messages"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(one.contains("to the host: format "), "{one}");
    assert!(
        text.contains("µs on the StrongARM core (the paper measured there)"),
        "{text}"
    );
}

#[test]
fn aggregation_reports_ours_beside_the_papers() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let opts = Options {
        dir: out_dir("aggregation"),
        log2: 12,
        seed: 9,
        runs: Some(6),
        progress: Default::default(),
    };
    let mut out = Vec::new();
    let tallies = esp_aggregation::run(&opts, 6, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("5000 leaves") && text.contains("root 40"),
        "{text}"
    );
    for label in ["plain COUNT/COLLECT", "robust, limit 2", "robust, limit 3"] {
        assert!(text.contains(label), "{text}");
    }
    assert!(
        text.contains("690/1000") && text.contains("945/1000"),
        "{text}"
    );
    assert!(
        tallies
            .iter()
            .all(|t| t.runs == 6 && t.correct <= t.completed)
    );
    // Robust aggregation with three copies completes at least as often as plain.
    assert!(tallies[2].completed >= tallies[0].completed, "{tallies:?}");
    let csv = std::fs::read_to_string(opts.dir.join("esp-aggregation.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
}

#[test]
fn fig11_matches_chaining_theory_and_the_papers_claims() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let opts = Options {
        dir: out_dir("fig11"),
        log2: 12,
        seed: 7,
        runs: None,
        progress: Default::default(),
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
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let opts = Options {
        dir: out_dir("collisions"),
        log2: 12,
        seed: 1,
        runs: None,
        progress: Default::default(),
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
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    assert!(waist::Cli::try_parse_from(["waist", "repro", "no-such-figure"]).is_err());
}

#[test]
fn fig8_writes_every_curve_and_the_papers_point() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let opts = Options {
        dir: out_dir("fig8"),
        log2: 12,
        seed: 3,
        runs: None,
        progress: Default::default(),
    };
    let mut out = Vec::new();
    // Few sets per point: this checks the plumbing; the module's tests check the numbers.
    let curves = esp_fig8::run_with_sets(&opts, 200, &mut out).unwrap();
    assert_eq!(curves.len(), esp_fig8::BITS.len() * esp_fig8::HASHES.len());
    for c in &curves {
        assert_eq!(c.ours.len(), esp_fig8::MAX_SET);
        assert_eq!((c.ours_at(1), c.model_at(1)), (1.0, 1.0), "{c:?}");
        assert!(c.max_diff().0 < 0.15, "{c:?}");
    }
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("ours: m = 512, k = 11, n = 40: P(collision-free) = "),
        "{text}"
    );
    let csv = std::fs::read_to_string(opts.dir.join("esp-fig8.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("m,k,n,sets,ours,model"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), curves.len() * esp_fig8::MAX_SET);
    assert!(rows.iter().all(|r| r.len() == 6));
    let paper = curves.iter().find(|c| (c.m, c.k) == (512, 11)).unwrap();
    let row = rows.iter().find(|r| r[..3] == ["512", "11", "40"]).unwrap();
    assert_eq!(row[3], "200");
    assert_eq!(row[4], format!("{:.5}", paper.ours_at(40)));
    assert_eq!(row[5], format!("{:.5}", paper.model_at(40)));
    assert!(is_png(&opts.dir.join("esp-fig8.png")));
}

#[test]
fn fig8_is_a_repro_name() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let cli = waist::Cli::try_parse_from(["waist", "repro", "esp-fig8", "--seed", "5"]).unwrap();
    assert!(matches!(
        cli.command,
        waist::Command::Repro {
            name: repro::Name::EspFig8,
            seed: 5,
            ..
        }
    ));
}

#[test]
fn snap_table2_prints_per_packet_and_per_byte_costs_beside_the_papers() {
    let _alone = TIMING.write().unwrap_or_else(|e| e.into_inner());
    let opts = Options {
        dir: out_dir("snap-table2"),
        log2: 12,
        seed: 1,
        runs: Some(1024),
        progress: Default::default(),
    };
    let mut out = Vec::new();
    // Few round trips per point: this checks the plumbing, not the figures. Measured times
    // are only checked to be times: their slopes (per node, per byte) are what the command
    // reports, and on a loaded machine a slope of a few nanoseconds can come out negative
    // (a debug run measured SNAP's per-byte slope at -0.011 ns/B), so no sign is asserted.
    let t = snap_table2::run(&opts, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(t.round_trips, 1024);
    assert_eq!(t.rows.len(), snap_table2::PAYLOADS.len());
    for (r, p) in t.rows.iter().zip(snap_table2::PAYLOADS) {
        assert_eq!(r.payload, p);
        assert!(
            r.ip_rtt.iter().chain(&r.snap_rtt).all(|&ns| ns > 0.0),
            "{r:?}"
        );
        assert!(r.ip_node.is_finite() && r.snap_node.is_finite(), "{r:?}");
        let row = format!("{p:>8} ");
        assert!(text.lines().any(|l| l.starts_with(&row)), "{text}");
    }
    for c in [t.ip, t.snap] {
        assert!(c.per_packet.is_finite() && c.per_byte.is_finite(), "{t:?}");
    }
    for label in [
        "per packet",
        "per byte",
        "71 µs",
        "95 µs",
        "0.134 µs/B",
        "0.135 µs/B",
    ] {
        assert!(text.contains(label), "{label}: {text}");
    }
    assert!(text.contains("1.34") && text.contains("1.01"), "{text}");
    let csv = std::fs::read_to_string(opts.dir.join("snap-table2.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "payload_bytes,hops,ip_round_trip_ns,snap_round_trip_ns,ip_per_node_ns,snap_per_node_ns"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len(),
        snap_table2::PAYLOADS.len() * snap_table2::HOPS.len()
    );
    assert!(rows.iter().all(|r| r.len() == 6));
    assert_eq!(rows[0][..2], ["4", "0"]);
    assert_eq!(rows[rows.len() - 1][..2], ["1400", "3"]);
}

#[test]
fn snap_table2_is_a_repro_name() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let cli =
        waist::Cli::try_parse_from(["waist", "repro", "snap-table2", "--runs", "10"]).unwrap();
    assert!(matches!(
        cli.command,
        waist::Command::Repro {
            name: repro::Name::SnapTable2,
            runs: Some(10),
            ..
        }
    ));
}
