//! Admission by measured headroom (paper §3.2: handlers run on the NP only where it has
//! the headroom, else on the host).
//!
//! The node is provisioned for a packet rate; at that rate each packet has a budget of
//! `10⁹ / rate` ns. Handlers may use `share` percent of it, less what the node's own
//! forwarding measurably costs per packet (the caller measures that and says so with
//! [`StreamNode::set_base_cost`](super::StreamNode::set_base_cost)): the *allowance*. A
//! deployment's cost per packet is measured, never assumed: by trial runs when it is
//! deployed, then on every message it handles (an exponentially weighted average). A
//! deployment whose cost exceeds the allowance goes to the host; one that overruns it for
//! `overrun_messages` messages in a row is moved there.

/// How a node admits handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    /// The packet rate the node is provisioned for, packets per second (≥ 1).
    pub rate_pps: u32,
    /// Percent of each packet's budget handlers may use (1–100).
    pub share_percent: u8,
    /// Messages in a row over the allowance before a stream moves to the host (≥ 1).
    pub overrun_messages: u32,
    /// Timed trial runs of a deployment before it is admitted (≥ 1; the median counts).
    pub trials: u32,
}

impl Default for Admission {
    /// 100 000 packets per second (10 µs each), half of it for handlers, 16 messages of
    /// overrun, 9 trials.
    fn default() -> Self {
        Self {
            rate_pps: 100_000,
            share_percent: 50,
            overrun_messages: 16,
            trials: 9,
        }
    }
}

impl Admission {
    /// Each packet's budget at the provisioned rate, ns.
    pub fn budget_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.rate_pps.max(1))
    }

    /// What handlers may spend per packet, ns, when forwarding itself costs `base_ns`.
    pub fn allowance_ns(&self, base_ns: u64) -> u64 {
        (self.budget_ns() * u64::from(self.share_percent.min(100)) / 100).saturating_sub(base_ns)
    }
}

/// A deployment's measured cost per packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cost {
    /// Weighted average, ns per packet (weight 1/8 for each new message).
    pub(crate) ns_per_packet: u64,
    /// Messages measured.
    pub(crate) samples: u64,
    /// Messages in a row over the allowance.
    pub(crate) over: u32,
}

impl Cost {
    /// A cost starting from a trial's measurement.
    pub(crate) fn from_trial(ns_per_packet: u64) -> Self {
        Self {
            ns_per_packet,
            samples: 0,
            over: 0,
        }
    }

    /// Records a message that took `ns` over `packets` packets; whether the stream has
    /// now overrun `allowance` for `limit` messages in a row.
    pub(crate) fn record(
        &mut self,
        ns: u64,
        packets: u64,
        allowance: Option<u64>,
        limit: u32,
    ) -> bool {
        let x = ns / packets.max(1);
        self.ns_per_packet = if self.samples == 0 && self.ns_per_packet == 0 {
            x
        } else {
            let old = self.ns_per_packet;
            if x >= old {
                old + (x - old) / 8
            } else {
                old - (old - x) / 8
            }
        };
        self.samples += 1;
        match allowance {
            Some(a) if self.ns_per_packet > a => {
                self.over = self.over.saturating_add(1);
                self.over >= limit.max(1)
            }
            _ => {
                self.over = 0;
                false
            }
        }
    }
}

/// The median of `samples` (sorted in place); 0 for none.
pub(crate) fn median(samples: &mut [u64]) -> u64 {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_and_allowance_follow_rate_share_and_base() {
        let a = Admission {
            rate_pps: 200_000,
            share_percent: 50,
            ..Admission::default()
        };
        assert_eq!(a.budget_ns(), 5_000);
        assert_eq!(a.allowance_ns(0), 2_500);
        assert_eq!(a.allowance_ns(1_000), 1_500);
        assert_eq!(a.allowance_ns(9_000), 0);
        let zero = Admission {
            rate_pps: 0,
            share_percent: 200,
            ..a
        };
        assert_eq!(zero.allowance_ns(0), 1_000_000_000);
    }

    #[test]
    fn an_overrun_needs_that_many_messages_in_a_row() {
        let mut c = Cost::from_trial(100);
        assert!(!c.record(100, 1, Some(150), 3));
        // Ten messages at 1000 ns: the average climbs past 150, then counts three.
        let mut moved_at = None;
        for i in 0..10 {
            if c.record(1000, 1, Some(150), 3) {
                moved_at.get_or_insert(i);
            }
        }
        assert_eq!(moved_at, Some(2));
        // Back under: the count starts again.
        let mut d = Cost::from_trial(0);
        assert!(!d.record(10, 1, Some(150), 1));
        assert_eq!(d.ns_per_packet, 10);
        assert!(d.record(8_000, 4, Some(150), 1));
        assert_eq!(median(&mut [5, 1, 9]), 5);
        assert_eq!(median(&mut []), 0);
    }
}
