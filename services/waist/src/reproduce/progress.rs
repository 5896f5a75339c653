//! The terminal's progress bar for long reproductions: an indicatif bar on standard error
//! when it is a terminal, nothing at all when it is not (piped, redirected, CI logs).
//!
//! ```text
//!  repro ─ opts.progress.phase/advance ─► Bar (indicatif, stderr)
//!        ─ writeln!(out, …) ─► Suspending ─ bar.suspend(write) ─► stdout
//! ```
//!
//! The report's own lines go through [`Suspending`], which takes the bar off the screen for
//! each write, so a row printed mid-run never lands inside the bar.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use repro::{Progress, ProgressSink};

/// An indicatif bar as a [`ProgressSink`].
#[derive(Debug)]
struct Bar(ProgressBar);

impl ProgressSink for Bar {
    fn phase(&self, label: &str, total: u64) {
        self.0
            .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        self.0.set_length(total);
        self.0.set_message(label.to_owned());
        self.0.reset();
        self.0.enable_steady_tick(Duration::from_millis(200));
    }

    fn advance(&self, n: u64) {
        self.0.inc(n);
    }

    fn finish(&self) {
        self.0.disable_steady_tick();
        self.0.finish_and_clear();
        self.0
            .set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
}

/// The bar of one command: shown only if standard error is a terminal.
#[derive(Debug, Default)]
pub struct TerminalBar(Option<ProgressBar>);

impl TerminalBar {
    /// A bar if standard error is a terminal, else none.
    pub fn new() -> TerminalBar {
        if !std::io::stderr().is_terminal() {
            return TerminalBar(None);
        }
        let style = ProgressStyle::with_template("{msg} [{wide_bar}] {pos}/{len} eta {eta}")
            .map_or_else(
                |_| ProgressStyle::default_bar(),
                |s| s.progress_chars("=> "),
            );
        TerminalBar(Some(ProgressBar::hidden().with_style(style)))
    }

    /// The reproductions' handle on it ([`Progress::default`] when there is no bar).
    pub fn progress(&self) -> Progress {
        match &self.0 {
            Some(b) => Progress::to(Arc::new(Bar(b.clone()))),
            None => Progress::default(),
        }
    }

    /// `out`, writing whole lines with the bar taken off the screen.
    pub fn suspending<'a>(&'a self, out: &'a mut dyn Write) -> Suspending<'a> {
        Suspending {
            bar: self,
            out,
            line: Vec::new(),
        }
    }
}

/// A writer that gathers lines and writes each with the bar off the screen (see the
/// module docs). What is left of a line goes out on `flush` and on drop.
pub struct Suspending<'a> {
    bar: &'a TerminalBar,
    out: &'a mut dyn Write,
    line: Vec<u8>,
}

impl Suspending<'_> {
    /// Writes the gathered bytes up to `end`.
    fn emit(&mut self, end: usize) -> std::io::Result<()> {
        let (out, line) = (&mut self.out, &mut self.line);
        let mut put = || {
            out.write_all(line.get(..end).unwrap_or(line))?;
            out.flush()
        };
        match &self.bar.0 {
            Some(b) => b.suspend(put)?,
            None => put()?,
        }
        self.line.drain(..end.min(self.line.len()));
        Ok(())
    }
}

impl Write for Suspending<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        if let Some(i) = self.line.iter().rposition(|&b| b == b'\n') {
            self.emit(i + 1)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let n = self.line.len();
        self.emit(n)
    }
}

impl Drop for Suspending<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            eprintln!("writing the report: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_lines_go_out_and_the_rest_on_flush() {
        let bar = TerminalBar::default();
        let mut sink = Vec::new();
        {
            let mut w = bar.suspending(&mut sink);
            write!(w, "a").unwrap();
            write!(w, "b\nc").unwrap();
            assert_eq!(w.line, b"c");
        }
        assert_eq!(sink, b"ab\nc");
        // Without a bar the handle reports nowhere.
        assert_eq!(format!("{:?}", bar.progress()), "Progress(none)");
    }
}
