//! Whole IP packets around Trickles segments: what every host sends and accepts.
//!
//! Trickles segments are TCP segments (IP protocol 6), so a host on a real link — a TUN
//! device, an IP-in-UDP tunnel, the simulator — exchanges whole IP packets. This module
//! puts the IP layer (`waist-ip`, the workspace's one) around them: [`wrap`] /
//! [`wrap_into`] write a header, [`parse`] checks one and hands back the addresses the
//! MACs and checksums cover and the segment. Servers take packets through
//! [`Service::handle_packet`](crate::app::Service::handle_packet), clients through
//! [`Demux::handle_packet`](crate::client::Demux::handle_packet), so no daemon parses IP.
//!
//! IPv4 headers are 20 bytes without options (DF set, ident 0, TTL 64), IPv6 headers 40
//! bytes without extension headers (hop limit 64). Incoming packets must be unfragmented,
//! carry TCP directly, and (IPv4) have a valid header checksum.
//!
//! [`mss_for_mtu`] sizes responses for a link: what the server's and client's `mss`
//! should be so that every response packet fits.

use alloc::vec::Vec;
use core::fmt;
use core::net::IpAddr;

use waist_ip::{IpError, IpHeader, emit_header, header_len_for};

use crate::conn::Addr;
use crate::limits::UCONT_ROOM;
use crate::wire::continuation::CONTINUATION_LEN;
use crate::wire::{RESPONSE_HEADER_LEN, TCP_HEADER_LEN};

/// Hop limit of the packets [`wrap`] writes.
const HOP_LIMIT: u8 = 64;

/// The TCP protocol number (IPv4 protocol, IPv6 next header).
const TCP: u8 = 6;

/// Why [`parse`] refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketError {
    /// The IP header is malformed (truncated, lying lengths, bad IPv4 checksum, …).
    Ip(IpError),
    /// The packet carries another protocol than TCP (or IPv6 extension headers).
    NotTcp,
    /// A fragment: Trickles packets are never fragmented (responses fit the MTU).
    Fragment,
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacketError::Ip(e) => write!(f, "bad IP header: {e}"),
            PacketError::NotTcp => f.write_str("not a TCP packet"),
            PacketError::Fragment => f.write_str("IP fragment"),
        }
    }
}

impl core::error::Error for PacketError {}

impl From<IpError> for PacketError {
    fn from(e: IpError) -> Self {
        PacketError::Ip(e)
    }
}

/// A checked IP packet carrying a TCP segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Source address.
    pub src: Addr,
    /// Destination address.
    pub dst: Addr,
    /// The TCP segment (link padding past the IP total length cut off).
    pub segment: &'a [u8],
}

/// `segment` behind an IP header from `src` to `dst` (protocol TCP), or `None` if the
/// families differ or the packet would exceed 65 535 bytes. The header is the IP layer's
/// ([`waist_ip::emit_header`]).
///
/// ```
/// use trickles::conn::Addr;
/// use trickles::ip;
/// let (a, b) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
/// let packet = ip::wrap(&a, &b, b"segment").unwrap();
/// assert_eq!(packet.len(), 20 + 7);
/// assert_eq!(ip::unwrap(&packet), Some((a, b, &b"segment"[..])));
/// ```
pub fn wrap(src: &Addr, dst: &Addr, segment: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    wrap_into(src, dst, segment, &mut out).then_some(out)
}

/// [`wrap`] into `out` (cleared first, its allocation reused); `false` (and `out` empty)
/// where `wrap` returns `None`.
pub fn wrap_into(src: &Addr, dst: &Addr, segment: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let (src, dst) = (IpAddr::from(*src), IpAddr::from(*dst));
    let header_len = header_len_for(src);
    let Some(total) = header_len.checked_add(segment.len()) else {
        return false;
    };
    out.resize(header_len, 0);
    if emit_header(out, src, dst, TCP, HOP_LIMIT, segment.len()).is_err() {
        out.clear();
        return false;
    }
    out.extend_from_slice(segment);
    debug_assert_eq!(out.len(), total);
    true
}

/// Longest IP header [`header_into`] writes (IPv6's).
pub const MAX_HEADER_LEN: usize = 40;

/// The IP header [`wrap`] puts in front of a `segment_len`-byte TCP segment from `src` to
/// `dst`, into `out`; returns its length, or `None` where `wrap` returns `None`. For a
/// caller that sends header and segment as two parts of one packet (no copy of the
/// segment).
pub fn header_into(
    src: &Addr,
    dst: &Addr,
    segment_len: usize,
    out: &mut [u8; MAX_HEADER_LEN],
) -> Option<usize> {
    let (src, dst) = (IpAddr::from(*src), IpAddr::from(*dst));
    let header_len = header_len_for(src);
    header_len.checked_add(segment_len)?;
    let h = out.get_mut(..header_len)?;
    emit_header(h, src, dst, TCP, HOP_LIMIT, segment_len).ok()?;
    Some(header_len)
}

