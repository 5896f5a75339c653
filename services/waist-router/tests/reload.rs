//! SIGHUP: the running binary re-reads its config and applies it. A link removed from
//! between two others, one added with a route, an emulation changed: the unchanged link's
//! stream loses nothing, ESP bindings keep counting, a bad config is logged and the
//! running one kept, and SIGTERM still stops it cleanly.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use netio::process::Daemon;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use ess::Tag;

const BIN: &str = env!("CARGO_BIN_EXE_waist-router");
/// Long enough for a loaded machine.
const WAIT: Duration = Duration::from_secs(20);

fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

/// One host on one of the router's links: its socket, connected to the router's end.
struct Host {
    sock: UdpSocket,
    router: SocketAddr,
}

impl Host {
    fn new() -> Host {
        let sock = UdpSocket::bind(free()).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Host {
            sock,
            router: free(),
        }
    }

    fn link(&self, name: &str, extra: &str) -> String {
        format!(
            "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{}\"\npeer = \"{}\"\n{extra}\n",
            self.router,
            self.sock.local_addr().unwrap()
        )
    }

    fn send(&self, packet: &[u8]) {
        self.sock.send_to(packet, self.router).unwrap();
    }

    /// The next datagram, waiting up to `WAIT`.
    #[track_caller]
    fn recv(&self) -> Vec<u8> {
        let end = Instant::now() + WAIT;
        let mut buf = [0u8; 2048];
        loop {
            match self.sock.recv(&mut buf) {
                Ok(n) => return buf[..n].to_vec(),
                Err(_) if Instant::now() < end => {}
                Err(e) => panic!("nothing arrived: {e}"),
            }
        }
    }
}

/// A UDP packet from 10.1.0.1 to `dst` carrying `n`.
fn udp(dst: [u8; 4], n: u32) -> Vec<u8> {
    let mut p = vec![0u8; 32];
    waist_ip::emit_header(&mut p, [10, 1, 0, 1].into(), dst.into(), 17, 64, 12).unwrap();
    p[28..32].copy_from_slice(&n.to_be_bytes());
    p
}

/// [`udp`] as it arrives after the router.
fn hop_udp(dst: [u8; 4], n: u32) -> Vec<u8> {
    hop(udp(dst, n))
}

/// An ESP COUNT (threshold 3, the central context) from 10.1.0.1 to 10.2.0.7.
fn count() -> Vec<u8> {
    Endpoint::new(5, [10, 1, 0, 1].into())
        .with_loc(Loc::CENTRAL)
        .packet_to(
            [10, 2, 0, 7].into(),
            &Instruction::Count {
                counter: Tag(0xC0),
                thresh: 3,
            },
            &[],
        )
        .unwrap()
}

/// `sent` as a router forwards it: TTL one less, the header checksum updated.
fn hop(sent: Vec<u8>) -> Vec<u8> {
    let mut p = sent;
    p[8] -= 1;
    let sum = u16::from_be_bytes([p[10], p[11]]);
    // RFC 1624: HC' = ~(~HC + ~m + m'), the TTL/protocol word one TTL less.
    let old = u16::from_be_bytes([p[8] + 1, p[9]]);
    let new = u16::from_be_bytes([p[8], p[9]]);
    let mut acc = u32::from(!sum) + u32::from(!old) + u32::from(new);
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    p[10..12].copy_from_slice(&(!(acc as u16)).to_be_bytes());
    p
}

/// Waits for a log line containing `what`; returns it.
fn wait_for(log: &mpsc::Receiver<String>, what: &str) -> String {
    netio::process::wait_for(log, what, WAIT)
}

const HEAD: &str = "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n\n[esp]\nrate = 100\n\n";

