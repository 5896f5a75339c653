//! `trickles-web`: one task owns a [`Service`] running [`HttpApp`] over the served
//! directory, and `select!`s over its one link (IP-in-UDP, or a TUN device), the core's
//! deadline (the end of the key period), the capture's flush, metrics scrapes and
//! shutdown.
//!
//! ```text
//!  Links::recv ─► Batch::datagrams (source, packet) ─► Service::handle_packet
//!  Service::serve_parts ─► (IP header, segment, source) ─► Links::send_parts ─► flush
//! ```
//!
//! The link is `netio`'s ([`Links`], spelled as a [`LinkSpec`]): one batched receive
//! (recvmmsg with GRO, or a TUN read split by its offload) per batch, the answers to one
//! batch queued and flushed together (GSO runs of equal-size responses to one client, or
//! coalesced TUN writes), counters with drops by reason, and the capture.
//!
//! * **UDP** (`--listen udp:ADDR`, no root): every datagram is one whole IP packet; each
//!   event remembers the datagram's source ([`Service`]'s `P`), and its responses go back
//!   there. Nothing else is kept per client.
//!   The inner address served is the listen IP, or `--address` ([`Options::address`]):
//!   behind a waist router the datagrams come from the router's link socket and carry
//!   the network's addresses (`10.1.0.10` to `10.2.0.80`); the answers still go back to
//!   each datagram's source. Replicas given the same address and key file are one
//!   anycast service.
//! * **TUN** (`--listen tun:NAME`, root): the paper's deployment; Trickles packets are
//!   real IP packets the kernel routes to and from the device (with offload).
//!
//! The clock is read in one place, [`Web`]'s [`Clock::wall`]: the core sees wall-clock
//! microseconds since the Unix epoch (read once at start, advancing monotonically), so
//! continuations issued by one process are fresh for another (a replica, a restart) on a
//! machine with the same time. Keys come from [`Keys`]; the core rotates them
//! ([`trickles::crypto::Rotation`]): [`Service::poll_timeout`] is the end of the key
//! period, the loop sleeps until it and calls [`Service::handle_timeout`], in step with
//! every other process sharing the key file. The same clock dates the answers (`Date`,
//! sealed with each answer: [`HttpApp::set_wall_clock`]).
//!
//! On SIGHUP the options are read again and the root, the keys, the rotation interval
//! and the address served are applied while it runs ([`Reload`]).
//!
//! With an access log ([`AccessLog`], `--access-log`), the records the core makes of each
//! request ([`HttpApp::poll_access`]) are written after each batch is answered.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant as StdInstant};

use netio::clock::Clock;
use netio::link::{Batch, LinkOptions, LinkSpec, Links};
use netio::metrics::{Sample, ScrapeRequests};
use trickles::Instant;
use trickles::app::http::HttpApp;
use trickles::app::{Service, ServiceStats};
use trickles::conn::Addr;
use trickles::crypto::Rotation;
use trickles::server::{Server, ServerConfig};

use crate::access::AccessLog;
use crate::keys::Keys;
use crate::store::FileStore;
use crate::tcp::TcpStats;

mod reload;
pub use reload::Reload;

/// Batches taken from the link in one turn (each answered and flushed before the next)
/// before the timers, scrapes and shutdown get their look.
const TURN: usize = 16;

/// Bits of each of the server's two replay filters (the paper's 2^21 suit its 1 Gb/s).
/// A false positive refuses an honest request, which the client then recovers from as a
/// loss. At 600 MB/s a second holds about 225,000 requests (450,000 in the two filters):
/// with 2^21 bits about one request in seven was refused (measured: 18, 49, 102 refusals
/// in three successive 100 MB transfers, each costing a recovery); with 2^24 (2 MiB per
/// filter, fixed) the rate is about 1e-5. `trickles_refused_total{reason="replay"}` counts
/// them.
pub const REPLAY_BITS: usize = 1 << 24;

/// The link's name: its capture is `DIR/trickles-web.pcap` ([`Links::capture`] names it
/// `CAPTURE_PREFIX-LINK.pcap`), its metrics are labelled `link="web"`.
pub const LINK: &str = "web";

/// What [`Links::capture`] puts in front of the link's name.
pub const CAPTURE_PREFIX: &str = "trickles";

/// The one interface of the server's [`Links`].
const IFACE: usize = 0;

