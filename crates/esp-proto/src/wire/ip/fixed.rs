//! The fixed IPv4 and IPv6 headers: length checks, checksum, addresses, reflection, TTL.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::ops::Range;

use super::{IpError, field};

#[inline]
pub(super) fn be16(p: &[u8], r: Range<usize>) -> u16 {
    match p.get(r) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

#[inline]
pub(super) fn put16(p: &mut [u8], r: Range<usize>, v: u16) {
    if let Some([a, b]) = p.get_mut(r) {
        [*a, *b] = v.to_be_bytes();
    }
}

/// The Internet checksum of `bytes` (an IPv4 header: even length, at most 60 bytes).
pub(super) fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| match c {
            [a, b] => u32::from(u16::from_be_bytes([*a, *b])),
            [a] => u32::from(*a) << 8,
            _ => 0,
        })
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Recomputes the checksum of the IPv4 header in `p[..header_len]`.
pub(super) fn fill_checksum(p: &mut [u8], header_len: usize) {
    put16(p, field::V4_CHECKSUM, 0);
    let sum = checksum(p.get(..header_len).unwrap_or_default());
    put16(p, field::V4_CHECKSUM, sum);
}

/// The checked fixed header of an IPv4 or IPv6 packet.
pub(super) enum Fixed {
    V4 { header_len: usize, total_len: usize },
    V6 { end: usize },
}

#[inline]
pub(super) fn fixed_header(p: &[u8]) -> Result<Fixed, IpError> {
    let len = p.len();
    let Some(&first) = p.first() else {
        return Err(IpError::Truncated { len, needed: 1 });
    };
    match first >> 4 {
        4 => {
            if len < field::V4_HEADER_LEN {
                return Err(IpError::Truncated {
                    len,
                    needed: field::V4_HEADER_LEN,
                });
            }
            let ihl = first & 0x0F;
            if ihl < 5 {
                return Err(IpError::HeaderLength { ihl });
            }
            let header_len = usize::from(ihl) * 4;
            let total_len = usize::from(be16(p, field::V4_TOTAL_LEN));
            if total_len < header_len || total_len > len {
                return Err(IpError::TotalLength {
                    declared: total_len,
                    len,
                });
            }
            Ok(Fixed::V4 {
                header_len,
                total_len,
            })
        }
        6 => {
            if len < field::V6_HEADER_LEN {
                return Err(IpError::Truncated {
                    len,
                    needed: field::V6_HEADER_LEN,
                });
            }
            let end = field::V6_HEADER_LEN + usize::from(be16(p, field::V6_PAYLOAD_LEN));
            if end > len {
                return Err(IpError::TotalLength { declared: end, len });
            }
            Ok(Fixed::V6 { end })
        }
        version => Err(IpError::Version { version }),
    }
}

/// Whether the IPv4 header checksum of `packet` is right (false for anything else).
pub fn ipv4_checksum_ok(packet: &[u8]) -> bool {
    match fixed_header(packet) {
        Ok(Fixed::V4 { header_len, .. }) => {
            packet.get(..header_len).is_some_and(|h| checksum(h) == 0)
        }
        _ => false,
    }
}

/// The source and destination addresses of an IPv4 or IPv6 packet.
///
/// # Errors
///
/// [`IpError`] if the fixed header is malformed.
#[inline]
pub fn addresses(packet: &[u8]) -> Result<(IpAddr, IpAddr), IpError> {
    Ok(match fixed_header(packet)? {
        Fixed::V4 { .. } => match packet.get(field::V4_ADDRS) {
            Some(&[a, b, c, d, e, f, g, h]) => (
                Ipv4Addr::new(a, b, c, d).into(),
                Ipv4Addr::new(e, f, g, h).into(),
            ),
            _ => {
                return Err(IpError::Truncated {
                    len: packet.len(),
                    needed: 20,
                });
            }
        },
        Fixed::V6 { .. } => {
            let addrs = packet.get(field::V6_ADDRS).unwrap_or_default();
            let (src, dst) = addrs.split_at_checked(16).unwrap_or_default();
            match (<[u8; 16]>::try_from(src), <[u8; 16]>::try_from(dst)) {
                (Ok(s), Ok(d)) => (Ipv6Addr::from(s).into(), Ipv6Addr::from(d).into()),
                _ => {
                    return Err(IpError::Truncated {
                        len: packet.len(),
                        needed: 40,
                    });
                }
            }
        }
    })
}

/// Swaps source and destination addresses in place: the ESP reflector sends the packet
/// back where it came from (paper §2.5). Recomputes the IPv4 checksum.
///
/// # Errors
///
/// [`IpError`] if the fixed header is malformed; the packet is then unchanged.
pub fn reflect(packet: &mut [u8]) -> Result<(), IpError> {
    match fixed_header(packet)? {
        Fixed::V4 { header_len, .. } => {
            if let Some(addrs) = packet.get_mut(field::V4_ADDRS) {
                addrs.rotate_left(4);
            }
            fill_checksum(packet, header_len);
        }
        Fixed::V6 { .. } => {
            if let Some(addrs) = packet.get_mut(field::V6_ADDRS) {
                addrs.rotate_left(16);
            }
        }
    }
    Ok(())
}

