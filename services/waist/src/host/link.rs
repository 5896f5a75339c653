//! [`HostLink`]: whole IP packets to and from a router, over an IP-in-UDP link or the
//! kernel's raw IPv4 sockets. Both are netio's: this module holds no socket code.
//!
//! ```text
//!  UDP: send ─► netio::link::Links (one link, udp:LOCAL=PEER) queue + flush ─► router
//!       recv ◄─ recvmmsg + GRO, a run split into its frames (Batch::frames) ◄─ router
//!  raw: send ─► netio::raw::RawIp (IPPROTO_RAW) ─► kernel; recv ◄─ raw socket of one protocol
//! ```
//!
//! On a UDP link one datagram is one link frame (`waist_node::frame`): the host sends plain
//! IP packets and takes plain ones back (a labelled packet's label is dropped; routing
//! messages are not for hosts and are skipped). The link is netio's, so a GRO run the
//! router sent as one GSO burst arrives as its separate frames, and the link counts what it
//! received and dropped ([`HostLink::counters`]). In raw mode the packet is handed to the
//! kernel with `IPPROTO_RAW` (header included, IPv4) and answers are read from a raw socket
//! of the one IP protocol the tool expects (253 ESP, 254 SNAP, 17 for a piggybacked query).

use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use netio::link::{Batch, LinkCounters, LinkOptions, LinkSpec, Links};
use netio::raw::RawIp;
use tokio::time::Instant;
use waist_node::frame::Frame;

use super::Via;

/// The largest frame a link carries.
const MAX_FRAME: usize = waist_node::MAX_FRAME;

/// The host's one link in its [`Links`].
const IFACE: usize = 0;

/// A host's link to its router. See the [module docs](self).
#[derive(Debug)]
pub struct HostLink {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Udp {
        links: Links,
        /// The last batch received, handed out one frame at a time.
        batch: Box<Batch>,
        /// Frames of `batch` already handed out.
        taken: usize,
    },
    Raw(RawIp),
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

    /// An IP-in-UDP link (`udp:LOCAL=PEER`): binds `local` and exchanges datagrams with
    /// `peer` only, batched both ways. It carries packets up to 65,535 bytes.
    ///
    /// # Errors
    ///
    /// If `local` cannot be bound or `peer` not connected to.
    pub async fn udp(local: SocketAddr, peer: SocketAddr) -> anyhow::Result<HostLink> {
        let mut links = Links::new();
        let options = LinkOptions {
            // What a host takes: any IP packet (the router's link MTU applies on its side).
            mtu: 65_535,
            ..LinkOptions::default()
        };
        let spec = LinkSpec::Udp {
            local,
            peer: Some(peer),
        };
        links
            .add("router", &spec, &options, std::time::Instant::now())
            .await
            .with_context(|| format!("opening the link {spec}"))?;
        Ok(HostLink {
            kind: Kind::Udp {
                links,
                batch: Box::default(),
                taken: 0,
            },
        })
    }

    /// The kernel's IPv4 stack: sends with `IPPROTO_RAW`, receives IP protocol `protocol`
    /// ([`netio::raw::RawIp`]). Needs root (or `CAP_NET_RAW`).
    ///
    /// # Errors
    ///
    /// If a raw socket cannot be opened.
    pub fn raw(protocol: u8) -> anyhow::Result<HostLink> {
        let raw = RawIp::open(protocol).with_context(|| {
            format!("opening raw IPv4 sockets (sending, and receiving protocol {protocol}; root?)")
        })?;
        Ok(HostLink {
            kind: Kind::Raw(raw),
        })
    }

