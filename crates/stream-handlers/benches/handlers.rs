//! Native handler throughput (no cost model: the handlers transform real bytes) beside the
//! cheapest thing a handler could do to a message: clone it (a `Vec` copy, i.e. memcpy).
//! Each handler takes its message by value, so every case includes that clone.

// Bench harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use stream_handlers::handlers::{ByteSwap, ContentRouter, CustomMulticast, Delta, Filter, Mirror};
use stream_handlers::{Field, Message, Predicate, StreamHandler};

fn bench(c: &mut Criterion) {
    let f = Field::new(0, 2);
    for len in [1_000usize, 50_000] {
        let msg = Message::new(0, (0..len).map(|i| (i * 31) as u8).collect());
        let mut g = c.benchmark_group(format!("handler_{len}B"));
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function("baseline_clone", |b| {
            b.iter(|| black_box(msg.clone()));
        });
        let mut cases: Vec<(&str, Box<dyn StreamHandler>)> = vec![
            ("route", Box::new(ContentRouter::new(f, Some(1), 8))),
            ("filter", Box::new(Filter::new(Predicate::Lt(f, 0x8000)))),
            ("mirror2", Box::new(Mirror::new(vec![1, 2]))),
            (
                "multicast2",
                Box::new(CustomMulticast::new(
                    vec![1, 2],
                    vec![(1, Predicate::Lt(f, 0x8000)), (2, Predicate::Ge(f, 0x4000))],
                )),
            ),
            ("delta", Box::new(Delta::paper(1))),
            ("format", Box::new(ByteSwap)),
        ];
        for (name, h) in &mut cases {
            let mut out = Vec::with_capacity(4);
            g.bench_function(*name, |b| {
                b.iter(|| {
                    out.clear();
                    h.handle(msg.clone(), &mut out);
                    black_box(out.len())
                });
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
