//! The clients give up: trickles-get with nothing listening (one line naming the server,
//! exit 28, no file left), with its only server killed mid-transfer (the bytes kept as
//! `FILE.partial`), `--json` on success and on failure; trickles-proxy answering 504 when
//! its server does not answer. Bounds are generous: a loaded machine must pass.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
mod support {
    pub mod client;
}

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use common::{TempDir, path_str};
use support::client::{Proxy, get, kill, same, server, spawn_get, url, wait_for_size};

const LIMIT: Duration = Duration::from_secs(120);

/// A loopback UDP address nothing listens on (bound, then let go).
fn dead_port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The one JSON object on `stdout`.
fn json(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    assert_eq!(text.lines().count(), 1, "one line of JSON: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn nothing_listening_is_one_line_and_exit_28() {
    let dir = TempDir::new("get-nothing");
    let dead = dead_port();
    let file = dir.0.join("x.out");
    let t = Instant::now();
    let out = get(
        &[
            &format!("trickles://{dead}/x"),
            "-o",
            path_str(&file),
            "--connect-timeout",
            "1",
            "--json",
        ],
        LIMIT,
    );
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(28), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!("trickles-get: no answer from {dead} within 1 s")
    );
    assert!(took < Duration::from_secs(30), "gave up after {took:?}");
    assert!(took >= Duration::from_secs(1), "gave up after {took:?}");
    // No file that looks like a download, and nothing partial either (no byte came).
    assert!(!file.exists());
    assert!(!dir.0.join("x.out.partial").exists());
    let j = json(&out.stdout);
    assert_eq!(j["ok"], false);
    assert_eq!(j["exit_code"], 28);
    assert_eq!(j["error"]["kind"], "connect_timeout");
    assert_eq!(j["servers"][0], dead.to_string());
    assert_eq!(j["bytes"], 0);
    assert_eq!(j["connections"], 1);
    assert!(j["partial_file"].is_null());
}

#[test]
fn the_default_connect_timeout_is_a_few_seconds() {
    let dead = dead_port();
    let t = Instant::now();
    let out = get(&[&format!("trickles://{dead}/x")], LIMIT);
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(28), "{stderr}");
    assert!(stderr.contains("within 5 s"), "{stderr}");
    assert!(took < Duration::from_secs(30), "gave up after {took:?}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_server_killed_mid_transfer_leaves_a_partial_file() {
    let dir = TempDir::new("get-killed");
    let bytes = dir.file("f", 20_000_000);
    let web = server(&dir, "127.0.0.1:0");
    let file = dir.0.join("f.out");
    let partial = dir.0.join("f.out.partial");
    let t = Instant::now();
    let client = spawn_get(&[
        &url(&web, "/f"),
        "-o",
        path_str(&file),
        "--idle-timeout",
        "2",
        "--json",
        // Slow enough that the kill comes mid-transfer even on a fast machine.
        "--emulate",
        "rate_mbps=40",
    ]);
    wait_for_size(&file, 1_000_000, LIMIT);
    let udp = kill(web);
    let out = client.finish(LIMIT);
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(28), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("trickles-get: no data from {udp} for 2 s")),
        "{stderr}"
    );
    assert!(stderr.contains(path_str(&partial)), "{stderr}");
    assert!(took < LIMIT, "{took:?}");
    // The complete name is gone; the bytes that came are a prefix of the file.
    assert!(!file.exists());
    let got = std::fs::read(&partial).unwrap();
    assert!(
        got.len() >= 1_000_000 && got.len() < bytes.len(),
        "{}",
        got.len()
    );
    same("prefix", &got, &bytes[..got.len()]);
    let j = json(&out.stdout);
    assert_eq!(j["error"]["kind"], "idle_timeout");
    assert_eq!(j["partial_file"], path_str(&partial));
    assert_eq!(j["total_bytes"], bytes.len());
    assert!(j["bytes"].as_u64().unwrap() >= 1_000_000);
}

#[test]
fn json_on_success() {
    let dir = TempDir::new("get-json");
    let bytes = dir.file("f", 300_000);
    let web = server(&dir, "127.0.0.1:0");
    let file = dir.0.join("f.out");
    let out = get(&[&url(&web, "/f"), "-o", path_str(&file), "--json"], LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    same("f", &std::fs::read(&file).unwrap(), &bytes);
    let j = json(&out.stdout);
    assert_eq!(j["ok"], true);
    assert_eq!(j["url"], url(&web, "/f"));
    assert_eq!(j["servers"][0], web.udp.unwrap().to_string());
    assert_eq!(j["file"], path_str(&file));
    assert_eq!(j["bytes"], 300_000);
    assert_eq!(j["total_bytes"], 300_000);
    assert_eq!(j["connections"], 1);
    assert_eq!(j["exit_code"], 0);
    assert!(j["error"].is_null());
    assert!(j["seconds"].as_f64().unwrap() > 0.0);
    assert!(j["bytes_per_second"].as_f64().unwrap() > 0.0);
    // A missing file: the status, in the object too.
    let out = get(
        &[&url(&web, "/nope"), "-o", path_str(&file), "--json"],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    let j = json(&out.stdout);
    assert_eq!(
        (j["error"]["kind"].as_str(), j["error"]["status"].as_u64()),
        (Some("status"), Some(404))
    );
    // And --json with the body on stdout is refused.
    let out = get(&[&url(&web, "/f"), "--json"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_proxy_answers_504_when_its_server_does_not() {
    let dead = dead_port();
    let proxy = Proxy::start(&["--server", &dead.to_string(), "--connect-timeout", "1"]);
    let t = Instant::now();
    let mut s = TcpStream::connect(proxy.tcp).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(b"GET http://trickles/x HTTP/1.1\r\nHost: trickles\r\n\r\n")
        .unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    let took = t.elapsed();
    assert!(got.starts_with("HTTP/1.1 504 Gateway Timeout\r\n"), "{got}");
    assert!(
        got.ends_with(&format!("no answer from {dead} within 1 s\n")),
        "{got}"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(30),
        "{took:?}"
    );
    assert!(proxy.stop(), "graceful exit");
}

#[test]
fn the_proxy_closes_a_response_whose_server_dies() {
    let dir = TempDir::new("proxy-killed");
    let bytes = dir.file("f", 20_000_000);
    let web = server(&dir, "127.0.0.1:0");
    let proxy = Proxy::start(&[
        "--server",
        &web.udp.unwrap().to_string(),
        "--idle-timeout",
        "2",
        // Slow enough that the kill comes mid-transfer even on a fast machine.
        "--emulate",
        "rate_mbps=40",
    ]);
    let mut s = TcpStream::connect(proxy.tcp).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(b"GET http://t/f HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while got.len() < 1_000_000 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
    kill(web);
    let t = Instant::now();
    // The head has gone: no status can follow, the proxy closes the connection.
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let took = t.elapsed();
    assert!(took < Duration::from_secs(30), "closed after {took:?}");
    let text = String::from_utf8_lossy(&got[..64]);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    let body = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(got.len() - body < bytes.len(), "the whole body came");
    same("prefix", &got[body..], &bytes[..got.len() - body]);
    assert!(proxy.stop(), "graceful exit");
}
