//! ESP paper Fig. 8 (§4.3.2): the probability that a random set of IDmaps is collision-free.
//!
//! A set I of identifiers is *collision-free* when no element's bits all lie in the union of
//! the others' bits: then a Bloom filter recording I never takes a member for a duplicate,
//! whatever the order of arrival. The paper plots this probability, by simulation, against
//! |I| for several bitmap sizes m and hash counts k; our copy of the paper lacks the image, so
//! we draw m ∈ {128, 256, 512} × k ∈ {4, 8, 11, 16} for n = 1…100 and single out the §4.3
//! experiment's choice: m = 512, k = 11 for a tree whose widest node has 40 children.
//!
//! **Ours (simulated).** Each simulated node has its own secret key
//! (`HashKey::from_seed` of a seeded [`SplitMix64`] draw) and the IDmap
//! [`IdMap::for_node`] gives it — the generator our routers use — so the curve describes the
//! IDmaps the implementation really sends. A set is checked in O(n) with prefix and suffix
//! ORs: element i is covered when it is a subset of `prefix[i] | suffix[i+1]`.
//!
//! **Model (analytic).** Offsets are drawn with replacement, so one element has J distinct
//! bits with
//!
//! ```text
//! P(J = j) = C(m, j) · j! · S(k, j) / m^k        (S = Stirling numbers of the second kind)
//! ```
//!
//! computed by the recurrence "a draw hits a new bit with probability (m − j)/m". The other
//! n − 1 elements together are K = k(n − 1) uniform draws, independent of this element, and
//! they cover a fixed set of j bits with probability
//!
//! ```text
//! C(j, K) = Σ_{l=0..j} (−1)^l · C(j, l) · (1 − l/m)^K
//! ```
//!
//! (computed by the same kind of recurrence, which stays exact where the alternating sum
//! would cancel). So one element is covered by the rest with probability
//!
//! ```text
//! p_cover(n) = Σ_j P(J = j) · C(j, k(n − 1))
//!            ≈ Σ_j P(J = j) · (1 − (1 − 1/m)^{k(n−1)})^j   (bits taken as covered independently)
//! ```
//!
//! The first line is exact for one element; we use it. Treating the n elements' events as
//! independent gives the model
//!
//! ```text
//! P(collision-free) ≈ (1 − p_cover(n))^n
//! ```
//!
//! which is an approximation — the events share draws — and the run prints how far it is
//! from the simulation (largest |ours − model| over n, per curve). That figure includes the
//! simulation's own error, ±0.011 (one standard error) at P = ½ with the default 2000 sets;
//! with 40 000 sets per point the model's largest error was 0.015 for k = 4 and at most
//! 0.012 for k ≥ 8 (0.006 for m = 512), and at the paper's point (512, 11, 40) the two
//! agreed to 0.001. For n = 2 there is an
//! exact value: two random k-offset sets A, B are collision-free unless A ⊆ B or B ⊆ A, so
//! P = 1 − 2·P(A ⊆ B) + P(A = B) with P(A ⊆ B) = Σ_j P(J = j)·C(j, k) and
//! P(A = B) = Σ_j P(J = j)² / C(m, j) ([`exact_pair`]); the tests check the generator
//! against it.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use esp_proto::idmap::IdMap;
use ess::HashKey;

use crate::common::{Options, Progress};
use crate::plot::{self, Chart, Series};
use sansio::SplitMix64;

/// Bitmap sizes m drawn, in bits (whole 64-bit words, as [`IdMap`] needs).
pub const BITS: [u32; 3] = [128, 256, 512];

/// Hash counts k drawn.
pub const HASHES: [u8; 4] = [4, 8, 11, 16];

/// Largest set size n drawn.
pub const MAX_SET: usize = 100;

/// Random sets simulated per point unless told otherwise.
pub const DEFAULT_SETS: u32 = 2000;

/// The paper's §4.3 experiment: a 512-bit map, k = 11, at most 40 children per node.
pub const PAPER_POINT: (u32, u8, usize) = (512, 11, 40);

/// Set sizes printed in the table (the CSV has every n).
const ROWS: [usize; 8] = [5, 10, 20, 30, 40, 50, 75, 100];

/// The curves the PNG draws, ours and model each (six, so each pair shares a colour).
const PLOTTED: [(u32, u8); 6] = [
    (128, 4),
    (128, 11),
    (256, 4),
    (256, 11),
    (512, 4),
    (512, 11),
];

