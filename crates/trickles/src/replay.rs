//! Replay defence: two rotating Bloom filters (§2.2, Fig. 4).
//!
//! A stateless server answers two identical requests identically, so a replayed
//! continuation would buy a client extra service. The server remembers every continuation
//! it accepted within a time horizon `T` in two Bloom filters: `A` holds the previous
//! interval's, `B` (the insertion filter) the current one's. When the clock crosses into a
//! new interval, `A` is cleared and becomes the new `B`. A continuation older than the
//! horizon is refused by its timestamp, so it never needs remembering.
//!
//! ```text
//!  request ─► MAC check ─► timestamp check ─► in A or B? ── yes ─► drop (replay)
//!                                                  │ no
//!                                                  └─► insert into B, serve
//!  interval (now_us / horizon_us) advances by 1: clear A, swap A and B
//!                                 advances by 2+: clear both
//! ```
//!
//! The Bloom key is 64 bits of the request's CMAC tag ([`replay_hash`]): a keyed PRF output
//! is already uniform, so no further hashing is needed ("the Bloom filter hash bits were
//! extracted from the transport continuation MAC", §5). Verify the MAC *before* consulting
//! the filter, so forged packets cannot fill it.
//!
//! ```
//! use trickles::replay::{ReplayConfig, ReplayFilter};
//! let mut filter = ReplayFilter::new(ReplayConfig::default());
//! assert!(filter.check_and_insert(0, 42)); // fresh
//! assert!(!filter.check_and_insert(500_000, 42)); // replay
//! assert!(filter.check_and_insert(2_000_000, 42)); // two intervals on: forgotten
//! ```

use core::mem;

use fastbloom::BloomFilter;
use sansio::{SplitMix64, mix64};

use crate::crypto::{NonceKind, ServerKeys, Tag};

/// Parameters of a [`ReplayFilter`].
#[derive(Clone, Copy, Debug)]
pub struct ReplayConfig {
    /// The interval `T`, in microseconds. A continuation accepted at time `t` is remembered
    /// until at least `t + T`. Must exceed the continuations' freshness window.
    pub horizon_us: u64,
    /// Bits per filter (`m`); two filters are kept.
    pub num_bits: usize,
    /// Hash functions per filter (`k`).
    pub hashes: u32,
}

impl Default for ReplayConfig {
    /// The paper's parameters: `T` = 1 s, `m` = 2^21 bits (256 KiB per filter), `k` = 6.
    /// With `n` = 83,333 continuations per interval (1 Gb/s of 1500-byte packets) the
    /// false-positive rate is about 0.0091%.
    fn default() -> ReplayConfig {
        ReplayConfig {
            horizon_us: 1_000_000,
            num_bits: 1 << 21,
            hashes: 6,
        }
    }
}

/// Two rotating Bloom filters remembering the requests seen in the last one to two
/// horizon intervals.
///
/// Call [`check_and_insert`](ReplayFilter::check_and_insert) once per request whose MAC
/// has verified, with the current time; it rotates the filters itself.
#[derive(Clone, Debug)]
pub struct ReplayFilter {
    cfg: ReplayConfig,
    /// The previous interval's filter.
    older: BloomFilter,
    /// The current interval's filter: insertions go here.
    current: BloomFilter,
    /// The interval `current` belongs to: `now_us / horizon_us`.
    interval: u64,
}

impl ReplayFilter {
    /// Two empty filters of `cfg.num_bits` bits each (rounded up to a multiple of 64; at
    /// least 64) with `cfg.hashes` hashes (at least 1), written once so their memory is
    /// resident from the start. A `horizon_us` of 0 is taken as 1.
    pub fn new(cfg: ReplayConfig) -> ReplayFilter {
        let cfg = ReplayConfig {
            horizon_us: cfg.horizon_us.max(1),
            num_bits: cfg.num_bits.max(64),
            hashes: cfg.hashes.max(1),
        };
        let make = || {
            BloomFilter::with_num_bits(cfg.num_bits)
                .seed(&0)
                .hashes(cfg.hashes)
        };
        let mut filter = ReplayFilter {
            cfg,
            older: make(),
            current: make(),
            interval: 0,
        };
        // Written once now, so all their memory is resident from the start: a server's
        // footprint does not creep up as requests touch the filters' pages at random.
        filter.older.clear();
        filter.current.clear();
        filter
    }

    /// The horizon interval `now_us` falls in: `now_us / horizon_us`.
    pub fn interval(&self, now_us: u64) -> u64 {
        now_us / self.cfg.horizon_us
    }

    /// Rotates the filters for `now_us`: one interval on, the older filter is cleared and
    /// becomes the insertion filter; two or more on, both are cleared. A `now_us` in an
    /// earlier interval changes nothing.
    fn advance(&mut self, now_us: u64) {
        let interval = self.interval(now_us);
        if interval <= self.interval {
            return;
        }
        if interval - self.interval == 1 {
            self.older.clear();
            mem::swap(&mut self.older, &mut self.current);
        } else {
            self.older.clear();
            self.current.clear();
        }
        self.interval = interval;
    }

