//! `trickles-proxy`: a local HTTP proxy that carries TCP clients' GETs over Trickles, so
//! unmodified programs (`curl -x`, browsers) fetch from trickles-web.
//!
//! ```text
//!  TCP client ─► connection task: parse_request finds the head's end ──► Open(head) ─┐
//!            ◄── response head + body, as it arrives ◄── Event::Data / End ◄────────┐ │
//!                                                                                 │ ▼
//!                      link task: one udp::Link (one Demux), select! over commands,
//!                      the link and shutdown; one Trickles connection per GET
//! ```
//!
//! Each request head is forwarded as it came (absolute-form targets included: the
//! server's parser takes them) in the SYN of a connection of its own; the server's output
//! stream — the response head and body — is relayed to the TCP client unchanged. Then the
//! next request on the same TCP connection is served (keep-alive, pipelined requests
//! too), unless the client asked to close. A request the core's parser refuses is
//! answered locally with the core's error head and the connection closed. The whole head
//! must fit one SYN (the client's `max_request_data`, 1024 bytes); a longer one reaches
//! the server cut and is answered 400 by it.
//!
//! With `--via udp:LOCAL=PEER` the link's datagrams go from LOCAL to that first hop PEER
//! (a waist router's link socket) and `--server` names the server's inner address
//! (`10.2.0.80`, one only: the routers pick among replicas sharing it); see [`Hop`].
//!
//! ## Timeouts and gateway errors (RFC 9110 §15.6)
//!
//! A request whose server sends nothing within `--connect-timeout` (5 s) is answered
//! `504 Gateway Timeout` by the proxy (the upstream did not answer in time); one whose
//! Trickles connection fails before any byte of the response (reset by the server) is
//! answered `502 Bad Gateway`, and one the link cannot open (no local port) `503 Service
//! Unavailable`. Each such answer says why in its body, closes the TCP connection and is
//! logged. Once the response head has begun to reach the client there is no status left
//! to send: a transfer idle for `--idle-timeout` (10 s), or failed, closes the TCP
//! connection, so the client sees a body shorter than its `Content-Length`.
//!
//! Relayed data waits in unbounded channels: a TCP client that reads slowly costs memory
//! (at most the bodies it asked for), never the other clients' progress.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant as StdInstant};

use anyhow::Context as _;
use netio::shutdown::Shutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use trickles::app::http::{Answer, HttpError, parse_request, write_head};
use trickles::client::ConnId;

use crate::options::{parse_secs, secs_text};
use crate::udp::{DEFAULT_FAILOVER, Hop, Link, LinkConfig, Mode, ServerAddr, parse_emulation};

/// A local HTTP proxy relaying GETs to a Trickles web server (trickles-web).
#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "trickles-proxy",
    version,
    after_help = "A server that sends nothing within --connect-timeout: 504 Gateway Timeout; \
                  a connection reset before the response: 502 Bad Gateway; none can be \
                  opened: 503. A response idle for --idle-timeout once under way: the TCP \
                  connection is closed."
)]
pub struct Args {
    /// Where TCP clients connect (port 0: any; the `ready` line on stdout says which).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// A replica's UDP address (repeatable; the first one's IP names the server). With
    /// --via: the server's inner address (IP, any port ignored), once.
    #[arg(long = "server", value_name = "ADDR", required = true)]
    pub servers: Vec<ServerAddr>,
    /// Spread the packets over all replicas round-robin instead of failing over.
    #[arg(long)]
    pub spray: bool,
    /// Silence (milliseconds) after which the next replica takes over.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_FAILOVER.as_millis() as u64)]
    pub failover_ms: u64,
    /// Emulate loss, delay and jitter each way (as trickles-get's `--emulate`).
    #[arg(long, value_name = "SPEC")]
    pub emulate: Option<String>,
    /// Answer `504 Gateway Timeout` when the server has sent nothing this long after a
    /// request.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_secs)]
    pub connect_timeout: Duration,
    /// Close the client's connection when a response under way has sent nothing for this
    /// long.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    pub idle_timeout: Duration,
    /// The first hop and the inner addresses (--via, --src, --bind).
    #[command(flatten)]
    pub hop: Hop,
    /// Logging: `--log-format text|json`.
    #[command(flatten)]
    pub log: netio::trace::LogArgs,
}

