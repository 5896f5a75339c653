//! The socket cache (§5.1, Fig. 13): optional soft state that lets a request presenting a
//! continuation this server issued skip the continuation's MAC verification.
//!
//! The paper's server keeps minisockets of busy connections in a hash table; "a cache hit
//! will obviate the need to reconstruct the server-side state or to validate the MAC". Here
//! the server-side state of a request *is* its transport continuation, so an entry holds
//! one continuation the server MACed in `respond`: its exact 54 bytes, the four-tuple the
//! MAC bound it to, and the identity of the key it was MACed under. A request whose
//! continuation bytes and four-tuple equal an entry's, while that key is still the live key
//! of the continuation's epoch, is known to carry a valid tag without computing one.
//!
//! ```text
//!  respond: new continuation ─ CMAC ─► insert (set = tag bits, way = round robin)
//!  request: continuation ─► set of its tag ─► 4 ways: key id, tuple, 38 bytes, tag (ct)
//!                                               │ hit: skip the CMAC   │ miss: CMAC
//!                                               ▼                      ▼
//!                                  freshness, site, SACK proof, Bloom, plan (unchanged)
//! ```
//!
//! Only the MAC is skipped: freshness, site, the SACK proof and the replay filter run on
//! every request, so a replayed continuation is refused whether it hits or not. Decoding
//! the continuation happens in [`Request::parse`](crate::wire::Request::parse) for every
//! request (it is a few field loads; the CMAC is what costs).
//!
//! Capacity is fixed at construction: sets of [`WAYS`] entries indexed by the low bits of
//! the tag, each set headed by a half cache line of 32-bit check words (more tag bits) so
//! that a lookup reads one entry (two cache lines) only when its check word matches (a CMAC output, so uniform for the continuations the server issues; a forger
//! can aim a lookup at a set but cannot insert anything). Inserting into a full set
//! overwrites its oldest entry. Nothing is allocated per request, and any entry may vanish
//! at any time ([`Server::clear_cache`](super::Server::clear_cache), eviction, rotation)
//! without changing a reply: a miss only costs the CMAC a cache-less server computes.

use alloc::vec::Vec;

use crate::conn::{Addr, FourTuple};
use crate::continuation::{CONTINUATION_LEN, MAC_FIELDS_LEN};
use crate::crypto::{Tag, ct_eq};

/// Entries per set.
pub const WAYS: usize = 4;

/// How often the cache answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests whose continuation was found (and whose MAC was not computed).
    pub hits: u64,
    /// Requests with a continuation that was not found (and was MAC-verified). A disabled
    /// cache counts nothing.
    pub misses: u64,
}

impl CacheStats {
    /// Hits over lookups (0 before any lookup).
    pub fn hit_rate(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0 {
            0.0
        } else {
            self.hits as f64 / lookups as f64
        }
    }
}

/// One verified continuation, two cache lines.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Entry {
    /// The connection the tag is bound to.
    tuple: FourTuple,
    /// The continuation as it went out: 38 MACed bytes, then the tag.
    bytes: [u8; CONTINUATION_LEN],
    /// [`ServerKeys::key_id`](crate::crypto::ServerKeys::key_id) of its epoch when issued.
    key_id: u64,
}

/// What an empty way holds (never compared: the set's `occupied` bit is clear).
const EMPTY: Entry = Entry {
    tuple: FourTuple {
        client_addr: Addr::V4([0; 4]),
        client_port: 0,
        server_addr: Addr::V4([0; 4]),
        server_port: 0,
    },
    bytes: [0; CONTINUATION_LEN],
    key_id: 0,
};

/// The head of one set, half a cache line: a lookup reads it first and touches an entry
/// only when a way's check word matches.
#[derive(Clone, Copy, Default)]
#[repr(align(32))]
struct Set {
    /// Tag bytes 8..12 of each way's continuation.
    check: [u32; WAYS],
    /// Bit `w`: way `w` holds an entry.
    occupied: u8,
    /// The way overwritten next (the oldest once the set is full).
    next: u8,
}

