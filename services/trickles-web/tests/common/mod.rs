//! Shared by the server tests: temp dirs, a server process, a blocking Trickles client on
//! the core's `Demux`, metrics scrapes and memory readings.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use trickles::client::{ClientConfig, Demux};
use trickles::conn::Addr;

/// A directory deleted on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("tw-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(p.join("root")).unwrap();
        TempDir(p)
    }

    pub fn root(&self) -> PathBuf {
        self.0.join("root")
    }

    /// Writes a file of `len` position-dependent bytes under the root.
    pub fn file(&self, name: &str, len: usize) -> Vec<u8> {
        let bytes: Vec<u8> = (0..len as u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8 ^ i as u8)
            .collect();
        std::fs::write(self.root().join(name), &bytes).unwrap();
        bytes
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running trickles-web, killed on drop.
pub struct Web {
    pub child: Child,
    pub udp: Option<SocketAddr>,
    pub tcp: Option<SocketAddr>,
    pub metrics: Option<SocketAddr>,
}

impl Web {
    /// Starts trickles-web with `args` and waits for its `ready` line.
    pub fn start(args: &[&str]) -> Web {
        Web::spawn(Command::new(env!("CARGO_BIN_EXE_trickles-web")).args(args))
    }

    /// Starts trickles-web inside network namespace `ns` (`ip netns exec`, which execs it:
    /// the child's pid is the server's).
    pub fn start_in(ns: &str, args: &[&str]) -> Web {
        Web::spawn(
            Command::new("ip")
                .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_trickles-web")])
                .args(args),
        )
    }

    fn spawn(cmd: &mut Command) -> Web {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("trickles-web starts");
        let line = ready_line(&mut child);
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(k))
                .map(|v| v.parse().unwrap())
        };
        Web {
            udp: field("udp="),
            tcp: field("tcp="),
            metrics: field("metrics="),
            child,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The value of metric `name` (with its labels, as rendered).
    pub fn metric(&self, name: &str) -> f64 {
        let body = http_get(self.metrics.unwrap(), "/metrics");
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no metric {name} in\n{body}"))
    }

    /// Stops it with SIGTERM and returns whether it exited successfully.
    pub fn stop(mut self) -> bool {
        terminate(&mut self.child)
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGTERM to `child`, then whether it exited successfully within 5 s.
pub fn terminate(child: &mut Child) -> bool {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(s)) = child.try_wait() {
            return s.success();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The first line a daemon prints on stdout, which must be its `ready …` line.
pub fn ready_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("ready"), "first line: {line:?}");
    line
}

/// A plain HTTP/1.1 GET with `Connection: close`, returning the body (status checked 200).
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// VmRSS of process `pid`, kB.
pub fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A blocking Trickles client: one UDP socket, the core's `Demux`.
pub struct Getter {
    pub sock: UdpSocket,
    pub demux: Demux,
    pub server: SocketAddr,
    start: Instant,
    /// Every datagram sent, for replay attacks.
    pub sent: Vec<Vec<u8>>,
    pub record: bool,
}

impl Getter {
    pub fn new(server: SocketAddr) -> Getter {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(2)))
            .unwrap();
        let local = Addr::from(sock.local_addr().unwrap().ip());
        let server_ip = Addr::from(server.ip());
        let cfg = ClientConfig {
            mss: trickles::ip::mss_for_mtu(1472, &server_ip),
            ..ClientConfig::default()
        };
        Getter {
            sock,
            demux: Demux::new(cfg, local, u64::from(std::process::id())),
            server,
            start: Instant::now(),
            sent: Vec::new(),
            record: false,
        }
    }

    fn now(&self) -> trickles::Instant {
        trickles::Instant::from_micros(self.start.elapsed().as_micros() as u64)
    }

    /// One round: send what is due, read what arrived, run timers.
    pub fn step(&mut self, buf: &mut [u8]) {
        let now = self.now();
        self.demux.handle_timeout(now);
        while let Some((_, p)) = self.demux.poll_transmit() {
            let _ = self.sock.send_to(&p, self.server);
            if self.record {
                self.sent.push(p);
            }
        }
        if let Ok(n) = self.sock.recv(buf) {
            let now = self.now();
            let _ = self.demux.handle_packet(now, &buf[..n]);
            while let Ok(n) = {
                self.sock.set_nonblocking(true).unwrap();
                let r = self.sock.recv(buf);
                self.sock.set_nonblocking(false).unwrap();
                r
            } {
                let _ = self.demux.handle_packet(now, &buf[..n]);
            }
        }
    }

    /// GETs `path` and returns the whole output stream (head and body), or panics after
    /// `limit`.
    pub fn get(&mut self, path: &str, limit: Duration) -> Vec<u8> {
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
        self.exchange(request.as_bytes(), limit)
    }

    /// Sends the request head `request` (in the SYN) and returns the whole output stream
    /// (head and body), or panics after `limit`.
    pub fn exchange(&mut self, request: &[u8], limit: Duration) -> Vec<u8> {
        let path = String::from_utf8_lossy(request.split(|&b| b == b'\r').next().unwrap_or(b""))
            .into_owned();
        let id = self
            .demux
            .open(self.now(), Addr::from(self.server.ip()), 80, request)
            .unwrap();
        let mut out = Vec::new();
        let mut buf = vec![0u8; 65_536];
        let deadline = Instant::now() + limit;
        loop {
            self.step(&mut buf);
            loop {
                let n = self.demux.read(id, &mut buf);
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            let c = self.demux.get(id).unwrap();
            if c.is_complete() && c.readable() == 0 {
                break;
            }
            assert!(!c.is_reset(), "connection reset");
            assert!(
                Instant::now() < deadline,
                "{path}: timed out at {} bytes",
                out.len()
            );
        }
        self.demux.close(id);
        out
    }
}

/// Splits an HTTP response into its head and body.
pub fn split(response: &[u8]) -> (String, &[u8]) {
    let at = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    (
        String::from_utf8_lossy(&response[..at]).into_owned(),
        &response[at..],
    )
}

/// Whether `bin` runs (`--version`).
pub fn have(bin: &str) -> bool {
    Command::new(bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}
