//! The fixed IPv4 and IPv6 headers: checks, the fields a router reads, and builders.
//!
//! [`IpHeader::parse`] is the one place a waist core checks an IP header: version, lengths
//! and (IPv4) the header checksum, as RFC 1812 §5.2.2 asks of a router. Bytes past the
//! declared length (link padding) are allowed and reported by [`IpHeader::total_len`].
//!
//! ```
//! use core::net::{IpAddr, Ipv4Addr};
//! use waist_ip::{IpHeader, Version, emit_header};
//!
//! let (src, dst) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
//! let mut packet = [0u8; 28];
//! let n = emit_header(&mut packet, src, dst, 17, 64, 8)?;
//! assert_eq!(n, 20);
//! let h = IpHeader::parse(&packet)?;
//! assert_eq!((h.version, h.src, h.dst, h.protocol, h.ttl), (Version::V4, src, dst, 17, 64));
//! assert_eq!((h.header_len, h.total_len), (20, 28));
//! # Ok::<(), waist_ip::IpError>(())
//! ```

use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Bytes of an IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// Bytes of the fixed IPv6 header.
pub const IPV6_HEADER_LEN: usize = 40;
/// The largest IPv4 header (15 words).
pub const IPV4_MAX_HEADER_LEN: usize = 60;

pub(crate) mod field {
    use core::ops::Range;
    pub(crate) const V4_TTL: usize = 8;
    pub(crate) const V4_PROTOCOL: usize = 9;
    pub(crate) const V4_CHECKSUM: Range<usize> = 10..12;
    pub(crate) const V4_SRC: Range<usize> = 12..16;
    pub(crate) const V4_DST: Range<usize> = 16..20;
    pub(crate) const V6_PAYLOAD_LEN: Range<usize> = 4..6;
    pub(crate) const V6_NEXT_HEADER: usize = 6;
    pub(crate) const V6_HOP_LIMIT: usize = 7;
    pub(crate) const V6_SRC: Range<usize> = 8..24;
    pub(crate) const V6_DST: Range<usize> = 24..40;
}

/// Why bytes are not a well-formed IP packet, or a header cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpError {
    /// Fewer bytes than the header needs.
    Truncated {
        /// Bytes present.
        len: usize,
        /// Bytes needed.
        needed: usize,
    },
    /// An IP version other than 4 and 6.
    Version {
        /// The version nibble.
        version: u8,
    },
    /// An IPv4 header length (IHL) below 5 words.
    HeaderLength {
        /// The IHL field.
        ihl: u8,
    },
    /// The IPv4 total length (or IPv6 40 + payload length) is below the header length or
    /// beyond the bytes present.
    TotalLength {
        /// Bytes the header declares.
        declared: usize,
        /// Bytes present.
        len: usize,
    },
    /// The IPv4 header checksum is wrong.
    Checksum,
    /// Source and destination of different families, to a builder.
    MixedFamilies,
    /// The packet to build would exceed the IP length field.
    TooLong {
        /// Bytes it would have.
        len: usize,
    },
}

impl fmt::Display for IpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpError::Truncated { len, needed } => {
                write!(f, "IP packet truncated: {len} of {needed} bytes")
            }
            IpError::Version { version } => write!(f, "IP version {version}, expected 4 or 6"),
            IpError::HeaderLength { ihl } => write!(f, "IPv4 header length {ihl} words, below 5"),
            IpError::TotalLength { declared, len } => {
                write!(f, "IP length {declared} but {len} bytes present")
            }
            IpError::Checksum => f.write_str("bad IPv4 header checksum"),
            IpError::MixedFamilies => f.write_str("source and destination of different families"),
            IpError::TooLong { len } => write!(f, "IP packet of {len} bytes is too long"),
        }
    }
}

impl core::error::Error for IpError {}

/// IP version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// The fields of a checked IP header that a router and a host read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpHeader {
    /// IPv4 or IPv6.
    pub version: Version,
    /// Bytes of the header: IHL × 4 for IPv4 (options included), 40 for IPv6 (extension
    /// headers are payload here).
    pub header_len: usize,
    /// Bytes of the packet as its header declares them (≤ the bytes present).
    pub total_len: usize,
    /// TTL (IPv4) or hop limit (IPv6).
    pub ttl: u8,
    /// IPv4 protocol, or the IPv6 fixed header's next header.
    pub protocol: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IPv4 don't-fragment flag (always true for IPv6, where routers never fragment).
    pub dont_fragment: bool,
    /// Whether the packet is an IPv4 fragment other than the first (offset ≠ 0).
    pub later_fragment: bool,
    /// The IPv4 more-fragments flag (false for IPv6).
    pub more_fragments: bool,
}

