//! The server's memory against the number of clients, on the real binary: 1000 concurrent
//! Trickles transfers leave trickles-web's resident set where one transfer left it, while
//! 1000 TCP connections in the middle of their responses make it grow (each holds a task
//! and its buffers). Every Trickles transfer is checked byte for byte.
// A test: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use common::{TempDir, Web, rss_kb};
use trickles::client::{ClientConfig, ConnId, Demux};
use trickles::conn::Addr;

/// Bytes of the object every client fetches: large enough that 1000 transfers overlap.
const OBJECT: usize = 200_000;

/// Concurrent clients.
const CLIENTS: usize = 1000;

/// Many Trickles connections behind one UDP socket, each collecting its whole output.
struct Clients {
    sock: UdpSocket,
    demux: Demux,
    start: Instant,
    /// Output so far of every open connection.
    out: HashMap<ConnId, Vec<u8>>,
    /// Output of the completed ones.
    done: Vec<Vec<u8>>,
    buf: Vec<u8>,
}

impl Clients {
    fn new(server: SocketAddr) -> Clients {
        // Large buffers: a thousand windows arrive at one socket (the kernel caps the size
        // at net.core.rmem_max).
        let raw = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        let _ = raw.set_recv_buffer_size(8 << 20);
        raw.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        let sock: UdpSocket = raw.into();
        sock.connect(server).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(1)))
            .unwrap();
        let local = Addr::from(sock.local_addr().unwrap().ip());
        let cfg = ClientConfig {
            mss: trickles::ip::mss_for_mtu(1472, &Addr::from(server.ip())),
            ..ClientConfig::default()
        };
        Clients {
            sock,
            demux: Demux::new(cfg, local, 0x5eed),
            start: Instant::now(),
            out: HashMap::new(),
            done: Vec::new(),
            buf: vec![0; 65536],
        }
    }

    fn now(&self) -> trickles::Instant {
        trickles::Instant::from_micros(self.start.elapsed().as_micros() as u64)
    }

    fn open(&mut self, server: SocketAddr, path: &str) {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        let id = self
            .demux
            .open(self.now(), Addr::from(server.ip()), 80, req.as_bytes())
            .unwrap();
        self.out.insert(id, Vec::new());
    }

    /// Connections that have received part of their output and wait for more.
    fn mid_transfer(&self) -> usize {
        self.out.values().filter(|o| !o.is_empty()).count()
    }

    /// One round: send what is due, take what arrived (a batch), run the timers.
    fn step(&mut self) {
        while let Some((_, p)) = self.demux.poll_transmit() {
            self.sock.send(&p).unwrap();
        }
        for i in 0..256 {
            if i > 0 {
                self.sock.set_nonblocking(true).unwrap();
            }
            let r = self.sock.recv(&mut self.buf);
            self.sock.set_nonblocking(false).unwrap();
            let n = match r {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    break;
                }
                Err(e) => panic!("recv: {e}"),
            };
            let now = self.now();
            let Ok(id) = self.demux.handle_packet(now, &self.buf[..n]) else {
                continue;
            };
            let Some(out) = self.out.get_mut(&id) else {
                continue;
            };
            let mut chunk = [0u8; 16384];
            loop {
                let r = self.demux.read(id, &mut chunk);
                if r == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..r]);
            }
            if self.demux.get(id).unwrap().is_complete() {
                self.done.push(self.out.remove(&id).unwrap());
                self.demux.close(id);
            }
        }
        let now = self.now();
        if self.demux.poll_timeout().is_some_and(|d| d <= now) {
            self.demux.handle_timeout(now);
        }
    }
}

/// Checks one connection's output: a 200 head, then exactly `body`.
fn check(output: &[u8], body: &[u8]) {
    let head_end = output
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    assert!(output.starts_with(b"HTTP/1.1 200 "), "head");
    assert!(output[head_end..] == *body, "body differs");
}

#[test]
fn memory_is_flat_in_trickles_clients_and_grows_with_tcp_connections() {
    let test_start = Instant::now();
    let td = TempDir::new("memory");
    let body = td.file("big", OBJECT);
    let root = td.root();
    let keys = td.0.join("keys");
    let web = Web::start(&[
        "--root",
        root.to_str().unwrap(),
        "--keys",
        keys.to_str().unwrap(),
        "--listen",
        "udp:127.0.0.1:0",
        "--tcp",
        "127.0.0.1:0",
    ]);
    let (udp, tcp) = (web.udp.unwrap(), web.tcp.unwrap());
    let pid = web.pid();

    // One client: the resident set while it is mid-transfer.
    let mut one = Clients::new(udp);
    one.open(udp, "/big");
    let mut rss_one = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while one.done.is_empty() {
        assert!(Instant::now() < deadline, "one transfer took too long");
        one.step();
        if one.mid_transfer() == 1 {
            rss_one = rss_one.max(rss_kb(pid));
        }
    }
    check(&one.done[0], &body);
    assert!(rss_one > 0, "never saw the transfer in progress");

    // A thousand at once: the most resident set while at least 90% are mid-transfer.
    let mut many = Clients::new(udp);
    for _ in 0..CLIENTS {
        many.open(udp, "/big");
    }
    let (mut rss_many, mut samples, mut most_mid) = (0, 0, 0);
    let mut next_sample = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(90);
    while many.done.len() < CLIENTS {
        assert!(
            Instant::now() < deadline,
            "{} of {CLIENTS} transfers done in time",
            many.done.len()
        );
        many.step();
        if Instant::now() >= next_sample {
            let mid = many.mid_transfer();
            most_mid = most_mid.max(mid);
            if mid >= CLIENTS * 9 / 10 {
                rss_many = rss_many.max(rss_kb(pid));
                samples += 1;
            }
            next_sample = Instant::now() + Duration::from_millis(20);
        }
    }
    for output in &many.done {
        check(output, &body);
    }
    eprintln!(
        "trickles-web VmRSS: {rss_one} kB with 1 client, {rss_many} kB with {CLIENTS} \
         ({samples} samples, up to {most_mid} mid-transfer)"
    );
    assert!(
        samples > 0,
        "never saw 90% of the clients mid-transfer at once"
    );
    assert!(
        rss_many * 100 <= rss_one * 110,
        "VmRSS grew from {rss_one} kB to {rss_many} kB with {CLIENTS} clients"
    );

    // The TCP fallback: 1000 connections, each asked for the object and never read, so
    // every response stalls part-way in the server.
    let rss_before = rss_kb(pid);
    let request = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
    let conns: Vec<TcpStream> = (0..CLIENTS)
        .map(|_| {
            let mut s = TcpStream::connect(tcp).unwrap();
            s.write_all(request).unwrap();
            s
        })
        .collect();
    let mut rss_tcp = 0;
    for _ in 0..25 {
        std::thread::sleep(Duration::from_millis(20));
        rss_tcp = rss_tcp.max(rss_kb(pid));
    }
    drop(conns);
    eprintln!("trickles-web VmRSS: {rss_before} kB, {rss_tcp} kB with {CLIENTS} TCP connections");
    assert!(
        rss_tcp > rss_before * 3 / 2,
        "TCP connections should cost memory: {rss_before} kB → {rss_tcp} kB"
    );
    assert!(web.stop(), "trickles-web exits cleanly on SIGTERM");
    let took = test_start.elapsed();
    assert!(took < Duration::from_secs(60), "took {took:?}");
}
