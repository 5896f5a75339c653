//! SIGHUP: trickles-web reads its config again while it runs: a new root is served at
//! once (over Trickles and by the TCP fallback), a new key file and rotation interval take
//! over and rotate, a bad config is logged and the running one kept, SIGTERM still stops
//! it cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use netio::process::Daemon;

use common::{Getter, TempDir, http_get, ready_line, split, terminate};

const WAIT: Duration = Duration::from_secs(20);

/// Waits for a log line containing `what`; returns it.
fn wait_for(log: &mpsc::Receiver<String>, what: &str) -> String {
    netio::process::wait_for(log, what, WAIT)
}

/// The body of `path` over Trickles.
fn get(server: SocketAddr, path: &str) -> Vec<u8> {
    let out = Getter::new(server).get(path, Duration::from_secs(20));
    let (head, body) = split(&out);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_vec()
}

fn metric(addr: SocketAddr, name: &str) -> f64 {
    let body = http_get(addr, "/metrics");
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no metric {name}"))
}

#[test]
fn sighup_serves_a_new_root_and_keys_and_keeps_running_on_a_bad_config() {
    let dir = TempDir::new("reload");
    let (old, new) = (dir.0.join("old"), dir.0.join("new"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(old.join("index.html"), b"old root\n").unwrap();
    std::fs::write(new.join("index.html"), b"new root!\n").unwrap();
    let keys = dir.0.join("keys");
    let config = dir.0.join("web.toml");
    let write = |root: &std::path::Path, rotate: u64, extra: &str| {
        std::fs::write(
            &config,
            format!(
                "root = \"{}\"\nkeys = \"{}\"\nlisten = \"udp:127.0.0.1:0\"\ntcp = \"127.0.0.1:0\"\n\
                 metrics = \"127.0.0.1:0\"\nrotate_s = {rotate}\n{extra}",
                root.display(),
                keys.display()
            ),
        )
        .unwrap();
    };
    write(&old, 300, "");
    let mut child = Daemon::new(
        Command::new(env!("CARGO_BIN_EXE_trickles-web"))
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let log = child.log_lines("web");
    let line = ready_line(&mut child);
    let field = |k: &str| -> SocketAddr {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(k))
            .unwrap()
            .parse()
            .unwrap()
    };
    let (udp, tcp, metrics) = (field("udp="), field("tcp="), field("metrics="));
    assert_eq!(get(udp, "/index.html"), b"old root\n");
    assert_eq!(http_get(tcp, "/index.html"), "old root\n");

    // A new root: served at once, over Trickles and by the TCP fallback.
    write(&new, 300, "");
    child.signal("-HUP");
    let done = wait_for(&log, "reloaded:");
    assert!(done.contains("root ") && done.contains("/new"), "{done}");
    assert!(!done.contains("keys changed"), "{done}");
    assert_eq!(get(udp, "/index.html"), b"new root!\n");
    assert_eq!(http_get(tcp, "/index.html"), "new root!\n");

    // A new secret and a one-second rotation: transfers work under the new keys, and the
    // keys rotate on the new schedule.
    std::fs::write(&keys, "# rotated\n00112233445566778899aabbccddeeff\n").unwrap();
    write(&new, 1, "");
    let before = metric(metrics, "trickles_key_rotations_total");
    child.signal("-HUP");
    let done = wait_for(&log, "reloaded:");
    assert!(
        done.contains("keys changed: a new secret, rotation every 1 s"),
        "{done}"
    );
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(2_500) {
        assert_eq!(get(udp, "/index.html"), b"new root!\n");
    }
    assert!(metric(metrics, "trickles_key_rotations_total") >= before + 1.0);
    assert_eq!(
        metric(metrics, "trickles_refused_total{reason=\"mac\"}"),
        0.0
    );

    // Bad configs: logged (located when in the file), the running one kept.
    write(&dir.0.join("missing"), 1, "");
    child.signal("-HUP");
    let bad = wait_for(&log, "reload failed");
    assert!(
        bad.contains("keeping the running config") && bad.contains("missing"),
        "{bad}"
    );
    write(&new, 1, "rooot = \"/\"\n");
    child.signal("-HUP");
    let bad = wait_for(&log, "reload failed");
    assert!(bad.contains("web.toml:7:1: key `rooot`"), "{bad}");
    assert_eq!(get(udp, "/index.html"), b"new root!\n");
    assert!(child.try_wait().unwrap().is_none(), "still running");

    // SIGTERM: final counters, a clean exit.
    assert!(terminate(&mut child), "graceful exit");
    wait_for(&log, "stopped: ");
}