/// Computation ID every simulated node derives its IDmap for.
const CID: u32 = 1;

/// One curve of Fig. 8: P(collision-free) against n for one (m, k).
#[derive(Clone, Debug)]
pub struct Curve {
    /// Bitmap size in bits.
    pub m: u32,
    /// Offsets per IDmap.
    pub k: u8,
    /// Random sets simulated per point.
    pub sets: u32,
    /// Simulated P(collision-free) for n = 1, 2, … (index n − 1).
    pub ours: Vec<f64>,
    /// [`model`] for the same n.
    pub model: Vec<f64>,
}

impl Curve {
    /// Simulated P(collision-free) at set size `n` (0 past the end).
    pub fn ours_at(&self, n: usize) -> f64 {
        n.checked_sub(1)
            .and_then(|i| self.ours.get(i))
            .copied()
            .unwrap_or(0.0)
    }

    /// Model P(collision-free) at set size `n` (0 past the end).
    pub fn model_at(&self, n: usize) -> f64 {
        n.checked_sub(1)
            .and_then(|i| self.model.get(i))
            .copied()
            .unwrap_or(0.0)
    }

    /// The largest |ours − model| and the n where it occurs.
    pub fn max_diff(&self) -> (f64, usize) {
        self.ours
            .iter()
            .zip(&self.model)
            .enumerate()
            .map(|(i, (o, m))| ((o - m).abs(), i + 1))
            .fold((0.0, 0), |best, d| if d.0 > best.0 { d } else { best })
    }

    /// Standard error of the simulated value at `n` (binomial, `sets` trials).
    pub fn std_err_at(&self, n: usize) -> f64 {
        let p = self.ours_at(n);
        (p * (1.0 - p) / f64::from(self.sets.max(1))).sqrt()
    }
}

/// Whether no map in `maps` is a subset of the union of the others (O(n): prefix and suffix
/// ORs). An empty or one-element set is collision-free when its maps are non-empty.
pub fn collision_free(maps: &[IdMap]) -> bool {
    let Some(first) = maps.first() else {
        return true;
    };
    let empty = IdMap::empty(first.words());
    // suffix[i] = OR of maps[i..]; suffix[n] is empty.
    let mut suffix = vec![empty; maps.len() + 1];
    for (i, m) in maps.iter().enumerate().rev() {
        let mut s = suffix.get(i + 1).copied().unwrap_or(empty);
        s.union_with(m);
        if let Some(slot) = suffix.get_mut(i) {
            *slot = s;
        }
    }
    let mut prefix = empty;
    for (m, after) in maps.iter().zip(suffix.iter().skip(1)) {
        let mut others = prefix;
        others.union_with(after);
        if m.is_subset_of(&others) {
            return false;
        }
        prefix.union_with(m);
    }
    true
}

/// The fraction of `sets` random sets of `n` node IDmaps (`k` offsets in `m` bits, one fresh
/// key per node drawn from `rng`) that are collision-free.
///
/// # Panics
///
/// If `m` is not 64, 128, …, 512.
pub fn simulate(m: u32, k: u8, n: usize, sets: u32, rng: &mut SplitMix64) -> f64 {
    assert!(
        m.is_multiple_of(64) && (64..=512).contains(&m),
        "m = {m} is not a whole number of words up to 512"
    );
    let words = (m / 64) as u8;
    let mut maps = Vec::with_capacity(n);
    let mut free = 0u32;
    for _ in 0..sets {
        maps.clear();
        maps.extend(
            (0..n).map(|_| IdMap::for_node(&HashKey::from_seed(rng.next_u64()), CID, k, words)),
        );
        free += u32::from(collision_free(&maps));
    }
    f64::from(free) / f64::from(sets.max(1))
}

/// P(J = j) for j = 0..=k: the number of distinct bits among `k` uniform draws from `m`.
pub fn distinct_bits(m: u32, k: u8) -> Vec<f64> {
    let m = f64::from(m);
    let mut p = vec![0.0; usize::from(k) + 1];
    if let Some(p0) = p.first_mut() {
        *p0 = 1.0;
    }
    for _ in 0..k {
        // In place, high j first: j stays with probability j/m, moves up with (m − j)/m.
        for j in (0..p.len()).rev() {
            let stay = p.get(j).copied().unwrap_or(0.0) * j as f64 / m;
            let up = j
                .checked_sub(1)
                .and_then(|i| p.get(i))
                .map_or(0.0, |q| q * (m - (j - 1) as f64) / m);
            if let Some(slot) = p.get_mut(j) {
                *slot = stay + up;
            }
        }
    }
    p
}

