//! Links: IP-in-UDP to one peer or to many, or a TUN device, polled together by one task;
//! the one link layer of every waist daemon and tool.
//!
//! ```text
//!            ┌─────────────── one receive per ready link per turn (round-robin) ─────────────┐
//!  kernel ─► recvmmsg + GRO / TUN read + offload split ─► Batch: frames ≤ MTU ─► the core
//!            counted: rx_frames = delivered + truncated + oversize + empty + offload
//!  the core ─► send / send_to ─► [emulation] ─► queue ─► flush: GSO runs (sendmsg) and
//!            sendmmsg of the rest / TUN writes coalesced ─► kernel
//! ```
//!
//! A daemon's core is one task: it awaits [`Links::recv`] (whichever link has frames,
//! round-robin so none starves: one batch per link per turn, at most [`BATCH`] slots), then
//! takes one more batch from each ready link with [`Links::try_recv_batch`] while its budget
//! for the turn lasts, hands [`Batch::frames`] to its core, queues what the core returns
//! with [`Links::send`] (or [`Links::send_to`]) and ends the turn with [`Links::flush`],
//! which sends the queues and never blocks: a full socket drops what does not fit and
//! counts it, as a router's output queue does. Emulated links hold frames until they are
//! due ([`Links::next_due`], [`Links::send_due`]).
//!
//! **Every datagram is counted once.** What the kernel hands over is counted at the link
//! ([`LinkCounters::rx_frames`]) and either reaches the core through [`Batch::frames`] or
//! is dropped with a named reason ([`LinkCounters::rx_drops`]).
//!
//! * **UDP to one peer** (`local` and `peer`): a socket bound to `local` and connected to
//!   `peer`, so only the peer's datagrams arrive; one frame per datagram
//!   (`waist_node::frame`). A peer whose port is closed makes the kernel refuse a send or a
//!   receive (ICMP port unreachable, at once on loopback): the refusal is counted
//!   (`refused`) and takes the link *down*; any datagram from the peer brings it *up*, and
//!   a down link is tried again after its hold-down (`holddown_ms`, default 1 s). Changes
//!   of state wait in [`Links::poll_event`], the hold-down's end in [`Links::next_retry`] /
//!   [`Links::retry_due`] (see [`liveness`]).
//! * **UDP to many peers** (`local` only): an unconnected socket, for servers and clients;
//!   [`Batch::datagrams`] gives each datagram's source, [`Links::send_to`] a destination.
//! * **TUN**: a device created (or opened) by name, given its addresses and MTU, with
//!   offload (virtio-net header, TSO/USO) unless `offload = false`; it carries plain IP
//!   packets to and from the host's kernel. Needs root. See [`open_tun_with`].
//!
//! Every receive is batched (no plain `recv` on a socket with GRO on: it would glue a
//! coalesced run into one frame). A link is written in a config as `kind` with
//! `local`/`peer` or `device`/`addresses`, or in the one notation every flag also takes,
//! [`LinkSpec`]: `udp:LOCAL=PEER`, `udp:LOCAL`, `tun:NAME[,CIDR…]`.

mod batch;
pub mod liveness;
pub mod spec;
mod split;
#[cfg(test)]
mod tests;
mod tun;
mod tx;

pub use batch::{BATCH, Batch, Fill};
pub use liveness::{Cause, LinkEvent};
pub use spec::LinkSpec;
pub use split::{Split, split};
pub use tun::{AsyncDevice, netns_unsupported, open_tun, open_tun_with, parse_cidr};
pub use tx::{MAX_RUN_BYTES, Run, runs};

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use crate::config::{LinkConfig, LinkKind, Source};
use crate::emulate::Emulator;
use liveness::Liveness;
use tun::TunIo;
use tx::Sent;
use tx::TxQueue;

/// Bytes a received frame may exceed the link's MTU by: room for a waist shim (a threaded
/// label, 5 bytes) in front of an MTU-sized packet. Longer frames are dropped as `oversize`.
pub const SHIM_ROOM: usize = 64;

/// Frames queued on one link before it is flushed on its own, whatever the caller's turn.
const MAX_QUEUED: usize = 1024;

