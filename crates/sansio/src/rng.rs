//! The simulator's generator: xoshiro256**, seeded through SplitMix64.

use crate::SplitMix64;

/// A small, fast, seeded pseudo-random generator (xoshiro256**, seeded through
/// [`SplitMix64`]).
///
/// Every random choice the simulator makes (loss, duplication, jitter) comes from one `Rng`
/// seeded by the caller, so a run is a pure function of its seed and inputs.
///
/// ```
/// use sansio::Rng;
/// let (mut a, mut b) = (Rng::new(7), Rng::new(7));
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct Rng([u64; 4]);

impl Rng {
    /// A generator seeded with `seed`: its state is the first four draws of
    /// `SplitMix64::new(seed)`.
    pub const fn new(seed: u64) -> Self {
        let mut s = SplitMix64::new(seed);
        Rng([s.next_u64(), s.next_u64(), s.next_u64(), s.next_u64()])
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
    fn streams_are_pinned() {
        // Computed with netsim's `Rng` before it moved here: a run of the simulator must
        // draw the same numbers from the same seed, release after release.
        let cases: [(u64, [u64; 4], [u64; 4]); 3] = [
            (
                0,
                [
                    0x99ec_5f36_cb75_f2b4,
                    0xbf6e_1f78_4956_452a,
                    0x1a5f_849d_4933_e6e0,
                    0x6aa5_94f1_262d_2d2c,
                ],
                [601, 747, 103, 416],
            ),
            (
                1,
                [
                    0xb3f2_af6d_0fc7_10c5,
                    0x853b_5596_4736_4cea,
                    0x92f8_9756_082a_4514,
                    0x642e_1c7b_c266_a3a7,
                ],
                [702, 520, 574, 391],
            ),
            (
                0xdead_beef,
                [
                    0xc555_5444_a74d_7e83,
                    0x65c3_0d37_b4b1_6e38,
                    0x54f7_7320_0a4e_fa23,
                    0x429a_ed75_fb95_8af7,
                ],
                [770, 397, 331, 260],
            ),
        ];
        for (seed, words, below) in cases {
            let mut r = Rng::new(seed);
            assert_eq!(
                core::array::from_fn(|_| r.next_u64()),
                words,
                "seed {seed:#x}"
            );
            let mut r = Rng::new(seed);
            assert_eq!(
                core::array::from_fn(|_| r.below(1000)),
                below,
                "seed {seed:#x}"
            );
        }
    }

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
