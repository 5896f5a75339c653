//! Whole IP packets around TCP segments: what a [`Connection`](super::Connection) sends
//! and accepts in both of its modes.
//!
//! IPv4 headers are 20 bytes without options (DF set, ident 0, TTL 64), IPv6 headers 40
//! bytes without extension headers (hop limit 64), written and checked by the IP layer
//! (`waist-ip`). Incoming packets must be unfragmented, carry TCP directly, and (IPv4)
//! have a valid header checksum.

use alloc::vec;
use alloc::vec::Vec;

use core::net::IpAddr;

use smoltcp::wire::{IpAddress, Ipv4Address, Ipv6Address};
use waist_ip::{IpHeader, emit_header, header_len_for};

use crate::conn::Addr;

/// Hop limit of the packets [`wrap`] writes.
const HOP_LIMIT: u8 = 64;

/// The TCP protocol number (IPv4 protocol, IPv6 next header).
const TCP: u8 = 6;

/// `segment` behind an IP header from `src` to `dst` (protocol TCP), or `None` if the
/// families differ or the packet would exceed 65 535 bytes. The header is the IP layer's
/// ([`waist_ip::emit_header`]).
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
    let (src, dst) = (IpAddr::from(*src), IpAddr::from(*dst));
    let header_len = header_len_for(src);
    let mut out = vec![0u8; header_len.checked_add(segment.len())?];
    let (header, payload) = out.split_at_mut(header_len);
    emit_header(header, src, dst, TCP, HOP_LIMIT, segment.len()).ok()?;
    payload.copy_from_slice(segment);
    Some(out)
}

/// The source, destination and TCP segment of an IP packet, or `None` if it is not a
/// well-formed, unfragmented IPv4 or IPv6 packet carrying TCP (checked by the IP layer,
/// [`IpHeader::parse`]; fuzzing builds skip the IPv4 checksum, as smoltcp's do).
pub fn unwrap(packet: &[u8]) -> Option<(Addr, Addr, &[u8])> {
    let h = if cfg!(fuzzing) {
        IpHeader::parse_unverified(packet)
    } else {
        IpHeader::parse(packet)
    }
    .ok()?;
    // A first fragment (more-fragments set) is a fragment too (IPv6 fragments are extension
    // headers and fail the protocol check).
    if h.protocol != TCP || h.later_fragment || h.more_fragments {
        return None;
    }
    let tcp = packet.get(h.header_len..h.total_len)?;
    Some((Addr::from(h.src), Addr::from(h.dst), tcp))
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
    fn fragments_padding_and_oversize() {
        let (a, b) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
        let packet = wrap(&a, &b, b"ab").unwrap_or_default();
        // More fragments (a first fragment), then a later fragment: both refused, with
        // the checksum fixed so that only the flag decides.
        for (byte, value) in [(6, 0x20), (7, 0x01)] {
            let mut frag = packet.clone();
            frag[6] = 0;
            frag[byte] = value;
            waist_ip::rewrite::fill_ipv4_checksum(&mut frag);
            assert!(IpHeader::parse(&frag).is_ok());
            assert_eq!(
                unwrap(&frag),
                None,
                "fragment flags {:02x}{:02x}",
                frag[6],
                frag[7]
            );
        }
        // Link padding past the total length is not part of the segment.
        let mut padded = packet.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(unwrap(&padded), Some((a, b, &b"ab"[..])));
        assert_eq!(
            wrap(&a, &b, &vec![0; 65_535 - 20]).map(|p| p.len()),
            Some(65_535)
        );
        assert_eq!(wrap(&a, &b, &vec![0; 65_535 - 19]), None);
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
