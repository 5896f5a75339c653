//! Runs `N` operations of one workload on one store, for instruction counts under
//! callgrind, where wall-clock benches on a shared machine are too noisy:
//!
//! ```text
//! cargo build --release -p ess --example churn
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/churn <ess|ess_h1|ess_h0.5|hashbrown_fifo>[_huge] <churn|churn_batch|find_hit|find_hit_batch|find_miss|harness|memory> <N> [log2] [fill%]
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
//! `ess` runs the store at h = 2, `ess_h1` at h = 1, `ess_h0.5` at h = 0.5. A `_huge`
//! suffix (`ess_huge`, `ess_h1_huge`, ...) puts the store's tables in 2 MiB pages
//! (`benches/support/huge.rs`: anonymous maps advised `MADV_HUGEPAGE`, lent as
//! `BorrowedTables`); the output line then ends with the KiB the kernel
//! backed with huge pages (`AnonHugePages` in `/proc/self/smaps`) out of the tables' size.
//! `hashbrown_fifo_huge` is `hashbrown_fifo` under a name for runs in an environment that
//! gives it huge pages (THP `always`, or `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which has
//! malloc advise its mappings): hashbrown takes its memory from the global allocator, so the
//! example cannot ask for them itself. Every hashbrown line reports the `AnonHugePages` of its
//! table's mapping, so it shows what the run got.
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

use ess::{BATCH, Ess, HashRatio, Instant, Tables, Tag};
use sansio::SplitMix64;
use support::fixtures::{
    EssChurn, FifoChurn, ess_filled, ess_store, fifo_filled, huge_filled, live,
};
use support::huge::{HugeReport, anon_huge_kib};
use support::{FifoStore, MISS_BASE, tag_of};

/// Steady churn, one call per operation: returns when it started and the occupancy.
fn churn<T: Tables>(mut s: EssChurn<T>, n: u64) -> (Wall, u64) {
    let start = Wall::now();
    for _ in 0..n {
        s.churn();
    }
    black_box(&s);
    (start, s.ess.occupied() as u64)
}

/// Steady churn through `find_create_batch`.
fn churn_batch<T: Tables>(mut s: EssChurn<T>, n: u64) -> (Wall, u64) {
    let start = Wall::now();
    for _ in 0..n / BATCH as u64 {
        s.churn_batch();
    }
    black_box(&s);
    (start, s.ess.occupied() as u64)
}

/// `n` lookups, one call each, of tag numbers `offset + 0..filled` at random.
fn finds<T: Tables>(ess: &Ess<T>, n: u64, filled: u64, offset: u64) -> (Wall, u64) {
    let mut rng = SplitMix64::new(1);
    let now = Instant::from_ticks(filled);
    let start = Wall::now();
    let mut found = 0;
    for _ in 0..n {
        found +=
            u64::from(black_box(ess.find(now, Tag(tag_of(offset + rng.below(filled))))).is_some());
    }
    (start, found)
}

/// `n` lookups of bound tags through `find_batch`.
fn finds_batch<T: Tables>(ess: &Ess<T>, n: u64, filled: u64) -> (Wall, u64) {
    let mut rng = SplitMix64::new(1);
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

fn usage() -> ! {
    eprintln!(
        "usage: churn <ess|ess_h1|ess_h0.5|hashbrown_fifo>[_huge] <churn|churn_batch|find_hit|find_hit_batch|find_miss|harness|memory> <N> [log2] [fill%]"
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
    let (base, huge) = match store.strip_suffix("_huge") {
        Some(base) => (base, true),
        None => (store.as_str(), false),
    };
    let h = match base {
        "ess_h1" => HashRatio::ONE,
        "ess_h0.5" => HashRatio::HALF,
        _ => HashRatio::TWO,
    };
    let kind = if base.starts_with("ess") { "ess" } else { base };

    let mut rng = SplitMix64::new(1);
    let offset = if work == "find_miss" { MISS_BASE } else { 0 };
    let mut report: Option<HugeReport> = None;
    // hashbrown's table mapping and its KiB in huge pages.
    let mut table: Option<(usize, u64)> = None;
    let (start, found) = match (kind, huge, work.as_str()) {
        ("ess", false, "churn") => churn(EssChurn::new(log2, fill, h), n),
        ("ess", true, "churn") => {
            let (s, r) = EssChurn::new_huge(log2, fill, h);
            report = Some(r);
            churn(s, n)
        }
        ("ess", false, "churn_batch") => churn_batch(EssChurn::new(log2, fill, h), n),
        ("ess", true, "churn_batch") => {
            let (s, r) = EssChurn::new_huge(log2, fill, h);
            report = Some(r);
            churn_batch(s, n)
        }
        ("ess", false, "find_hit_batch") => finds_batch(&ess_filled(log2, fill, h), n, filled),
        ("ess", true, "find_hit_batch") => {
            let (ess, r) = huge_filled(log2, fill, h);
            report = Some(r);
            finds_batch(&ess, n, filled)
        }
        ("ess", false, "find_hit" | "find_miss") => {
            finds(&ess_filled(log2, fill, h), n, filled, offset)
        }
        ("ess", true, "find_hit" | "find_miss") => {
            let (ess, r) = huge_filled(log2, fill, h);
            report = Some(r);
            finds(&ess, n, filled, offset)
        }
        ("hashbrown_fifo", _, "churn") => {
            let mut s = FifoChurn::new(log2, fill);
            // Pre-sized: the table stays where it is.
            table = s.store.table_addr().and_then(anon_huge_kib);
            let start = Wall::now();
            for _ in 0..n {
                s.churn();
            }
            black_box(&s);
            (start, s.store.len() as u64)
        }
        ("hashbrown_fifo", _, "find_hit" | "find_miss") => {
            let fifo = fifo_filled(log2, fill);
            table = fifo.table_addr().and_then(anon_huge_kib);
            let start = Wall::now();
            let mut found = 0;
            for _ in 0..n {
                found += u64::from(
                    black_box(fifo.get(filled, tag_of(offset + rng.below(filled)))).is_some(),
                );
            }
            (start, found)
        }
        (_, false, "harness") => {
            let start = Wall::now();
            let mut acc = 0;
            for _ in 0..n {
                acc ^= black_box(tag_of(offset + rng.below(filled)));
            }
            (start, acc)
        }
        (_, false, "memory") => {
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
    let huge = report.map_or(String::new(), |r| match r.huge_kib() {
        Some((huge, all)) => {
            format!(
                ", tables in huge pages: {huge} KiB in the mappings holding the {all} KiB tables"
            )
        }
        None => ", tables in huge pages: unknown (no /proc/self/smaps)".to_string(),
    });
    let huge = match table {
        Some((_, kib)) => {
            format!("{huge}, hashbrown table's mapping in huge pages: {kib} KiB")
        }
        _ => huge,
    };
    println!(
        "{store} {work} 2^{log2}/{fill}%: {n} ops, {ns:.1} ns/op (wall), result {found}{huge}"
    );
}
