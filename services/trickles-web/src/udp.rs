//! The client side's link: one UDP link to one or more replicas of a Trickles server,
//! carrying one whole IP packet per datagram, and the [`Demux`] of the client's
//! connections behind it.
//!
//! ```text
//!   Demux::poll_transmit ─► [emulated loss/delay] ─► replica (failover or spray)
//!       ─► Links::send_to ─► Links::flush (GSO runs, sendmmsg)
//!   Links::recv (recvmmsg + GRO) ─► Batch::datagrams ─► count per replica
//!       ─► [emulated loss/delay] ─► Demux::handle_packet
//!   Clock::monotonic (read once per step) ─► Demux::poll_timeout / handle_timeout
//! ```
//!
//! The datagrams go through `netio`'s link layer ([`Links`], one UDP link to many peers,
//! `udp:LOCAL`); which replica each one goes to, and failing over, are this client's
//! policy and live here.
//!
//! Every connection names the **first** replica's IP address as its server, whichever
//! replica a packet goes to: the continuations' MACs bind the inner addresses, and the
//! replicas share keys, so any replica can carry on a transfer another one started. The
//! inner source address is the socket's local IP address. Both can be set apart from the
//! UDP addresses ([`LinkConfig::server`], [`LinkConfig::source`]), which is how a client
//! sits in a routed network: its one "replica" is the first hop, a waist router's link
//! socket ([`Hop::via`]), and the inner addresses are the network's (`10.1.0.10` to
//! `10.2.0.80`); the router forwards each IP packet by its inner destination, and the
//! routers, not the client, pick among replicas that share one (anycast) address. Which
//! replica gets each packet:
//!
//! * [`Mode::Failover`]: all go to the current replica; when nothing has arrived for
//!   [`LinkConfig::failover`] since a datagram was sent, while some connection is
//!   unfinished, the next replica becomes current (the clients' retransmit timers then
//!   resend their continuations there). Silence is counted from the first datagram sent
//!   after the last one received, so a client whose retransmit timer has backed off
//!   beyond the failover time does not skip past a live replica before asking it.
//! * [`Mode::Spray`]: round-robin, packet by packet.
//!
//! Optional user-space emulation ([`netio::emulate::Emulator`], netsim's link model)
//! applies the same loss, delay and jitter to what is sent and to what is received.
//!
//! [`Link::drive`] is the driver's one step; it is cancel-safe, so a task owning the link
//! can `select!` it against its own commands:
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! use trickles_web::udp::{Link, LinkConfig};
//! let mut link = Link::bind(LinkConfig::new(vec!["127.0.0.1:8000".parse()?])).await?;
//! let id = link.open(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")?;
//! while !link.demux().get(id).is_some_and(|c| c.is_complete()) {
//!     link.drive().await;
//! }
//! # Ok(()) }
//! ```

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::time::{Duration, Instant as StdInstant};

use anyhow::Context as _;
use netio::clock::Clock;
use netio::config::EmulationConfig;
use netio::emulate::Emulator;
use netio::link::{Batch, LinkCounters, LinkOptions, LinkSpec, Links};
use tokio::time::Sleep;
use trickles::Instant;
use trickles::client::{ClientConfig, ConnId, Demux, DemuxError};
use trickles::conn::Addr;
use trickles::ip::{UDP_TUNNEL_OVERHEAD_V4, UDP_TUNNEL_OVERHEAD_V6, mss_for_mtu};

/// The server port every connection names (the inner TCP header's).
pub const SERVER_PORT: u16 = 80;

/// The MTU of the path the datagrams take (Ethernet's).
pub const PATH_MTU: u16 = 1500;

pub use crate::options::{Hop, ServerAddr, Via, parse_emulation};

/// Default silence before failing over.
pub const DEFAULT_FAILOVER: Duration = Duration::from_millis(300);

/// Batched receive calls per [`Link::drive`] at most (each up to 32 slots, a slot possibly a
/// GRO run), so timers and sends keep their turn.
const RECV_BATCH: usize = 16;

/// The one interface of a client's [`Links`].
const IFACE: usize = 0;

/// Which replica each packet goes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// All to the current replica; the next one after [`LinkConfig::failover`] of silence.
    #[default]
    Failover,
    /// Round-robin over all replicas, packet by packet.
    Spray,
}

