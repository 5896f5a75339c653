//! Shared by the criterion bench (`benches/ess.rs`) and the callgrind example
//! (`examples/churn.rs`): the seeded PRNG, tag numbering, and the hand-rolled baseline store
//! a user would write instead of the ESS (a `hashbrown` map plus a FIFO of expiries).

pub(crate) mod fixtures;
pub(crate) mod huge;

use std::collections::VecDeque;

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
const TAG_SEED: u64 = 0x7a67_5eed_0e55_0001;

/// Tag numbers from here on are never created by a fill: looking them up always misses.
pub(crate) const MISS_BASE: u64 = 1 << 62;

/// The splitmix64 finalizer: a bijection on `u64` that scrambles every bit.
#[inline(always)]
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `i`-th tag of a run. `mix` is a bijection, so distinct numbers give distinct tags,
/// and a fill of tags `0..n` can be probed at random without storing the tags.
#[inline(always)]
pub(crate) fn tag_of(i: u64) -> u64 {
    mix(i ^ TAG_SEED)
}

/// splitmix64: a tiny, fast, seeded PRNG (no `rand` dependency).
#[derive(Clone, Debug)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    #[inline(always)]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// Uniform in `0..n` (multiply-shift, no division).
    #[inline(always)]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
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
