//! When to log a link's changes of state: on change only, and for a flapping link a
//! summary at doubling intervals instead of a line per change. Pure: time comes in as
//! the node's [`Instant`], so the tests run it on a virtual clock.
//!
//! ```text
//!  refused ─► down (logged once; refused again while down: nothing)
//!  hold-down over ─► retried: nothing yet ─┬─ refused again before `confirm` ─► still down
//!                                          └─ `confirm` passes ─► up (logged)
//!  heard from the peer ─► up (logged)
//!
//!  more than `burst` logged changes within `window` ─► "flapping": from then on one
//!  summary (changes suppressed, state now) per interval, the interval doubling from
//!  `first` up to `max`; an interval without a change ─► "stable", back to every change
//! ```
//!
//! A dead neighbour's link is refused, retried and refused again every hold-down: that is
//! one change (down), not a flap. A peer that keeps restarting is a flap.

use std::collections::VecDeque;

use waist_node::{Instant, SECONDS};

/// The back-off's knobs, in the node's ticks (microseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Changes logged one by one within `window`; the next one starts the back-off.
    pub burst: usize,
    /// The window `burst` is counted in.
    pub window: u64,
    /// The first interval between summaries.
    pub first: u64,
    /// The longest interval between summaries.
    pub max: u64,
}

impl Default for Policy {
    /// Four changes a minute; summaries after 10 s, 20 s, … up to every 640 s.
    fn default() -> Self {
        Policy {
            burst: 4,
            window: 60 * SECONDS,
            first: 10 * SECONDS,
            max: 640 * SECONDS,
        }
    }
}

/// A line to log about a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Say {
    /// It went down.
    Down,
    /// It is up: `heard` from its peer, or not refused since its hold-down ended.
    Up {
        /// Whether the peer was heard (rather than simply not refusing).
        heard: bool,
    },
    /// It changed `changes` times within the window: from now on a summary every `every`
    /// ticks. `up`: its state now.
    Flapping {
        /// Changes within the window, this one included.
        changes: usize,
        /// Ticks to the first summary.
        every: u64,
        /// Whether it is up now.
        up: bool,
    },
    /// While flapping: `suppressed` changes were not logged since the last line.
    Suppressed {
        /// Changes not logged.
        suppressed: u64,
        /// Ticks to the next summary.
        every: u64,
        /// Whether it is up now.
        up: bool,
    },
    /// No change for a whole interval: every change is logged again.
    Stable {
        /// Whether it is up now.
        up: bool,
    },
}

#[derive(Clone, Copy, Debug)]
struct Damped {
    suppressed: u64,
    every: u64,
    next: Instant,
}

/// One link's log state.
#[derive(Clone, Debug)]
pub struct Flap {
    policy: Policy,
    /// The state last logged (or folded into a summary). Links start up.
    up: bool,
    /// Retried while down: up if no refusal comes before this.
    pending: Option<Instant>,
    /// When the last logged changes happened (at most `burst`).
    recent: VecDeque<Instant>,
    damped: Option<Damped>,
}

impl Flap {
    /// A link that is up.
    pub fn new(policy: Policy) -> Flap {
        Flap {
            policy,
            up: true,
            pending: None,
            recent: VecDeque::new(),
            damped: None,
        }
    }

    /// The peer refused at `now`.
    pub fn refused(&mut self, now: Instant) -> Option<Say> {
        if self.pending.take().is_some() || !self.up {
            // A retry refused, or refused again: still down.
            return None;
        }
        self.change(now, false, false)
    }

    /// The peer was heard at `now`.
    pub fn heard(&mut self, now: Instant) -> Option<Say> {
        self.pending = None;
        if self.up {
            return None;
        }
        self.change(now, true, true)
    }

    /// The link's hold-down ended at `now` and it is tried again: up if nothing refuses it
    /// for `confirm` ticks (see [`Flap::poll`]).
    pub fn retried(&mut self, now: Instant, confirm: u64) {
        if !self.up {
            self.pending = Some(now.saturating_add(confirm));
        }
    }

