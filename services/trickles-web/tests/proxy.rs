//! curl through trickles-proxy to trickles-web: sizes around the MSS up to 100 MB
//! byte-exact, several requests on one kept-alive connection, a malformed request
//! answered by the proxy itself, a graceful stop.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
mod support {
    pub mod client;
}

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{TempDir, have, path_str};
use support::client::{Proc, Proxy, same, server};

const LIMIT: Duration = Duration::from_secs(120);

/// `curl -x proxy` with `args`, to the end.
fn curl(proxy: &Proxy, args: &[&str]) -> std::process::Output {
    let child = Command::new("curl")
        .args(["-sS", "--fail", "-x", &format!("http://{}", proxy.tcp)])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = Proc(child).finish(LIMIT);
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn curl_through_the_proxy_is_byte_exact() {
    if !have("curl") {
        eprintln!("SKIPPED: curl is not installed");
        return;
    }
    let dir = TempDir::new("proxy-sizes");
    let sizes: [(&str, usize); 7] = [
        ("empty", 0),
        ("one", 1),
        ("mss-1", 1333),
        ("mss", 1334),
        ("mss+1", 1335),
        ("mega", 1 << 20),
        ("big", 100_000_000),
    ];
    let files: Vec<_> = sizes.iter().map(|(n, l)| (*n, dir.file(n, *l))).collect();
    let web = server(&dir, "127.0.0.1:0");
    let proxy = Proxy::start(&["--server", &web.udp.unwrap().to_string()]);
    for (name, bytes) in &files {
        let file = dir.0.join(format!("{name}.out"));
        let t = Instant::now();
        curl(
            &proxy,
            &[&format!("http://trickles/{name}"), "-o", path_str(&file)],
        );
        if bytes.len() > 1 << 20 {
            eprintln!(
                "{name}: {} bytes through the proxy in {:?}",
                bytes.len(),
                t.elapsed()
            );
        }
        same(name, &std::fs::read(&file).unwrap(), bytes);
        std::fs::remove_file(&file).unwrap();
    }
    // Several GETs on one kept-alive TCP connection, the missing one among them.
    let out = Command::new("curl")
        .args(["-sS", "-v", "-x", &format!("http://{}", proxy.tcp)])
        .args(["http://t/one", "http://t/nope", "http://t/mss"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert_eq!(
        log.matches("Re-using existing connection").count(),
        2,
        "{log}"
    );
    assert!(log.contains("< HTTP/1.1 404 Not Found"), "{log}");
    let mut want = files[1].1.clone();
    want.extend_from_slice(b"404 Not Found\n");
    want.extend_from_slice(&files[3].1);
    same("keep-alive", &out.stdout, &want);
    assert!(web.metric("trickles_http_opens_total") >= 10.0);
    assert!(proxy.stop(), "graceful exit");
}

#[test]
fn pipelined_requests_and_a_malformed_one() {
    let dir = TempDir::new("proxy-raw");
    let one = dir.file("one", 1);
    let mss = dir.file("mss", 1334);
    let web = server(&dir, "127.0.0.1:0");
    let proxy = Proxy::start(&["--server", &web.udp.unwrap().to_string()]);
    // Two requests in one write, the second asking to close: both answered in order.
    let mut s = TcpStream::connect(proxy.tcp).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(
        b"GET /one HTTP/1.1\r\nHost: t\r\n\r\nGET http://t/mss HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got);
    assert_eq!(text.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{text}");
    assert!(got.ends_with(&mss));
    let first_body = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(got[first_body..first_body + 1], one[..]);
    // A malformed request: the proxy answers 400 itself and closes.
    let mut s = TcpStream::connect(proxy.tcp).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(b"GET /one HTTP/9.9\r\n\r\n").unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    assert!(got.ends_with("400 Bad Request\n"), "{got}");
    assert_eq!(web.metric("trickles_http_opens_total"), 2.0);
    assert!(proxy.stop(), "graceful exit");
}
