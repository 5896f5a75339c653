//! The ESS against what a user would pick instead, each in the same criterion group:
//!
//! * `hashbrown_fifo`: `hashbrown::HashMap<tag, (value, expiry)>` (foldhash, pre-sized) plus
//!   a `VecDeque` FIFO of expiries (`support::FifoStore`);
//! * `moka`: `moka::sync::Cache<u64, u64>` with `max_capacity` = capacity and a
//!   `time_to_live` (moka reads the real clock).
//!
//! Groups (filter with `cargo bench -p waist-ess --bench ess -- <group>`): `find_hit`,
//! `find_miss`, `find_create_existing`, `find_create_new`, `read_write`, `churn`, `batch32`,
//! `huge_pages` (the h = 2 store with its tables in 2 MiB pages beside the same store and
//! hashbrown+FIFO on the allocator's pages, at 2^20 / 50 %). Ids are
//! `<group>/<store>/2^<n>/<fill>%[/h<h>]`; baselines do not depend on h and carry none.
//!
//! Every lookup draws a random tag number from a seeded splitmix64 and maps it to a tag, so
//! lookups spread over the whole store; that costs a few ns, the same for every store.
//! `cargo test --benches` (no `--bench` flag) runs a quick matrix of small stores only.
// bench harness: criterion's entry points are undocumented items; panics on setup are bugs.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::hint::black_box;
use std::time::{Duration, Instant as Wall};

use criterion::{BenchmarkGroup, BenchmarkId, Criterion, measurement::WallTime};
use ess::{BATCH, HashRatio, Instant, Tag, Value};
use moka::sync::Cache;
use sansio::SplitMix64;
use support::fixtures::{
    EssChurn, FifoChurn, ess_filled, ess_store, fifo_filled, huge_filled, live,
};
use support::huge::{HugeReport, anon_huge_kib};
use support::{FifoStore, MISS_BASE, tag_of};

/// Measurement time per bench (warm-up 0.5 s, 20 samples): short, so the whole run takes
/// minutes on a 2-core machine; CLI flags override it.
const MEASUREMENT: Duration = Duration::from_secs(1);
/// Measurement time for moka in steady churn.
const MOKA_CHURN_MEASUREMENT: Duration = Duration::from_secs(10);
/// moka is left out at 2^24 (see BENCHMARKS.md): its fills would take about a minute and
/// up to 5 GB (about 2 µs and 337 bytes per entry).
const MOKA_MAX_LOG2: u8 = 20;
/// TTL for moka's static fills: nothing expires during a bench.
const MOKA_STATIC_TTL: Duration = Duration::from_secs(3600);

/// One point of the matrix: capacity 2^`log2`, `fill` percent, ratio `h`, and whether the
/// baselines (which do not depend on h) run at this point too.
#[derive(Clone, Copy)]
struct Point {
    log2: u8,
    fill: u8,
    h: HashRatio,
    baselines: bool,
}

impl Point {
    const fn new(log2: u8, fill: u8) -> Self {
        Point {
            log2,
            fill,
            h: HashRatio::TWO,
            baselines: true,
        }
    }

    const fn h(self, h: HashRatio) -> Self {
        Point {
            h,
            baselines: false,
            ..self
        }
    }

    fn ess_id(&self) -> BenchmarkId {
        BenchmarkId::new("ess", format!("2^{}/{}%/h{}", self.log2, self.fill, self.h))
    }

    fn base_id(&self, store: &str) -> BenchmarkId {
        BenchmarkId::new(store, format!("2^{}/{}%", self.log2, self.fill))
    }

    fn live(&self) -> u64 {
        live(self.log2, self.fill)
    }

    fn moka(&self) -> bool {
        self.baselines && self.log2 <= MOKA_MAX_LOG2
    }
}

