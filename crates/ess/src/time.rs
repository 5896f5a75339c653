//! The store's notion of time: a tick count supplied by the caller.

use core::fmt;

/// A point in time, counted in ticks of the caller's clock.
///
/// The store never reads a clock. Every entry point that depends on time takes an `Instant`;
/// what a tick means (a microsecond, a millisecond, a cycle) is the caller's choice, and the
/// lifetime and clock resolution in [`EssConfig`](crate::EssConfig) are given in the same
/// ticks.
///
/// ```
/// use ess::Instant;
/// let t = Instant::from_ticks(1_500);
/// assert_eq!(t.ticks(), 1_500);
/// assert_eq!(t.saturating_add(500), Instant::from_ticks(2_000));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The instant zero ticks after the caller's epoch.
    pub const ZERO: Instant = Instant(0);

    /// An instant `ticks` ticks after the caller's epoch.
    pub const fn from_ticks(ticks: u64) -> Self {
        Instant(ticks)
    }

    /// Ticks since the caller's epoch.
    pub const fn ticks(self) -> u64 {
        self.0
    }

    /// This instant moved `ticks` later, stopping at the end of time.
    pub const fn saturating_add(self, ticks: u64) -> Self {
        Instant(self.0.saturating_add(ticks))
    }
}

impl From<u64> for Instant {
    fn from(ticks: u64) -> Self {
        Instant(ticks)
    }
}

impl From<Instant> for u64 {
    fn from(instant: Instant) -> Self {
        instant.0
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{}", self.0)
    }
}

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
        if now.0 > self.now_ticks {
            self.now_ticks = now.0;
            if now.0 >= self.next_unit_tick {
                self.now_units = self.units_of(now.0);
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
        if now.0 < self.next_unit_tick {
            self.now_units
        } else {
            self.units_of(now.0)
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
        assert_eq!(c.advance(Instant(0)), 0);
        assert_eq!(c.advance(Instant(99)), 0);
        assert_eq!(c.advance(Instant(100)), 1);
        assert_eq!(c.advance(Instant(1_234)), 12);
        // A step back is ignored.
        assert_eq!(c.advance(Instant(50)), 12);
        assert_eq!(c.units_at(Instant(50)), 12);
        assert_eq!(c.units_at(Instant(1_299)), 12);
        assert_eq!(c.units_at(Instant(5_000)), 50);
        assert_eq!(c.units_to_ticks(13), 1_300);
        assert_eq!(c.advance(Instant(u64::MAX)), u64::MAX / 100);
    }

    #[test]
    fn power_of_two_resolution_shifts() {
        let mut c = Clock::new(64);
        assert_eq!(c.advance(Instant(63)), 0);
        assert_eq!(c.advance(Instant(64 * 7 + 5)), 7);
        assert_eq!(c.units_at(Instant(64 * 9)), 9);
        let mut one = Clock::new(1);
        assert_eq!(one.advance(Instant(12_345)), 12_345);
        assert_eq!(one.units_at(Instant(12_345)), 12_345);
        assert_eq!(one.units_at(Instant(12_346)), 12_346);
    }
}