/// Reads `--listen`: `udp:ADDR` or `tun:NAME[,CIDR…]` ([`LinkSpec`]); a server answers
/// many peers, so `udp:LOCAL=PEER` is refused.
///
/// # Errors
///
/// What is wrong with `s`.
pub fn parse_listen(s: &str) -> Result<LinkSpec, String> {
    let spec: LinkSpec = s.parse()?;
    serves_many(&spec)?;
    Ok(spec)
}

/// Refuses a link to one peer: a server answers many.
fn serves_many(spec: &LinkSpec) -> Result<(), String> {
    match spec {
        LinkSpec::Udp {
            local,
            peer: Some(_),
        } => Err(format!(
            "`{spec}`: a server answers many peers, so its link has no =PEER: udp:{local}"
        )),
        _ => Ok(()),
    }
}

/// The address the server answers as and the MSS of its answers, for a server on `listen`
/// (as `address`, over UDP) whose path to clients carries `mtu`-byte packets: what
/// [`Web::open`] needs, checked before anything is bound (`trickles-web --check` calls it
/// too).
///
/// # Errors
///
/// A link to one peer, an `address` with a TUN link, an MTU below 68 or one that leaves
/// no room for data.
pub fn path(listen: &LinkSpec, address: Option<IpAddr>, mtu: u16) -> Result<(Addr, u16), String> {
    serves_many(listen)?;
    let (server_addr, inner_mtu) = match listen {
        LinkSpec::Udp { local, .. } => {
            let overhead = if local.is_ipv4() {
                trickles::ip::UDP_TUNNEL_OVERHEAD_V4
            } else {
                trickles::ip::UDP_TUNNEL_OVERHEAD_V6
            };
            (
                Addr::from(address.unwrap_or(local.ip())),
                mtu.saturating_sub(overhead),
            )
        }
        LinkSpec::Tun { addresses, .. } => {
            if let Some(a) = address {
                return Err(format!(
                    "--address {a} is for udp: links (a TUN device serves the addresses \
                     of tun:NAME,CIDR)"
                ));
            }
            let addr = addresses
                .first()
                .map_or(Addr::V4([0; 4]), |(a, _)| Addr::from(*a));
            (addr, mtu)
        }
    };
    if mtu < 68 {
        return Err(format!("MTU {mtu} not in 68..=65535"));
    }
    match trickles::ip::mss_for_mtu(inner_mtu, &server_addr) {
        0 => Err(format!("MTU {mtu} leaves no room for data")),
        mss => Ok((server_addr, mss)),
    }
}

/// Everything the server is started with.
#[derive(Clone, Debug)]
pub struct Options {
    /// The directory served.
    pub root: PathBuf,
    /// The key file (created when missing).
    pub keys: PathBuf,
    /// The Trickles link: `udp:ADDR` or `tun:NAME[,CIDR…]` ([`parse_listen`]).
    pub listen: LinkSpec,
    /// Also serve over plain TCP here.
    pub tcp: Option<SocketAddr>,
    /// Serve Prometheus metrics here.
    pub metrics: Option<SocketAddr>,
    /// Capture the Trickles packets into DIR/trickles-web.pcap.
    pub pcap: Option<PathBuf>,
    /// Cap that capture: a ring of at most this many bytes (`None`: unbounded).
    pub pcap_ring: Option<netio::pcap::Ring>,
    /// Key rotation interval.
    pub rotate: Duration,
    /// Most unanswered events held.
    pub queue: usize,
    /// The link's MTU for the Trickles packets (the MSS follows from it; over UDP the
    /// tunnel overhead is taken off first).
    pub mtu: u16,
    /// UDP only: the inner (IP-level) address served. `None`: the listen IP names the
    /// server (its MSS), and packets to any inner destination are answered as that
    /// destination, as before. `Some`: packets to any other destination are refused and
    /// counted (`trickles_refused_total{reason="other_address"}`).
    pub address: Option<IpAddr>,
    /// Write an access log (Common Log Format) here, `-` for stderr: the requests of
    /// both transports.
    pub access_log: Option<PathBuf>,
}

