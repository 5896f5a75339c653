//! `waist demo` end to end: the shipped topology brought up as real processes, every step
//! succeeding (from its output and the daemons' counters), and no process left behind.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::time::Instant;

use support::{ensure_daemons, text, waist};

/// The number after `key` in `line` (`… key 12 …`).
fn after(line: &str, key: &str) -> f64 {
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if w == key {
            return words.next().and_then(|v| v.parse().ok()).unwrap_or(-1.0);
        }
    }
    -1.0
}

#[test]
fn the_demo_runs_every_step_and_leaves_nothing_running() {
    ensure_daemons();
    let dir = std::env::temp_dir().join(format!("waist-demo-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let t = Instant::now();
    let o = waist(&["demo", "--dir", dir.to_str().unwrap()]);
    let took = t.elapsed();
    let said = text(&o);
    println!("{said}");
    assert!(o.status.success(), "the demo failed:\n{said}");
    assert!(took.as_secs() < 60, "the demo took {took:?}");
    assert!(said.contains("6 of 6 steps succeeded"), "{said}");
    for step in [
        "ESP COUNT and COLLECT",
        "SNAP ping",
        "trickles-get across the lossy link",
        "curl through trickles-proxy",
        "reroute around a dead router",
        "replica killed mid-transfer",
    ] {
        assert!(
            said.contains(&format!("  ok     {step}")),
            "{step}:\n{said}"
        );
    }
    assert!(said.contains("answered by 10.0.0.4"), "{said}");
    assert!(said.contains("byte-exact"), "{said}");

    // The daemons' own counters, scraped before they stopped.
    let counters = |name: &str| {
        said.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")) && l.contains("received"))
            .or_else(|| {
                said.lines().find(|l| {
                    l.trim_start().starts_with(&format!("{name} ")) && l.contains("packets")
                })
            })
            .unwrap_or_else(|| panic!("no counters for {name}:\n{said}"))
            .to_string()
    };
    // r1 forwarded h1's traffic; r3 carried it after r2 stopped; r4 ran no ESP (it
    // reflected), r1 did.
    assert!(
        after(&counters("r1"), "forwarded") > 100.0,
        "{}",
        counters("r1")
    );
    assert!(
        after(&counters("r3"), "forwarded") > 100.0,
        "{}",
        counters("r3")
    );
    assert!(after(&counters("r1"), "esp") > 0.0, "{}", counters("r1"));
    // Both replicas answered: web-2 took over from web-1.
    assert!(
        after(&counters("web-2"), "responses") > 100.0,
        "{}",
        counters("web-2")
    );

    // Every pid it started is gone.
    let pids: Vec<u32> = said
        .lines()
        .find_map(|l| {
            l.split_once("(pids ")
                .map(|(_, p)| p.trim_end_matches(')').to_string())
        })
        .unwrap_or_else(|| panic!("no pids:\n{said}"))
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 6, "{said}");
    for pid in pids {
        for program in ["waist-router", "trickles-web"] {
            assert!(
                !waist::up::is_ours(pid, program),
                "{program} {pid} still runs"
            );
        }
    }
    assert!(dir.join("run/pcap").read_dir().unwrap().count() > 4);
    std::fs::remove_dir_all(&dir).unwrap();
}