/// find hit/miss: the full capacity × fill matrix at h = 2, then the h sweep at 2^20.
fn find_points(quick: bool) -> Vec<Point> {
    let caps: &[u8] = if quick { &[10, 16] } else { &[10, 16, 20, 24] };
    let sweep_at = if quick { 10 } else { 20 };
    let mut points: Vec<Point> = caps
        .iter()
        .flat_map(|&n| [10, 50, 95].map(|f| Point::new(n, f)))
        .collect();
    for fill in [50, 95] {
        for h in [HashRatio::HALF, HashRatio::ONE] {
            points.push(Point::new(sweep_at, fill).h(h));
        }
    }
    points
}

/// find_create, read + write: 2^20 at 50%, plus 2^10 and 2^24.
fn op_points(quick: bool) -> Vec<Point> {
    let caps: &[u8] = if quick { &[10] } else { &[10, 20, 24] };
    caps.iter().map(|&n| Point::new(n, 50)).collect()
}

fn moka_filled(p: &Point) -> Cache<u64, u64> {
    let cache = Cache::builder()
        .max_capacity(1 << p.log2)
        .time_to_live(MOKA_STATIC_TTL)
        .build();
    for i in 0..p.live() {
        cache.insert(tag_of(i), i);
    }
    cache.run_pending_tasks();
    assert_eq!(
        cache.entry_count(),
        p.live(),
        "moka kept every binding of the fill"
    );
    cache
}

/// A moka cache in steady churn under `op` (called with tag and tag number), its TTL chosen
/// so the bindings created within one TTL match the fill: TTL = live / (ops per second),
/// as the ESS's lifetime is live / (creations per tick). moka expires on the real clock and
/// its speed depends on how much it has to expire, so the TTL is found by iteration: a
/// guess from a scratch cache without expiry, then up to two corrections from the rate
/// measured over TTLs 2 to 4 of a fresh cache. moka evicts expired entries in bursts (its
/// housekeeping runs for up to its 2 s maintenance timeout, and the insert that triggers it
/// waits), so its rate swings over a cycle of about two TTLs: the rate window spans one and
/// a half cycles, and `report` prints the TTL, the ideal one from the last rate, and the
/// entry count.
struct MokaChurn {
    cache: Cache<u64, u64>,
    next: u64,
    ttl: Duration,
    ideal: Duration,
    /// `entry_count` right after the latest sample (moka's own count, which lags a little).
    seen: u64,
}

impl MokaChurn {
    fn new(p: &Point, op: fn(&Cache<u64, u64>, u64, u64)) -> Self {
        let cap = 1u64 << p.log2;
        let target = p.live();
        let scratch = Cache::builder()
            .max_capacity(cap)
            .time_to_live(MOKA_STATIC_TTL)
            .build();
        let probe = target.min(1 << 17);
        let start = Wall::now();
        for i in 0..probe {
            op(&scratch, tag_of(i), i);
        }
        let mut ttl = start.elapsed().mul_f64(target as f64 / probe as f64);
        drop(scratch);
        let mut next = 0;
        for attempt in 1.. {
            let cache = Cache::builder().max_capacity(cap).time_to_live(ttl).build();
            next = moka_run_for(&cache, op, next, ttl);
            let (ops, start) = (next, Wall::now());
            next = moka_run_for(&cache, op, next, 3 * ttl);
            let rate = (next - ops) as f64 / start.elapsed().as_secs_f64();
            let ideal = Duration::from_secs_f64(target as f64 / rate);
            let off = ideal.as_secs_f64() / ttl.as_secs_f64();
            println!(
                "moka ttl: 2^{}/{}% attempt {attempt}: ttl {ttl:?}, {rate:.0} ops/s over TTLs 2-4 -> ideal ttl {ideal:?}",
                p.log2, p.fill
            );
            if (0.8..=1.25).contains(&off) || attempt == 3 {
                let seen = cache.entry_count();
                return MokaChurn {
                    cache,
                    next,
                    ttl,
                    ideal,
                    seen,
                };
            }
            ttl = ideal;
        }
        unreachable!("the loop returns on its third attempt")
    }

