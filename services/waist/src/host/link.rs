//! [`HostLink`]: whole IP packets to and from a router, over an IP-in-UDP link or the
//! kernel's raw IPv4 sockets.
//!
//! On a UDP link one datagram is one link frame (`waist_node::frame`): the host sends plain
//! IP packets and takes plain ones back (a labelled packet's label is dropped; routing
//! messages are not for hosts and are skipped). In raw mode the packet is handed to the
//! kernel with `IPPROTO_RAW` (header included, IPv4) and answers are read from a raw socket
//! of the one IP protocol the tool expects (253 ESP, 254 SNAP, 17 for a piggybacked query).

use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::io::unix::AsyncFd;
use tokio::net::UdpSocket;
use tokio::time::Instant;
use waist_node::frame::Frame;

use super::Via;

/// The largest frame a link carries.
const MAX_FRAME: usize = waist_node::MAX_FRAME;

/// A host's link to its router. See the [module docs](self).
#[derive(Debug)]
pub struct HostLink {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Udp(UdpSocket),
    Raw { send: Socket, recv: AsyncFd<Socket> },
}

impl HostLink {
    /// Opens the link `via` says; in raw mode answers are read for IP protocol `protocol`.
    ///
    /// # Errors
    ///
    /// If the socket cannot be bound (address in use, raw sockets without root).
    pub async fn open(via: Via, protocol: u8) -> anyhow::Result<HostLink> {
        match via {
            Via::Udp { local, peer } => HostLink::udp(local, peer).await,
            Via::Raw => HostLink::raw(protocol),
        }
    }

    /// An IP-in-UDP link: binds `local` and exchanges datagrams with `peer` only.
    ///
    /// # Errors
    ///
    /// If `local` cannot be bound or `peer` not connected to.
    pub async fn udp(local: SocketAddr, peer: SocketAddr) -> anyhow::Result<HostLink> {
        let s = UdpSocket::bind(local)
            .await
            .with_context(|| format!("binding the link's local address {local}"))?;
        s.connect(peer)
            .await
            .with_context(|| format!("connecting the link to {peer}"))?;
        Ok(HostLink { kind: Kind::Udp(s) })
    }

    /// The kernel's IPv4 stack: sends with `IPPROTO_RAW`, receives IP protocol `protocol`.
    /// Needs root (or `CAP_NET_RAW`).
    ///
    /// # Errors
    ///
    /// If a raw socket cannot be opened.
    pub fn raw(protocol: u8) -> anyhow::Result<HostLink> {
        let raw = |p: i32| {
            Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(p)))
                .with_context(|| format!("opening a raw IPv4 socket of protocol {p} (root?)"))
        };
        // IPPROTO_RAW (255) implies IP_HDRINCL: we hand the kernel whole packets.
        let send = raw(255)?;
        let recv = raw(i32::from(protocol))?;
        recv.set_nonblocking(true)?;
        // `AsyncFd::new` is deprecated for types that do not own their descriptor (it could
        // be closed while registered); `Socket` owns its descriptor and lives inside the
        // `AsyncFd` until it is deregistered, and the replacement (`register`) is `unsafe`,
        // which the workspace forbids.
        #[allow(deprecated)]
        let recv = AsyncFd::new(recv)?;
        Ok(HostLink {
            kind: Kind::Raw { send, recv },
        })
    }

    /// Our local link address (UDP mode).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.kind {
            Kind::Udp(s) => s.local_addr().ok(),
            Kind::Raw { .. } => None,
        }
    }

    /// Sends one whole IP packet.
    ///
    /// # Errors
    ///
    /// If the socket refuses it (in raw mode also if it is not an IPv4 packet).
    pub async fn send(&self, packet: &[u8]) -> anyhow::Result<()> {
        match &self.kind {
            Kind::Udp(s) => {
                s.send(packet).await.context("sending on the UDP link")?;
            }
            Kind::Raw { send, .. } => {
                let h = waist_ip::IpHeader::parse(packet).context("not an IP packet")?;
                let IpAddr::V4(dst) = h.dst else {
                    bail!("raw mode sends IPv4 packets only");
                };
                send.send_to(packet, &SockAddr::from(SocketAddr::from((dst, 0))))
                    .context("sending on the raw socket")?;
            }
        }
        Ok(())
    }

    /// Receives the next IP packet into `buf` (of at least [`waist_node::MAX_FRAME`]
    /// bytes) and returns where it lies, or `None` at `deadline`.
    ///
    /// # Errors
    ///
    /// If the socket fails (a refused UDP send, reported here when the router is not up
    /// yet, is not an error: the wait goes on).
    pub async fn recv_until(
        &self,
        buf: &mut [u8],
        deadline: Instant,
    ) -> anyhow::Result<Option<Range<usize>>> {
        loop {
            let n = match tokio::time::timeout_at(deadline, self.recv_frame(buf)).await {
                Err(_) => return Ok(None),
                Ok(Err(e)) if e.kind() == ErrorKind::ConnectionRefused => continue,
                Ok(r) => r.context("receiving on the link")?,
            };
            let frame = buf.get(..n).ok_or_else(|| anyhow!("short read"))?;
            let packet = match Frame::parse(frame) {
                Ok(Frame::Ip(p)) => p,
                Ok(Frame::Labelled { packet, .. }) => packet,
                Ok(Frame::Routing(_)) | Err(_) => continue,
            };
            let start = n - packet.len();
            return Ok(Some(start..n));
        }
    }

    /// [`recv_until`](Self::recv_until) `timeout` from now.
    ///
    /// # Errors
    ///
    /// As [`recv_until`](Self::recv_until).
    pub async fn recv_timeout(
        &self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> anyhow::Result<Option<Range<usize>>> {
        self.recv_until(buf, Instant::now() + timeout).await
    }

    async fn recv_frame(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &self.kind {
            Kind::Udp(s) => s.recv(buf).await,
            Kind::Raw { recv, .. } => loop {
                let mut guard = recv.readable().await?;
                match guard.try_io(|fd| fd.get_ref().read(buf)) {
                    Ok(r) => return r,
                    Err(_would_block) => continue,
                }
            },
        }
    }
}

/// A receive buffer for [`HostLink::recv_until`].
pub fn buffer() -> Vec<u8> {
    vec![0u8; MAX_FRAME]
}
