//! How a download ends: the kinds of failure and their exit codes, the one-line error
//! on stderr, and `--json`'s object on stdout.
//!
//! The object has these fields, always all of them (`null` where they do not apply):
//!
//! ```text
//! {"ok": true, "url": "trickles://127.0.0.1:7700/f", "servers": ["127.0.0.1:7700"],
//!  "file": "f.out", "partial_file": null, "bytes": 1048576, "total_bytes": 1048576,
//!  "seconds": 0.12, "bytes_per_second": 8738133.3, "connections": 1, "failovers": 0,
//!  "exit_code": 0, "error": null}
//! ```
//!
//! On failure `ok` is false and `error` is `{"kind": K, "message": M}`, K one of
//! [`ErrorKind::name`]'s: `connect_timeout`, `idle_timeout`, `max_time`, `status` (the
//! server answered an error; then also `"status": 404`), `other`.

use std::path::PathBuf;
use std::time::Duration;

use super::{Args, StatusError, Summary};

/// Exit code of a download that failed other than by a timeout.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of bad arguments (clap's, and `--json` without `-o`).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a download that timed out (curl's 28, "operation timeout").
pub const EXIT_TIMEOUT: u8 = 28;

/// Why a download failed, as scripts tell the cases apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// No server answered within `--connect-timeout`.
    ConnectTimeout,
    /// No byte arrived for `--idle-timeout` after a server had answered.
    IdleTimeout,
    /// The transfer outlasted `--timeout-s` (`--max-time`).
    MaxTime,
    /// The server answered with an error status.
    Status,
    /// Anything else (bad arguments, sockets, a broken response).
    Other,
}

impl ErrorKind {
    /// The name `--json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::IdleTimeout => "idle_timeout",
            ErrorKind::MaxTime => "max_time",
            ErrorKind::Status => "status",
            ErrorKind::Other => "other",
        }
    }

    /// The process's exit code for it.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::ConnectTimeout | ErrorKind::IdleTimeout | ErrorKind::MaxTime => EXIT_TIMEOUT,
            ErrorKind::Status | ErrorKind::Other => EXIT_FAILURE,
        }
    }

    /// The kind of `error`: a [`GetError`]'s or [`Failed`]'s own, [`ErrorKind::Status`] for a
    /// [`StatusError`], [`ErrorKind::Other`] for the rest.
    pub fn of(error: &anyhow::Error) -> ErrorKind {
        if let Some(f) = error.downcast_ref::<Failed>() {
            f.kind
        } else if let Some(e) = error.downcast_ref::<GetError>() {
            e.kind
        } else if error.downcast_ref::<StatusError>().is_some() {
            ErrorKind::Status
        } else {
            ErrorKind::Other
        }
    }
}

/// A download given up on: what timed out, in one line naming the servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetError {
    /// Which deadline.
    pub kind: ErrorKind,
    /// The line, without the program's name.
    pub message: String,
}

impl GetError {
    /// A `kind` failure saying `message`.
    pub fn new(kind: ErrorKind, message: String) -> GetError {
        GetError { kind, message }
    }
}

impl std::fmt::Display for GetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GetError {}