/// P(`draws` uniform draws from `m` bits hit every bit of a fixed set of `j` bits).
pub fn covered(m: u32, j: usize, draws: u64) -> f64 {
    let m = f64::from(m);
    // c[h] = P(h of the j bits hit so far).
    let mut c = vec![0.0; j + 1];
    if let Some(c0) = c.first_mut() {
        *c0 = 1.0;
    }
    for _ in 0..draws {
        for h in (0..=j).rev() {
            let stay = c.get(h).copied().unwrap_or(0.0) * (1.0 - (j - h) as f64 / m);
            let up = h
                .checked_sub(1)
                .and_then(|i| c.get(i))
                .map_or(0.0, |q| q * (j - (h - 1)) as f64 / m);
            if let Some(slot) = c.get_mut(h) {
                *slot = stay + up;
            }
        }
    }
    c.get(j).copied().unwrap_or(0.0)
}

/// P(one element's bits all lie in the union of `n − 1` others'): exact, see the module doc.
pub fn p_cover(m: u32, k: u8, n: usize) -> f64 {
    let draws = u64::from(k) * (n.max(1) - 1) as u64;
    distinct_bits(m, k)
        .iter()
        .enumerate()
        .skip(1)
        .map(|(j, pj)| pj * covered(m, j, draws))
        .sum()
}

/// The model: P(a set of `n` is collision-free) ≈ (1 − [`p_cover`])^n, elements taken as
/// independent (an approximation; see the module doc).
pub fn model(m: u32, k: u8, n: usize) -> f64 {
    (n as f64 * (-p_cover(m, k, n)).ln_1p()).exp()
}

/// The exact P(collision-free) of two random `k`-offset sets in `m` bits:
/// 1 − 2·P(A ⊆ B) + P(A = B).
pub fn exact_pair(m: u32, k: u8) -> f64 {
    let dist = distinct_bits(m, k);
    let subset: f64 = dist
        .iter()
        .enumerate()
        .skip(1)
        .map(|(j, pj)| pj * covered(m, j, u64::from(k)))
        .sum();
    // Given |A| = j, A is a uniform j-subset; B equals it with P(J = j) / C(m, j).
    let equal: f64 = dist
        .iter()
        .enumerate()
        .skip(1)
        .map(|(j, pj)| pj * pj / binomial(m, j))
        .sum();
    1.0 - 2.0 * subset + equal
}

fn binomial(m: u32, j: usize) -> f64 {
    (0..j).fold(1.0, |acc, i| {
        acc * (f64::from(m) - i as f64) / (i + 1) as f64
    })
}

/// Simulates and models every curve with [`DEFAULT_SETS`] sets per point, prints the table,
/// writes `esp-fig8.csv` and `esp-fig8.png`.
///
/// # Errors
///
/// If the output or the plot cannot be written.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Curve>> {
    run_with_sets(opts, DEFAULT_SETS, out)
}