    /// Our local link address (UDP mode).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.kind {
            Kind::Udp { links, .. } => links.get(IFACE).and_then(|l| l.local_addr()),
            Kind::Raw(_) => None,
        }
    }

    /// What the UDP link counted (received, dropped by reason, sent, refused); `None` in
    /// raw mode.
    pub fn counters(&self) -> Option<LinkCounters> {
        match &self.kind {
            Kind::Udp { links, .. } => links.get(IFACE).map(|l| l.counters()),
            Kind::Raw(_) => None,
        }
    }

    /// Sends one whole IP packet. On a UDP link a refusal (the router's port is closed, as
    /// before it is up) is counted, not an error: the answer simply does not come.
    ///
    /// # Errors
    ///
    /// If the socket fails to send it (in raw mode also if it is not an IPv4 packet).
    pub async fn send(&mut self, packet: &[u8]) -> anyhow::Result<()> {
        match &mut self.kind {
            Kind::Udp { links, .. } => {
                let lost = |l: &Links| {
                    l.get(IFACE)
                        .map_or(0, |l| l.counters().tx_errors + l.counters().tx_full)
                };
                let before = lost(links);
                links.send(IFACE, packet, std::time::Instant::now());
                links.flush();
                if lost(links) > before {
                    bail!("sending on the UDP link failed (socket full or error)");
                }
            }
            Kind::Raw(raw) => {
                let h = waist_ip::IpHeader::parse(packet).context("not an IP packet")?;
                let IpAddr::V4(dst) = h.dst else {
                    bail!("raw mode sends IPv4 packets only");
                };
                raw.send(packet, dst).context("sending on the raw socket")?;
            }
        }
        Ok(())
    }

    /// Sends whole IP packets as one batch: on a UDP link queued and flushed together (one
    /// `sendmmsg`, or GSO runs), in raw mode one after another. Returns how many the UDP
    /// socket dropped (full, or a send error): a sender at a high rate counts them rather
    /// than stopping. Refusals count as in [`send`](Self::send).
    ///
    /// # Errors
    ///
    /// In raw mode, as [`send`](Self::send).
    pub async fn send_all<'a>(
        &mut self,
        packets: impl IntoIterator<Item = &'a [u8]>,
    ) -> anyhow::Result<u64> {
        match &mut self.kind {
            Kind::Udp { links, .. } => {
                let lost = |l: &Links| {
                    l.get(IFACE)
                        .map_or(0, |l| l.counters().tx_errors + l.counters().tx_full)
                };
                let before = lost(links);
                let now = std::time::Instant::now();
                for p in packets {
                    links.send(IFACE, p, now);
                }
                links.flush();
                Ok(lost(links) - before)
            }
            Kind::Raw(_) => {
                for p in packets {
                    self.send(p).await?;
                }
                Ok(0)
            }
        }
    }

    /// Receives the next IP packet into `buf` (of at least [`waist_node::MAX_FRAME`]
    /// bytes) and returns where it lies, or `None` at `deadline`.
    ///
    /// # Errors
    ///
    /// If the socket fails or `buf` is too short for the packet. On a UDP link a refused
    /// send, reported when the router is not up yet, is not an error: the wait goes on.
    pub async fn recv_until(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
    ) -> anyhow::Result<Option<Range<usize>>> {
        match &mut self.kind {
            Kind::Udp {
                links,
                batch,
                taken,
            } => loop {
                // Hand out what the last batch still holds, then wait for the next.
                while let Some(frame) = batch.frames().nth(*taken) {
                    *taken += 1;
                    let packet = match Frame::parse(frame) {
                        Ok(Frame::Ip(p)) => p,
                        Ok(Frame::Labelled { packet, .. }) => packet,
                        Ok(Frame::Routing(_)) | Err(_) => continue,
                    };
                    return copy(packet, buf).map(Some);
                }
                match tokio::time::timeout_at(deadline, links.recv(batch)).await {
                    Err(_) => return Ok(None),
                    Ok(_iface) => *taken = 0,
                }
            },
            Kind::Raw(raw) => match tokio::time::timeout_at(deadline, raw.recv(buf)).await {
                Err(_) => Ok(None),
                Ok(r) => Ok(Some(0..r.context("receiving on the raw socket")?)),
            },
        }
    }

    /// [`recv_until`](Self::recv_until) `timeout` from now.
    ///
    /// # Errors
    ///
    /// As [`recv_until`](Self::recv_until).
    pub async fn recv_timeout(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> anyhow::Result<Option<Range<usize>>> {
        self.recv_until(buf, Instant::now() + timeout).await
    }
}

/// Copies `packet` to the front of `buf`; where it lies.
fn copy(packet: &[u8], buf: &mut [u8]) -> anyhow::Result<Range<usize>> {
    let (n, room) = (packet.len(), buf.len());
    buf.get_mut(..n)
        .ok_or_else(|| anyhow!("a {n}-byte packet does not fit a {room}-byte buffer"))?
        .copy_from_slice(packet);
    Ok(0..n)
}

