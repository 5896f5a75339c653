//! Time as the caller gives it: a tick count, a microsecond at every daemon's door.

use core::fmt;

/// Microseconds per millisecond (ticks per millisecond at a daemon's door).
pub const MILLIS: u64 = 1_000;
/// Microseconds per second (ticks per second at a daemon's door).
pub const SECONDS: u64 = 1_000_000;

/// A point in time, counted in ticks of the caller's clock.
///
/// A sans-IO core never reads a clock. Every entry point that depends on time takes an
/// `Instant`, and every `poll_timeout` answers with an `Option<Instant>` (`None`: nothing
/// is due). This is the one time type of the workspace: the router node, the ESS stores,
/// the SNAP VM, distance vector, Trickles and the simulator all take it.
///
/// **The unit.** At every API a daemon calls a tick is one **microsecond**
/// ([`from_micros`](Self::from_micros), [`micros`](Self::micros); a simulator tick is a
/// microsecond at a node). A core that counts in a coarser unit converts in one place
/// ([`millis`](Self::millis) for distance vector's timers). Cores used on their own (an
/// ESS store in a reproduction) may count ticks in any unit, as long as the durations they
/// are configured with (an ESS store's lifetime and resolution) are in the same ticks. The
/// origin is the caller's choice; it only has to be monotonic.
///
/// ```
/// use sansio::Instant;
/// let t = Instant::from_ticks(1_500);
/// assert_eq!(t.ticks(), 1_500);
/// assert_eq!(t.saturating_add(500), Instant::from_ticks(2_000));
/// assert_eq!(Instant::from_millis(3).micros(), 3_000);
/// assert_eq!(Instant::from_micros(2_999).millis(), 2);
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

    /// `us` microseconds after the origin (a daemon's tick).
    #[inline(always)]
    pub const fn from_micros(us: u64) -> Self {
        Instant(us)
    }

    /// Microseconds since the origin.
    #[inline(always)]
    pub const fn micros(self) -> u64 {
        self.0
    }

    /// `ms` milliseconds after the origin, in microsecond ticks (saturating).
    #[inline(always)]
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms.saturating_mul(MILLIS))
    }

    /// Whole milliseconds since the origin (microsecond ticks, rounded down).
    #[inline(always)]
    pub const fn millis(self) -> u64 {
        self.0 / MILLIS
    }

    /// This instant moved `ticks` later, stopping at the end of time.
    #[inline(always)]
    pub const fn saturating_add(self, ticks: u64) -> Self {
        Instant(self.0.saturating_add(ticks))
    }

    /// Ticks from `earlier` to this instant, zero if `earlier` is later.
    #[inline(always)]
    pub const fn saturating_since(self, earlier: Instant) -> u64 {
        self.0.saturating_sub(earlier.0)
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

    #[test]
    fn microseconds_and_milliseconds() {
        assert_eq!(Instant::from_millis(u64::MAX).micros(), u64::MAX);
        assert_eq!(Instant::from_millis(7), Instant::from_micros(7_000));
        assert_eq!(Instant::from_micros(7_999).millis(), 7);
        assert_eq!(
            Instant::from_micros(5).saturating_since(Instant::from_micros(9)),
            0
        );
        assert_eq!(
            Instant::from_micros(9).saturating_since(Instant::from_micros(5)),
            4
        );
    }
}
