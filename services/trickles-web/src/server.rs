//! `trickles-web`: one task owns a [`Service`] running [`HttpApp`] over the served
//! directory, and `select!`s over its link (IP-in-UDP, or a TUN device), the key rotation
//! timer, metrics scrapes and shutdown.
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
//!   real IP packets the kernel routes to and from the device.
//!
//! The clock the core sees is wall-clock microseconds since the Unix epoch, so
//! continuations issued by one process are fresh for another (a replica, a restart) on a
//! machine with the same time. Keys come from [`Keys`] and rotate at every period
//! boundary, in step with every other process sharing the key file.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use netio::link::Batch;
use netio::metrics::{Sample, ScrapeRequests};
use netio::pcap::PcapWriter;
use netio::udp::{Outbox, UdpIo};
use trickles::app::http::HttpApp;
use trickles::app::{Service, ServiceStats};
use trickles::conn::Addr;
use trickles::crypto::ServerKeys;
use trickles::server::{Server, ServerConfig};

use crate::keys::Keys;
use crate::store::FileStore;
use crate::tcp::TcpStats;

/// Most packets read in one go before the application answers them.
const BATCH: usize = 64;

/// Socket buffer sizes asked for (the kernel caps them at `net.core.*mem_max`).
const SOCKET_BUFFER: usize = 4 << 20;

/// Where Trickles packets come and go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// IP-in-UDP on this address.
    Udp(SocketAddr),
    /// A TUN device of this name with these addresses (address, prefix length).
    Tun {
        /// The device's name.
        name: String,
        /// Its addresses.
        addresses: Vec<(IpAddr, u8)>,
    },
}

impl std::str::FromStr for Listen {
    type Err = String;

    /// `udp:ADDR` or `tun:NAME[,CIDR…]` (`tun:tw0,10.9.0.1/24`).
    fn from_str(s: &str) -> Result<Listen, String> {
        if let Some(a) = s.strip_prefix("udp:") {
            return a
                .parse()
                .map(Listen::Udp)
                .map_err(|e| format!("udp:{a}: {e}"));
        }
        if let Some(rest) = s.strip_prefix("tun:") {
            let mut parts = rest.split(',');
            let name = parts.next().unwrap_or_default().to_string();
            if name.is_empty() {
                return Err("tun: needs a device name".into());
            }
            let addresses = parts
                .map(netio::link::parse_cidr)
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Listen::Tun { name, addresses });
        }
        Err(format!("`{s}`: expected udp:ADDR or tun:NAME[,CIDR]"))
    }
}

