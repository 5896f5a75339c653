//! SplitMix64: the workspace's one seed stretcher and small generator.

/// The SplitMix64 finaliser: a bijection on `u64` in which every input bit affects every
/// output bit (Stafford's "Mix13" variant, as in Vigna's `splitmix64.c`).
///
/// [`SplitMix64::next_u64`] is `mix64` of its advanced state; on its own it scrambles
/// sequential numbers into well-spread ones (distinct inputs stay distinct).
///
/// ```
/// use sansio::mix64;
/// assert_eq!(mix64(0), 0);
/// assert_ne!(mix64(1), mix64(2));
/// ```
#[inline(always)]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64 (Steele, Lea and Flood): a tiny, fast, seeded generator.
///
/// Each draw adds [`GAMMA`](Self::GAMMA) to the state and returns [`mix64`] of the new
/// state, exactly as Vigna's reference `splitmix64.c`. It stretches a seed into keys (the
/// ESS's `HashKey::from_seed`, which is `const`, as are [`new`](Self::new) and
/// [`next_u64`](Self::next_u64)), seeds [`Rng`](crate::Rng), and draws indices and test
/// data. It is not for secrets.
///
/// The field is the whole state (the seed, before the first draw), so `SplitMix64(seed)` is
/// `SplitMix64::new(seed)`.
///
/// ```
/// use sansio::SplitMix64;
/// let mut g = SplitMix64::new(0);
/// assert_eq!(g.next_u64(), 0xe220_a839_7b1d_cdaf);
/// assert_eq!(g.0, 0x9e37_79b9_7f4a_7c15); // one step of GAMMA from the seed
/// assert!(g.below(10) < 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The state's increment: 2^64 divided by the golden ratio, rounded to an odd number.
    pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    /// A generator seeded with `seed` (its first draw is `mix64(seed + GAMMA)`).
    #[inline(always)]
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    #[inline(always)]
    pub const fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(Self::GAMMA);
        mix64(self.0)
    }

    /// A number uniformly in `0..n` (0 if `n` is 0), by multiply-shift (no division).
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_vigna_reference_for_seed_zero() {
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(g.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(g.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn is_usable_in_const_context() {
        const FIRST: u64 = SplitMix64::new(0).next_u64();
        assert_eq!(FIRST, 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn below_stays_in_range() {
        let mut g = SplitMix64::new(5);
        assert_eq!(g.below(0), 0);
        assert!((0..1000).all(|_| g.below(3) < 3));
    }

    proptest! {
        #[test]
        fn mix64_is_injective_on_pairs(a: u64, b: u64) {
            prop_assert_eq!(mix64(a) == mix64(b), a == b);
        }

        #[test]
        fn next_is_mix_of_advanced_state(seed: u64) {
            let mut g = SplitMix64::new(seed);
            prop_assert_eq!(g.next_u64(), mix64(seed.wrapping_add(SplitMix64::GAMMA)));
            prop_assert_eq!(
                g.next_u64(),
                mix64(seed.wrapping_add(SplitMix64::GAMMA.wrapping_mul(2)))
            );
        }
    }
}
