//! `waist repro NAME`: the papers' tables and figures, ours beside the paper's.
//!
//! ```text
//!  waist repro NAME ─► repro::run(name, Options { dir, log2, seed, runs, progress: bar })
//!                            │ report ──► progress::Suspending ──► stdout
//!                            └ progress ─► progress::TerminalBar (stderr, terminals only)
//! ```
//!
//! The reproductions themselves, their baselines and plots are the `waist-repro` crate
//! (library `repro`); this command parses the options, hands them over with a progress
//! bar ([`progress`]) and prints the report.

pub mod progress;

use std::io::Write;

/// Runs reproduction `name` with `opts`, its report to `out` and its progress to a bar on
/// standard error when that is a terminal (`opts.progress` is replaced by the bar's).
///
/// # Errors
///
/// If writing the report or a plot fails.
pub fn run(name: repro::Name, mut opts: repro::Options, out: &mut dyn Write) -> anyhow::Result<()> {
    let bar = progress::TerminalBar::new();
    opts.progress = bar.progress();
    repro::run(name, &opts, &mut bar.suspending(out))
}