    #[inline]
    fn step(&mut self, op: fn(&Cache<u64, u64>, u64, u64)) {
        op(&self.cache, tag_of(self.next), self.next);
        self.next += 1;
    }

    fn report(&self, what: &str, p: &Point) {
        let entries = self.seen;
        println!(
            "fill: {what}/moka/2^{}/{}%: ttl {:?} (ideal from the last rate {:?}), {entries} entries after the last sample = {:.1}% of capacity",
            p.log2,
            p.fill,
            self.ttl,
            self.ideal,
            100.0 * entries as f64 / (1u64 << p.log2) as f64
        );
    }
}

/// Runs `op` from tag number `next` on for `d`; returns the next tag number.
fn moka_run_for(
    cache: &Cache<u64, u64>,
    op: fn(&Cache<u64, u64>, u64, u64),
    mut next: u64,
    d: Duration,
) -> u64 {
    let start = Wall::now();
    while start.elapsed() < d {
        for _ in 0..1024 {
            op(cache, tag_of(next), next);
            next += 1;
        }
    }
    next
}

fn moka_create(cache: &Cache<u64, u64>, tag: u64, _: u64) {
    black_box(cache.entry(tag).or_insert(0));
}

fn moka_insert(cache: &Cache<u64, u64>, tag: u64, i: u64) {
    cache.insert(tag, i);
}

// ---- groups ------------------------------------------------------------------------------

fn memory(quick: bool) {
    let log2 = if quick { 10 } else { 20 };
    for h in [HashRatio::HALF, HashRatio::ONE, HashRatio::TWO] {
        let ess = ess_store(log2, 1, h);
        let per = ess.memory_bytes() as f64 / ess.capacity() as f64;
        println!(
            "memory: ess/2^{log2}/h{h}: {} bytes = {per:.3} bytes per binding",
            ess.memory_bytes()
        );
    }
    let fifo = FifoStore::new(1 << log2, 1);
    let per = fifo.memory_bytes() as f64 / f64::from(1u32 << log2);
    println!(
        "memory: hashbrown_fifo/2^{log2}: {} bytes = {per:.3} bytes per binding",
        fifo.memory_bytes()
    );
}

fn find(c: &mut Criterion, quick: bool) {
    for p in find_points(quick) {
        let n = p.live();
        let now = Instant::from_ticks(n);
        let (mut ess, mut fifo, mut moka) = (None, None, None);
        for (group, offset) in [("find_hit", 0), ("find_miss", MISS_BASE)] {
            let mut g = c.benchmark_group(group);
            g.bench_function(p.ess_id(), |b| {
                let ess = ess.get_or_insert_with(|| ess_filled(p.log2, p.fill, p.h));
                let mut rng = SplitMix64::new(1);
                b.iter(|| black_box(ess.find(now, Tag(tag_of(offset + rng.below(n))))));
            });
            if p.baselines {
                g.bench_function(p.base_id("hashbrown_fifo"), |b| {
                    let fifo = fifo.get_or_insert_with(|| fifo_filled(p.log2, p.fill));
                    let mut rng = SplitMix64::new(1);
                    b.iter(|| black_box(fifo.get(n, tag_of(offset + rng.below(n)))));
                });
            }
            if p.moka() {
                g.bench_function(p.base_id("moka"), |b| {
                    let moka = moka.get_or_insert_with(|| moka_filled(&p));
                    let mut rng = SplitMix64::new(1);
                    b.iter(|| black_box(moka.get(&tag_of(offset + rng.below(n)))));
                });
            }
            g.finish();
        }
    }
}

