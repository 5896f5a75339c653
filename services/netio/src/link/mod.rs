//! Links: IP-in-UDP to one peer, or a TUN device, polled together by one task.
//!
//! A daemon's core is one task: it awaits [`Links::recv`] (whichever link has a frame,
//! round-robin so none starves), drains what else is ready with [`Links::try_recv`], hands
//! frames to its core, and sends what the core returns with [`Links::send`], which never
//! blocks: a link whose socket is full drops the frame and counts it, as a router's output
//! queue does. Emulated links hold frames until they are due ([`Links::next_due`],
//! [`Links::send_due`]).
//!
//! * **UDP**: a socket bound to `local` and connected to `peer`, so only the peer's
//!   datagrams arrive; one frame per datagram (`waist_node::frame`). A peer whose port is
//!   closed makes the kernel refuse a send or a receive (ICMP port unreachable, at once on
//!   loopback): the refusal is counted (`refused`) and takes the link *down*; any datagram
//!   from the peer brings it *up*, and a down link is tried again after its hold-down
//!   (`holddown_ms`, default 1 s). Changes of state wait in [`Links::poll_event`], the
//!   hold-down's end in [`Links::next_retry`] / [`Links::retry_due`] (see [`liveness`]).
//! * **TUN**: a device created (or opened) by name, given its addresses and MTU, offloads
//!   off; it carries plain IP packets to and from the host's kernel. Needs root.

mod batch;
pub mod liveness;
#[cfg(test)]
mod tests;
mod tun;

pub use batch::{BATCH, Batch};
pub use liveness::{Cause, LinkEvent};
pub use tun::{AsyncDevice, netns_unsupported, open_tun, parse_cidr};

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::ReadBuf;
use tokio::net::UdpSocket;

use crate::config::{ConfigError, LinkConfig, LinkKind, Source};
use crate::emulate::Emulator;
use liveness::Liveness;

/// What a link counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Receive errors other than refusals.
    pub rx_errors: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames dropped because the socket or device was full.
    pub tx_full: u64,
    /// Other send errors.
    pub tx_errors: u64,
    /// Sends and receives the kernel refused because the peer's port is closed (ICMP port
    /// unreachable): each takes the link down (or keeps it down).
    pub refused: u64,
}

enum Io {
    Udp(UdpSocket),
    /// A UDP socket read in batches (recvmmsg, GRO) through quinn-udp.
    UdpBatch(UdpSocket, quinn_udp::UdpSocketState),
    Tun(tun_rs::AsyncDevice),
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

impl Link {
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

