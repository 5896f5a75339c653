//! IP framing of SNAP packets (one packet model for the workspace): a SNAP packet is the
//! payload of an IPv4 packet of protocol [`IP_PROTOCOL`] (254), or of an IPv6 packet of next
//! header 254 if its header says its addresses are IPv6 ([`FLAG_IPV6`]),
//! whose source and destination are the SNAP header's. A node strips the IP header
//! ([`decapsulate`]), runs the SNAP packet and wraps each packet it sends in a fresh header
//! of the packet's family ([`encapsulate`], TTL / hop limit [`TTL`]). The IP header itself
//! is checked and built by `waist-ip`, the workspace's one IP layer.
//!
//! ```
//! use snap_vm::ip::{decapsulate, encapsulate};
//! use snap_vm::op::Op;
//! use snap_vm::program::Program;
//! use snap_vm::value::Word;
//!
//! let code = vec![Word::new(Op::Exit as u8, 0)];
//! let snap = Program { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], rb: 4, code, ..Program::default() }
//!     .to_bytes()?;
//! let ip = encapsulate(&snap)?;
//! assert_eq!((ip[9], &ip[16..20]), (254, &[10, 0, 0, 2][..]));
//! assert_eq!(decapsulate(&ip)?, &snap[..]);
//!
//! // The same program between IPv6 hosts travels in IPv6, next header 254.
//! let mut six = Program { rb: 4, code: vec![Word::new(Op::Exit as u8, 0)], ..Program::default() };
//! six.set_addrs("fd00::1".parse()?, "fd00::2".parse()?)?;
//! let snap6 = six.to_bytes()?;
//! let ip6 = encapsulate(&snap6)?;
//! assert_eq!((ip6[0] >> 4, ip6[6], ip6[7]), (6, 254, 64));
//! assert_eq!(decapsulate(&ip6)?, &snap6[..]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::vec::Vec;
use core::fmt;

use waist_ip::{IPV4_HEADER_LEN, IPV6_HEADER_LEN, IpError, IpHeader, Version, emit_header};

use crate::wire::{FLAG_IPV6, IP_PROTOCOL, Packet};

/// TTL (IPv4) or hop limit (IPv6) of every SNAP packet a node sends. The resource bound, not the TTL, limits a
/// SNAP packet; only plain forwarding (a node without SNAP) decrements the TTL.
pub const TTL: u8 = 64;

/// Why bytes are not the SNAP packet in IP a node expected, or cannot become one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramingError {
    /// Not a well-formed IP packet (the IP layer says why).
    Ip(IpError),
    /// A SNAP packet whose addresses are of the other family than the IP packet's.
    FamilyMismatch,
    /// The packet would pass 65535 bytes.
    TooLarge,
    /// Not a (well-formed) SNAP packet, or not IP protocol 254.
    NotSnap,
}

impl fmt::Display for FramingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramingError::Ip(e) => write!(f, "malformed IP packet: {e}"),
            FramingError::FamilyMismatch => {
                f.write_str("SNAP addresses of the other family than the IP packet's")
            }
            FramingError::TooLarge => f.write_str("IP packet would pass 65535 bytes"),
            FramingError::NotSnap => f.write_str("not a SNAP packet"),
        }
    }
}

impl core::error::Error for FramingError {}

impl From<IpError> for FramingError {
    fn from(e: IpError) -> Self {
        match e {
            IpError::TooLong { .. } => FramingError::TooLarge,
            e => FramingError::Ip(e),
        }
    }
}

/// Wraps a SNAP packet in IP of its family: IPv4 (protocol 254, TTL [`TTL`], the SNAP
/// source and destination, don't-fragment set) or IPv6 (next header 254, hop limit
/// [`TTL`]).
///
/// # Errors
///
/// [`FramingError::NotSnap`] if `snap` is not a well-formed SNAP packet;
/// [`FramingError::TooLarge`] past 65535 bytes.
pub fn encapsulate(snap: &[u8]) -> Result<Vec<u8>, FramingError> {
    let mut out = Vec::new();
    encapsulate_into(snap, &mut out)?;
    Ok(out)
}

