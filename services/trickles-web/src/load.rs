//! `trickles-load`: the benchmarks' closed-loop load generator, for Trickles and for TCP.
//!
//! One tool measures trickles-web and its peers (nginx, trickles-web's own TCP fallback)
//! the same way: `concurrency` requests are always outstanding; each completed one is
//! counted and replaced at once.
//!
//! * Trickles ([`run_trickles`]): one UDP socket carrying whole IP packets (IP-in-UDP) and
//!   one [`Demux`]. Every request opens a new connection whose SYN carries the GET, and the
//!   connection is closed when its output is complete: Trickles' new-connection rate.
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
//!   open (SYN + GET) ─► Demux ─► poll_transmit ─► UDP send ─► server
//!   complete? ◄─ read ◄─ handle_packet ◄─ try_recv batch ◄─────┘
//! ```

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::task::JoinSet;
use tokio::time::timeout_at;
use trickles::client::{ClientConfig, ConnId, Demux};
use trickles::conn::Addr;

/// The inner TCP port trickles-web serves on.
pub const SERVER_PORT: u16 = 80;

/// Bytes of link MTU the IP-in-UDP packets are sized for (an Ethernet MTU less the outer
/// IPv4 and UDP headers).
pub const LINK_MTU: u16 = 1472;

/// Bytes asked for each of the UDP socket's buffers.
pub const SOCKET_BUFFER: usize = 4 << 20;

