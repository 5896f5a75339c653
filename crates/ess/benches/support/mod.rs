//! Shared by the criterion bench (`benches/ess.rs`) and the callgrind example
//! (`examples/churn.rs`): tag numbering and the hand-rolled baseline store a user would write
//! instead of the ESS (a `hashbrown` map plus a FIFO of expiries). The seeded generator is
//! `sansio::SplitMix64`.

pub(crate) mod fixtures;
pub(crate) mod huge;

use std::collections::VecDeque;

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;
use sansio::mix64;

const TAG_SEED: u64 = 0x7a67_5eed_0e55_0001;

/// Tag numbers from here on are never created by a fill: looking them up always misses.
pub(crate) const MISS_BASE: u64 = 1 << 62;

/// The `i`-th tag of a run. `mix64` is a bijection, so distinct numbers give distinct tags,
/// and a fill of tags `0..n` can be probed at random without storing the tags.
#[inline(always)]
pub(crate) fn tag_of(i: u64) -> u64 {
    mix64(i ^ TAG_SEED)
}

/// The obvious hand-rolled ephemeral store: `hashbrown::HashMap<tag, (value, expiry)>` with
/// its default hasher (foldhash), pre-sized to `capacity`, plus a `VecDeque<(tag, expiry)>`
/// in creation order, which with a fixed lifetime is also expiry order. Creations pop the
/// expired front and remove it from the map; lookups check the expiry too, so a binding is
/// visible exactly while `now < created + lifetime`, as in the ESS.
#[derive(Debug)]
pub(crate) struct FifoStore {
    map: HashMap<u64, (u64, u64)>,
    fifo: VecDeque<(u64, u64)>,
    capacity: usize,
    lifetime: u64,
}

impl FifoStore {
    /// An empty store for `capacity` bindings living `lifetime` ticks.
    pub(crate) fn new(capacity: usize, lifetime: u64) -> Self {
        FifoStore {
            map: HashMap::with_capacity(capacity),
            fifo: VecDeque::with_capacity(capacity),
            capacity,
            lifetime,
        }
    }

    /// The live value of `tag` at `now`.
    #[inline]
    pub(crate) fn get(&self, now: u64, tag: u64) -> Option<&u64> {
        self.map.get(&tag).filter(|e| e.1 > now).map(|e| &e.0)
    }

    /// The live value of `tag` at `now`, writable.
    #[inline]
    pub(crate) fn get_mut(&mut self, now: u64, tag: u64) -> Option<&mut u64> {
        self.map
            .get_mut(&tag)
            .filter(|e| e.1 > now)
            .map(|e| &mut e.0)
    }

    /// Pops every expired binding off the front of the FIFO and removes it from the map.
    #[inline]
    pub(crate) fn expire(&mut self, now: u64) {
        while let Some(&(tag, expiry)) = self.fifo.front() {
            if expiry > now {
                break;
            }
            self.fifo.pop_front();
            if let Entry::Occupied(e) = self.map.entry(tag) {
                // A tag re-created after expiring has a newer FIFO record: keep it.
                if e.get().1 == expiry {
                    e.remove();
                }
            }
        }
    }

    /// The ESS's `find_create`: the live value of `tag`, or a new binding holding 0, and
    /// whether it is new. `None` if the store is full of live bindings.
    #[inline]
    pub(crate) fn find_create(&mut self, now: u64, tag: u64) -> Option<(&mut u64, bool)> {
        self.expire(now);
        let full = self.fifo.len() >= self.capacity;
        let expiry = now + self.lifetime;
        match self.map.entry(tag) {
            Entry::Occupied(e) => {
                let slot = e.into_mut();
                if slot.1 > now {
                    Some((&mut slot.0, false))
                } else if full {
                    None
                } else {
                    *slot = (0, expiry);
                    self.fifo.push_back((tag, expiry));
                    Some((&mut slot.0, true))
                }
            }
            Entry::Vacant(e) => {
                if full {
                    return None;
                }
                self.fifo.push_back((tag, expiry));
                Some((&mut e.insert((0, expiry)).0, true))
            }
        }
    }

    /// Bindings in the map (live or expired but not yet popped).
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The address of one binding in the map's table (to find its mapping in
    /// `/proc/self/smaps`), if it holds any.
    pub(crate) fn table_addr(&self) -> Option<usize> {
        self.map
            .values()
            .next()
            .map(|v| std::ptr::from_ref(v).addr())
    }

    /// Heap bytes held by the map and the FIFO.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.map.allocation_size() + self.fifo.capacity() * size_of::<(u64, u64)>()
    }
}