/// As [`encapsulate`], into `out` (cleared first), reusing its allocation.
///
/// # Errors
///
/// As [`encapsulate`]; `out` is then empty.
pub fn encapsulate_into(snap: &[u8], out: &mut Vec<u8>) -> Result<(), FramingError> {
    out.clear();
    let slot = slot_for(snap);
    out.resize(slot, 0);
    out.extend_from_slice(snap);
    let framed = if slot == IPV6_HEADER_LEN {
        reframe6_in_place(out)
    } else {
        reframe_in_place(out)
    };
    if framed.is_err() {
        out.clear();
    }
    framed
}

/// Bytes of the IP header in front of a SNAP packet: 40 if its header's flags say its
/// addresses are IPv6, else 20.
fn slot_for(snap: &[u8]) -> usize {
    if snap.first().is_some_and(|f| f & FLAG_IPV6 != 0) {
        IPV6_HEADER_LEN
    } else {
        IPV4_HEADER_LEN
    }
}

/// Frames, in place, an IPv4 SNAP packet that follows a 20-byte slot at the front of `ip`:
/// writes into the slot exactly the header [`encapsulate`] would put in front of
/// `ip[20..]`. A router forwarding a SNAP packet it received in a 20-byte IPv4 header
/// re-frames it this way without copying it out and back.
///
/// # Errors
///
/// As [`encapsulate`] ([`FramingError::FamilyMismatch`] for an IPv6 SNAP packet); `ip` is
/// then unchanged.
#[inline]
pub fn reframe_in_place(ip: &mut [u8]) -> Result<(), FramingError> {
    // Written out for IPv4 (no `IpAddr` family tests): the transit path's per-packet cost.
    let (header, snap) = ip
        .split_at_mut_checked(IPV4_HEADER_LEN)
        .ok_or(FramingError::NotSnap)?;
    let p = Packet::new_checked(&*snap).map_err(|_| FramingError::NotSnap)?;
    if p.is_ipv6() {
        return Err(FramingError::FamilyMismatch);
    }
    let (src, dst) = (p.src().into(), p.dst().into());
    emit_header(header, src, dst, IP_PROTOCOL, TTL, snap.len())?;
    Ok(())
}

/// [`reframe_in_place`] for an IPv6 SNAP packet after a 40-byte slot (a SNAP packet
/// received in an IPv6 header without extension headers).
///
/// # Errors
///
/// As [`encapsulate`] ([`FramingError::FamilyMismatch`] for an IPv4 SNAP packet); `ip` is
/// then unchanged.
pub fn reframe6_in_place(ip: &mut [u8]) -> Result<(), FramingError> {
    let (header, snap) = ip
        .split_at_mut_checked(IPV6_HEADER_LEN)
        .ok_or(FramingError::NotSnap)?;
    let p = Packet::new_checked(&*snap).map_err(|_| FramingError::NotSnap)?;
    if !p.is_ipv6() {
        return Err(FramingError::FamilyMismatch);
    }
    emit_header(
        header,
        p.src_addr(),
        p.dst_addr(),
        IP_PROTOCOL,
        TTL,
        snap.len(),
    )?;
    Ok(())
}

/// The SNAP packet inside an IPv4 packet of protocol 254 or an IPv6 packet of next header
/// 254 (its structure not yet checked, but for its family): the bytes between the IP
/// header (IPv4 options skipped) and the packet's end. SNAP in IPv6 follows the fixed
/// header directly: behind extension headers it is not recognised.
///
/// # Errors
///
/// [`FramingError`] if `ip` is not a valid IP packet (IPv4 header checksum included), not
/// protocol 254, or carries SNAP of the other family.
pub fn decapsulate(ip: &[u8]) -> Result<&[u8], FramingError> {
    let h = IpHeader::parse(ip)?;
    payload_of(&h, ip)
}