/// Most datagrams handled between two looks at the timers and the socket's send side.
const RECV_BATCH: usize = 256;

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
    let connection = if close { "Connection: close\r\n" } else { "" };
    format!("GET {path} HTTP/1.1\r\nHost: x\r\n{connection}\r\n").into_bytes()
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
fn cpu_seconds() -> f64 {
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
struct Budget {
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

/// One outstanding Trickles request.
struct Outstanding {
    started_us: u64,
    bytes: u64,
}

/// A nonblocking UDP socket for talking to `server`, with buffers of [`SOCKET_BUFFER`] (as
/// large as the system allows): a server's bursts to a thousand clients must not overflow
/// it.
fn udp_socket(server: SocketAddr) -> io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let (domain, bind): (Domain, SocketAddr) = if server.is_ipv4() {
        (Domain::IPV4, (std::net::Ipv4Addr::UNSPECIFIED, 0).into())
    } else {
        (Domain::IPV6, (std::net::Ipv6Addr::UNSPECIFIED, 0).into())
    };
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: the system caps them at net.core.{r,w}mem_max.
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.set_nonblocking(true)?;
    s.bind(&bind.into())?;
    UdpSocket::from_std(s.into())
}

/// The Trickles half: see the module docs.
pub async fn run_trickles(cfg: &LoadConfig, server: SocketAddr) -> anyhow::Result<Report> {
    let socket = udp_socket(server).context("UDP socket")?;
    socket.connect(server).await?;
    let local = Addr::from(socket.local_addr()?.ip());
    let server_ip = Addr::from(server.ip());
    let ccfg = ClientConfig {
        mss: trickles::ip::mss_for_mtu(LINK_MTU, &server_ip),
        ..ClientConfig::default()
    };
    let mut seed = [0u8; 8];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let mut demux = Demux::new(ccfg, local, u64::from_le_bytes(seed));
    let request = request_bytes(&cfg.path, false);
    let stall_us = cfg.stall.as_micros() as u64;

    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let budget = Budget::new(cfg, start);
    let end_us = cfg.duration.as_micros() as u64;
    let now_us = || start.elapsed().as_micros() as u64;
    let mut report = Report::default();
    let mut live: HashMap<ConnId, Outstanding> = HashMap::with_capacity(cfg.concurrency);
    let mut datagram = vec![0u8; 65536];
    let mut output = vec![0u8; 1 << 18];
    let mut next_scan_us = 0;
    let mut sleep = std::pin::pin!(tokio::time::sleep_until(budget.end.into()));

    loop {
        let now = now_us();
        if now >= end_us {
            break;
        }
        while live.len() < cfg.concurrency && budget.claim() {
            let id = demux
                .open(now, server_ip, SERVER_PORT, &request)
                .map_err(|e| anyhow::anyhow!("open: {e}"))?;
            live.insert(
                id,
                Outstanding {
                    started_us: now,
                    bytes: 0,
                },
            );
        }
        if live.is_empty() {
            break;
        }
        while let Some((_, packet)) = demux.poll_transmit() {
            if let Err(e) = socket.try_send(&packet) {
                if e.kind() != io::ErrorKind::WouldBlock {
                    return Err(e).context("send");
                }
                socket.send(&packet).await.context("send")?;
            }
        }

        let mut got = 0;
        while got < RECV_BATCH {
            let n = match socket.try_recv(&mut datagram) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // Loopback ICMP port unreachable (server gone or not yet there).
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
                Err(e) => return Err(e).context("recv"),
            };
            got += 1;
            let Some(packet) = datagram.get(..n) else {
                continue;
            };
            let Ok(id) = demux.handle_packet(now, packet) else {
                continue;
            };
            if let Some(o) = live.get_mut(&id) {
                loop {
                    let r = demux.read(id, &mut output);
                    if r == 0 {
                        break;
                    }
                    o.bytes += r as u64;
                }
            }
            if demux.get(id).is_some_and(|c| c.is_complete()) {
                finish(&mut demux, &mut live, id, true, &mut report);
            }
        }

        let now = now_us();
        if demux.poll_timeout().is_some_and(|d| d <= now) {
            demux.handle_timeout(now);
        }
        if now >= next_scan_us {
            // Stalled or reset connections: counted as errors, replaced.
            let dead: Vec<ConnId> = live
                .iter()
                .filter(|(id, o)| {
                    now.saturating_sub(o.started_us) > stall_us
                        || demux.get(**id).is_none_or(|c| c.is_reset())
                })
                .map(|(id, _)| *id)
                .collect();
            for id in dead {
                finish(&mut demux, &mut live, id, false, &mut report);
            }
            next_scan_us = now + 100_000;
        }
        if got == 0 {
            let deadline = [demux.poll_timeout(), Some(next_scan_us), Some(end_us)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(end_us);
            if deadline > now {
                sleep
                    .as_mut()
                    .reset((start + Duration::from_micros(deadline)).into());
                tokio::select! {
                    r = socket.readable() => r.context("recv")?,
                    () = &mut sleep => {}
                }
            }
        }
    }
    report.seconds = start.elapsed().as_secs_f64();
    report.cpu = (cpu_seconds() - cpu0) / report.seconds.max(1e-9);
    Ok(report)
}

/// Retires connection `id`: a completed response (`ok`) of the right length is counted,
/// anything else is an error.
fn finish(
    demux: &mut Demux,
    live: &mut HashMap<ConnId, Outstanding>,
    id: ConnId,
    ok: bool,
    report: &mut Report,
) {
    let Some(o) = live.remove(&id) else {
        return;
    };
    if let Some(client) = demux.close(id) {
        let s = client.stats();
        report.timeouts += s.timeouts;
        report.losses += s.losses;
    }
    if ok && report.response_len == 0 {
        report.response_len = o.bytes;
    }
    if ok && o.bytes == report.response_len {
        report.requests += 1;
        report.bytes += o.bytes;
    } else {
        report.errors += 1;
    }
}

/// Reads `stream` to end of file into `buf` (reused), returning the bytes read.
async fn read_to_end(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<u64> {
    let mut total = 0;
    loop {
        let n = stream.read(buf).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// One request on a new connection with `Connection: close`, read to end of file.
async fn fetch_close(server: SocketAddr, request: &[u8], buf: &mut [u8]) -> io::Result<u64> {
    let mut stream = TcpStream::connect(server).await?;
    stream.set_nodelay(true)?;
    stream.write_all(request).await?;
    read_to_end(&mut stream, buf).await
}

/// The lengths of one `Connection: close` response and of one keep-alive response, learnt
/// without parsing (see the module docs).
async fn probe(server: SocketAddr, path: &str) -> anyhow::Result<(u64, u64)> {
    let mut buf = vec![0u8; 1 << 18];
    let close = request_bytes(path, true);
    let alone = fetch_close(server, &close, &mut buf).await?;
    let mut both = request_bytes(path, false);
    both.extend_from_slice(&close);
    let pair = fetch_close(server, &both, &mut buf).await?;
    let keepalive = pair
        .checked_sub(alone)
        .filter(|&k| k > 0)
        .context("the server closed a keep-alive connection after one response")?;
    Ok((alone, keepalive))
}

/// The TCP half: see the module docs.
pub async fn run_tcp(cfg: &LoadConfig, server: SocketAddr) -> anyhow::Result<Report> {
    let (close_len, keepalive_len) = probe(server, &cfg.path)
        .await
        .context("probing the response length")?;
    let expected = if cfg.keepalive {
        keepalive_len
    } else {
        close_len
    };
    let request = Arc::new(request_bytes(&cfg.path, !cfg.keepalive));
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let budget = Arc::new(Budget::new(cfg, start));
    let mut tasks = JoinSet::new();
    for _ in 0..cfg.concurrency {
        let (budget, request, stall, keepalive) =
            (budget.clone(), request.clone(), cfg.stall, cfg.keepalive);
        tasks.spawn(async move {
            let mut part = Report::default();
            let mut buf = vec![0u8; 1 << 16];
            let mut conn: Option<TcpStream> = None;
            while budget.claim() {
                let deadline = (Instant::now() + stall).min(budget.end);
                let one = async {
                    if !keepalive {
                        return fetch_close(server, &request, &mut buf).await;
                    }
                    let stream = match conn.as_mut() {
                        Some(s) => s,
                        None => {
                            let s = TcpStream::connect(server).await?;
                            s.set_nodelay(true)?;
                            conn.insert(s)
                        }
                    };
                    stream.write_all(&request).await?;
                    let mut got = 0;
                    while got < expected {
                        let want = usize::try_from(expected - got)
                            .unwrap_or(usize::MAX)
                            .min(buf.len());
                        let n = stream.read(&mut buf[..want]).await?;
                        if n == 0 {
                            break;
                        }
                        got += n as u64;
                    }
                    Ok(got)
                };
                match timeout_at(deadline.into(), one).await {
                    Ok(Ok(n)) if n == expected => {
                        part.requests += 1;
                        part.bytes += n;
                    }
                    // The run ended with this request outstanding: not counted.
                    Err(_) if Instant::now() >= budget.end => break,
                    _ => {
                        part.errors += 1;
                        conn = None;
                    }
                }
            }
            part
        });
    }
    let mut report = Report {
        response_len: expected,
        ..Report::default()
    };
    while let Some(part) = tasks.join_next().await {
        let part = part.context("a load task panicked")?;
        report.requests += part.requests;
        report.bytes += part.bytes;
        report.errors += part.errors;
    }
    report.seconds = start.elapsed().as_secs_f64();
    report.cpu = (cpu_seconds() - cpu0) / report.seconds.max(1e-9);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;
    use trickles::app::object::object_byte;
    use trickles::app::{Application, Minisocket, Service, UcontKey, UserContinuation};
    use trickles::crypto::KeySchedule;
    use trickles::server::{EventKind, Server, ServerConfig};

    /// Answers every GET with the same `len`-byte synthetic object (as `ObjectApp`, whose
    /// request is the length itself).
    struct Fixed {
        key: UcontKey,
        len: u64,
    }

    impl Application for Fixed {
        fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
            if msk.kind() == EventKind::Close {
                return;
            }
            let (conn, len) = (msk.binding(), self.len);
            let ucont = msk.user_continuation().to_vec();
            let sealed = if ucont.is_empty() {
                let output = UserContinuation::Output {
                    valid_start: 0,
                    valid_end: len,
                    skip_to: len,
                    follows: None,
                    app: &[],
                };
                self.key.seal(&conn, &output).unwrap()
            } else {
                assert!(self.key.open(&conn, &ucont).is_ok());
                ucont
            };
            msk.set_ucont_all(&sealed);
            let _ = msk.send_with(
                server,
                &mut |range, allowed, out| {
                    let end = range.start.saturating_add(allowed as u64).min(len);
                    out.extend((range.start.min(end)..end).map(object_byte));
                    end >= len
                },
                sink,
            );
        }
    }

    /// An in-process Trickles server over IP-in-UDP serving `len`-byte objects.
    async fn trickles_server(len: u64) -> SocketAddr {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let keys = KeySchedule::new(&[7; 16]);
        let mut cfg = ServerConfig::new(keys.key_config(0));
        cfg.mss = trickles::ip::mss_for_mtu(LINK_MTU, &Addr::from(addr.ip()));
        let app = Fixed {
            key: UcontKey::new(&keys.derive(b"ucont", 0)),
            len,
        };
        let mut service: Service<Fixed, SocketAddr> = Service::new(Server::new(cfg), app, 1024);
        let start = Instant::now();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 65536];
            loop {
                let (n, peer) = socket.recv_from(&mut buf).await.unwrap();
                let now = start.elapsed().as_micros() as u64;
                let _ = service.handle_packet(now, &buf[..n], peer);
                let mut out = Vec::new();
                service.serve(&mut |p, peer| out.push((p.to_vec(), peer)));
                for (p, peer) in out {
                    socket.send_to(&p, peer).await.unwrap();
                }
            }
        });
        addr
    }

    fn config(target: Target, concurrency: usize, requests: u64) -> LoadConfig {
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

    #[tokio::test]
    async fn trickles_requests_complete_and_are_counted() {
        let server = trickles_server(5000).await;
        let r = run(&config(Target::Trickles(server), 8, 40)).await.unwrap();
        assert_eq!((r.requests, r.errors), (40, 0), "{r:?}");
        assert_eq!(r.response_len, 5000);
        assert_eq!(r.bytes, 40 * 5000);
        assert!(r.seconds > 0.0 && r.requests_per_s() > 0.0);
    }

    #[tokio::test]
    async fn trickles_without_a_server_counts_stalls_as_errors() {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let mut cfg = config(Target::Trickles(addr), 2, 4);
        cfg.stall = Duration::from_millis(200);
        let r = run(&cfg).await.unwrap();
        assert_eq!((r.requests, r.errors), (0, 4), "{r:?}");
        drop(socket);
    }

    /// How the test's TCP server misbehaves.
    #[derive(Clone, Copy, PartialEq)]
    enum Fault {
        None,
        /// Closes every connection after its first answer.
        OneAnswer,
        /// Cuts the answer by one byte on every odd-numbered connection.
        OddShort,
    }

    /// A TCP server answering every request on a connection with `answer`, closing after
    /// `Connection: close`, with `fault`.
    async fn tcp_server(answer: &'static [u8], fault: Fault) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for n in 0.. {
                let (mut s, _) = listener.accept().await.unwrap();
                let body = if fault == Fault::OddShort && n % 2 == 1 {
                    &answer[1..]
                } else {
                    answer
                };
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 1024];
                    loop {
                        let Ok(n) = s.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        got.extend_from_slice(&buf[..n]);
                        // The test's own framing: one request per blank line.
                        while let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                            let req: Vec<u8> = got.drain(..i + 4).collect();
                            let close = req.windows(6).any(|w| w == b"close\r");
                            if s.write_all(body).await.is_err()
                                || close
                                || fault == Fault::OneAnswer
                            {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";

    #[tokio::test]
    async fn tcp_close_and_keepalive_count_whole_responses() {
        let server = tcp_server(ANSWER, Fault::None).await;
        let r = run(&config(Target::Tcp(server), 4, 50)).await.unwrap();
        assert_eq!((r.requests, r.errors, r.response_len), (50, 0, 41), "{r:?}");
        assert_eq!(r.bytes, 50 * 41);
        let mut cfg = config(Target::Tcp(server), 4, 50);
        cfg.keepalive = true;
        let r = run(&cfg).await.unwrap();
        assert_eq!((r.requests, r.errors, r.response_len), (50, 0, 41), "{r:?}");
    }

    #[tokio::test]
    async fn tcp_responses_of_another_length_are_errors() {
        // Connection 0 (the probe's lone request) sets the length; connection 1 is the
        // probe's pair; then odd connections answer one byte short.
        let server = tcp_server(ANSWER, Fault::OddShort).await;
        let r = run(&config(Target::Tcp(server), 1, 20)).await.unwrap();
        assert_eq!(
            (r.requests, r.errors, r.response_len),
            (10, 10, 41),
            "{r:?}"
        );
    }

    #[tokio::test]
    async fn keepalive_needs_a_server_that_keeps_connections() {
        // The probe's pair of requests gets one answer: keep-alive cannot be framed.
        let server = tcp_server(ANSWER, Fault::OneAnswer).await;
        let mut cfg = config(Target::Tcp(server), 2, 10);
        cfg.keepalive = true;
        assert!(run(&cfg).await.is_err());
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
        while spin.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        // USER_HZ ticks are 10 ms: 50 ms of spinning shows as at least 20 ms.
        assert!(x > 0 && cpu_seconds() - t0 >= 0.02);
    }
}
