//! IPv4 framing of SNAP packets: protocol 254, the SNAP header's addresses, a checked
//! header parse, and TTL decrement for plain forwarding.

use alloc::vec::Vec;
use core::fmt;

use super::{IPV4_HEADER_LEN, TTL};
use crate::wire::{IP_PROTOCOL, Packet};

/// Why bytes are not the IPv4 packet a node expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramingError {
    /// Shorter than an IPv4 header.
    Truncated,
    /// Not IP version 4.
    NotIpv4,
    /// The header or total length does not fit the bytes.
    Length,
    /// The header checksum is wrong.
    Checksum,
    /// The packet would pass 65535 bytes.
    TooLarge,
    /// Not a (well-formed) SNAP packet, or not IP protocol 254.
    NotSnap,
}

impl fmt::Display for FramingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FramingError::Truncated => "IPv4 packet shorter than its header",
            FramingError::NotIpv4 => "not an IPv4 packet",
            FramingError::Length => "IPv4 lengths do not fit the packet",
            FramingError::Checksum => "bad IPv4 header checksum",
            FramingError::TooLarge => "IPv4 packet would pass 65535 bytes",
            FramingError::NotSnap => "not a SNAP packet",
        })
    }
}

impl core::error::Error for FramingError {}

/// The IPv4 header fields the simulator reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Header {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Protocol number.
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
}

/// The Internet checksum of `bytes` (RFC 1071): 0 over a header whose checksum is right.
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in bytes.chunks(2) {
        let hi = c.first().copied().unwrap_or(0);
        let lo = c.get(1).copied().unwrap_or(0);
        sum += u32::from(u16::from_be_bytes([hi, lo]));
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

impl Ipv4Header {
    /// Reads the header of `packet` (checking version, lengths and checksum) and returns it
    /// with the payload; options are skipped, bytes past the total length ignored.
    ///
    /// # Errors
    ///
    /// [`FramingError`] naming the first check that failed.
    pub fn parse(packet: &[u8]) -> Result<(Ipv4Header, &[u8]), FramingError> {
        let h: &[u8; IPV4_HEADER_LEN] = packet
            .get(..IPV4_HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(FramingError::Truncated)?;
        if h[0] >> 4 != 4 {
            return Err(FramingError::NotIpv4);
        }
        let ihl = 4 * usize::from(h[0] & 0x0F);
        let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if ihl < IPV4_HEADER_LEN || total < ihl || total > packet.len() {
            return Err(FramingError::Length);
        }
        if checksum(packet.get(..ihl).ok_or(FramingError::Length)?) != 0 {
            return Err(FramingError::Checksum);
        }
        let header = Ipv4Header {
            src: [h[12], h[13], h[14], h[15]],
            dst: [h[16], h[17], h[18], h[19]],
            protocol: h[9],
            ttl: h[8],
        };
        Ok((header, packet.get(ihl..total).ok_or(FramingError::Length)?))
    }

    /// An IPv4 packet with this header (no options, don't-fragment set) around `payload`.
    ///
    /// # Errors
    ///
    /// [`FramingError::TooLarge`] past 65535 bytes.
    pub fn emit(&self, payload: &[u8]) -> Result<Vec<u8>, FramingError> {
        let total =
            u16::try_from(IPV4_HEADER_LEN + payload.len()).map_err(|_| FramingError::TooLarge)?;
        let mut out = Vec::with_capacity(usize::from(total));
        out.extend_from_slice(&[0x45, 0]);
        out.extend_from_slice(&total.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0x40, 0, self.ttl, self.protocol, 0, 0]);
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.dst);
        let sum = checksum(&out).to_be_bytes();
        if let Some(c) = out.get_mut(10..12) {
            c.copy_from_slice(&sum);
        }
        out.extend_from_slice(payload);
        Ok(out)
    }
}

/// Wraps a SNAP packet in IPv4 (protocol 254, TTL [`TTL`], the SNAP source and
/// destination).
///
/// # Errors
///
/// [`FramingError::NotSnap`] if `snap` is not a well-formed SNAP packet;
/// [`FramingError::TooLarge`] past 65535 bytes.
pub fn encapsulate(snap: &[u8]) -> Result<Vec<u8>, FramingError> {
    let p = Packet::new_checked(snap).map_err(|_| FramingError::NotSnap)?;
    let header = Ipv4Header {
        src: p.src(),
        dst: p.dst(),
        protocol: IP_PROTOCOL,
        ttl: TTL,
    };
    header.emit(snap)
}

/// The SNAP packet inside an IPv4 packet of protocol 254 (its structure not yet checked).
///
/// # Errors
///
/// [`FramingError`] if `ip` is not a valid IPv4 packet, or not protocol 254.
pub fn decapsulate(ip: &[u8]) -> Result<&[u8], FramingError> {
    let (header, payload) = Ipv4Header::parse(ip)?;
    if header.protocol != IP_PROTOCOL {
        return Err(FramingError::NotSnap);
    }
    Ok(payload)
}

/// Decrements the TTL of a valid IPv4 packet in place, fixing the checksum; returns the new
/// TTL (`None` if `packet` is not valid IPv4, `Some(0)` if it expired).
pub fn decrement_ttl(packet: &mut [u8]) -> Option<u8> {
    Ipv4Header::parse(packet).ok()?;
    let ihl = 4 * usize::from(packet.first()? & 0x0F);
    let ttl = packet.get(8)?.saturating_sub(1);
    *packet.get_mut(8)? = ttl;
    packet.get_mut(10..12)?.copy_from_slice(&[0, 0]);
    let c = checksum(packet.get(..ihl)?);
    packet.get_mut(10..12)?.copy_from_slice(&c.to_be_bytes());
    Some(ttl)
}
