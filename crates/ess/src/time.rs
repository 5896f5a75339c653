//! The store's notion of time: a tick count supplied by the caller ([`Instant`], from
//! `sansio`), kept in units of the clock resolution.

use crate::Instant;

/// The store's low-resolution clock (the paper's clock register, §5.1).
///
/// Time comes in as ticks; the store keeps it in *units* of `resolution` ticks. The latest
/// time seen by a mutating call is remembered so time never runs backwards inside the store
/// (a caller whose clock steps back sees the store as of the latest time it gave), and the
/// division from ticks to units is done at most once per unit of time (a shift when the
/// resolution is a power of two).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    resolution: u64,
    /// `log2(resolution)` if the resolution is a power of two.
    shift: Option<u32>,
    /// Latest tick count seen by a mutating call.
    now_ticks: u64,
    /// `now_ticks / resolution`.
    now_units: u64,
    /// First tick of the unit after `now_units`.
    next_unit_tick: u64,
}

impl Clock {
    pub(crate) fn new(resolution: u64) -> Self {
        let shift = resolution
            .is_power_of_two()
            .then(|| resolution.trailing_zeros());
        Clock {
            resolution,
            shift,
            now_ticks: 0,
            now_units: 0,
            next_unit_tick: resolution,
        }
    }

    #[inline(always)]
    fn units_of(&self, ticks: u64) -> u64 {
        match self.shift {
            Some(s) => ticks >> s,
            None => ticks / self.resolution,
        }
    }

    /// Records `now` (never moving backwards) and returns the current time in units.
    #[inline]
    pub(crate) fn advance(&mut self, now: Instant) -> u64 {
        if now.ticks() > self.now_ticks {
            self.now_ticks = now.ticks();
            if now.ticks() >= self.next_unit_tick {
                self.now_units = self.units_of(now.ticks());
                self.next_unit_tick = self
                    .now_units
                    .saturating_add(1)
                    .saturating_mul(self.resolution);
            }
        }
        self.now_units
    }

    /// `now` in units, reading an earlier `now` than the latest recorded as the latest.
    #[inline(always)]
    pub(crate) fn units_at(&self, now: Instant) -> u64 {
        if now.ticks() < self.next_unit_tick {
            self.now_units
        } else {
            self.units_of(now.ticks())
        }
    }

    /// The first tick of unit `units`: when something expiring at `units` is gone.
    #[inline]
    pub(crate) fn units_to_ticks(&self, units: u64) -> u64 {
        units.saturating_mul(self.resolution)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_converts_and_never_runs_backwards() {
        let mut c = Clock::new(100);
        assert_eq!(c.advance(Instant::from_ticks(0)), 0);
        assert_eq!(c.advance(Instant::from_ticks(99)), 0);
        assert_eq!(c.advance(Instant::from_ticks(100)), 1);
        assert_eq!(c.advance(Instant::from_ticks(1_234)), 12);
        // A step back is ignored.
        assert_eq!(c.advance(Instant::from_ticks(50)), 12);
        assert_eq!(c.units_at(Instant::from_ticks(50)), 12);
        assert_eq!(c.units_at(Instant::from_ticks(1_299)), 12);
        assert_eq!(c.units_at(Instant::from_ticks(5_000)), 50);
        assert_eq!(c.units_to_ticks(13), 1_300);
        assert_eq!(c.advance(Instant::from_ticks(u64::MAX)), u64::MAX / 100);
    }

    #[test]
    fn power_of_two_resolution_shifts() {
        let mut c = Clock::new(64);
        assert_eq!(c.advance(Instant::from_ticks(63)), 0);
        assert_eq!(c.advance(Instant::from_ticks(64 * 7 + 5)), 7);
        assert_eq!(c.units_at(Instant::from_ticks(64 * 9)), 9);
        let mut one = Clock::new(1);
        assert_eq!(one.advance(Instant::from_ticks(12_345)), 12_345);
        assert_eq!(one.units_at(Instant::from_ticks(12_345)), 12_345);
        assert_eq!(one.units_at(Instant::from_ticks(12_346)), 12_346);
    }
}
