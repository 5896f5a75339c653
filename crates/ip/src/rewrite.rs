//! In-place changes to IP headers that keep the IPv4 header checksum right.
//!
//! Every waist core that changes a byte of an IP packet in place goes through here, so no
//! caller has to remember the checksum: [`decrement_ttl`] (the hop every router pays),
//! [`rewrite`] (write bytes anywhere in the packet) and [`note_rewrite`] (bytes already
//! written through a view, such as an ESP instruction inside an IPv4 option). The update is
//! incremental (RFC 1624) over exactly the bytes that changed, and only when they lie in the
//! IPv4 header; IPv6 has no header checksum.
//!
//! ```
//! use waist_ip::{IpHeader, emit_header, rewrite};
//!
//! let mut p = [0u8; 24];
//! emit_header(&mut p, [10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 64, 4).unwrap();
//! assert_eq!(rewrite::decrement_ttl(&mut p), Ok(63));
//! rewrite::rewrite(&mut p, 16, &[192, 168, 0, 9]).unwrap(); // a new destination
//! let h = IpHeader::parse(&p).unwrap(); // checksum verified
//! assert_eq!((h.ttl, h.dst), (63, [192, 168, 0, 9].into()));
//! ```

use core::net::IpAddr;

use crate::checksum::adjust;
use crate::header::{IPV4_HEADER_LEN, IPV4_MAX_HEADER_LEN, IpError, be16, field};

/// Decrements the IPv4 TTL or IPv6 hop limit, updating the IPv4 checksum incrementally,
/// and returns the new value: at 0 the caller drops the packet (and may answer with ICMP
/// time exceeded). A packet that arrives with 0 is left unchanged and reports 0. Checks
/// only the version and that the fixed header is present.
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
                packet.get_mut(..IPV4_HEADER_LEN)
            else {
                return Err(IpError::Truncated {
                    len,
                    needed: IPV4_HEADER_LEN,
                });
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
            let Some(hop_limit) = packet.get_mut(field::V6_HOP_LIMIT) else {
                return Err(IpError::Truncated { len, needed: 40 });
            };
            if len < 40 {
                return Err(IpError::Truncated { len, needed: 40 });
            }
            if *hop_limit == 0 {
                return Ok(0);
            }
            *hop_limit -= 1;
            Ok(*hop_limit)
        }
        Some(version) => Err(IpError::Version { version }),
        None => Err(IpError::Truncated { len, needed: 1 }),
    }
}

/// As [`decrement_ttl`] for a packet whose header `h` the caller has already checked
/// ([`IpHeader::parse`](crate::IpHeader::parse)): no second look at the version or lengths.
/// Returns the new TTL (0: drop); a packet that arrives with 0 is left unchanged.
#[inline]
pub fn decrement_checked(packet: &mut [u8], h: &crate::IpHeader) -> u8 {
    match h.version {
        crate::Version::V4 => {
            let Some([_, _, _, _, _, _, _, _, ttl, _, c0, c1, ..]) =
                packet.first_chunk_mut::<IPV4_HEADER_LEN>()
            else {
                return 0;
            };
            if *ttl == 0 {
                return 0;
            }
            *ttl -= 1;
            let sum = u32::from(!u16::from_be_bytes([*c0, *c1])) + 0xFEFF;
            [*c0, *c1] = (!(((sum & 0xFFFF) + (sum >> 16)) as u16)).to_be_bytes();
            *ttl
        }
        crate::Version::V6 => match packet.get_mut(field::V6_HOP_LIMIT) {
            Some(hop) if *hop > 0 => {
                *hop -= 1;
                *hop
            }
            _ => 0,
        },
    }
}

/// The IPv4 header length of `packet`, if it is IPv4 with a sane IHL and the header fits.
#[inline]
fn ipv4_header_len(packet: &[u8]) -> Option<usize> {
    let first = *packet.first()?;
    if first >> 4 != 4 {
        return None;
    }
    let hl = usize::from(first & 0x0F) * 4;
    (hl >= IPV4_HEADER_LEN && hl <= packet.len()).then_some(hl)
}

/// Bytes at `offset` were changed in place from `old` to what `packet` now holds there:
/// if any of them lie in an IPv4 header, updates its checksum over exactly those bytes.
/// Call this after rewriting through a view (e.g. an ESP header inside IPv4 option 158).
/// Bytes outside the header, IPv6 packets and non-IP bytes are left alone.
#[inline]
pub fn note_rewrite(packet: &mut [u8], offset: usize, old: &[u8]) {
    let Some(hl) = ipv4_header_len(packet) else {
        return;
    };
    if offset >= hl {
        return;
    }
    let end = (offset + old.len()).min(hl);
    let (Some(old), Some(new)) = (old.get(..end - offset), packet.get(offset..end)) else {
        return;
    };
    // The checksum field itself is not covered by an adjustment of itself.
    if ranges_overlap(offset..end, field::V4_CHECKSUM) {
        fill_ipv4_checksum(packet);
        return;
    }
    let check = be16(packet, field::V4_CHECKSUM.start);
    let c = adjust(check, offset, old, new);
    if let Some(slot) = packet.get_mut(field::V4_CHECKSUM) {
        slot.copy_from_slice(&c.to_be_bytes());
    }
}

