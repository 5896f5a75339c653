//! The fixed IPv4 and IPv6 headers: length checks, checksum, addresses, reflection, TTL,
//! all done by the IP layer (`waist-ip`); here only this crate's names and error type.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::ops::Range;

use waist_ip::{IpHeader, Version, rewrite};

use super::IpError;

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

/// The checked fixed header of an IPv4 or IPv6 packet.
pub(super) enum Fixed {
    V4 { header_len: usize, total_len: usize },
    V6 { end: usize },
}

/// Checks the fixed header with the IP layer ([`IpHeader::parse_unverified`]: version,
/// IHL, total length; not the IPv4 checksum) and keeps the lengths this crate walks by.
#[inline]
pub(super) fn fixed_header(p: &[u8]) -> Result<Fixed, IpError> {
    Ok(fixed(&IpHeader::parse_unverified(p)?))
}

/// The lengths this crate walks by, from a header the IP layer checked.
#[inline(always)]
pub(super) fn fixed(h: &IpHeader) -> Fixed {
    match h.version {
        Version::V4 => Fixed::V4 {
            header_len: h.header_len,
            total_len: h.total_len,
        },
        Version::V6 => Fixed::V6 { end: h.total_len },
    }
}

/// Whether the IPv4 header checksum of `packet` is right (false for anything else,
/// including an IPv4 header whose lengths are malformed).
pub fn ipv4_checksum_ok(packet: &[u8]) -> bool {
    matches!(IpHeader::parse(packet), Ok(h) if h.version == Version::V4)
}

/// The source and destination addresses of an IPv4 or IPv6 packet.
///
/// The header is checked by the IP layer; the addresses are read here straight from the
/// checked bytes, which on the forwarding baseline costs about 8 instructions per packet
/// less than taking them from `IpHeader` (`examples/per_packet.rs baseline`).
///
/// # Errors
///
/// [`IpError`] if the fixed header is malformed.
#[inline]
pub fn addresses(packet: &[u8]) -> Result<(IpAddr, IpAddr), IpError> {
    let len = packet.len();
    Ok(match fixed_header(packet)? {
        Fixed::V4 { .. } => match packet.get(12..20) {
            Some(&[a, b, c, d, e, f, g, h]) => (
                Ipv4Addr::new(a, b, c, d).into(),
                Ipv4Addr::new(e, f, g, h).into(),
            ),
            _ => {
                return Err(IpError::Ip(waist_ip::IpError::Truncated {
                    len,
                    needed: 20,
                }));
            }
        },
        Fixed::V6 { .. } => {
            let addrs = packet.get(8..40).unwrap_or_default();
            let (src, dst) = addrs.split_at_checked(16).unwrap_or_default();
            match (<[u8; 16]>::try_from(src), <[u8; 16]>::try_from(dst)) {
                (Ok(s), Ok(d)) => (Ipv6Addr::from(s).into(), Ipv6Addr::from(d).into()),
                _ => {
                    return Err(IpError::Ip(waist_ip::IpError::Truncated {
                        len,
                        needed: 40,
                    }));
                }
            }
        }
    })
}

/// Swaps source and destination addresses in place: the ESP reflector sends the packet
/// back where it came from (paper §2.5). Recomputes the IPv4 checksum from scratch, so a
/// caller may change other header bytes (a new TTL) before reflecting.
///
/// # Errors
///
/// [`IpError`] if the fixed header is malformed; the packet is then unchanged.
pub fn reflect(packet: &mut [u8]) -> Result<(), IpError> {
    fixed_header(packet)?;
    rewrite::swap_addresses(packet)?;
    rewrite::fill_ipv4_checksum(packet);
    Ok(())
}

/// Decrements the IPv4 TTL or IPv6 hop limit, updating the IPv4 checksum incrementally
/// (RFC 1624, eqn. 3), and returns the new value: at 0 the caller drops the packet. A
/// packet that arrives with 0 is left unchanged and reports 0.
///
/// This is the work every router does anyway, the baseline for ESP processing: it checks
/// only the version and the fixed header's length. It is the IP layer's
/// [`waist_ip::rewrite::decrement_ttl`], with this crate's [`IpError`].
///
/// # Errors
///
/// [`IpError::Ip`] (`Version`) or [`IpError::Ip`] (`Truncated`).
#[inline]
pub fn decrement_ttl(packet: &mut [u8]) -> Result<u8, IpError> {
    Ok(rewrite::decrement_ttl(packet)?)
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
        assert!(ipv4_checksum_ok(&packet()));
        assert!(!ipv4_checksum_ok(&HEADER), "total length lies");
        let mut bad = packet();
        bad[11] ^= 1;
        assert!(!ipv4_checksum_ok(&bad));
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        assert!(!ipv4_checksum_ok(&v6));
    }

    #[test]
    fn reflect_recomputes_after_a_header_change() {
        // A reflector may set a fresh TTL first (the IP echo of `waist repro snap-table2`).
        let mut p = packet();
        p[8] = 1;
        reflect(&mut p).unwrap();
        assert_eq!(p[8], 1);
        assert!(ipv4_checksum_ok(&p));
        assert_eq!(
            reflect(&mut p[..19]),
            Err(IpError::Ip(waist_ip::IpError::Truncated {
                len: 19,
                needed: 20
            }))
        );
    }

    #[test]
    fn ttl_errors_are_this_crates() {
        assert_eq!(
            decrement_ttl(&mut [0x45; 10]),
            Err(IpError::Ip(waist_ip::IpError::Truncated {
                len: 10,
                needed: 20
            }))
        );
        assert_eq!(
            decrement_ttl(&mut [0x75]),
            Err(IpError::Ip(waist_ip::IpError::Version { version: 7 }))
        );
        assert_eq!(
            decrement_ttl(&mut []),
            Err(IpError::Ip(waist_ip::IpError::Truncated {
                len: 0,
                needed: 1
            }))
        );
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[7] = 1;
        assert_eq!(decrement_ttl(&mut v6), Ok(0));
        assert_eq!(decrement_ttl(&mut v6), Ok(0));
        assert_eq!(v6[7], 0);
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
            Some(IpError::Ip(waist_ip::IpError::TotalLength {
                declared: 0x73,
                len: 0x72
            }))
        );
        assert_eq!(
            fixed_header(&p[..19]).err(),
            Some(IpError::Ip(waist_ip::IpError::Truncated {
                len: 19,
                needed: 20
            }))
        );
        let mut short = p;
        short[3] = 19;
        short[2] = 0;
        assert_eq!(
            fixed_header(&short).err(),
            Some(IpError::Ip(waist_ip::IpError::TotalLength {
                declared: 19,
                len: 0x73
            }))
        );
        let mut v6 = [0u8; 48];
        v6[0] = 0x60;
        v6[5] = 8;
        assert!(matches!(fixed_header(&v6), Ok(Fixed::V6 { end: 48 })));
        v6[5] = 9;
        assert_eq!(
            fixed_header(&v6).err(),
            Some(IpError::Ip(waist_ip::IpError::TotalLength {
                declared: 49,
                len: 48
            }))
        );
        assert_eq!(
            fixed_header(&v6[..39]).err(),
            Some(IpError::Ip(waist_ip::IpError::Truncated {
                len: 39,
                needed: 40
            }))
        );
    }
}