/// Everything the server is started with.
#[derive(Clone, Debug)]
pub struct Options {
    /// The directory served.
    pub root: PathBuf,
    /// The key file (created when missing).
    pub keys: PathBuf,
    /// The Trickles link.
    pub listen: Listen,
    /// Also serve over plain TCP here.
    pub tcp: Option<SocketAddr>,
    /// Serve Prometheus metrics here.
    pub metrics: Option<SocketAddr>,
    /// Capture the Trickles packets into DIR/trickles-web.pcap.
    pub pcap: Option<PathBuf>,
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

enum Io {
    /// The socket, its receive buffers and the GSO runs being built.
    Udp(Box<(UdpIo, Batch, Outbox)>),
    Tun(netio::link::AsyncDevice),
}

/// The running server: its core and its link.
pub struct Web {
    service: Service<HttpApp<FileStore>, Option<SocketAddr>>,
    keys: Keys,
    period: u64,
    io: Io,
    pcap: Option<PcapWriter>,
    tcp: Arc<TcpStats>,
    /// Datagrams or packets that could not be sent (socket full or error).
    send_errors: u64,
    /// Key rotations done.
    rotations: u64,
}

/// Microseconds since the Unix epoch: the clock every replica shares.
fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl Web {
    /// Opens the store, the keys and the link; `tcp` are the fallback's counters.
    ///
    /// # Errors
    ///
    /// A bad root, an unreadable key file, a link that cannot be opened.
    pub async fn open(
        opts: &Options,
        store: FileStore,
        tcp: Arc<TcpStats>,
    ) -> anyhow::Result<(Web, Option<SocketAddr>)> {
        let keys = Keys::load_or_create(&opts.keys, opts.rotate)?;
        let period = keys.period_at(SystemTime::now());
        let (io, udp, server_addr, mtu) = match &opts.listen {
            Listen::Udp(a) => {
                let served = opts.address.unwrap_or(a.ip());
                let s = UdpIo::bind(*a, SOCKET_BUFFER)
                    .map_err(|e| anyhow::anyhow!("--listen udp:{a}: {e}"))?;
                let local = s.local_addr()?;
                let overhead = if a.is_ipv4() {
                    trickles::ip::UDP_TUNNEL_OVERHEAD_V4
                } else {
                    trickles::ip::UDP_TUNNEL_OVERHEAD_V6
                };
                (
                    Io::Udp(Box::new((s, Batch::new(), Outbox::new()))),
                    Some(local),
                    Addr::from(served),
                    opts.mtu.saturating_sub(overhead),
                )
            }
            Listen::Tun { name, addresses } => {
                if let Some(a) = opts.address {
                    anyhow::bail!(
                        "--address {a} is for udp: links (a TUN device serves the addresses \
                         of tun:NAME,CIDR)"
                    );
                }
                let d = netio::link::open_tun(name, addresses, usize::from(opts.mtu))?;
                let addr = addresses
                    .first()
                    .map_or(Addr::V4([0; 4]), |(a, _)| Addr::from(*a));
                (Io::Tun(d), None, addr, opts.mtu)
            }
        };
        let mut cfg = ServerConfig::new(keys.key_config(period));
        cfg.mss = trickles::ip::mss_for_mtu(mtu, &server_addr);
        if cfg.mss == 0 {
            anyhow::bail!("MTU {} leaves no room for data", opts.mtu);
        }
        let app = HttpApp::new(&keys.ucont_key(), store);
        let mut service = Service::new(Server::new(cfg), app, opts.queue);
        service.serve_only(opts.address.map(Addr::from));
        let pcap = match &opts.pcap {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                Some(PcapWriter::create(&dir.join("trickles-web.pcap"))?)
            }
            None => None,
        };
        tracing::info!(root = %opts.root.display(), mss = cfg.mss, period, address = ?opts.address, "serving");
        Ok((
            Web {
                service,
                keys,
                period,
                io,
                pcap,
                tcp,
                send_errors: 0,
                rotations: 0,
            },
            udp,
        ))
    }

    fn capture(pcap: &mut Option<PcapWriter>, packet: &[u8]) {
        if let Some(p) = pcap
            && let Err(e) = p.write(SystemTime::now(), packet)
        {
            tracing::warn!("pcap capture stopped: {e}");
            *pcap = None;
        }
    }

    /// Reads what the link has ready (a batch of datagrams, or up to [`BATCH`] packets
    /// from TUN), then answers: over UDP, each run of equal-size responses to one client
    /// leaves in one GSO send.
    fn drain(&mut self, buf: &mut [u8]) {
        let now = now_us();
        let Web {
            io,
            service,
            pcap,
            send_errors,
            ..
        } = self;
        match io {
            Io::Udp(udp) => {
                let (sock, batch, outbox) = &mut **udp;
                if sock.try_recv_batch(batch).is_ok() {
                    for (peer, packet) in batch.datagrams() {
                        Self::capture(pcap, packet);
                        if let Err(e) = service.handle_packet(now, packet, Some(peer)) {
                            tracing::trace!(%peer, "refused: {e}");
                        }
                    }
                }
                let dropped = sock.counters().tx_dropped;
                service.serve(&mut |packet, peer| {
                    if let Some(peer) = peer {
                        Self::capture(pcap, packet);
                        outbox.push(sock, peer, packet);
                    }
                });
                outbox.flush(sock);
                *send_errors += sock.counters().tx_dropped - dropped;
            }
            Io::Tun(d) => {
                for _ in 0..BATCH {
                    let Ok(n) = d.try_recv(buf) else { break };
                    let packet = buf.get(..n).unwrap_or_default();
                    Self::capture(pcap, packet);
                    if let Err(e) = service.handle_packet(now, packet, None) {
                        tracing::trace!("refused: {e}");
                    }
                }
                service.serve(&mut |packet, _| {
                    if d.try_send(packet).is_ok() {
                        Self::capture(pcap, packet);
                    } else {
                        *send_errors += 1;
                    }
                });
            }
        }
    }

    async fn readable(&self) -> std::io::Result<()> {
        match &self.io {
            Io::Udp(u) => u.0.readable().await,
            Io::Tun(d) => d.readable().await,
        }
    }