impl IpHeader {
    /// Checks the header of `packet` (version, header and total length, IPv4 checksum) and
    /// reads its fields.
    ///
    /// # Errors
    ///
    /// [`IpError`] naming the first check that failed.
    // Always inlined, and the header built once, in place: returned through memory and
    // moved, it cost a store-forwarding stall in the caller (about 7 ns a packet at a
    // router).
    #[inline(always)]
    pub fn parse(packet: &[u8]) -> Result<IpHeader, IpError> {
        IpHeader::check(packet, true)
    }

    /// As [`parse`](IpHeader::parse) without verifying the IPv4 header checksum (for
    /// callers that have verified it, or that must read a packet regardless).
    ///
    /// # Errors
    ///
    /// [`IpError`] naming the first check that failed.
    #[inline(always)]
    pub fn parse_unverified(packet: &[u8]) -> Result<IpHeader, IpError> {
        IpHeader::check(packet, false)
    }

    #[inline(always)]
    fn check(packet: &[u8], verify: bool) -> Result<IpHeader, IpError> {
        let len = packet.len();
        let Some(&first) = packet.first() else {
            return Err(IpError::Truncated { len, needed: 1 });
        };
        match first >> 4 {
            4 => {
                // A fixed-size view: constant indices below cannot be out of bounds.
                let Some(h) = packet.first_chunk::<IPV4_HEADER_LEN>() else {
                    return Err(IpError::Truncated {
                        len,
                        needed: IPV4_HEADER_LEN,
                    });
                };
                let ihl = first & 0x0F;
                if ihl < 5 {
                    return Err(IpError::HeaderLength { ihl });
                }
                let header_len = usize::from(ihl) * 4;
                let total_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
                if total_len < header_len || total_len > len {
                    return Err(IpError::TotalLength {
                        declared: total_len,
                        len,
                    });
                }
                if verify
                    && packet
                        .get(..header_len)
                        .is_none_or(|bytes| !header_sum_ok(bytes))
                {
                    return Err(IpError::Checksum);
                }
                let flags = u16::from_be_bytes([h[6], h[7]]);
                Ok(IpHeader {
                    version: Version::V4,
                    header_len,
                    total_len,
                    ttl: h[field::V4_TTL],
                    protocol: h[field::V4_PROTOCOL],
                    src: IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15])),
                    dst: IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19])),
                    dont_fragment: flags & 0x4000 != 0,
                    later_fragment: flags & 0x1FFF != 0,
                    more_fragments: flags & 0x2000 != 0,
                })
            }
            6 => {
                let Some(h) = packet.get(..IPV6_HEADER_LEN) else {
                    return Err(IpError::Truncated {
                        len,
                        needed: IPV6_HEADER_LEN,
                    });
                };
                let total_len = IPV6_HEADER_LEN + usize::from(be16(h, 4));
                if total_len > len {
                    return Err(IpError::TotalLength {
                        declared: total_len,
                        len,
                    });
                }
                Ok(IpHeader {
                    version: Version::V6,
                    header_len: IPV6_HEADER_LEN,
                    total_len,
                    ttl: byte(h, field::V6_HOP_LIMIT),
                    protocol: byte(h, field::V6_NEXT_HEADER),
                    src: IpAddr::V6(Ipv6Addr::from(addr16(h, 8))),
                    dst: IpAddr::V6(Ipv6Addr::from(addr16(h, 24))),
                    dont_fragment: true,
                    later_fragment: false,
                    more_fragments: false,
                })
            }
            version => Err(IpError::Version { version }),
        }
    }
}

/// Whether an IPv4 header (a whole number of 32-bit words, as IHL makes it) sums to
/// 0xFFFF: its checksum is right. Shorter than the general [`checksum`] for 20–60 bytes.
#[inline]
fn header_sum_ok(header: &[u8]) -> bool {
    let sum = |words: core::slice::ChunksExact<'_, u8>| {
        let mut acc = 0u64;
        for w in words {
            let mut b = [0u8; 4];
            b.copy_from_slice(w);
            acc += u64::from(u32::from_ne_bytes(b));
        }
        acc = (acc >> 32) + (acc & 0xffff_ffff);
        acc = (acc >> 16) + (acc & 0xffff);
        (acc >> 16) + (acc & 0xffff)
    };
    let acc = match header.first_chunk::<IPV4_HEADER_LEN>() {
        // The common header, without options: a loop of known length, which unrolls.
        Some(h) if header.len() == IPV4_HEADER_LEN => sum(h.chunks_exact(4)),
        _ => sum(header.chunks_exact(4)),
    };
    acc == 0xffff && header.len().is_multiple_of(4)
}

