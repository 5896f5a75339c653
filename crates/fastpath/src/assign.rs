//! Choosing source-hash indices (§3.1) and flow ids that survive a sender's crash (§3.5).
//!
//! The only rule a source hash must obey is that it stays the same for every packet of a
//! flow. The paper offers three ways to pick it, all here:
//!
//! * **random** — [`RandomAssigner`]: a seeded generator per source (the seed must include
//!   the source's unique id, so two sources do not draw the same sequence), one draw per
//!   new flow; or [`RandomPool`]: a list of random indices drawn once at boot and handed out
//!   round robin, so starting a flow costs no computation;
//! * **precomputed** — [`precomputed`]: every sender applies the same agreed function
//!   `f(FID)`, so all sources of one flow id (e.g. a destination address) use one slot;
//! * **manufacturer assigned** — [`ManufacturedAddress`]: a 6-byte link address extended
//!   at manufacture with a 2-byte random index, carried wherever the address goes.
//!
//! §3.5's crash issue: a sender that reboots and reuses flow ids could be served stale
//! cached processing. [`FlowSource`] builds 12-byte flow ids from a space-unique part
//! (source address and flow number), a *time-uniqueness* part (a random boot nonce the
//! caller draws at every boot) and keeps the source hash separate — the paper's three
//! components. The crate draws no randomness itself: seeds and nonces come in.

use alloc::vec::Vec;
use core::fmt;

use sansio::SplitMix64;

use crate::flow::{FlowId, SourceHash};

/// Random assignment: a generator seeded with the source's unique id and a seed; one
/// 32-bit index per new flow.
#[derive(Clone, Debug)]
pub struct RandomAssigner {
    /// SplitMix64: a tiny, well-mixed generator for indices (not for secrets).
    rng: SplitMix64,
}

impl RandomAssigner {
    /// A generator for the source `source_id` (its unique address, say) and `seed` (fresh
    /// randomness from the host, so a rebooted source draws a different sequence).
    pub fn new(source_id: u64, seed: u64) -> RandomAssigner {
        let mut mix = SplitMix64::new(source_id ^ seed.rotate_left(32));
        let s = mix.next_u64() ^ seed;
        RandomAssigner {
            rng: SplitMix64::new(s),
        }
    }

    /// The index for a new flow (use it on every packet of that flow).
    pub fn next_index(&mut self) -> SourceHash {
        SourceHash::new((self.rng.next_u64() >> 32) as u32)
    }
}

/// Why a [`RandomPool`] cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// A pool needs at least one index.
    Empty,
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("random index pool must hold at least one index")
    }
}

impl core::error::Error for PoolError {}

/// Random assignment without per-flow computation: `size` indices drawn once (at boot)
/// and handed out round robin.
#[derive(Clone, Debug)]
pub struct RandomPool {
    pool: Vec<SourceHash>,
    next: usize,
}

impl RandomPool {
    /// Draws `size` indices from a [`RandomAssigner`] for `source_id` and `seed`.
    pub fn new(source_id: u64, seed: u64, size: usize) -> Result<RandomPool, PoolError> {
        if size == 0 {
            return Err(PoolError::Empty);
        }
        let mut a = RandomAssigner::new(source_id, seed);
        Ok(RandomPool {
            pool: (0..size).map(|_| a.next_index()).collect(),
            next: 0,
        })
    }

    /// The next index of the pool, wrapping around at its end.
    pub fn next_index(&mut self) -> SourceHash {
        let h = self.pool.get(self.next).copied().unwrap_or_default();
        self.next = (self.next + 1) % self.pool.len().max(1);
        h
    }
}

/// Precomputed assignment: the agreed function `f(FID)` every sender applies to a flow
/// id (FNV-1a over the bytes, then a 32-bit avalanche finaliser so every output bit
/// depends on every input bit). Senders compute it once per flow; routers never do.
pub fn precomputed(fid: &FlowId) -> SourceHash {
    let mut h: u32 = 0x811c_9dc5;
    for &b in fid.as_bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    // murmur3's fmix32.
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    SourceHash::new(h)
}