/// [`run`] with `sets` random sets per point.
///
/// # Errors
///
/// If the output or the plot cannot be written.
pub fn run_with_sets(opts: &Options, sets: u32, out: &mut dyn Write) -> anyhow::Result<Vec<Curve>> {
    writeln!(
        out,
        "esp-fig8: P(a random set of IDmaps is collision-free) vs set size (ESP paper §4.3.2, Fig. 8)"
    )?;
    writeln!(
        out,
        "ours: {sets} random sets per point, each node's IDmap = IdMap::for_node with its own key; seed {:#x}",
        opts.seed
    )?;
    writeln!(
        out,
        "model: (1 − p_cover)^n, p_cover = P(one element inside the other n − 1's union), exact per element"
    )?;
    let curves = simulate_all(opts.seed, sets, &opts.progress);
    opts.progress.finish();
    for m in BITS {
        writeln!(out)?;
        write!(out, "m = {m:>3} bits |")?;
        for k in HASHES {
            write!(out, "   k = {k:<2} ours  model |")?;
        }
        writeln!(out)?;
        let row: Vec<&Curve> = curves.iter().filter(|c| c.m == m).collect();
        for n in ROWS {
            write!(out, "     n = {n:>3} |")?;
            for c in &row {
                write!(
                    out,
                    "        {:>5.3}  {:>5.3} |",
                    c.ours_at(n),
                    c.model_at(n)
                )?;
            }
            writeln!(out)?;
        }
        write!(out, "  max |diff| |")?;
        for c in &row {
            let (d, n) = c.max_diff();
            write!(out, "   {d:>5.3} at n = {n:>3} |")?;
        }
        writeln!(out)?;
    }

    writeln!(
        out,
        "(max |diff| over n = 1…{MAX_SET} includes sampling error: one standard error is {:.3} at P = ½)",
        (0.25 / f64::from(sets.max(1))).sqrt()
    )?;
    let (pm, pk, pn) = PAPER_POINT;
    writeln!(out)?;
    writeln!(
        out,
        "paper §4.3: a {pm}-bit Bloom filter with k = {pk} hashes for a tree of max branching factor {pn},"
    )?;
    writeln!(
        out,
        "  chosen so children are rarely taken for duplicates (Fig. 8 is a plot; our copy lacks it)"
    )?;
    if let Some(c) = curves.iter().find(|c| c.m == pm && c.k == pk) {
        writeln!(
            out,
            "  ours: m = {pm}, k = {pk}, n = {pn}: P(collision-free) = {:.3} ± {:.3} ({sets} sets); model {:.3}; \
             a given child inside the other {}'s union: {:.5} (model)",
            c.ours_at(pn),
            c.std_err_at(pn),
            c.model_at(pn),
            pn - 1,
            p_cover(pm, pk, pn),
        )?;
    }

    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("creating {}", opts.dir.display()))?;
    let csv = opts.dir.join("esp-fig8.csv");
    let mut f =
        std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    writeln!(f, "m,k,n,sets,ours,model")?;
    for c in &curves {
        for n in 1..=c.ours.len() {
            writeln!(
                f,
                "{},{},{n},{},{:.5},{:.5}",
                c.m,
                c.k,
                c.sets,
                c.ours_at(n),
                c.model_at(n)
            )?;
        }
    }
    let mut series = Vec::new();
    for model_line in [false, true] {
        for (m, k) in PLOTTED {
            let Some(c) = curves.iter().find(|c| c.m == m && c.k == k) else {
                continue;
            };
            let (label, values) = if model_line {
                (format!("m = {m}, k = {k}, model"), &c.model)
            } else {
                (format!("m = {m}, k = {k}, ours"), &c.ours)
            };
            series.push(Series {
                label,
                points: values
                    .iter()
                    .enumerate()
                    .map(|(i, p)| ((i + 1) as f64, *p))
                    .collect(),
                dashed: model_line,
            });
        }
    }
    let png = opts.dir.join("esp-fig8.png");
    plot::draw(
        &Chart {
            title: "IDmap sets: P(collision-free) vs set size".into(),
            x_label: "set size n (identifiers recorded)".into(),
            y_label: "P(collision-free)".into(),
            log_y: false,
            series,
        },
        &png,
    )?;
    writeln!(
        out,
        "\nwrote {} (k = 4 and 11 per m) and {} (every curve, n = 1…{MAX_SET})",
        png.display(),
        csv.display()
    )?;
    Ok(curves)
}

/// Every curve of [`BITS`] × [`HASHES`], `sets` sets per point, n = 1..=[`MAX_SET`]; one
/// thread per core takes curves off a shared counter (each point has its own generator, so
/// the result does not depend on the threads).
fn simulate_all(seed: u64, sets: u32, progress: &Progress) -> Vec<Curve> {
    let jobs: Vec<(u32, u8)> = BITS
        .iter()
        .flat_map(|&m| HASHES.iter().map(move |&k| (m, k)))
        .collect();
    progress.phase("Fig. 8 points (m, k, n)", (jobs.len() * MAX_SET) as u64);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut done: Vec<(usize, Curve)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(jobs.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(m, k)) = jobs.get(i) else {
                            return mine;
                        };
                        mine.push((i, curve(seed, m, k, sets, progress)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, c)| c).collect()
}

/// One curve, n = 1..=[`MAX_SET`].
fn curve(seed: u64, m: u32, k: u8, sets: u32, progress: &Progress) -> Curve {
    let (mut ours, mut modelled) = (Vec::new(), Vec::new());
    for n in 1..=MAX_SET {
        let mut rng = point_rng(seed, m, k, n);
        ours.push(simulate(m, k, n, sets, &mut rng));
        modelled.push(model(m, k, n));
        progress.advance(1);
    }
    Curve {
        m,
        k,
        sets,
        ours,
        model: modelled,
    }
}

