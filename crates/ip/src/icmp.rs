//! ICMP (RFC 792) and ICMPv6 (RFC 4443): the errors a router sends, echo, and a reader.
//!
//! A router answers a packet it cannot forward with [`emit_error`]: time exceeded,
//! destination unreachable, fragmentation needed (IPv4 with DF) or packet too big (IPv6).
//! The RFCs' rules for *not* answering are applied there, once (RFC 1812 §4.3.2.7, RFC 4443
//! §2.4(e)): never about an ICMP error, a later IPv4 fragment, or a packet to or from a
//! multicast, broadcast or unspecified address (except packet too big for IPv6 multicast).
//! [`echo_reply`] turns an echo request addressed to the node into its reply in place.
//!
//! ```
//! use waist_ip::icmp::{IcmpError, emit_error, read};
//! use waist_ip::emit_header;
//!
//! let mut packet = [0u8; 28];
//! emit_header(&mut packet, [10, 0, 0, 1].into(), [10, 9, 9, 9].into(), 17, 1, 8)?;
//! let mut out = [0u8; 128];
//! let n = emit_error(IcmpError::TimeExceeded, &packet, [10, 0, 0, 254].into(), &mut out).unwrap();
//! let (ip, msg) = read(&out[..n]).unwrap();
//! assert_eq!((ip.dst, msg.kind, msg.code), ([10, 0, 0, 1].into(), 11, 0));
//! assert_eq!(msg.body, &packet[..]); // the whole (short) packet is quoted
//! # Ok::<(), waist_ip::IpError>(())
//! ```

use core::fmt;
use core::net::IpAddr;

use crate::checksum::{Sum, adjust, checksum, pseudo_header};
use crate::header::{IpError, IpHeader, Version, emit_header, header_len_for};
use crate::rewrite::{set_ttl, swap_addresses};

/// IPv4 protocol number of ICMP.
pub const PROTOCOL_ICMP: u8 = 1;
/// IPv6 next header of ICMPv6.
pub const PROTOCOL_ICMPV6: u8 = 58;
/// Bytes of an ICMP header (type, code, checksum, four more).
pub const ICMP_HEADER_LEN: usize = 8;
/// The TTL (hop limit) of the ICMP messages a node originates.
pub const ICMP_TTL: u8 = 64;
/// An ICMPv4 error stays within 576 bytes (RFC 1812 §4.3.2.3).
pub const IPV4_ERROR_MAX: usize = 576;
/// An ICMPv6 error stays within the minimum IPv6 MTU (RFC 4443 §2.4(c)).
pub const IPV6_ERROR_MAX: usize = 1280;

/// Why a destination is unreachable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unreachable {
    /// No route to the destination's network.
    Net,
    /// The destination host is not reachable (IPv6: address unreachable).
    Host,
    /// The protocol is not spoken here (IPv6: parameter problem is the right answer; we
    /// send port unreachable's sibling code 4 instead, see [`IcmpError`]).
    Protocol,
    /// No one listens on the port.
    Port,
    /// Administratively prohibited.
    Prohibited,
}

/// An ICMP error a router or host sends about a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IcmpError {
    /// TTL / hop limit exceeded in transit (type 11 / 3, code 0).
    TimeExceeded,
    /// Destination unreachable (type 3 / 1).
    Unreachable(Unreachable),
    /// Too big for the next link: IPv4 fragmentation needed and DF set (type 3 code 4,
    /// next-hop MTU); IPv6 packet too big (type 2, MTU).
    TooBig {
        /// The next link's MTU.
        mtu: u32,
    },
}

impl IcmpError {
    /// The (type, code) for `version`.
    pub const fn type_code(self, version: Version) -> (u8, u8) {
        match (version, self) {
            (Version::V4, IcmpError::TimeExceeded) => (11, 0),
            (Version::V4, IcmpError::Unreachable(u)) => (
                3,
                match u {
                    Unreachable::Net => 0,
                    Unreachable::Host => 1,
                    Unreachable::Protocol => 2,
                    Unreachable::Port => 3,
                    Unreachable::Prohibited => 13,
                },
            ),
            (Version::V4, IcmpError::TooBig { .. }) => (3, 4),
            (Version::V6, IcmpError::TimeExceeded) => (3, 0),
            (Version::V6, IcmpError::Unreachable(u)) => (
                1,
                match u {
                    Unreachable::Net => 0,
                    Unreachable::Prohibited => 1,
                    Unreachable::Host => 3,
                    Unreachable::Protocol | Unreachable::Port => 4,
                },
            ),
            (Version::V6, IcmpError::TooBig { .. }) => (2, 0),
        }
    }
}