impl Args {
    /// The link these options describe.
    ///
    /// # Errors
    ///
    /// A `--server` without a port (unless `--via`), `--via` with several servers or
    /// `--spray`, a bad emulation spec.
    pub fn link_config(&self) -> anyhow::Result<LinkConfig> {
        self.hop.check(self.servers.len(), self.spray)?;
        let Some(first) = self.servers.first() else {
            anyhow::bail!("--server ADDR is required");
        };
        let mut cfg = if self.hop.via.is_some() {
            self.hop.link_config(Vec::new(), first.ip)
        } else {
            let replicas = self
                .servers
                .iter()
                .map(|s| s.udp("--server"))
                .collect::<anyhow::Result<Vec<_>>>()?;
            self.hop.link_config(replicas, first.ip)
        };
        cfg.mode = if self.spray {
            Mode::Spray
        } else {
            Mode::Failover
        };
        cfg.failover = Duration::from_millis(self.failover_ms.max(1));
        cfg.emulation = self.emulate.as_deref().map(parse_emulation).transpose()?;
        Ok(cfg)
    }
}

/// The proxy's counters.
#[derive(Debug, Default)]
pub struct ProxyStats {
    /// TCP connections accepted.
    pub tcp_connections: AtomicU64,
    /// Requests relayed (one Trickles connection each).
    pub requests: AtomicU64,
    /// Requests refused locally (malformed heads).
    pub refused: AtomicU64,
    /// Response bytes relayed to TCP clients.
    pub bytes: AtomicU64,
    /// Trickles connections that failed (reset, no local port).
    pub failed: AtomicU64,
    /// Requests given up on by a timeout (answered 504, or closed mid-response).
    pub timed_out: AtomicU64,
}

impl std::fmt::Display for ProxyStats {
    /// The final counters as one line: `12 connections, 30 requests (2 refused, 1 failed,
    /// 0 timed out), 123456 bytes`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        write!(
            f,
            "{} connections, {} requests ({} refused, {} failed, {} timed out), {} bytes",
            n(&self.tcp_connections),
            n(&self.requests),
            n(&self.refused),
            n(&self.failed),
            n(&self.timed_out),
            n(&self.bytes)
        )
    }
}

/// The deadlines of every request the proxy relays (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// No byte of the response this long after the request: 504.
    pub connect: Duration,
    /// No byte for this long once the response is under way: the connection is closed.
    pub idle: Duration,
}

impl Default for Timeouts {
    /// 5 s and 10 s, the flags' defaults.
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(5),
            idle: Duration::from_secs(10),
        }
    }
}

/// What the link task tells a connection task about its request.
#[derive(Debug)]
enum Event {
    /// More of the server's output stream.
    Data(Vec<u8>),
    /// The output stream is complete.
    End,
    /// The Trickles connection failed, or timed out; with the status to answer if no
    /// byte of the response has been relayed yet.
    Failed {
        /// 502, 503 or 504; only sent before any response byte.
        status: Gateway,
        /// Why, for the body and the log.
        why: String,
    },
}

/// The proxy's own answers when the server does not give one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gateway {
    /// 502: the Trickles connection failed (the server reset it).
    BadGateway,
    /// 503: the link could not open a connection (no local port).
    Unavailable,
    /// 504: the server sent nothing in time.
    Timeout,
}

impl Gateway {
    /// The status code and reason phrase.
    pub fn status(self) -> (u16, &'static str) {
        match self {
            Gateway::BadGateway => (502, "Bad Gateway"),
            Gateway::Unavailable => (503, "Service Unavailable"),
            Gateway::Timeout => (504, "Gateway Timeout"),
        }
    }