/// A download that failed once under way, with what it had done.
#[derive(Debug)]
pub struct Failed {
    /// Why, as a kind.
    pub kind: ErrorKind,
    /// Why, in words.
    pub error: anyhow::Error,
    /// Body bytes received.
    pub bytes: u64,
    /// The object's length, if the response said it.
    pub total: Option<u64>,
    /// Time since the request.
    pub elapsed: Duration,
    /// Where the bytes received are kept (`FILE.partial`), if any.
    pub partial: Option<PathBuf>,
    /// The servers' UDP addresses (with `--via`: the first hop).
    pub replicas: Vec<std::net::SocketAddr>,
    /// Connections opened.
    pub connections: usize,
    /// Times the link failed over.
    pub failovers: u64,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)?;
        if let Some(p) = &self.partial {
            write!(f, "; kept in {}", p.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for Failed {}

/// What `trickles-get` does once its arguments are parsed: runs the download, prints the
/// summary or the one-line error on stderr (and with `--json` the object on stdout), and
/// returns the exit code (0, [`EXIT_FAILURE`], [`EXIT_USAGE`] or [`EXIT_TIMEOUT`]).
pub async fn main(args: &Args) -> u8 {
    let to_stdout = args.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
    if args.json && to_stdout {
        eprintln!(
            "trickles-get: --json prints on stdout, which the body would share: give -o FILE"
        );
        return EXIT_USAGE;
    }
    let result = super::run(args).await;
    let code = match &result {
        Ok(summary) => {
            eprintln!("trickles-get: {summary}");
            0
        }
        Err(e) => {
            eprintln!("trickles-get: {e:#}");
            ErrorKind::of(e).exit_code()
        }
    };
    if args.json {
        println!("{}", json(args, &result));
    }
    code
}

/// `--json`'s object for the download `args` asked for, ended as `result` says.
pub fn json(args: &Args, result: &anyhow::Result<Summary>) -> serde_json::Value {
    let file = args.output.as_ref().map(|p| p.display().to_string());
    let rate = |bytes: u64, elapsed: Duration| {
        let secs = elapsed.as_secs_f64();
        if secs > 0.0 { bytes as f64 / secs } else { 0.0 }
    };
    let addrs = |r: &[std::net::SocketAddr]| r.iter().map(ToString::to_string).collect::<Vec<_>>();
    match result {
        Ok(s) => serde_json::json!({
            "ok": true,
            "url": args.url,
            "servers": addrs(&s.replicas),
            "file": file,
            "partial_file": null,
            "bytes": s.bytes,
            "total_bytes": s.bytes,
            "seconds": s.elapsed.as_secs_f64(),
            "bytes_per_second": rate(s.bytes, s.elapsed),
            "connections": s.connections,
            "failovers": s.link.failovers,
            "exit_code": 0,
            "error": null,
        }),
        Err(e) => {
            let kind = ErrorKind::of(e);
            let failed = e.downcast_ref::<Failed>();
            let status = e
                .downcast_ref::<Failed>()
                .and_then(|f| f.error.downcast_ref::<StatusError>())
                .or_else(|| e.downcast_ref::<StatusError>())
                .map(|s| s.status);
            let mut error = serde_json::json!({
                "kind": kind.name(),
                "message": format!("{e:#}"),
            });
            if let Some(status) = status {
                error["status"] = status.into();
            }
            serde_json::json!({
                "ok": false,
                "url": args.url,
                "servers": failed.map(|f| addrs(&f.replicas)).unwrap_or_default(),
                "file": file,
                "partial_file": failed.and_then(|f| f.partial.as_ref()).map(|p| p.display().to_string()),
                "bytes": failed.map_or(0, |f| f.bytes),
                "total_bytes": failed.and_then(|f| f.total),
                "seconds": failed.map_or(0.0, |f| f.elapsed.as_secs_f64()),
                "bytes_per_second": failed.map_or(0.0, |f| rate(f.bytes, f.elapsed)),
                "connections": failed.map_or(0, |f| f.connections),
                "failovers": failed.map_or(0, |f| f.failovers),
                "exit_code": kind.exit_code(),
                "error": error,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_codes() {
        let timeout = anyhow::Error::from(GetError::new(ErrorKind::ConnectTimeout, "x".into()));
        assert_eq!(ErrorKind::of(&timeout), ErrorKind::ConnectTimeout);
        assert_eq!(ErrorKind::of(&timeout).exit_code(), EXIT_TIMEOUT);
        let status = anyhow::Error::from(StatusError {
            status: 404,
            reason: "Not Found".into(),
        });
        assert_eq!(ErrorKind::of(&status), ErrorKind::Status);
        assert_eq!(
            ErrorKind::of(&anyhow::anyhow!("x")).exit_code(),
            EXIT_FAILURE
        );
        let failed = anyhow::Error::from(Failed {
            kind: ErrorKind::IdleTimeout,
            error: GetError::new(ErrorKind::IdleTimeout, "no data".into()).into(),
            bytes: 5,
            total: Some(9),
            elapsed: Duration::from_secs(1),
            partial: Some("f.partial".into()),
            replicas: Vec::new(),
            connections: 1,
            failovers: 2,
        });
        assert_eq!(ErrorKind::of(&failed).name(), "idle_timeout");
        assert_eq!(format!("{failed:#}"), "no data; kept in f.partial");
    }
}
