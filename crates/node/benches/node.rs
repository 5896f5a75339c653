//! Per-packet cost of the router node beside the baseline a user would otherwise write, in
//! one criterion group `node_per_packet` (one element = one frame):
//!
//! * `baseline/plain`: copy a 64-byte IPv4 packet from its template, check the header
//!   (version, lengths, checksum), decrement the TTL with the incremental update, look the
//!   destination up in the same LPM trie (`support::Baseline`);
//! * `node/<case>`: copy the case's frame, `Node::handle_packet`, drain `poll_transmit`.
//!
//! Cases: `ipv4_lpm` (plain forwarding), `esp_count` (ESP COUNT, central context),
//! `esp_count_installed` (the same COUNT as microcode installed under opcode 64:
//! `examples/esp-microcode/count.snap`), `esp_count_inline` (the same program carried in
//! the packet, opcode 32),
//! `snap_ping` (SNAP ping in transit), `source_hash_hit` (route cache hit), `threaded_label`.
//! Tables: 256 /24s and a default. Time stands still.
//!
//! `cargo bench -p waist-node --bench node`; instruction counts of the same steps come from
//! `examples/node_per_packet.rs` under callgrind.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // bench harness

#[allow(dead_code)] // shared with the callgrind driver
mod support;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use support::{Baseline, Case, PerPacket};

fn per_packet(c: &mut Criterion) {
    let mut g = c.benchmark_group("node_per_packet");
    g.throughput(Throughput::Elements(1));
    let mut base = Baseline::new();
    assert_eq!(base.forward(), Some(1));
    g.bench_function(BenchmarkId::new("baseline", "plain"), |b| {
        b.iter(|| base.forward())
    });
    for case in Case::ALL {
        let mut f = PerPacket::new(case);
        assert!(f.forward() > 0, "{case:?} forwards nothing");
        f.check(case, 1);
        g.bench_function(BenchmarkId::new("node", case.name()), |b| {
            b.iter(|| f.forward())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    // Short, for a shared 2-core machine; CLI flags override.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = per_packet
}
criterion_main!(benches);