/// What a link counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Frames the kernel handed over: datagrams (each of a GRO run counts) or TUN packets
    /// (each of a split super-packet counts). Equals the frames handed on to the core plus
    /// [`rx_dropped`](LinkCounters::rx_dropped).
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Receive system calls that returned data.
    pub rx_calls: u64,
    /// Receive errors other than refusals.
    pub rx_errors: u64,
    /// Frames cut short by a buffer too small for them (dropped).
    pub rx_truncated: u64,
    /// Frames longer than the link's MTU (plus [`SHIM_ROOM`]) (dropped).
    pub rx_oversize: u64,
    /// Empty datagrams (dropped).
    pub rx_empty: u64,
    /// TUN reads whose super-packet could not be split (dropped, one frame each).
    pub rx_offload: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Send batches made: `sendmsg` (a GSO run), `sendmmsg`, or one TUN batch write.
    pub tx_calls: u64,
    /// Frames dropped because the socket or device was full.
    pub tx_full: u64,
    /// Frames lost to other send errors.
    pub tx_errors: u64,
    /// Sends and receives the kernel refused because the peer's port is closed (ICMP port
    /// unreachable): each takes the link down (or keeps it down).
    pub refused: u64,
}

impl LinkCounters {
    /// Received frames dropped at the link, by reason (`truncated`, `oversize`, `empty`,
    /// `offload`).
    pub fn rx_drops(&self) -> [(&'static str, u64); 4] {
        [
            ("truncated", self.rx_truncated),
            ("oversize", self.rx_oversize),
            ("empty", self.rx_empty),
            ("offload", self.rx_offload),
        ]
    }

    /// Received frames dropped at the link.
    pub fn rx_dropped(&self) -> u64 {
        self.rx_drops().iter().map(|(_, n)| n).sum()
    }

    /// Received frames handed on to the core.
    pub fn rx_delivered(&self) -> u64 {
        self.rx_frames - self.rx_dropped()
    }

    fn received(&mut self, f: &Fill) {
        self.rx_calls += 1;
        self.rx_frames += f.datagrams as u64;
        self.rx_bytes += f.bytes as u64;
        self.rx_truncated += f.truncated as u64;
        self.rx_oversize += f.oversize as u64;
        self.rx_empty += f.empty as u64;
    }

    fn sent(&mut self, s: &Sent) {
        self.tx_frames += s.sent;
        self.tx_bytes += s.bytes;
        self.tx_calls += s.calls;
        self.tx_full += s.full;
        self.tx_errors += s.errors;
        self.refused += s.refused;
    }
}

enum Io {
    /// A UDP socket (connected when `peer` is set), read with recvmmsg/GRO and written in
    /// GSO runs through quinn-udp, the rest with sendmmsg.
    Udp {
        sock: UdpSocket,
        state: quinn_udp::UdpSocketState,
        peer: Option<SocketAddr>,
    },
    Tun(TunIo),
}

/// One open link.
pub struct Link {
    name: String,
    kind: LinkKind,
    io: Io,
    mtu: usize,
    cost: Option<u16>,
    emulator: Option<Emulator>,
    counters: LinkCounters,
    local: Option<SocketAddr>,
    pcap: Option<crate::pcap::PcapWriter>,
    live: Liveness,
    tx: TxQueue,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("mtu", &self.mtu)
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// How to open a link beside where it goes ([`Links::add`]).
#[derive(Clone, Debug)]
pub struct LinkOptions {
    /// Largest IP packet it carries (68..=65535).
    pub mtu: usize,
    /// Distance-vector cost, if routing runs over it.
    pub cost: Option<u16>,
    /// How long a refused UDP link stays down.
    pub holddown: Duration,
    /// TUN: offload (virtio-net header, TSO/USO).
    pub offload: bool,
    /// UDP: socket buffer bytes asked for (send and receive).
    pub buffer: usize,
    /// Emulation of what this end sends (to its one peer): the model and its seed.
    pub emulation: Option<(netsim::LinkConfig, u64)>,
}

impl Default for LinkOptions {
    /// MTU 1500, no routing, the default hold-down, offload on, [`SOCKET_BUFFER`], no
    /// emulation.
    fn default() -> Self {
        LinkOptions {
            mtu: 1500,
            cost: None,
            holddown: liveness::DEFAULT_HOLDDOWN,
            offload: true,
            buffer: SOCKET_BUFFER,
            emulation: None,
        }
    }
}

impl Link {
    /// Opens the link `name` to `spec` (binding its socket or creating its TUN device).
    /// Emulation counts time from `origin`.
    async fn open(
        name: String,
        spec: &LinkSpec,
        o: &LinkOptions,
        origin: Instant,
    ) -> anyhow::Result<Link> {
        let (io, local) = match spec {
            LinkSpec::Udp { local, peer } => {
                let sock = udp_socket(*local, o.buffer)
                    .map_err(|e| anyhow::anyhow!("link `{name}`: cannot bind {local}: {e}"))?;
                if let Some(peer) = peer {
                    sock.connect(peer).await.map_err(|e| {
                        anyhow::anyhow!("link `{name}`: cannot connect to {peer}: {e}")
                    })?;
                }
                let state = quinn_udp::UdpSocketState::new((&sock).into()).map_err(|e| {
                    anyhow::anyhow!("link `{name}`: cannot set up batched I/O: {e}")
                })?;
                let local = sock.local_addr().ok();
                let peer = *peer;
                (Io::Udp { sock, state, peer }, local)
            }
            LinkSpec::Tun { device, addresses } => {
                let d = open_tun_with(device, addresses, o.mtu, o.offload)
                    .map_err(|e| anyhow::anyhow!("link `{name}`: {e}"))?;
                (Io::Tun(TunIo::new(d)), None)
            }
        };
        Ok(Link {
            name,
            kind: spec.kind(),
            io,
            mtu: o.mtu,
            cost: o.cost,
            emulator: o
                .emulation
                .as_ref()
                .map(|(m, seed)| Emulator::new(*m, *seed, origin)),
            counters: LinkCounters::default(),
            local,
            pcap: None,
            live: Liveness::new(o.holddown),
            tx: TxQueue::default(),
        })
    }