/// What the server says when it has bound everything: the line `ready …` on stdout.
#[derive(Clone, Debug, Default)]
pub struct Bound {
    /// The UDP address, if listening on UDP.
    pub udp: Option<SocketAddr>,
    /// The TCP fallback's address.
    pub tcp: Option<SocketAddr>,
    /// The metrics endpoint's address.
    pub metrics: Option<SocketAddr>,
    /// The inner address served, when given (`--address`).
    pub address: Option<IpAddr>,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ready")?;
        for (k, v) in [
            ("udp", self.udp),
            ("tcp", self.tcp),
            ("metrics", self.metrics),
        ] {
            if let Some(v) = v {
                write!(f, " {k}={v}")?;
            }
        }
        if let Some(a) = self.address {
            write!(f, " address={a}")?;
        }
        Ok(())
    }
}

/// The running server: its core and its link.
pub struct Web {
    service: Service<HttpApp<FileStore>, Option<SocketAddr>>,
    /// The one clock the server reads: wall-clock microseconds, shared by replicas.
    clock: Clock,
    /// The one link ([`IFACE`]).
    links: Links,
    /// Its receive buffers.
    batch: Batch,
    /// A TUN link: the datagrams' sources mean nothing, answers go to the kernel.
    tun: bool,
    tcp: Arc<TcpStats>,
    /// The options it runs with (a reload compares the new ones with them).
    opts: Options,
    /// The keys it runs with.
    keys: Keys,
    /// Where reloads come from and how the options are read again ([`Web::reload_with`]).
    reload: Option<Reload>,
    /// Where the core's access records go, if anywhere.
    log: Option<AccessLog>,
}

impl Web {
    /// Opens the store, the keys and the link (and its capture); `tcp` are the fallback's
    /// counters, `log` the access log (opened from [`Options::access_log`], shared with
    /// the fallback). Returns the server and its UDP address, if it listens on UDP.
    ///
    /// # Errors
    ///
    /// A bad root, an unreadable key file, a `udp:LOCAL=PEER` listen spec, a link that
    /// cannot be opened, a capture that cannot be created.
    pub async fn open(
        opts: &Options,
        store: FileStore,
        tcp: Arc<TcpStats>,
        log: Option<AccessLog>,
    ) -> anyhow::Result<(Web, Option<SocketAddr>)> {
        let keys = Keys::load_or_create(&opts.keys, opts.rotate)?;
        let clock = Clock::wall();
        let rotation = keys.rotation(clock.now());
        let (_, mss) = path(&opts.listen, opts.address, opts.mtu).map_err(anyhow::Error::msg)?;
        let tun = matches!(opts.listen, LinkSpec::Tun { .. });
        let mut links = Links::new();
        let options = LinkOptions {
            mtu: usize::from(opts.mtu),
            ..LinkOptions::default()
        };
        links
            .add(LINK, &opts.listen, &options, StdInstant::now())
            .await
            .map_err(|e| anyhow::anyhow!("--listen {}: {e}", opts.listen))?;
        let udp = links.get(IFACE).and_then(netio::link::Link::local_addr);
        let mut cfg = ServerConfig::new(rotation.key_config());
        cfg.mss = mss;
        // Delayed acknowledgments are granted to every client that asks (the core's
        // default; ours ask): half the requests, MAC checks and replay-filter probes.
        cfg.replay.num_bits = REPLAY_BITS;
        let mut app = HttpApp::new(&keys.ucont_key(), store);
        // The core's `now` is wall-clock time (`Clock::wall`): answers are dated.
        app.set_wall_clock(true);
        app.log_access(log.is_some());
        let mut service = Service::new(Server::new(cfg), app, opts.queue);
        service.serve_only(opts.address.map(Addr::from));
        let period = rotation.period();
        service.rotate_with(Some(rotation));
        if let Some(dir) = &opts.pcap {
            std::fs::create_dir_all(dir)?;
            links.capture_with(dir, CAPTURE_PREFIX, opts.pcap_ring)?;
        }
        tracing::info!(root = %opts.root.display(), mss = cfg.mss, period, address = ?opts.address, link = %opts.listen, "serving");
        // All fixed memory resident at once (replay filters, receive slots): what the
        // server holds does not grow with its clients, and its footprint shows it.
        let mut batch = Batch::new();
        batch.make_resident();
        Ok((
            Web {
                service,
                clock,
                links,
                batch,
                tun,
                tcp,
                opts: opts.clone(),
                keys,
                reload: None,
                log,
            },
            udp,
        ))
    }

