//! Bloom-filter identifiers for the robust instructions (paper §4.3.2).
//!
//! At the start of a computation each node picks `k` random bit offsets in an `m`-bit map and
//! sets them: its *IDmap*. Packets it forwards carry the IDmap; a receiver records them by
//! OR-ing them into a Bloom filter held in its store, and calls a packet a duplicate when all
//! its bits are already set there. The test never needs `k`, only the bits.
//!
//! Here `m` is a whole number of 64-bit words, 1 to [`MAX_WORDS`] (64 to 512 bits): one ESS
//! value per word, the filter living under a *sequence* of tags `T, T+1, …` (the paper's
//! footnote 2). A node derives its IDmap from a secret key and the computation ID, so every
//! instruction of one computation at one node produces the same IDmap without storing it,
//! and nobody outside can predict it.

use ess::HashKey;

/// Most 64-bit words in an IDmap or Bloom filter: 512 bits, the paper's §4.3 experiment.
pub const MAX_WORDS: usize = 8;

/// Most bits a node sets in its IDmap (its `k`).
pub const MAX_K: u8 = 64;

/// An `m`-bit identifier map or Bloom filter, `m = 64 × words`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdMap {
    bits: [u64; MAX_WORDS],
    words: u8,
}

impl core::fmt::Debug for IdMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "IdMap[")?;
        for (i, w) in self.as_words().iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{w:016x}")?;
        }
        f.write_str("]")
    }
}

impl IdMap {
    /// The empty map of `words` words (clamped to 1..=[`MAX_WORDS`]).
    pub const fn empty(words: u8) -> IdMap {
        let words = if words == 0 {
            1
        } else if words as usize > MAX_WORDS {
            MAX_WORDS as u8
        } else {
            words
        };
        IdMap {
            bits: [0; MAX_WORDS],
            words,
        }
    }

    /// A map from explicit words; `None` if there are none or more than [`MAX_WORDS`].
    pub fn from_words(words: &[u64]) -> Option<IdMap> {
        if words.is_empty() || words.len() > MAX_WORDS {
            return None;
        }
        let mut m = IdMap::empty(words.len() as u8);
        m.bits[..words.len()].copy_from_slice(words);
        Some(m)
    }

    /// The IDmap a node with secret `key` uses in computation `cid`: `k` offsets drawn
    /// uniformly (with replacement, as independent hash functions would) from `0..m`.
    ///
    /// Each keyed hash yields four 16-bit draws, each mapped onto `0..m` by multiply-shift
    /// (exactly uniform when `m` divides 65536, i.e. 1, 2, 4 or 8 words; otherwise biased by
    /// under 0.4%), so k = 11 costs four hashes.
    pub fn for_node(key: &HashKey, cid: u32, k: u8, words: u8) -> IdMap {
        let mut m = IdMap::empty(words);
        let bits = u64::from(m.words) * 64;
        let seed = key.hash(u64::from(cid) ^ (u64::from(k) << 40) ^ (u64::from(m.words) << 48));
        let mut r = 0;
        for i in 0..u64::from(k.min(MAX_K)) {
            if i % 4 == 0 {
                r = key.hash(seed ^ (i / 4).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            }
            let draw = (r >> (16 * (i % 4))) & 0xFFFF;
            m.set(((draw * bits) >> 16) as u32);
        }
        m
    }

    /// Words in the map (`m / 64`).
    #[inline]
    pub const fn words(&self) -> u8 {
        self.words
    }

    /// Bits in the map (`m`).
    #[inline]
    pub const fn bit_len(&self) -> u32 {
        self.words as u32 * 64
    }

    /// The words, low offsets first.
    #[inline]
    pub fn as_words(&self) -> &[u64] {
        self.bits.get(..usize::from(self.words)).unwrap_or(&[])
    }

    /// Word `i`, or 0 past the end.
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        self.as_words().get(i).copied().unwrap_or(0)
    }

    /// Sets word `i` (ignored past the end).
    #[inline]
    pub fn set_word(&mut self, i: usize, w: u64) {
        if i < usize::from(self.words)
            && let Some(slot) = self.bits.get_mut(i)
        {
            *slot = w;
        }
    }

    /// Sets bit `offset` (ignored past the end).
    #[inline]
    pub fn set(&mut self, offset: u32) {
        let (w, b) = ((offset / 64) as usize, offset % 64);
        if w < usize::from(self.words)
            && let Some(slot) = self.bits.get_mut(w)
        {
            *slot |= 1 << b;
        }
    }

    /// Whether bit `offset` is set.
    #[inline]
    pub fn get(&self, offset: u32) -> bool {
        self.word((offset / 64) as usize) >> (offset % 64) & 1 == 1
    }

    /// Bits set.
    #[inline]
    pub fn count_ones(&self) -> u32 {
        self.as_words().iter().map(|w| w.count_ones()).sum()
    }

    /// Whether every bit set here is set in `filter`: the paper's duplicate test
    /// `(α & idmap) = idmap`.
    #[inline]
    pub fn is_subset_of(&self, filter: &IdMap) -> bool {
        self.as_words()
            .iter()
            .enumerate()
            .all(|(i, w)| filter.word(i) & w == *w)
    }

    /// OR-s `other` into this map (recording an identifier in a filter).
    #[inline]
    pub fn union_with(&mut self, other: &IdMap) {
        for i in 0..usize::from(self.words) {
            self.set_word(i, self.word(i) | other.word(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_maps_are_stable_and_distinct() {
        let key = HashKey::from_seed(5);
        let a = IdMap::for_node(&key, 1, 11, 8);
        assert_eq!(a, IdMap::for_node(&key, 1, 11, 8));
        assert!(a.count_ones() <= 11 && a.count_ones() >= 8, "{a:?}");
        assert_ne!(a, IdMap::for_node(&key, 2, 11, 8));
        assert_ne!(a, IdMap::for_node(&HashKey::from_seed(6), 1, 11, 8));
        assert_eq!(a.bit_len(), 512);
    }

    #[test]
    fn subset_and_union() {
        let mut f = IdMap::empty(2);
        let mut x = IdMap::empty(2);
        x.set(3);
        x.set(100);
        assert!(!x.is_subset_of(&f));
        f.union_with(&x);
        assert!(x.is_subset_of(&f) && f.get(100) && !f.get(99));
        x.set(127);
        assert!(!x.is_subset_of(&f));
        x.set(128); // past the end: ignored
        assert_eq!(x.count_ones(), 3);
    }

    #[test]
    fn offsets_cover_the_whole_map() {
        let key = HashKey::from_seed(9);
        let mut seen = IdMap::empty(8);
        for cid in 0..400 {
            seen.union_with(&IdMap::for_node(&key, cid, 11, 8));
        }
        assert!(seen.count_ones() > 500, "{}", seen.count_ones());
        assert_eq!(IdMap::empty(0).words(), 1);
        assert_eq!(IdMap::empty(9).words(), 8);
        assert!(IdMap::from_words(&[]).is_none());
    }
}