    /// The link's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// UDP or TUN.
    pub fn kind(&self) -> LinkKind {
        self.kind
    }

    /// Largest IP packet it carries.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// Its distance-vector cost, if routing runs over it.
    pub fn cost(&self) -> Option<u16> {
        self.cost
    }

    /// The local UDP address it is bound to.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local
    }

    /// The UDP peer it is connected to (`None`: a TUN link, or UDP to many peers).
    pub fn peer(&self) -> Option<SocketAddr> {
        match &self.io {
            Io::Udp { peer, .. } => *peer,
            Io::Tun(_) => None,
        }
    }

    /// Whether a TUN link runs with offload (virtio-net header, TSO/USO).
    pub fn offload(&self) -> bool {
        match &self.io {
            Io::Udp { .. } => false,
            Io::Tun(t) => t.offload(),
        }
    }

    /// Most datagrams one UDP send carries (the kernel's GSO limit; 1 without GSO).
    pub fn max_segments(&self) -> usize {
        match &self.io {
            Io::Udp { state, .. } => state.max_gso_segments(),
            Io::Tun(_) => 1,
        }
    }

    /// What it counted.
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }

    /// Whether the peer is thought to be there: false from a refusal until the peer is
    /// heard or the hold-down ends. A TUN link is always up.
    pub fn is_up(&self) -> bool {
        self.live.is_up()
    }

    /// How long a refused link stays down before it is tried again.
    pub fn holddown(&self) -> Duration {
        self.live.holddown()
    }

    /// The emulated link's counters, if it is emulated.
    pub fn emulation(&self) -> Option<netsim::LinkStats> {
        self.emulator.as_ref().map(Emulator::stats)
    }

    /// The longest frame handed on to the core.
    fn limit(&self) -> usize {
        self.mtu + SHIM_ROOM
    }

    /// Counts error `e` (received if `rx`, else sent); whether it took the link down.
    fn failed(&mut self, e: &io::Error, rx: bool) -> bool {
        if e.kind() == io::ErrorKind::ConnectionRefused && self.kind == LinkKind::Udp {
            self.counters.refused += 1;
            return self.live.refused(Instant::now());
        }
        if rx {
            self.counters.rx_errors += 1;
        } else {
            self.counters.tx_errors += 1;
        }
        false
    }