fn find_create_existing(c: &mut Criterion, quick: bool) {
    let mut g = c.benchmark_group("find_create_existing");
    for p in op_points(quick) {
        let n = p.live();
        let now = Instant::from_ticks(n);
        let (mut ess, mut fifo, mut moka) = (None, None, None);
        g.bench_function(p.ess_id(), |b| {
            let ess = ess.get_or_insert_with(|| ess_filled(p.log2, p.fill, p.h));
            let mut rng = SplitMix64::new(2);
            b.iter(|| black_box(ess.find_create(now, Tag(tag_of(rng.below(n))))));
        });
        g.bench_function(p.base_id("hashbrown_fifo"), |b| {
            let fifo = fifo.get_or_insert_with(|| fifo_filled(p.log2, p.fill));
            let mut rng = SplitMix64::new(2);
            b.iter(|| {
                black_box(
                    fifo.find_create(n, tag_of(rng.below(n)))
                        .map(|(v, new)| (*v, new)),
                )
            });
        });
        if p.moka() {
            g.bench_function(p.base_id("moka"), |b| {
                let moka = moka.get_or_insert_with(|| moka_filled(&p));
                let mut rng = SplitMix64::new(2);
                b.iter(|| black_box(moka.entry(tag_of(rng.below(n))).or_insert(0)));
            });
        }
    }
    g.finish();
}

fn read_write(c: &mut Criterion, quick: bool) {
    let mut g = c.benchmark_group("read_write");
    for p in op_points(quick) {
        let n = p.live();
        let now = Instant::from_ticks(n);
        let (mut ess, mut fifo, mut moka) = (None, None, None);
        g.bench_function(p.ess_id(), |b| {
            let ess = ess.get_or_insert_with(|| ess_filled(p.log2, p.fill, p.h));
            let mut rng = SplitMix64::new(3);
            b.iter(|| {
                if let Some(h) = ess.find(now, Tag(tag_of(rng.below(n)))) {
                    let v = ess.read(h);
                    ess.write(h, Value(v.0 + 1));
                }
            });
        });
        g.bench_function(p.base_id("hashbrown_fifo"), |b| {
            let fifo = fifo.get_or_insert_with(|| fifo_filled(p.log2, p.fill));
            let mut rng = SplitMix64::new(3);
            b.iter(|| {
                if let Some(v) = fifo.get_mut(n, tag_of(rng.below(n))) {
                    *v += 1;
                }
            });
        });
        if p.moka() {
            // moka has no write-through-handle: `insert` replaces the entry (and restarts
            // its TTL, which the ESS never does).
            g.bench_function(p.base_id("moka"), |b| {
                let moka = moka.get_or_insert_with(|| moka_filled(&p));
                let mut rng = SplitMix64::new(3);
                b.iter(|| {
                    let tag = tag_of(rng.below(n));
                    if let Some(v) = moka.get(&tag) {
                        moka.insert(tag, v + 1);
                    }
                });
            });
        }
    }
    g.finish();
}

/// Runs `bench` for each contestant in steady churn at `p`; `ess_h` are the ratios to run
/// the ESS at (the first one with the baselines' point).
fn steady(
    g: &mut BenchmarkGroup<'_, WallTime>,
    what: &str,
    p: Point,
    ess_h: &[HashRatio],
    ess_op: fn(&mut EssChurn),
    fifo_op: fn(&mut FifoChurn),
    moka_op: fn(&Cache<u64, u64>, u64, u64),
) {
    for &h in ess_h {
        let p = Point { h, ..p };
        let mut s = None;
        g.bench_function(p.ess_id(), |b| {
            let s = s.get_or_insert_with(|| EssChurn::new(p.log2, p.fill, p.h));
            b.iter(|| ess_op(s));
        });
        if let Some(s) = &s {
            let (occ, cap) = (s.ess.occupied(), s.ess.capacity());
            println!(
                "fill: {what}/ess/2^{}/{}%/h{h}: {occ} entries = {:.1}% of capacity, {} refused",
                p.log2,
                p.fill,
                100.0 * occ as f64 / cap as f64,
                s.ess.counters().refused
            );
        }
    }
    let mut s = None;
    g.bench_function(p.base_id("hashbrown_fifo"), |b| {
        let s = s.get_or_insert_with(|| FifoChurn::new(p.log2, p.fill));
        b.iter(|| fifo_op(s));
    });
    if let Some(s) = &s {
        let (len, cap) = (s.store.len(), 1u64 << p.log2);
        println!(
            "fill: {what}/hashbrown_fifo/2^{}/{}%: {len} entries = {:.1}% of capacity",
            p.log2,
            p.fill,
            100.0 * len as f64 / cap as f64
        );
    }
    if p.moka() {
        // moka evicts expired entries in bursts that can stall an insert for a second or
        // more: measure over several TTLs so the bursts are sampled fairly.
        g.measurement_time(MOKA_CHURN_MEASUREMENT);
        let mut s = None;
        g.bench_function(p.base_id("moka"), |b| {
            let s = s.get_or_insert_with(|| MokaChurn::new(&p, moka_op));
            b.iter(|| s.step(moka_op));
            s.seen = s.cache.entry_count();
        });
        g.measurement_time(MEASUREMENT);
        if let Some(s) = &s {
            s.report(what, &p);
        }
    }
}

