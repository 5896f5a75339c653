//! The binary as an operator runs it: `--check`, config errors with file, line and key,
//! the metrics endpoint, pcap capture, and a graceful stop on SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_waist-router");

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> std::net::SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn config(
    dir: &std::path::Path,
    local: std::net::SocketAddr,
    peer: std::net::SocketAddr,
) -> std::path::PathBuf {
    let p = dir.join("r1.toml");
    std::fs::write(
        &p,
        format!(
            "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n\n[[link]]\nname = \"host\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n\n[[route]]\nprefix = \"10.1.0.0/16\"\nlink = \"host\"\n"
        ),
    )
    .unwrap();
    p
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("waist-router-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn check_accepts_a_good_config_and_locates_errors() {
    let dir = tempdir("check");
    let p = config(&dir, free(), free());
    let out = Command::new(BIN)
        .args(["--check", "--config"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok (1 links, 1 routes"));
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("link = \"host\"\n", "link = \"nowhere\"\n");
    std::fs::write(&p, text).unwrap();
    let out = Command::new(BIN)
        .args(["--check", "--config"])
        .arg(&p)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("r1.toml:13:8: key `link`: no [[link]] named `nowhere`"),
        "{err}"
    );
    // One line, whatever RUST_BACKTRACE says.
    assert!(
        err.starts_with("Error: ") && err.lines().count() == 1,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metrics_pcap_and_a_graceful_stop() {
    let dir = tempdir("run");
    let (local, peer) = (free(), free());
    let p = config(&dir, local, peer);
    let pcaps = dir.join("pcap");
    let mut child = Command::new(BIN)
        .arg("--config")
        .arg(&p)
        .arg("--pcap")
        .arg(&pcaps)
        .args(["--metrics", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap();
    let addr = url
        .trim_start_matches("metrics http://")
        .trim_end_matches("/metrics")
        .to_string();
    // A host pings the router over its link.
    let host = UdpSocket::bind(peer).unwrap();
    host.connect(local).unwrap();
    host.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut ping = [0u8; 40];
    let n = waist_ip::icmp::emit_echo_request(
        [10, 1, 0, 9].into(),
        [10, 0, 0, 1].into(),
        1,
        1,
        b"hi",
        &mut ping,
    )
    .unwrap();
    host.send(&ping[..n]).unwrap();
    let mut buf = [0u8; 1500];
    let n = host.recv(&mut buf).unwrap();
    assert_eq!(
        waist_ip::icmp::read(&buf[..n]).unwrap().1.kind,
        0,
        "echo reply"
    );
    // Scrape.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains("waist_frames_delivered_total 1"), "{body}");
    assert!(
        body.contains(
            "waist_route{prefix=\"10.1.0.0/16\",link=\"host\",source=\"static\",rank=\"0\",state=\"active\"} 0"
        ),
        "{body}"
    );
    // Names as Prometheus asks: the daemon's prefix, snake_case, counters typed by their
    // `_total` name.
    let page = body.split_once("\r\n\r\n").unwrap().1;
    for line in page.lines() {
        let name = match line.strip_prefix("# TYPE ") {
            Some(t) => {
                let (name, kind) = t.split_once(' ').unwrap();
                assert!(kind != "counter" || name.ends_with("_total"), "{line}");
                name
            }
            None if line.starts_with('#') => continue,
            None => line.split(['{', ' ']).next().unwrap(),
        };
        assert!(
            name.starts_with("waist_")
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{line}"
        );
    }
    // The JSON view: the same route, the link and the counters.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /api/status HTTP/1.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, json) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("Content-Type: application/json"), "{head}");
    let status: waist_router::status::Status = serde_json::from_str(json).unwrap();
    assert_eq!(status.router, "r1");
    let route = &status.routes[0];
    assert_eq!(
        (
            route.prefix.as_str(),
            route.link.as_str(),
            route.source.as_str()
        ),
        ("10.1.0.0/16", "host", "static")
    );
    assert_eq!(route.state.as_deref(), Some("active"));
    assert_eq!(route.next_hop, Some(peer.to_string()));
    let link = &status.links[0];
    assert_eq!(
        (link.name.as_str(), link.kind.as_str(), link.up),
        ("host", "udp", true)
    );
    assert_eq!(link.local, Some(local.to_string()));
    assert_eq!((link.counters.rx_frames, link.counters.tx_frames), (1, 1));
    assert_eq!(status.counters["frames_delivered"], 1);
    // Stop with SIGTERM: a clean exit, the capture flushed with both packets.
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let pcap = std::fs::read(pcaps.join("r1-host.pcap")).unwrap();
    assert_eq!(
        pcap.len(),
        24 + 2 * 16 + 2 * 30,
        "global header + request + reply"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_example_config_checks() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    for sub in std::fs::read_dir(&dir).unwrap() {
        let sub = sub.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "toml") {
                let out = Command::new(BIN)
                    .args(["--check", "--config"])
                    .arg(&f)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}: {}",
                    f.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
                n += 1;
            }
        }
    }
    assert!(n >= 4, "found {n} example configs");
}