    /// Polls the link's readiness and, when ready, reads one batch; `Pending` once the
    /// kernel has nothing (a waker registered).
    fn poll_batch(&mut self, cx: &mut Context<'_>, batch: &mut Batch) -> Poll<io::Result<Fill>> {
        loop {
            let ready = match &self.io {
                Io::Udp { sock, .. } => sock.poll_recv_ready(cx),
                Io::Tun(t) => t.dev.poll_readable(cx),
            };
            match ready {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => match self.read_batch(batch, false) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    r => return Poll::Ready(r),
                },
            }
        }
    }

    /// One batched receive if something waits (`WouldBlock` if not).
    ///
    /// `direct`: ask the kernel even if tokio's cached readiness says nothing waits. The
    /// reactor refreshes that readiness only when the task yields to the runtime, so a
    /// task kept busy by one flooded link would otherwise not see the others for many
    /// turns; a direct read costs one system call on an idle link. The wake-up path
    /// (`poll_batch`) reads through the readiness, which it also clears.
    fn read_batch(&mut self, batch: &mut Batch, direct: bool) -> io::Result<Fill> {
        let limit = self.limit();
        match &mut self.io {
            Io::Udp { sock, state, .. } => batch.fill_udp(limit, |slices, meta| {
                let (sock, state) = (&*sock, &*state);
                if direct {
                    state.recv(sock.into(), slices, meta)
                } else {
                    sock.try_io(tokio::io::Interest::READABLE, || {
                        state.recv(sock.into(), slices, meta)
                    })
                }
            }),
            Io::Tun(t) => t.try_recv_batch(batch, limit, direct),
        }
    }

    /// Counts, captures and notes the peer after a receive; whether the link came up.
    fn took(&mut self, r: &io::Result<Fill>, batch: &mut Batch) -> bool {
        match r {
            Ok(f) => {
                self.counters.received(f);
                if self.pcap.is_some() {
                    for frame in batch.frames() {
                        capture(&mut self.pcap, &self.name, frame);
                    }
                }
                f.datagrams > 0 && self.live.heard()
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            Err(e) if matches!(self.io, Io::Tun(_)) && e.raw_os_error().is_none() => {
                // Not the kernel's error but tun-rs's: a read it could not split (a bad
                // virtio header, a malformed super-packet): one frame handed over, dropped.
                self.counters.rx_calls += 1;
                self.counters.rx_frames += 1;
                self.counters.rx_offload += 1;
                false
            }
            Err(e) => {
                batch.clear();
                self.failed(e, true)
            }
        }
    }

    /// Queues `frame` for `dest` (`None`: the peer), through the emulation if any.
    fn queue(&mut self, dest: Option<SocketAddr>, frame: &[u8], now: Instant) -> bool {
        let peer = self.peer();
        if let Some(e) = &mut self.emulator {
            // The emulation models one peer: frames to others skip it.
            if dest.is_none() || dest == peer {
                e.send(now, frame);
                return false;
            }
        }
        self.enqueue(dest, frame)
    }

    /// Puts `frame` on the send queue; flushes a queue grown past its bound (whether a
    /// refusal took the link down).
    #[inline]
    fn enqueue(&mut self, dest: Option<SocketAddr>, frame: &[u8]) -> bool {
        let full = match &mut self.io {
            Io::Udp { .. } => {
                self.tx.push(dest, frame);
                self.tx.len() >= MAX_QUEUED
            }
            Io::Tun(t) => t.push(frame),
        };
        full && self.flush()
    }

    /// Sends `region` (datagrams of `stride` bytes, the last maybe shorter) to the peer
    /// now as one GSO run; whether a refusal took the link down.
    fn send_direct(&mut self, region: &[u8], stride: usize) -> bool {
        let Io::Udp {
            sock,
            state,
            peer: Some(peer),
        } = &self.io
        else {
            return false;
        };
        let t = quinn_udp::Transmit {
            destination: *peer,
            ecn: None,
            contents: region,
            segment_size: Some(stride),
            src_ip: None,
        };
        let r = state.try_send(sock.into(), &t);
        let mut sent = Sent {
            calls: 1,
            ..Sent::default()
        };
        sent.record(region.len().div_ceil(stride), region.len(), &r);
        if r.is_ok() && self.pcap.is_some() {
            for d in region.chunks(stride) {
                capture(&mut self.pcap, &self.name, d);
            }
        }
        self.counters.sent(&sent);
        sent.refused > 0 && self.live.refused(Instant::now())
    }

    /// Sends what is queued; whether a refusal took the link down.
    fn flush(&mut self) -> bool {
        let Link {
            io, pcap, name, tx, ..
        } = self;
        let capturing = pcap.is_some();
        let mut cap = |f: &[u8]| {
            if capturing {
                capture(pcap, name, f);
            }
        };
        let sent = match io {
            Io::Udp { sock, state, peer } => {
                if tx.is_empty() {
                    return false;
                }
                let s = tx::flush_udp(sock, state, *peer, tx, &mut cap);
                tx.clear();
                s
            }
            Io::Tun(t) => {
                if t.queued() == 0 {
                    return false;
                }
                t.flush(capturing, &mut cap)
            }
        };
        self.counters.sent(&sent);
        sent.refused > 0 && self.kind == LinkKind::Udp && self.live.refused(Instant::now())
    }
}