fn find_create_new(c: &mut Criterion, quick: bool) {
    let mut g = c.benchmark_group("find_create_new");
    for p in op_points(quick) {
        steady(
            &mut g,
            "find_create_new",
            p,
            &[HashRatio::TWO],
            |s| {
                black_box(s.create());
            },
            |s| {
                black_box(s.create());
            },
            moka_create,
        );
    }
    g.finish();
}

fn churn(c: &mut Criterion, quick: bool) {
    let mut g = c.benchmark_group("churn");
    let p = Point::new(if quick { 10 } else { 20 }, 50);
    let hs = [HashRatio::TWO, HashRatio::ONE, HashRatio::HALF];
    steady(
        &mut g,
        "churn",
        p,
        &hs,
        EssChurn::churn,
        FifoChurn::churn,
        moka_insert,
    );
    g.finish();
}

/// Batches of [`BATCH`] operations at 2^20 / 50 % / h = 2 (2^10 when quick): the ESS one
/// call at a time, the ESS's batch calls, and hashbrown+FIFO one at a time (it has no batch
/// form). Every iteration is a whole batch, so the times compare directly.
fn batched(c: &mut Criterion, quick: bool) {
    let p = Point::new(if quick { 10 } else { 20 }, 50);
    let n = p.live();
    let now = Instant::from_ticks(n);
    let mut g = c.benchmark_group("batch32");
    {
        let ess = ess_filled(p.log2, p.fill, p.h);
        let fifo = fifo_filled(p.log2, p.fill);
        let id = |s: &str| {
            BenchmarkId::new(format!("find_hit/{s}"), format!("2^{}/{}%", p.log2, p.fill))
        };
        g.bench_function(id("ess"), |b| {
            let mut rng = SplitMix64::new(1);
            b.iter(|| {
                for _ in 0..BATCH {
                    black_box(ess.find(now, Tag(tag_of(rng.below(n)))));
                }
            });
        });
        g.bench_function(id("ess_batch"), |b| {
            let mut rng = SplitMix64::new(1);
            let mut out = [None; BATCH];
            b.iter(|| {
                let tags: [Tag; BATCH] = std::array::from_fn(|_| Tag(tag_of(rng.below(n))));
                ess.find_batch(now, &tags, &mut out);
                black_box(&out);
            });
        });
        g.bench_function(id("hashbrown_fifo"), |b| {
            let mut rng = SplitMix64::new(1);
            b.iter(|| {
                for _ in 0..BATCH {
                    black_box(fifo.get(n, tag_of(rng.below(n))));
                }
            });
        });
    }
    let id = |s: &str| BenchmarkId::new(format!("churn/{s}"), format!("2^{}/{}%", p.log2, p.fill));
    let mut s = None;
    g.bench_function(id("ess"), |b| {
        let s = s.get_or_insert_with(|| EssChurn::new(p.log2, p.fill, p.h));
        b.iter(|| {
            for _ in 0..BATCH {
                s.churn();
            }
        });
    });
    drop(s);
    let mut s = None;
    g.bench_function(id("ess_batch"), |b| {
        let s = s.get_or_insert_with(|| EssChurn::new(p.log2, p.fill, p.h));
        b.iter(|| s.churn_batch());
    });
    drop(s);
    let mut s = None;
    g.bench_function(id("hashbrown_fifo"), |b| {
        let s = s.get_or_insert_with(|| FifoChurn::new(p.log2, p.fill));
        b.iter(|| {
            for _ in 0..BATCH {
                s.churn();
            }
        });
    });
    g.finish();
}

