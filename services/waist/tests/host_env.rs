//! The host tools take their first hop and source address from `WAIST_VIA` and
//! `WAIST_SRC` when `--via` and `--src` are not given (as a containerlab export's host
//! containers set them): `waist snap ping`, `waist esp send`, `trickles-get` and
//! `trickles-proxy`, each run with neither flag, must send its first packet from the
//! `WAIST_VIA` socket to its peer, with the `WAIST_SRC` address inside.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{WAIST, ensure_daemons};

const SRC: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 10);
const DST: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 80);

/// A binary built beside `waist`.
fn bin(name: &str) -> String {
    Path::new(WAIST)
        .with_file_name(name)
        .to_string_lossy()
        .into_owned()
}

/// Kills the child when dropped (the test failed or is done).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program args` with `WAIST_VIA` naming a fresh local socket and a "router"
/// socket of ours, then waits for the first datagram there: it must come from that local
/// socket and carry an IPv4 packet from `WAIST_SRC` to `DST` of `protocol`. `then` runs
/// once the process started (to poke it).
fn sends_first_hop(program: &str, args: &[&str], protocol: u8, then: impl FnOnce(&mut Child)) {
    let router = UdpSocket::bind("127.0.0.1:0").unwrap();
    router
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let local = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
    let via = format!("udp:{local}={}", router.local_addr().unwrap());
    let child = Command::new(program)
        .args(args)
        .env("WAIST_VIA", &via)
        .env("WAIST_SRC", SRC.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    then(&mut running.0);
    let mut buf = [0u8; 2048];
    let got = router.recv_from(&mut buf);
    let (n, from) = match got {
        Ok(got) => got,
        Err(e) => {
            let err = stderr_of(&mut running.0);
            panic!("{program}: nothing arrived at WAIST_VIA's peer ({e}):\n{err}");
        }
    };
    assert_eq!(from, local, "{program}: sent from WAIST_VIA's local socket");
    let packet = &buf[..n];
    assert_eq!(packet[0] >> 4, 4, "{program}: an IPv4 packet");
    assert_eq!(packet[9], protocol, "{program}: the protocol");
    assert_eq!(
        Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]),
        SRC,
        "{program}: the source is WAIST_SRC"
    );
    assert_eq!(
        Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]),
        DST,
        "{program}: the destination"
    );
}

/// What a killed child wrote on stderr, for a failure report.
fn stderr_of(child: &mut Child) -> String {
    let _ = child.kill();
    let _ = child.wait();
    let mut text = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut text);
    }
    text
}

#[test]
fn snap_ping_takes_via_and_src_from_the_environment() {
    let dst = DST.to_string();
    // SNAP is IP protocol 254.
    sends_first_hop(WAIST, &["snap", "ping", &dst, "-c", "1"], 254, |_| {});
}

#[test]
fn esp_send_takes_via_and_src_from_the_environment() {
    let dst = DST.to_string();
    let args = [
        "esp", "send", "--dst", &dst, "count", "--tag", "1", "--thresh", "9",
    ];
    // A dedicated ESP packet is IP protocol 253.
    sends_first_hop(WAIST, &args, 253, |_| {});
}

#[test]
fn trickles_get_takes_via_and_src_from_the_environment() {
    ensure_daemons();
    let url = format!("trickles://{DST}/index.html");
    // Trickles segments are TCP-format (protocol 6).
    sends_first_hop(&bin("trickles-get"), &[&url, "-o", "/dev/null"], 6, |_| {});
}

#[test]
fn trickles_proxy_takes_via_and_src_from_the_environment() {
    ensure_daemons();
    let dst = DST.to_string();
    let args = ["--listen", "127.0.0.1:0", "--server", &dst];
    sends_first_hop(&bin("trickles-proxy"), &args, 6, |child| {
        // It says where it listens, then relays a GET there.
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(addr) = line.trim().strip_prefix("ready tcp=") else {
            panic!(
                "trickles-proxy did not start: {line:?}\n{}",
                stderr_of(child)
            );
        };
        let addr: SocketAddr = addr.parse().unwrap();
        let mut tcp = TcpStream::connect(addr).unwrap();
        write!(
            tcp,
            "GET http://{DST}/index.html HTTP/1.1\r\nHost: {DST}\r\n\r\n"
        )
        .unwrap();
        // Kept open by the proxy until it answers; the datagram is what matters.
        std::mem::forget(tcp);
    });
}