fn ranges_overlap(a: core::ops::Range<usize>, b: core::ops::Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Writes `bytes` at `offset` and keeps the IPv4 header checksum right ([`note_rewrite`]).
///
/// # Errors
///
/// [`IpError::Truncated`] if the bytes do not fit; the packet is then unchanged.
#[inline]
pub fn rewrite(packet: &mut [u8], offset: usize, bytes: &[u8]) -> Result<(), IpError> {
    let len = packet.len();
    let end = offset.saturating_add(bytes.len());
    let slot = packet
        .get_mut(offset..end)
        .ok_or(IpError::Truncated { len, needed: end })?;
    let mut old = [0u8; IPV4_MAX_HEADER_LEN];
    let saved = bytes.len().min(IPV4_MAX_HEADER_LEN);
    if let (Some(o), Some(s)) = (old.get_mut(..saved), slot.get(..saved)) {
        o.copy_from_slice(s);
    }
    slot.copy_from_slice(bytes);
    if bytes.len() <= IPV4_MAX_HEADER_LEN {
        note_rewrite(packet, offset, old.get(..saved).unwrap_or_default());
    } else {
        fill_ipv4_checksum(packet);
    }
    Ok(())
}

/// Recomputes the IPv4 header checksum from scratch (after a change too large to adjust,
/// such as inserting or removing options). Does nothing for anything but IPv4.
pub fn fill_ipv4_checksum(packet: &mut [u8]) {
    let Some(hl) = ipv4_header_len(packet) else {
        return;
    };
    if let Some(c) = packet.get_mut(field::V4_CHECKSUM) {
        c.fill(0);
    }
    let sum = crate::checksum::checksum(packet.get(..hl).unwrap_or_default());
    if let Some(c) = packet.get_mut(field::V4_CHECKSUM) {
        c.copy_from_slice(&sum.to_be_bytes());
    }
}

/// Swaps source and destination addresses in place, keeping the IPv4 checksum right (the
/// swap leaves the one's-complement sum unchanged). Used by reflectors and echo replies.
///
/// # Errors
///
/// [`IpError`] if the fixed header is missing; the packet is then unchanged.
pub fn swap_addresses(packet: &mut [u8]) -> Result<(), IpError> {
    let len = packet.len();
    match packet.first().map(|b| b >> 4) {
        Some(4) => {
            let a = packet
                .get_mut(field::V4_SRC.start..field::V4_DST.end)
                .ok_or(IpError::Truncated { len, needed: 20 })?;
            a.rotate_left(4);
            Ok(())
        }
        Some(6) => {
            let a = packet
                .get_mut(field::V6_SRC.start..field::V6_DST.end)
                .ok_or(IpError::Truncated { len, needed: 40 })?;
            a.rotate_left(16);
            Ok(())
        }
        Some(version) => Err(IpError::Version { version }),
        None => Err(IpError::Truncated { len, needed: 1 }),
    }
}

/// Sets the TTL (hop limit) and, for IPv4, fixes the checksum.
///
/// # Errors
///
/// [`IpError`] if the fixed header is missing.
pub fn set_ttl(packet: &mut [u8], ttl: u8) -> Result<(), IpError> {
    let len = packet.len();
    match packet.first().map(|b| b >> 4) {
        Some(4) if len >= IPV4_HEADER_LEN => rewrite(packet, field::V4_TTL, &[ttl]),
        Some(6) if len >= 40 => rewrite(packet, field::V6_HOP_LIMIT, &[ttl]),
        Some(4) => Err(IpError::Truncated { len, needed: 20 }),
        Some(6) => Err(IpError::Truncated { len, needed: 40 }),
        Some(version) => Err(IpError::Version { version }),
        None => Err(IpError::Truncated { len, needed: 1 }),
    }
}

/// The offset of the source (or destination) address field for `packet`'s version.
pub fn address_offset(packet: &[u8], destination: bool) -> Option<usize> {
    match packet.first().map(|b| b >> 4) {
        Some(4) => Some(if destination { 16 } else { 12 }),
        Some(6) => Some(if destination { 24 } else { 8 }),
        _ => None,
    }
}

/// Writes `addr` as the source (or destination) of `packet`, fixing the IPv4 checksum.
///
/// # Errors
///
/// [`IpError::MixedFamilies`] if `addr` is not of the packet's family; [`IpError`] if the
/// header is missing.
pub fn set_address(packet: &mut [u8], destination: bool, addr: IpAddr) -> Result<(), IpError> {
    let len = packet.len();
    let at = match (address_offset(packet, destination), packet.first()) {
        (Some(at), _) => at,
        (None, Some(b)) => return Err(IpError::Version { version: b >> 4 }),
        (None, None) => return Err(IpError::Truncated { len, needed: 1 }),
    };
    match (packet.first().map(|b| b >> 4), addr) {
        (Some(4), IpAddr::V4(a)) => rewrite(packet, at, &a.octets()),
        (Some(6), IpAddr::V6(a)) => rewrite(packet, at, &a.octets()),
        _ => Err(IpError::MixedFamilies),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IpHeader, emit_header};
    use proptest::prelude::*;

    fn v4(ttl: u8) -> [u8; 28] {
        let mut p = [0u8; 28];
        emit_header(
            &mut p,
            [10, 0, 0, 1].into(),
            [10, 0, 0, 2].into(),
            17,
            ttl,
            8,
        )
        .unwrap();
        p
    }

    #[test]
    fn ttl_one_expires_and_zero_stays() {
        let mut p = v4(1);
        assert_eq!(decrement_ttl(&mut p), Ok(0));
        assert!(IpHeader::parse(&p).is_ok());
        let before = p;
        assert_eq!(decrement_ttl(&mut p), Ok(0));
        assert_eq!(p, before);
        assert_eq!(
            decrement_ttl(&mut [0x45; 10]),
            Err(IpError::Truncated {
                len: 10,
                needed: 20
            })
        );
        assert_eq!(
            decrement_ttl(&mut [0x75]),
            Err(IpError::Version { version: 7 })
        );
    }

    #[test]
    fn literal_ttl_decrement() {
        // 10.0.0.1 → 10.0.0.2, UDP, TTL 64: checksum 0x26cf → TTL 63: 0x27cf.
        let mut p = v4(64);
        assert_eq!(&p[10..12], &[0x26, 0xcf]);
        decrement_ttl(&mut p).unwrap();
        assert_eq!((p[8], &p[10..12]), (63, &[0x27, 0xcf][..]));
    }

    #[test]
    fn decrement_checked_agrees_with_decrement_ttl() {
        for ttl in [0u8, 1, 2, 64, 255] {
            let (mut a, mut b) = (v4(ttl), v4(ttl));
            let h = crate::IpHeader::parse(&a).unwrap();
            assert_eq!(
                decrement_checked(&mut a, &h),
                decrement_ttl(&mut b).unwrap()
            );
            assert_eq!(a, b);
        }
        let mut p6 = [0u8; 40];
        crate::emit_header(
            &mut p6,
            [0xfd00, 0, 0, 0, 0, 0, 0, 1].into(),
            [0xfd00, 0, 0, 0, 0, 0, 0, 2].into(),
            17,
            5,
            0,
        )
        .unwrap();
        let h = crate::IpHeader::parse(&p6).unwrap();
        assert_eq!(decrement_checked(&mut p6, &h), 4);
    }

    #[test]
    fn set_address_names_a_bad_version() {
        assert_eq!(
            set_address(&mut [0x55; 40], true, [1, 2, 3, 4].into()),
            Err(IpError::Version { version: 5 })
        );
        assert_eq!(
            set_address(&mut [], true, [1, 2, 3, 4].into()),
            Err(IpError::Truncated { len: 0, needed: 1 })
        );
        let mut p = v4(3);
        assert_eq!(
            set_address(&mut p, false, [0xfd00, 0, 0, 0, 0, 0, 0, 1].into()),
            Err(IpError::MixedFamilies)
        );
    }

    #[test]
    fn rewrite_of_the_checksum_field_itself_recomputes() {
        let mut p = v4(9);
        rewrite(&mut p, 9, &[6, 0xAA, 0xBB]).unwrap(); // protocol and the checksum bytes
        assert!(IpHeader::parse(&p).is_ok());
    }

    proptest! {
        /// Any rewrite of any bytes of an IPv4 header with options keeps the checksum valid
        /// by etherparse's own computation.
        #[test]
        fn any_rewrite_keeps_the_checksum(
            ttl in 1u8..,
            options in proptest::collection::vec(1u8..=1, 0..10), // NOPs
            at in 1usize..60,
            bytes in proptest::collection::vec(any::<u8>(), 1..12),
        ) {
            let opt_len = options.len().div_ceil(4) * 4;
            let hl = 20 + opt_len;
            let mut p = std::vec![0u8; hl + 8];
            emit_header(&mut p, [10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, ttl, hl - 20 + 8).unwrap();
            p[0] = 0x40 | (hl / 4) as u8;
            p[20..hl].fill(1);
            fill_ipv4_checksum(&mut p);
            // Never touch the version/IHL byte or the total length: keep it parseable.
            let at = (at % (hl - 4)) + 4;
            let n = bytes.len().min(hl - at);
            let mut bytes = bytes[..n].to_vec();
            if let Some(b) = (6usize).checked_sub(at).and_then(|i| bytes.get_mut(i)) {
                *b &= 0x7F; // etherparse drops the reserved flag from its sum
            }
            rewrite(&mut p, at, &bytes).unwrap();
            decrement_ttl(&mut p).unwrap();
            let (h, _) = etherparse::Ipv4Header::from_slice(&p).unwrap();
            prop_assert_eq!(h.header_checksum, h.calc_header_checksum());
        }
    }
}