/// Why no ICMP message was built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcmpBuildError {
    /// The packet is not one the RFCs let us answer (an ICMP error, a later fragment,
    /// multicast or broadcast, an unspecified source).
    Suppressed,
    /// The packet's IP header is malformed.
    Ip(IpError),
    /// The answering address is not of the packet's family.
    MixedFamilies,
    /// `out` is too small.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        len: usize,
    },
    /// Not an ICMP echo request (for [`echo_reply`]).
    NotEchoRequest,
}

impl fmt::Display for IcmpBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IcmpBuildError::Suppressed => f.write_str("the RFCs forbid an ICMP error here"),
            IcmpBuildError::Ip(e) => write!(f, "malformed packet: {e}"),
            IcmpBuildError::MixedFamilies => f.write_str("answering address of another family"),
            IcmpBuildError::BufferTooSmall { needed, len } => {
                write!(f, "output buffer of {len} bytes, {needed} needed")
            }
            IcmpBuildError::NotEchoRequest => f.write_str("not an ICMP echo request"),
        }
    }
}

impl core::error::Error for IcmpBuildError {}

impl From<IpError> for IcmpBuildError {
    fn from(e: IpError) -> Self {
        IcmpBuildError::Ip(e)
    }
}

fn is_special(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(a) => a.is_multicast() || a.is_broadcast() || a.is_unspecified(),
        IpAddr::V6(a) => a.is_multicast() || a.is_unspecified(),
    }
}

/// Whether an ICMP error may be sent about `packet` (RFC 1812 §4.3.2.7, RFC 4443 §2.4(e)).
pub fn may_answer(h: &IpHeader, packet: &[u8], kind: IcmpError) -> bool {
    if h.later_fragment || is_special(h.src) {
        return false;
    }
    let v6_too_big = h.version == Version::V6 && matches!(kind, IcmpError::TooBig { .. });
    if is_special(h.dst) && !v6_too_big {
        return false;
    }
    // Never about an ICMP error message.
    let icmp_type = packet.get(h.header_len).copied();
    match (h.version, h.protocol, icmp_type) {
        (Version::V4, PROTOCOL_ICMP, Some(t)) => !matches!(t, 3 | 4 | 5 | 11 | 12),
        (Version::V4, PROTOCOL_ICMP, None) => false,
        (Version::V6, PROTOCOL_ICMPV6, Some(t)) => t >= 128,
        (Version::V6, PROTOCOL_ICMPV6, None) => false,
        _ => true,
    }
}

/// Bytes [`emit_error`] writes about `packet` (0 if it is not an IP packet).
pub fn error_len(packet: &[u8]) -> usize {
    match IpHeader::parse_unverified(packet) {
        Ok(h) => {
            let max = match h.version {
                Version::V4 => IPV4_ERROR_MAX,
                Version::V6 => IPV6_ERROR_MAX,
            };
            let fixed = match h.version {
                Version::V4 => 20 + ICMP_HEADER_LEN,
                Version::V6 => 40 + ICMP_HEADER_LEN,
            };
            fixed + h.total_len.min(max - fixed)
        }
        Err(_) => 0,
    }
}

