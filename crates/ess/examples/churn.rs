//! Runs `N` operations of one workload on one store, for instruction counts under
//! callgrind, where wall-clock benches on a shared machine are too noisy:
//!
//! ```text
//! cargo build --release -p ess --example churn
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/churn <ess|ess_h1|ess_h0.5|hashbrown_fifo> <churn|churn_batch|find_hit|find_hit_batch|find_miss|harness|memory> <N> [log2] [fill%]
//! ```
//!
//! Setup (filling the store, or driving it for two lifetimes to steady state) is the same
//! for any `N`, so instructions per operation are `(Ir(N2) - Ir(N1)) / (N2 - N1)`.
//! Workloads, as in the criterion bench (`benches/ess.rs`):
//!
//! * `churn`: steady churn, one creation per tick, lifetime = fill% of capacity in ticks;
//!   each operation is `find_create` + `write` of a fresh tag (the ESS also calls `clean`
//!   every 2^15 ticks; the baseline pops its expired FIFO front on each creation);
//! * `find_hit` / `find_miss`: lookups of random bound / unbound tags in a store filled to
//!   fill%.
//!
//! `ess` runs the store at h = 2, `ess_h1` at h = 1, `ess_h0.5` at h = 0.5.
//!
//! * `churn_batch` / `find_hit_batch` (ESS only): the same work through `find_create_batch`
//!   / `find_batch`, [`BATCH`] operations a call.
//! * `harness`: the lookup loop alone (draw a tag number, map it to a tag), to subtract from
//!   `find_hit` / `find_miss`.
//!
//! `memory` as the workload prints bytes per binding instead. Defaults: 2^20, 50%.
// bench harness: panics on setup are bugs.
#![allow(clippy::expect_used)]

// Shared with the criterion bench, which uses items this example does not.
#[allow(dead_code)]
#[path = "../benches/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Instant as Wall;

use ess::{BATCH, HashRatio, Instant, Tag};
use support::fixtures::{EssChurn, FifoChurn, ess_filled, ess_store, fifo_filled, live};
use support::{FifoStore, MISS_BASE, SplitMix, tag_of};

fn usage() -> ! {
    eprintln!(
        "usage: churn <ess|ess_h1|ess_h0.5|hashbrown_fifo> <churn|churn_batch|find_hit|find_hit_batch|find_miss|harness|memory> <N> [log2] [fill%]"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [store, work, n, rest @ ..] = args.as_slice() else {
        usage()
    };
    let n: u64 = n.parse().unwrap_or_else(|_| usage());
    let log2: u8 = rest
        .first()
        .map_or(Ok(20), |s| s.parse())
        .unwrap_or_else(|_| usage());
    let fill: u8 = rest
        .get(1)
        .map_or(Ok(50), |s| s.parse())
        .unwrap_or_else(|_| usage());
    let filled = live(log2, fill);
    let h = match store.as_str() {
        "ess_h1" => HashRatio::ONE,
        "ess_h0.5" => HashRatio::HALF,
        _ => HashRatio::TWO,
    };
    let kind = if store.starts_with("ess") {
        "ess"
    } else {
        store.as_str()
    };

    let mut rng = SplitMix::new(1);
    let offset = if work == "find_miss" { MISS_BASE } else { 0 };
    let (start, found) = match (kind, work.as_str()) {
        ("ess", "churn") => {
            let mut s = EssChurn::new(log2, fill, h);
            let start = Wall::now();
            for _ in 0..n {
                s.churn();
            }
            black_box(&s);
            (start, s.ess.occupied() as u64)
        }
        ("ess", "churn_batch") => {
            let mut s = EssChurn::new(log2, fill, h);
            let start = Wall::now();
            for _ in 0..n / BATCH as u64 {
                s.churn_batch();
            }
            black_box(&s);
            (start, s.ess.occupied() as u64)
        }
        ("ess", "find_hit_batch") => {
            let ess = ess_filled(log2, fill, h);
            let now = Instant::from_ticks(filled);
            let mut out = [None; BATCH];
            let start = Wall::now();
            let mut found = 0;
            for _ in 0..n / BATCH as u64 {
                let tags: [Tag; BATCH] = std::array::from_fn(|_| Tag(tag_of(rng.below(filled))));
                ess.find_batch(now, &tags, &mut out);
                found += black_box(&out).iter().filter(|h| h.is_some()).count() as u64;
            }
            (start, found)
        }
        ("hashbrown_fifo", "churn") => {
            let mut s = FifoChurn::new(log2, fill);
            let start = Wall::now();
            for _ in 0..n {
                s.churn();
            }
            black_box(&s);
            (start, s.store.len() as u64)
        }
        ("ess", "find_hit" | "find_miss") => {
            let ess = ess_filled(log2, fill, h);
            let now = Instant::from_ticks(filled);
            let start = Wall::now();
            let mut found = 0;
            for _ in 0..n {
                found += u64::from(
                    black_box(ess.find(now, Tag(tag_of(offset + rng.below(filled))))).is_some(),
                );
            }
            (start, found)
        }
        ("hashbrown_fifo", "find_hit" | "find_miss") => {
            let fifo = fifo_filled(log2, fill);
            let start = Wall::now();
            let mut found = 0;
            for _ in 0..n {
                found += u64::from(
                    black_box(fifo.get(filled, tag_of(offset + rng.below(filled)))).is_some(),
                );
            }
            (start, found)
        }
        (_, "harness") => {
            let start = Wall::now();
            let mut acc = 0;
            for _ in 0..n {
                acc ^= black_box(tag_of(offset + rng.below(filled)));
            }
            (start, acc)
        }
        (_, "memory") => {
            for h in [HashRatio::HALF, HashRatio::ONE, HashRatio::TWO] {
                let ess = ess_store(log2, 1, h);
                let per = ess.memory_bytes() as f64 / ess.capacity() as f64;
                println!(
                    "ess 2^{log2} h{h}: {} bytes, {per:.3} bytes per binding",
                    ess.memory_bytes()
                );
            }
            let fifo = FifoStore::new(1 << log2, 1);
            let per = fifo.memory_bytes() as f64 / (1u64 << log2) as f64;
            println!(
                "hashbrown_fifo 2^{log2}: {} bytes, {per:.3} bytes per binding",
                fifo.memory_bytes()
            );
            return;
        }
        _ => usage(),
    };
    let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
    println!("{store} {work} 2^{log2}/{fill}%: {n} ops, {ns:.1} ns/op (wall), result {found}");
}