/// Checks an IP packet and returns its addresses and TCP segment: a well-formed,
/// unfragmented IPv4 or IPv6 packet carrying TCP ([`IpHeader::parse`]; fuzzing builds skip
/// the IPv4 checksum, as smoltcp's do). The TCP segment itself is checked by whoever takes
/// it (server or client).
pub fn parse(packet: &[u8]) -> Result<Packet<'_>, PacketError> {
    let h = if cfg!(fuzzing) {
        IpHeader::parse_unverified(packet)
    } else {
        IpHeader::parse(packet)
    }?;
    // A first fragment (more-fragments set) is a fragment too.
    if h.later_fragment || h.more_fragments {
        return Err(PacketError::Fragment);
    }
    if h.protocol != TCP {
        return Err(PacketError::NotTcp);
    }
    let segment = packet
        .get(h.header_len..h.total_len)
        .ok_or(PacketError::Ip(IpError::TotalLength {
            declared: h.total_len,
            len: packet.len(),
        }))?;
    Ok(Packet {
        src: Addr::from(h.src),
        dst: Addr::from(h.dst),
        segment,
    })
}

/// [`parse`] as `(source, destination, segment)`, or `None` for any refusal.
pub fn unwrap(packet: &[u8]) -> Option<(Addr, Addr, &[u8])> {
    parse(packet).ok().map(|p| (p.src, p.dst, p.segment))
}

/// The `mss` (server and client: most application bytes per response) whose response
/// packets fit an IP MTU of `mtu` bytes for a server at `server`'s address family: the
/// MTU less the IP header (20 or 40 bytes), the TCP header with the Trickles option (24),
/// the response header (24), a full continuation (54) and the user continuation room
/// ([`UCONT_ROOM`], 16). 0 if the MTU is too small for any data.
///
/// A 1500-byte IPv4 link gives [`DEFAULT_MSS`](crate::limits::DEFAULT_MSS), 1362. IP
/// in UDP over a 1500-byte IPv4 link leaves 1472 bytes for the inner packet (1500 − 20 −
/// 8): 1334.
///
/// ```
/// use trickles::conn::Addr;
/// use trickles::ip::mss_for_mtu;
/// let v4 = Addr::V4([10, 0, 0, 2]);
/// assert_eq!(mss_for_mtu(1500, &v4), trickles::limits::DEFAULT_MSS);
/// assert_eq!(mss_for_mtu(1472, &v4), 1334);
/// assert_eq!(mss_for_mtu(1500, &Addr::V6([0; 16])), 1342);
/// ```
pub fn mss_for_mtu(mtu: u16, server: &Addr) -> u16 {
    let ip = header_len_for(IpAddr::from(*server));
    let overhead = ip + TCP_HEADER_LEN + RESPONSE_HEADER_LEN + CONTINUATION_LEN + UCONT_ROOM;
    usize::from(mtu)
        .saturating_sub(overhead)
        .try_into()
        .unwrap_or(u16::MAX)
}

/// Bytes of IPv4 and UDP header an IP-in-UDP tunnel over IPv4 adds to each packet: the
/// inner MTU is the link's MTU less this.
pub const UDP_TUNNEL_OVERHEAD_V4: u16 = 28;

/// Bytes of IPv6 and UDP header an IP-in-UDP tunnel over IPv6 adds to each packet.
pub const UDP_TUNNEL_OVERHEAD_V6: u16 = 48;

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// The header part is exactly what `wrap` puts before the segment, for both families
    /// and every segment length up to the largest an IPv4 packet takes; `None` where `wrap`
    /// gives `None`.
    #[test]
    fn header_into_is_wraps_prefix() {
        let pairs = [
            (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2])),
            (Addr::V6([1; 16]), Addr::V6([2; 16])),
            (Addr::V4([10, 0, 0, 1]), Addr::V6([2; 16])),
        ];
        for (a, b) in pairs {
            for len in [0usize, 1, 20, 1399, 1400, 65_515, 65_516, 70_000] {
                let segment = vec![0xA5u8; len];
                let mut h = [0u8; MAX_HEADER_LEN];
                match (header_into(&a, &b, len, &mut h), wrap(&a, &b, &segment)) {
                    (Some(n), Some(p)) => {
                        assert_eq!(&p[..n], &h[..n], "{a:?} {len}");
                        assert_eq!(&p[n..], &segment[..]);
                    }
                    (None, None) => {}
                    (x, y) => panic!("{a:?} {len}: {x:?} against {:?}", y.map(|p| p.len())),
                }
            }
        }
    }

    #[test]
    fn refusals_name_their_reason() {
        let (a, b) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
        let packet = wrap(&a, &b, b"ab").unwrap_or_default();
        let mut udp = packet.clone();
        udp[9] = 17;
        waist_ip::rewrite::fill_ipv4_checksum(&mut udp);
        assert_eq!(parse(&udp), Err(PacketError::NotTcp));
        let mut frag = packet.clone();
        frag[6] = 0x20;
        waist_ip::rewrite::fill_ipv4_checksum(&mut frag);
        assert_eq!(parse(&frag), Err(PacketError::Fragment));
        assert!(matches!(parse(&packet[..10]), Err(PacketError::Ip(_))));
        let mut out = vec![1, 2, 3];
        assert!(!wrap_into(&a, &Addr::V6([0; 16]), b"", &mut out));
        assert!(out.is_empty());
        assert!(wrap_into(&a, &b, b"ab", &mut out));
        assert_eq!(out, packet);
    }

    #[test]
    fn mss_fits_the_mtu() {
        let v4 = Addr::V4([1, 2, 3, 4]);
        assert_eq!(mss_for_mtu(1500, &v4), crate::limits::DEFAULT_MSS);
        assert_eq!(mss_for_mtu(1500 - UDP_TUNNEL_OVERHEAD_V4, &v4), 1334);
        assert_eq!(mss_for_mtu(100, &v4), 0);
        assert_eq!(mss_for_mtu(u16::MAX, &Addr::V6([0; 16])), u16::MAX - 158);
    }

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
