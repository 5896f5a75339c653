//! `waist snap ping` to an IPv6 target through real routers: two `waist-router`s with IPv6
//! addresses only (named to distance vector by `[dv] router_id`), on loopback UDP links,
//! the `waist` binary at the far end of R1's host link.
//!
//! ```text
//!  tool fd01::1 ─ host [R1 fd00::1] ── [R2 fd00::2]
//!                 SNAP, distance vector (R1 originates fd01::/64, R2 fd00::2/128)
//! ```

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use waist_router::embed::Embedded;

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn link(name: &str, local: SocketAddr, peer: SocketAddr, cost: bool) -> String {
    let cost = if cost { "cost = 1\n" } else { "" };
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{cost}\n"
    )
}

const BIN: &str = env!("CARGO_BIN_EXE_waist");

fn snap_ping(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN)
        .args(["snap", "ping"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_waist_binary_snap_pings_an_ipv6_router() {
    let (tool, r1h, r1b, r2a) = (free(), free(), free(), free());
    let dv = "[snap]\n[dv]\ntriggered_ms = 20\nupdate_ms = 200\n";
    let r1 = format!(
        "[node]\nname = \"r1\"\naddresses = [\"fd00::1\"]\n{dv}router_id = \"1.1.1.1\"\n\
         originate = [\"fd01::/64\"]\n{}{}[[route]]\nprefix = \"fd01::/64\"\nlink = \"host\"\n",
        link("host", r1h, tool, false),
        link("r2", r1b, r2a, true)
    );
    let r2 = format!(
        "[node]\nname = \"r2\"\naddresses = [\"fd00::2\"]\n{dv}router_id = \"2.2.2.2\"\n\
         originate = [\"fd00::2/128\"]\n{}",
        link("r1", r2a, r1b, true)
    );
    let routers = [
        Embedded::start("r1.toml", r1, false).unwrap(),
        Embedded::start("r2.toml", r2, false).unwrap(),
    ];
    let via = format!("udp:{tool}={r1h}");
    let args = [
        "fd00::2",
        "--src",
        "fd01::1",
        "--via",
        &via,
        "-c",
        "1",
        "--timeout-ms",
        "500",
    ];
    // Until distance vector has converged R1 has no route to fd00::2 and no reply comes
    // (exit 2): ask again, generously for a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (code, text, err) = loop {
        let (code, text, err) = snap_ping(&args);
        if code != Some(2) || Instant::now() > deadline {
            break (code, text, err);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(0), "{text}{err}");
    assert!(
        text.starts_with("SNAP PING fd00::2 from fd01::1 (rb 32, port 7): Fig. 1 ping"),
        "{text}"
    );
    // R1 and R2 each spent a unit out, R1 one back, the tool one on arrival.
    assert!(text.contains("seq=1 from=fd00::2 rtt="), "{text}");
    assert!(text.contains(" µs rb=28\n"), "{text}");
    assert!(text.contains("1 sent, 1 received, 0% loss"), "{text}");
    for r in routers {
        let s = r.stop().unwrap();
        assert!(s.node.snap_executed >= 1, "{:?}", s.node);
    }
}

#[test]
fn an_ipv6_target_needs_an_ipv6_source() {
    let via = "udp:127.0.0.1:9=127.0.0.1:9";
    let (code, _, err) = snap_ping(&["fd00::2", "--via", via]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("an IPv6 target (fd00::2) needs --src"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, _, err) = snap_ping(&["fd00::2", "--src", "10.1.0.1", "--via", via]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("different address families"), "{err}");
    let (code, _, err) = snap_ping(&["fd00::2", "--src", "fd01::1", "--via", "raw"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--via raw speaks IPv4 only"), "{err}");
}