/// Records `frame` in a link's capture, if it has one (a failing capture is closed).
fn capture(pcap: &mut Option<crate::pcap::PcapWriter>, name: &str, frame: &[u8]) {
    if let Some(p) = pcap
        && let Err(e) = p.write(std::time::SystemTime::now(), frame)
    {
        tracing::warn!(link = %name, "pcap capture stopped: {e}");
        *pcap = None;
    }
}

/// The links of a daemon. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Links {
    links: Vec<Link>,
    next: usize,
    events: VecDeque<LinkEvent>,
}

impl Links {
    /// Opens every link of `configs` (binding sockets, creating TUN devices), numbering
    /// them in order: link `i` is the core's interface `i`. Emulated links count time from
    /// `origin`.
    ///
    /// # Errors
    ///
    /// A located [`ConfigError`](crate::config::ConfigError) for a bad or missing field; an I/O error (address in use,
    /// no permission for TUN) names the link.
    pub async fn open(
        configs: &[LinkConfig],
        source: &Source,
        origin: Instant,
    ) -> anyhow::Result<Links> {
        let mut links = Vec::with_capacity(configs.len());
        for (i, c) in configs.iter().enumerate() {
            let name = c.name.get_ref().clone();
            if configs.iter().take(i).any(|o| o.name.get_ref() == &name) {
                return Err(source
                    .error_for(&c.name, "a second link with this name")
                    .into());
            }
            let mtu = c.mtu.as_ref().map_or(1500, |m| *m.get_ref());
            if !(68..=65_535).contains(&mtu) {
                let m = c
                    .mtu
                    .as_ref()
                    .map(|m| source.error_for(m, "MTU must be 68..=65535"));
                return Err(m
                    .unwrap_or_else(|| source.error_for(&c.name, "bad MTU"))
                    .into());
            }
            let holddown = match &c.holddown_ms {
                Some(h) if c.is_tun() => {
                    return Err(source
                        .error_for(h, "a tun link is always up: no hold-down")
                        .into());
                }
                Some(h) => Duration::from_millis(*h.get_ref()),
                None => liveness::DEFAULT_HOLDDOWN,
            };
            let spec = c.spec(source)?;
            let emulation = match &c.emulation {
                Some(e) => Some(
                    e.model(mtu)
                        .map(|m| (m, e.seed.unwrap_or(1)))
                        .map_err(|m| source.error_for(&c.name, format!("emulation: {m}")))?,
                ),
                None => None,
            };
            let options = LinkOptions {
                mtu,
                cost: c.cost.as_ref().map(|c| *c.get_ref()),
                holddown,
                offload: c.offload.as_ref().is_none_or(|o| *o.get_ref()),
                buffer: SOCKET_BUFFER,
                emulation,
            };
            links.push(Link::open(name, &spec, &options, origin).await?);
        }
        Ok(Links {
            links,
            next: 0,
            events: VecDeque::new(),
        })
    }

