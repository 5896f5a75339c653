//! Threaded-index forwarding (§4) beside what a router would use instead, in one group:
//! the longest-prefix-match table (the slow path; the binary trie and the same table
//! compiled into a stride-8 multibit trie), hashbrown keyed by destination with
//! keyed SipHash and with FxHash, and the source-hash destination cache (§3/§4.1). Each
//! iteration forwards the next packet of a 1024-packet pool over a 100-destination table.
//!
//! `cargo bench -p fastpath --bench threaded -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)] // bench harness

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

mod threaded_support;

fn forwarding(c: &mut Criterion) {
    let w = threaded_support::workload(7);
    let mut g = c.benchmark_group("forward_100_dests");
    let mut i = 0usize;
    let mut next = move || {
        i = (i + 1) % threaded_support::POOL;
        i
    };
    g.bench_function("threaded", |b| {
        b.iter(|| {
            let (label, ..) = w.packets[next()];
            black_box(w.table.forward(black_box(label)))
        })
    });
    g.bench_function("lpm", |b| {
        b.iter(|| {
            let (_, addr, ..) = w.packets[next()];
            black_box(w.lpm.lookup(black_box(addr)).map(|(_, &v)| v))
        })
    });
    g.bench_function("lpm_compiled", |b| {
        b.iter(|| {
            let (_, addr, ..) = w.packets[next()];
            black_box(w.compiled.lookup(black_box(addr)).map(|(_, &v)| v))
        })
    });
    g.bench_function("hashbrown_siphash", |b| {
        b.iter(|| {
            let (_, addr, ..) = w.packets[next()];
            black_box(w.sip.get(&black_box(addr)).copied())
        })
    });
    g.bench_function("hashbrown_fxhash", |b| {
        b.iter(|| {
            let (_, addr, ..) = w.packets[next()];
            black_box(w.fx.get(&black_box(addr)).copied())
        })
    });
    g.bench_function("source_hash_cache", |b| {
        b.iter(|| {
            let (_, _, h, fid) = w.packets[next()];
            black_box(w.cache.get(black_box(h), &fid).copied())
        })
    });
    g.finish();
}

criterion_group!(benches, forwarding);
criterion_main!(benches);
