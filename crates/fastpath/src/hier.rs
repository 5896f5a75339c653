//! Threaded indices and source hashing across a hierarchy (§4.1).
//!
//! Threaded indices stop working at area boundaries: a level-1 router would need an index
//! for every area. The paper's combination: inside the area packets carry **threaded**
//! labels; a packet for a destination outside the area carries a **random** (source-hash)
//! index chosen by its source, marked by the label's `R` bit ([`crate::threaded::Label`]).
//! A router receiving a random label looks the destination up in a **destination cache**
//! — a [`FlowCache`] indexed by the label's index and keyed by the destination address —
//! and only on a miss does the conventional longest-prefix-match lookup, whose answer it
//! caches. The random label travels unchanged (hop limit aside), so every router on the
//! way indexes its own cache with the same random bits.
//!
//! ```text
//!   label R=0 ──► ThreadedTable[index] ───────────────► iface, label ← next index
//!   label R=1 ──► FlowCache[index] (flow id = dst) ─hit─► iface, label unchanged
//!                        │ miss
//!                        └──► LPM (slow path) ─► install ─► iface
//! ```
//!
//! A lying source (non-random or colliding indices) only makes *its own* lookups miss: the
//! cache answers only for the exact destination address it stored (see the tests).
//!
//! ```
//! use fastpath::hier::{AreaForwarder, HierForward};
//! use fastpath::lpm::{LpmTable, Prefix};
//! use fastpath::threaded::{Label, ThreadedTable};
//!
//! let mut lpm = LpmTable::new();
//! lpm.insert(Prefix::new([10, 0, 0, 0], 8).unwrap(), 3u16);
//! let mut fwd = AreaForwarder::new(8).unwrap();
//! let table = ThreadedTable::new();
//! let label = Label::random(0xbeef, 32);
//! let first = fwd.forward(&table, &lpm, label, [10, 1, 2, 3]).unwrap();
//! let again = fwd.forward(&table, &lpm, label, [10, 1, 2, 3]).unwrap();
//! assert!(matches!(first, HierForward::Cached { iface: 3, hit: false, .. }));
//! assert!(matches!(again, HierForward::Cached { iface: 3, hit: true, .. }));
//! ```

use core::fmt;

use crate::cache::{CacheError, CacheStats, FlowCache, Lookup};
use crate::flow::{FlowId, SourceHash};
use crate::lpm::LpmTable;
use crate::threaded::{Forward, ForwardError, Label, LabelKind, MAX_HOP_LIMIT, ThreadedTable};

/// The conventional lookup behind the destination cache.
pub trait SlowPath {
    /// The outgoing interface for `dst`, if any route covers it.
    fn route(&self, dst: [u8; 4]) -> Option<u16>;
}

impl SlowPath for LpmTable<u16> {
    fn route(&self, dst: [u8; 4]) -> Option<u16> {
        self.lookup(dst).map(|(_, &iface)| iface)
    }
}

/// What to do with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HierForward {
    /// A threaded label inside the area.
    Threaded(Forward),
    /// A random label: send out of `iface` with `out_label` (the same index).
    Cached {
        /// Outgoing interface.
        iface: u16,
        /// The label with its hop limit decremented.
        out_label: Label,
        /// Whether the destination cache answered (false: the slow path ran).
        hit: bool,
    },
}

/// Why a packet could not be forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HierError {
    /// The threaded table refused the label.
    Threaded(ForwardError),
    /// No route covers the destination.
    NoRoute,
    /// The hop limit is exhausted.
    HopLimitExceeded,
}

impl fmt::Display for HierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Threaded(e) => write!(f, "threaded forwarding: {e}"),
            Self::NoRoute => write!(f, "no route to the destination"),
            Self::HopLimitExceeded => write!(f, "hop limit exhausted"),
        }
    }
}

impl core::error::Error for HierError {}

/// A router's forwarding path for both label kinds: its threaded table for the area,
/// its destination cache for everything else.
#[derive(Clone, Debug)]
pub struct AreaForwarder {
    cache: FlowCache<Option<u16>>,
}

impl AreaForwarder {
    /// A forwarder with a destination cache of `2^cache_log2` slots.
    ///
    /// # Errors
    ///
    /// If the cache would be larger than the cache allows.
    pub fn new(cache_log2: u8) -> Result<Self, CacheError> {
        Ok(Self {
            cache: FlowCache::new(cache_log2)?,
        })
    }

