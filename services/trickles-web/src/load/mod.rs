//! `trickles-load`: the benchmarks' closed-loop load generator, for Trickles and for TCP.
//!
//! One tool measures trickles-web and its peers (nginx, trickles-web's own TCP fallback)
//! the same way: `concurrency` requests are always outstanding; each completed one is
//! counted and replaced at once.
//!
//! * Trickles ([`run_trickles`]): one UDP link (`netio`'s [`Links`](netio::link::Links))
//!   carrying whole IP packets (IP-in-UDP) and one
//!   [`Demux`](::trickles::client::Demux). Every request opens a new connection whose SYN
//!   carries the GET, and the connection is closed when its output is complete: Trickles'
//!   new-connection rate.
//! * TCP ([`run_tcp`]): `concurrency` tasks, each opening a new TCP connection per request
//!   with `Connection: close` and reading to end of file (the fair peer of one Trickles
//!   connection), or with `keepalive` one connection per task carrying request after
//!   request (for reference).
//!
//! Nothing here parses HTTP. A response is the bytes a connection delivered; every
//! response must be as long as the first one (the servers' heads are of fixed length),
//! and one that is not counts as an error. Keep-alive responses are framed by a length
//! learned before the run, without parsing: a keep-alive request followed on the same
//! connection by a `Connection: close` one yields both responses to end of file, and
//! taking away the length of a lone `Connection: close` response leaves the keep-alive
//! one's.
//!
//! ```text
//!   open (SYN + GET) ─► Demux ─► poll_transmit ─► Links::send + flush ─► server
//!   complete? ◄─ read ◄─ handle_packet ◄─ Links::try_recv_batch ◄─────────┘
//! ```

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;

mod args;
mod tcp;
mod trickles;

pub use self::args::{Args, main};
pub use self::tcp::run_tcp;
pub use self::trickles::run_trickles;

/// The inner TCP port trickles-web serves on.
pub const SERVER_PORT: u16 = 80;

/// Bytes of link MTU the IP-in-UDP packets are sized for (an Ethernet MTU less the outer
/// IPv4 and UDP headers).
pub const LINK_MTU: u16 = 1472;

/// Bytes asked for each of the UDP socket's buffers.
pub const SOCKET_BUFFER: usize = 4 << 20;

/// Which server and how to speak to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A Trickles server over IP-in-UDP at this UDP address.
    Trickles(SocketAddr),
    /// An HTTP/1.1 server over TCP at this address.
    Tcp(SocketAddr),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The server.
    pub target: Target,
    /// The path requested (`/file`).
    pub path: String,
    /// Requests outstanding at any time.
    pub concurrency: usize,
    /// Stop after this long (outstanding requests are abandoned, not counted).
    pub duration: Duration,
    /// Stop after this many completed or failed requests, if sooner.
    pub requests: Option<u64>,
    /// TCP only: reuse one connection per task instead of one per request.
    pub keepalive: bool,
    /// A request not complete this long after it started counts as an error.
    pub stall: Duration,
}

/// What a run measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Report {
    /// Requests completed whole.
    pub requests: u64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// Bytes of the completed responses (heads included).
    pub bytes: u64,
    /// Requests that failed: refused or reset connections, stalls, wrong lengths.
    pub errors: u64,
    /// The length every response had to have (0 if none completed).
    pub response_len: u64,
    /// CPU seconds this process used during the run, over `seconds`: near 1.0 means the
    /// generator itself was the bottleneck.
    pub cpu: f64,
    /// Trickles only: retransmit-timeout requests the clients sent.
    pub timeouts: u64,
    /// Trickles only: packets the clients declared lost.
    pub losses: u64,
}

impl Report {
    /// Completed requests per second.
    pub fn requests_per_s(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }

    /// Response megabytes (10^6 bytes) per second.
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }

    /// The one-line summary.
    pub fn line(&self) -> String {
        format!(
            "requests={} seconds={:.3} requests/s={:.0} MB/s={:.1} errors={} response_len={} \
             cpu={:.2} timeouts={} losses={}",
            self.requests,
            self.seconds,
            self.requests_per_s(),
            self.mb_per_s(),
            self.errors,
            self.response_len,
            self.cpu,
            self.timeouts,
            self.losses
        )
    }

    /// The same as one JSON object.
    pub fn json(&self) -> String {
        format!(
            "{{\"requests\":{},\"seconds\":{:.6},\"requests_per_s\":{:.1},\"mb_per_s\":{:.3},\
             \"errors\":{},\"response_len\":{},\"cpu\":{:.3},\"timeouts\":{},\"losses\":{}}}",
            self.requests,
            self.seconds,
            self.requests_per_s(),
            self.mb_per_s(),
            self.errors,
            self.response_len,
            self.cpu,
            self.timeouts,
            self.losses
        )
    }
}

/// The GET for `path`; `close` adds `Connection: close`.
pub fn request_bytes(path: &str, close: bool) -> Vec<u8> {
    ::trickles::app::http::get_request("x", path, None, close)
}

/// Runs `cfg` against its target.
pub async fn run(cfg: &LoadConfig) -> anyhow::Result<Report> {
    if cfg.concurrency == 0 {
        bail!("concurrency must be at least 1");
    }
    match cfg.target {
        Target::Trickles(server) => run_trickles(cfg, server).await,
        Target::Tcp(server) => run_tcp(cfg, server).await,
    }
}

/// CPU seconds (user and system) this process has used, from `/proc/self/stat` (0 where
/// there is none).
pub(super) fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): state is field 3; utime and
    // stime are fields 14 and 15, in USER_HZ (100 on Linux).
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 / 100.0
}

/// When to stop, shared by every part of a run.
pub(super) struct Budget {
    end: Instant,
    limit: u64,
    /// Requests started.
    started: AtomicU64,
}

impl Budget {
    fn new(cfg: &LoadConfig, start: Instant) -> Budget {
        Budget {
            end: start + cfg.duration,
            limit: cfg.requests.unwrap_or(u64::MAX),
            started: AtomicU64::new(0),
        }
    }

    /// Claims one request, if the budget has one left.
    fn claim(&self) -> bool {
        Instant::now() < self.end && self.started.fetch_add(1, Ordering::Relaxed) < self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn config(target: Target, concurrency: usize, requests: u64) -> LoadConfig {
        LoadConfig {
            target,
            path: "/f".into(),
            concurrency,
            duration: Duration::from_secs(30),
            requests: Some(requests),
            keepalive: false,
            stall: Duration::from_secs(10),
        }
    }

    #[test]
    fn reports_print_their_figures() {
        let r = Report {
            requests: 10,
            seconds: 2.0,
            bytes: 4_000_000,
            errors: 1,
            response_len: 400_000,
            cpu: 0.5,
            timeouts: 0,
            losses: 2,
        };
        assert_eq!(r.requests_per_s(), 5.0);
        assert_eq!(r.mb_per_s(), 2.0);
        assert!(
            r.line()
                .starts_with("requests=10 seconds=2.000 requests/s=5 MB/s=2.0 errors=1")
        );
        assert!(
            r.json()
                .contains("\"requests_per_s\":5.0,\"mb_per_s\":2.000,\"errors\":1")
        );
        assert_eq!(
            request_bytes("/a", true),
            b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn cpu_time_is_read() {
        let t0 = cpu_seconds();
        let spin = Instant::now();
        let mut x = 0u64;
        // Spin until 20 ms of CPU time shows (USER_HZ ticks are 10 ms), for up to 5 s of
        // wall time: on a loaded machine 50 ms of wall time may be far less CPU time.
        while cpu_seconds() - t0 < 0.02 && spin.elapsed() < Duration::from_secs(5) {
            for _ in 0..100_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
        }
        assert!(x > 0 && cpu_seconds() - t0 >= 0.02);
    }
}
