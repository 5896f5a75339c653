//! Per-fragment cost of the router's stream handlers beside plain forwarding of the same
//! datagram, in one criterion group `stream_fragment` (one element = one 1400-byte RUDP
//! fragment in a UDP datagram):
//!
//! * `baseline/forward`: the router forwards the datagram (to another host: no handlers),
//!   `Node::handle_packet` in place: what a router without stream handlers does;
//! * `streams/mirror1`: the datagram is for the router: its stream node decides on the first
//!   fragment (cut-through) and sends it on to one destination, `handle_packet`,
//!   `run_streams`, drain `poll_transmit`;
//! * `streams/multicast2`: customised multicast to two destinations (two copies out);
//! * `streams/delta_whole`: a 14-fragment message reassembled, 20 % rewritten, fragmented
//!   again (per fragment: the message's cost / 14).
//!
//! Every case copies its frame from a template and gives each message a new id. Time
//! stands still; handlers are timed by a meter that reads a counter.
//!
//! `cargo bench -p waist-node --bench streams`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // bench harness

#[path = "support/streams.rs"]
mod streams;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn per_fragment(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream_fragment");
    for (group, name, mut case, out_per_msg) in streams::cases() {
        let frames = case.frames.len() as u64;
        assert_eq!(case.run(), out_per_msg, "{name}");
        g.throughput(Throughput::Elements(frames));
        g.bench_function(BenchmarkId::new(group, name), |b| {
            b.iter(|| black_box(case.run()))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = per_fragment
}
criterion_main!(benches);
