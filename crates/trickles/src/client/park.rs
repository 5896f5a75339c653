//! Parking continuations while the client is application-limited.
//!
//! A continuation the client cannot use yet (no data to send, no range it may ask for,
//! or [`ClientConfig::max_in_flight`](super::ClientConfig::max_in_flight) packets already
//! expected) waits here instead of being spent; parked ones are spent in order as soon as
//! there is something to ask and room in flight
//! ([`ClientConfig::park_max_us`](super::ClientConfig::park_max_us)).

use alloc::sync::Arc;

use super::{Client, Parked};
use crate::wire::continuation::Continuation;

impl Client {
    /// Sends the request that uses continuation `c`, or parks it (in order behind any
    /// parked already) while there is nothing to ask for.
    pub(super) fn spend(&mut self, now_us: u64, c: Continuation, ucont: &Arc<[u8]>) {
        if self.cfg.park_max_us > 0
            && !self.done()
            && (!self.parked.is_empty() || !self.requestable() || self.window_full())
        {
            // The proof now ends at `c`'s packet (it was just resolved): keep it, so the
            // request made later still acknowledges exactly up to there. Spent with the
            // proof of that later time, it would claim packets beyond its own number and
            // be refused (or, dropped, leave a gap the server would read as a loss).
            let proof = self.proof.blocks().to_vec();
            self.parked.push_back(Parked {
                at: now_us,
                continuation: c,
                ucont: Arc::clone(ucont),
                proof,
            });
            return;
        }
        self.spend_now(now_us, c, ucont, None);
    }

    /// Whether a request would carry something: client data, or a range to ask for.
    pub(super) fn requestable(&mut self) -> bool {
        if self.out.has_unsent() {
            return true;
        }
        self.settle();
        self.range_ready()
    }

    /// Whether as many packets as [`ClientConfig::max_in_flight`] allows are expected: a
    /// continuation that arrives now waits (parked) until some of them are resolved.
    pub(super) fn window_full(&self) -> bool {
        self.cfg.max_in_flight > 0 && self.expected.len() >= self.cfg.max_in_flight as usize
    }

    /// Nothing asked and nothing waiting to be spent: no response is coming.
    pub(super) fn idle(&self) -> bool {
        self.connected() && self.expected.is_empty() && self.parked.is_empty()
    }

    /// Spends parked continuations, oldest first, while there is something to ask for
    /// (and the first unused one on the FIN once done); drops those too old to spend.
    pub(super) fn unpark(&mut self, now_us: u64) {
        while let Some(at) = self.parked.front().map(|p| p.at) {
            let fresh = now_us.saturating_sub(at) <= self.cfg.park_max_us;
            if fresh && !self.done() && (!self.requestable() || self.window_full()) {
                break;
            }
            if let Some(p) = self.parked.pop_front()
                && fresh
            {
                self.spend_now(now_us, p.continuation, &p.ucont, Some(p.proof));
            }
        }
    }
}