/// Writes into `out` the ICMP error `kind` about `packet`, sent from `from` back to the
/// packet's source: a fresh IP header (TTL [`ICMP_TTL`]), the ICMP header, and as much of
/// `packet` as the RFCs' size limits allow. Returns the bytes written.
///
/// # Errors
///
/// [`IcmpBuildError::Suppressed`] where the RFCs forbid an answer; others as named.
pub fn emit_error(
    kind: IcmpError,
    packet: &[u8],
    from: IpAddr,
    out: &mut [u8],
) -> Result<usize, IcmpBuildError> {
    let h = IpHeader::parse_unverified(packet)?;
    if !may_answer(&h, packet, kind) {
        return Err(IcmpBuildError::Suppressed);
    }
    if header_len_for(from) != header_len_for(h.src) {
        return Err(IcmpBuildError::MixedFamilies);
    }
    let n = error_len(packet);
    let len = out.len();
    let out = out
        .get_mut(..n)
        .ok_or(IcmpBuildError::BufferTooSmall { needed: n, len })?;
    let ip_len = header_len_for(from);
    let body_len = n - ip_len - ICMP_HEADER_LEN;
    emit_header(
        out,
        from,
        h.src,
        protocol_of(h.version),
        ICMP_TTL,
        n - ip_len,
    )?;
    let (_, icmp) = out.split_at_mut(ip_len);
    let (t, c) = kind.type_code(h.version);
    let rest = match kind {
        IcmpError::TooBig { mtu } if h.version == Version::V4 => {
            u32::from(u16::try_from(mtu).unwrap_or(u16::MAX))
        }
        IcmpError::TooBig { mtu } => mtu,
        _ => 0,
    };
    let [r0, r1, r2, r3] = rest.to_be_bytes();
    let (head, body) = icmp.split_at_mut(ICMP_HEADER_LEN);
    head.copy_from_slice(&[t, c, 0, 0, r0, r1, r2, r3]);
    if let (Some(b), Some(src)) = (body.get_mut(..body_len), packet.get(..body_len)) {
        b.copy_from_slice(src);
    }
    fill_icmp_checksum(h.version, from, h.src, icmp);
    Ok(n)
}

fn protocol_of(v: Version) -> u8 {
    match v {
        Version::V4 => PROTOCOL_ICMP,
        Version::V6 => PROTOCOL_ICMPV6,
    }
}

fn fill_icmp_checksum(v: Version, src: IpAddr, dst: IpAddr, icmp: &mut [u8]) {
    if let Some(c) = icmp.get_mut(2..4) {
        c.fill(0);
    }
    let sum = match v {
        Version::V4 => checksum(icmp),
        Version::V6 => pseudo_header(src, dst, PROTOCOL_ICMPV6, icmp.len() as u32)
            .with(icmp)
            .finish(),
    };
    if let Some(c) = icmp.get_mut(2..4) {
        c.copy_from_slice(&sum.to_be_bytes());
    }
}

/// Turns an ICMP echo request (IPv4 type 8; ICMPv6 type 128 directly after the fixed
/// header) into its reply in place: addresses swapped, TTL [`ICMP_TTL`], type 0 / 129,
/// checksums updated incrementally. The packet must already be trimmed to its IP length.
///
/// # Errors
///
/// [`IcmpBuildError::NotEchoRequest`], [`IcmpBuildError::Suppressed`] for a request from a
/// multicast, broadcast or unspecified source, or [`IcmpBuildError::Ip`] for a malformed
/// header.
pub fn echo_reply(packet: &mut [u8]) -> Result<(), IcmpBuildError> {
    let h = IpHeader::parse_unverified(packet)?;
    let (want, reply) = match h.version {
        Version::V4 => (8, 0),
        Version::V6 => (128, 129),
    };
    // Never answer toward a multicast, broadcast or unspecified source (RFC 1122 §3.2.2.6
    // lets a host answer a multicast destination, but the reply goes to a unicast source).
    if is_special(h.src) {
        return Err(IcmpBuildError::Suppressed);
    }
    if h.protocol != protocol_of(h.version)
        || h.later_fragment
        || packet.get(h.header_len).copied() != Some(want)
        || packet.len() < h.header_len + ICMP_HEADER_LEN
    {
        return Err(IcmpBuildError::NotEchoRequest);
    }
    swap_addresses(packet)?;
    set_ttl(packet, ICMP_TTL)?;
    let at = h.header_len;
    let Some(&[t, c, c0, c1]) = packet.get(at..at + 4) else {
        return Err(IcmpBuildError::NotEchoRequest);
    };
    let check = adjust(u16::from_be_bytes([c0, c1]), 0, &[t, c], &[reply, c]);
    let [k0, k1] = check.to_be_bytes();
    if let Some(slot) = packet.get_mut(at..at + 4) {
        slot.copy_from_slice(&[reply, c, k0, k1]);
    }
    Ok(())
}

