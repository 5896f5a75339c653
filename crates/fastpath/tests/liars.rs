//! Senders that lie about their source hash (indices that are not random, or chosen to
//! collide with an honest flow's slot) cost performance, never correctness.
//!
//! What these tests show, precisely:
//! * **Correctness, for everyone.** Whatever indices anybody sends, every answer the route
//!   cache and the filter cache give equals the slow path's (LPM table, filter list).
//! * **A liar's own cost.** A sender that puts all its flows on one index keeps evicting
//!   itself: its hit rate collapses to the fraction of back-to-back packets of one flow.
//! * **What a targeted liar costs an honest flow.** A liar that copies an honest flow's
//!   index (it is visible in that flow's packets) shares that one slot: interleaved
//!   packet for packet, both miss every time, so the victim pays the slow path on every
//!   packet — a performance cost on that one slot, still never a wrong answer. In general
//!   the victim pays one slow path per liar packet that lands between two of its own
//!   (hit rate (k − 1)/k when the liar sends once every k victim packets). Honest flows in
//!   other slots are untouched. So "liars only cost themselves" holds for correctness; for
//!   performance, a liar that copies a victim's index can also cost that one victim.

// Tests report failure by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fastpath::apps::filter::{FilterCache, Path, sixteen_filters};
use fastpath::apps::route::RouteCache;
use fastpath::assign::RandomAssigner;
use fastpath::lpm::Prefix;
use fastpath::{Lookup, SourceHash};
use proptest::prelude::*;

/// A 100-route table: /16s and /24s in 10.0.0.0/8, next hop = route number % 16.
fn router(log2: u8) -> RouteCache<u16> {
    let mut r = RouteCache::new(log2).unwrap();
    for i in 0..100u16 {
        let p = if i % 2 == 0 {
            Prefix::new([10, (i / 2) as u8, 0, 0], 16).unwrap()
        } else {
            Prefix::new([10, (i / 2) as u8, (i % 7) as u8, 0], 24).unwrap()
        };
        r.add_route(p, i % 16);
    }
    r
}

struct Flow {
    dst: [u8; 4],
    src: [u8; 4],
    id: u32,
    hash: SourceHash,
    hits: u32,
    packets: u32,
}

impl Flow {
    fn send(&mut self, r: &mut RouteCache<u16>) {
        let truth = r.route_uncached(self.dst).copied();
        let (got, l) = r.route(self.hash, self.dst, self.src, self.id);
        assert_eq!(got.copied(), truth, "wrong next hop for flow {}", self.id);
        self.packets += 1;
        self.hits += u32::from(l == Lookup::Hit);
    }

    fn hit_rate(&self) -> f64 {
        f64::from(self.hits) / f64::from(self.packets)
    }
}

fn honest_flows(n: u32) -> Vec<Flow> {
    let mut a = RandomAssigner::new(1, 99);
    (0..n)
        .map(|i| Flow {
            dst: [10, (i % 50) as u8, (i % 7) as u8, 9],
            src: [192, 168, 0, 1],
            id: i,
            hash: a.next_index(),
            hits: 0,
            packets: 0,
        })
        .collect()
}

#[test]
fn constant_index_liar_costs_itself() {
    let mut r = router(16);
    let mut honest = honest_flows(64);
    // The liar: 8 flows to varied destinations, all with index 0.
    let mut liar: Vec<Flow> = (0..8)
        .map(|i| Flow {
            dst: [10, (i * 3) as u8, 1, 1],
            src: [172, 16, 0, 1],
            id: 1000 + i,
            hash: SourceHash::new(0),
            hits: 0,
            packets: 0,
        })
        .collect();
    // Keep slot 0 to the liar alone, so this test isolates the liar's own cost.
    honest.retain(|f| f.hash.low_bits(16) != 0);
    for round in 0..200 {
        for f in &mut honest {
            f.send(&mut r);
        }
        liar[round % 8].send(&mut r);
    }
    let liar_hits: u32 = liar.iter().map(|f| f.hits).sum();
    let honest_min = honest.iter().map(Flow::hit_rate).fold(1.0, f64::min);
    println!(
        "constant-index liar: liar hits {liar_hits}/200; worst honest hit rate {honest_min:.3}"
    );
    assert_eq!(
        liar_hits, 0,
        "round-robin flows on one slot always evict each other"
    );
    // 64 random indices in 65536 slots rarely collide; every honest flow misses once.
    assert!(honest_min >= 0.99 - 1.0 / 200.0, "{honest_min}");
}

