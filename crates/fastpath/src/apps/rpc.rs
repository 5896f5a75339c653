//! RPC duplicate detection keyed by caller id and sequence number (Table 3, timer-based
//! transport; §3.3, after Birrell and Nelson).
//!
//! Each call carries a caller id (network-unique process id), a sequence number that
//! grows per caller, and the caller's consistent random index `r`. The receiver keeps a
//! state entry per caller — its last sequence number and when it was seen — reached
//! through a lookup table of `2^k` buckets indexed by `r`, each a chain of pointer blocks
//! (hashing with chaining, the hash chosen by the source). We store each pointer block
//! with its state entry in one slab (freed entries are reused), so unlinking is O(1). A call whose
//! sequence number is not above the recorded one is a duplicate.
//!
//! Unlike a route cache, this table must not forget a caller early (a forgotten caller's
//! duplicate would be accepted), so collisions chain instead of evicting. State is dropped
//! only after `lifetime` ticks — the longest a duplicate can live in the network — and
//! the number of entries is capped; at the cap a new caller's call is refused
//! ([`Verdict::Refused`]), which keeps at-most-once semantics.

use alloc::vec::Vec;

use crate::flow::{FlowId, SourceHash};

/// What to do with a call packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A new call: execute it (its sequence number is now recorded).
    Accept,
    /// Not above the caller's last sequence number: discard.
    Duplicate,
    /// The state table is full and this caller has no entry: refuse (the caller retries).
    Refused,
}

/// A pointer block and the state entry it points to, stored together: the caller's id,
/// its last sequence number, when it was last heard, and the next block of the chain.
#[derive(Clone, Debug)]
struct Entry {
    caller: FlowId,
    last_seq: u64,
    last_seen: u64,
    next: u32,
}

const NIL: u32 = u32::MAX;

/// The receiver's duplicate-detection table.
#[derive(Clone, Debug)]
pub struct DuplicateTable {
    heads: Vec<u32>,
    entries: Vec<Entry>,
    /// Indices of freed entries, reused before the vector grows.
    free: Vec<u32>,
    live: usize,
    mask: u32,
    lifetime: u64,
    max_entries: usize,
    probes: u64,
}

impl DuplicateTable {
    /// A table of `2^log2` buckets (`log2` clamped to 24) that remembers a caller for
    /// `lifetime` ticks after its last call and holds at most `max_entries` callers.
    pub fn new(log2: u8, lifetime: u64, max_entries: usize) -> DuplicateTable {
        let log2 = log2.min(24);
        DuplicateTable {
            heads: alloc::vec![NIL; 1 << log2],
            entries: Vec::new(),
            free: Vec::new(),
            live: 0,
            mask: (1u32 << log2) - 1,
            lifetime,
            max_entries,
            probes: 0,
        }
    }

    /// Handles a call from `caller` with sequence number `seq` and index `r` at `now`.
    /// Expired entries met on the way along the chain are unlinked and freed.
    pub fn handle_call(&mut self, now: u64, caller: &FlowId, r: SourceHash, seq: u64) -> Verdict {
        let bucket = (r.get() & self.mask) as usize;
        let mut prev = NIL;
        let mut at = self.heads.get(bucket).copied().unwrap_or(NIL);
        while at != NIL {
            self.probes += 1;
            let Some(e) = self.entries.get_mut(at as usize) else {
                break;
            };
            let next = e.next;
            if now.saturating_sub(e.last_seen) > self.lifetime {
                // Expired: unlink from the chain and free it; `prev` stays.
                self.set_next(bucket, prev, next);
                self.free.push(at);
                self.live -= 1;
                at = next;
                continue;
            }
            if e.caller == *caller {
                e.last_seen = now;
                return if seq > e.last_seq {
                    e.last_seq = seq;
                    Verdict::Accept
                } else {
                    Verdict::Duplicate
                };
            }
            prev = at;
            at = next;
        }
        if self.live >= self.max_entries {
            return Verdict::Refused;
        }
        // New caller: an entry at the head of the chain.
        let head = self.heads.get(bucket).copied().unwrap_or(NIL);
        let entry = Entry {
            caller: *caller,
            last_seq: seq,
            last_seen: now,
            next: head,
        };
        let index = match self.free.pop() {
            Some(i) => {
                if let Some(slot) = self.entries.get_mut(i as usize) {
                    *slot = entry;
                }
                i
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as u32
            }
        };
        self.live += 1;
        if let Some(h) = self.heads.get_mut(bucket) {
            *h = index;
        }
        Verdict::Accept
    }

