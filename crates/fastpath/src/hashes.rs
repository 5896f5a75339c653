//! The receiver-side hash functions source hashing is compared with (Table 4, Fig. 5):
//! XOR folding and a CRC. A router using source hashing needs neither; they are here so
//! the reproductions and benches measure the same code the tests check.
//!
//! * [`xor_fold16`] — XOR of the flow id taken 16 bits at a time (the paper: "if we do it
//!   16 bits at a time, it is not sufficiently random"); [`xor_fold8`] 8 bits at a time.
//! * [`crc32`] — CRC-32 (IEEE 802.3, reflected, table-driven one byte at a time), whose low
//!   bits index the table; [`crc8_halves`] — the paper's variant, CRC-8 of each half of the
//!   flow id concatenated into 16 bits.

/// XOR of the bytes taken two at a time (big-endian; an odd last byte is the high byte).
#[inline]
pub fn xor_fold16(bytes: &[u8]) -> u32 {
    let mut h = 0u16;
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        if let [a, b] = c {
            h ^= u16::from_be_bytes([*a, *b]);
        }
    }
    if let [a] = chunks.remainder() {
        h ^= u16::from(*a) << 8;
    }
    u32::from(h)
}

/// XOR of all the bytes (an 8-bit index).
#[inline]
pub fn xor_fold8(bytes: &[u8]) -> u32 {
    u32::from(bytes.iter().fold(0u8, |h, &b| h ^ b))
}

const fn crc32_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32: [u32; 256] = crc32_table();

/// CRC-32 (IEEE) of `bytes`.
#[inline]
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c = CRC32[usize::from((c as u8) ^ b)] ^ (c >> 8);
    }
    !c
}

const fn crc8_table() -> [u8; 256] {
    // CRC-8 with polynomial x^8 + x^2 + x + 1 (0x07), MSB first.
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u8;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x80 != 0 {
                (c << 1) ^ 0x07
            } else {
                c << 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC8: [u8; 256] = crc8_table();

fn crc8(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |c, &b| CRC8[usize::from(c ^ b)])
}

/// The paper's CRC hash: CRC-8 of each half of `bytes`, concatenated (16 bits).
#[inline]
pub fn crc8_halves(bytes: &[u8]) -> u32 {
    let (a, b) = bytes.split_at(bytes.len() / 2);
    (u32::from(crc8(a)) << 8) | u32::from(crc8(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        // The CRC-32 check value.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        // CRC-8 (0x07) check value of "123456789" is 0xF4.
        assert_eq!(crc8(b"123456789"), 0xf4);
        assert_eq!(
            xor_fold16(&[0x12, 0x34, 0x56, 0x78, 0x9a]),
            0x1234 ^ 0x5678 ^ 0x9a00
        );
        assert_eq!(xor_fold8(&[1, 2, 4]), 7);
        assert_eq!(crc8_halves(&[]), 0);
    }

    #[test]
    fn xor_folding_collides_on_subnet_structure() {
        // 10.0.1.2 → 10.0.0.1 and 10.0.0.1 → 10.0.1.2 fold to the same index: XOR is
        // symmetric, one reason it does badly on real address sets.
        let a = [10, 0, 1, 2, 10, 0, 0, 1];
        let b = [10, 0, 0, 1, 10, 0, 1, 2];
        assert_eq!(xor_fold16(&a), xor_fold16(&b));
        assert_ne!(crc32(&a), crc32(&b));
    }

    proptest! {
        #[test]
        fn crc32_matches_crc32fast(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(crc32(&bytes), crc32fast::hash(&bytes));
        }
    }
}