    /// Moves to the current key period if its time has come: one rotation per period
    /// passed, or, after a jump of more than two periods (a suspended machine, a clock
    /// set forward), the period's keys installed at once. A clock set back changes
    /// nothing (the keys in use stay until their period ends).
    fn rotate_if_due(&mut self) {
        let period = self.keys.period_at(SystemTime::now());
        if period > self.period.saturating_add(2) {
            *self.service.server_mut().keys_mut() = ServerKeys::new(&self.keys.key_config(period));
            self.period = period;
            self.rotations += 1;
            tracing::info!(period, "clock jumped: installed this period's keys");
            return;
        }
        while self.period < period {
            self.period += 1;
            let key = self.keys.mac_key(self.period);
            self.service.server_mut().keys_mut().rotate(key);
            self.rotations += 1;
            tracing::info!(period = self.period, "rotated the MAC key");
        }
    }

    /// Serves until `shutdown` completes, answering scrapes from `scrapes`.
    ///
    /// # Errors
    ///
    /// The link fails.
    pub async fn run(
        &mut self,
        shutdown: impl Future<Output = ()>,
        mut scrapes: Option<ScrapeRequests>,
    ) -> anyhow::Result<ServiceStats> {
        tokio::pin!(shutdown);
        let mut buf = vec![0u8; 65_536];
        loop {
            let until = self
                .keys
                .period_end(self.period)
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            tokio::select! {
                () = &mut shutdown => break,
                r = self.readable() => {
                    r?;
                    self.drain(&mut buf);
                }
                () = tokio::time::sleep(until) => self.rotate_if_due(),
                Some(r) = async {
                    match scrapes.as_mut() {
                        Some(s) => s.next().await,
                        None => std::future::pending().await,
                    }
                } => r.respond(self.snapshot()),
            }
        }
        if let Some(p) = &mut self.pcap {
            let _ = p.flush();
        }
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
                "Response packets the link could not send",
                self.send_errors as f64,
            ),
            Sample::counter(
                "trickles_key_rotations",
                "MAC key rotations",
                self.rotations as f64,
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
                "http_opens",
                "Requests (SYNs) answered over Trickles",
                h.opens as f64,
            ),
            Sample::counter(
                "http_resumptions",
                "Requests resumed from a user continuation",
                h.requests as f64,
            ),
            Sample::counter(
                "http_bad_ucont",
                "Requests whose user continuation did not verify",
                h.bad_ucont as f64,
            ),
            Sample::counter(
                "http_stale",
                "Connections refused: the object changed",
                h.stale as f64,
            ),
            Sample::counter(
                "http_body_bytes",
                "Body bytes sent over Trickles",
                h.bytes_body as f64,
            ),
            Sample::counter(
                "http_responses",
                "Answers by status class",
                h.status_2xx as f64,
            )
            .with_label("class", "2xx"),
            Sample::counter(
                "http_responses",
                "Answers by status class",
                h.status_4xx as f64,
            )
            .with_label("class", "4xx"),
            Sample::counter(
                "tcp_connections",
                "Connections accepted by the TCP fallback",
                self.tcp.connections.load(Ordering::Relaxed) as f64,
            ),
            Sample::gauge(
                "tcp_open_connections",
                "TCP fallback connections open now",
                self.tcp.open.load(Ordering::Relaxed) as f64,
            ),
            Sample::counter(
                "tcp_requests",
                "Requests answered by the TCP fallback",
                self.tcp.requests.load(Ordering::Relaxed) as f64,
            ),
            Sample::counter(
                "tcp_body_bytes",
                "Body bytes sent by the TCP fallback",
                self.tcp.body_bytes.load(Ordering::Relaxed) as f64,
            ),
        ];
        for (reason, v) in [
            ("bad_ip", s.bad_ip),
            ("not_tcp", s.not_tcp),
            ("fragment", s.fragments),
            ("wire", r.wire),
            ("malformed", r.malformed),
            ("mac", r.mac),
            ("stale", r.stale),
            ("replay", r.replay),
            ("other_site", r.other_site),
            ("proof", r.proof),
            ("plan", r.plan),
            ("too_many_retries", r.too_many_retries),
            ("other_address", s.other_address),
        ] {
            out.push(
                Sample::counter("trickles_refused", "Packets refused, by reason", v as f64)
                    .with_label("reason", reason),
            );
        }
        out
    }
}