    /// Points `prev`'s link (or the bucket's head when `prev` is `NIL`) at `next`.
    fn set_next(&mut self, bucket: usize, prev: u32, next: u32) {
        let link = if prev == NIL {
            self.heads.get_mut(bucket)
        } else {
            self.entries.get_mut(prev as usize).map(|e| &mut e.next)
        };
        if let Some(l) = link {
            *l = next;
        }
    }

    /// Callers with state.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no caller has state.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Chain entries examined so far (a measure of collision cost).
    pub fn probes(&self) -> u64 {
        self.probes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn duplicates_are_discarded() {
        let mut t = DuplicateTable::new(4, 100, 10);
        let a = FlowId::from_u32(1);
        let r = SourceHash::new(5);
        assert_eq!(t.handle_call(0, &a, r, 1), Verdict::Accept);
        assert_eq!(t.handle_call(1, &a, r, 1), Verdict::Duplicate);
        assert_eq!(t.handle_call(2, &a, r, 2), Verdict::Accept);
        assert_eq!(t.handle_call(3, &a, r, 1), Verdict::Duplicate);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn colliding_callers_chain_and_expire() {
        let mut t = DuplicateTable::new(0, 10, 10);
        let (a, b) = (FlowId::from_u32(1), FlowId::from_u32(2));
        let r = SourceHash::new(0);
        assert_eq!(t.handle_call(0, &a, r, 7), Verdict::Accept);
        assert_eq!(t.handle_call(0, &b, r, 7), Verdict::Accept);
        assert_eq!(t.handle_call(1, &a, r, 7), Verdict::Duplicate);
        assert_eq!(t.handle_call(1, &b, r, 7), Verdict::Duplicate);
        assert_eq!(t.len(), 2);
        // After the lifetime a caller's state is gone: any call is accepted afresh.
        assert_eq!(t.handle_call(50, &a, r, 1), Verdict::Accept);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn expired_entries_are_reused() {
        let mut t = DuplicateTable::new(0, 1, 10);
        for i in 0..100u32 {
            let now = u64::from(i) * 10;
            assert_eq!(
                t.handle_call(now, &FlowId::from_u32(i), SourceHash::new(0), 1),
                Verdict::Accept
            );
            assert_eq!(t.len(), 1);
        }
        assert_eq!(t.entries.len(), 1, "the slab did not grow");
    }

    #[test]
    fn full_table_refuses_new_callers_only() {
        let mut t = DuplicateTable::new(2, 100, 1);
        let (a, b) = (FlowId::from_u32(1), FlowId::from_u32(2));
        assert_eq!(t.handle_call(0, &a, SourceHash::new(1), 1), Verdict::Accept);
        assert_eq!(
            t.handle_call(0, &b, SourceHash::new(2), 1),
            Verdict::Refused
        );
        assert_eq!(t.handle_call(0, &a, SourceHash::new(1), 2), Verdict::Accept);
    }

    proptest! {
        /// Against a model (a map caller → (last seq, last seen)) under arbitrary indices,
        /// times and sequence numbers: same verdicts, whatever collides.
        #[test]
        fn agrees_with_a_map(
            log2 in 0u8..3,
            calls in proptest::collection::vec((0u32..6, 0u64..3, 0u64..8, 0u64..4), 1..120),
        ) {
            let lifetime = 5;
            let mut t = DuplicateTable::new(log2, lifetime, usize::MAX);
            let mut model: HashMap<u32, (u64, u64)> = HashMap::new();
            let mut now = 0;
            for (caller, dt, seq, _) in calls {
                now += dt;
                // A caller keeps one consistent index.
                let r = SourceHash::new(caller.wrapping_mul(0x9e37_79b9));
                let expect = match model.get(&caller) {
                    Some(&(last, seen)) if now - seen <= lifetime => {
                        if seq > last { Verdict::Accept } else { Verdict::Duplicate }
                    }
                    _ => Verdict::Accept,
                };
                let got = t.handle_call(now, &FlowId::from_u32(caller), r, seq);
                prop_assert_eq!(got, expect);
                let e = model.entry(caller).or_insert((seq, now));
                if expect == Verdict::Accept { e.0 = seq; }
                if now - e.1 > lifetime { e.0 = seq; }
                e.1 = now;
            }
        }
    }
}
