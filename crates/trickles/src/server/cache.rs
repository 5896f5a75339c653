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
//!  request: continuation ─► set of its tag ─► 4 ways: key id, tag word, tuple, 38 bytes,
//!                                               tag (constant time)
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
//! the tag (a CMAC output, so uniform for the continuations the server issues; a forger
//! can aim a lookup at a set but cannot insert anything). An entry's first cache line holds
//! its key id, tag and tuple, so the four ways of a set are read in parallel and only a
//! matching way's second line is needed. (A design with a separate half-line head of 32-bit
//! check words per set, read before the entries, had the same instruction and L1-miss
//! counts and no measurable difference in time on our noisy machine; this one is simpler.)
//! Inserting into a full set overwrites its oldest entry. Nothing is allocated per
//! request, and any entry may vanish at any time
//! ([`Server::clear_cache`](super::Server::clear_cache), eviction, rotation) without
//! changing a reply: a miss only costs the CMAC a cache-less server computes.

use alloc::vec::Vec;

use crate::conn::{Addr, FourTuple};
use crate::crypto::{Tag, ct_eq};
use crate::wire::continuation::MAC_FIELDS_LEN;

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

/// One verified continuation, two cache lines; the first holds everything a lookup needs
/// to pass over a way that does not match (so the ways of a set are read in parallel and
/// a non-matching way costs one line).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Entry {
    /// [`ServerKeys::key_id`](crate::crypto::ServerKeys::key_id) of its epoch when issued.
    key_id: u64,
    /// The continuation's tag (its bytes 38..54).
    tag: Tag,
    /// The connection the tag is bound to.
    tuple: FourTuple,
    /// Whether the way holds an entry.
    live: bool,
    /// The continuation's 38 MACed bytes, as they went out.
    fields: [u8; MAC_FIELDS_LEN],
}

/// What an empty way holds.
const EMPTY: Entry = Entry {
    key_id: 0,
    tag: [0; 16],
    tuple: FourTuple {
        client_addr: Addr::V4([0; 4]),
        client_port: 0,
        server_addr: Addr::V4([0; 4]),
        server_port: 0,
    },
    live: false,
    fields: [0; MAC_FIELDS_LEN],
};

/// The fixed-capacity, set-associative continuation cache.
pub(crate) struct ContinuationCache {
    /// `sets * WAYS` entries; set `s` is `entries[s * WAYS..(s + 1) * WAYS]`.
    entries: Vec<Entry>,
    /// The way each set overwrites next (its oldest entry once full).
    next_way: Vec<u8>,
    /// `sets - 1`; `sets` is a power of two.
    set_mask: usize,
    stats: CacheStats,
}

/// The set-index bits of a tag (its bytes 0..8) and its quick-check word (bytes 8..16).
fn tag_words(tag: &[u8]) -> (usize, u64) {
    let mut index = [0u8; 8];
    let mut check = [0u8; 8];
    if let (Some(i), Some(c)) = (tag.get(..8), tag.get(8..16)) {
        index.copy_from_slice(i);
        check.copy_from_slice(c);
    }
    // Truncation on 32-bit targets is fine: only the low bits are used.
    (
        u64::from_le_bytes(index) as usize,
        u64::from_le_bytes(check),
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
            entries: alloc::vec![EMPTY; sets * WAYS],
            next_way: alloc::vec![0; sets],
            set_mask: sets.saturating_sub(1),
            stats: CacheStats::default(),
        }
    }

    /// Whether the cache holds anything at all (its capacity is not 0).
    pub(crate) fn is_enabled(&self) -> bool {
        !self.entries.is_empty()
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
        self.entries.len() * core::mem::size_of::<Entry>() + self.next_way.len()
    }

    /// Drops every entry (the counters stay).
    pub(crate) fn clear(&mut self) {
        self.entries.fill(EMPTY);
        self.next_way.fill(0);
    }

    /// Whether `bytes` (a whole encoded continuation, tag included) on `tuple` is an entry
    /// issued under the key whose id is `key_id` (`None`: its epoch is not live, a miss).
    /// Counts a hit or a miss when the cache is enabled.
    ///
    /// The tag is compared in constant time; the other bytes are the client's to know.
    /// (Which set is read, and whether a way's tag bytes 8..16 equal the request's, depend
    /// on the tag, but only as whole 64-bit words: a timing probe learns at most whether a
    /// guessed word is some cached tag's, and the whole tag is still compared in constant
    /// time.)
    pub(crate) fn lookup(&mut self, tuple: &FourTuple, bytes: &[u8], key_id: Option<u64>) -> bool {
        if !self.is_enabled() {
            return false;
        }
        let hit = match (key_id, bytes.split_at_checked(MAC_FIELDS_LEN)) {
            (Some(id), Some((fields, tag))) => {
                let (index, check) = tag_words(tag);
                let start = (index & self.set_mask) * WAYS;
                let set = self.entries.get(start..start + WAYS).unwrap_or_default();
                set.iter().any(|e| {
                    e.live
                        && e.key_id == id
                        && tag_words(&e.tag).1 == check
                        && e.tuple == *tuple
                        && e.fields[..] == *fields
                        && ct_eq(&e.tag, tag)
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
        let s = tag_words(tag).0 & self.set_mask;
        let Some(next) = self.next_way.get_mut(s) else {
            return;
        };
        let way = usize::from(*next) % WAYS;
        *next = ((way + 1) % WAYS) as u8;
        if let Some(e) = self.entries.get_mut(s * WAYS + way) {
            *e = Entry {
                key_id,
                tag: *tag,
                tuple: *tuple,
                live: true,
                fields: *fields,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::continuation::CONTINUATION_LEN;

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