    /// The whole response: head (closing the connection) and a one-line body saying
    /// `why`.
    pub fn response(self, why: &str) -> Vec<u8> {
        let (code, reason) = self.status();
        let body = format!("{code} {reason}: {why}\n");
        format!(
            "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

/// A connection task's request to the link task.
#[derive(Debug)]
struct Open {
    head: Vec<u8>,
    events: mpsc::UnboundedSender<Event>,
}

/// What `trickles-proxy` does once its arguments are parsed and tracing is set up: binds
/// the TCP listener and the link ([`Args::link_config`]), prints `ready tcp=IP:PORT` on
/// stdout, serves until SIGINT or SIGTERM ([`run`]), then logs the counters.
///
/// # Errors
///
/// An address that cannot be bound, bad link options, no signal handlers.
pub async fn main(args: &Args) -> anyhow::Result<()> {
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    let link = Link::bind(args.link_config()?).await?;
    let timeouts = Timeouts {
        connect: args.connect_timeout,
        idle: args.idle_timeout,
    };
    let (trigger, shutdown) = Shutdown::new();
    let _signals = netio::shutdown::on_signals(trigger)?;
    println!("ready tcp={}", listener.local_addr()?);
    let stats = Arc::new(ProxyStats::default());
    run(listener, link, timeouts, shutdown, stats.clone()).await?;
    // The final counters, as one line.
    tracing::info!("stopped: {stats}");
    Ok(())
}

/// Serves TCP clients from `listener` over `link` until `shutdown`, giving up on
/// requests as `timeouts` say.
pub async fn run(
    listener: TcpListener,
    link: Link,
    timeouts: Timeouts,
    shutdown: Shutdown,
    stats: Arc<ProxyStats>,
) -> anyhow::Result<()> {
    let (opens, commands) = mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    let relay = tokio::spawn(link_task(
        link,
        commands,
        timeouts,
        shutdown.clone(),
        stats.clone(),
    ));
    let mut sd = shutdown.clone();
    loop {
        tokio::select! {
            () = sd.wait() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                stats.tcp_connections.fetch_add(1, Ordering::Relaxed);
                let (opens, stats, mut sd) = (opens.clone(), stats.clone(), shutdown.clone());
                tasks.spawn(async move {
                    tokio::select! {
                        () = sd.wait() => {}
                        r = serve_tcp(stream, opens, &stats) => {
                            if let Err(e) = r {
                                tracing::debug!(%peer, error = %e, "client connection ended");
                            }
                        }
                    }
                });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(opens);
    while tasks.join_next().await.is_some() {}
    relay.await.context("the link task panicked")?
}

/// A relayed request: where its events go and the times its deadline counts from.
#[derive(Debug)]
struct Conn {
    events: mpsc::UnboundedSender<Event>,
    opened: StdInstant,
    /// When the last byte of its response came (`None`: none yet).
    last: Option<StdInstant>,
}

impl Conn {
    /// When it times out if nothing more comes.
    fn due(&self, t: &Timeouts) -> StdInstant {
        match self.last {
            None => self.opened + t.connect,
            Some(last) => last + t.idle,
        }
    }
}

/// The servers as the errors name them: the replicas' UDP addresses, or with a first hop
/// the inner server address and the hop.
fn servers_text(link: &Link) -> String {
    let replicas = link.replicas();
    match replicas.first() {
        Some(first) if first.ip() != link.server() => format!("{} via {first}", link.server()),
        _ => replicas
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The task owning the link: opens a Trickles connection per request and relays each
/// one's output stream to its connection task.
async fn link_task(
    mut link: Link,
    mut commands: mpsc::UnboundedReceiver<Open>,
    timeouts: Timeouts,
    mut shutdown: Shutdown,
    stats: Arc<ProxyStats>,
) -> anyhow::Result<()> {
    let mut conns: BTreeMap<ConnId, Conn> = BTreeMap::new();
    let servers = servers_text(&link);
    loop {
        let wake = conns.values().map(|c| c.due(&timeouts)).min();
        let deadline = async move {
            match wake {
                Some(w) => tokio::time::sleep_until(w.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.wait() => break,
            command = commands.recv() => {
                let Some(Open { head, events }) = command else { break };
                match link.open(&head) {
                    Ok(id) => {
                        stats.requests.fetch_add(1, Ordering::Relaxed);
                        let opened = StdInstant::now();
                        conns.insert(id, Conn { events, opened, last: None });
                    }
                    Err(e) => {
                        stats.failed.fetch_add(1, Ordering::Relaxed);
                        let _ = events.send(Event::Failed {
                            status: Gateway::Unavailable,
                            why: format!("cannot open a connection: {e}"),
                        });
                    }
                }
            }
            () = link.drive() => {}
            () = deadline => {}
        }
        relay(&mut link, &mut conns, &timeouts, &servers, &stats);
    }
    let s = link.stats();
    tracing::info!(
        sent = s.total_sent(),
        received = s.total_received(),
        failovers = s.failovers,
        "link closed"
    );
    Ok(())
}

/// Largest message of body bytes handed to a TCP connection's task.
const RELAY_PIECE: usize = 64 << 10;

/// Hands every connection's new output to its task; closes finished, failed, timed-out
/// (`timeouts`; `servers` names them) and abandoned connections.
fn relay(
    link: &mut Link,
    conns: &mut BTreeMap<ConnId, Conn>,
    timeouts: &Timeouts,
    servers: &str,
    stats: &ProxyStats,
) {
    let now = StdInstant::now();
    let mut finished = Vec::new();
    for (&id, conn) in conns.iter_mut() {
        let events = &conn.events;
        if events.is_closed() {
            finished.push(id);
            continue;
        }
        // Everything waiting, copied once (out of the connection's buffer, into the
        // messages its task writes to the socket), in pieces small enough for the
        // allocator's heap: a message of a few hundred KiB is a fresh mmap, page faults
        // and all.
        let waiting = link.demux().peek(id);
        let n = waiting.len();
        if n > 0 {
            stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
            for piece in waiting.chunks(RELAY_PIECE) {
                let _ = events.send(Event::Data(piece.to_vec()));
            }
            link.demux_mut().consume(id, n);
            conn.last = Some(now);
        }
        match link.demux().get(id) {
            Some(c) if c.is_reset() => {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                let _ = events.send(Event::Failed {
                    status: Gateway::BadGateway,
                    why: format!("{servers} reset the connection"),
                });
                finished.push(id);
            }
            Some(c) if c.is_complete() && c.readable() == 0 => {
                tracing::debug!(conn = %id, stats = ?c.stats(), srtt_us = ?c.srtt_us(), "done");
                let _ = events.send(Event::End);
                finished.push(id);
            }
            Some(_) if now >= conn.due(timeouts) => {
                stats.timed_out.fetch_add(1, Ordering::Relaxed);
                let why = match conn.last {
                    None => format!(
                        "no answer from {servers} within {}",
                        secs_text(timeouts.connect)
                    ),
                    Some(_) => format!("no data from {servers} for {}", secs_text(timeouts.idle)),
                };
                tracing::warn!(conn = %id, "{why}");
                let _ = events.send(Event::Failed {
                    status: Gateway::Timeout,
                    why,
                });
                finished.push(id);
            }
            Some(_) => {}
            None => finished.push(id),
        }
    }
    if finished.is_empty() {
        return;
    }
    // Let the finished connections' FINs leave before they go.
    link.send_pending();
    for id in finished {
        conns.remove(&id);
        link.demux_mut().close(id);
    }
}

/// Serves one TCP client: request after request until it closes or asks to.
async fn serve_tcp(
    mut stream: TcpStream,
    opens: mpsc::UnboundedSender<Open>,
    stats: &ProxyStats,
) -> anyhow::Result<()> {
    stream.set_nodelay(true).ok();
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        let (head_len, close) = loop {
            match parse_request(&buf) {
                Ok((req, len)) => break (len, req.close),
                Err(HttpError::Incomplete) => {
                    if stream.read_buf(&mut buf).await? == 0 {
                        return Ok(());
                    }
                }
                Err(e) => {
                    stats.refused.fetch_add(1, Ordering::Relaxed);
                    let answer = Answer::error(e.status());
                    let mut out = Vec::new();
                    write_head(&answer, None, &mut out);
                    out.extend_from_slice(e.status().error_body());
                    stream.write_all(&out).await?;
                    stream.shutdown().await?;
                    return Ok(());
                }
            }
        };
        let head: Vec<u8> = buf.drain(..head_len).collect();
        let (events, mut arrivals) = mpsc::unbounded_channel();
        opens
            .send(Open { head, events })
            .map_err(|_| anyhow::anyhow!("the proxy is shutting down"))?;
        // Whether any byte of the response reached the client: after that, a failure
        // can only close the connection.
        let mut relayed = false;
        loop {
            match arrivals.recv().await {
                Some(Event::Data(bytes)) => {
                    relayed = true;
                    stream.write_all(&bytes).await?;
                }
                Some(Event::End) => break,
                Some(Event::Failed { status, why }) if !relayed => {
                    stream.write_all(&status.response(&why)).await?;
                    stream.shutdown().await?;
                    return Ok(());
                }
                Some(Event::Failed { why, .. }) => anyhow::bail!("{why}"),
                None => anyhow::bail!("the proxy is shutting down"),
            }
        }
        if close {
            stream.shutdown().await?;
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_final_counters_are_one_line() {
        let s = super::ProxyStats::default();
        s.requests.store(30, std::sync::atomic::Ordering::Relaxed);
        s.bytes.store(123_456, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            s.to_string(),
            "0 connections, 30 requests (0 refused, 0 failed, 0 timed out), 123456 bytes"
        );
    }

    use super::*;

    #[test]
    fn gateway_answers() {
        let r = String::from_utf8(Gateway::Timeout.response("no answer from a within 5 s"))
            .unwrap_or_default();
        let body = "504 Gateway Timeout: no answer from a within 5 s\n";
        assert_eq!(
            r,
            format!(
                "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        );
        assert_eq!(Gateway::BadGateway.status(), (502, "Bad Gateway"));
        assert_eq!(Gateway::Unavailable.status().0, 503);
    }
}
