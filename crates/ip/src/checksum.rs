//! The Internet checksum (RFC 1071), computed fast, and updated incrementally (RFC 1624).
//!
//! [`Sum::with`] adds bytes as native-endian 32-bit words into a 64-bit accumulator, which the
//! compiler turns into vector additions; the one's-complement sum does not depend on byte
//! order or on where 16-bit words sit inside 32-bit ones (RFC 1071 §2(A), (B)), so one swap
//! at the end gives the sum of big-endian 16-bit words. Pieces may be added one after
//! another as long as each but the last has an even length.
//!
//! ```
//! use waist_ip::checksum::{adjust, checksum};
//!
//! let mut header = [0x45, 0, 0, 20, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
//! let c = checksum(&header);
//! header[10..12].copy_from_slice(&c.to_be_bytes());
//! assert_eq!(checksum(&header), 0);
//!
//! // Change the TTL and fix the checksum from the changed bytes alone.
//! let old = [header[8]];
//! header[8] = 63;
//! let c = adjust(u16::from_be_bytes([header[10], header[11]]), 8, &old, &header[8..9]);
//! header[10..12].copy_from_slice(&c.to_be_bytes());
//! assert_eq!(checksum(&header), 0);
//! ```

use core::net::IpAddr;

/// A running one's-complement sum. See the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum(u64);

impl Sum {
    /// The empty sum.
    pub const fn new() -> Sum {
        Sum(0)
    }

    /// Adds `bytes`. Every piece added before the last must have an even length (a
    /// trailing odd byte is padded with a zero after it, as RFC 1071 asks of the last).
    #[inline]
    pub fn with(self, bytes: &[u8]) -> Sum {
        // Eight lanes of 32-bit words per step: a shape the compiler vectorises.
        let mut lanes = [0u64; 8];
        let mut blocks = bytes.chunks_exact(32);
        for block in &mut blocks {
            for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(4)) {
                let mut w = [0u8; 4];
                w.copy_from_slice(word);
                *lane += u64::from(u32::from_ne_bytes(w));
            }
        }
        let mut total = self.0 + lanes.iter().sum::<u64>();
        let mut words = blocks.remainder().chunks_exact(4);
        for word in &mut words {
            let mut w = [0u8; 4];
            w.copy_from_slice(word);
            total += u64::from(u32::from_ne_bytes(w));
        }
        let rest = words.remainder();
        let mut w = [0u8; 4];
        if let Some(slot) = w.get_mut(..rest.len()) {
            slot.copy_from_slice(rest);
        }
        Sum(total + u64::from(u32::from_ne_bytes(w)))
    }

    /// Adds one big-endian 16-bit word.
    #[inline]
    pub fn with_u16(self, word: u16) -> Sum {
        self.with(&word.to_be_bytes())
    }

    /// The 16-bit one's-complement sum (not complemented).
    #[inline]
    pub fn fold(self) -> u16 {
        let mut acc = self.0;
        acc = (acc >> 32) + (acc & 0xffff_ffff);
        acc = (acc >> 32) + (acc & 0xffff_ffff);
        acc = (acc >> 16) + (acc & 0xffff);
        acc = (acc >> 16) + (acc & 0xffff);
        u16::from_be(acc as u16)
    }

    /// The checksum: the complement of [`fold`](Sum::fold).
    #[inline]
    pub fn finish(self) -> u16 {
        !self.fold()
    }
}

/// The Internet checksum of `bytes`: what goes in a checksum field that was zero while
/// summing, and 0 over bytes whose checksum field is right.
#[inline]
pub fn checksum(bytes: &[u8]) -> u16 {
    Sum::new().with(bytes).finish()
}

/// The sum of the TCP/UDP/ICMPv6 pseudo-header (RFC 793, RFC 8200 §8.1) for an upper-layer
/// payload of `len` bytes. Mixed address families are summed as given; callers refuse them.
#[inline]
pub fn pseudo_header(src: IpAddr, dst: IpAddr, protocol: u8, len: u32) -> Sum {
    let sum = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Sum::new().with(&s.octets()).with(&d.octets()),
        (s, d) => Sum::new().with(&v6(s)).with(&v6(d)),
    };
    match u16::try_from(len) {
        // One word: [0, protocol] and the 16-bit length sum like the two words RFC 8200
        // writes (a 32-bit length, three zero bytes, the next header).
        Ok(l) => {
            let [l0, l1] = l.to_be_bytes();
            sum.with(&[0, protocol, l0, l1])
        }
        Err(_) => sum.with(&len.to_be_bytes()).with(&[0, 0, 0, protocol]),
    }
}

