//! Raw IPv4: whole IP packets to and from the kernel's own IPv4 stack, for a host tool
//! behind a TUN device (`waist esp send --via raw`, `waist snap ping --via raw`).
//!
//! ```text
//!  send ─► IPPROTO_RAW socket (IP_HDRINCL: the packet's own header) ─► kernel routing ─►
//!  recv ◄─ raw socket of one IP protocol (a copy of every packet of it the kernel takes in)
//! ```
//!
//! [`RawIp::open`] opens both sockets: `IPPROTO_RAW` (255) for sending, which implies
//! `IP_HDRINCL`, so the caller hands over complete IPv4 packets, header and all; and a raw
//! socket of the one IP protocol the caller expects answers in (253 ESP, 254 SNAP, 17 for a
//! UDP-borne query), from which [`RawIp::recv`] reads whole packets, IP header included.
//! The kernel keeps delivering those packets to its own stack too: raw sockets see copies.
//!
//! Needs root (or `CAP_NET_RAW`). IPv4 only. No packet is parsed here: the caller says
//! where a packet goes ([`RawIp::send`]) and reads what comes back with its core.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// `IPPROTO_RAW`: a raw socket that sends packets with their own IP header.
const IPPROTO_RAW: i32 = 255;

/// Raw IPv4 sockets: send any IPv4 packet, receive the packets of one IP protocol. See the
/// [module docs](self).
#[derive(Debug)]
pub struct RawIp {
    send: Socket,
    /// The receive socket, registered with tokio's reactor. Tokio reads it with `recv(2)`,
    /// which on a raw socket returns one whole IP packet; its UDP type is only the wrapper
    /// (safe code cannot register a descriptor with the reactor any other way).
    recv: tokio::net::UdpSocket,
    protocol: u8,
}

impl RawIp {
    /// Opens a raw socket to send with (`IPPROTO_RAW`) and one that receives IP protocol
    /// `protocol`. Call it inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// `PermissionDenied` without root (or `CAP_NET_RAW`); no runtime; the socket calls'
    /// own errors.
    pub fn open(protocol: u8) -> io::Result<RawIp> {
        let raw = |p: i32| Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(p)));
        let send = raw(IPPROTO_RAW)?;
        let recv = raw(i32::from(protocol))?;
        recv.set_nonblocking(true)?;
        let recv = tokio::net::UdpSocket::from_std(recv.into())?;
        Ok(RawIp {
            send,
            recv,
            protocol,
        })
    }

    /// The IP protocol it receives.
    pub fn protocol(&self) -> u8 {
        self.protocol
    }

    /// Hands `packet`, a whole IPv4 packet (header included; the kernel fills in its
    /// checksum, and its total length and identification if zero), to the kernel, routed
    /// toward `dst` (the packet's own destination). Blocks only as long as the kernel
    /// takes to accept one packet.
    ///
    /// # Errors
    ///
    /// The kernel's: no route, a malformed header (`EINVAL`), a packet too large.
    pub fn send(&self, packet: &[u8], dst: Ipv4Addr) -> io::Result<usize> {
        self.send
            .send_to(packet, &SockAddr::from(SocketAddr::from((dst, 0))))
    }

    /// Waits for the next packet of [`protocol`](RawIp::protocol) and reads it, IP header
    /// included, into `buf`; its length. A packet longer than `buf` is cut short (raw
    /// sockets do not say so): give it room for the largest packet expected (65,535 bytes).
    ///
    /// # Errors
    ///
    /// The socket's.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv.recv(buf).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An IPv4 packet from 127.0.0.1 to 127.0.0.1 of `protocol` carrying `payload`
    /// (checksum left for the kernel to fill in).
    fn packet(protocol: u8, payload: &[u8]) -> Vec<u8> {
        let len = u16::try_from(20 + payload.len()).unwrap();
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, protocol, 0, 0];
        p[2..4].copy_from_slice(&len.to_be_bytes());
        p.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1]);
        p.extend_from_slice(payload);
        p
    }

    /// A packet sent through `IPPROTO_RAW` to loopback comes back on the raw socket of its
    /// protocol, whole. Needs root: skipped (passing) without it.
    #[tokio::test]
    async fn a_packet_sent_raw_comes_back_on_its_protocol() {
        // 253: RFC 3692 experimental, the protocol ESP uses; nothing else here answers it.
        let raw = match RawIp::open(253) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                eprintln!("skipped: raw sockets need root ({e})");
                return;
            }
            r => r.unwrap(),
        };
        assert_eq!(raw.protocol(), 253);
        let marker = format!("netio raw test {}", std::process::id());
        let sent = packet(253, marker.as_bytes());
        assert_eq!(raw.send(&sent, Ipv4Addr::LOCALHOST).unwrap(), sent.len());
        let mut buf = vec![0u8; 65_535];
        let got = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let n = raw.recv(&mut buf).await.unwrap();
                // Other tests' packets of this protocol may pass by: ours carries the marker.
                if buf[..n].ends_with(marker.as_bytes()) {
                    return buf[..n].to_vec();
                }
            }
        })
        .await
        .expect("the packet came back within 5 s");
        assert_eq!(got.len(), sent.len());
        assert_eq!(got[0], 0x45);
        assert_eq!(got[9], 253);
        assert_eq!(&got[12..20], &sent[12..20]);
        // Too short for a header: the kernel refuses it.
        assert!(raw.send(&[0x45, 0], Ipv4Addr::LOCALHOST).is_err());
    }
}