#[inline]
pub(crate) fn byte(p: &[u8], at: usize) -> u8 {
    p.get(at).copied().unwrap_or(0)
}

#[inline]
pub(crate) fn be16(p: &[u8], at: usize) -> u16 {
    match p.get(at..at + 2) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

#[inline]
fn addr16(p: &[u8], at: usize) -> [u8; 16] {
    let mut a = [0u8; 16];
    if let Some(s) = p.get(at..at + 16) {
        a.copy_from_slice(s);
    }
    a
}

/// Bytes of the header [`emit_header`] writes for `addr`'s family: 20 or 40.
pub const fn header_len_for(addr: IpAddr) -> usize {
    match addr {
        IpAddr::V4(_) => IPV4_HEADER_LEN,
        IpAddr::V6(_) => IPV6_HEADER_LEN,
    }
}

/// Writes an IP header at the start of `out` for a payload of `payload_len` bytes that the
/// caller places after it: IPv4 without options (identification 0, don't-fragment set,
/// checksum filled) or IPv6 (traffic class and flow label 0). Returns the header's length.
///
/// # Errors
///
/// [`IpError::MixedFamilies`], [`IpError::TooLong`] past the length field,
/// [`IpError::Truncated`] if `out` is shorter than the header.
pub fn emit_header(
    out: &mut [u8],
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    ttl: u8,
    payload_len: usize,
) -> Result<usize, IpError> {
    let len = out.len();
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = IPV4_HEADER_LEN + payload_len;
            let total16 = u16::try_from(total).map_err(|_| IpError::TooLong { len: total })?;
            let h = out.get_mut(..IPV4_HEADER_LEN).ok_or(IpError::Truncated {
                len,
                needed: IPV4_HEADER_LEN,
            })?;
            let [t0, t1] = total16.to_be_bytes();
            let [s0, s1, s2, s3] = s.octets();
            let [d0, d1, d2, d3] = d.octets();
            // The checksum from the field values (RFC 1071: the one's-complement sum of the
            // header's 16-bit words), not by reading back the bytes just written: those
            // narrow stores would stall the wider loads of a checksum over memory.
            let word = |hi: u8, lo: u8| u32::from(u16::from_be_bytes([hi, lo]));
            let sum = 0x4500
                + u32::from(total16)
                + 0x4000
                + word(ttl, protocol)
                + word(s0, s1)
                + word(s2, s3)
                + word(d0, d1)
                + word(d2, d3);
            let sum = (sum & 0xffff) + (sum >> 16);
            let sum = (sum & 0xffff) + (sum >> 16);
            // Truncation on purpose: two folds leave at most 16 bits.
            let [c0, c1] = (!(sum as u16)).to_be_bytes();
            h.copy_from_slice(&[
                0x45, 0, t0, t1, 0, 0, 0x40, 0, ttl, protocol, c0, c1, s0, s1, s2, s3, d0, d1, d2,
                d3,
            ]);
            Ok(IPV4_HEADER_LEN)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let payload = u16::try_from(payload_len).map_err(|_| IpError::TooLong {
                len: IPV6_HEADER_LEN + payload_len,
            })?;
            let h = out.get_mut(..IPV6_HEADER_LEN).ok_or(IpError::Truncated {
                len,
                needed: IPV6_HEADER_LEN,
            })?;
            h.fill(0);
            if let Some(b) = h.first_mut() {
                *b = 0x60;
            }
            if let Some(p) = h.get_mut(field::V6_PAYLOAD_LEN) {
                p.copy_from_slice(&payload.to_be_bytes());
            }
            if let Some(b) = h.get_mut(field::V6_NEXT_HEADER) {
                *b = protocol;
            }
            if let Some(b) = h.get_mut(field::V6_HOP_LIMIT) {
                *b = ttl;
            }
            if let Some(a) = h.get_mut(field::V6_SRC) {
                a.copy_from_slice(&s.octets());
            }
            if let Some(a) = h.get_mut(field::V6_DST) {
                a.copy_from_slice(&d.octets());
            }
            Ok(IPV6_HEADER_LEN)
        }
        _ => Err(IpError::MixedFamilies),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::checksum;

    const V4: [u8; 24] = [
        0x45, 0x00, 0x00, 0x18, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, 0,
        0, 2, 0xde, 0xad, 0xbe, 0xef,
    ];

    fn fixed(mut p: [u8; 24]) -> [u8; 24] {
        p[10..12].fill(0);
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn parses_a_literal_ipv4_packet() {
        let p = fixed(V4);
        let h = IpHeader::parse(&p).unwrap();
        assert_eq!(h.version, Version::V4);
        assert_eq!(
            (h.header_len, h.total_len, h.ttl, h.protocol),
            (20, 24, 64, 17)
        );
        assert!(h.dont_fragment && !h.later_fragment);
        assert_eq!(h.dst, IpAddr::from([10, 0, 0, 2]));
    }

    #[test]
    fn rejects_each_malformation() {
        let p = fixed(V4);
        let mut bad = p;
        bad[11] ^= 1;
        assert_eq!(IpHeader::parse(&bad), Err(IpError::Checksum));
        assert!(IpHeader::parse_unverified(&bad).is_ok());
        assert_eq!(
            IpHeader::parse(&p[..19]),
            Err(IpError::Truncated {
                len: 19,
                needed: 20
            })
        );
        let mut v = p;
        v[0] = 0x55;
        assert_eq!(IpHeader::parse(&v), Err(IpError::Version { version: 5 }));
        let mut ihl = p;
        ihl[0] = 0x44;
        assert_eq!(IpHeader::parse(&ihl), Err(IpError::HeaderLength { ihl: 4 }));
        assert_eq!(
            IpHeader::parse(&p[..23]),
            Err(IpError::TotalLength {
                declared: 24,
                len: 23
            })
        );
        assert_eq!(
            IpHeader::parse(&[]),
            Err(IpError::Truncated { len: 0, needed: 1 })
        );
    }

    #[test]
    fn ipv6_round_trip_and_padding() {
        let (s, d) = (
            IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 1]),
            IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 2]),
        );
        let mut p = [0u8; 52];
        assert_eq!(emit_header(&mut p, s, d, 58, 9, 10), Ok(40));
        let h = IpHeader::parse(&p).unwrap();
        assert_eq!(
            (h.total_len, h.ttl, h.protocol, h.src, h.dst),
            (50, 9, 58, s, d)
        );
        assert_eq!(
            emit_header(&mut p, s, IpAddr::from([1, 2, 3, 4]), 6, 1, 0),
            Err(IpError::MixedFamilies)
        );
    }

    #[test]
    fn emitted_ipv4_agrees_with_etherparse() {
        let mut p = [0u8; 30];
        emit_header(
            &mut p,
            [192, 168, 1, 1].into(),
            [8, 8, 8, 8].into(),
            6,
            33,
            10,
        )
        .unwrap();
        let (h, _) = etherparse::Ipv4Header::from_slice(&p).unwrap();
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        assert_eq!((h.time_to_live, h.total_len), (33, 30));
    }

    proptest::proptest! {
        /// The IPv4 header `emit_header` writes checksums to zero over its bytes (its
        /// checksum is computed from the field values, not read back) and parses back.
        #[test]
        fn emitted_v4_headers_check(
            src in proptest::prelude::any::<[u8; 4]>(),
            dst in proptest::prelude::any::<[u8; 4]>(),
            ttl in proptest::prelude::any::<u8>(),
            protocol in proptest::prelude::any::<u8>(),
            payload_len in 0usize..65_516,
        ) {
            let mut p = std::vec![0u8; IPV4_HEADER_LEN + payload_len];
            let n = emit_header(&mut p, src.into(), dst.into(), protocol, ttl, payload_len);
            proptest::prop_assert_eq!(n, Ok(IPV4_HEADER_LEN));
            proptest::prop_assert_eq!(checksum(&p[..IPV4_HEADER_LEN]), 0);
            let h = IpHeader::parse(&p);
            proptest::prop_assert!(h.is_ok(), "{h:?}");
            let h = h.unwrap();
            proptest::prop_assert_eq!((h.ttl, h.protocol, h.total_len), (ttl, protocol, p.len()));
        }
    }
}
