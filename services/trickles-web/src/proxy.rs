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
//! Relayed data waits in unbounded channels: a TCP client that reads slowly costs memory
//! (at most the bodies it asked for), never the other clients' progress.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use netio::shutdown::Shutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use trickles::app::http::{Answer, HttpError, parse_request, write_head};
use trickles::client::ConnId;

use crate::udp::{DEFAULT_FAILOVER, Hop, Link, LinkConfig, Mode, ServerAddr, parse_emulation};

/// A local HTTP proxy relaying GETs to a Trickles web server (trickles-web).
#[derive(clap::Parser, Debug, Clone)]
#[command(version)]
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
}

/// What the link task tells a connection task about its request.
#[derive(Debug)]
enum Event {
    /// More of the server's output stream.
    Data(Vec<u8>),
    /// The output stream is complete.
    End,
    /// The Trickles connection failed.
    Failed(String),
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
    let (trigger, shutdown) = Shutdown::new();
    let _signals = netio::shutdown::on_signals(trigger)?;
    println!("ready tcp={}", listener.local_addr()?);
    let stats = Arc::new(ProxyStats::default());
    run(listener, link, shutdown, stats.clone()).await?;
    tracing::info!(
        connections = stats.tcp_connections.load(Ordering::Relaxed),
        requests = stats.requests.load(Ordering::Relaxed),
        bytes = stats.bytes.load(Ordering::Relaxed),
        "bye"
    );
    Ok(())
}

/// Serves TCP clients from `listener` over `link` until `shutdown`.
pub async fn run(
    listener: TcpListener,
    link: Link,
    shutdown: Shutdown,
    stats: Arc<ProxyStats>,
) -> anyhow::Result<()> {
    let (opens, commands) = mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    let relay = tokio::spawn(link_task(link, commands, shutdown.clone(), stats.clone()));
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

/// The task owning the link: opens a Trickles connection per request and relays each
/// one's output stream to its connection task.
async fn link_task(
    mut link: Link,
    mut commands: mpsc::UnboundedReceiver<Open>,
    mut shutdown: Shutdown,
    stats: Arc<ProxyStats>,
) -> anyhow::Result<()> {
    let mut conns: BTreeMap<ConnId, mpsc::UnboundedSender<Event>> = BTreeMap::new();
    loop {
        tokio::select! {
            () = shutdown.wait() => break,
            command = commands.recv() => {
                let Some(Open { head, events }) = command else { break };
                match link.open(&head) {
                    Ok(id) => {
                        stats.requests.fetch_add(1, Ordering::Relaxed);
                        conns.insert(id, events);
                    }
                    Err(e) => {
                        stats.failed.fetch_add(1, Ordering::Relaxed);
                        let _ = events.send(Event::Failed(format!("cannot open a connection: {e}")));
                    }
                }
            }
            () = link.drive() => {}
        }
        relay(&mut link, &mut conns, &stats);
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

/// Hands every connection's new output to its task; closes finished, failed and
/// abandoned connections.
fn relay(
    link: &mut Link,
    conns: &mut BTreeMap<ConnId, mpsc::UnboundedSender<Event>>,
    stats: &ProxyStats,
) {
    let mut finished = Vec::new();
    for (&id, events) in conns.iter() {
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
        }
        match link.demux().get(id) {
            Some(c) if c.is_reset() => {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                let _ = events.send(Event::Failed("the server reset the connection".into()));
                finished.push(id);
            }
            Some(c) if c.is_complete() && c.readable() == 0 => {
                tracing::debug!(conn = %id, stats = ?c.stats(), srtt_us = ?c.srtt_us(), "done");
                let _ = events.send(Event::End);
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
        loop {
            match arrivals.recv().await {
                Some(Event::Data(bytes)) => stream.write_all(&bytes).await?,
                Some(Event::End) => break,
                Some(Event::Failed(why)) => anyhow::bail!("{why}"),
                None => anyhow::bail!("the proxy is shutting down"),
            }
        }
        if close {
            stream.shutdown().await?;
            return Ok(());
        }
    }
}