/// How to build a [`Link`].
#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// The replicas' UDP addresses; the first one's IP is every connection's server
    /// address. At least one.
    pub replicas: Vec<SocketAddr>,
    /// Failover or spraying.
    pub mode: Mode,
    /// Silence after which [`Mode::Failover`] moves to the next replica.
    pub failover: Duration,
    /// Emulated loss, delay and jitter, applied to each direction.
    pub emulation: Option<EmulationConfig>,
    /// The inner server address every connection names (`None`: the first replica's IP).
    /// Set when the replicas are first hops (routers) rather than the server itself.
    pub server: Option<IpAddr>,
    /// The inner source address every connection names (`None`: the socket's local IP).
    /// It must be of the server address's family.
    pub source: Option<IpAddr>,
    /// The local UDP socket's address (`None`: the local IP that reaches the first
    /// replica, any port). A router link's `peer` names it in advance.
    pub bind: Option<SocketAddr>,
    /// How many connections will share the link at once (at least 1): the receive window
    /// ([`ClientConfig::max_in_flight`]) the socket's buffer allows is split among them.
    pub connections: u32,
}

impl LinkConfig {
    /// Failover over `replicas` after [`DEFAULT_FAILOVER`], no emulation, the inner
    /// addresses those of the sockets.
    pub fn new(replicas: Vec<SocketAddr>) -> LinkConfig {
        LinkConfig {
            replicas,
            mode: Mode::Failover,
            failover: DEFAULT_FAILOVER,
            emulation: None,
            server: None,
            source: None,
            bind: None,
            connections: 1,
        }
    }
}

/// A [`Link`]'s counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Datagrams sent to each replica, in [`LinkConfig::replicas`] order.
    pub sent: Vec<u64>,
    /// Datagrams received from each replica.
    pub received: Vec<u64>,
    /// Times [`Mode::Failover`] moved to the next replica.
    pub failovers: u64,
    /// Datagrams from addresses that are no replica (dropped).
    pub strangers: u64,
    /// Packets the demultiplexer refused (late packets of closed connections, forgeries).
    pub refused: u64,
    /// Datagrams the socket refused to send (dropped; the transport recovers).
    pub send_errors: u64,
    /// Datagrams the emulation dropped on the way out.
    pub emulated_lost_out: u64,
    /// Datagrams the emulation dropped on the way in.
    pub emulated_lost_in: u64,
}

impl LinkStats {
    /// Datagrams sent to all replicas.
    pub fn total_sent(&self) -> u64 {
        self.sent.iter().sum()
    }

    /// Datagrams received from all replicas.
    pub fn total_received(&self) -> u64 {
        self.received.iter().sum()
    }
}

