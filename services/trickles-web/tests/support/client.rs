//! Shared by the client tests (get, proxy): server processes with fixed arguments, client
//! processes killed on drop, waiting for a file to grow.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TempDir, Web, path_str};

/// Starts trickles-web serving `dir`'s root with `dir`'s key file, Trickles on `udp`
/// (port 0: any), metrics on any port.
pub fn server(dir: &TempDir, udp: &str) -> Web {
    let root = dir.root();
    let keys = dir.0.join("keys");
    Web::start(&[
        "--root",
        path_str(&root),
        "--keys",
        path_str(&keys),
        "--listen",
        &format!("udp:{udp}"),
        "--metrics",
        "127.0.0.1:0",
    ])
}

/// The `trickles://` URL of `path` on `web`.
pub fn url(web: &Web, path: &str) -> String {
    format!("trickles://{}{path}", web.udp.unwrap())
}

/// A child process killed on drop.
pub struct Proc(pub Child);

impl Proc {
    /// Waits up to `limit` for it to exit, collecting its output meanwhile; kills it and
    /// panics after that.
    pub fn finish(mut self, limit: Duration) -> Output {
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let stdout = drain(
            self.0
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            self.0
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.0.kill();
                let _ = self.0.wait();
                let stderr = stderr.join().unwrap();
                panic!(
                    "still running after {limit:?}; stderr:\n{}",
                    String::from_utf8_lossy(&stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Output {
            status,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts trickles-get with `args` (stdout and stderr piped: collect them with
/// [`Proc::finish`]).
pub fn spawn_get(args: &[&str]) -> Proc {
    Proc(
        Command::new(env!("CARGO_BIN_EXE_trickles-get"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("trickles-get starts"),
    )
}

/// Runs trickles-get with `args` to the end (at most `limit`).
pub fn get(args: &[&str], limit: Duration) -> Output {
    spawn_get(args).finish(limit)
}

/// Panics with the client's stderr unless it succeeded; returns its summary line.
pub fn expect_ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "trickles-get failed:\n{stderr}");
    stderr
}

/// Waits until `path` holds at least `bytes` bytes (panics after `limit`).
pub fn wait_for_size(path: &Path, bytes: u64, limit: Duration) {
    let deadline = Instant::now() + limit;
    while std::fs::metadata(path).map_or(0, |m| m.len()) < bytes {
        assert!(
            Instant::now() < deadline,
            "{} never reached {bytes} bytes",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGKILLs `web` (no goodbye) and waits for it; returns its UDP address.
pub fn kill(mut web: Web) -> SocketAddr {
    let udp = web.udp.unwrap();
    web.child.kill().unwrap();
    web.child.wait().unwrap();
    udp
}

/// Whether `a` and `b` are equal, reporting the first difference.
pub fn same(name: &str, got: &[u8], want: &[u8]) {
    if got == want {
        return;
    }
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    panic!(
        "{name}: got {} bytes, want {}; first difference at {first:?}",
        got.len(),
        want.len()
    );
}

/// A running trickles-proxy, killed on drop.
pub struct Proxy {
    pub child: Child,
    pub tcp: SocketAddr,
}

impl Proxy {
    /// Starts trickles-proxy on any local port with `args` and waits for its `ready` line.
    pub fn start(args: &[&str]) -> Proxy {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trickles-proxy"))
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("trickles-proxy starts");
        let line = crate::common::ready_line(&mut child);
        let tcp = line
            .trim()
            .strip_prefix("ready tcp=")
            .unwrap_or_else(|| panic!("first line: {line:?}"))
            .parse()
            .unwrap();
        Proxy { child, tcp }
    }

    /// Stops it with SIGTERM and returns whether it exited successfully in time.
    pub fn stop(mut self) -> bool {
        crate::common::terminate(&mut self.child)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
