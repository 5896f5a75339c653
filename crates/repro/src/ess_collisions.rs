//! ESP paper Fig. 2 and §2.3: how likely random 64-bit tags are to collide.
//!
//! For r tags drawn uniformly from 2^64:
//! * some collision in the group: 1 − ∏_{i=1}^{r−1} (1 − i/2^64);
//! * a given tag colliding with one of r others: 1 − (1 − 2^−64)^r.
//!
//! Both are computed in log space (ln(1 − x) by `ln_1p`, 1 − e^y by `expm1`) so nothing
//! rounds to 0 or 1. The same formulas are then checked by simulation at tag widths small
//! enough for collisions to be seen.

use std::collections::HashSet;
use std::io::Write;

use crate::common::Options;
use crate::plot::{self, Chart, Series};
use sansio::SplitMix64;

/// P(some collision among `r` random tags of `bits` bits).
pub fn p_any(r: f64, bits: i32) -> f64 {
    let space = 2f64.powi(bits);
    // Σ_{i<r} ln(1 − i/N) = −Σ (i/N + i²/2N² + …); the first two terms are exact to f64
    // precision while r ≪ N.
    let s1 = r * (r - 1.0) / 2.0 / space;
    let s2 = (r - 1.0) * r * (2.0 * r - 1.0) / 6.0 / (2.0 * space * space);
    -(-(s1 + s2)).exp_m1()
}

/// P(a given tag collides with one of `r` other random tags of `bits` bits).
pub fn p_given(r: f64, bits: i32) -> f64 {
    -(r * (-(2f64.powi(-bits))).ln_1p()).exp_m1()
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Number of tags.
    pub users: f64,
    /// P(some collision).
    pub any: f64,
    /// P(a given tag collides).
    pub given: f64,
}

/// Prints Fig. 2's curves, the billion-tag claim and the simulation check; writes the PNG.
///
/// # Errors
///
/// If the output or the plot cannot be written.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    writeln!(
        out,
        "ess-collisions: collision probability of random 64-bit tags (ESP paper Fig. 2, §2.3)"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "  users (r)  | P(some collision) | P(a given tag collides)"
    )?;
    let mut rows = Vec::new();
    for k in 18..=30 {
        let r = 2f64.powi(k);
        let row = Row {
            users: r,
            any: p_any(r, 64),
            given: p_given(r, 64),
        };
        writeln!(
            out,
            "  2^{k:<2} {:>5} | {:>17.3e} | {:>17.3e}",
            "", row.any, row.given
        )?;
        rows.push(row);
    }
    let billion = p_any(1e9, 64);
    writeln!(out)?;
    writeln!(
        out,
        "  paper: a billion live tags collide anywhere with probability about 3%"
    )?;
    writeln!(
        out,
        "  ours:  1e9 tags → {:.2}%; 2^30 ≈ 1.07e9 tags → {:.2}%",
        billion * 100.0,
        p_any(2f64.powi(30), 64) * 100.0
    )?;
    writeln!(
        out,
        "  paper: Fig. 2's curves are \"extremely low\" for 2^18..2^30 users"
    )?;
    writeln!(
        out,
        "  ours:  some collision ≤ {:.1e}, a given tag ≤ {:.1e} over that range",
        rows.last().map_or(0.0, |r| r.any),
        rows.last().map_or(0.0, |r| r.given)
    )?;

    // Simulation at widths where collisions are common enough to count.
    writeln!(out)?;
    writeln!(
        out,
        "  simulation check of the same formulas at small tag widths (seed {:#x}):",
        opts.seed
    )?;
    writeln!(out, "  (sim ± two binomial standard errors)")?;
    writeln!(
        out,
        "  bits  users  trials | some collision: sim          formula | given tag: sim          formula"
    )?;
    let mut rng = SplitMix64::new(opts.seed);
    for (bits, r, trials) in [
        (32, 1u64 << 14, 2_000u64),
        (32, 1 << 16, 400),
        (20, 1 << 10, 20_000),
        (16, 1 << 8, 40_000),
    ] {
        let mask = (1u64 << bits) - 1;
        let (mut any, mut given) = (0u64, 0u64);
        let mut seen = HashSet::with_capacity(r as usize);
        for _ in 0..trials {
            seen.clear();
            let mine = rng.next_u64() & mask;
            let mut collided = false;
            let mut hit_mine = false;
            for _ in 0..r {
                let t = rng.next_u64() & mask;
                collided |= !seen.insert(t);
                hit_mine |= t == mine;
            }
            any += u64::from(collided);
            given += u64::from(hit_mine);
        }
        let sim = |k: u64| {
            let p = k as f64 / trials as f64;
            format!(
                "{p:.4} ± {:.4}",
                2.0 * (p * (1.0 - p) / trials as f64).sqrt()
            )
        };
        writeln!(
            out,
            "  {bits:>4} {r:>6} {trials:>7} | {:>24} {:>8.4} | {:>19} {:>8.4}",
            sim(any),
            p_any(r as f64, bits),
            sim(given),
            p_given(r as f64, bits),
        )?;
    }

    let png = opts.dir.join("ess-collisions.png");
    let xs = |f: fn(&Row) -> f64| {
        rows.iter()
            .map(|r| (r.users.log2(), f(r)))
            .collect::<Vec<_>>()
    };
    plot::draw(
        &Chart {
            title: "Collision probability, 64-bit tags (Fig. 2)".into(),
            x_label: "log2(users)".into(),
            y_label: "probability".into(),
            log_y: true,
            series: vec![
                Series {
                    label: "some collision".into(),
                    points: xs(|r| r.any),
                    dashed: false,
                },
                Series {
                    label: "a given tag collides".into(),
                    points: xs(|r| r.given),
                    dashed: false,
                },
            ],
        },
        &png,
    )?;
    writeln!(out, "\nwrote {}", png.display())?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_match_known_values() {
        // Birthday bound: 23 people, 365 days ≈ 50.7% (checked with bits = log2(365)).
        let p = -(1..23).map(|i| (-(i as f64) / 365.0).ln_1p()).sum::<f64>();
        assert!(((-(-p).exp_m1()) - 0.5073).abs() < 1e-3);
        // 2^32 tags of 64 bits: 1 − e^{−1/2} ≈ 39.3%.
        assert!((p_any(2f64.powi(32), 64) - 0.3935).abs() < 1e-3);
        assert!((p_given(2f64.powi(30), 64) - 2f64.powi(-34)).abs() < 1e-15);
        assert!((p_any(1e9, 64) - 0.0267).abs() < 5e-4);
    }
}
