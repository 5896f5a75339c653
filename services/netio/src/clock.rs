//! The daemons' one clock: the operating system's time turned into the cores'
//! [`Instant`] (microseconds) and back.
//!
//! A core never reads a clock; a daemon reads it here, in one place, and hands the core
//! `now` as an `Instant` in microseconds since the clock's origin. The core's
//! `poll_timeout` answers in the same unit, and [`Clock::deadline`] turns that answer
//! back into the instant a tokio timer sleeps until.
//!
//! Two origins: [`Clock::monotonic`] counts from the moment the daemon started (the router,
//! the clients), [`Clock::wall`] counts from the Unix epoch (a Trickles server, whose
//! replicas must agree on the key period a continuation was issued in). Both advance with
//! the monotonic clock: a wall clock set back or forward while the daemon runs moves
//! neither (a restarted daemon reads the new time).
//!
//! ```
//! use netio::clock::Clock;
//! let clock = Clock::monotonic();
//! let a = clock.now();
//! let b = clock.now();
//! assert!(b >= a);
//! // A deadline one millisecond later, as the instant a timer sleeps until.
//! let due = clock.deadline(a.saturating_add(1_000));
//! assert!(due >= clock.origin());
//! ```

use std::time::{Duration, Instant as StdInstant, SystemTime, UNIX_EPOCH};

pub use netsim::Instant;

/// The operating system's monotonic clock, counted in microseconds from an origin.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// The monotonic instant `Instant::ZERO` stands for (it may lie in the past before
    /// the process started: a wall clock's origin is the Unix epoch).
    origin: StdInstant,
    /// Microseconds `origin` is after `Instant::ZERO` when it could not be moved that far
    /// back (a monotonic clock that starts at boot cannot reach 1970).
    offset: u64,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn monotonic() -> Clock {
        Clock {
            origin: StdInstant::now(),
            offset: 0,
        }
    }

    /// A clock whose origin is the monotonic instant `origin` (a link opened at a time the
    /// daemon already read).
    pub fn starting_at(origin: StdInstant) -> Clock {
        Clock { origin, offset: 0 }
    }

    /// A clock that reads microseconds since the Unix epoch (read once, here; it then
    /// advances monotonically).
    pub fn wall() -> Clock {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let now = StdInstant::now();
        Clock {
            origin: now,
            offset: since_epoch.as_micros() as u64,
        }
    }

    /// The monotonic instant this clock's readings count from (its `offset` microseconds
    /// after `Instant::ZERO`).
    pub fn origin(&self) -> StdInstant {
        self.origin
    }

    /// The time now.
    pub fn now(&self) -> Instant {
        self.at(StdInstant::now())
    }

    /// The time now, read once, both ways: the monotonic instant the links and the
    /// emulation take, and the same reading as the cores' [`Instant`].
    pub fn read(&self) -> (StdInstant, Instant) {
        let wall = StdInstant::now();
        (wall, self.at(wall))
    }

    /// The reading of this clock at the monotonic instant `t` (an instant before the
    /// origin reads as the origin).
    pub fn at(&self, t: StdInstant) -> Instant {
        let us = t.saturating_duration_since(self.origin).as_micros() as u64;
        Instant::from_micros(self.offset.saturating_add(us))
    }

    /// The monotonic instant at which this clock reads `t` (a reading before the origin
    /// maps to the origin): what a timer sleeps until for a core's `poll_timeout`.
    pub fn deadline(&self, t: Instant) -> StdInstant {
        let us = t.micros().saturating_sub(self.offset);
        self.origin
            .checked_add(Duration::from_micros(us))
            .unwrap_or_else(|| self.origin + Duration::from_secs(86_400 * 365))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_and_deadlines_round_trip() {
        let c = Clock::monotonic();
        let t = c.origin() + Duration::from_micros(1_234);
        assert_eq!(c.at(t), Instant::from_micros(1_234));
        assert_eq!(c.deadline(Instant::from_micros(1_234)), t);
        // Before the origin: the origin.
        if let Some(before) = c.origin().checked_sub(Duration::from_millis(1)) {
            assert_eq!(c.at(before), Instant::ZERO);
        }
        // One reading, both ways.
        let (wall, now) = c.read();
        assert_eq!(c.at(wall), now);
        // The end of time does not overflow.
        assert!(c.deadline(Instant::from_micros(u64::MAX)) > c.origin());
    }

    #[test]
    fn the_wall_clock_counts_from_the_epoch() {
        let c = Clock::wall();
        let epoch_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        let now = c.now().micros();
        // Read within a second of each other, and 2026 is long after 1970.
        assert!(now.abs_diff(epoch_us) < 1_000_000, "{now} vs {epoch_us}");
        assert!(now > 1_700_000_000 * 1_000_000);
        // A reading before the origin maps back to it.
        assert_eq!(c.deadline(Instant::ZERO), c.origin());
        // Readings after the origin round-trip through a deadline.
        let later = Instant::from_micros(c.now().micros() + 5_000);
        assert_eq!(c.at(c.deadline(later)), later);
    }
}
