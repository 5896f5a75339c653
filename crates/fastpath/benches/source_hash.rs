//! Source hashing against what a user would pick instead, each baseline in the same
//! criterion group:
//!
//! * `flow_lookup` — reach a flow's entry from a packet's 12-byte flow id: the
//!   source-hash `FlowCache`, the same cache indexed by XOR folding and by CRC-32 at the
//!   receiver, and `hashbrown` maps keyed by the flow id with SipHash-1-3 (std's
//!   `RandomState`) and with FxHash (`rustc-hash`). 256 flows, 2^16 slots, all hits.
//! * `filter16` — classify a packet with the 16-filter list: the plain list (every filter
//!   runs) against `FilterCache` (source hash). 200 flows.
//! * `lpm100` — next hop from the 100-route LPM trie against `RouteCache` (source hash)
//!   and against the same table compiled (`CompiledLpm`, a stride-8 multibit trie).
//!
//! Each iteration handles one packet, cycling over a pre-built array. Run:
//! `cargo bench -p fastpath --bench source_hash -- --warm-up-time 1 --measurement-time 3`.
// bench harness: criterion's entry points are undocumented items; panics on setup are bugs.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use fastpath::apps::filter::{FilterCache, sixteen_filters};
use fastpath::apps::route::RouteCache;
use fastpath::hashes::{crc32, xor_fold16};
use fastpath::lpm::Prefix;
use fastpath::{FlowCache, FlowId, SourceHash};
use sansio::SplitMix64;

type Fx = hashbrown::HashMap<FlowId, u32, rustc_hash::FxBuildHasher>;
type Sip = hashbrown::HashMap<FlowId, u32, std::hash::RandomState>;

/// (source hash, 12-byte flow id) of 256 flows with distinct 16-bit slots.
fn flows() -> Vec<(SourceHash, [u8; 12])> {
    let mut rng = SplitMix64::new(7);
    let mut used = std::collections::HashSet::new();
    (0..256u32)
        .map(|i| {
            let h = loop {
                let h = rng.next_u64() as u32;
                if used.insert(h & 0xffff) {
                    break h;
                }
            };
            let mut f = [0u8; 12];
            f[..4].copy_from_slice(&[10, 1, 0, i as u8]);
            f[4..8].copy_from_slice(&[10, 2, 0, (i % 7) as u8]);
            f[8..].copy_from_slice(&i.to_be_bytes());
            (SourceHash::new(h), f)
        })
        .collect()
}

fn fid(b: &[u8; 12]) -> FlowId {
    FlowId::from_array(b).unwrap()
}

fn flow_lookup(c: &mut Criterion) {
    let fl = flows();
    let fill = |ix: &dyn Fn(SourceHash, &[u8; 12]) -> u32| {
        let mut cache = FlowCache::new(16).unwrap();
        for (i, (h, f)) in fl.iter().enumerate() {
            cache.insert(SourceHash::new(ix(*h, f)), fid(f), i as u32);
        }
        cache
    };
    let sh = fill(&|h, _| h.get());
    let xf = fill(&|_, f| xor_fold16(f));
    let cr = fill(&|_, f| crc32(f));
    let sip: Sip = fl
        .iter()
        .enumerate()
        .map(|(i, (_, f))| (fid(f), i as u32))
        .collect();
    let fx: Fx = fl
        .iter()
        .enumerate()
        .map(|(i, (_, f))| (fid(f), i as u32))
        .collect();

    let mut g = c.benchmark_group("flow_lookup");
    let mut i = 0usize;
    let mut next = || {
        i = (i + 1) & 255;
        black_box(&fl[i])
    };
    g.bench_function("source_hash", |b| {
        b.iter(|| {
            let (h, f) = next();
            sh.get(*h, &fid(f)).copied()
        })
    });
    g.bench_function("xor_fold_cache", |b| {
        b.iter(|| {
            let (_, f) = next();
            xf.get(SourceHash::new(xor_fold16(f)), &fid(f)).copied()
        })
    });
    g.bench_function("crc32_cache", |b| {
        b.iter(|| {
            let (_, f) = next();
            cr.get(SourceHash::new(crc32(f)), &fid(f)).copied()
        })
    });
    g.bench_function("hashbrown_siphash", |b| {
        b.iter(|| {
            let (_, f) = next();
            sip.get(&fid(f)).copied()
        })
    });
    g.bench_function("hashbrown_fxhash", |b| {
        b.iter(|| {
            let (_, f) = next();
            fx.get(&fid(f)).copied()
        })
    });
    g.finish();
}

