//! The forwarding workload shared by `benches/threaded.rs` and `examples/threaded_forward.rs`:
//! a 100-destination routing table (the paper's IP forwarding experiment, §3.4) held six
//! ways, and a pool of packets addressed to its destinations.

use fastpath::lpm::{CompiledLpm, LpmTable, Prefix};
use fastpath::threaded::{Entry, Label, NextHop, ThreadedTable};
use fastpath::{FlowCache, FlowId, SourceHash};
use sansio::SplitMix64;

/// hashbrown keyed by destination with keyed SipHash-1-3 (std's `RandomState`).
pub(crate) type Sip = hashbrown::HashMap<[u8; 4], u16, std::hash::RandomState>;
/// hashbrown keyed by destination with FxHash.
pub(crate) type Fx = hashbrown::HashMap<[u8; 4], u16, rustc_hash::FxBuildHasher>;

/// Destinations in the table (the paper's "at most 100 entries").
pub(crate) const DESTS: usize = 100;
/// Packets in the pool, cycled through.
pub(crate) const POOL: usize = 1024;

/// Every way of holding the table, and the packets.
pub(crate) struct Workload {
    /// Threaded table: index i = destination i.
    pub(crate) table: ThreadedTable,
    /// Longest-prefix match over /24s.
    pub(crate) lpm: LpmTable<u16>,
    /// The same table compiled (stride-8 multibit trie).
    pub(crate) compiled: CompiledLpm<u16>,
    /// hashbrown + SipHash by destination address.
    pub(crate) sip: Sip,
    /// hashbrown + FxHash by destination address.
    pub(crate) fx: Fx,
    /// Source-hash destination cache (flow id = destination address), filled.
    pub(crate) cache: FlowCache<u16>,
    /// Per packet: its label, its destination address, its source hash and flow id.
    pub(crate) packets: Vec<(Label, [u8; 4], SourceHash, FlowId)>,
}

/// Builds the workload from `seed`: destination i is the /24 `10.(i / 8).(i % 8 · 16).0`
/// (clustered, as real assignments are), out of interface `i % 16`.
pub(crate) fn workload(seed: u64) -> Workload {
    let mut rng = SplitMix64::new(seed);
    let mut table = ThreadedTable::with_len(DESTS);
    let mut lpm = LpmTable::new();
    let mut sip = Sip::with_hasher(std::hash::RandomState::new());
    let mut fx = Fx::with_hasher(rustc_hash::FxBuildHasher);
    let mut cache = FlowCache::new(16).expect("2^16 slots");
    let prefix = |i: usize| [10, (i / 8) as u8, ((i % 8) * 16) as u8, 0];
    // Random distinct cache slots per destination, so every cached lookup is a hit.
    let mut slots = std::collections::HashSet::new();
    let mut hashes = Vec::new();
    for i in 0..DESTS {
        let iface = (i % 16) as u16;
        table
            .set(
                i as u32,
                Entry {
                    next_hop: NextHop::Neighbour(iface),
                    next_index: (rng.next_u64() % DESTS as u64) as u32,
                },
            )
            .expect("small indices");
        lpm.insert(Prefix::new(prefix(i), 24).expect("valid /24"), iface);
        let h = loop {
            let h = rng.next_u64() as u32;
            if slots.insert(h & 0xffff) {
                break SourceHash::new(h);
            }
        };
        hashes.push(h);
    }
    let packets: Vec<_> = (0..POOL)
        .map(|_| {
            let i = (rng.next_u64() % DESTS as u64) as usize;
            let mut addr = prefix(i);
            addr[3] = (rng.next_u64() % 254 + 1) as u8;
            (
                Label::threaded(i as u32, 64),
                addr,
                hashes[i],
                FlowId::from_array(&addr).expect("4 bytes"),
            )
        })
        .collect();
    for &(_, addr, h, fid) in &packets {
        let iface = lpm.lookup(addr).map(|(_, &v)| v).expect("covered");
        sip.insert(addr, iface);
        fx.insert(addr, iface);
        cache.insert(h, fid, iface);
    }
    Workload {
        table,
        compiled: lpm.compile(),
        lpm,
        sip,
        fx,
        cache,
        packets,
    }
}
