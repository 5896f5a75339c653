//! The retransmit timer: RTT estimation, backoff, and the timeout request that restarts a
//! stalled connection in slow start (§2.5).

use alloc::vec::Vec;

use sansio::Instant;

use super::{Client, Planned};
use crate::cc::{self, RequestMode};
use crate::sack::ProofBuilder;
use crate::wire::{ByteRange, RequestKind};

impl Client {
    /// Handles the retransmit timer at `now`: asks the server for a retransmit timeout
    /// (§2.5), which resets the connection to slow start with fresh continuations. Call it
    /// when [`Client::poll_timeout`] has come; earlier calls do nothing (beyond spending
    /// parked continuations the application woke).
    pub fn handle_timeout(&mut self, now: Instant) {
        let now_us = self.clock(now);
        if core::mem::take(&mut self.wake) && !self.reset {
            // New data to send: spend what is parked; with nothing parked and nothing in
            // flight, restart through the timeout request (exempt from freshness) now.
            let sent = self.stats.requests;
            self.unpark(now_us);
            if self.stats.requests > sent || !self.expected.is_empty() || !self.requestable() {
                self.arm(now_us, false);
                return;
            }
            self.deadline = Some(now_us);
        }
        if self.deadline.is_none_or(|d| now_us < d) {
            return;
        }
        self.deadline = None;
        if self.done() || self.reset {
            return;
        }
        if self.expected.is_empty()
            && self.outstanding.is_empty()
            && self.out.is_idle()
            && !self.requestable()
        {
            // Application-limited and idle: nothing asked, nothing awaited (no range, no
            // unacknowledged client data), nothing to ask. No probing (a
            // probe would spend this interval's one timeout request); the application's
            // next `send_data` or `request` wakes the client.
            return;
        }
        // Parked continuations are given up here: a stall, or an idle spell longer than
        // the timeout, restarts in slow start (as TCP restarts after idle, RFC 5681 §4.1).
        let Some((c, ucont)) = self.latest.clone() else {
            // No continuation yet: the SYN or all its answers were lost; send it again.
            self.abandon();
            self.next_offset = 0;
            let slots = cc::open(&self.cfg.cc);
            let retry = self.timeouts_in_row.saturating_add(1);
            let planned = Planned {
                slots: &slots,
                proof: &[],
            };
            self.send_with(now_us, RequestKind::Syn, None, &[], planned, retry);
            self.backoff(now_us);
            return;
        };
        self.proof.trim_below(c.proof_start);
        let blocks = self.proof_blocks();
        let Ok(slots) = cc::plan(&c, &blocks, RequestMode::Timeout, &self.cfg.cc) else {
            // Nothing sensible to ask (numbers exhausted): keep the timer alive.
            self.backoff(now_us);
            return;
        };
        self.abandon();
        self.floor = slots.first().map_or(self.floor, |s| s.number);
        self.stats.timeouts += 1;
        // The server answers TIMEOUTS_PER_HORIZON timeouts per connection per horizon, one
        // per value of this field modulo that: cycle through them.
        let retry = (self.stats.timeouts % u64::from(crate::server::TIMEOUTS_PER_HORIZON)) as u8;
        let planned = Planned {
            slots: &slots,
            proof: &blocks,
        };
        self.send_with(
            now_us,
            RequestKind::Timeout,
            Some(c),
            &ucont,
            planned,
            retry,
        );
        self.backoff(now_us);
    }

    /// Drops every expectation of the current epoch: outstanding ranges go back to be
    /// requested again, the proof starts over.
    pub(super) fn abandon(&mut self) {
        self.parked.clear();
        self.expected.clear();
        self.arrived.clear();
        self.out.abandon();
        self.proof = ProofBuilder::new();
        let mut lost: Vec<ByteRange> = self.lost_ranges.drain(..).collect();
        lost.extend(
            self.outstanding
                .iter()
                .map(|(&start, o)| ByteRange { start, len: o.len }),
        );
        self.outstanding.clear();
        self.retransmitted.clear();
        lost.sort_by_key(|r| r.start);
        lost.dedup_by_key(|r| r.start);
        self.lost_ranges.extend(lost);
        self.lost_settled = None;
    }

    pub(super) fn backoff(&mut self, now_us: u64) {
        self.timeouts_in_row = self.timeouts_in_row.saturating_add(1);
        self.rto_us = self.rto_us.saturating_mul(2).min(self.cfg.max_rto_us);
        self.deadline = Some(now_us.saturating_add(self.rto_us));
    }

    /// Whether nothing is left to do: the whole stream arrived and every byte sent did.
    pub(super) fn done(&self) -> bool {
        self.is_complete() && self.out.is_idle()
    }

    pub(super) fn arm(&mut self, now_us: u64, progress: bool) {
        if self.done() {
            self.deadline = None;
        } else if progress || self.deadline.is_none() {
            self.deadline = Some(now_us.saturating_add(self.rto_us));
        }
    }

    pub(super) fn computed_rto(&self) -> u64 {
        if self.srtt_us == 0 {
            return self.cfg.initial_rto_us;
        }
        (self.srtt_us + 4 * self.rttvar_us).clamp(self.cfg.min_rto_us, self.cfg.max_rto_us)
    }

    /// RFC 6298 smoothing.
    pub(super) fn rtt_sample(&mut self, sample: u64) {
        if self.srtt_us == 0 {
            self.srtt_us = sample.max(1);
            self.rttvar_us = sample / 2;
        } else {
            let err = self.srtt_us.abs_diff(sample);
            self.rttvar_us = self.rttvar_us - self.rttvar_us / 4 + err / 4;
            self.srtt_us = (self.srtt_us - self.srtt_us / 8 + sample / 8).max(1);
        }
    }
}