    /// No links yet (add them with [`add`](Links::add)).
    pub fn new() -> Links {
        Links {
            links: Vec::new(),
            next: 0,
            events: VecDeque::new(),
        }
    }

    /// Opens one more link, `name` to `spec`, as interface [`len`](Links::len); emulated
    /// time counts from `origin`. What a daemon whose links come from flags (not a
    /// `[[link]]` section) calls.
    ///
    /// # Errors
    ///
    /// A second link of that name, an MTU out of 68..=65535, an address that cannot be
    /// bound, a TUN device that cannot be made: each names the link.
    pub async fn add(
        &mut self,
        name: &str,
        spec: &LinkSpec,
        options: &LinkOptions,
        origin: Instant,
    ) -> anyhow::Result<usize> {
        if self.index_of(name).is_some() {
            anyhow::bail!("a second link named `{name}`");
        }
        if !(68..=65_535).contains(&options.mtu) {
            anyhow::bail!("link `{name}`: MTU {} not in 68..=65535", options.mtu);
        }
        let link = Link::open(name.to_string(), spec, options, origin).await?;
        self.links.push(link);
        Ok(self.links.len() - 1)
    }

    /// The links, by interface number.
    pub fn iter(&self) -> impl Iterator<Item = &Link> {
        self.links.iter()
    }

    /// Link `iface`.
    pub fn get(&self, iface: usize) -> Option<&Link> {
        self.links.get(iface)
    }

    /// How many links.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The interface of the link named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }

    /// Polls every link once, starting after the one that last delivered, and reads one
    /// batch from the first that has something: `Ready(iface)` with [`Batch::frames`] holding
    /// what it delivered (possibly nothing: a receive error or only drops, each counted;
    /// after a refusal, see [`poll_event`](Links::poll_event)).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut Batch) -> Poll<usize> {
        let n = self.links.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let Some(link) = self.links.get_mut(i) else {
                continue;
            };
            if let Poll::Ready(r) = link.poll_batch(cx, batch) {
                self.next = (i + 1) % n;
                if link.took(&r, batch) {
                    self.changed(i);
                }
                if r.is_err() {
                    batch.clear();
                }
                return Poll::Ready(i);
            }
        }
        Poll::Pending
    }

    /// Waits for the next batch from any link (see [`poll_recv`](Links::poll_recv)): the
    /// interface it came from, its frames in `batch`.
    pub async fn recv(&mut self, batch: &mut Batch) -> usize {
        if self.links.is_empty() {
            return std::future::pending().await;
        }
        poll_fn(|cx| self.poll_recv(cx, batch)).await
    }

    /// Receives one batch from link `iface` if anything waits (recvmmsg with GRO, or a TUN
    /// read split by its offload): what the kernel handed over and what was dropped; the
    /// frames are in [`Batch::frames`]. Call it for each link in turn to drain a busy
    /// moment fairly: one batch per link per turn. It asks the kernel directly (one system
    /// call on an idle link), not tokio's cached readiness, which a task kept busy would
    /// not see refreshed; after a long turn, yield to the runtime
    /// (`tokio::task::yield_now`) so timers and other tasks run.
    ///
    /// # Errors
    ///
    /// The link's error; `WouldBlock` when nothing waits; `NotFound` for no such link.
    pub fn try_recv_batch(&mut self, iface: usize, batch: &mut Batch) -> io::Result<Fill> {
        batch.clear();
        let link = self
            .links
            .get_mut(iface)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let r = link.read_batch(batch, true);
        if link.took(&r, batch) {
            self.changed(iface);
        }
        if r.is_err() {
            batch.clear();
        }
        r
    }

    /// Queues `frame` for link `iface`'s peer (a TUN link: the kernel) at `now`, through
    /// its emulation if it has one. Nothing is sent before [`flush`](Links::flush) (or a
    /// queue grown past its bound).
    #[inline]
    pub fn send(&mut self, iface: usize, frame: &[u8], now: Instant) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        if link.queue(None, frame, now) {
            self.changed(iface);
        }
    }

    /// Sends `region` on link `iface` to its peer as the run of datagrams it holds (all
    /// `stride` bytes long but the last): a GRO run received, rewritten in place and
    /// forwarded unchanged in length leaves as the run it came in as, without a copy. What
    /// the link had queued goes first (order is kept). A TUN or emulated link, or a region
    /// the socket cannot send as one run, takes the datagrams one by one through
    /// [`send`](Links::send).
    pub fn send_run(&mut self, iface: usize, region: &[u8], stride: usize, now: Instant) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        let stride = stride.max(1);
        let direct = matches!(link.io, Io::Udp { peer: Some(_), .. })
            && link.emulator.is_none()
            && region.len() > stride
            && region.len() <= MAX_RUN_BYTES
            && region.len().div_ceil(stride) <= link.max_segments();
        let mut changed = false;
        if direct {
            changed |= link.flush();
            changed |= link.send_direct(region, stride);
        } else {
            for d in region.chunks(stride) {
                changed |= link.queue(None, d, now);
            }
        }
        if changed {
            self.changed(iface);
        }
    }

    /// Queues `frame` for `dest` on UDP link `iface` (a link to many peers), as
    /// [`send`](Links::send) does.
    pub fn send_to(&mut self, iface: usize, dest: SocketAddr, frame: &[u8], now: Instant) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        if link.queue(Some(dest), frame, now) {
            self.changed(iface);
        }
    }

    /// Sends every link's queue: GSO runs and `sendmmsg` on UDP, coalesced writes on TUN.
    /// Call at the end of each turn (after a batch and its core's output). Never blocks.
    pub fn flush(&mut self) {
        for i in 0..self.links.len() {
            if self.links.get_mut(i).is_some_and(Link::flush) {
                self.changed(i);
            }
        }
    }

    /// Queues the event of link `iface`'s new state after a refusal (down) or a datagram
    /// from the peer (up).
    #[cold]
    fn changed(&mut self, iface: usize) {
        if let Some(l) = self.links.get(iface) {
            let up = l.is_up();
            let cause = if up { Cause::Heard } else { Cause::Refused };
            self.events.push_back(LinkEvent { iface, up, cause });
        }
    }

    /// The next change of a link's state, oldest first: a link went down (its peer
    /// refused) or came up (its peer was heard, or its hold-down ended). Call after
    /// receiving, sending and [`retry_due`](Links::retry_due); each change is reported once.
    #[inline]
    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    /// Whether a change waits in [`poll_event`](Links::poll_event).
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// When a down link's hold-down next ends.
    pub fn next_retry(&self) -> Option<Instant> {
        self.links.iter().filter_map(|l| l.live.retry_at()).min()
    }

    /// Brings up every down link whose hold-down is over at `now` (each reported by
    /// [`poll_event`](Links::poll_event)), so traffic tries its peer again.
    pub fn retry_due(&mut self, now: Instant) {
        for i in 0..self.links.len() {
            if self.links.get_mut(i).is_some_and(|l| l.live.retry_due(now)) {
                self.events.push_back(LinkEvent {
                    iface: i,
                    up: true,
                    cause: Cause::Retry,
                });
            }
        }
    }

    /// When an emulated link next has a frame due.
    pub fn next_due(&self) -> Option<Instant> {
        self.links
            .iter()
            .filter_map(|l| l.emulator.as_ref().and_then(Emulator::next_due))
            .min()
    }

    /// Captures every link's frames, both ways, exactly as on the wire, into
    /// `DIR/PREFIX-LINK.pcap` (LINKTYPE_RAW: plain IP packets; the waist shims 0xF1/0xF2
    /// show as non-IP until a dissector knows them).
    ///
    /// # Errors
    ///
    /// A file that cannot be created.
    pub fn capture(&mut self, dir: &std::path::Path, prefix: &str) -> anyhow::Result<()> {
        for link in &mut self.links {
            let path = dir.join(format!("{prefix}-{}.pcap", link.name));
            link.pcap = Some(crate::pcap::PcapWriter::create(&path)?);
        }
        Ok(())
    }

    /// Flushes every capture (call once a second and at shutdown).
    pub fn flush_captures(&mut self) {
        for link in &mut self.links {
            if let Some(p) = &mut link.pcap
                && let Err(e) = p.flush()
            {
                tracing::warn!(link = %link.name, "pcap flush failed: {e}");
            }
        }
    }

    /// The capture files, with the packets each holds.
    pub fn captures(&self) -> impl Iterator<Item = (&std::path::Path, u64)> {
        self.links
            .iter()
            .filter_map(|l| l.pcap.as_ref().map(|p| (p.path(), p.packets())))
    }

    /// Queues every emulated frame due at `now` and flushes.
    pub fn send_due(&mut self, now: Instant) {
        for i in 0..self.links.len() {
            let Some(link) = self.links.get_mut(i) else {
                continue;
            };
            let mut changed = false;
            while let Some(f) = link.emulator.as_mut().and_then(|e| e.pop_due(now)) {
                changed |= link.enqueue(None, &f);
            }
            changed |= link.flush();
            if changed {
                self.changed(i);
            }
        }
    }
}