/// The SNAP payload of a packet whose header `h` was already checked (by the caller's own
/// [`IpHeader::parse`]).
///
/// # Errors
///
/// [`FramingError::NotSnap`] or [`FramingError::FamilyMismatch`].
pub fn payload_of<'p>(h: &IpHeader, ip: &'p [u8]) -> Result<&'p [u8], FramingError> {
    if h.protocol != IP_PROTOCOL {
        return Err(FramingError::NotSnap);
    }
    let snap = ip
        .get(h.header_len..h.total_len)
        .ok_or(FramingError::NotSnap)?;
    let ipv6 = slot_for(snap) == IPV6_HEADER_LEN;
    if ipv6 != (h.version == Version::V6) {
        return Err(FramingError::FamilyMismatch);
    }
    Ok(snap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;
    use crate::program::Program;
    use crate::value::Word;

    #[test]
    fn framing_round_trips_and_checks() {
        let snap = Program {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            rb: 3,
            code: alloc::vec![Word::new(Op::Exit as u8, 0)],
            ..Program::default()
        }
        .to_bytes()
        .unwrap_or_default();
        let p = encapsulate(&snap).unwrap_or_default();
        let n = (20 + snap.len()) as u8;
        assert_eq!(
            p[..12],
            [0x45, 0, 0, n, 0, 0, 0x40, 0, 64, 254, p[10], p[11]]
        );
        assert_eq!(p[12..20], [10, 0, 0, 1, 10, 0, 0, 2]);
        let (h, _) = etherparse::Ipv4Header::from_slice(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        assert_eq!(decapsulate(&p), Ok(&snap[..]));
        let mut bad = p.clone();
        bad[11] ^= 1;
        assert_eq!(decapsulate(&bad), Err(FramingError::Ip(IpError::Checksum)));
        assert!(matches!(
            decapsulate(&p[..19]),
            Err(FramingError::Ip(IpError::Truncated { .. }))
        ));
        assert!(matches!(
            decapsulate(&p[..p.len() - 1]),
            Err(FramingError::Ip(IpError::TotalLength { .. }))
        ));
        assert_eq!(encapsulate(b"not snap"), Err(FramingError::NotSnap));
        let mut udp = p.clone();
        waist_ip::rewrite::rewrite(&mut udp, 9, &[17]).unwrap_or_default();
        assert_eq!(decapsulate(&udp), Err(FramingError::NotSnap));
    }

    fn six() -> Vec<u8> {
        let mut p = Program {
            rb: 3,
            code: alloc::vec![Word::new(Op::Exit as u8, 0)],
            ..Program::default()
        };
        let a: core::net::IpAddr = core::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1).into();
        let b: core::net::IpAddr = core::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2).into();
        p.set_addrs(a, b).unwrap_or_else(|e| panic!("{e}"));
        p.to_bytes().unwrap_or_default()
    }

    #[test]
    fn ipv6_framing_round_trips_and_checks_the_family() {
        let snap = six();
        assert_eq!(snap.len(), crate::wire::HEADER_LEN_V6 + 4);
        let p = encapsulate(&snap).unwrap_or_default();
        let (h, rest) = etherparse::Ipv6Header::from_slice(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((h.next_header.0, h.hop_limit), (254, 64));
        assert_eq!(usize::from(h.payload_length), snap.len());
        assert_eq!(h.source[15], 1);
        assert_eq!(h.destination[15], 2);
        assert_eq!(rest, &snap[..]);
        assert_eq!(decapsulate(&p), Ok(&snap[..]));
        // In place, after a 40-byte slot: the same bytes.
        let mut again = alloc::vec![0xAA; 40];
        again.extend_from_slice(&snap);
        assert_eq!(reframe6_in_place(&mut again), Ok(()));
        assert_eq!(again, p);
        // A family the slot does not fit, either way round.
        assert_eq!(
            reframe_in_place(&mut again[20..]),
            Err(FramingError::FamilyMismatch)
        );
        let v4 = encapsulate(
            &Program {
                src: [10, 0, 0, 1],
                dst: [10, 0, 0, 2],
                code: alloc::vec![Word::new(Op::Exit as u8, 0)],
                ..Program::default()
            }
            .to_bytes()
            .unwrap_or_default(),
        )
        .unwrap_or_default();
        let mut v4_in_40 = alloc::vec![0; 20];
        v4_in_40.extend_from_slice(&v4);
        assert_eq!(
            reframe6_in_place(&mut v4_in_40),
            Err(FramingError::FamilyMismatch)
        );
        // IPv6 SNAP inside IPv4 (or the reverse) is refused.
        let mut mixed = alloc::vec![0; 20];
        mixed.extend_from_slice(&snap);
        let src = core::net::IpAddr::from([10, 0, 0, 1]);
        let dst = core::net::IpAddr::from([10, 0, 0, 2]);
        emit_header(&mut mixed, src, dst, IP_PROTOCOL, TTL, snap.len()).unwrap_or_default();
        assert_eq!(decapsulate(&mixed), Err(FramingError::FamilyMismatch));
    }
}