/// The fixed-capacity, set-associative continuation cache.
pub(crate) struct ContinuationCache {
    /// One head per set; a power of two of them.
    sets: Vec<Set>,
    /// `sets.len() * WAYS` entries; set `s` owns `entries[s * WAYS..(s + 1) * WAYS]`.
    entries: Vec<Entry>,
    /// `sets.len() - 1`.
    set_mask: usize,
    stats: CacheStats,
}

/// The set-index bits (tag bytes 0..8) and the check word (bytes 8..12) of a tag.
fn tag_bits(tag: &[u8]) -> (usize, u32) {
    let mut index = [0u8; 8];
    let mut check = [0u8; 4];
    if let (Some(i), Some(c)) = (tag.get(..8), tag.get(8..12)) {
        index.copy_from_slice(i);
        check.copy_from_slice(c);
    }
    // Truncation on 32-bit targets is fine: only the low bits are used.
    (
        u64::from_le_bytes(index) as usize,
        u32::from_le_bytes(check),
    )
}

impl ContinuationCache {
    /// A cache of at least `entries` entries (rounded up to a power-of-two number of sets
    /// of [`WAYS`]); 0 disables it and allocates nothing.
    pub(crate) fn new(entries: usize) -> ContinuationCache {
        let sets = if entries == 0 {
            0
        } else {
            entries.div_ceil(WAYS).next_power_of_two()
        };
        ContinuationCache {
            sets: alloc::vec![Set::default(); sets],
            entries: alloc::vec![EMPTY; sets * WAYS],
            set_mask: sets.saturating_sub(1),
            stats: CacheStats::default(),
        }
    }

    /// Whether the cache holds anything at all (its capacity is not 0).
    pub(crate) fn is_enabled(&self) -> bool {
        !self.sets.is_empty()
    }