/// Manufacturer-assigned index: a 6-byte link address plus the 2-byte random index the
/// manufacturer burnt in beside it (an 8-byte address that name services and ARP carry
/// whole).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ManufacturedAddress {
    /// The link (MAC) address: the flow id.
    pub mac: [u8; 6],
    /// The random index assigned at manufacture.
    pub index: u16,
}

impl ManufacturedAddress {
    /// The 8-byte form: address then index, big-endian.
    pub fn to_bytes(self) -> [u8; 8] {
        let [a, b, c, d, e, f] = self.mac;
        let [i, j] = self.index.to_be_bytes();
        [a, b, c, d, e, f, i, j]
    }

    /// Reads the 8-byte form.
    pub fn from_bytes(b: [u8; 8]) -> ManufacturedAddress {
        let [a, c, d, e, f, g, i, j] = b;
        ManufacturedAddress {
            mac: [a, c, d, e, f, g],
            index: u16::from_be_bytes([i, j]),
        }
    }

    /// The flow id: the 6-byte link address.
    pub fn flow_id(self) -> FlowId {
        // Six bytes always make a valid flow id.
        FlowId::new(&self.mac).unwrap_or(FlowId::from_u32(0))
    }

    /// The source hash: the 16 manufactured random bits.
    pub fn source_hash(self) -> SourceHash {
        SourceHash::new(u32::from(self.index))
    }
}

/// A sender's flow ids and indices with the three components of §3.5: space uniqueness
/// (source address + flow number), time uniqueness (a random boot nonce) and a random
/// source hash.
///
/// The flow id is 12 bytes: `source address (4) | flow number (4) | boot nonce (4)` — the
/// same size as the paper's experiments. After a crash the caller builds a new
/// `FlowSource` with a fresh nonce, so restarted flows that reuse flow numbers carry
/// different flow ids and never match the entries cached before the crash.
#[derive(Clone, Debug)]
pub struct FlowSource {
    address: [u8; 4],
    boot_nonce: u32,
    next_flow: u32,
    indices: RandomAssigner,
}

impl FlowSource {
    /// A sender at `address` that drew `boot_nonce` and `seed` at boot.
    pub fn new(address: [u8; 4], boot_nonce: u32, seed: u64) -> FlowSource {
        FlowSource {
            address,
            boot_nonce,
            next_flow: 0,
            indices: RandomAssigner::new(u64::from(u32::from_be_bytes(address)), seed),
        }
    }

    /// The flow id of flow number `flow` of this boot.
    pub fn flow_id(&self, flow: u32) -> FlowId {
        let mut b = [0u8; 12];
        let parts = [
            self.address,
            flow.to_be_bytes(),
            self.boot_nonce.to_be_bytes(),
        ];
        for (dst, src) in b.chunks_exact_mut(4).zip(parts) {
            dst.copy_from_slice(&src);
        }
        FlowId::new(&b).unwrap_or(FlowId::from_u32(flow))
    }

    /// Starts the next flow: its flow id and a fresh random source hash.
    pub fn start_flow(&mut self) -> (FlowId, SourceHash) {
        let fid = self.flow_id(self.next_flow);
        self.next_flow = self.next_flow.wrapping_add(1);
        (fid, self.indices.next_index())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{FlowCache, Lookup};
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn random_assigner_is_seeded_and_source_specific() {
        let draw = |src, seed| {
            let mut a = RandomAssigner::new(src, seed);
            (0..8).map(|_| a.next_index()).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 7), draw(1, 7));
        assert_ne!(draw(1, 7), draw(2, 7));
        assert_ne!(draw(1, 7), draw(1, 8));
    }

    #[test]
    fn random_indices_spread_over_a_table() {
        // 4096 flows into 65536 slots: a uniform draw leaves ~4096·(1 − e^{−1/16}) ≈ 3970
        // distinct slots; a poor generator would show far fewer.
        let mut a = RandomAssigner::new(42, 1);
        let slots: HashSet<u32> = (0..4096).map(|_| a.next_index().low_bits(16)).collect();
        assert!(slots.len() > 3900, "{}", slots.len());
    }

    #[test]
    fn pool_is_round_robin() {
        let mut p = RandomPool::new(9, 3, 3).unwrap();
        let first: Vec<_> = (0..3).map(|_| p.next_index()).collect();
        let again: Vec<_> = (0..3).map(|_| p.next_index()).collect();
        assert_eq!(first, again);
        assert_eq!(RandomPool::new(9, 3, 0).unwrap_err(), PoolError::Empty);
    }

