//! Tracing setup for the daemons: events on stderr, human-readable or JSON, filtered by
//! `RUST_LOG`.
//!
//! [`init`] installs a global `tracing_subscriber` fmt subscriber that writes to stderr
//! (with colours only when stderr is a terminal) and keeps the events an `EnvFilter`
//! lets through: the one in `RUST_LOG` if that variable is set and not empty, else the
//! daemon's `default_filter` (for example `"info"` or `"waist_router=debug,netio=info"`).
//! With the subscriber's default features it also forwards `log` records.
//!
//! [`init_with`] takes a [`LogFormat`] too: `text` (as [`init`]) or `json`, one JSON
//! object a line (`timestamp`, `level`, `target`, and `fields`: the `message` and every
//! structured field) for a log collector. Every binary takes it as `--log-format
//! text|json` by flattening [`LogArgs`] into its arguments.
//!
//! [`report`] ends `main`: an error becomes one line on stderr (`Error: what: why: …`, the
//! whole cause chain) and exit status 1, whatever `RUST_BACKTRACE` says; a backtrace is for
//! a bug, not for a config typo.
//!
//! What it does not do: no files, no rotation, no OpenTelemetry, no reloading of
//! the filter while running. Libraries and cores never call it; `main` does, once, before
//! anything logs.
//!
//! ```
//! netio::trace::init("info")?;
//! netio::trace::init("debug")?; // a second call keeps the first subscriber
//! tracing::info!("ready");
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::io::IsTerminal;
use std::process::{ExitCode, Termination};

use anyhow::{Context, anyhow};
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (`2026-11-27T16:40:00Z  INFO target: message key=value`).
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields` (`message` and
    /// the event's structured fields).
    Json,
}

/// The logging flags every binary takes (`#[command(flatten)]` it into the arguments):
/// `--log-format text|json`.
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogArgs {
    /// How log lines on stderr are written: text, or one JSON object a line. The filter
    /// is RUST_LOG's.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
}

impl LogArgs {
    /// [`init_with`] this format.
    ///
    /// # Errors
    ///
    /// As [`init_with`].
    pub fn init(&self, default_filter: &str) -> anyhow::Result<()> {
        init_with(default_filter, self.log_format)
    }
}

/// Installs the global subscriber: text to stderr, filter from `RUST_LOG` or
/// `default_filter`. The same as [`init_with`]`(default_filter, LogFormat::Text)`.
///
/// # Errors
///
/// As [`init_with`].
pub fn init(default_filter: &str) -> anyhow::Result<()> {
    init_with(default_filter, LogFormat::Text)
}

/// Installs the global subscriber: `format` to stderr, filter from `RUST_LOG` or
/// `default_filter`.
///
/// Safe to call more than once: if a global subscriber is already installed (by an
/// earlier call, or by a test harness) it is kept and this returns `Ok`. Fails if
/// `RUST_LOG` is set but is not a valid filter (the daemon should not silently log less
/// than the user asked for), or if `default_filter` is not valid.
pub fn init_with(default_filter: &str, format: LogFormat) -> anyhow::Result<()> {
    if tracing::dispatcher::has_been_set() {
        return Ok(());
    }
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .with_context(|| format!("RUST_LOG={directives:?} is not a valid filter"))?,
        _ => EnvFilter::try_new(default_filter)
            .with_context(|| format!("default log filter {default_filter:?} is not valid"))?,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
    match installed {
        Ok(()) => Ok(()),
        // Another thread installed one between our check and ours: theirs stays.
        Err(_) if tracing::dispatcher::has_been_set() => Ok(()),
        Err(e) => Err(anyhow!("installing the tracing subscriber: {e}")),
    }
}

/// `main`'s last step: `Ok(t)` exits as `t` says; an error is printed as one line,
/// `Error: ` and its cause chain joined by `: ` ([`one_line`]), with exit status 1.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     let read = std::fs::read("/nonexistent").map_err(anyhow::Error::from);
///     netio::trace::report(read.map(|_bytes| ()))
/// }
/// ```
pub fn report<T: Termination>(result: anyhow::Result<T>) -> ExitCode {
    match result {
        Ok(t) => t.report(),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error as the one line [`report`] prints: `Error: ` and the cause chain joined by
/// `: `, line breaks inside a message turned into spaces; never a backtrace.
pub fn one_line(e: &anyhow::Error) -> String {
    let chain: Vec<String> = e
        .chain()
        .map(|c| {
            c.to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    format!("Error: {}", chain.join(": "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        log: LogArgs,
    }

    #[test]
    fn log_format_is_text_unless_json_is_asked() {
        let parse =
            |args: &[&str]| Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied()));
        assert_eq!(parse(&[]).unwrap().log.log_format, LogFormat::Text);
        let json = parse(&["--log-format", "json"]).unwrap();
        assert_eq!(json.log.log_format, LogFormat::Json);
        assert!(parse(&["--log-format", "yaml"]).is_err());
    }

    #[test]
    fn an_error_is_one_line_with_its_causes() {
        let e = anyhow!("no such file").context("r1.toml:3:1: key `peer`:\nnot a socket address");
        let line = one_line(&e);
        assert_eq!(
            line,
            "Error: r1.toml:3:1: key `peer`: not a socket address: no such file"
        );
        assert!(!line.contains('\n'));
        assert_eq!(report(Err::<(), _>(e)), ExitCode::FAILURE);
        assert_eq!(report(Ok(ExitCode::from(2))), ExitCode::from(2));
    }
}