    /// Rotates as needed for `now_us`, then returns `false` if `hash` is in either filter
    /// (a replay, or a false positive), else inserts it into the current filter and returns
    /// `true` (fresh: serve the request).
    ///
    /// A `now_us` that goes backwards never rotates; the request is checked against, and
    /// inserted into, the filters as they are.
    pub fn check_and_insert(&mut self, now_us: u64, hash: u64) -> bool {
        self.advance(now_us);
        if self.older.contains_hash(hash) {
            return false;
        }
        // One pass over the current filter: inserting reports whether every bit was
        // already set, and inserting what is already there changes nothing.
        !self.current.insert_hash(hash)
    }

    /// Whether `hash` is in either filter (without rotating for the time).
    pub fn contains(&self, hash: u64) -> bool {
        self.current.contains_hash(hash) || self.older.contains_hash(hash)
    }

    /// Bytes of filter storage (both filters' bit vectors).
    pub fn memory_bytes(&self) -> usize {
        mem::size_of_val(self.older.as_slice()) + mem::size_of_val(self.current.as_slice())
    }

    /// The configuration in force (after [`new`](ReplayFilter::new)'s clamping).
    pub fn config(&self) -> ReplayConfig {
        self.cfg
    }
}

/// The Bloom key of a request: 64 bits of its (already verified) CMAC tag, folded with its
/// retransmission counter so each retry hashes differently (§2.2: a request dropped as a
/// false positive is not dropped again when retried).
///
/// The key is `lo ^ mix(hi + retry · φ)`, with `lo`, `hi` the tag's big-endian halves, `φ`
/// the odd 64-bit golden-ratio constant ([`SplitMix64::GAMMA`]) and `mix` the SplitMix64
/// finaliser ([`mix64`], a bijection):
/// for one tag, the 256 retry values give 256 distinct keys. The tag is a PRF output under a
/// key the client does not have, so the keys are uniform; the client can choose `retry`, but
/// the server backs off exponentially on retries, which bounds what that buys.
pub fn replay_hash(tag: &Tag, retry: u8) -> u64 {
    let mut halves = [0u8; 8];
    halves.copy_from_slice(&tag[..8]);
    let lo = u64::from_be_bytes(halves);
    halves.copy_from_slice(&tag[8..]);
    let hi = u64::from_be_bytes(halves);
    lo ^ mix64(hi.wrapping_add(u64::from(retry).wrapping_mul(SplitMix64::GAMMA)))
}

/// The Bloom key of a retransmit-timeout request, allowing at most one per connection per
/// horizon `interval` (from [`ReplayFilter::interval`]).
///
/// Timeout requests are exempt from at-most-once (they revive a connection that ran out of
/// continuations), so they cannot be keyed by their tag; the paper hashes them "consistently
/// on the server such that at most one recovery request can occur per connection, per
/// horizon". The key is 64 bits of `AES_K'(conn_nonce || 1·interval)`, the retransmit nonce
/// PRF on a block whose top bit marks it as no nonce block ([`NonceGen`] blocks never set
/// it). It is keyed so a client cannot choose connections (by grinding ISNs at SYN time)
/// whose timeout keys aim at chosen filter bits or at other connections' keys, and it uses
/// `K'`, which does not rotate, so a MAC-key rotation mid-interval does not grant a second
/// timeout.
///
/// [`NonceGen`]: crate::crypto::NonceGen
pub fn timeout_hash(conn_nonce: u64, interval: u64, keys: &ServerKeys) -> u64 {
    keys.nonces(NonceKind::Retransmit)
        .keyed_hash(conn_nonce, interval)
}

/// Measures a filter's false-positive rate: inserts `n_inserted` random keys (one interval's
/// worth) into a fresh [`ReplayFilter`] built from `cfg`, then probes `n_probes` other random
/// keys with [`ReplayFilter::contains`]. Returns `(false positives, probes)`.
///
/// This is the rate the paper quotes (0.0091% in theory for `n` = 83,333 and the default
/// config): one full filter. Just before a rotation both filters can hold `n` keys and the
/// rate is about twice that. Keys come from SplitMix64 seeded with `seed`, so a run is
/// reproducible.
pub fn measure_false_positive_rate(
    cfg: ReplayConfig,
    n_inserted: u64,
    n_probes: u64,
    seed: u64,
) -> (u64, u64) {
    let mut filter = ReplayFilter::new(cfg);
    let mut rng = SplitMix64::new(seed);
    for _ in 0..n_inserted {
        filter.current.insert_hash(rng.next_u64());
    }
    let mut false_positives = 0;
    for _ in 0..n_probes {
        // A 64-bit key repeating one of the inserted ones is a 2^-40 event here.
        if filter.contains(rng.next_u64()) {
            false_positives += 1;
        }
    }
    (false_positives, n_probes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix64_matches_splitmix_reference() {
        // First output of SplitMix64 seeded with 0 (Vigna's reference implementation).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn retries_of_one_tag_hash_apart() {
        let tag = [7u8; 16];
        let mut seen: alloc::vec::Vec<u64> = (0..=255).map(|r| replay_hash(&tag, r)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 256);
    }
}
