//! TCP Reno's congestion window as a closed form of the request number (paper §2.5, Fig. 8,
//! Appendix B).
//!
//! A Trickles server keeps no per-connection state, so it cannot run TCP's state machine
//! ack by ack. Within a loss-free epoch that starts at request `TCPBase` with window
//! `startCwnd` and threshold `ssthresh`, Reno's window after request `k` is a function of
//! `k` alone:
//!
//! ```text
//! TCPCwnd(k) = startCwnd + (k − TCPBase)   if k < A            (slow start)
//!            = ssthresh                     if A ≤ k < A + ssthresh
//!            = F(k − A)                     if A + ssthresh ≤ k  (congestion avoidance)
//! A = ssthresh − startCwnd + TCPBase
//! F(N) = ⌊x⌋, x the positive root of ((x − 1)x − (ssthresh − 1)ssthresh)/2 − N
//! ```
//!
//! [`tcp_cwnd`] evaluates it with exact integer arithmetic — no floating point: the root is
//! `(1 + √D)/2` with `D = (2·ssthresh − 1)² + 8N`, and `⌊(1 + √D)/2⌋ = ⌈⌊√D⌋/2⌉`, so
//! one integer square root suffices. [`RenoSim`] is the ack-by-ack state machine it
//! replaces, kept as the reference the tests compare it with.

/// TCP Reno's congestion window (packets) after request `k` of an epoch that began at
/// request `tcp_base` with window `start_cwnd` and threshold `ssthresh` (Fig. 8).
///
/// Requests before `tcp_base` read as `start_cwnd`. A `start_cwnd` above `ssthresh` (which
/// Trickles never sets: after a loss `startCwnd = ssthresh`) is treated as `ssthresh`, as
/// Reno would leave slow start at once. The result saturates at `u32::MAX`.
///
/// ```
/// use trickles::cc::window::tcp_cwnd;
/// // Fig. 9's epoch: TCPBase 40, startCwnd 3, ssthresh 8.
/// let w: Vec<u32> = (40..=60).map(|k| tcp_cwnd(k, 40, 3, 8)).collect();
/// assert_eq!(w, [3, 4, 5, 6, 7, 8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9]);
/// ```
pub fn tcp_cwnd(k: u64, tcp_base: u64, start_cwnd: u32, ssthresh: u32) -> u32 {
    let ssthresh = ssthresh.max(1);
    let start = start_cwnd.clamp(1, ssthresh);
    let Some(since) = k.checked_sub(tcp_base) else {
        return start;
    };
    // Requests of slow start left: A − TCPBase.
    let slow = u64::from(ssthresh - start);
    if since < slow {
        return start + since as u32;
    }
    let n = since - slow; // k − A
    if n < u64::from(ssthresh) {
        return ssthresh;
    }
    let s = u128::from(ssthresh);
    let d = (2 * s - 1) * (2 * s - 1) + 8 * u128::from(n);
    // `d` fits 64 bits for every window below 2^31 packets since the epoch: the 64-bit
    // square root is the cheaper one, with the same result.
    let root = u64::try_from(d).map_or_else(|_| d.isqrt(), |d| u128::from(d.isqrt()));
    let x = root.div_ceil(2);
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// TCP Reno without losses, one acknowledgment at a time: slow start adds one packet per
/// ack until the window reaches `ssthresh`, congestion avoidance one per window of acks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenoSim {
    /// The window after the last request.
    pub cwnd: u32,
    ssthresh: u32,
    /// Acks counted toward the next increase in congestion avoidance.
    acked: u32,
}

impl RenoSim {
    /// The state at the epoch's first request (`TCPBase`).
    pub fn new(start_cwnd: u32, ssthresh: u32) -> RenoSim {
        let ssthresh = ssthresh.max(1);
        RenoSim {
            cwnd: start_cwnd.clamp(1, ssthresh),
            ssthresh,
            acked: 0,
        }
    }

    /// Processes the next request's acknowledgment.
    pub fn ack(&mut self) {
        if self.cwnd < self.ssthresh {
            self.cwnd += 1;
        } else {
            self.acked += 1;
            if self.acked >= self.cwnd {
                self.cwnd = self.cwnd.saturating_add(1);
                self.acked = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_cases_meet() {
        // Slow start from 3 to 8, eight requests at 8, then 9 for nine, 10 for ten.
        assert_eq!(tcp_cwnd(44, 40, 3, 8), 7);
        assert_eq!(tcp_cwnd(45, 40, 3, 8), 8);
        assert_eq!(tcp_cwnd(52, 40, 3, 8), 8);
        assert_eq!(tcp_cwnd(53, 40, 3, 8), 9);
        assert_eq!(tcp_cwnd(61, 40, 3, 8), 9);
        assert_eq!(tcp_cwnd(62, 40, 3, 8), 10);
        assert_eq!(tcp_cwnd(39, 40, 3, 8), 3, "before the epoch");
    }

    #[test]
    fn huge_request_numbers_do_not_overflow() {
        let w = tcp_cwnd(u64::MAX, 0, 1, u32::MAX);
        assert!(w >= u32::MAX - 1);
        assert!(tcp_cwnd(u64::MAX, 0, 2, 2) > 6_000_000_000u64.isqrt() as u32);
    }
}
