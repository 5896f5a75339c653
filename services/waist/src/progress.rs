//! The terminal's progress bar for long reproductions: an indicatif bar on standard error
//! when it is a terminal, nothing at all when it is not (piped, redirected, CI logs).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::repro::{Progress, ProgressSink};

/// An indicatif bar as a [`ProgressSink`].
#[derive(Debug)]
struct Bar(ProgressBar);

impl ProgressSink for Bar {
    fn phase(&self, label: &str, total: u64) {
        self.0.set_length(total);
        self.0.set_position(0);
        self.0.set_message(label.to_owned());
    }

    fn advance(&self, n: u64) {
        self.0.inc(n);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// A bar on standard error if it is a terminal, else no progress at all.
pub fn for_terminal() -> Progress {
    if !std::io::stderr().is_terminal() {
        return Progress::default();
    }
    let style = ProgressStyle::with_template("{msg} [{wide_bar}] {pos}/{len} eta {eta}")
        .map_or_else(
            |_| ProgressStyle::default_bar(),
            |s| s.progress_chars("=> "),
        );
    let bar = ProgressBar::new(0).with_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    Progress::to(Arc::new(Bar(bar)))
}