    /// A datagram arrived: the peer is there. Whether the link came up.
    #[inline]
    fn heard(&mut self) -> bool {
        self.live.heard()
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

    /// The emulated link's counters, if it is emulated.
    pub fn emulation(&self) -> Option<netsim::LinkStats> {
        self.emulator.as_ref().map(Emulator::stats)
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        match &self.io {
            Io::Udp(s) => {
                let mut rb = ReadBuf::new(buf);
                match s.poll_recv(cx, &mut rb) {
                    Poll::Ready(Ok(())) => Poll::Ready(Ok(rb.filled().len())),
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            }
            Io::UdpBatch(s, _) => {
                // One datagram now; the caller drains the rest in batches.
                let mut rb = ReadBuf::new(buf);
                match s.poll_recv(cx, &mut rb) {
                    Poll::Ready(Ok(())) => Poll::Ready(Ok(rb.filled().len())),
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            }
            Io::Tun(d) => loop {
                match d.poll_readable(cx) {
                    Poll::Ready(Ok(())) => match d.try_recv(buf) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                        r => return Poll::Ready(r),
                    },
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            },
        }
    }

    fn try_recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.io {
            Io::Udp(s) | Io::UdpBatch(s, _) => s.try_recv(buf),
            Io::Tun(d) => d.try_recv(buf),
        }
    }

    /// Whether this link reads in batches.
    pub fn batched(&self) -> bool {
        matches!(self.io, Io::UdpBatch(..))
    }

    /// Counts and captures a frame just received into `buf[..len]`.
    fn received(&mut self, buf: &[u8], len: usize) {
        self.counters.rx_frames += 1;
        self.counters.rx_bytes += len as u64;
        if let Some(f) = buf.get(..len) {
            self.capture(f);
        }
    }

    /// Records `frame` in the link's capture, if it has one (a failing capture is closed).
    fn capture(&mut self, frame: &[u8]) {
        if let Some(p) = &mut self.pcap
            && let Err(e) = p.write(std::time::SystemTime::now(), frame)
        {
            tracing::warn!(link = %self.name, "pcap capture stopped: {e}");
            self.pcap = None;
        }
    }

    /// Sends `frame` now; whether a refusal took the link down.
    fn send_now(&mut self, frame: &[u8]) -> bool {
        let r = match &self.io {
            Io::Udp(s) | Io::UdpBatch(s, _) => s.try_send(frame),
            Io::Tun(d) => d.try_send(frame),
        };
        match r {
            Ok(_) => {
                self.counters.tx_frames += 1;
                self.counters.tx_bytes += frame.len() as u64;
                self.capture(frame);
                false
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.counters.tx_full += 1;
                false
            }
            Err(e) => self.failed(&e, false),
        }
    }
}

/// The links of a daemon. See the [module docs](self).
#[derive(Debug)]
pub struct Links {
    links: Vec<Link>,
    next: usize,
    events: VecDeque<LinkEvent>,
}

fn parse_addr(source: &Source, v: &toml::Spanned<String>) -> Result<SocketAddr, ConfigError> {
    v.get_ref()
        .parse()
        .map_err(|e| source.error_for(v, format!("not a socket address: {e}")))
}

impl Links {
    /// Opens every link of `configs` (binding sockets, creating TUN devices), numbering
    /// them in order: link `i` is the core's interface `i`. Emulated links count time from
    /// `origin`.
    ///
    /// # Errors
    ///
    /// A located [`ConfigError`] for a bad or missing field; an I/O error (address in use,
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
                Some(h) if *c.kind.get_ref() == LinkKind::Tun => {
                    return Err(source
                        .error_for(h, "a tun link is always up: no hold-down")
                        .into());
                }
                Some(h) => Duration::from_millis(*h.get_ref()),
                None => liveness::DEFAULT_HOLDDOWN,
            };
            let (io, local) = match c.kind.get_ref() {
                LinkKind::Udp => {
                    let (Some(l), Some(p)) = (&c.local, &c.peer) else {
                        return Err(source
                            .error_for(&c.kind, "a udp link needs `local` and `peer`")
                            .into());
                    };
                    let (local, peer) = (parse_addr(source, l)?, parse_addr(source, p)?);
                    let sock = UdpSocket::bind(local)
                        .await
                        .map_err(|e| anyhow::anyhow!("link `{name}`: cannot bind {local}: {e}"))?;
                    sock.connect(peer).await.map_err(|e| {
                        anyhow::anyhow!("link `{name}`: cannot connect to {peer}: {e}")
                    })?;
                    let local = sock.local_addr().ok();
                    if c.batch {
                        let state =
                            quinn_udp::UdpSocketState::new((&sock).into()).map_err(|e| {
                                anyhow::anyhow!("link `{name}`: cannot set up batched receive: {e}")
                            })?;
                        (Io::UdpBatch(sock, state), local)
                    } else {
                        (Io::Udp(sock), local)
                    }
                }
                LinkKind::Tun => {
                    let Some(dev) = &c.device else {
                        return Err(source
                            .error_for(&c.kind, "a tun link needs `device`")
                            .into());
                    };
                    let mut addrs = Vec::with_capacity(c.addresses.len());
                    for a in &c.addresses {
                        addrs.push(parse_cidr(a.get_ref()).map_err(|m| source.error_for(a, m))?);
                    }
                    let d = open_tun(dev.get_ref(), &addrs, mtu)
                        .map_err(|e| anyhow::anyhow!("link `{name}`: {e}"))?;
                    (Io::Tun(d), None)
                }
            };
            let emulator = match &c.emulation {
                Some(e) => {
                    let model = e
                        .model(mtu)
                        .map_err(|m| source.error_for(&c.name, format!("emulation: {m}")))?;
                    Some(Emulator::new(model, e.seed.unwrap_or(1), origin))
                }
                None => None,
            };
            links.push(Link {
                name,
                kind: *c.kind.get_ref(),
                io,
                mtu,
                cost: c.cost.as_ref().map(|c| *c.get_ref()),
                emulator,
                counters: LinkCounters::default(),
                local,
                pcap: None,
                live: Liveness::new(holddown),
            });
        }
        Ok(Links {
            links,
            next: 0,
            events: VecDeque::new(),
        })
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

