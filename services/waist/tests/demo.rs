//! `waist demo` end to end: the shipped topology brought up as real processes, every step
//! succeeding (from its output and the daemons' counters), and no process left behind.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::process::{Command, Stdio};
use std::time::Instant;

use support::{WAIST, ensure_daemons};

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

/// One demo at a time: each must finish within a minute on a 2-core machine.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `waist demo EXTRA… --dir DIR`; returns its output and pid after checking it
/// succeeded within a minute.
fn demo(name: &str, extra: &[&str]) -> (String, u32, std::path::PathBuf) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    ensure_daemons();
    let dir = std::env::temp_dir().join(format!("waist-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let t = Instant::now();
    let child = Command::new(WAIST)
        .arg("demo")
        .args(extra)
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let took = t.elapsed();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    println!("{said}");
    assert!(o.status.success(), "the demo failed:\n{said}");
    assert!(took.as_secs() < 60, "the demo took {took:?}");
    (said, pid, dir)
}

/// Every pid the demo printed is gone, and its closing line counts exactly the pids it
/// lists: the six daemons but r2 and web-1, which the demo stopped on purpose.
fn nothing_left(said: &str) {
    let line = said
        .lines()
        .find(|l| l.contains("(pids "))
        .unwrap_or_else(|| panic!("no pids:\n{said}"));
    let mut pids: Vec<u32> = line
        .split_once("(pids ")
        .map(|(_, p)| p.trim_end_matches(')'))
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 4, "{said}");
    assert!(
        line.starts_with(&format!("stopped the {} processes", pids.len())),
        "{line}"
    );
    // r2, stopped by the reroute step, names its pid there.
    pids.extend(said.lines().filter_map(|l| {
        l.trim()
            .strip_prefix("r2 (pid ")
            .and_then(|r| r.split_once(')'))
            .and_then(|(p, _)| p.parse::<u32>().ok())
    }));
    assert_eq!(pids.len(), 5, "{said}");
    for pid in pids {
        for program in ["waist-router", "trickles-web"] {
            assert!(
                !waist::up::is_ours(pid, program),
                "{program} {pid} still runs"
            );
        }
    }
}

#[test]
fn the_demo_runs_every_step_and_leaves_nothing_running() {
    let (said, _, dir) = demo("demo-test", &[]);
    assert!(said.contains("7 of 7 steps succeeded"), "{said}");
    for step in [
        "ESP COUNT and COLLECT",
        "SNAP ping",
        "trickles-get across the lossy link",
        "curl through trickles-proxy",
        "customised multicast in r1",
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

    nothing_left(&said);
    assert!(dir.join("run/pcap").read_dir().unwrap().count() > 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn with_tun_the_kernels_ping_and_curl_cross_the_routers() {
    if let Some(why) = waist::demo::tun::unsupported() {
        eprintln!("skipping the --tun demo: {why}");
        return;
    }
    let (said, pid, dir) = demo("demo-tun-test", &["--tun"]);
    assert!(said.contains("9 of 9 steps succeeded"), "{said}");
    assert!(
        said.contains("  ok     kernel ping across the routers"),
        "{said}"
    );
    assert!(
        said.contains("  ok     kernel curl across the routers"),
        "{said}"
    );
    assert!(said.contains("3 received"), "{said}");
    nothing_left(&said);
    // Its namespaces and TUN devices are gone.
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        !list.contains(&format!("-{pid}")),
        "namespaces left: {list}"
    );
    let links = Command::new("ip").args(["link"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    for dev in [format!("wdc{pid}"), format!("wds{pid}")] {
        assert!(!links.contains(&dev), "{dev} left: {links}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