/// The client's UDP link and its connections; see the module docs.
pub struct Link {
    /// One UDP link to many peers ([`IFACE`]).
    links: Links,
    /// Receive buffers (recvmmsg slots, each possibly a GRO run).
    batch: Batch,
    demux: Demux,
    server: Addr,
    replicas: Vec<SocketAddr>,
    mode: Mode,
    failover: Duration,
    /// The replica [`Mode::Failover`] sends to.
    current: usize,
    /// The next replica [`Mode::Spray`] sends to.
    next_spray: usize,
    /// The connections' clock (monotonic, from the moment the link was made), read once
    /// per step ([`Link::now`]).
    clock: Clock,
    /// The first datagram sent since the last one received or the last failover: silence
    /// is measured from it.
    awaiting: Option<StdInstant>,
    /// When the last datagram from a replica arrived (`None`: none yet).
    heard: Option<StdInstant>,
    emu_out: Option<Emulator>,
    emu_in: Option<Emulator>,
    sleep: Pin<Box<Sleep>>,
    stats: LinkStats,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("replicas", &self.replicas)
            .field("mode", &self.mode)
            .field("current", &self.current)
            .field("connections", &self.demux.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Most packets in flight to one client link, whatever its socket buffer: 4,096 packets
/// of about 1.4 KB, 5.7 MB, a bandwidth-delay product of 5.7 GB/s at 1 ms. (With the
/// usual 4 MiB buffer the socket allows 2,796: on the veth bench 2,048 held one
/// transfer to 595 MB/s and 2,796 let it reach 685.)
pub const MAX_WINDOW: u32 = 4096;

/// The receive window of each of `connections` connections sharing a socket whose
/// receive buffer is `buffer` bytes as the kernel accounts them (`None`: unknown, then
/// [`MAX_WINDOW`] in all): half of it in [`PATH_MTU`]-sized packets (the kernel counts
/// overhead too), at most [`MAX_WINDOW`], shared out, at least 16 each.
pub fn receive_window(buffer: Option<usize>, connections: u32) -> u32 {
    let fits = buffer.map_or(MAX_WINDOW, |b| {
        u32::try_from(b / 2 / usize::from(PATH_MTU)).unwrap_or(u32::MAX)
    });
    (fits.min(MAX_WINDOW) / connections.max(1)).max(16)
}

/// The connections' settings for server `server`: the MSS that makes each response fit
/// one datagram on a [`PATH_MTU`] path, responses' TCP checksums left to the UDP
/// checksum around them, and delayed acknowledgments asked for.
pub fn client_config(server: &Addr) -> ClientConfig {
    let overhead = match server {
        Addr::V4(_) => UDP_TUNNEL_OVERHEAD_V4,
        Addr::V6(_) => UDP_TUNNEL_OVERHEAD_V6,
    };
    // Delayed acknowledgments are asked for by default (`CcConfig::delayed_ack`).
    ClientConfig {
        mss: mss_for_mtu(PATH_MTU - overhead, server),
        // Every datagram's UDP checksum covers the inner packet, and the kernel checks it.
        checksum: trickles::wire::Checksum::Trusted,
        ..ClientConfig::default()
    }
}

impl Link {
    /// Opens its UDP link `udp:LOCAL` ([`LinkConfig::bind`], or the local IP address that
    /// reaches the first replica, any port) and makes an empty [`Demux`] seeded from the
    /// operating system, naming [`LinkConfig::server`] and [`LinkConfig::source`] (or the
    /// sockets' addresses) as the inner addresses.
    ///
    /// # Errors
    ///
    /// No replica, replicas or `bind` of mixed IP versions, an address that cannot be
    /// bound, a bad emulation spec, no randomness.
    pub async fn bind(cfg: LinkConfig) -> anyhow::Result<Link> {
        let first = *cfg
            .replicas
            .first()
            .context("a link needs at least one replica")?;
        if cfg.replicas.iter().any(|r| r.is_ipv4() != first.is_ipv4()) {
            anyhow::bail!("replicas mix IPv4 and IPv6 addresses");
        }
        let bind = match cfg.bind {
            Some(b) if b.is_ipv4() != first.is_ipv4() => {
                anyhow::bail!("--bind {b} and {first} are of different IP versions")
            }
            Some(b) => b,
            None => SocketAddr::new(
                netio::link::local_ip_towards(first)
                    .with_context(|| format!("no local address reaches {first}"))?,
                0,
            ),
        };
        let clock = Clock::monotonic();
        let start = clock.origin();
        let mut links = Links::new();
        // No MTU of our own: a datagram is taken whatever its length, as a socket would.
        let options = LinkOptions {
            mtu: usize::from(u16::MAX),
            ..LinkOptions::default()
        };
        let spec = LinkSpec::Udp {
            local: bind,
            peer: None,
        };
        links
            .add("trickles", &spec, &options, start)
            .await
            .with_context(|| format!("binding a UDP socket on {bind}"))?;
        let local = links
            .get(IFACE)
            .and_then(netio::link::Link::local_addr)
            .with_context(|| format!("no local address after binding {bind}"))?;
        let local_ip = match local.ip() {
            ip if ip.is_unspecified() => netio::link::local_ip_towards(first)
                .with_context(|| format!("no local address reaches {first}"))?,
            ip => ip,
        };
        let server_ip = cfg.server.unwrap_or(first.ip());
        let source_ip = cfg.source.unwrap_or(local_ip);
        if server_ip.is_ipv4() != source_ip.is_ipv4() {
            anyhow::bail!(
                "inner addresses of different IP versions: source {source_ip}, server {server_ip}"
            );
        }
        let server = Addr::from(server_ip);
        let mut seed = [0u8; 8];
        getrandom::fill(&mut seed).context("no randomness from the operating system")?;
        let mut ccfg = client_config(&server);
        let buffer = links.get(IFACE).and_then(netio::link::Link::recv_buffer);
        ccfg.max_in_flight = receive_window(buffer, cfg.connections);
        let demux = Demux::new(ccfg, Addr::from(source_ip), u64::from_le_bytes(seed));
        let (emu_out, emu_in) = match &cfg.emulation {
            Some(e) => {
                let model = e
                    .model(usize::from(u16::MAX))
                    .map_err(|msg| anyhow::anyhow!("emulation: {msg}"))?;
                let seed = e.seed.unwrap_or(1);
                (
                    Some(Emulator::new(model, seed, start)),
                    Some(Emulator::new(model, seed.wrapping_add(1), start)),
                )
            }
            None => (None, None),
        };
        let n = cfg.replicas.len();
        Ok(Link {
            links,
            batch: Batch::new(),
            demux,
            server,
            replicas: cfg.replicas,
            mode: cfg.mode,
            failover: cfg.failover,
            current: 0,
            next_spray: 0,
            clock,
            awaiting: None,
            heard: None,
            emu_out,
            emu_in,
            sleep: Box::pin(tokio::time::sleep_until(start.into())),
            stats: LinkStats {
                sent: vec![0; n],
                received: vec![0; n],
                ..LinkStats::default()
            },
        })
    }

    /// The time now, read once: the monotonic instant the link layer and the emulation
    /// take, and the same reading as the connections' [`Instant`].
    fn now(&self) -> (StdInstant, Instant) {
        self.clock.read()
    }

    /// Opens a connection whose SYN carries `request`; its packets leave at the next
    /// [`Link::drive`].
    pub fn open(&mut self, request: &[u8]) -> Result<ConnId, DemuxError> {
        let (_, now) = self.now();
        self.demux.open(now, self.server, SERVER_PORT, request)
    }

    /// The connections' clock (monotonic, from the moment the link was made): the one a
    /// client built on the link reads for its own deadlines.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The connections.
    pub fn demux(&self) -> &Demux {
        &self.demux
    }

    /// The connections, mutably (read them, close them).
    pub fn demux_mut(&mut self) -> &mut Demux {
        &mut self.demux
    }

    /// The counters.
    pub fn stats(&self) -> LinkStats {
        let mut s = self.stats.clone();
        s.emulated_lost_out = self.emu_out.as_ref().map_or(0, |e| e.stats().lost);
        s.emulated_lost_in = self.emu_in.as_ref().map_or(0, |e| e.stats().lost);
        s
    }

    /// When the last datagram from a replica arrived (`None`: nothing yet), on the
    /// monotonic clock: what a client's connect and idle timeouts look at.
    pub fn last_heard(&self) -> Option<StdInstant> {
        self.heard
    }

    /// The replicas, in order.
    pub fn replicas(&self) -> &[SocketAddr] {
        &self.replicas
    }

    /// What the UDP link counted: datagrams and system calls each way, receive drops by
    /// reason, sends the socket refused.
    pub fn counters(&self) -> LinkCounters {
        self.links
            .get(IFACE)
            .map(netio::link::Link::counters)
            .unwrap_or_default()
    }

    /// The socket's local address (its IP is every connection's client address unless
    /// [`LinkConfig::source`] says otherwise).
    ///
    /// # Errors
    ///
    /// None once bound (`NotConnected` if the link had no address).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.links
            .get(IFACE)
            .and_then(netio::link::Link::local_addr)
            .ok_or_else(|| io::ErrorKind::NotConnected.into())
    }

    /// The inner server address every connection names.
    pub fn server(&self) -> IpAddr {
        self.server.into()
    }

    /// The inner source address every connection names.
    pub fn source(&self) -> IpAddr {
        self.demux.local().into()
    }

    /// Sends what the connections have queued (through the emulation, if any) without
    /// waiting: call it before closing a connection whose last packet (its FIN) should
    /// still leave.
    pub fn send_pending(&mut self) {
        self.pump();
    }

    /// One step of the driver: sends what is ready, waits for a batch of datagrams or a
    /// timer, then handles what came (and what else the link has ready, a bounded number
    /// of batches). Returns after anything happened (read the connections then).
    /// Cancel-safe: cancelled while waiting, it loses nothing (a batch is taken only when
    /// it is handled). Receive and send errors are counted ([`Link::counters`]), not
    /// returned.
    pub async fn drive(&mut self) {
        self.pump();
        let deadline = self.deadline();
        if let Some(d) = deadline {
            self.sleep.as_mut().reset(d.into());
        }
        let Link {
            links,
            batch,
            sleep,
            ..
        } = self;
        let received = tokio::select! {
            _ = links.recv(batch) => true,
            () = sleep.as_mut(), if deadline.is_some() => false,
        };
        if received {
            self.take();
            self.receive(RECV_BATCH - 1);
        }
        self.pump();
    }

    /// The earliest of the connections' timers, the emulation's next delivery and the
    /// failover check.
    fn deadline(&self) -> Option<StdInstant> {
        let timers = self.demux.poll_timeout().map(|t| self.clock.deadline(t));
        let emu = [&self.emu_out, &self.emu_in]
            .into_iter()
            .filter_map(|e| e.as_ref().and_then(Emulator::next_due));
        let failover = self
            .awaiting
            .filter(|_| self.watches_silence())
            .map(|since| since + self.failover);
        timers.into_iter().chain(emu).chain(failover).min()
    }

    fn watches_silence(&self) -> bool {
        self.mode == Mode::Failover
            && self.replicas.len() > 1
            && self.demux.ids().any(|id| {
                self.demux
                    .get(id)
                    .is_some_and(|c| !c.is_complete() && !c.is_reset())
            })
    }

    /// Takes up to `calls` more batches the link has ready (each one receive call).
    fn receive(&mut self, calls: usize) {
        for _ in 0..calls {
            match self.links.try_recv_batch(IFACE, &mut self.batch) {
                Ok(_) => self.take(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    // Counted by the link; nothing more to receive now.
                    tracing::debug!(error = %e, "receive failed");
                    return;
                }
            }
        }
    }

    /// Hands the datagrams of the batch just received to the connections (through the
    /// emulation, if any), counting them per replica.
    fn take(&mut self) {
        let (wall, now) = self.now();
        let Link {
            batch,
            replicas,
            stats,
            awaiting,
            heard,
            emu_in,
            demux,
            ..
        } = self;
        for (from, datagram) in batch.datagrams() {
            let Some(i) = replicas.iter().position(|r| *r == from) else {
                stats.strangers += 1;
                continue;
            };
            if let Some(n) = stats.received.get_mut(i) {
                *n += 1;
            }
            *awaiting = None;
            *heard = Some(wall);
            match emu_in {
                Some(e) => e.send(wall, datagram),
                None => {
                    if demux.handle_packet(now, datagram).is_err() {
                        stats.refused += 1;
                    }
                }
            }
        }
    }

    /// Everything that does not wait: emulated arrivals, due timers, failover, the
    /// connections' packets into the emulation or the link's send queue, and the queue
    /// flushed; on one reading of the clock.
    fn pump(&mut self) {
        let (wall, now) = self.now();
        if let Some(e) = &mut self.emu_in {
            while let Some(datagram) = e.pop_due(wall) {
                if self.demux.handle_packet(now, &datagram).is_err() {
                    self.stats.refused += 1;
                }
            }
        }
        if self.demux.poll_timeout().is_some_and(|d| d <= now) {
            self.demux.handle_timeout(now);
        }
        if self
            .awaiting
            .is_some_and(|since| wall >= since + self.failover)
            && self.watches_silence()
        {
            self.current = (self.current + 1) % self.replicas.len();
            self.stats.failovers += 1;
            self.awaiting = None;
            tracing::info!(replica = %self.replicas[self.current], "failing over");
        }
        let dropped = self.dropped();
        while let Some((_, packet)) = self.demux.poll_transmit() {
            match &mut self.emu_out {
                Some(e) => e.send(wall, &packet),
                None => self.send(&packet, wall),
            }
        }
        while let Some(packet) = self.emu_out.as_mut().and_then(|e| e.pop_due(wall)) {
            self.send(&packet, wall);
        }
        // Consecutive datagrams of one size to one replica leave as one GSO run (a window
        // of requests costs a few system calls, not one each). A full socket drops them,
        // counted as send errors, as a lost request would be.
        self.links.flush();
        self.stats.send_errors += self.dropped() - dropped;
    }

    /// Queues `packet` for the replica whose turn it is.
    fn send(&mut self, packet: &[u8], now: StdInstant) {
        let i = match self.mode {
            Mode::Failover => self.current,
            Mode::Spray => self.next_spray,
        };
        let Some(&to) = self.replicas.get(i) else {
            return;
        };
        self.links.send_to(IFACE, to, packet, now);
        if let Some(n) = self.stats.sent.get_mut(i) {
            *n += 1;
        }
        self.awaiting.get_or_insert(now);
        if self.mode == Mode::Spray {
            self.next_spray = (self.next_spray + 1) % self.replicas.len();
        }
    }

    /// Datagrams the link could not send so far (socket full, refused, other errors).
    fn dropped(&self) -> u64 {
        let c = self.counters();
        c.tx_full + c.tx_errors + c.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_windows() {
        // 4 MiB asked, 8 MiB accounted: half of it in 1500-byte packets.
        assert_eq!(receive_window(Some(8 << 20), 1), 2796);
        assert_eq!(receive_window(Some(8 << 20), 4), 699);
        // A bigger buffer: the cap.
        assert_eq!(receive_window(Some(64 << 20), 1), MAX_WINDOW);
        // The kernel's default buffer (rmem_default 212,992, doubled): 141 packets.
        assert_eq!(receive_window(Some(425_984), 1), 141);
        assert_eq!(receive_window(Some(425_984), 100), 16);
        assert_eq!(receive_window(None, 0), MAX_WINDOW);
    }

    #[test]
    fn mss_fits_a_datagram() {
        let c = client_config(&Addr::V4([127, 0, 0, 1]));
        assert_eq!(c.mss, 1334);
        assert!(
            c.cc.delayed_ack,
            "the daemons' clients ask for delayed acks"
        );
    }
}