    /// Polls every link once, starting after the one that last delivered, for a frame.
    /// Errors come back with their interface (the caller counts and goes on).
    pub fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<(usize, io::Result<usize>)> {
        let n = self.links.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let Some(link) = self.links.get_mut(i) else {
                continue;
            };
            if let Poll::Ready(r) = link.poll_recv(cx, buf) {
                self.next = (i + 1) % n;
                let changed = match &r {
                    Ok(len) => {
                        link.received(buf, *len);
                        link.heard()
                    }
                    Err(e) => link.failed(e, true),
                };
                if changed {
                    self.changed(i);
                }
                return Poll::Ready((i, r));
            }
        }
        Poll::Pending
    }

    /// The next frame from any link: `(interface, bytes received)`.
    pub async fn recv(&mut self, buf: &mut [u8]) -> (usize, io::Result<usize>) {
        if self.links.is_empty() {
            return std::future::pending().await;
        }
        poll_fn(|cx| self.poll_recv(cx, buf)).await
    }

    /// A frame from link `iface` if one is waiting now (`WouldBlock` if not).
    ///
    /// # Errors
    ///
    /// The link's error; `WouldBlock` when nothing waits; `NotFound` for no such link.
    pub fn try_recv(&mut self, iface: usize, buf: &mut [u8]) -> io::Result<usize> {
        let link = self
            .links
            .get_mut(iface)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let r = link.try_recv(buf);
        let changed = match &r {
            Ok(len) => {
                link.received(buf, *len);
                link.heard()
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            Err(e) => link.failed(e, true),
        };
        if changed {
            self.changed(iface);
        }
        r
    }

    /// Receives a batch from link `iface` if it reads in batches and datagrams wait
    /// (recvmmsg, GRO): the number of datagrams, read from [`Batch::frames`]. Links that do
    /// not batch answer `WouldBlock`; the caller uses [`try_recv`](Links::try_recv) for them.
    ///
    /// # Errors
    ///
    /// The link's error; `WouldBlock` when nothing waits.
    pub fn try_recv_batch(&mut self, iface: usize, batch: &mut Batch) -> io::Result<usize> {
        batch.filled = 0;
        let link = self
            .links
            .get_mut(iface)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let Io::UdpBatch(sock, state) = &link.io else {
            return Err(io::ErrorKind::WouldBlock.into());
        };
        let Batch { bufs, meta, .. } = batch;
        let r = sock.try_io(tokio::io::Interest::READABLE, || {
            let mut it = bufs.iter_mut();
            let mut slices: [std::io::IoSliceMut<'_>; BATCH] = std::array::from_fn(|_| {
                std::io::IoSliceMut::new(it.next().map_or(&mut [][..], |b| &mut b[..]))
            });
            state.recv(sock.into(), &mut slices, meta)
        });
        match r {
            Ok(n) => {
                batch.filled = n;
                let mut datagrams = 0;
                for m in batch.meta.iter().take(n) {
                    let k = m.len.div_ceil(m.stride.max(1));
                    datagrams += k;
                    link.counters.rx_bytes += m.len as u64;
                }
                link.counters.rx_frames += datagrams as u64;
                if link.pcap.is_some() {
                    for f in batch.frames() {
                        link.capture(f);
                    }
                }
                if datagrams > 0 && link.heard() {
                    self.changed(iface);
                }
                Ok(datagrams)
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::WouldBlock && link.failed(&e, true) {
                    self.changed(iface);
                }
                Err(e)
            }
        }
    }

    /// Sends `frame` on link `iface` at `now` — through its emulation if it has one. Never
    /// blocks: a full socket drops the frame (counted).
    pub fn send(&mut self, iface: usize, frame: &[u8], now: Instant) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        let changed = match &mut link.emulator {
            Some(e) => {
                e.send(now, frame);
                false
            }
            None => link.send_now(frame),
        };
        if changed {
            self.changed(iface);
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

    /// Sends every emulated frame due at `now`.
    pub fn send_due(&mut self, now: Instant) {
        for i in 0..self.links.len() {
            let Some(link) = self.links.get_mut(i) else {
                continue;
            };
            let mut changed = false;
            while let Some(f) = link.emulator.as_mut().and_then(|e| e.pop_due(now)) {
                changed |= link.send_now(&f);
            }
            if changed {
                self.changed(i);
            }
        }
    }
}
