//! Time as the caller gives it: a tick count.

use core::fmt;

/// A point in time, counted in ticks of the caller's clock.
///
/// A sans-IO core never reads a clock. Every entry point that depends on time takes an
/// `Instant`; what a tick means (a microsecond, a millisecond, a cycle) is the caller's
/// choice, and the durations a core is configured with (an ESS store's lifetime and clock
/// resolution, a simulated link's delay) are given in the same ticks.
///
/// ```
/// use sansio::Instant;
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
    #[inline(always)]
    pub const fn from_ticks(ticks: u64) -> Self {
        Instant(ticks)
    }

    /// Ticks since the caller's epoch.
    #[inline(always)]
    pub const fn ticks(self) -> u64 {
        self.0
    }

    /// This instant moved `ticks` later, stopping at the end of time.
    #[inline(always)]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_orders_and_prints() {
        let t = Instant::from(7);
        assert_eq!(u64::from(t), 7);
        assert_eq!(Instant::ZERO, Instant::default());
        assert!(Instant::ZERO < t);
        assert_eq!(
            Instant::from_ticks(u64::MAX).saturating_add(1).ticks(),
            u64::MAX
        );
        assert_eq!(std::format!("{t}"), "t+7");
    }
}
