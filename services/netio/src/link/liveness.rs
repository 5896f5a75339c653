//! Whether a UDP link's peer is there: the kernel's word (ICMP port unreachable surfaces on
//! a connected socket as `ECONNREFUSED`) against the peer's (any datagram from it).
//!
//! ```text
//!            refused (send or receive)              datagram from the peer
//!   ┌────┐ ─────────────────────────────► ┌──────┐ ─────────────────────────► up
//!   │ up │                                │ down │
//!   └────┘ ◄───────────────────────────── └──────┘   refused again: hold-down restarts
//!            hold-down over: retried
//! ```
//!
//! A refusal is counted every time (`refused` in the link's counters) but reported once,
//! as a change of state ([`LinkEvent`]); a down link is considered up again after its
//! hold-down, so traffic (or a routing request) tries the peer again and a peer that
//! started late is found. TUN links are always up.

use std::fmt;
use std::time::{Duration, Instant};

/// The hold-down of a link whose config does not give `holddown_ms`.
pub const DEFAULT_HOLDDOWN: Duration = Duration::from_millis(1000);

/// Why a link changed state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The peer's port is closed: the kernel refused a send or a receive (ICMP port
    /// unreachable).
    Refused,
    /// A datagram arrived from the peer.
    Heard,
    /// The link's hold-down ended: it is tried again.
    Retry,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cause::Refused => "peer refused",
            Cause::Heard => "heard from peer",
            Cause::Retry => "hold-down over, retrying",
        })
    }
}

/// A link went down or came up. Read with [`Links::poll_event`](super::Links::poll_event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkEvent {
    /// The link's interface number.
    pub iface: usize,
    /// Its new state.
    pub up: bool,
    /// Why.
    pub cause: Cause,
}

/// One link's state.
#[derive(Clone, Copy, Debug)]
pub(super) struct Liveness {
    up: bool,
    holddown: Duration,
    /// While down: when the link is tried again.
    retry_at: Option<Instant>,
}

impl Liveness {
    /// Up, with `holddown` between a refusal and the next try.
    pub(super) fn new(holddown: Duration) -> Liveness {
        Liveness {
            up: true,
            holddown,
            retry_at: None,
        }
    }

    pub(super) fn is_up(&self) -> bool {
        self.up
    }

    pub(super) fn holddown(&self) -> Duration {
        self.holddown
    }

    pub(super) fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// The peer refused at `now`: down (the hold-down starts again if it already was).
    /// Whether the state changed.
    pub(super) fn refused(&mut self, now: Instant) -> bool {
        self.retry_at = Some(now + self.holddown);
        std::mem::replace(&mut self.up, false)
    }

    /// The peer spoke: up. Whether the state changed.
    #[inline]
    pub(super) fn heard(&mut self) -> bool {
        if self.up {
            return false;
        }
        self.up = true;
        self.retry_at = None;
        true
    }

    /// Up again if the hold-down is over at `now`; whether it changed.
    pub(super) fn retry_due(&mut self, now: Instant) -> bool {
        if self.retry_at.is_some_and(|t| t <= now) {
            self.up = true;
            self.retry_at = None;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_heard_and_retried() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut l = Liveness::new(ms(100));
        assert!(l.is_up() && !l.heard());
        assert!(l.refused(t0));
        assert!(!l.is_up() && l.retry_at() == Some(t0 + ms(100)));
        // Refused again while down: no change, the hold-down restarts.
        assert!(!l.refused(t0 + ms(50)));
        assert!(!l.retry_due(t0 + ms(120)));
        assert!(l.retry_due(t0 + ms(150)));
        assert!(l.is_up() && l.retry_at().is_none());
        assert!(l.refused(t0 + ms(200)));
        assert!(l.heard() && l.is_up());
    }
}