    /// When [`Flap::poll`] next has something to say.
    pub fn next_due(&self) -> Option<Instant> {
        let damped = self.damped.map(|d| d.next);
        match (self.pending, damped) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What is due at `now`: a retry confirmed, a summary, the end of the back-off. Call
    /// until `None`.
    pub fn poll(&mut self, now: Instant) -> Option<Say> {
        if self.pending.is_some_and(|t| t <= now) {
            self.pending = None;
            if let Some(say) = self.change(now, true, false) {
                return Some(say);
            }
        }
        let d = self.damped.as_mut().filter(|d| d.next <= now)?;
        if d.suppressed == 0 {
            self.damped = None;
            self.recent.clear();
            return Some(Say::Stable { up: self.up });
        }
        let suppressed = std::mem::take(&mut d.suppressed);
        d.every = d.every.saturating_mul(2).min(self.policy.max);
        d.next = now.saturating_add(d.every);
        Some(Say::Suppressed {
            suppressed,
            every: d.every,
            up: self.up,
        })
    }

    fn change(&mut self, now: Instant, up: bool, heard: bool) -> Option<Say> {
        self.up = up;
        if let Some(d) = &mut self.damped {
            d.suppressed += 1;
            return None;
        }
        let window = self.policy.window;
        while self
            .recent
            .front()
            .is_some_and(|&t| now.saturating_since(t) >= window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.policy.burst {
            let every = self.policy.first;
            self.damped = Some(Damped {
                suppressed: 0,
                every,
                next: now.saturating_add(every),
            });
            return Some(Say::Flapping {
                changes: self.recent.len() + 1,
                every,
                up,
            });
        }
        self.recent.push_back(now);
        Some(if up { Say::Up { heard } } else { Say::Down })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Instant {
        Instant::from_micros(secs * SECONDS)
    }

    #[test]
    fn a_dead_peer_is_down_once_whatever_the_retries() {
        let mut f = Flap::new(Policy::default());
        assert_eq!(f.refused(s(0)), Some(Say::Down));
        // Every second: retried, refused at once. Nothing to say, for an hour.
        for t in 1..3600 {
            f.retried(s(t), SECONDS);
            assert_eq!(f.poll(s(t)), None);
            assert_eq!(f.refused(s(t)), None);
        }
        assert_eq!(f.next_due(), None);
        // The peer is back: heard, up.
        f.retried(s(3600), SECONDS);
        assert_eq!(f.heard(s(3600)), Some(Say::Up { heard: true }));
        assert_eq!(f.heard(s(3601)), None);
    }

    #[test]
    fn a_retry_nothing_refuses_is_up_after_confirm() {
        let mut f = Flap::new(Policy::default());
        assert_eq!(f.refused(s(0)), Some(Say::Down));
        f.retried(s(1), SECONDS);
        assert_eq!(f.next_due(), Some(s(2)));
        assert_eq!(f.poll(s(1)), None);
        assert_eq!(f.poll(s(2)), Some(Say::Up { heard: false }));
        assert_eq!(f.poll(s(3)), None);
        // Retried while up: nothing.
        f.retried(s(4), SECONDS);
        assert_eq!(f.next_due(), None);
    }

    #[test]
    fn a_flapping_link_backs_off_and_recovers() {
        let p = Policy::default();
        let mut f = Flap::new(p);
        // A peer restarting every 2 s: down, up, down, up logged...
        let mut lines = Vec::new();
        let mut t = 0;
        for _ in 0..10 {
            lines.extend(f.refused(s(t)));
            lines.extend(f.heard(s(t + 1)));
            t += 2;
        }
        assert_eq!(
            lines[..5],
            [
                Say::Down,
                Say::Up { heard: true },
                Say::Down,
                Say::Up { heard: true },
                Say::Flapping {
                    changes: 5,
                    every: p.first,
                    up: false
                },
            ]
        );
        // ... then nothing per change.
        assert_eq!(lines.len(), 5, "{lines:?}");
        // Flapping since 4 s: a summary is due at 14 s; read at 20 s, 15 changes since.
        assert_eq!(f.next_due(), Some(s(14)));
        assert_eq!(
            f.poll(s(20)),
            Some(Say::Suppressed {
                suppressed: 15,
                every: 2 * p.first,
                up: true
            })
        );
        assert_eq!(f.poll(s(20)), None);
        // It keeps flapping: the intervals double up to `max`.
        let mut every = 2 * p.first;
        let mut now = s(20);
        for _ in 0..10 {
            let next = now.saturating_add(every);
            let _ = f.refused(now.saturating_add(SECONDS));
            let _ = f.heard(now.saturating_add(2 * SECONDS));
            assert_eq!(f.next_due(), Some(next));
            every = (every * 2).min(p.max);
            assert_eq!(
                f.poll(next),
                Some(Say::Suppressed {
                    suppressed: 2,
                    every,
                    up: true
                })
            );
            now = next;
        }
        assert_eq!(every, p.max);
        // Quiet for a whole interval: stable, and the next change is logged again.
        let quiet = now.saturating_add(every);
        assert_eq!(f.poll(quiet), Some(Say::Stable { up: true }));
        assert_eq!(f.next_due(), None);
        assert_eq!(f.refused(quiet.saturating_add(SECONDS)), Some(Say::Down));
    }
}
