//! `waist restart NAME` with the real daemons: one router of a two-router network stopped
//! and started again, in a detached run and in one whose `waist up` runs in the
//! foreground; its pid changes, its routes come back, and stopping the run stops the new
//! process too.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod support;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use support::{ensure_daemons, text, waist};

/// A first port for a test: below `tests/up.rs`'s 20000 and the demo's 27000, apart per
/// test and per process.
fn base(slot: u16) -> u16 {
    14_000 + (std::process::id() % 100) as u16 * 40 + slot * 10
}

fn scratch(name: &str) -> PathBuf {
    support::scratch(&format!("restart-{name}"))
}

/// Two routers with fast distance vector, a host on each, captures in a 1 MiB ring.
fn topology(d: &Path, slot: u16) -> PathBuf {
    let file = d.join("two.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"two\"\n[defaults]\nfirst_port = {}\ncapture = {{ ring_mb = 1 }}\n\
             [defaults.router]\n\
             dv = {{ update_ms = 200, timeout_ms = 1500, gc_ms = 1000, triggered_ms = 20 }}\n\
             [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
             [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
             [[link]]\nbetween = [\"r1\", \"r2\"]\n\
             [[host]]\nname = \"h1\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\n\
             [[host]]\nname = \"h2\"\naddress = \"10.2.0.10\"\nrouter = \"r2\"\n",
            base(slot)
        ),
    )
    .unwrap();
    file
}

/// Each process in `run`'s state file: name, pid, metrics address.
fn state(run: &Path) -> Vec<(String, u32, SocketAddr)> {
    let s: waist::up::State =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    s.processes
        .iter()
        .map(|p| (p.name.clone(), p.pid, p.metrics))
        .collect()
}

fn pid_of(run: &Path, name: &str) -> (u32, SocketAddr) {
    let s = state(run);
    let (_, pid, metrics) = s.iter().find(|(n, _, _)| n == name).unwrap();
    (*pid, *metrics)
}

/// Waits until the router at `metrics` has learned `prefix` by distance vector.
fn learns(metrics: SocketAddr, prefix: &str) {
    let start = Instant::now();
    let limit = Duration::from_secs(20);
    loop {
        let learned = waist::host::scrape::fetch(metrics, Duration::from_secs(1)).is_ok_and(|p| {
            waist::host::scrape::parse(&p).iter().any(|s| {
                s.name == "waist_route"
                    && s.label("prefix") == Some(prefix)
                    && s.label("source") == Some("dv")
            })
        });
        if learned {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{metrics} never learned {prefix} by distance vector"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn running(pid: u32) -> bool {
    waist::up::is_ours(pid, "waist-router")
}

/// `waist down` for a run, also when the test fails.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if self.0.join("state.json").exists() {
            let _ = waist(&["down", "--dir", self.0.to_str().unwrap()]);
        }
    }
}

#[test]
fn a_restarted_router_of_a_detached_run_comes_back_and_down_stops_it() {
    ensure_daemons();
    let d = scratch("detached");
    let file = topology(&d, 0);
    let run = d.join("run");
    let dir = run.to_str().unwrap();
    let o = waist(&["up", file.to_str().unwrap(), "--detach", "--dir", dir]);
    assert!(o.status.success(), "{}", text(&o));
    let _down = Down(run.clone());
    let (r1, r1_metrics) = pid_of(&run, "r1");
    let (old, _) = pid_of(&run, "r2");
    learns(r1_metrics, "10.2.0.10/32");

    let o = waist(&["restart", "r2", "--dir", dir]);
    assert!(o.status.success(), "{}", text(&o));
    let (new, r2_metrics) = pid_of(&run, "r2");
    assert_ne!(new, old);
    assert!(
        text(&o).starts_with(&format!(
            "two: restarted r2 (waist-router): pid {old} → {new}, "
        )),
        "{}",
        text(&o)
    );
    assert!(!running(old) && running(new) && running(r1));
    // The new r2 starts with an empty table and learns h1's address from r1 again.
    learns(r2_metrics, "10.1.0.10/32");
    let o = waist(&["route", "show", "r2", "--dir", dir]);
    assert!(text(&o).contains("10.1.0.10/32"), "{}", text(&o));
    // The same command line (so the same capture ring), the log appended to.
    let log = std::fs::read_to_string(run.join("logs/r2.log")).unwrap();
    let marker = log.find("--- waist restart: started again ---").unwrap();
    assert!(marker > 0, "the first run's log was lost:\n{log}");
    let cmdline = std::fs::read(format!("/proc/{new}/cmdline")).unwrap();
    assert!(
        String::from_utf8_lossy(&cmdline).contains("--pcap-ring-mb\u{0}1\u{0}"),
        "{}",
        String::from_utf8_lossy(&cmdline)
    );

    let o = waist(&["restart", "r9", "--dir", dir]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("Error: run `two` in ")
            && text(&o).contains("has no process `r9` (it has: r1, r2)"),
        "{}",
        text(&o)
    );

    let o = waist(&["down", "--dir", dir]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !running(new) && !running(r1),
        "a router outlived waist down"
    );
    let o = waist(&["restart", "r2", "--dir", dir]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no `waist up` run in"), "{}", text(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

/// SIGTERM to a foreground `waist up` if the test fails while it runs.
struct Terminate(u32);

impl Drop for Terminate {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = kill(Pid::from_raw(self.0 as i32), Signal::SIGTERM);
        }
    }
}

#[test]
fn a_foreground_run_reports_a_restart_and_stops_the_new_process() {
    ensure_daemons();
    let d = scratch("foreground");
    let file = topology(&d, 1);
    let run = d.join("run");
    let dir = run.to_str().unwrap();
    let mut up = std::process::Command::new(support::WAIST)
        .args(["up", file.to_str().unwrap(), "--dir", dir])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _stop = Terminate(up.id());
    let (tx, lines) = mpsc::channel();
    let stdout = up.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let wait_for = |what: &str| -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no line with `{what}` in {seen:?}"));
            let done = line.contains(what);
            seen.push(line);
            if done {
                return seen;
            }
        }
    };
    wait_for("running;");
    let (r2, _) = pid_of(&run, "r2");
    let (old, _) = pid_of(&run, "r1");
    let o = waist(&["restart", "r1", "--dir", dir]);
    assert!(o.status.success(), "{}", text(&o));
    let (new, r1_metrics) = pid_of(&run, "r1");
    assert!(new != old && running(new) && !running(old));
    // The supervisor says what happened, and not that r1 failed.
    let said = wait_for("by `waist restart`");
    assert!(
        said.last()
            .unwrap()
            .starts_with(&format!("r1 (pid {old}) ")),
        "{said:?}"
    );
    learns(r1_metrics, "10.2.0.10/32");

    kill(Pid::from_raw(up.id() as i32), Signal::SIGTERM).unwrap();
    let status = up.wait().unwrap();
    let rest: Vec<String> = lines.iter().collect();
    assert!(status.success(), "{status}: {rest:?}");
    assert!(
        rest.iter().any(|l| l == "terminated: stopped 2 processes"),
        "{rest:?}"
    );
    assert!(
        !said.iter().chain(&rest).any(|l| l.contains("exited")),
        "{said:?} {rest:?}"
    );
    for pid in [old, new, r2] {
        assert!(!running(pid), "pid {pid} outlived the run");
    }
    assert!(!run.join("state.json").exists());
    std::fs::remove_dir_all(&d).unwrap();
}