#[test]
fn sighup_applies_a_new_config_without_losing_traffic_or_ess_state() {
    let dir = std::env::temp_dir().join(format!("waist-router-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, c, d) = (Host::new(), Host::new(), Host::new(), Host::new());
    let path = dir.join("r1.toml");
    let route = |p: &str, l: &str| format!("[[route]]\nprefix = \"{p}\"\nlink = \"{l}\"\n\n");
    // c sits between a and b, so removing it renumbers b.
    let v1 = format!(
        "{HEAD}{}{}{}{}{}{}",
        a.link("a", ""),
        c.link("c", ""),
        b.link("b", ""),
        route("10.1.0.0/16", "a"),
        route("10.3.0.0/16", "c"),
        route("10.2.0.0/16", "b"),
    );
    std::fs::write(&path, &v1).unwrap();
    let pcaps = dir.join("pcap");
    let mut child = Daemon::new(
        Command::new(BIN)
            .arg("--config")
            .arg(&path)
            .arg("--pcap")
            .arg(&pcaps)
            .args(["--metrics", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let log = child.log_lines("router");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(out.next().unwrap().unwrap().starts_with("metrics http://"));

    // Three COUNTs pass (the central context counts 1, 2, 3).
    for _ in 0..3 {
        a.send(&count());
        assert_eq!(
            b.recv(),
            hop(count()),
            "COUNT under the threshold forwarded"
        );
    }

    // A stream from a to b across the reload, read as it comes (a socket buffer holds
    // only a few hundred datagrams).
    const STREAM: u32 = 300;
    let stream = {
        let sock = a.sock.try_clone().unwrap();
        let router = a.router;
        std::thread::spawn(move || {
            for n in 0..STREAM {
                sock.send_to(&udp([10, 2, 0, 9], n), router).unwrap();
                std::thread::sleep(Duration::from_millis(3));
            }
        })
    };
    let received = {
        let sock = b.sock.try_clone().unwrap();
        std::thread::spawn(move || {
            let (mut got, mut buf) = (Vec::new(), [0u8; 2048]);
            let end = Instant::now() + WAIT;
            while got.len() < STREAM as usize && Instant::now() < end {
                if let Ok(n) = sock.recv(&mut buf) {
                    got.push(buf[..n].to_vec());
                }
            }
            got
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // c removed, d added with a route, a's emulation changed (what the router sends to a).
    let v2 = format!(
        "{HEAD}{}{}{}{}{}{}",
        a.link("a", "emulation = { delay_ms = 40 }"),
        b.link("b", ""),
        d.link("d", ""),
        route("10.1.0.0/16", "a"),
        route("10.2.0.0/16", "b"),
        route("10.4.0.0/16", "d"),
    );
    std::fs::write(&path, &v2).unwrap();
    child.signal("-HUP");
    let line = wait_for(&log, "reloaded:");
    assert!(
        line.contains("+1 link, -1 link")
            && line.contains("link a emulation changed")
            && line.contains("+1 route, -1 route"),
        "{line}"
    );
    stream.join().unwrap();
    // Every datagram of the stream arrived, in order: link b was never touched.
    let got = received.join().unwrap();
    let want: Vec<Vec<u8>> = (0..STREAM).map(|n| hop_udp([10, 2, 0, 9], n)).collect();
    assert_eq!(got.len(), want.len(), "datagrams lost");
    assert!(got == want, "datagrams out of order or changed");
    assert!(child.try_wait().unwrap().is_none(), "still running");

    // The ESS kept its count: the fourth COUNT is over the threshold and dropped; the
    // packet after it arrives first.
    a.send(&count());
    a.send(&udp([10, 2, 0, 9], 999));
    assert_eq!(
        b.recv(),
        hop_udp([10, 2, 0, 9], 999),
        "the fourth COUNT dropped"
    );
    // The new link and its route work.
    a.send(&udp([10, 4, 0, 1], 4));
    assert_eq!(d.recv(), hop_udp([10, 4, 0, 1], 4));
    // The new emulation delays what goes to a by 40 ms.
    let t = Instant::now();
    b.send(&udp([10, 1, 0, 1], 1));
    assert_eq!(a.recv(), hop_udp([10, 1, 0, 1], 1));
    assert!(
        t.elapsed() >= Duration::from_millis(40),
        "{:?}",
        t.elapsed()
    );
    // c's capture was closed at the reload.
    assert!(std::fs::read(pcaps.join("r1-c.pcap")).unwrap().len() >= 24);

    // A bad config: logged with file, line and key; the running one kept.
    let bad = v2.replace("link = \"d\"", "link = \"nowhere\"");
    std::fs::write(&path, &bad).unwrap();
    child.signal("-HUP");
    let line = wait_for(&log, "reload failed");
    let at = bad.lines().position(|l| l == "link = \"nowhere\"").unwrap() + 1;
    assert!(
        line.contains("keeping the running config")
            && line.contains(&format!(
                "r1.toml:{at}:8: key `link`: no [[link]] named `nowhere`"
            )),
        "{line}"
    );
    a.send(&udp([10, 4, 0, 1], 5));
    assert_eq!(
        d.recv(),
        hop_udp([10, 4, 0, 1], 5),
        "the running config still forwards"
    );

    // A link moved to a port another process holds: it cannot be opened, so nothing
    // changes (the running link is closed only after every new one opened).
    let taken = UdpSocket::bind(free()).unwrap();
    let moved = v2.replace(
        &format!("local = \"{}\"", d.router),
        &format!("local = \"{}\"", taken.local_addr().unwrap()),
    );
    assert_ne!(moved, v2);
    std::fs::write(&path, &moved).unwrap();
    child.signal("-HUP");
    let line = wait_for(&log, "reload failed");
    assert!(
        line.contains("link `d`") || line.contains("link d"),
        "{line}"
    );
    a.send(&udp([10, 4, 0, 1], 7));
    assert_eq!(
        d.recv(),
        hop_udp([10, 4, 0, 1], 7),
        "d still open as it was"
    );
    drop(taken);

    // A link's other settings changed: reopened on the same port, its capture carried on.
    std::fs::write(
        &path,
        v2.replace(&d.link("d", ""), &d.link("d", "mtu = 1400")),
    )
    .unwrap();
    child.signal("-HUP");
    let line = wait_for(&log, "reloaded:");
    assert!(line.contains("reloaded: link d reopened"), "{line}");
    a.send(&udp([10, 4, 0, 1], 8));
    assert_eq!(
        d.recv(),
        hop_udp([10, 4, 0, 1], 8),
        "the reopened link forwards"
    );

    // SIGTERM: final counters, captures closed, exit 0.
    child.signal("-TERM");
    let d_closed = wait_for(&log, "r1-d.pcap");
    assert!(d_closed.contains("packets=4"), "{d_closed}");
    wait_for(&log, "stopped");
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