    #[test]
    fn precomputed_is_a_function_of_the_flow_id() {
        let a = FlowId::new(&[10, 0, 0, 1]).unwrap();
        let b = FlowId::new(&[10, 0, 0, 2]).unwrap();
        assert_eq!(precomputed(&a), precomputed(&a));
        assert_ne!(precomputed(&a), precomputed(&b));
        // Neighbouring addresses land far apart in the low 16 bits.
        assert_ne!(precomputed(&a).low_bits(16), precomputed(&b).low_bits(16));
    }

    #[test]
    fn manufactured_address_round_trips() {
        let m = ManufacturedAddress {
            mac: [0x02, 0, 0, 0, 0, 1],
            index: 0xbeef,
        };
        assert_eq!(m.to_bytes(), [2, 0, 0, 0, 0, 1, 0xbe, 0xef]);
        assert_eq!(ManufacturedAddress::from_bytes(m.to_bytes()), m);
        assert_eq!(m.flow_id().as_bytes(), &[2, 0, 0, 0, 0, 1]);
        assert_eq!(m.source_hash().get(), 0xbeef);
    }

    /// §3.5: without a time-uniqueness component a restarted sender that reuses a flow
    /// number hits the stale entry; with a fresh boot nonce it misses and the slow path
    /// computes the new processing.
    #[test]
    fn boot_nonce_keeps_a_restarted_sender_off_stale_entries() {
        let mut cache: FlowCache<&str> = FlowCache::new(16).unwrap();
        let mut before = FlowSource::new([10, 0, 0, 1], 0x1111, 5);
        let (fid, h) = before.start_flow();
        cache.get_or_insert_with(h, &fid, |_| "old spec");

        // The problem: same flow id and index after the crash (no nonce change).
        let mut careless = FlowSource::new([10, 0, 0, 1], 0x1111, 5);
        let (fid2, h2) = careless.start_flow();
        let (v, l) = cache.get_or_insert_with(h2, &fid2, |_| "new spec");
        assert_eq!((*v, l), ("old spec", Lookup::Hit));

        // The fix: a fresh nonce at boot. Even with the same seed (same index), no hit.
        let mut restarted = FlowSource::new([10, 0, 0, 1], 0x2222, 5);
        let (fid3, h3) = restarted.start_flow();
        assert_eq!(h3, h);
        assert_ne!(fid3, fid);
        let (v, l) = cache.get_or_insert_with(h3, &fid3, |_| "new spec");
        assert_eq!((*v, l), ("new spec", Lookup::Miss));
    }

    #[test]
    fn flow_ids_have_three_parts() {
        let mut s = FlowSource::new([192, 168, 1, 9], 0xa1b2_c3d4, 0);
        let (f0, _) = s.start_flow();
        let (f1, _) = s.start_flow();
        assert_eq!(
            f0.as_bytes(),
            &[192, 168, 1, 9, 0, 0, 0, 0, 0xa1, 0xb2, 0xc3, 0xd4]
        );
        assert_eq!(&f1.as_bytes()[4..8], &[0, 0, 0, 1]);
        assert_eq!(s.flow_id(1), f1);
    }

    proptest! {
        /// Flow ids of two boots with different nonces never coincide, and within a boot
        /// every flow number gives a distinct id.
        #[test]
        fn boots_never_share_flow_ids(
            addr in any::<[u8; 4]>(),
            n1 in any::<u32>(),
            n2 in any::<u32>(),
            flows in proptest::collection::vec(any::<u32>(), 1..50),
        ) {
            prop_assume!(n1 != n2);
            let a = FlowSource::new(addr, n1, 0);
            let b = FlowSource::new(addr, n2, 0);
            let ids_a: HashSet<FlowId> = flows.iter().map(|&f| a.flow_id(f)).collect();
            let distinct: HashSet<u32> = flows.iter().copied().collect();
            prop_assert_eq!(ids_a.len(), distinct.len());
            for &f in &flows {
                prop_assert!(!ids_a.contains(&b.flow_id(f)));
            }
        }
    }
}
