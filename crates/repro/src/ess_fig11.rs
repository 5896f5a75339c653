//! ESP paper Fig. 11: the average `find()` cost as the store fills, for h = 0.5, 1, 2.
//!
//! The paper plots latency on the IXP1200; latency there is proportional to the chain length
//! walked (Table 1: `find` = 5 × cl 32-bit SRAM accesses, 0.5 µs at cl = 1). We measure the
//! machine-independent quantity — tag-table entries examined per `find` — on our store, turn
//! it into IXP1200 microseconds with Table 1's 0.5 µs per entry, and also time `find` here.

use std::hint::black_box;
use std::io::Write;
use std::time::Instant as WallClock;

use anyhow::Context;
use ess::{Ess, EssConfig, HashKey, HashRatio, Instant, Tag};

use crate::common::Options;
use crate::plot::{self, Chart, Series};
use sansio::SplitMix64;

/// IXP1200 microseconds per chain entry examined (Table 1: find = 0.5 µs at cl = 1).
pub const IXP_US_PER_ENTRY: f64 = 0.5;

/// One measured point.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// h.
    pub h: HashRatio,
    /// Fraction of the store filled.
    pub fill: f64,
    /// Mean entries examined by a `find` that hits.
    pub hit_probes: f64,
    /// Mean entries examined by a `find` that misses.
    pub miss_probes: f64,
    /// Nanoseconds per hitting `find` on this machine.
    pub hit_ns: f64,
}

impl Point {
    /// Load factor α = fill / h.
    pub fn load(&self) -> f64 {
        self.fill * 4.0 / f64::from(self.h.quarters())
    }

    /// Separate chaining, uniform hashing: a hit examines 1 + α/2 entries.
    pub fn hit_theory(&self) -> f64 {
        1.0 + self.load() / 2.0
    }

    /// A miss examines the whole chain: α entries.
    pub fn miss_theory(&self) -> f64 {
        self.load()
    }
}

/// Measures every point and prints the table; writes `ess-fig11.png` and `.csv`.
///
/// # Errors
///
/// If the output or the plot cannot be written.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Point>> {
    let capacity = 1usize << opts.log2;
    let ratios = [HashRatio::HALF, HashRatio::ONE, HashRatio::TWO];
    writeln!(
        out,
        "ess-fig11: mean entries examined per find() vs fill (ESP paper Fig. 11)"
    )?;
    writeln!(
        out,
        "store 2^{} = {capacity} bindings, keyed hash, seed {:#x}",
        opts.log2, opts.seed
    )?;
    writeln!(
        out,
        "IXP µs = entries × {IXP_US_PER_ENTRY} µs (paper Table 1: find = 5·cl accesses, 0.5 µs at cl = 1)"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "   h  fill | hit: ours  theory  IXP µs | miss: ours  theory | ns/find here"
    )?;
    let mut points = Vec::new();
    for h in ratios {
        for tenth in 1..=10 {
            let p = measure(opts, h, f64::from(tenth) / 10.0, capacity)?;
            writeln!(
                out,
                "{:>4} {:>4.0}% | {:>9.3} {:>7.3} {:>7.2} | {:>10.3} {:>7.3} | {:>8.1}",
                h.to_string(),
                p.fill * 100.0,
                p.hit_probes,
                p.hit_theory(),
                p.hit_probes * IXP_US_PER_ENTRY,
                p.miss_probes,
                p.miss_theory(),
                p.hit_ns,
            )?;
            points.push(p);
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "paper beside ours (the paper gives Fig. 11 as a plot; its text states):"
    )?;
    for (h, claim) in [
        (
            HashRatio::TWO,
            "h = 2: average find time stays constant even when the store is full",
        ),
        (
            HashRatio::HALF,
            "h = 0.5: average find time stays below 3 µs when full",
        ),
    ] {
        let empty = points
            .iter()
            .find(|p| p.h == h)
            .map_or(0.0, |p| p.hit_probes);
        let full = points
            .iter()
            .rev()
            .find(|p| p.h == h)
            .map_or(0.0, |p| p.hit_probes);
        writeln!(
            out,
            "  {claim}\n    ours: {:.3} entries at 10% → {:.3} at 100% = {:.2} → {:.2} IXP µs",
            empty,
            full,
            empty * IXP_US_PER_ENTRY,
            full * IXP_US_PER_ENTRY,
        )?;
    }

    let csv = opts.dir.join("ess-fig11.csv");
    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("creating {}", opts.dir.display()))?;
    let mut f =
        std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    writeln!(
        f,
        "h,fill,hit_probes,hit_theory,miss_probes,miss_theory,ixp_us,hit_ns"
    )?;
    for p in &points {
        writeln!(
            f,
            "{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.2}",
            p.h,
            p.fill,
            p.hit_probes,
            p.hit_theory(),
            p.miss_probes,
            p.miss_theory(),
            p.hit_probes * IXP_US_PER_ENTRY,
            p.hit_ns
        )?;
    }
    let mut series = Vec::new();
    for h in ratios {
        let pts = points.iter().filter(|p| p.h == h);
        series.push(Series {
            label: format!("h = {h}, ours"),
            points: pts
                .clone()
                .map(|p| (p.fill * 100.0, p.hit_probes))
                .collect(),
            dashed: false,
        });
        series.push(Series {
            label: format!("h = {h}, 1 + α/2"),
            points: pts.map(|p| (p.fill * 100.0, p.hit_theory())).collect(),
            dashed: true,
        });
    }
    let png = opts.dir.join("ess-fig11.png");
    plot::draw(
        &Chart {
            title: format!(
                "ESS find(): entries examined vs fill (2^{} store)",
                opts.log2
            ),
            x_label: "store filled (%)".into(),
            y_label: "mean entries examined per hit".into(),
            log_y: false,
            series,
        },
        &png,
    )?;
    writeln!(out, "\nwrote {} and {}", png.display(), csv.display())?;
    Ok(points)
}

fn measure(opts: &Options, h: HashRatio, fill: f64, capacity: usize) -> anyhow::Result<Point> {
    let key = HashKey::from_seed(opts.seed ^ u64::from(h.quarters()));
    let config = EssConfig::new(opts.log2, 1 << 20, 1, key)?.with_hash_ratio(h);
    let mut ess = Ess::new(config);
    let mut rng = SplitMix64::new(opts.seed.wrapping_mul(31).wrapping_add(fill.to_bits()));
    let n = ((capacity as f64) * fill).round() as usize;
    let now = Instant::ZERO;
    let mut tags = Vec::with_capacity(n);
    while tags.len() < n {
        let t = Tag(rng.next_u64());
        if ess.find_create(now, t)?.is_new() {
            tags.push(t);
        }
    }
    let hits: u64 = tags
        .iter()
        .map(|&t| u64::from(ess.probe(now, t).entries_examined))
        .sum();
    let misses_n = capacity.clamp(1 << 10, 1 << 16);
    let misses: u64 = (0..misses_n)
        .map(|_| u64::from(ess.probe(now, Tag(rng.next_u64())).entries_examined))
        .sum();
    let rounds = (1 << 21) / tags.len().max(1) + 1;
    let start = WallClock::now();
    for _ in 0..rounds {
        for &t in &tags {
            black_box(ess.find(now, black_box(t)));
        }
    }
    let hit_ns = start.elapsed().as_nanos() as f64 / (rounds * tags.len().max(1)) as f64;
    Ok(Point {
        h,
        fill,
        hit_probes: hits as f64 / tags.len().max(1) as f64,
        miss_probes: misses as f64 / misses_n as f64,
        hit_ns,
    })
}