    /// Forwards a packet carrying `label` for destination address `dst`.
    ///
    /// # Errors
    ///
    /// See [`HierError`].
    pub fn forward(
        &mut self,
        table: &ThreadedTable,
        slow: &impl SlowPath,
        label: Label,
        dst: [u8; 4],
    ) -> Result<HierForward, HierError> {
        match label.kind {
            LabelKind::Threaded => table
                .forward(label)
                .map(HierForward::Threaded)
                .map_err(HierError::Threaded),
            LabelKind::Random => {
                let hop_limit = label
                    .hop_limit
                    .checked_sub(1)
                    .ok_or(HierError::HopLimitExceeded)?;
                // Four bytes always make a valid flow id.
                let fid = FlowId::new(&dst).map_err(|_| HierError::NoRoute)?;
                let (route, lookup) =
                    self.cache
                        .get_or_insert_with(SourceHash::new(label.index), &fid, |_| {
                            slow.route(dst)
                        });
                let iface = (*route).ok_or(HierError::NoRoute)?;
                Ok(HierForward::Cached {
                    iface,
                    out_label: Label::random(label.index, hop_limit),
                    hit: lookup == Lookup::Hit,
                })
            }
        }
    }

    /// Forgets every cached destination: call after the slow path's routes change (or
    /// periodically, the paper's "can be timed out").
    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }

    /// Destination-cache counters.
    pub fn stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

/// The source's choice (§4.1): a threaded label when the first router gave it an index
/// for the destination (inside the area), else a random label with the flow's source hash.
pub fn source_label(threaded_index: Option<u32>, hash: SourceHash) -> Label {
    match threaded_index {
        Some(i) => Label::threaded(i, MAX_HOP_LIMIT),
        None => Label::random(hash.get(), MAX_HOP_LIMIT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lpm::Prefix;
    use crate::threaded::{Entry, NextHop};

    fn lpm() -> LpmTable<u16> {
        let mut t = LpmTable::new();
        t.insert(Prefix::new([10, 0, 0, 0], 8).unwrap(), 1);
        t.insert(Prefix::new([10, 9, 0, 0], 16).unwrap(), 2);
        t
    }

    fn table() -> ThreadedTable {
        let mut t = ThreadedTable::new();
        t.set(
            5,
            Entry {
                next_hop: NextHop::Neighbour(4),
                next_index: 6,
            },
        )
        .unwrap();
        t
    }

    #[test]
    fn threaded_inside_random_outside() {
        let mut f = AreaForwarder::new(4).unwrap();
        let (t, l) = (table(), lpm());
        let inside = f
            .forward(&t, &l, source_label(Some(5), SourceHash::new(1)), [0; 4])
            .unwrap();
        assert_eq!(
            inside,
            HierForward::Threaded(Forward::Send {
                iface: 4,
                out_label: Label::threaded(6, MAX_HOP_LIMIT - 1)
            })
        );
        let out = source_label(None, SourceHash::new(0x1234));
        assert_eq!(out.kind, LabelKind::Random);
        let first = f.forward(&t, &l, out, [10, 9, 1, 1]).unwrap();
        assert_eq!(
            first,
            HierForward::Cached {
                iface: 2,
                out_label: Label::random(0x1234, MAX_HOP_LIMIT - 1),
                hit: false
            }
        );
        let second = f.forward(&t, &l, out, [10, 9, 1, 1]).unwrap();
        assert!(matches!(
            second,
            HierForward::Cached {
                iface: 2,
                hit: true,
                ..
            }
        ));
        assert_eq!(f.stats().hits, 1);
    }

    #[test]
    fn colliding_indices_never_answer_for_another_destination() {
        let mut f = AreaForwarder::new(4).unwrap();
        let (t, l) = (table(), lpm());
        // A lying source uses the same index for every destination.
        let liar = Label::random(7, 10);
        for _ in 0..3 {
            for (dst, want) in [([10, 9, 0, 1], 2), ([10, 1, 0, 1], 1)] {
                match f.forward(&t, &l, liar, dst).unwrap() {
                    HierForward::Cached { iface, hit, .. } => {
                        assert_eq!(iface, want);
                        assert!(!hit, "alternating destinations evict each other");
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        // An honest flow on another slot still hits.
        let honest = Label::random(8, 10);
        f.forward(&t, &l, honest, [10, 2, 0, 1]).unwrap();
        assert!(matches!(
            f.forward(&t, &l, honest, [10, 2, 0, 1]).unwrap(),
            HierForward::Cached { hit: true, .. }
        ));
    }

    #[test]
    fn errors() {
        let mut f = AreaForwarder::new(4).unwrap();
        let (t, l) = (table(), lpm());
        assert_eq!(
            f.forward(&t, &l, Label::random(1, 5), [192, 168, 0, 1]),
            Err(HierError::NoRoute)
        );
        assert_eq!(
            f.forward(&t, &l, Label::random(1, 0), [10, 0, 0, 1]),
            Err(HierError::HopLimitExceeded)
        );
        assert_eq!(
            f.forward(&t, &l, Label::threaded(9, 5), [10, 0, 0, 1]),
            Err(HierError::Threaded(ForwardError::IndexOutOfRange))
        );
        f.forward(&t, &l, Label::random(2, 5), [10, 0, 0, 1])
            .unwrap();
        f.clear_cache();
        assert!(matches!(
            f.forward(&t, &l, Label::random(2, 5), [10, 0, 0, 1])
                .unwrap(),
            HierForward::Cached { hit: false, .. }
        ));
    }
}
