//! `waist node`, the containers' init, as a process: it execs its program once what it
//! waits for is there, fails with one `Error:` line when it is not, holds until SIGTERM
//! without a program, and (as root) waits inside a network namespace for a veth that
//! arrives late, the way containerlab moves a link's end into a started container, until
//! its address is on it and it is up.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use netio::process::{Daemon, wait_for};

const WAIST: &str = env!("CARGO_BIN_EXE_waist");

fn node(args: &[&str]) -> Command {
    let mut cmd = Command::new(WAIST);
    cmd.arg("node").args(args).env_remove("CLAB_INTFS");
    cmd
}

#[test]
fn execs_the_program_once_its_address_is_there() {
    let out = node(&["--wait-address", "127.0.0.1", "--", "echo", "hello", "node"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello node\n");
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "waiting for address 127.0.0.1…",
            "127.0.0.1 assigned",
            "exec echo hello node"
        ]
    );
}

#[test]
fn a_timeout_is_one_error_line_and_exit_1() {
    let start = Instant::now();
    let out = node(&[
        "--wait-address",
        "192.0.2.1",
        "--timeout",
        "0.3",
        "--",
        "echo",
        "never",
    ])
    .env("CLAB_INTFS", "0")
    .output()
    .unwrap();
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "the program must not run");
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("Error:")).collect();
    assert_eq!(
        errors,
        [
            "Error: node: timed out after 0.3 s: address 192.0.2.1 not assigned (or its interface down)"
        ],
        "{err}"
    );
}

#[test]
fn a_missing_program_is_one_error_line() {
    let out = node(&["--", "waist-no-such-program"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().last(),
        Some("Error: node: exec waist-no-such-program: No such file or directory (os error 2)")
    );
}

#[test]
fn without_a_program_it_holds_until_sigterm() {
    let child = node(&[]).stderr(Stdio::piped()).spawn().unwrap();
    let mut held = Daemon::new(child);
    let log = held.log_lines("node");
    wait_for(&log, "holding until SIGTERM", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(100));
    assert!(held.try_wait().unwrap().is_none(), "it must hold");
    held.signal("-TERM");
    wait_for(&log, "SIGTERM: exiting", Duration::from_secs(20));
    assert!(held.wait().unwrap().success());
}

/// A namespace and a veth of this test, deleted on the way out (failure too).
struct Netns {
    name: String,
    veth: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .stderr(Stdio::null())
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn in_a_namespace_it_waits_for_a_late_veth() {
    if !nix::unistd::geteuid().is_root() || Command::new("ip").arg("-V").output().is_err() {
        eprintln!("skipped: needs root and ip(8) to make a network namespace");
        return;
    }
    let pid = std::process::id();
    let ns = Netns {
        name: format!("waist-node-{pid}"),
        veth: format!("wn{pid}a"),
    };
    let peer = format!("wn{pid}b");
    ip(&["netns", "add", &ns.name]);
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.name, WAIST, "node"])
        .args(["--wait-address", "172.31.250.1", "--timeout", "60"])
        .args(["--", "echo", "up"])
        .env("CLAB_INTFS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut node = Daemon::new(child);
    let log = node.log_lines("node");
    wait_for(&log, "waiting for 1 interface…", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    assert!(node.try_wait().unwrap().is_none(), "no interface yet");

    // As containerlab does: the pair made outside, one end moved in, renamed, addressed.
    ip(&[
        "link", "add", &ns.veth, "type", "veth", "peer", "name", &peer,
    ]);
    ip(&["link", "set", &peer, "netns", &ns.name]);
    ip(&["-n", &ns.name, "link", "set", &peer, "name", "eth1"]);
    wait_for(&log, "eth1 present", Duration::from_secs(20));
    wait_for(
        &log,
        "waiting for address 172.31.250.1…",
        Duration::from_secs(20),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(node.try_wait().unwrap().is_none(), "no address yet");
    ip(&[
        "-n",
        &ns.name,
        "addr",
        "add",
        "172.31.250.1/31",
        "dev",
        "eth1",
    ]);
    // Addressed but down: no connected route yet, so a daemon could not reach its peer.
    std::thread::sleep(Duration::from_millis(300));
    assert!(node.try_wait().unwrap().is_none(), "eth1 is still down");
    ip(&["-n", &ns.name, "link", "set", "eth1", "up"]);
    wait_for(&log, "172.31.250.1 assigned", Duration::from_secs(20));
    wait_for(&log, "exec echo up", Duration::from_secs(20));

    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = node.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "the program did not end");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let mut out = String::new();
    std::io::Read::read_to_string(&mut node.stdout.take().unwrap(), &mut out).unwrap();
    assert_eq!(out, "up\n");
}