/// A receive buffer for [`HostLink::recv_until`].
pub fn buffer() -> Vec<u8> {
    vec![0u8; MAX_FRAME]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// An ICMP echo request from 10.1.0.1 to 10.0.0.2 with `data`.
    fn echo(seq: u16, data: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 28 + data.len()];
        let n = waist_ip::icmp::emit_echo_request(
            Ipv4Addr::new(10, 1, 0, 1).into(),
            Ipv4Addr::new(10, 0, 0, 2).into(),
            1,
            seq,
            data,
            &mut p,
        )
        .unwrap();
        p.truncate(n);
        p
    }

    /// A router's GSO run (four frames, the last shorter) reaches the host as four packets,
    /// each whole; a labelled frame arrives without its label; a routing message is
    /// skipped; the link counts every datagram once.
    #[tokio::test]
    async fn a_routers_run_arrives_frame_by_frame() {
        let host = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
        let router = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
        let mut link = HostLink::udp(host, router).await.unwrap();
        assert_eq!(link.local_addr(), Some(host));
        let mut r = Links::new();
        let spec = LinkSpec::Udp {
            local: router,
            peer: Some(host),
        };
        let t0 = std::time::Instant::now();
        r.add("host", &spec, &LinkOptions::default(), t0)
            .await
            .unwrap();

        let run: Vec<Vec<u8>> = (1..=4)
            .map(|seq| echo(seq, &[seq as u8; 1000][..if seq == 4 { 300 } else { 1000 }]))
            .collect();
        for p in &run {
            r.send(0, p, t0);
        }
        r.flush();
        let segments = r.get(0).unwrap().max_segments();
        if segments > 1 {
            // One sendmsg carried the run (UDP GSO).
            assert_eq!(r.get(0).unwrap().counters().tx_calls, 1);
        }
        let labelled = echo(5, b"labelled");
        let mut frame = vec![0u8; labelled.len() + waist_node::frame::LABEL_SHIM_LEN];
        let n = waist_node::frame::emit_label_frame(
            fastpath::threaded::Label::threaded(7, 30),
            &labelled,
            &mut frame,
        )
        .unwrap();
        r.send(0, &frame[..n], t0);
        r.send(0, &[waist_node::frame::KIND_ROUTING, 1, 2, 3], t0);
        let last = echo(6, b"last");
        r.send(0, &last, t0);
        r.flush();

        let mut buf = buffer();
        let mut got = Vec::new();
        while let Some(at) = link
            .recv_timeout(&mut buf, Duration::from_secs(2))
            .await
            .unwrap()
        {
            got.push(buf[at].to_vec());
            if got.len() == 6 {
                break;
            }
        }
        let mut want = run.clone();
        want.push(labelled);
        want.push(last.clone());
        assert_eq!(got, want);
        let c = link.counters().unwrap();
        assert_eq!((c.rx_frames, c.rx_dropped()), (7, 0), "{c:?}");
        if segments > 1 {
            // The run came in glued (GRO) and was split: at most one receive for the run
            // and one for each of the other three.
            assert!(c.rx_calls <= 4, "{c:?}");
        }

        // And back: a packet from the host is one datagram to the router.
        link.send(&last).await.unwrap();
        let mut batch = Batch::new();
        let iface = tokio::time::timeout(Duration::from_secs(2), r.recv(&mut batch))
            .await
            .unwrap();
        assert_eq!(iface, 0);
        let frames: Vec<Vec<u8>> = batch.frames().map(|f| f.to_vec()).collect();
        assert_eq!(frames, [last]);
        assert_eq!(link.counters().unwrap().tx_frames, 1);
    }

    /// No router yet: a refused send is counted, not an error, and the wait just ends.
    #[tokio::test]
    async fn a_missing_router_is_a_timeout_not_an_error() {
        let host = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
        let nobody = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
        let mut link = HostLink::udp(host, nobody).await.unwrap();
        let p = echo(1, b"anyone?");
        let mut buf = buffer();
        for _ in 0..3 {
            link.send(&p).await.unwrap();
            let got = link
                .recv_timeout(&mut buf, Duration::from_millis(50))
                .await
                .unwrap();
            assert_eq!(got, None);
        }
        assert!(link.counters().unwrap().refused >= 1);
    }

    /// Raw mode (root only; skipped, passing, without): an ICMP echo request handed to the
    /// kernel for 127.0.0.1 is answered by the kernel's own stack, and the answer comes back
    /// on the raw socket of protocol 1.
    #[tokio::test]
    async fn raw_mode_reaches_the_kernels_stack() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: raw sockets need root");
            return;
        }
        let mut link = HostLink::open(Via::Raw, 1).await.unwrap();
        assert_eq!((link.local_addr(), link.counters()), (None, None));
        let lo = Ipv4Addr::LOCALHOST;
        let mut p = vec![0u8; 64];
        let ident = std::process::id() as u16;
        let n = waist_ip::icmp::emit_echo_request(lo.into(), lo.into(), ident, 9, b"raw?", &mut p)
            .unwrap();
        link.send(&p[..n]).await.unwrap();
        let mut buf = buffer();
        let deadline = Instant::now() + Duration::from_secs(2);
        while let Some(at) = link.recv_until(&mut buf, deadline).await.unwrap() {
            // Our own request passes by too (raw sockets see every ICMP packet).
            if waist_ip::icmp::read(&buf[at]).is_ok_and(|(ip, m)| {
                ip.src == IpAddr::from(lo) && m.kind == 0 && m.rest[..2] == ident.to_be_bytes()
            }) {
                return;
            }
        }
        panic!("no echo reply from the kernel");
    }
}