fn v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

/// The checksum `check` after the bytes at `offset` (counted from the start of what the
/// checksum covers) changed from `old` to `new` (RFC 1624, eqn. 3:
/// `HC' = ~(~HC + ~m + m')`), for any offset and length. `old` and `new` must have the same
/// length; extra bytes of the longer are ignored.
#[inline]
pub fn adjust(check: u16, offset: usize, old: &[u8], new: &[u8]) -> u16 {
    let n = old.len().min(new.len());
    let (old, new) = (
        old.get(..n).unwrap_or_default(),
        new.get(..n).unwrap_or_default(),
    );
    let (mut m, mut m2) = (Sum::new().with(old).fold(), Sum::new().with(new).fold());
    if offset % 2 == 1 {
        // An odd offset puts each byte in the other half of its word: the one's-complement
        // sum of the shifted bytes is the byte-swapped sum (RFC 1071 §2(B)).
        (m, m2) = (m.swap_bytes(), m2.swap_bytes());
    }
    let sum = u32::from(!check) + u32::from(!m) + u32::from(m2);
    let sum = (sum & 0xFFFF) + (sum >> 16);
    let sum = (sum & 0xFFFF) + (sum >> 16);
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// RFC 1071 the plain way: 16-bit words, fold at the end.
    fn reference(bytes: &[u8]) -> u16 {
        let mut acc: u64 = 0;
        for pair in bytes.chunks(2) {
            let hi = u64::from(pair[0]);
            let lo = pair.get(1).copied().map_or(0, u64::from);
            acc += (hi << 8) | lo;
        }
        while acc > 0xFFFF {
            acc = (acc & 0xFFFF) + (acc >> 16);
        }
        !(acc as u16)
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(Sum::new().with(&bytes).fold(), 0xddf2);
        assert_eq!(checksum(&bytes), !0xddf2);
    }

    #[test]
    fn a_literal_ipv4_header() {
        // Wikipedia's example header: checksum b861.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0xb861);
    }

    #[test]
    fn pseudo_header_short_and_jumbo_lengths_agree_with_the_rfc_layout() {
        let (s, d) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        for len in [0u32, 20, 1460, 65_535, 65_536, 1 << 20] {
            let mut rfc = std::vec::Vec::new();
            rfc.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
            rfc.extend_from_slice(&len.to_be_bytes());
            rfc.extend_from_slice(&[0, 0, 0, 6]);
            assert_eq!(
                pseudo_header(s, d, 6, len).fold(),
                Sum::new().with(&rfc).fold(),
                "{len}"
            );
        }
    }

    proptest! {
        #[test]
        fn sum_matches_reference(bytes in proptest::collection::vec(any::<u8>(), 0..300), cut in 0usize..150) {
            prop_assert_eq!(checksum(&bytes), reference(&bytes));
            // Split at an even point: same sum.
            let cut = (cut * 2).min(bytes.len()) & !1;
            let (a, b) = bytes.split_at(cut);
            prop_assert_eq!(Sum::new().with(a).with(b).finish(), reference(&bytes));
        }

        #[test]
        fn adjust_equals_recompute(
            mut bytes in proptest::collection::vec(any::<u8>(), 2..80),
            at in 0usize..80,
            new in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            let at = at % bytes.len();
            let end = (at + new.len()).min(bytes.len());
            let new = &new[..end - at];
            let check = reference(&bytes);
            let old: Vec<u8> = bytes[at..end].to_vec();
            bytes[at..end].copy_from_slice(new);
            let adjusted = adjust(check, at, &old, new);
            // Equal as one's-complement numbers (0x0000 and 0xFFFF both mean zero).
            let fresh = reference(&bytes);
            prop_assert!(adjusted == fresh || (adjusted | fresh == 0xFFFF && adjusted & fresh == 0),
                "adjusted {adjusted:04x} fresh {fresh:04x}");
        }
    }
}