    /// Answers the batch just received: hands each packet to the core (with its source,
    /// over UDP), queues everything the core answers for its destination and flushes the
    /// link once (over UDP each run of equal-size responses to one client leaves in one
    /// GSO send).
    fn answer(&mut self) {
        let (t, now) = self.now();
        let Web {
            service,
            links,
            batch,
            tun,
            log,
            ..
        } = self;
        for (src, packet) in batch.datagrams() {
            let peer = (!*tun).then_some(src);
            if let Err(e) = service.handle_packet(now, packet, peer) {
                tracing::trace!(?peer, "refused: {e}");
            }
        }
        // Each response as IP header and segment, gathered straight into the send queue.
        service.serve_parts(&mut |header, segment, peer| {
            links.send_parts(IFACE, peer, &[header, segment], t);
        });
        links.flush();
        if let Some(log) = log {
            while let Some(record) = service.app_mut().poll_access() {
                log.write(&record);
            }
        }
    }

    /// One turn after [`Links::recv`] filled the batch: answers it, then up to [`TURN`]
    /// − 1 more batches the link has ready, each answered and flushed before the next.
    fn turn(&mut self) {
        self.answer();
        for _ in 1..TURN {
            if self.links.try_recv_batch(IFACE, &mut self.batch).is_err() {
                // Nothing waits (`WouldBlock`), or an error the link counted.
                break;
            }
            self.answer();
        }
    }

    /// The time now, read once: the monotonic instant the link takes, and the same
    /// reading as the core's wall-clock [`Instant`].
    fn now(&self) -> (StdInstant, Instant) {
        self.clock.read()
    }

    /// The core's deadline (the end of the key period) as the instant a timer sleeps
    /// until.
    fn deadline(&self) -> Option<StdInstant> {
        self.service.poll_timeout().map(|t| self.clock.deadline(t))
    }

    /// Runs the core's timer: the keys move to the period now falls in (the core
    /// decides how: [`Service::handle_timeout`]).
    fn timeout(&mut self) {
        let (_, now) = self.now();
        let before = self.service.stats().key_rotations;
        self.service.handle_timeout(now);
        if self.service.stats().key_rotations != before {
            let period = self.service.rotation().map_or(0, Rotation::period);
            tracing::info!(period, "rotated the MAC key");
        }
    }

    /// Serves until `shutdown` completes, answering scrapes from `scrapes`; flushes the
    /// capture every second and at the end.
    ///
    /// # Errors
    ///
    /// None yet: link errors are counted, not fatal.
    pub async fn run(
        &mut self,
        shutdown: impl Future<Output = ()>,
        mut scrapes: Option<ScrapeRequests>,
    ) -> anyhow::Result<ServiceStats> {
        tokio::pin!(shutdown);
        let capturing = self.links.captures().next().is_some();
        let mut flush_captures = tokio::time::interval(Duration::from_secs(1));
        flush_captures.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let timer = tokio::time::sleep_until(tokio::time::Instant::now());
        tokio::pin!(timer);
        let mut armed = None;
        loop {
            let deadline = self.deadline();
            if deadline != armed {
                if let Some(d) = deadline {
                    timer.as_mut().reset(d.into());
                }
                armed = deadline;
            }
            tokio::select! {
                () = &mut shutdown => break,
                _ = self.links.recv(&mut self.batch) => self.turn(),
                () = timer.as_mut(), if deadline.is_some() => {
                    // Fired: re-armed at the next deadline, whatever it is.
                    armed = None;
                    self.timeout();
                }
                _ = flush_captures.tick(), if capturing => self.links.flush_captures(),
                Some(r) = async {
                    match scrapes.as_mut() {
                        Some(s) => s.next().await,
                        None => std::future::pending().await,
                    }
                } => r.respond(self.snapshot()),
                () = reload::requested(&mut self.reload) => self.reload(),
            }
        }
        self.links.flush_captures();
        Ok(self.service.stats())
    }

    /// Packets refused for naming an inner destination other than [`Options::address`].
    pub fn other_address(&self) -> u64 {
        self.service.stats().other_address
    }

