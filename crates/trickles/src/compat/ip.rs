//! Whole IP packets around TCP segments: what a [`Connection`](super::Connection) sends
//! and accepts in both of its modes.
//!
//! IPv4 headers are 20 bytes without options (DF set, ident 0, TTL 64), IPv6 headers 40
//! bytes without extension headers (hop limit 64), as smoltcp writes them. Incoming
//! packets must be unfragmented, carry TCP directly, and (IPv4) have a valid header
//! checksum.

use alloc::vec;
use alloc::vec::Vec;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    IpAddress, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, Ipv6Address, Ipv6Packet, Ipv6Repr,
};

use crate::conn::Addr;

/// Hop limit of the packets [`wrap`] writes.
const HOP_LIMIT: u8 = 64;

/// `segment` behind an IP header from `src` to `dst` (protocol TCP), or `None` if the
/// families differ or the packet would exceed 65 535 bytes.
///
/// ```
/// use trickles::compat::ip;
/// use trickles::conn::Addr;
/// let (a, b) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
/// let packet = ip::wrap(&a, &b, b"segment").unwrap();
/// assert_eq!(packet.len(), 20 + 7);
/// assert_eq!(ip::unwrap(&packet), Some((a, b, &b"segment"[..])));
/// ```
pub fn wrap(src: &Addr, dst: &Addr, segment: &[u8]) -> Option<Vec<u8>> {
    match (*src, *dst) {
        (Addr::V4(s), Addr::V4(d)) => {
            let repr = Ipv4Repr {
                src_addr: Ipv4Address::from(s),
                dst_addr: Ipv4Address::from(d),
                next_header: IpProtocol::Tcp,
                payload_len: segment.len(),
                hop_limit: HOP_LIMIT,
            };
            let total = repr.buffer_len().checked_add(segment.len())?;
            u16::try_from(total).ok()?;
            let mut out = vec![0u8; total];
            let mut packet = Ipv4Packet::new_unchecked(&mut out[..]);
            repr.emit(&mut packet, &ChecksumCapabilities::default());
            packet.payload_mut().copy_from_slice(segment);
            Some(out)
        }
        (Addr::V6(s), Addr::V6(d)) => {
            u16::try_from(segment.len()).ok()?;
            let repr = Ipv6Repr {
                src_addr: Ipv6Address::from(s),
                dst_addr: Ipv6Address::from(d),
                next_header: IpProtocol::Tcp,
                payload_len: segment.len(),
                hop_limit: HOP_LIMIT,
            };
            let mut out = vec![0u8; repr.buffer_len() + segment.len()];
            let mut packet = Ipv6Packet::new_unchecked(&mut out[..]);
            repr.emit(&mut packet);
            packet.payload_mut().copy_from_slice(segment);
            Some(out)
        }
        _ => None,
    }
}

/// The source, destination and TCP segment of an IP packet, or `None` if it is not a
/// well-formed, unfragmented IPv4 or IPv6 packet carrying TCP.
pub fn unwrap(packet: &[u8]) -> Option<(Addr, Addr, &[u8])> {
    match packet.first()? >> 4 {
        4 => {
            let p = Ipv4Packet::new_checked(packet).ok()?;
            let repr = Ipv4Repr::parse(&p, &ChecksumCapabilities::default()).ok()?;
            if repr.next_header != IpProtocol::Tcp || p.more_frags() || p.frag_offset() != 0 {
                return None;
            }
            let start = usize::from(p.header_len());
            let tcp = packet.get(start..start.checked_add(repr.payload_len)?)?;
            Some((
                Addr::V4(repr.src_addr.octets()),
                Addr::V4(repr.dst_addr.octets()),
                tcp,
            ))
        }
        6 => {
            let p = Ipv6Packet::new_checked(packet).ok()?;
            let repr = Ipv6Repr::parse(&p).ok()?;
            if repr.next_header != IpProtocol::Tcp {
                return None;
            }
            let tcp = packet.get(repr.buffer_len()..repr.buffer_len() + repr.payload_len)?;
            Some((
                Addr::V6(repr.src_addr.octets()),
                Addr::V6(repr.dst_addr.octets()),
                tcp,
            ))
        }
        _ => None,
    }
}

/// `addr` as smoltcp's address type.
pub(crate) fn smol_addr(addr: &Addr) -> IpAddress {
    match *addr {
        Addr::V4(a) => IpAddress::Ipv4(Ipv4Address::from(a)),
        Addr::V6(a) => IpAddress::Ipv6(Ipv6Address::from(a)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_literal() {
        let packet = wrap(&Addr::V4([10, 0, 0, 1]), &Addr::V4([10, 0, 0, 2]), b"ab");
        let expected: [u8; 22] = [
            0x45, 0, 0, 22, // version, IHL, total length
            0, 0, 0x40, 0, // ident 0, DF
            64, 6, 0x26, 0xe0, // TTL, TCP, checksum
            10, 0, 0, 1, 10, 0, 0, 2, b'a', b'b',
        ];
        assert_eq!(packet.as_deref(), Some(&expected[..]));
        // A flipped header bit fails the checksum; a truncated packet fails its length.
        let mut bad = expected;
        bad[8] ^= 1;
        assert_eq!(unwrap(&bad), None);
        assert_eq!(unwrap(&expected[..21]), None);
        // Not TCP.
        let mut udp = expected;
        udp[9] = 17;
        udp[10..12].copy_from_slice(&[0x26, 0xd5]);
        assert_eq!(unwrap(&udp), None);
    }

    #[test]
    fn ipv6_round_trip_and_mixed_families() {
        let (a, b) = (Addr::V6([0xfd; 16]), Addr::V6([0xfe; 16]));
        let packet = wrap(&a, &b, b"xyz").unwrap_or_default();
        assert_eq!(packet.len(), 43);
        assert_eq!(unwrap(&packet), Some((a, b, &b"xyz"[..])));
        assert_eq!(wrap(&a, &Addr::V4([1, 2, 3, 4]), b""), None);
        assert_eq!(unwrap(&[]), None);
        assert_eq!(unwrap(&[0x55; 40]), None);
    }
}