/// Decrements the IPv4 TTL or IPv6 hop limit, updating the IPv4 checksum incrementally
/// (RFC 1624, eqn. 3), and returns the new value: at 0 the caller drops the packet. A
/// packet that arrives with 0 is left unchanged and reports 0.
///
/// This is the work every router does anyway, the baseline for ESP processing: it checks
/// only the version and the fixed header's length.
///
/// # Errors
///
/// [`IpError::Version`] or [`IpError::Truncated`].
#[inline]
pub fn decrement_ttl(packet: &mut [u8]) -> Result<u8, IpError> {
    let len = packet.len();
    match packet.first().map(|b| b >> 4) {
        Some(4) => {
            let Some([_, _, _, _, _, _, _, _, ttl, _, c0, c1, ..]) =
                packet.get_mut(..field::V4_HEADER_LEN)
            else {
                return Err(IpError::Truncated { len, needed: 20 });
            };
            if *ttl == 0 {
                return Ok(0);
            }
            *ttl -= 1;
            // HC' = ~(~HC + ~m + m') with m' = m - 0x0100, so ~m + m' = 0xFEFF.
            let sum = u32::from(!u16::from_be_bytes([*c0, *c1])) + 0xFEFF;
            [*c0, *c1] = (!(((sum & 0xFFFF) + (sum >> 16)) as u16)).to_be_bytes();
            Ok(*ttl)
        }
        Some(6) => {
            let Some([_, _, _, _, _, _, _, hop_limit, ..]) = packet.get_mut(..field::V6_HEADER_LEN)
            else {
                return Err(IpError::Truncated { len, needed: 40 });
            };
            *hop_limit = hop_limit.saturating_sub(1);
            Ok(*hop_limit)
        }
        Some(version) => Err(IpError::Version { version }),
        None => Err(IpError::Truncated { len, needed: 1 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP packet's header with its checksum (0xB861), a common worked example.
    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xB8, 0x61, 0xC0, 0xA8, 0x00,
        0x01, 0xC0, 0xA8, 0x00, 0xC7,
    ];

    fn packet() -> [u8; 0x73] {
        let mut p = [0u8; 0x73];
        p[..20].copy_from_slice(&HEADER);
        p
    }

    #[test]
    fn checksum_of_a_known_header() {
        let mut h = HEADER;
        assert_eq!(checksum(&h), 0);
        fill_checksum(&mut h, 20);
        assert_eq!(h, HEADER);
        assert!(ipv4_checksum_ok(&packet()));
        assert!(!ipv4_checksum_ok(&HEADER), "total length lies");
    }

    #[test]
    fn ttl_decrement_is_incremental() {
        let mut p = packet();
        assert_eq!(decrement_ttl(&mut p), Ok(0x3F));
        assert_eq!(&p[8..12], &[0x3F, 0x11, 0xB9, 0x61]);
        assert!(ipv4_checksum_ok(&p));
    }

    #[test]
    fn reflect_swaps_addresses() {
        let mut p = packet();
        reflect(&mut p).unwrap();
        assert_eq!(&p[12..20], &[0xC0, 0xA8, 0, 0xC7, 0xC0, 0xA8, 0, 1]);
        assert!(ipv4_checksum_ok(&p));
        assert_eq!(
            addresses(&p),
            Ok((
                Ipv4Addr::new(192, 168, 0, 199).into(),
                Ipv4Addr::new(192, 168, 0, 1).into()
            ))
        );
    }

    #[test]
    fn fixed_header_checks() {
        let p = packet();
        assert!(matches!(
            fixed_header(&p),
            Ok(Fixed::V4 {
                header_len: 20,
                total_len: 0x73
            })
        ));
        assert_eq!(
            fixed_header(&p[..0x72]).err(),
            Some(IpError::TotalLength {
                declared: 0x73,
                len: 0x72
            })
        );
        assert_eq!(
            fixed_header(&p[..19]).err(),
            Some(IpError::Truncated {
                len: 19,
                needed: 20
            })
        );
        let mut short = p;
        short[3] = 19;
        short[2] = 0;
        assert_eq!(
            fixed_header(&short).err(),
            Some(IpError::TotalLength {
                declared: 19,
                len: 0x73
            })
        );
        let mut v6 = [0u8; 48];
        v6[0] = 0x60;
        v6[5] = 8;
        assert!(matches!(fixed_header(&v6), Ok(Fixed::V6 { end: 48 })));
        v6[5] = 9;
        assert_eq!(
            fixed_header(&v6).err(),
            Some(IpError::TotalLength {
                declared: 49,
                len: 48
            })
        );
        assert_eq!(
            fixed_header(&v6[..39]).err(),
            Some(IpError::Truncated {
                len: 39,
                needed: 40
            })
        );
    }
}
