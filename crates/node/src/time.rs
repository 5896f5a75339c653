//! The node's one clock unit: an [`Instant`] in microseconds.
//!
//! Every entry point of [`Node`](crate::Node) takes `now` as an [`Instant`] and
//! [`poll_timeout`](crate::Node::poll_timeout) answers with one; the node converts to each
//! core's own unit in one place ([`Instant::ess`], [`Instant::millis`]); the shared
//! tick type of `ess` and `netsim` converts both ways with `From`. The origin is the
//! caller's choice (a daemon uses the time it started); it only has to be monotonic.

/// A point in time, in microseconds since an origin the caller picks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// Microseconds per millisecond.
pub const MILLIS: u64 = 1_000;
/// Microseconds per second.
pub const SECONDS: u64 = 1_000_000;

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);

    /// `us` microseconds after the origin.
    pub const fn from_micros(us: u64) -> Instant {
        Instant(us)
    }

    /// `ms` milliseconds after the origin (saturating).
    pub const fn from_millis(ms: u64) -> Instant {
        Instant(ms.saturating_mul(MILLIS))
    }

    /// Microseconds since the origin.
    pub const fn micros(self) -> u64 {
        self.0
    }

    /// Whole milliseconds since the origin (the distance-vector router's unit).
    pub const fn millis(self) -> u64 {
        self.0 / MILLIS
    }

    /// This instant as the ESS stores, the SNAP VM and the simulator count it (the one shared
    /// caller-time type, `sansio::Instant`, which `ess` and `netsim` re-export): their ticks
    /// are microseconds at a node.
    pub const fn ess(self) -> ess::Instant {
        ess::Instant::from_ticks(self.0)
    }

    /// This instant `us` microseconds later, stopping at the end of time.
    pub const fn saturating_add(self, us: u64) -> Instant {
        Instant(self.0.saturating_add(us))
    }
}

/// The shared caller-time type ([`sansio::Instant`](ess::Instant), also `netsim::Instant`)
/// counted in microseconds: a simulator tick is one microsecond at a node.
impl From<ess::Instant> for Instant {
    fn from(t: ess::Instant) -> Self {
        Instant(t.ticks())
    }
}

/// The same as [`Instant::ess`].
impl From<Instant> for ess::Instant {
    fn from(t: Instant) -> Self {
        t.ess()
    }
}
