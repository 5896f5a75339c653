//! Sharding by computation ID (paper §5.2).

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::Instant;
use crate::config::EssConfig;
use crate::hash::{HashKey, reduce};
use crate::store::{Ess, Full};
use crate::{Tag, Value};

/// Maps a computation ID (CID) to a shard index.
///
/// Every packet of one computation carries the same CID, so routing by it sends all of a
/// computation's instructions to the same store, which serialises them; different
/// computations run on different stores, which can live on different cores (§5.2). The
/// router is `Copy` so a dispatcher can hold one while worker threads own the shards.
///
/// ```
/// use ess::{HashKey, ShardRouter};
/// let r = ShardRouter::new(4, HashKey::from_seed(3));
/// let i = r.shard_of(0xC1D);
/// assert!(i < 4);
/// assert_eq!(i, r.shard_of(0xC1D));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardRouter {
    key: HashKey,
    shards: u32,
}

impl ShardRouter {
    /// A router over `shards` shards (at least one) keyed by `key`.
    pub const fn new(shards: u32, key: HashKey) -> Self {
        ShardRouter {
            key,
            shards: if shards == 0 { 1 } else { shards },
        }
    }

    /// The shard for computation `cid`.
    #[inline]
    pub const fn shard_of(&self, cid: u64) -> usize {
        reduce(self.key.hash(cid), self.shards as u64) as usize
    }

    /// How many shards it routes over.
    pub const fn shards(&self) -> usize {
        self.shards as usize
    }
}

/// Several independent stores, one per shard, routed by CID.
///
/// Each shard has the full capacity of the config and its own hash key derived from the
/// config's. Use [`into_shards`](Self::into_shards) to hand each store to its own thread,
/// keeping the [`ShardRouter`] to dispatch.
///
/// ```
/// use ess::{EssConfig, HashKey, Instant, ShardedEss, Tag, Value};
/// let config = EssConfig::new(10, 1_000, 10, HashKey::from_seed(11))?;
/// let mut ess = ShardedEss::new(config, 4);
/// let now = Instant::from_ticks(0);
/// ess.put(now, 7, Tag(1), Value(10))?;
/// assert_eq!(ess.get(now, 7, Tag(1)), Some(Value(10)));
/// let shard = ess.router().shard_of(7);
/// assert_eq!(ess.shards()[shard].get(now, Tag(1)), Some(Value(10)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ShardedEss {
    router: ShardRouter,
    shards: Box<[Ess]>,
}

impl ShardedEss {
    /// `shards` stores (at least one), each built from `config` with its own derived key.
    pub fn new(config: EssConfig, shards: u32) -> Self {
        let router = ShardRouter::new(shards, config.key().derive(0));
        let shards = (0..router.shards() as u64)
            .map(|i| Ess::new(config.with_key(config.key().derive(i + 1))))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        ShardedEss { router, shards }
    }

    /// The CID router.
    pub fn router(&self) -> ShardRouter {
        self.router
    }

    /// All shards, in router order.
    pub fn shards(&self) -> &[Ess] {
        &self.shards
    }

    /// All shards, mutably (for example to split among scoped threads).
    pub fn shards_mut(&mut self) -> &mut [Ess] {
        &mut self.shards
    }

    /// The shards, to move to their own threads.
    pub fn into_shards(self) -> (ShardRouter, Box<[Ess]>) {
        (self.router, self.shards)
    }

    /// The store that computation `cid` uses.
    pub fn shard(&self, cid: u64) -> &Ess {
        // `shard_of` is always below the number of shards.
        &self.shards[self.router.shard_of(cid)]
    }

    /// The store that computation `cid` uses, mutably.
    pub fn shard_mut(&mut self, cid: u64) -> &mut Ess {
        &mut self.shards[self.router.shard_of(cid)]
    }

    /// `get` in computation `cid`'s store.
    pub fn get(&self, now: Instant, cid: u64, tag: Tag) -> Option<Value> {
        self.shard(cid).get(now, tag)
    }

    /// `put` in computation `cid`'s store.
    ///
    /// # Errors
    ///
    /// [`Full`] if that shard is full of live bindings.
    pub fn put(&mut self, now: Instant, cid: u64, tag: Tag, value: Value) -> Result<(), Full> {
        self.shard_mut(cid).put(now, tag, value)
    }

    /// Runs every shard's bounded cleaner; returns the entries reclaimed.
    pub fn clean(&mut self, now: Instant, budget_per_shard: usize) -> usize {
        self.shards
            .iter_mut()
            .map(|s| s.clean(now, budget_per_shard))
            .sum()
    }

    /// Bytes used by all shards.
    pub fn memory_bytes(&self) -> usize {
        self.shards.iter().map(Ess::memory_bytes).sum::<usize>() + core::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computations_stay_on_one_shard_and_spread_over_all() {
        let config = EssConfig::new(8, 100, 1, HashKey::from_seed(4)).unwrap();
        let mut ess = ShardedEss::new(config, 4);
        let now = Instant::from_ticks(0);
        let mut per_shard = [0usize; 4];
        for cid in 0..400u64 {
            ess.put(now, cid, Tag(cid), Value(cid)).unwrap();
            per_shard[ess.router().shard_of(cid)] += 1;
        }
        for cid in 0..400u64 {
            assert_eq!(ess.get(now, cid, Tag(cid)), Some(Value(cid)));
            let home = ess.router().shard_of(cid);
            for (i, shard) in ess.shards().iter().enumerate() {
                assert_eq!(shard.get(now, Tag(cid)).is_some(), i == home);
            }
        }
        assert!(per_shard.iter().all(|&n| n > 60), "{per_shard:?}");
        assert_eq!(ShardRouter::new(0, HashKey::from_seed(0)).shards(), 1);
    }
}