/// A generator of its own for each point, so every point is reproducible on its own.
fn point_rng(seed: u64, m: u32, k: u8, n: usize) -> SplitMix64 {
    let mix = seed ^ (u64::from(m) << 40) ^ (u64::from(k) << 32) ^ n as u64;
    SplitMix64::new(SplitMix64::new(mix).next_u64())
}

#[cfg(test)]
mod tests {
    // Test code: panics are the failure reports.
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn naive_collision_free(maps: &[IdMap]) -> bool {
        (0..maps.len()).all(|i| {
            let mut others = IdMap::empty(maps[0].words());
            for (j, m) in maps.iter().enumerate() {
                if j != i {
                    others.union_with(m);
                }
            }
            !maps[i].is_subset_of(&others)
        })
    }

    #[test]
    fn prefix_suffix_check_agrees_with_the_definition() {
        let mut rng = SplitMix64::new(3);
        let (mut free, mut total) = (0, 0);
        for n in 1..30 {
            for _ in 0..50 {
                let maps: Vec<IdMap> = (0..n)
                    .map(|_| IdMap::for_node(&HashKey::from_seed(rng.next_u64()), CID, 4, 1))
                    .collect();
                let fast = collision_free(&maps);
                assert_eq!(fast, naive_collision_free(&maps), "{maps:?}");
                free += usize::from(fast);
                total += 1;
            }
        }
        // Both outcomes were exercised.
        assert!(free > 100 && free < total - 100, "{free} of {total}");
        let mut a = IdMap::empty(1);
        a.set(1);
        let mut b = a;
        b.set(2);
        assert!(!collision_free(&[a, b]) && collision_free(&[b]) && collision_free(&[]));
    }

    #[test]
    fn distinct_bits_and_covering_match_closed_forms() {
        let d = distinct_bits(64, 2);
        assert!((d[1] - 1.0 / 64.0).abs() < 1e-15 && (d[2] - 63.0 / 64.0).abs() < 1e-15);
        assert!((distinct_bits(512, 11).iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // Inclusion–exclusion where it is well conditioned.
        for (m, j, draws) in [(128u32, 3usize, 50u64), (512, 11, 429), (64, 5, 7)] {
            let ie: f64 = (0..=j)
                .map(|l| {
                    let sign = if l % 2 == 0 { 1.0 } else { -1.0 };
                    sign * binomial(j as u32, l)
                        * (1.0 - l as f64 / f64::from(m)).powi(draws as i32)
                })
                .sum();
            assert!((covered(m, j, draws) - ie).abs() < 1e-12, "{m} {j} {draws}");
        }
        assert_eq!(covered(64, 0, 0), 1.0);
        assert_eq!(covered(64, 2, 1), 0.0);
    }

    #[test]
    fn model_starts_at_one_and_falls() {
        for m in BITS {
            for k in HASHES {
                assert!((model(m, k, 1) - 1.0).abs() < 1e-12);
                for n in 2..=MAX_SET {
                    assert!(model(m, k, n) <= model(m, k, n - 1), "m {m} k {k} n {n}");
                }
                assert!(model(m, k, MAX_SET) < model(m, k, MAX_SET / 2));
            }
        }
    }

    #[test]
    fn model_agrees_with_simulation_at_the_papers_point() {
        let (m, k, n) = PAPER_POINT;
        let ours = simulate(m, k, n, 4000, &mut SplitMix64::new(11));
        let theirs = model(m, k, n);
        assert!((ours - theirs).abs() < 0.03, "ours {ours}, model {theirs}");
        assert!(ours > 0.85, "{ours}");
    }

    #[test]
    fn pairs_match_the_exact_value() {
        // k = 1: A and B collide exactly when they pick the same bit.
        for m in [64, 128, 512] {
            assert!((exact_pair(m, 1) - (1.0 - 1.0 / f64::from(m))).abs() < 1e-12);
        }
        for (m, k) in [(64, 1), (64, 2), (64, 3), (128, 1), (128, 2)] {
            let sets = 100_000;
            let ours = simulate(
                m,
                k,
                2,
                sets,
                &mut SplitMix64::new(u64::from(m) * 100 + u64::from(k)),
            );
            let exact = exact_pair(m, k);
            let se = (exact * (1.0 - exact) / f64::from(sets)).sqrt();
            assert!(
                (ours - exact).abs() < 4.0 * se,
                "m {m} k {k}: ours {ours}, exact {exact}, se {se}"
            );
        }
    }
}
