//! SNAP's costs beside what a user would pick instead, each in one criterion group:
//!
//! * `snap_ping`: per packet, Fig. 1's ping at an intermediate node (`snap_hop/<payload>`:
//!   `forw` sends it on, reusing the buffer) and at its destination (`snap_turn/<payload>`:
//!   the turnaround, whose `getsrc` allocates so `forwto` builds the child by copying
//!   collection), beside plain IPv4 forwarding of a packet of the same total size
//!   (`ipv4/<payload>`: header check, TTL decrement with incremental checksum), for payloads
//!   of 4, 64, 256, 1024 and 1400 bytes. Both sides copy the packet into a reused receive
//!   buffer, move it into the node by value and take it back from the transmit
//!   (`support` module doc).
//! * `snap_vs_rbpf`: per run of a straight-line program (load 1; add, xor, shift left by
//!   immediates; exit) of 202 and 8 instructions, SNAP's `Vm::run` beside rbpf 0.4's
//!   interpreter (`EbpfVmNoData::execute_program`). Criterion's throughput is set to the
//!   instructions executed, so its report reads in instructions per second.
//!
//! `cargo bench -p snap-vm --bench snap` (about 1.5 minutes); instruction counts of the
//! same steps come from `examples/snap_per_packet.rs` under callgrind.
// bench harness: criterion's entry points are undocumented items; panics on setup are bugs.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)] // shared with the callgrind driver, which uses more of it
mod support;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use support::{
    Ipv4Step, PAYLOADS, PingStep, StraightStep, Where, check_ebpf, straight_ebpf, straight_len,
};

fn snap_ping(c: &mut Criterion) {
    let mut g = c.benchmark_group("snap_ping");
    g.throughput(Throughput::Elements(1));
    for payload in PAYLOADS {
        let mut hop = PingStep::new(Where::Hop, payload);
        let mut turn = PingStep::new(Where::Turn, payload);
        let mut ip = Ipv4Step::new(hop.len());
        g.bench_function(BenchmarkId::new("ipv4", payload), |b| b.iter(|| ip.step()));
        g.bench_function(BenchmarkId::new(Where::Hop.name(), payload), |b| {
            b.iter(|| hop.step())
        });
        g.bench_function(BenchmarkId::new(Where::Turn.name(), payload), |b| {
            b.iter(|| turn.step())
        });
    }
    g.finish();
}

fn snap_vs_rbpf(c: &mut Criterion) {
    let mut g = c.benchmark_group("snap_vs_rbpf");
    for ops in [200, 6] {
        let n = straight_len(ops);
        g.throughput(Throughput::Elements(n as u64));
        let mut snap = StraightStep::new(ops);
        g.bench_function(BenchmarkId::new("snap", n), |b| b.iter(|| snap.step()));
        let prog = straight_ebpf(ops);
        assert_eq!(prog.len(), 8 * n);
        check_ebpf(&prog);
        let vm = rbpf::EbpfVmNoData::new(Some(&prog)).unwrap();
        g.bench_function(BenchmarkId::new("rbpf", n), |b| {
            b.iter(|| vm.execute_program().unwrap())
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
    targets = snap_ping, snap_vs_rbpf
}
criterion_main!(benches);
