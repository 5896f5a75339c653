//! Keyed hashing of user-chosen tags.
//!
//! Tags are chosen by users, so a store that hashed them with a public function would let
//! anyone aim tags at one chain. Every store hashes with a secret [`HashKey`] from its
//! config.
//!
//! The function is two rounds of a *folded multiply* (the 128-bit product of two 64-bit words,
//! high half XOR low half), each round keyed: the construction foldhash and ahash's fallback
//! use. It is not a cryptographic PRF; it is a keyed, well-mixing hash that an attacker who
//! never sees the key (nor per-tag timings precise enough to find chain collisions) cannot aim.
//! The `adversary` property test checks that tags chosen without the key spread like random
//! ones.

use sansio::SplitMix64;

/// The secret key of a store's tag hash (256 bits).
///
/// Give every store its own key, drawn from a good random source by whoever builds the
/// config (the store draws no randomness of its own).
///
/// ```
/// use ess::HashKey;
/// let a = HashKey::from_seed(1);
/// let b = HashKey::from_seed(2);
/// assert_ne!(a, b);
/// assert_ne!(a.hash(42), b.hash(42));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HashKey([u64; 4]);

impl core::fmt::Debug for HashKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // A key is a secret: never print it.
        f.write_str("HashKey(..)")
    }
}

/// Odd constants (digits of pi) that keep a weak key from zeroing a round.
const PI: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

#[inline(always)]
const fn folded_multiply(a: u64, b: u64) -> u64 {
    let p = (a as u128).wrapping_mul(b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

impl HashKey {
    /// A key made of four secret words.
    pub const fn new(words: [u64; 4]) -> Self {
        HashKey(words)
    }

    /// A key stretched from one 64-bit secret seed (SplitMix64).
    pub const fn from_seed(seed: u64) -> Self {
        let mut s = SplitMix64::new(seed);
        HashKey([s.next_u64(), s.next_u64(), s.next_u64(), s.next_u64()])
    }

    /// A different key derived from this one, for the `i`th member of a family (shards).
    pub const fn derive(&self, i: u64) -> Self {
        let mut s = SplitMix64::new(
            self.0[0] ^ self.0[1].rotate_left(17) ^ self.0[2].rotate_left(31) ^ self.0[3] ^ i,
        );
        let mut out = [0u64; 4];
        let mut j = 0;
        while j < 4 {
            out[j] = self.0[j] ^ s.next_u64();
            j += 1;
        }
        HashKey(out)
    }

    /// The keyed 64-bit hash of `x`.
    #[inline(always)]
    pub const fn hash(&self, x: u64) -> u64 {
        let h = folded_multiply(x ^ self.0[0], self.0[1] ^ PI[0]);
        folded_multiply(h ^ self.0[2] ^ PI[1], self.0[3] ^ PI[2])
    }
}

/// Maps a 64-bit hash onto `0..n` without division (Lemire's multiply-shift), using the high
/// 32 bits, which the folded multiply mixes best. `n` must be at most 2^32.
#[inline(always)]
pub(crate) const fn reduce(hash: u64, n: u64) -> u64 {
    ((hash >> 32) * n) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_is_keyed_and_deterministic() {
        let k = HashKey::from_seed(7);
        assert_eq!(k.hash(1), k.hash(1));
        assert_ne!(k.hash(1), k.hash(2));
        assert_ne!(k.hash(1), HashKey::from_seed(8).hash(1));
        assert_ne!(k.derive(0), k.derive(1));
        assert_eq!(std::format!("{k:?}"), "HashKey(..)");
    }

    #[test]
    fn reduce_stays_in_range() {
        for n in [1u64, 2, 3, 1000, 1 << 20, 3 << 20, 1 << 32] {
            for h in [0, 1, u64::MAX, 0x8000_0000_0000_0000, 0xdead_beef_0000_0000] {
                assert!(reduce(h, n) < n);
            }
        }
        assert_eq!(reduce(u64::MAX, 1 << 32), (1 << 32) - 1);
    }

    #[test]
    fn sequential_tags_spread_over_buckets() {
        // 2^16 consecutive tags into 2^16 buckets: a random spread leaves ~1/e empty.
        let k = HashKey::from_seed(3);
        let n = 1u64 << 16;
        let mut used = std::vec![false; n as usize];
        for t in 0..n {
            used[reduce(k.hash(t), n) as usize] = true;
        }
        let empty = used.iter().filter(|u| !**u).count() as f64 / n as f64;
        assert!((empty - 0.3679).abs() < 0.01, "empty fraction {empty}");
    }
}