impl Link {
    /// The link's counters as metrics samples named `PREFIX_link_…` and labelled
    /// `link=NAME`: traffic both ways (frames, bytes, system calls), receive drops by
    /// reason, send drops (`tx_full`, `tx_errors`), refusals, whether it is up, and its
    /// emulation's losses if emulated. Every daemon renders its links with this at each
    /// scrape (`waist` for the router, `trickles` for trickles-web).
    pub fn samples(&self, prefix: &str) -> Vec<crate::metrics::Sample> {
        use crate::metrics::Sample;
        let c = self.counters;
        let link = self.name.as_str();
        let counter = |name: &str, help: &str, v: u64| {
            Sample::counter(format!("{prefix}_link_{name}"), help, v as f64)
                .with_label("link", link)
        };
        let mut out: Vec<Sample> = [
            ("rx_frames", "frames received on the link", c.rx_frames),
            ("rx_bytes", "bytes received on the link", c.rx_bytes),
            ("rx_errors", "receive errors on the link", c.rx_errors),
            (
                "rx_calls",
                "receive system calls that returned data (recvmmsg, TUN reads)",
                c.rx_calls,
            ),
            (
                "tx_calls",
                "send batches made (sendmsg of a GSO run, sendmmsg, a TUN batch write)",
                c.tx_calls,
            ),
            ("tx_frames", "frames sent on the link", c.tx_frames),
            ("tx_bytes", "bytes sent on the link", c.tx_bytes),
            ("tx_full", "frames dropped: the socket was full", c.tx_full),
            ("tx_errors", "send errors on the link", c.tx_errors),
            (
                "refused",
                "sends and receives refused: the peer's port was closed",
                c.refused,
            ),
        ]
        .into_iter()
        .map(|(name, help, v)| counter(name, help, v))
        .collect();
        for (reason, v) in c.rx_drops() {
            out.push(
                counter(
                    "rx_dropped",
                    "received frames dropped at the link (counted in rx_frames), by reason",
                    v,
                )
                .with_label("reason", reason),
            );
        }
        out.push(
            Sample::gauge(
                format!("{prefix}_link_up"),
                "1 while the link's peer is thought to be there, 0 while it is down",
                if self.is_up() { 1.0 } else { 0.0 },
            )
            .with_label("link", link),
        );
        if let Some(e) = self.emulation() {
            out.push(counter(
                "emulated_lost",
                "frames the emulated link lost",
                e.lost,
            ));
            out.push(counter(
                "emulated_duplicated",
                "frames the emulated link duplicated",
                e.duplicated,
            ));
        }
        out
    }
}

/// Socket buffers a UDP link asks for (the kernel caps them at `net.core.{r,w}mem_max`).
pub const SOCKET_BUFFER: usize = 4 << 20;

/// A non-blocking UDP socket bound to `addr` with `buffer` bytes of send and receive
/// buffer asked for.
pub(crate) fn udp_socket(addr: SocketAddr, buffer: usize) -> io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    let _ = s.set_recv_buffer_size(buffer);
    let _ = s.set_send_buffer_size(buffer);
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    UdpSocket::from_std(s.into())
}
