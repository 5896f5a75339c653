//! The simulator's only source of randomness: a seeded xoshiro256** generator.

/// A small, fast, seeded pseudo-random generator (xoshiro256**, seeded through SplitMix64).
///
/// Every random choice the simulator makes (loss, duplication, jitter) comes from one `Rng`
/// seeded by the caller, so a run is a pure function of its seed and inputs.
///
/// ```
/// use netsim::Rng;
/// let (mut a, mut b) = (Rng::new(7), Rng::new(7));
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct Rng([u64; 4]);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A number uniformly in `0..n` (0 if `n` is 0), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `ppm` / 1 000 000.
    pub fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.below(1_000_000) < u64::from(ppm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_streams_repeat_and_differ() {
        let (mut a, mut b, mut c) = (Rng::new(1), Rng::new(1), Rng::new(2));
        let xs: [u64; 8] = core::array::from_fn(|_| a.next_u64());
        let ys: [u64; 8] = core::array::from_fn(|_| b.next_u64());
        let zs: [u64; 8] = core::array::from_fn(|_| c.next_u64());
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn chance_matches_its_rate() {
        let mut r = Rng::new(3);
        let hits = (0..100_000).filter(|_| r.chance(250_000)).count();
        assert!((24_000..26_000).contains(&hits), "{hits}");
        assert!(!(0..1000).any(|_| r.chance(0)));
        assert!((0..1000).all(|_| r.chance(1_000_000)));
        assert_eq!(r.below(0), 0);
    }
}
