//! One link: its socket or device, its send queue, emulation, capture and liveness.

use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use super::batch::{Batch, Fill};
use super::liveness::{self, Liveness};
use super::spec::LinkSpec;
use super::tun::{TunIo, open_tun_with};
use super::tx::{self, Sent, TxQueue};
use super::{LinkCounters, SHIM_ROOM};
use crate::config::LinkKind;
use crate::emulate::Emulator;

/// Frames queued on one link before it is flushed on its own, whatever the caller's turn.
const MAX_QUEUED: usize = 1024;

pub(super) enum Io {
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
    pub(super) name: String,
    pub(super) kind: LinkKind,
    pub(super) io: Io,
    pub(super) mtu: usize,
    pub(super) cost: Option<u16>,
    pub(super) emulator: Option<Emulator>,
    pub(super) counters: LinkCounters,
    pub(super) local: Option<SocketAddr>,
    pub(super) pcap: Option<crate::pcap::PcapWriter>,
    pub(super) live: Liveness,
    pub(super) tx: TxQueue,
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

/// How to open a link beside where it goes ([`Links::add`](super::Links::add)).
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
    pub(super) async fn open(
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

    /// The receive buffer the kernel gave a UDP link's socket, in bytes as it accounts
    /// them (about twice what was asked for, capped by `net.core.rmem_max`); `None` for a
    /// TUN link. A receiver that lets more arrive at once than this holds loses the rest.
    pub fn recv_buffer(&self) -> Option<usize> {
        match &self.io {
            Io::Udp { sock, .. } => socket2::SockRef::from(sock).recv_buffer_size().ok(),
            Io::Tun(_) => None,
        }
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
    pub(super) fn limit(&self) -> usize {
        self.mtu + SHIM_ROOM
    }

    /// Counts error `e` (received if `rx`, else sent); whether it took the link down.
    pub(super) fn failed(&mut self, e: &io::Error, rx: bool) -> bool {
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
    pub(super) fn poll_batch(
        &mut self,
        cx: &mut Context<'_>,
        batch: &mut Batch,
    ) -> Poll<io::Result<Fill>> {
        loop {
            let ready = match &self.io {
                Io::Udp { sock, .. } => sock.poll_recv_ready(cx),
                Io::Tun(t) => t.dev.poll_readable(cx),
            };
            match ready {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => match self.read_batch(batch) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    r => return Poll::Ready(r),
                },
            }
        }
    }

    /// One batched receive if something waits (`WouldBlock` if not), through tokio's
    /// readiness: a link the reactor last saw empty costs no system call. That readiness is
    /// refreshed when the task yields to the runtime, so a task kept busy by one flooded
    /// link must yield after each full turn (waist-router does) for the others to be seen.
    pub(super) fn read_batch(&mut self, batch: &mut Batch) -> io::Result<Fill> {
        let limit = self.limit();
        match &mut self.io {
            Io::Udp { sock, state, .. } => batch.fill_udp(limit, |slices, meta| {
                let (sock, state) = (&*sock, &*state);
                sock.try_io(tokio::io::Interest::READABLE, || {
                    state.recv(sock.into(), slices, meta)
                })
            }),
            Io::Tun(t) => t.try_recv_batch(batch, limit),
        }
    }

    /// Counts, captures and notes the peer after a receive; whether the link came up.
    pub(super) fn took(&mut self, r: &io::Result<Fill>, batch: &mut Batch) -> bool {
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
    pub(super) fn queue(&mut self, dest: Option<SocketAddr>, frame: &[u8], now: Instant) -> bool {
        // The emulation models one peer: frames to others skip it.
        if self.emulator.is_some()
            && (dest.is_none() || dest == self.peer())
            && let Some(e) = &mut self.emulator
        {
            e.send(now, frame);
            return false;
        }
        self.enqueue(dest, frame)
    }

    /// [`queue`](Link::queue) for the frame made of `parts`: a UDP link without emulation
    /// gathers them straight into its send queue; otherwise they are joined first.
    pub(super) fn queue_parts(
        &mut self,
        dest: Option<SocketAddr>,
        parts: &[&[u8]],
        now: Instant,
    ) -> bool {
        match &mut self.io {
            Io::Udp { .. } if self.emulator.is_none() => {
                self.tx.push_parts(dest, parts);
                self.tx.len() >= MAX_QUEUED && self.flush()
            }
            _ => {
                let frame = parts.concat();
                self.queue(dest, &frame, now)
            }
        }
    }

    /// Puts `frame` on the send queue; flushes a queue grown past its bound (whether a
    /// refusal took the link down).
    #[inline]
    pub(super) fn enqueue(&mut self, dest: Option<SocketAddr>, frame: &[u8]) -> bool {
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
    pub(super) fn send_direct(&mut self, region: &[u8], stride: usize) -> bool {
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
    pub(super) fn flush(&mut self) -> bool {
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
pub(super) fn capture(pcap: &mut Option<crate::pcap::PcapWriter>, name: &str, frame: &[u8]) {
    if let Some(p) = pcap
        && let Err(e) = p.write(std::time::SystemTime::now(), frame)
    {
        tracing::warn!(link = %name, "pcap capture stopped: {e}");
        *pcap = None;
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

/// The local IP address the system would use towards `peer` (a route lookup: a UDP socket
/// connected to it, nothing sent).
///
/// # Errors
///
/// No route to `peer`, or no socket.
pub fn local_ip_towards(peer: SocketAddr) -> io::Result<std::net::IpAddr> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let any: IpAddr = match peer {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let probe = std::net::UdpSocket::bind((any, 0))?;
    probe.connect(peer)?;
    Ok(probe.local_addr()?.ip())
}

/// Whether `ip` is assigned to a local interface that is up: listed by getifaddrs(3) on
/// an interface with IFF_UP, and a UDP socket binds `ip:0` (so an IPv6 address still in
/// duplicate address detection does not count yet).
///
/// Up, because the address's connected route comes with it: a daemon that connects its
/// link socket to the peer's address at once would otherwise fail with "network is
/// unreachable" (containerlab may add an address before it sets the link up). The bind
/// alone is not enough: in a namespace where no address was ever configured (not even
/// loopback's) the kernel has no local routing table yet and lets any address be bound.
pub fn address_assigned(ip: std::net::IpAddr) -> bool {
    use nix::net::if_::InterfaceFlags;
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return false;
    };
    let listed = addrs
        .filter(|a| a.flags.contains(InterfaceFlags::IFF_UP))
        .filter_map(|a| a.address)
        .any(|sa| match ip {
            std::net::IpAddr::V4(v4) => sa.as_sockaddr_in().is_some_and(|s| s.ip() == v4),
            std::net::IpAddr::V6(v6) => sa.as_sockaddr_in6().is_some_and(|s| s.ip() == v6),
        });
    listed && std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}