    /// Every counter as metrics samples.
    pub fn snapshot(&self) -> Vec<Sample> {
        let s = self.service.stats();
        let h = self.service.app().stats();
        let r = s.rejected;
        let send_errors: u64 = self
            .links
            .iter()
            .map(|l| {
                let c = l.counters();
                c.tx_full + c.tx_errors + c.refused
            })
            .sum();
        let mut out = vec![
            Sample::counter(
                "trickles_packets",
                "Packets received on the Trickles link",
                s.packets as f64,
            ),
            Sample::counter(
                "trickles_events",
                "Requests accepted by the transport (events queued)",
                s.events as f64,
            ),
            Sample::counter(
                "trickles_responses",
                "Response packets sent",
                s.responses as f64,
            ),
            Sample::counter(
                "trickles_response_bytes",
                "Bytes of response packets sent",
                s.response_bytes as f64,
            ),
            Sample::counter(
                "trickles_queue_full",
                "Packets dropped unexamined: event queue full",
                s.queue_full as f64,
            ),
            Sample::counter(
                "trickles_send_errors",
                "Response packets the link could not send (socket full, refused, errors)",
                send_errors as f64,
            ),
            Sample::counter(
                "trickles_key_rotations",
                "MAC key rotations",
                s.key_rotations as f64,
            ),
            Sample::gauge(
                "trickles_memory_bytes",
                "Bytes the server core holds (independent of connections)",
                self.service.memory_bytes() as f64,
            ),
            Sample::gauge(
                "trickles_queued_events",
                "Events waiting for the application",
                self.service.queued() as f64,
            ),
            Sample::counter(
                "trickles_http_opens",
                "Requests (SYNs) answered over Trickles",
                h.opens as f64,
            ),
            Sample::counter(
                "trickles_http_resumptions",
                "Requests resumed from a user continuation",
                h.requests as f64,
            ),
            Sample::counter(
                "trickles_http_bad_ucont",
                "Requests whose user continuation did not verify",
                h.bad_ucont as f64,
            ),
            Sample::counter(
                "trickles_http_stale",
                "Connections refused: the object changed",
                h.stale as f64,
            ),
            Sample::counter(
                "trickles_http_body_bytes",
                "Body bytes sent over Trickles",
                h.bytes_body as f64,
            ),
            Sample::counter(
                "trickles_http_responses",
                "Answers by status class",
                h.status_2xx as f64,
            )
            .with_label("class", "2xx"),
            Sample::counter(
                "trickles_http_responses",
                "Answers by status class",
                h.status_3xx as f64,
            )
            .with_label("class", "3xx"),
            Sample::counter(
                "trickles_http_responses",
                "Answers by status class",
                h.status_4xx as f64,
            )
            .with_label("class", "4xx"),
            Sample::counter(
                "trickles_tcp_connections",
                "Connections accepted by the TCP fallback",
                self.tcp.connections.load(Ordering::Relaxed) as f64,
            ),
            Sample::gauge(
                "trickles_tcp_open_connections",
                "TCP fallback connections open now",
                self.tcp.open.load(Ordering::Relaxed) as f64,
            ),
            Sample::counter(
                "trickles_tcp_requests",
                "Requests answered by the TCP fallback",
                self.tcp.requests.load(Ordering::Relaxed) as f64,
            ),
            Sample::counter(
                "trickles_tcp_not_modified",
                "Requests the TCP fallback answered 304 (the client's copy is current)",
                self.tcp.not_modified.load(Ordering::Relaxed) as f64,
            ),
            Sample::counter(
                "trickles_tcp_body_bytes",
                "Body bytes sent by the TCP fallback",
                self.tcp.body_bytes.load(Ordering::Relaxed) as f64,
            ),
        ];
        let outside = [
            ("bad_ip", s.bad_ip),
            ("not_tcp", s.not_tcp),
            ("fragment", s.fragments),
        ];
        let by_core = r.by_reason();
        let after = [("other_address", s.other_address)];
        for (reason, v) in outside.into_iter().chain(by_core).chain(after) {
            out.push(
                Sample::counter("trickles_refused", "Packets refused, by reason", v as f64)
                    .with_label("reason", reason),
            );
        }
        for link in self.links.iter() {
            out.extend(link.samples("trickles"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_specs() {
        assert_eq!(
            parse_listen("udp:127.0.0.1:7700").unwrap(),
            LinkSpec::Udp {
                local: "127.0.0.1:7700".parse().unwrap(),
                peer: None
            }
        );
        assert!(matches!(
            parse_listen("tun:tw0,10.9.0.1/24").unwrap(),
            LinkSpec::Tun { device, addresses } if device == "tw0" && addresses.len() == 1
        ));
        let e = parse_listen("udp:127.0.0.1:1=127.0.0.1:2").unwrap_err();
        assert!(
            e.contains("many peers") && e.contains("udp:127.0.0.1:1"),
            "{e}"
        );
        assert!(parse_listen("127.0.0.1:1").is_err());
    }
}