/// An ICMP or ICMPv6 message read by [`read`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpMessage<'a> {
    /// Type.
    pub kind: u8,
    /// Code.
    pub code: u8,
    /// The four bytes after the checksum (identifier and sequence, MTU, unused).
    pub rest: [u8; 4],
    /// What follows (for an error: the quoted packet).
    pub body: &'a [u8],
}

/// Reads the ICMP (ICMPv6 directly after the fixed header) message of `packet`, checking
/// the IP header and the ICMP checksum.
///
/// # Errors
///
/// [`IcmpBuildError::Ip`] for a malformed IP header; [`IcmpBuildError::NotEchoRequest`] is
/// never returned; a packet that is not ICMP, or whose checksum is wrong, gives
/// [`IcmpBuildError::Suppressed`].
pub fn read(packet: &[u8]) -> Result<(IpHeader, IcmpMessage<'_>), IcmpBuildError> {
    let h = IpHeader::parse(packet)?;
    if h.protocol != protocol_of(h.version) {
        return Err(IcmpBuildError::Suppressed);
    }
    let icmp = packet
        .get(h.header_len..h.total_len)
        .ok_or(IcmpBuildError::Suppressed)?;
    let ok = match h.version {
        Version::V4 => checksum(icmp) == 0,
        Version::V6 => {
            pseudo_header(h.src, h.dst, PROTOCOL_ICMPV6, icmp.len() as u32)
                .with(icmp)
                .finish()
                == 0
        }
    };
    let (Some(&[kind, code, _, _, r0, r1, r2, r3]), Some(body), true) =
        (icmp.get(..ICMP_HEADER_LEN), icmp.get(ICMP_HEADER_LEN..), ok)
    else {
        return Err(IcmpBuildError::Suppressed);
    };
    Ok((
        h,
        IcmpMessage {
            kind,
            code,
            rest: [r0, r1, r2, r3],
            body,
        },
    ))
}

/// Writes an echo request (IPv4 type 8, ICMPv6 type 128) from `src` to `dst` with
/// `ident`, `seq` and `data`. Returns the bytes written.
///
/// # Errors
///
/// [`IcmpBuildError::MixedFamilies`], [`IcmpBuildError::BufferTooSmall`].
pub fn emit_echo_request(
    src: IpAddr,
    dst: IpAddr,
    ident: u16,
    seq: u16,
    data: &[u8],
    out: &mut [u8],
) -> Result<usize, IcmpBuildError> {
    let ip_len = header_len_for(src);
    if ip_len != header_len_for(dst) {
        return Err(IcmpBuildError::MixedFamilies);
    }
    let n = ip_len + ICMP_HEADER_LEN + data.len();
    let len = out.len();
    let out = out
        .get_mut(..n)
        .ok_or(IcmpBuildError::BufferTooSmall { needed: n, len })?;
    let v = if ip_len == 20 {
        Version::V4
    } else {
        Version::V6
    };
    emit_header(out, src, dst, protocol_of(v), ICMP_TTL, n - ip_len)?;
    let (_, icmp) = out.split_at_mut(ip_len);
    let (head, body) = icmp.split_at_mut(ICMP_HEADER_LEN);
    let [i0, i1] = ident.to_be_bytes();
    let [s0, s1] = seq.to_be_bytes();
    let t = if v == Version::V4 { 8 } else { 128 };
    head.copy_from_slice(&[t, 0, 0, 0, i0, i1, s0, s1]);
    body.copy_from_slice(data);
    fill_icmp_checksum(v, src, dst, icmp);
    Ok(n)
}

