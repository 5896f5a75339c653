//! trickles-web on a TUN device: the paper's deployment, Trickles segments as real IP
//! packets routed by the kernel.
//!
//! ```text
//!   namespace twtun<pid> (ip_forward on)
//!   client (this test, the core's Demux)              trickles-web --listen tun:…
//!   10.9.1.2 ── TUN twc0 (10.9.1.1/24) ── kernel ── TUN tws0 (10.9.0.1/24) ── 10.9.0.2
//! ```
//!
//! The kernel forwards every request and response between the two devices (TTL and IP
//! checksum rewritten on the way, as any router would). The server's capture is then
//! read by tshark, which must see TCP segments with option 253.
//!
//! Runs only as root with `/dev/net/tun` and `ip`; elsewhere it says why and passes. The
//! namespace carries the test's pid and is deleted on the way out, on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{TempDir, Web, have, path_str, split};
use nix::sched::{CloneFlags, setns};
use trickles::client::{ClientConfig, Demux};
use trickles::conn::Addr;

fn unsupported() -> Option<&'static str> {
    netio::link::netns_unsupported()
}

/// A network namespace deleted on drop.
struct Ns(String);

impl Ns {
    fn new(name: String) -> Ns {
        let _ = Command::new("ip").args(["netns", "del", &name]).status();
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap();
        assert!(ok.success(), "ip netns add {name}");
        let ns = Ns(name);
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns.exec(&["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        ns
    }

    fn exec(&self, cmd: &[&str]) {
        let ok = Command::new("ip")
            .args(["netns", "exec", &self.0])
            .args(cmd)
            .status()
            .unwrap();
        assert!(ok.success(), "{cmd:?} in {}", self.0);
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs `f` on a thread inside namespace `ns`.
fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = File::open(&path).unwrap();
        setns(&fd, CloneFlags::CLONE_NEWNET).unwrap();
        f()
    })
    .join()
    .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// GETs each path through the client's own TUN device and returns the output streams.
fn fetch(paths: Vec<String>) -> Vec<Vec<u8>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dev =
            netio::link::open_tun("twc0", &[("10.9.1.1".parse().unwrap(), 24)], 1500).unwrap();
        let (local, server) = (Addr::V4([10, 9, 1, 2]), Addr::V4([10, 9, 0, 2]));
        let cfg = ClientConfig {
            mss: trickles::ip::mss_for_mtu(1500, &server),
            ..ClientConfig::default()
        };
        let mut demux = Demux::new(cfg, local, 7);
        let start = Instant::now();
        let now = || trickles::Instant::from_micros(start.elapsed().as_micros() as u64);
        let mut outs = Vec::new();
        let mut buf = vec![0u8; 65_536];
        for path in paths {
            let req = format!("GET {path} HTTP/1.1\r\nHost: 10.9.0.2\r\n\r\n");
            let id = demux.open(now(), server, 80, req.as_bytes()).unwrap();
            let mut out = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                demux.handle_timeout(now());
                while let Some((_, p)) = demux.poll_transmit() {
                    let _ = dev.send(&p).await;
                }
                if let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(5), dev.recv(&mut buf)).await
                {
                    let _ = demux.handle_packet(now(), &buf[..n]);
                }
                loop {
                    let n = demux.read(id, &mut buf);
                    if n == 0 {
                        break;
                    }
                    out.extend_from_slice(&buf[..n]);
                }
                let c = demux.get(id).unwrap();
                if c.is_complete() && c.readable() == 0 {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{path}: timed out at {} bytes",
                    out.len()
                );
            }
            demux.close(id);
            outs.push(out);
        }
        outs
    })
}

#[test]
fn trickles_as_real_ip_packets_through_the_kernel() {
    if let Some(why) = unsupported() {
        eprintln!("SKIPPED: {why} (this test needs root and TUN)");
        return;
    }
    let dir = TempDir::new("tun");
    let small = dir.file("small", 1000);
    let big = dir.file("big", 1 << 20);
    let ns = Ns::new(format!("twtun{}", std::process::id()));
    let pcap = dir.0.join("pcap");
    let root = dir.root();
    let keys = dir.0.join("keys");
    let web = Web::start_in(
        &ns.0,
        &[
            "--root",
            path_str(&root),
            "--keys",
            path_str(&keys),
            "--listen",
            "tun:tws0,10.9.0.1/24",
            "--pcap",
            path_str(&pcap),
        ],
    );
    let outs = in_ns(&ns.0, || fetch(vec!["/small".into(), "/big".into()]));
    assert!(split(&outs[0]).1 == &small[..]);
    assert!(
        split(&outs[1]).1 == &big[..],
        "1 MiB through the kernel, byte-exact"
    );
    assert!(web.stop(), "graceful exit flushes the capture");
    let file = pcap.join("trickles-web.pcap");
    if have("tshark") {
        let o = Command::new("tshark")
            .args([
                "-r",
                path_str(&file),
                "-Y",
                "tcp.option_kind == 253",
                "-T",
                "fields",
                "-e",
                "ip.src",
            ])
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let lines = String::from_utf8_lossy(&o.stdout);
        let from_client = lines.lines().filter(|l| *l == "10.9.1.2").count();
        let from_server = lines.lines().filter(|l| *l == "10.9.0.2").count();
        eprintln!(
            "tshark: {from_client} requests from 10.9.1.2, {from_server} responses from 10.9.0.2 with option 253"
        );
        assert!(
            from_client > 10 && from_server > 700,
            "tshark saw {from_client} requests, {from_server} responses"
        );
    } else {
        eprintln!("tshark not installed: the capture was not decoded");
    }
}
