//! What the reproductions share: their [`Options`], the [`Progress`] they report through a
//! [`ProgressSink`], [`median`] and the least-squares [`fit`], and [`plot_and_check`], the
//! tail that draws a reproduction's chart, says where it went and checks the run was sound.
//! Their seeded generator is the workspace's one, [`sansio::SplitMix64`] (also
//! [`SplitMix`] here).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::plot::{self, Chart};

/// Knobs shared by the reproductions.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where plots and CSV files go.
    pub dir: PathBuf,
    /// Store size (log2) where one is needed.
    pub log2: u8,
    /// Seed for tags and keys.
    pub seed: u64,
    /// Repetitions where a reproduction has them (`None`: its default).
    pub runs: Option<u64>,
    /// Where a long reproduction reports how far it is (default: nowhere).
    pub progress: Progress,
}

/// What a [`Progress`] drives: the CLI's terminal bar, or anything else that watches.
pub trait ProgressSink: Send + Sync {
    /// A new phase named `label` of `total` steps, none done yet.
    fn phase(&self, label: &str, total: u64);
    /// `n` more steps of the phase done.
    fn advance(&self, n: u64);
    /// The reproduction is done: take the display away.
    fn finish(&self);
}

/// How far a long reproduction is. The default reports nowhere (tests, pipes); the CLI
/// gives a bar when standard error is a terminal. Clones share one sink, so worker
/// threads advance the same bar.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn ProgressSink>>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(shown)"
        } else {
            "Progress(none)"
        })
    }
}

impl Progress {
    /// Reports to `sink`.
    pub fn to(sink: Arc<dyn ProgressSink>) -> Progress {
        Progress(Some(sink))
    }

    /// Starts a phase named `label` of `total` steps.
    pub fn phase(&self, label: &str, total: u64) {
        if let Some(s) = &self.0 {
            s.phase(label, total);
        }
    }

    /// `n` more steps done.
    pub fn advance(&self, n: u64) {
        if let Some(s) = &self.0 {
            s.advance(n);
        }
    }

    /// Done.
    pub fn finish(&self) {
        if let Some(s) = &self.0 {
            s.finish();
        }
    }
}

/// The reproductions' seeded generator, under the name the CLI's demos use: the workspace's
/// one SplitMix64 (`SplitMix(seed)` is `SplitMix64::new(seed)`).
pub use sansio::SplitMix64 as SplitMix;

/// The median of `xs` (the upper one of an even count; NaN when `xs` is empty).
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Least-squares line through `(x, y)`: (intercept, slope).
pub fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

/// The tail reproductions share: draws `chart` to `path`, prints `plot: <path>` to `out`,
/// then fails with `failure` unless `sound` (a transfer was byte-exact, rows matched, …).
///
/// # Errors
///
/// If the plot or the line cannot be written, or the run was not `sound`.
pub fn plot_and_check(
    chart: &Chart,
    path: &Path,
    out: &mut dyn Write,
    sound: bool,
    failure: &str,
) -> anyhow::Result<()> {
    plot::draw(chart, path)?;
    writeln!(out, "plot: {}", path.display())?;
    anyhow::ensure!(sound, "{failure}");
    Ok(())
}