    /// Entries it can hold.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Hits and misses so far.
    pub(crate) fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Heap bytes it occupies.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.sets.len() * core::mem::size_of::<Set>()
            + self.entries.len() * core::mem::size_of::<Entry>()
    }

    /// Drops every entry (the counters stay).
    pub(crate) fn clear(&mut self) {
        self.sets.fill(Set::default());
    }

    /// Whether `bytes` (a whole encoded continuation, tag included) on `tuple` is an entry
    /// issued under the key whose id is `key_id` (`None`: its epoch is not live, a miss).
    /// Counts a hit or a miss when the cache is enabled.
    ///
    /// The tag is compared in constant time; the other bytes are the client's to know.
    /// (Which set is read and whether a 32-bit check word matches depend on the tag, but
    /// only as whole words: a timing probe learns at most whether a guessed 32-bit word
    /// is some cached tag's, and the remaining 96 bits are still compared in constant
    /// time.)
    pub(crate) fn lookup(&mut self, tuple: &FourTuple, bytes: &[u8], key_id: Option<u64>) -> bool {
        if !self.is_enabled() {
            return false;
        }
        let hit = match (key_id, bytes.split_at_checked(MAC_FIELDS_LEN)) {
            (Some(id), Some((fields, tag))) => {
                let (index, check) = tag_bits(tag);
                let s = index & self.set_mask;
                let set = self.sets.get(s).copied().unwrap_or_default();
                (0..WAYS).any(|w| {
                    set.occupied & (1 << w) != 0
                        && set.check.get(w) == Some(&check)
                        && self.entries.get(s * WAYS + w).is_some_and(|e| {
                            e.key_id == id
                                && e.tuple == *tuple
                                && e.bytes.get(..MAC_FIELDS_LEN) == Some(fields)
                                && ct_eq(e.bytes.get(MAC_FIELDS_LEN..).unwrap_or_default(), tag)
                        })
                })
            }
            _ => false,
        };
        if hit {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
        }
        hit
    }

    /// Remembers the continuation whose MACed bytes are `fields` and whose tag is `tag`,
    /// issued on `tuple` under the key with id `key_id`, in place of its set's oldest
    /// entry. Does nothing when the cache is disabled.
    pub(crate) fn insert(
        &mut self,
        tuple: &FourTuple,
        fields: &[u8; MAC_FIELDS_LEN],
        tag: &Tag,
        key_id: u64,
    ) {
        let (index, check) = tag_bits(tag);
        let s = index & self.set_mask;
        let Some(set) = self.sets.get_mut(s) else {
            return;
        };
        let way = usize::from(set.next) % WAYS;
        set.next = ((way + 1) % WAYS) as u8;
        set.occupied |= 1 << way;
        if let Some(c) = set.check.get_mut(way) {
            *c = check;
        }
        if let Some(e) = self.entries.get_mut(s * WAYS + way) {
            let (head, tail) = e.bytes.split_at_mut(MAC_FIELDS_LEN);
            head.copy_from_slice(fields);
            tail.copy_from_slice(tag);
            e.tuple = *tuple;
            e.key_id = key_id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(port: u16) -> FourTuple {
        FourTuple {
            client_addr: Addr::V4([10, 0, 0, 1]),
            client_port: port,
            server_addr: Addr::V4([10, 0, 0, 2]),
            server_port: 80,
        }
    }

    fn encoded(fields: &[u8; MAC_FIELDS_LEN], tag: &Tag) -> [u8; CONTINUATION_LEN] {
        let mut b = [0u8; CONTINUATION_LEN];
        b[..MAC_FIELDS_LEN].copy_from_slice(fields);
        b[MAC_FIELDS_LEN..].copy_from_slice(tag);
        b
    }

    #[test]
    fn hits_exactly_what_was_inserted() {
        let mut c = ContinuationCache::new(16);
        assert_eq!(c.capacity(), 16);
        let (f, t) = ([7u8; MAC_FIELDS_LEN], [9u8; 16]);
        c.insert(&tuple(1), &f, &t, 5);
        let b = encoded(&f, &t);
        assert!(c.lookup(&tuple(1), &b, Some(5)));
        // Another tuple, another key id, a dead epoch, any other byte: misses.
        assert!(!c.lookup(&tuple(2), &b, Some(5)));
        assert!(!c.lookup(&tuple(1), &b, Some(6)));
        assert!(!c.lookup(&tuple(1), &b, None));
        for i in 0..CONTINUATION_LEN {
            let mut x = b;
            x[i] ^= 0x10;
            assert!(!c.lookup(&tuple(1), &x, Some(5)), "byte {i}");
        }
        assert!(!c.lookup(&tuple(1), &b[..53], Some(5)));
        assert_eq!(
            c.stats(),
            CacheStats {
                hits: 1,
                misses: 4 + CONTINUATION_LEN as u64
            }
        );
        c.clear();
        assert!(!c.lookup(&tuple(1), &b, Some(5)));
    }

    #[test]
    fn a_full_set_drops_its_oldest_entry() {
        // One set: every tag maps to it.
        let mut c = ContinuationCache::new(WAYS);
        let f = [1u8; MAC_FIELDS_LEN];
        let tags: Vec<Tag> = (0..=WAYS as u8).map(|i| [i; 16]).collect();
        for t in &tags {
            c.insert(&tuple(1), &f, t, 0);
        }
        assert!(!c.lookup(&tuple(1), &encoded(&f, &tags[0]), Some(0)));
        for t in &tags[1..] {
            assert!(c.lookup(&tuple(1), &encoded(&f, t), Some(0)));
        }
    }

    #[test]
    fn disabled_cache_holds_and_counts_nothing() {
        let mut c = ContinuationCache::new(0);
        let (f, t) = ([7u8; MAC_FIELDS_LEN], [9u8; 16]);
        c.insert(&tuple(1), &f, &t, 5);
        assert!(!c.lookup(&tuple(1), &encoded(&f, &t), Some(5)));
        assert_eq!(c.stats(), CacheStats::default());
        assert_eq!(c.memory_bytes(), 0);
        assert_eq!(ContinuationCache::new(5).capacity(), 8);
    }
}