/// The sum over an ICMPv6 message (for tests and tools that check one by hand).
pub fn icmpv6_sum(src: IpAddr, dst: IpAddr, icmp: &[u8]) -> Sum {
    pseudo_header(src, dst, PROTOCOL_ICMPV6, icmp.len() as u32).with(icmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit_header;
    use std::vec;

    fn v4_udp(ttl: u8, len: usize) -> std::vec::Vec<u8> {
        let mut p = vec![0u8; 20 + len];
        emit_header(
            &mut p,
            [10, 0, 0, 1].into(),
            [10, 9, 9, 9].into(),
            17,
            ttl,
            len,
        )
        .unwrap();
        for (i, b) in p[20..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    #[test]
    fn time_exceeded_quotes_at_most_548_bytes_and_checks() {
        let p = v4_udp(1, 1000);
        let mut out = [0u8; 600];
        let n = emit_error(
            IcmpError::TimeExceeded,
            &p,
            [10, 0, 0, 254].into(),
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 576);
        let (ip, m) = read(&out[..n]).unwrap();
        assert_eq!((m.kind, m.code, ip.ttl), (11, 0, ICMP_TTL));
        assert_eq!(m.body, &p[..548]);
        let e = etherparse::SlicedPacket::from_ip(&out[..n]).unwrap();
        assert!(matches!(
            e.transport,
            Some(etherparse::TransportSlice::Icmpv4(_))
        ));
    }

    #[test]
    fn frag_needed_carries_the_mtu() {
        let p = v4_udp(9, 100);
        let mut out = [0u8; 600];
        let n = emit_error(
            IcmpError::TooBig { mtu: 1400 },
            &p,
            [10, 0, 0, 254].into(),
            &mut out,
        )
        .unwrap();
        let (_, m) = read(&out[..n]).unwrap();
        assert_eq!((m.kind, m.code, m.rest), (3, 4, [0, 0, 0x05, 0x78]));
    }

    #[test]
    fn never_about_an_icmp_error_or_multicast() {
        let p = v4_udp(1, 40);
        let mut out = [0u8; 600];
        let n = emit_error(
            IcmpError::TimeExceeded,
            &p,
            [10, 0, 0, 254].into(),
            &mut out,
        )
        .unwrap();
        let err = out[..n].to_vec();
        assert_eq!(
            emit_error(
                IcmpError::TimeExceeded,
                &err,
                [10, 0, 0, 253].into(),
                &mut out
            ),
            Err(IcmpBuildError::Suppressed)
        );
        let mut m = p.clone();
        crate::rewrite::set_address(&mut m, true, [224, 0, 0, 5].into()).unwrap();
        assert_eq!(
            emit_error(
                IcmpError::TimeExceeded,
                &m,
                [10, 0, 0, 254].into(),
                &mut out
            ),
            Err(IcmpBuildError::Suppressed)
        );
    }

    #[test]
    fn echo_round_trip_v4_and_v6() {
        for (s, d) in [
            (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2])),
            (
                IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 1]),
                IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 2]),
            ),
        ] {
            let mut buf = [0u8; 100];
            let n = emit_echo_request(s, d, 7, 9, b"ping!", &mut buf).unwrap();
            let p = &mut buf[..n];
            let (_, m) = read(p).unwrap();
            assert_eq!((m.rest, m.body), ([0, 7, 0, 9], &b"ping!"[..]));
            echo_reply(p).unwrap();
            let (ip, m) = read(p).unwrap();
            assert_eq!((ip.src, ip.dst), (d, s));
            assert!(m.kind == 0 || m.kind == 129);
            assert_eq!(echo_reply(p), Err(IcmpBuildError::NotEchoRequest));
        }
    }

    #[test]
    fn no_echo_reply_toward_a_multicast_source() {
        let mut buf = [0u8; 64];
        let n = emit_echo_request(
            [224, 0, 0, 9].into(),
            [10, 0, 0, 1].into(),
            1,
            1,
            b"",
            &mut buf,
        )
        .unwrap();
        assert_eq!(echo_reply(&mut buf[..n]), Err(IcmpBuildError::Suppressed));
    }

    #[test]
    fn ipv6_error_verifies_with_etherparse() {
        let mut p = vec![0u8; 40 + 8];
        let (s, d) = (
            IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 1]),
            IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 9]),
        );
        emit_header(&mut p, s, d, 17, 1, 8).unwrap();
        let mut out = [0u8; 1300];
        let from = IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 0xfe]);
        let n = emit_error(IcmpError::TooBig { mtu: 1280 }, &p, from, &mut out).unwrap();
        assert_eq!(n, 40 + 8 + 48);
        let (_, m) = read(&out[..n]).unwrap();
        assert_eq!((m.kind, m.rest), (2, [0, 0, 5, 0]));
        assert_eq!(
            emit_error(IcmpError::TimeExceeded, &p, [1, 2, 3, 4].into(), &mut out),
            Err(IcmpBuildError::MixedFamilies)
        );
    }
}
