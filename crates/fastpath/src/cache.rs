//! The source-hash flow cache (§3, Fig. 3 of the paper).
//!
//! A direct-mapped table of `2^k` slots. A packet's [`SourceHash`] picks the slot by its
//! low `k` bits — no hashing at the router — and the slot answers only if the
//! [`FlowId`] stored there equals the packet's. A miss runs the slow path (the caller's
//! closure in [`FlowCache::get_or_insert_with`]) and installs the result, evicting
//! whatever flow held the slot.
//!
//! The invariant that makes lying senders harmless: **the cache never returns another
//! flow's value.** Every `Some` from [`FlowCache::get`] is the value last inserted for that
//! exact flow id (the proptest at the bottom checks it against a model).
//!
//! Counting: [`FlowCache::get`] takes `&self` and counts nothing;
//! [`FlowCache::lookup`] and [`FlowCache::get_or_insert_with`] take `&mut self` and count
//! hits, misses and evictions in [`FlowCache::stats`].

use alloc::vec::Vec;
use core::fmt;

use crate::flow::{FlowId, SourceHash};

/// The largest table a [`FlowCache`] builds: `2^24` slots.
pub const MAX_LOG2: u8 = 24;

/// Why a [`FlowCache`] cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheError {
    /// `log2` above [`MAX_LOG2`]; carries the value given.
    TooLarge(u8),
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::TooLarge(k) => {
                write!(f, "flow cache of 2^{k} slots exceeds 2^{MAX_LOG2}")
            }
        }
    }
}

impl core::error::Error for CacheError {}

/// Whether a lookup found the flow in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The slot held this flow: the slow path was skipped.
    Hit,
    /// The slot was empty or held another flow: the slow path ran and its result was
    /// installed.
    Miss,
}

/// Hit, miss and eviction counters of a [`FlowCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Counted lookups that found their flow.
    pub hits: u64,
    /// Counted lookups that did not.
    pub misses: u64,
    /// Inserts that displaced another flow's entry.
    pub evictions: u64,
    /// Entries written (by `insert` or by a miss in `get_or_insert_with`).
    pub inserts: u64,
}

