//! The Internet checksum (RFC 1071) of a TCP segment with its pseudo-header, by the IP
//! layer's accumulator (`waist_ip::checksum::Sum`).
//!
//! smoltcp's checksum adds 16-bit words one by one; a Trickles server checksums every
//! response it sends (1.4 KB each), so this one uses waist-ip's, which adds 32-bit words
//! into a 64-bit sum that the compiler turns into vector additions. A property test checks
//! it against RFC 1071 done word by word, and the wire tests check segments against
//! smoltcp's and etherparse's checksums.

use waist_ip::checksum::Sum;

use crate::conn::Addr;

/// The TCP protocol number, for the pseudo-header.
const TCP: u8 = 6;

/// The one's-complement sum (not yet complemented) of the TCP pseudo-header for `src`,
/// `dst` and a segment of `segment.len()` bytes, plus the segment's bytes. Mixed families
/// are the caller's to refuse.
///
/// The pseudo-header is summed here as addresses and one 32-bit word `0, 6, length`
/// rather than with `waist_ip::checksum::pseudo_header`, which adds the length and the
/// protocol as two words: the same sum, but one more addition per segment, 10 of the
/// server's ~4,740 instructions per request (callgrind, `examples/server_per_request`).
pub(crate) fn sum(src: &Addr, dst: &Addr, segment: &[u8]) -> u16 {
    // The TCP length as the 16-bit field of the IPv4 pseudo-header holds it (callers bound
    // segments by `MAX_SEGMENT_LEN`; for IPv6 the 32-bit length and the next header sum
    // the same below 2^16).
    let len = (segment.len() as u16).to_be_bytes();
    Sum::new()
        .with(src.as_bytes())
        .with(dst.as_bytes())
        .with(&[0, TCP, len[0], len[1]])
        .with(segment)
        .fold()
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// RFC 1071 the plain way: 16-bit words, 32-bit accumulator, fold at the end.
    fn reference(src: &Addr, dst: &Addr, segment: &[u8]) -> u16 {
        let mut acc: u64 = 0;
        let mut words = |bytes: &[u8]| {
            for pair in bytes.chunks(2) {
                let hi = u64::from(pair[0]);
                let lo = pair.get(1).copied().map_or(0, u64::from);
                acc += (hi << 8) | lo;
            }
        };
        words(src.as_bytes());
        words(dst.as_bytes());
        words(&[0, 6]);
        words(&(segment.len() as u16).to_be_bytes());
        words(segment);
        while acc > 0xffff {
            acc = (acc >> 16) + (acc & 0xffff);
        }
        acc as u16
    }

    proptest! {
        #[test]
        fn equals_rfc_1071_for_any_segment(
            v6 in any::<bool>(),
            a in any::<[u8; 16]>(),
            b in any::<[u8; 16]>(),
            segment in proptest::collection::vec(any::<u8>(), 0..2000),
        ) {
            let (src, dst) = if v6 {
                (Addr::V6(a), Addr::V6(b))
            } else {
                (Addr::V4([a[0], a[1], a[2], a[3]]), Addr::V4([b[0], b[1], b[2], b[3]]))
            };
            prop_assert_eq!(sum(&src, &dst, &segment), reference(&src, &dst, &segment));
        }
    }

    #[test]
    fn literal_segments() {
        // A SYN from 10.0.0.1:1000 to 10.0.0.2:2000 whose checksum field holds 0x9027: the
        // sum over pseudo-header and segment comes to 0xffff (a correct checksum).
        let (a, b) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
        let syn = [
            0x03, 0xe8, 0x07, 0xd0, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0x90, 0x27, 0,
            0,
        ];
        assert_eq!(sum(&a, &b, &syn), 0xffff);
        // Odd length: the last byte is a high byte, padded with zero after it
        // (0x1234 + 0x5600 + protocol 6 + length 3).
        let zero = Addr::V4([0; 4]);
        assert_eq!(sum(&zero, &zero, &[0x12, 0x34, 0x56]), 0x683d);
        // Carries wrap around: all-ones addresses and segment, and a last word that makes
        // the total a multiple of 0xffff, give 0xffff (never 0 for a non-zero sum).
        let ones = Addr::V6([0xff; 16]);
        let mut segment = [0xff; 18];
        segment[16..].copy_from_slice(&[0xff, 0xe7]);
        assert_eq!(sum(&ones, &ones, &segment), 0xffff);
    }
}
