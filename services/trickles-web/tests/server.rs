//! trickles-web as a process: Trickles over UDP to the core's client, the TCP fallback to
//! curl, bad input during a transfer, config errors, replicas sharing a key file.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::net::UdpSocket;
use std::process::Command;
use std::time::Duration;

use common::{Getter, TempDir, Web, have, path_str, rss_kb, split};

fn start(dir: &TempDir, extra: &[&str]) -> Web {
    let root = dir.root();
    let keys = dir.0.join("keys");
    let mut args = vec![
        "--root",
        path_str(&root),
        "--keys",
        path_str(&keys),
        "--listen",
        "udp:127.0.0.1:0",
        "--tcp",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    // `args` borrows `root`/`keys` only for the spawn.
    Web::start(&args)
}

const SIZES: [(&str, usize); 6] = [
    ("empty", 0),
    ("one", 1),
    ("mss-1", 1333),
    ("mss", 1334),
    ("mss+1", 1335),
    ("mega", 1 << 20),
];

#[test]
fn trickles_over_udp_is_byte_exact() {
    let dir = TempDir::new("udp");
    let files: Vec<_> = SIZES.iter().map(|(n, l)| (*n, dir.file(n, *l))).collect();
    let web = start(&dir, &[]);
    let mut g = Getter::new(web.udp.unwrap());
    for (name, bytes) in &files {
        let out = g.get(&format!("/{name}"), Duration::from_secs(60));
        let (head, body) = split(&out);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(head.contains(&format!("Content-Length: {}\r\n", bytes.len())));
        assert!(
            body == &bytes[..],
            "{name}: {} bytes, expected {}",
            body.len(),
            bytes.len()
        );
    }
    // A range, a missing file, a bad request.
    let out = g.get("/mega", Duration::from_secs(10));
    assert_eq!(split(&out).1.len(), 1 << 20);
    let missing = g.get("/nope", Duration::from_secs(10));
    assert!(split(&missing).0.starts_with("HTTP/1.1 404"));
    assert!(web.metric("trickles_http_opens_total") >= 8.0);
    assert!(web.metric("trickles_http_body_bytes_total") >= (2 << 20) as f64);
    assert!(web.stop(), "graceful exit");
}

#[test]
fn tcp_fallback_serves_curl() {
    if !have("curl") {
        eprintln!("SKIPPED: curl is not installed (apt-get install curl)");
        return;
    }
    let dir = TempDir::new("tcp");
    let mut files: Vec<_> = SIZES.iter().map(|(n, l)| (*n, dir.file(n, *l))).collect();
    files.push(("hundred", dir.file("hundred", 100 << 20)));
    let web = start(&dir, &[]);
    let tcp = web.tcp.unwrap();
    for (name, bytes) in &files {
        let out = dir.0.join("got");
        let s = Command::new("curl")
            .args([
                "-sSf",
                "-o",
                path_str(&out),
                &format!("http://{tcp}/{name}"),
            ])
            .status()
            .unwrap();
        assert!(s.success(), "curl {name}");
        let got = std::fs::read(&out).unwrap();
        assert!(
            got == *bytes,
            "{name}: {} bytes, expected {}",
            got.len(),
            bytes.len()
        );
    }
    // Keep-alive: two URLs on one curl connection; a range.
    let o = Command::new("curl")
        .args([
            "-s",
            &format!("http://{tcp}/one"),
            &format!("http://{tcp}/mss"),
        ])
        .output()
        .unwrap();
    assert_eq!(o.stdout.len(), 1 + 1334);
    let o = Command::new("curl")
        .args(["-s", "-r", "10-19", &format!("http://{tcp}/mega")])
        .output()
        .unwrap();
    assert_eq!(o.stdout, files[5].1[10..20]);
    assert_eq!(web.metric("trickles_tcp_requests_total"), 10.0);
}

/// Random datagrams and replays of the client's own packets hit the server all through an
/// honest transfer: it completes byte-exact, the server counts each kind of refusal, and
/// its memory stays flat.
#[test]
fn a_flood_of_junk_and_replays_changes_nothing() {
    let dir = TempDir::new("flood");
    let bytes = dir.file("f", 2 << 20);
    let web = start(&dir, &[]);
    let server = web.udp.unwrap();
    // A first transfer, recorded: its packets are replayed during the second.
    let mut g = Getter::new(server);
    g.record = true;
    let out = g.get("/f", Duration::from_secs(60));
    assert!(split(&out).1 == &bytes[..]);
    let recorded = std::mem::take(&mut g.sent);
    g.record = false;
    let rss_before = rss_kb(web.pid());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        let from = UdpSocket::bind("127.0.0.1:0").unwrap();
        std::thread::spawn(move || {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let kind = x % 3;
                let mut d = match kind {
                    // A replayed request, whole.
                    0 => recorded[(x >> 8) as usize % recorded.len()].clone(),
                    // A replayed request with one byte of its continuation flipped and
                    // the TCP checksum fixed: a forgery only the MAC can catch.
                    1 => {
                        let mut r = recorded[(x >> 8) as usize % recorded.len()].clone();
                        // IP 20, TCP 24, request header 8; the continuation's first 54
                        // bytes (its layout aside, any flip must fail the MAC).
                        let off = 24 + 8 + (x >> 32) as usize % 40;
                        if r.len() > 20 + off + 1 {
                            let old = r[20 + off];
                            r[20 + off] ^= 1 << (x % 8);
                            let check = u16::from_be_bytes([r[36], r[37]]);
                            let new =
                                waist_ip::checksum::adjust(check, off, &[old], &[r[20 + off]]);
                            r[36..38].copy_from_slice(&new.to_be_bytes());
                        }
                        r
                    }
                    // Random bytes of random length.
                    _ => (0..(x >> 40) % 1500)
                        .map(|i| (x >> (i % 56)) as u8)
                        .collect(),
                };
                if d.is_empty() {
                    d.push(0x45);
                }
                let _ = from.send_to(&d, server);
                sent += 1;
                if sent.is_multiple_of(64) {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            sent
        })
    };
    let out = g.get("/f", Duration::from_secs(120));
    assert!(
        split(&out).1 == &bytes[..],
        "the honest transfer is byte-exact"
    );
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = flood.join().unwrap();
    assert!(sent > 1000, "the flood sent {sent} datagrams");
    let rss_after = rss_kb(web.pid());
    for reason in ["replay", "mac", "bad_ip", "wire"] {
        let v = web.metric(&format!("trickles_refused_total{{reason=\"{reason}\"}}"));
        eprintln!("refused as {reason}: {v}");
        assert!(v > 0.0, "no refusal counted as {reason}");
    }
    // Every datagram the link took is counted once: handed to the core or dropped.
    let link = |name: &str| web.metric(&format!("trickles_link_{name}_total{{link=\"web\"}}"));
    let drops: f64 = ["truncated", "oversize", "empty", "offload"]
        .iter()
        .map(|r| {
            web.metric(&format!(
                "trickles_link_rx_dropped_total{{link=\"web\",reason=\"{r}\"}}"
            ))
        })
        .sum();
    let (frames, packets) = (link("rx_frames"), web.metric("trickles_packets_total"));
    eprintln!("link: {frames} frames received, {drops} dropped; core: {packets} packets");
    assert!(
        frames > 1000.0,
        "{frames} frames with {sent} junk datagrams sent"
    );
    assert_eq!(frames, packets + drops);
    assert!(link("tx_frames") > 0.0 && link("rx_calls") > 0.0);
    eprintln!("{sent} junk datagrams; server RSS {rss_before} kB before, {rss_after} kB after");
    assert!(
        rss_after < rss_before + 8 * 1024,
        "memory grew from {rss_before} kB to {rss_after} kB under {sent} junk datagrams"
    );
    assert!(web.stop());
}

#[test]
fn replicas_sharing_a_key_file_are_interchangeable() {
    let dir = TempDir::new("replicas");
    let bytes = dir.file("f", 300_000);
    let a = start(&dir, &[]);
    let b = start(&dir, &[]);
    // The SYN to A, everything after to B: B accepts A's continuations.
    let mut g = Getter::new(a.udp.unwrap());
    let request = b"GET /f HTTP/1.1\r\nHost: t\r\n\r\n";
    let id = g
        .demux
        .open(
            trickles::Instant::ZERO,
            trickles::conn::Addr::from(a.udp.unwrap().ip()),
            80,
            request,
        )
        .unwrap();
    let mut buf = vec![0u8; 65_536];
    g.step(&mut buf);
    g.server = b.udp.unwrap();
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !g.demux.get(id).unwrap().is_complete() || g.demux.get(id).unwrap().readable() > 0 {
        g.step(&mut buf);
        let n = g.demux.read(id, &mut buf);
        out.extend_from_slice(&buf[..n]);
        assert!(std::time::Instant::now() < deadline);
    }
    assert!(split(&out).1 == &bytes[..]);
    assert_eq!(a.metric("trickles_http_opens_total"), 1.0);
    assert!(b.metric("trickles_http_resumptions_total") > 10.0);
    assert_eq!(b.metric("trickles_http_opens_total"), 0.0);
}

#[test]
fn config_errors_name_file_line_and_key() {
    let dir = TempDir::new("config");
    let cfg = dir.0.join("web.toml");
    std::fs::write(
        &cfg,
        "root = \"/tmp\"\nkeys = \"/tmp/k\"\ntcp = \"not an address\"\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_trickles-web"))
        .args(["--config", path_str(&cfg), "--check"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("web.toml") && err.contains(":3"), "{err}");
    std::fs::write(
        &cfg,
        "root = \"/tmp\"\nkeys = \"/tmp/k\"\nlisten = \"udp:127.0.0.1:0\"\nbogus = 1\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_trickles-web"))
        .args(["--config", path_str(&cfg), "--check"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("bogus"), "{err}");
    let root = dir.root();
    std::fs::write(
        &cfg,
        format!("root = \"{}\"\nkeys = \"/tmp/k\"\n", root.display()),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_trickles-web"))
        .args(["--config", path_str(&cfg), "--check"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// With a one-second rotation, transfers keep running across key rotations (the previous
/// period's key stays live), and the server counts each rotation.
#[test]
fn keys_rotate_every_period_and_transfers_run_across_rotations() {
    let dir = TempDir::new("rotate");
    let bytes = dir.file("f", 300_000);
    let web = start(&dir, &["--rotate-s", "1"]);
    let mut g = Getter::new(web.udp.unwrap());
    let started = std::time::Instant::now();
    let mut transfers = 0;
    while started.elapsed() < Duration::from_millis(3_500) {
        let out = g.get("/f", Duration::from_secs(30));
        assert!(split(&out).1 == &bytes[..], "transfer {transfers}");
        transfers += 1;
    }
    let rotations = web.metric("trickles_key_rotations_total");
    eprintln!("{transfers} transfers across {rotations} rotations");
    assert!(rotations >= 2.0, "{rotations} rotations in 3.5 s");
    assert_eq!(web.metric("trickles_refused_total{reason=\"mac\"}"), 0.0);
}