impl CacheStats {
    /// Hits over counted lookups (0 when there were none).
    pub fn hit_rate(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

#[derive(Clone, Debug)]
struct Slot<V> {
    fid: FlowId,
    value: V,
}

/// A direct-mapped cache of `2^k` slots indexed by the low bits of a [`SourceHash`].
#[derive(Clone, Debug)]
pub struct FlowCache<V> {
    slots: Vec<Option<Slot<V>>>,
    mask: u32,
    len: usize,
    stats: CacheStats,
}

impl<V> FlowCache<V> {
    /// An empty cache of `2^log2` slots (`log2` at most [`MAX_LOG2`]).
    pub fn new(log2: u8) -> Result<Self, CacheError> {
        if log2 > MAX_LOG2 {
            return Err(CacheError::TooLarge(log2));
        }
        let n = 1usize << log2;
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, || None);
        Ok(FlowCache {
            slots,
            mask: (1u32 << log2) - 1,
            len: 0,
            stats: CacheStats::default(),
        })
    }

    #[inline(always)]
    fn slot_of(&self, hash: SourceHash) -> usize {
        // The mask is below 2^24, so the index fits every usize we build for.
        (hash.get() & self.mask) as usize
    }

    /// The value cached for `fid`, if its slot holds that exact flow. Counts nothing.
    #[inline]
    pub fn get(&self, hash: SourceHash, fid: &FlowId) -> Option<&V> {
        match self.slots.get(self.slot_of(hash)) {
            Some(Some(slot)) if slot.fid == *fid => Some(&slot.value),
            _ => None,
        }
    }

    /// Like [`get`](Self::get), counting a hit or a miss.
    #[inline]
    pub fn lookup(&mut self, hash: SourceHash, fid: &FlowId) -> Option<&V> {
        let i = self.slot_of(hash);
        match self.slots.get(i) {
            Some(Some(slot)) if slot.fid == *fid => {
                self.stats.hits += 1;
                Some(&slot.value)
            }
            _ => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Installs `value` for `fid` in the slot `hash` selects. Returns the entry it
    /// replaced — another flow's (an eviction) or this flow's older value.
    pub fn insert(&mut self, hash: SourceHash, fid: FlowId, value: V) -> Option<(FlowId, V)> {
        let i = self.slot_of(hash);
        let slot = self.slots.get_mut(i)?;
        let old = slot.replace(Slot { fid, value });
        self.stats.inserts += 1;
        match old {
            None => {
                self.len += 1;
                None
            }
            Some(old) => {
                if old.fid != fid {
                    self.stats.evictions += 1;
                }
                Some((old.fid, old.value))
            }
        }
    }

    /// The cached value for `fid`, or runs `slow_path` on a miss and installs its result
    /// (evicting the slot's previous flow). Counts the hit or miss.
    pub fn get_or_insert_with(
        &mut self,
        hash: SourceHash,
        fid: &FlowId,
        slow_path: impl FnOnce(&FlowId) -> V,
    ) -> (&V, Lookup) {
        let i = self.slot_of(hash);
        // `i` is masked to the table size (a power of two, at least 1): in bounds.
        let slot = &mut self.slots[i];
        let hit = matches!(slot, Some(s) if s.fid == *fid);
        if hit {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
            self.stats.inserts += 1;
            match slot.take() {
                None => self.len += 1,
                Some(_) => self.stats.evictions += 1,
            }
        }
        // On a hit the slot is occupied and the closure is not called; on a miss it was
        // just emptied, so the slow path runs once and its result is installed.
        let s = slot.get_or_insert_with(|| Slot {
            fid: *fid,
            value: slow_path(fid),
        });
        (&s.value, if hit { Lookup::Hit } else { Lookup::Miss })
    }

    /// Removes `fid`'s entry if its slot holds that flow; returns the value.
    pub fn remove(&mut self, hash: SourceHash, fid: &FlowId) -> Option<V> {
        let i = self.slot_of(hash);
        let slot = self.slots.get_mut(i)?;
        if matches!(slot, Some(s) if s.fid == *fid) {
            self.len -= 1;
            slot.take().map(|s| s.value)
        } else {
            None
        }
    }

    /// Empties every slot (the counters are kept).
    pub fn clear(&mut self) {
        for s in &mut self.slots {
            *s = None;
        }
        self.len = 0;
    }

    /// Occupied slots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no slot is occupied.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of slots, `2^log2`.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The hit, miss, eviction and insert counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Zeroes the counters.
    pub fn reset_stats(&mut self) {
        self.stats = CacheStats::default();
    }

    /// The flow id occupying the slot `hash` selects, if any (for diagnostics and tests).
    pub fn occupant(&self, hash: SourceHash) -> Option<&FlowId> {
        match self.slots.get(self.slot_of(hash)) {
            Some(Some(s)) => Some(&s.fid),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::string::ToString;

    fn fid(b: &[u8]) -> FlowId {
        FlowId::new(b).unwrap()
    }

    #[test]
    fn hit_requires_matching_flow_id() {
        let mut c = FlowCache::new(4).unwrap();
        let h = SourceHash::new(0x1235);
        assert_eq!(c.insert(h, fid(b"a"), 1), None);
        assert_eq!(c.get(h, &fid(b"a")), Some(&1));
        // Same slot (low 4 bits 5), other flow: no answer.
        assert_eq!(c.get(SourceHash::new(0x5), &fid(b"b")), None);
        assert_eq!(c.get(SourceHash::new(0x5), &fid(b"a")), Some(&1));
        assert_eq!(c.len(), 1);
        assert_eq!(c.capacity(), 16);
    }

    #[test]
    fn miss_runs_slow_path_and_evicts() {
        let mut c = FlowCache::new(2).unwrap();
        let h = SourceHash::new(7);
        let mut calls = 0;
        let (v, l) = c.get_or_insert_with(h, &fid(b"x"), |_| {
            calls += 1;
            10
        });
        assert_eq!((*v, l), (10, Lookup::Miss));
        let (v, l) = c.get_or_insert_with(h, &fid(b"x"), |_| 99);
        assert_eq!((*v, l), (10, Lookup::Hit));
        let (v, l) = c.get_or_insert_with(h, &fid(b"y"), |_| 20);
        assert_eq!((*v, l), (20, Lookup::Miss));
        assert_eq!(calls, 1);
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.evictions, s.inserts), (1, 2, 1, 2));
        assert!((s.hit_rate() - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(c.len(), 1);
        assert_eq!(c.get(h, &fid(b"x")), None);
    }

    #[test]
    fn insert_returns_evicted_and_remove_clear() {
        let mut c = FlowCache::new(0).unwrap();
        assert_eq!(c.insert(SourceHash::new(1), fid(b"a"), 1), None);
        assert_eq!(
            c.insert(SourceHash::new(2), fid(b"b"), 2),
            Some((fid(b"a"), 1))
        );
        assert_eq!(c.stats().evictions, 1);
        assert_eq!(c.remove(SourceHash::new(0), &fid(b"a")), None);
        assert_eq!(c.occupant(SourceHash::new(0)), Some(&fid(b"b")));
        assert_eq!(c.remove(SourceHash::new(0), &fid(b"b")), Some(2));
        assert!(c.is_empty());
        c.insert(SourceHash::new(0), fid(b"c"), 3);
        c.clear();
        assert!(c.is_empty());
        assert_eq!(c.get(SourceHash::new(0), &fid(b"c")), None);
    }

    #[test]
    fn lookup_counts() {
        let mut c = FlowCache::new(3).unwrap();
        c.insert(SourceHash::new(1), fid(b"a"), ());
        assert!(c.lookup(SourceHash::new(1), &fid(b"a")).is_some());
        assert!(c.lookup(SourceHash::new(1), &fid(b"b")).is_none());
        assert_eq!((c.stats().hits, c.stats().misses), (1, 1));
        c.reset_stats();
        assert_eq!(c.stats(), CacheStats::default());
    }

    #[test]
    fn too_large_is_an_error() {
        assert_eq!(
            FlowCache::<u8>::new(MAX_LOG2 + 1).unwrap_err(),
            CacheError::TooLarge(25)
        );
        assert!(CacheError::TooLarge(25).to_string().contains("2^25"));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u32, u8, u32),
        Get(u32, u8),
        GetOrInsert(u32, u8, u32),
        Remove(u32, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few flow ids and arbitrary hashes: the same flow under many hashes, many flows
        // under one hash, and hashes chosen to collide all happen.
        let h = prop_oneof![Just(0u32), Just(5), any::<u32>()];
        let f = 0u8..6;
        prop_oneof![
            (h.clone(), f.clone(), any::<u32>()).prop_map(|(h, f, v)| Op::Insert(h, f, v)),
            (h.clone(), f.clone()).prop_map(|(h, f)| Op::Get(h, f)),
            (h.clone(), f.clone(), any::<u32>()).prop_map(|(h, f, v)| Op::GetOrInsert(h, f, v)),
            (h, f).prop_map(|(h, f)| Op::Remove(h, f)),
        ]
    }

    proptest! {
        /// The cache never answers for another flow. Each value carries the flow id it
        /// was computed for; every answer must carry the asking flow's id, and must be the
        /// value last written for that flow *in that slot* (a flow that changed its source
        /// hash may still find its own older value in the old slot — never anyone else's).
        #[test]
        fn never_answers_for_another_flow(log2 in 0u8..4, ops in proptest::collection::vec(op(), 1..200)) {
            let mut c: FlowCache<(FlowId, u32)> = FlowCache::new(log2).unwrap();
            let mask = (1u32 << log2) - 1;
            let mut last: HashMap<(u32, FlowId), u32> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(h, f, v) => {
                        let id = FlowId::new(&[f]).unwrap();
                        c.insert(SourceHash::new(h), id, (id, v));
                        last.insert((h & mask, id), v);
                    }
                    Op::Get(h, f) => {
                        let id = FlowId::new(&[f]).unwrap();
                        if let Some(&(owner, v)) = c.get(SourceHash::new(h), &id) {
                            prop_assert_eq!(owner, id);
                            prop_assert_eq!(Some(&v), last.get(&(h & mask, id)));
                        }
                    }
                    Op::GetOrInsert(h, f, v) => {
                        let id = FlowId::new(&[f]).unwrap();
                        let (&(owner, got), l) =
                            c.get_or_insert_with(SourceHash::new(h), &id, |x| (*x, v));
                        prop_assert_eq!(owner, id);
                        match l {
                            Lookup::Hit => prop_assert_eq!(Some(&got), last.get(&(h & mask, id))),
                            Lookup::Miss => {
                                prop_assert_eq!(got, v);
                                last.insert((h & mask, id), v);
                            }
                        }
                    }
                    Op::Remove(h, f) => {
                        let id = FlowId::new(&[f]).unwrap();
                        if let Some((owner, v)) = c.remove(SourceHash::new(h), &id) {
                            prop_assert_eq!(owner, id);
                            prop_assert_eq!(Some(&v), last.get(&(h & mask, id)));
                        }
                    }
                }
                prop_assert!(c.len() <= c.capacity());
            }
        }
    }

    proptest! {
        /// With the paper's one rule kept — a flow uses the same index on every packet —
        /// every answer is exactly the value last inserted for that flow id, for arbitrary
        /// flow ids (any length, any bytes) and arbitrary, colliding indices.
        #[test]
        fn consistent_indices_answer_the_last_value(
            log2 in 0u8..5,
            flows in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 1..=16), any::<u32>()), 1..12),
            ops in proptest::collection::vec((any::<prop::sample::Index>(), any::<bool>(), any::<u16>()), 1..300),
        ) {
            // One index per flow id (a repeated id keeps its first index).
            let mut seen = std::collections::HashSet::new();
            let flows: Vec<(FlowId, SourceHash)> = flows
                .iter()
                .map(|(b, h)| (FlowId::new(b).unwrap(), SourceHash::new(*h)))
                .filter(|(f, _)| seen.insert(*f))
                .collect();
            let mut c = FlowCache::new(log2).unwrap();
            let mut last: HashMap<FlowId, u16> = HashMap::new();
            for (which, write, v) in ops {
                let (fid, h) = flows[which.index(flows.len())];
                if write {
                    c.insert(h, fid, v);
                    last.insert(fid, v);
                } else if let Some(got) = c.get(h, &fid) {
                    prop_assert_eq!(Some(got), last.get(&fid));
                }
            }
        }
    }
}