#[test]
fn colliding_liar_costs_its_victim_performance_not_correctness() {
    let mut r = router(16);
    let mut honest = honest_flows(32);
    let victim_hash = honest[0].hash;
    let mut liar = Flow {
        dst: [10, 40, 3, 3],
        src: [172, 16, 0, 1],
        id: 7777,
        hash: victim_hash,
        hits: 0,
        packets: 0,
    };
    for _ in 0..200 {
        for f in &mut honest {
            f.send(&mut r);
        }
        liar.send(&mut r);
    }
    let victim = honest[0].hit_rate();
    let others = honest[1..]
        .iter()
        .filter(|f| f.hash.low_bits(16) != victim_hash.low_bits(16))
        .map(Flow::hit_rate)
        .fold(1.0, f64::min);
    println!(
        "colliding liar: victim hit rate {victim:.3}, liar {:.3}, worst other honest {others:.3}",
        liar.hit_rate()
    );
    assert_eq!(victim, 0.0);
    assert_eq!(liar.hit_rate(), 0.0);
    assert!(others > 0.99);
}

/// The victim's cost is exactly one slow path per liar packet that lands between two of
/// its packets: a liar sending once every `k` victim packets leaves it a hit rate of
/// (k − 1)/k (each burst of k starts with a miss).
#[test]
fn victim_cost_is_one_miss_per_interleaved_liar_packet() {
    for k in [1u32, 2, 4, 10, 100] {
        let mut r = router(16);
        let mut victim = honest_flows(1).pop().unwrap();
        let mut liar = Flow {
            dst: [10, 7, 0, 1],
            src: [172, 16, 0, 9],
            id: 9,
            hash: victim.hash,
            hits: 0,
            packets: 0,
        };
        for _ in 0..50 {
            for _ in 0..k {
                victim.send(&mut r);
            }
            liar.send(&mut r);
        }
        println!(
            "liar every {k} victim packets: victim hit rate {:.3}",
            victim.hit_rate()
        );
        assert_eq!(victim.hits, 50 * (k - 1));
        assert_eq!(liar.hits, 0);
    }
}

#[test]
fn filter_cache_liars_get_the_filter_lists_answer() {
    let list = sixteen_filters();
    let mut c = FilterCache::new(list.clone(), 8).unwrap();
    let pkt = |host: u8, port: u16| {
        let mut p = [0u8; 24];
        p[0] = 0x45;
        p[9] = 6;
        p[16..20].copy_from_slice(&[10, 0, 0, host]);
        p[22..24].copy_from_slice(&port.to_be_bytes());
        p
    };
    let mut hits = 0;
    for i in 0..1000u16 {
        // Everyone uses index 5.
        let p = pkt((i % 4 + 1) as u8, 8000 + i % 16);
        let (set, path) = c.classify(SourceHash::new(5), &p);
        assert_eq!(set, list.classify(&p));
        hits += u32::from(path == Path::Hit);
    }
    assert_eq!(hits, 0);
}

proptest! {
    /// Any mix of flows and indices (random, constant, copied from another flow): every
    /// route equals the LPM table's.
    #[test]
    fn any_indices_route_correctly(
        pkts in proptest::collection::vec((0u8..60, 0u8..8, 0u32..20, 0u32..4, any::<u32>()), 1..300),
    ) {
        let mut r = router(4);
        for (b, c, flow, kind, raw) in pkts {
            let dst = [10, b, c, 1];
            let hash = match kind {
                0 => SourceHash::new(raw),           // random
                1 => SourceHash::new(0),             // constant
                2 => SourceHash::new(flow),          // sequential, not random
                _ => SourceHash::new(raw & 0xf),     // few slots
            };
            let truth = r.route_uncached(dst).copied();
            let (got, _) = r.route(hash, dst, [1, 2, 3, 4], flow);
            prop_assert_eq!(got.copied(), truth);
        }
    }
}