/// Prints how much of a huge-page store's tables the kernel backed with 2 MiB pages.
fn report_huge(what: &str, r: &HugeReport) {
    match r.huge_kib() {
        Some((huge, all)) => {
            println!("huge pages: {what}: {huge} KiB in the mappings holding the {all} KiB tables")
        }
        None => println!("huge pages: {what}: unknown (no /proc/self/smaps)"),
    }
}

/// The h = 2 store with its tables in 2 MiB pages (`support::huge`) against the same store
/// on the allocator's pages and hashbrown+FIFO, which stays on the allocator's pages as a
/// user's would: find hit and steady churn, one call each, 2^20 / 50 % (2^10 when quick).
fn huge_pages(c: &mut Criterion, quick: bool) {
    let p = Point::new(if quick { 10 } else { 20 }, 50);
    let n = p.live();
    let now = Instant::from_ticks(n);
    let mut g = c.benchmark_group("huge_pages");
    let id = |store: &str, work: &str| {
        let h = if store == "hashbrown_fifo" {
            String::new()
        } else {
            format!("/h{}", p.h)
        };
        BenchmarkId::new(store, format!("{work}/2^{}/{}%{h}", p.log2, p.fill))
    };
    let (ess, report) = huge_filled(p.log2, p.fill, p.h);
    report_huge("find_hit", &report);
    g.bench_function(id("ess_huge", "find_hit"), |b| {
        let mut rng = SplitMix64::new(1);
        b.iter(|| black_box(ess.find(now, Tag(tag_of(rng.below(n))))));
    });
    // (The huge-page tables are leaked, see `support::huge`: 34 MiB for the bench's run.)
    let plain = ess_filled(p.log2, p.fill, p.h);
    g.bench_function(id("ess", "find_hit"), |b| {
        let mut rng = SplitMix64::new(1);
        b.iter(|| black_box(plain.find(now, Tag(tag_of(rng.below(n))))));
    });
    drop(plain);
    let fifo = fifo_filled(p.log2, p.fill);
    if let Some((_, kib)) = fifo.table_addr().and_then(anon_huge_kib) {
        println!("huge pages: hashbrown table's mapping: {kib} KiB");
    }
    g.bench_function(id("hashbrown_fifo", "find_hit"), |b| {
        let mut rng = SplitMix64::new(1);
        b.iter(|| black_box(fifo.get(n, tag_of(rng.below(n)))));
    });
    drop(fifo);
    let (mut s, report) = EssChurn::new_huge(p.log2, p.fill, p.h);
    report_huge("churn", &report);
    g.bench_function(id("ess_huge", "churn"), |b| b.iter(|| s.churn()));
    let mut s = EssChurn::new(p.log2, p.fill, p.h);
    g.bench_function(id("ess", "churn"), |b| b.iter(|| s.churn()));
    drop(s);
    let mut s = FifoChurn::new(p.log2, p.fill);
    g.bench_function(id("hashbrown_fifo", "churn"), |b| b.iter(|| s.churn()));
    g.finish();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not and wants a quick run.
    let quick = !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--test");
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(MEASUREMENT)
        .sample_size(20)
        .configure_from_args();
    memory(quick);
    churn(&mut c, quick);
    find(&mut c, quick);
    find_create_existing(&mut c, quick);
    find_create_new(&mut c, quick);
    read_write(&mut c, quick);
    batched(&mut c, quick);
    huge_pages(&mut c, quick);
    c.final_summary();
}
