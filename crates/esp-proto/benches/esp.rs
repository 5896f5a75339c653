//! Per-packet cost of ESP processing (parse → execute → emit) on a warm store, beside the
//! work every router does to an IPv4 packet anyway, in one criterion group
//! `esp_per_packet` (one element = one packet):
//!
//! * `baseline_ipv4/ours`: copy a 48-byte IPv4 packet from its template, check the fixed
//!   header and read the destination (`wire::addresses`), decrement the TTL with the
//!   incremental checksum update (`wire::decrement_ttl`);
//! * `baseline_ipv4/etherparse`: the same with `etherparse::Ipv4HeaderSlice` and a
//!   hand-written TTL and checksum update;
//! * `header_only/<case>`: copy a bare ESP header, `exec::process` it;
//! * `full_packet/<case>`: copy a dedicated IPv4 ESP packet, the baseline's work, then
//!   `wire::locate` + `exec::process`.
//!
//! Cases (paths in `support::Case`): `count`, `compare`, `collect`, and RCOLLECT with a 1-word
//! and an 8-word (512-bit) IDmap, each on its duplicate path (`_dup`) and its new-child path
//! (`_new`). The store: 2^16 bindings, half full of others, time standing still.
//!
//! `cargo bench -p esp-proto --features alloc --bench esp -- esp_per_packet`; instruction
//! counts of the same steps come from `examples/per_packet.rs` under callgrind.
// bench harness: criterion's entry points are undocumented items; panics on setup are bugs.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)] // shared with the callgrind driver, which uses more of it
mod support;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use support::{Baseline, Case, PerPacket};

fn per_packet(c: &mut Criterion) {
    let mut g = c.benchmark_group("esp_per_packet");
    g.throughput(Throughput::Elements(1));

    let mut base = Baseline::new();
    g.bench_function(BenchmarkId::new("baseline_ipv4", "ours"), |b| {
        b.iter(|| base.ours());
    });
    g.bench_function(BenchmarkId::new("baseline_ipv4", "etherparse"), |b| {
        b.iter(|| base.etherparse());
    });

    for case in Case::ALL {
        let mut fixture = PerPacket::new(case);
        g.bench_function(BenchmarkId::new("header_only", case.name()), |b| {
            b.iter(|| fixture.header_only());
        });
        g.bench_function(BenchmarkId::new("full_packet", case.name()), |b| {
            b.iter(|| fixture.full_packet());
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    // Short, for a shared 2-core machine; CLI flags override.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = per_packet
}
criterion_main!(benches);
