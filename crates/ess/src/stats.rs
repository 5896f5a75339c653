//! Chain-length statistics: how evenly tags spread over the hash table.

use crate::Instant;
use crate::store::Ess;
use crate::tables::Tables;

/// Longest chain length counted separately in [`ChainStats::histogram`]; longer chains
/// are counted in the last bucket.
pub const HISTOGRAM_LEN: usize = 16;

/// A snapshot of the hash chains as `find` sees them at one instant.
///
/// ```
/// # #[cfg(feature = "alloc")] { // `Ess::new` needs the heap
/// use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};
/// let mut ess = Ess::new(EssConfig::new(10, 100, 1, HashKey::from_seed(5))?);
/// let now = Instant::from_ticks(0);
/// for tag in 0..512 {
///     ess.put(now, Tag(tag), Value(tag))?;
/// }
/// let stats = ess.chain_stats(now);
/// assert_eq!(stats.visible, 512);
/// assert!(stats.max_chain <= 8);
/// assert!(stats.mean_hit_probes() < 1.2); // load 0.25: about 1 + 0.25 / 2
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChainStats {
    /// Hash-table slots.
    pub slots: u64,
    /// Slots whose chain holds at least one visible binding.
    pub used_slots: u64,
    /// Visible (unexpired) bindings.
    pub visible: u64,
    /// Longest chain of visible bindings.
    pub max_chain: u32,
    /// `histogram[k]`: slots with exactly k visible bindings (the last counts k ≥ 15).
    pub histogram: [u64; HISTOGRAM_LEN],
    /// Entries a successful `find` examines, summed over every visible binding.
    pub hit_probes: u64,
    /// Entries an unsuccessful `find` examines, summed over every slot.
    pub miss_probes: u64,
}

impl ChainStats {
    /// Mean entries examined by a `find` that hits, over all visible bindings.
    pub fn mean_hit_probes(&self) -> f64 {
        if self.visible == 0 {
            0.0
        } else {
            self.hit_probes as f64 / self.visible as f64
        }
    }

    /// Mean entries examined by a `find` that misses, over all slots (uniform tags).
    pub fn mean_miss_probes(&self) -> f64 {
        if self.slots == 0 {
            0.0
        } else {
            self.miss_probes as f64 / self.slots as f64
        }
    }

    /// Visible bindings per hash slot (the load factor α = fill / h).
    pub fn load(&self) -> f64 {
        if self.slots == 0 {
            0.0
        } else {
            self.visible as f64 / self.slots as f64
        }
    }
}

impl<T: Tables> Ess<T> {
    /// Walks every chain (O(capacity); not for the fast path) and reports its lengths.
    pub fn chain_stats(&self, now: Instant) -> ChainStats {
        let mut s = ChainStats::default();
        self.for_each_chain(now, |_, visible, stale| {
            let v = u64::from(visible);
            s.slots += 1;
            s.visible += v;
            if visible > 0 {
                s.used_slots += 1;
            }
            s.max_chain = s.max_chain.max(visible);
            let k = (visible as usize).min(HISTOGRAM_LEN - 1);
            if let Some(h) = s.histogram.get_mut(k) {
                *h += 1;
            }
            // The k-th binding on a chain is found after k entries.
            s.hit_probes += v * (v + 1) / 2;
            s.miss_probes += v + u64::from(stale);
        });
        s
    }
}
