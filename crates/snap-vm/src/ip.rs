//! IPv4 framing of SNAP packets (one packet model for the workspace): a SNAP packet is the
//! payload of an IPv4 packet of protocol [`IP_PROTOCOL`] (254) whose source and destination
//! are the SNAP header's. A node strips the IP header ([`decapsulate`]), runs the SNAP
//! packet and wraps each packet it sends in a fresh header ([`encapsulate`], TTL [`TTL`]).
//! The IP header itself is checked and built by `waist-ip`, the workspace's one IP layer.
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
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::vec::Vec;
use core::fmt;

use waist_ip::{IPV4_HEADER_LEN, IpError, IpHeader, Version, emit_header};

use crate::wire::{IP_PROTOCOL, Packet};

/// IPv4 TTL of every SNAP packet a node sends. The resource bound, not the TTL, limits a
/// SNAP packet; only plain forwarding (a node without SNAP) decrements the TTL.
pub const TTL: u8 = 64;

/// Why bytes are not the IPv4 SNAP packet a node expected, or cannot become one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramingError {
    /// Not a well-formed IPv4 packet (the IP layer says why).
    Ip(IpError),
    /// An IPv6 packet: SNAP's addresses are IPv4.
    NotIpv4,
    /// The packet would pass 65535 bytes.
    TooLarge,
    /// Not a (well-formed) SNAP packet, or not IP protocol 254.
    NotSnap,
}

impl fmt::Display for FramingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramingError::Ip(e) => write!(f, "malformed IP packet: {e}"),
            FramingError::NotIpv4 => f.write_str("not an IPv4 packet"),
            FramingError::TooLarge => f.write_str("IPv4 packet would pass 65535 bytes"),
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

/// Wraps a SNAP packet in IPv4 (protocol 254, TTL [`TTL`], the SNAP source and
/// destination, don't-fragment set).
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
    out.resize(IPV4_HEADER_LEN, 0);
    out.extend_from_slice(snap);
    let framed = reframe_in_place(out);
    if framed.is_err() {
        out.clear();
    }
    framed
}

/// Frames, in place, a SNAP packet that follows a 20-byte slot at the front of `ip`: writes
/// into the slot exactly the header [`encapsulate`] would put in front of `ip[20..]`. A
/// router forwarding a SNAP packet it received in a 20-byte IPv4 header re-frames it this
/// way without copying it out and back.
///
/// # Errors
///
/// As [`encapsulate`]; `ip` is then unchanged.
pub fn reframe_in_place(ip: &mut [u8]) -> Result<(), FramingError> {
    let (header, snap) = ip
        .split_at_mut_checked(IPV4_HEADER_LEN)
        .ok_or(FramingError::NotSnap)?;
    let p = Packet::new_checked(&*snap).map_err(|_| FramingError::NotSnap)?;
    let (src, dst) = (p.src().into(), p.dst().into());
    emit_header(header, src, dst, IP_PROTOCOL, TTL, snap.len())?;
    Ok(())
}

/// The SNAP packet inside an IPv4 packet of protocol 254 (its structure not yet checked):
/// the bytes between the IP header (options skipped) and the IP total length.
///
/// # Errors
///
/// [`FramingError`] if `ip` is not a valid IPv4 packet (header checksum included), or not
/// protocol 254.
pub fn decapsulate(ip: &[u8]) -> Result<&[u8], FramingError> {
    let h = IpHeader::parse(ip)?;
    payload_of(&h, ip)
}

/// The SNAP payload of a packet whose header `h` was already checked (by the caller's own
/// [`IpHeader::parse`]).
///
/// # Errors
///
/// [`FramingError::NotIpv4`] or [`FramingError::NotSnap`].
pub fn payload_of<'p>(h: &IpHeader, ip: &'p [u8]) -> Result<&'p [u8], FramingError> {
    if h.version != Version::V4 {
        return Err(FramingError::NotIpv4);
    }
    if h.protocol != IP_PROTOCOL {
        return Err(FramingError::NotSnap);
    }
    ip.get(h.header_len..h.total_len)
        .ok_or(FramingError::NotSnap)
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
}
