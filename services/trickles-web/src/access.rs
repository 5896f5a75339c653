//! The access log (`--access-log FILE`, `-` for stderr): one line per request answered,
//! over Trickles and over the TCP fallback alike, in the Common Log Format.
//!
//! ```text
//!  HttpApp::poll_access ─┐
//!                        ├─► AccessRecord (the core's: CLF via Display) ─► AccessLog::write
//!  tcp::connection ──────┘
//! ```
//!
//! The records and their format are the core's ([`AccessRecord`]); this module only owns
//! the file. It is opened for appending (created 0644 if missing) and every line is one
//! `write` of a whole line, so the lines of the two transports never interleave inside a
//! line, and `logrotate`'s `copytruncate` works.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use trickles::app::http::AccessRecord;

/// Where the lines go: a file, or stderr (`-`). Cheap to clone (shared).
#[derive(Clone)]
pub struct AccessLog {
    out: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessLog").finish_non_exhaustive()
    }
}

impl AccessLog {
    /// Opens `path` for appending (`-`: stderr).
    ///
    /// # Errors
    ///
    /// The file cannot be opened or created.
    pub fn open(path: &Path) -> anyhow::Result<AccessLog> {
        let out: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(std::io::stderr())
        } else {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| anyhow::anyhow!("--access-log {}: {e}", path.display()))?;
            Box::new(file)
        };
        Ok(AccessLog {
            out: Arc::new(Mutex::new(out)),
        })
    }

    /// Opens the log `path` names, if any.
    ///
    /// # Errors
    ///
    /// As [`AccessLog::open`].
    pub fn open_option(path: Option<&PathBuf>) -> anyhow::Result<Option<AccessLog>> {
        path.map(|p| AccessLog::open(p)).transpose()
    }

    /// Appends `record`'s line. A failed write is traced at `warn` and otherwise
    /// ignored: serving goes on without its log line.
    pub fn write(&self, record: &AccessRecord) {
        let mut line = record.to_string();
        line.push('\n');
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = out.write_all(line.as_bytes()) {
            tracing::warn!("access log: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trickles::app::http::Status;

    #[test]
    fn lines_are_appended() {
        let path = std::env::temp_dir().join(format!("tw-access-{}.log", std::process::id()));
        std::fs::write(&path, "before\n").unwrap();
        let log = AccessLog::open(&path).unwrap();
        let r = AccessRecord::new(
            [127, 0, 0, 1].into(),
            971_186_136,
            b"GET /a HTTP/1.1\r\n",
            Status::Ok,
            2326,
        );
        log.clone().write(&r);
        log.write(&r);
        let text = std::fs::read_to_string(&path).unwrap();
        let line = "127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] \"GET /a HTTP/1.1\" 200 2326\n";
        assert_eq!(text, ["before\n", line, line].concat());
        std::fs::remove_file(&path).unwrap();
        let e = AccessLog::open(Path::new("/nonexistent/dir/log")).unwrap_err();
        assert!(
            e.to_string().contains("--access-log /nonexistent/dir/log"),
            "{e}"
        );
    }
}