/// (source hash, IPv4 + TCP header prefix) for 200 flows.
fn filter_packets() -> Vec<(SourceHash, [u8; 24])> {
    let mut rng = SplitMix64::new(11);
    (0..200)
        .map(|_| {
            let r = rng.next_u64();
            let mut p = [0u8; 24];
            p[0] = 0x45;
            p[9] = if r.is_multiple_of(8) { 17 } else { 6 };
            p[12..16].copy_from_slice(&[192, 168, (r >> 8) as u8, (r >> 16) as u8]);
            p[16..20].copy_from_slice(&[10, 0, 0, (r % 5) as u8]);
            p[22..24].copy_from_slice(&(7995 + (r >> 40) as u16 % 24).to_be_bytes());
            (SourceHash::new((r >> 32) as u32), p)
        })
        .collect()
}

fn filter16(c: &mut Criterion) {
    let pkts = filter_packets();
    let list = sixteen_filters();
    let mut cache = FilterCache::new(list.clone(), 16).unwrap();
    let mut g = c.benchmark_group("filter16");
    let mut i = 0usize;
    g.bench_function("plain_list", |b| {
        b.iter(|| {
            i = (i + 1) % pkts.len();
            list.classify(black_box(&pkts[i].1))
        })
    });
    g.bench_function("source_hash_cache", |b| {
        b.iter(|| {
            i = (i + 1) % pkts.len();
            let (h, p) = black_box(&pkts[i]);
            cache.classify(*h, p).0
        })
    });
    g.finish();
}

fn lpm100(c: &mut Criterion) {
    let mut rc: RouteCache<u16> = RouteCache::new(16).unwrap();
    for i in 0..99u16 {
        let p = if i % 3 == 0 {
            Prefix::new([10, i as u8, 0, 0], 16).unwrap()
        } else {
            Prefix::new([10, (i / 3) as u8, i as u8, 0], 24).unwrap()
        };
        rc.add_route(p, i % 16);
    }
    rc.add_route(Prefix::new([0; 4], 0).unwrap(), 15);
    let mut rng = SplitMix64::new(3);
    let pkts: Vec<(SourceHash, [u8; 4], [u8; 4], u32)> = (0..200u32)
        .map(|i| {
            let r = rng.next_u64();
            let dst = [
                10,
                (r >> 24) as u8 % 40,
                (r >> 32) as u8 % 100,
                (r >> 40) as u8,
            ];
            (SourceHash::new(r as u32), dst, [172, 16, 0, 1], i)
        })
        .collect();
    let compiled = rc.table().compile();
    let mut g = c.benchmark_group("lpm100");
    let mut i = 0usize;
    g.bench_function("plain_lpm", |b| {
        b.iter(|| {
            i = (i + 1) % pkts.len();
            rc.route_uncached(black_box(pkts[i].1)).copied()
        })
    });
    g.bench_function("compiled_lpm", |b| {
        b.iter(|| {
            i = (i + 1) % pkts.len();
            compiled.lookup(black_box(pkts[i].1)).map(|(_, &v)| v)
        })
    });
    g.bench_function("source_hash_cache", |b| {
        b.iter(|| {
            i = (i + 1) % pkts.len();
            let (h, d, s, f) = black_box(pkts[i]);
            rc.route(h, d, s, f).0.copied()
        })
    });
    g.finish();
}

criterion_group!(benches, flow_lookup, filter16, lpm100);
criterion_main!(benches);
