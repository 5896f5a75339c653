//! The capture switch, `[defaults] capture`: what `waist up` asks every daemon to capture.
//!
//! ```toml
//! [defaults]
//! capture = true                # every link, unbounded (the default)
//! capture = false               # no captures at all (no --pcap)
//! capture = { ring_mb = 8 }     # at most 8 MiB per link (--pcap-ring-mb 8): X.pcap and
//!                               #   X.pcap.1 … .3, rotated like `tcpdump -C -W`
//! ```
//!
//! A router's cap applies to each of its links, a server replica's to its one capture.
//! Any other value is refused, located at the key, with what is accepted.

use netio::config::{ConfigError, Source};
use netio::pcap::Ring;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// What the daemons of a run capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capture {
    /// No captures.
    Off,
    /// Every link, unbounded.
    #[default]
    Unbounded,
    /// Every link, at most this many MiB each ([`Ring::megabytes`]).
    Ring {
        /// The cap per link, MiB.
        megabytes: u32,
    },
}

impl Capture {
    /// The daemon arguments after `--pcap DIR` that this asks for (`--pcap-ring-mb N`, or
    /// nothing); `None` when nothing is captured (no `--pcap` either).
    pub fn args(self) -> Option<Vec<String>> {
        match self {
            Capture::Off => None,
            Capture::Unbounded => Some(Vec::new()),
            Capture::Ring { megabytes } => {
                Some(vec!["--pcap-ring-mb".into(), megabytes.to_string()])
            }
        }
    }
}

impl std::fmt::Display for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capture::Off => f.write_str("off"),
            Capture::Unbounded => f.write_str("unbounded"),
            Capture::Ring { megabytes } => write!(f, "a ring of {megabytes} MiB per link"),
        }
    }
}

/// What accepted values look like, for errors.
const ACCEPTED: &str = "expected `true`, `false` or `{ ring_mb = N }` (N MiB per link, 1 or more)";

/// `[defaults] capture` as written (`None`: not given, so unbounded).
///
/// # Errors
///
/// Another type, another key in the table, a size netio cannot keep: located at the value.
pub(super) fn parse(
    source: &Source,
    value: Option<&Spanned<toml::Value>>,
) -> Result<Capture, ConfigError> {
    let Some(value) = value else {
        return Ok(Capture::Unbounded);
    };
    let refuse = |m: String| source.error_for(value, m);
    match value.get_ref() {
        toml::Value::Boolean(true) => Ok(Capture::Unbounded),
        toml::Value::Boolean(false) => Ok(Capture::Off),
        toml::Value::Table(t) => {
            if let Some(other) = t.keys().find(|k| *k != "ring_mb") {
                return Err(refuse(format!("unknown key `{other}`: {ACCEPTED}")));
            }
            let mb = match t.get("ring_mb") {
                Some(toml::Value::Integer(n)) => {
                    u32::try_from(*n).map_err(|_| refuse(format!("ring_mb = {n}: {ACCEPTED}")))?
                }
                Some(other) => {
                    return Err(refuse(format!("ring_mb = {other}: {ACCEPTED}")));
                }
                None => return Err(refuse(format!("no `ring_mb`: {ACCEPTED}"))),
            };
            Ring::megabytes(mb).map_err(|e| refuse(format!("ring_mb = {mb}: {e}")))?;
            Ok(Capture::Ring { megabytes: mb })
        }
        other => Err(refuse(format!("`{other}`: {ACCEPTED}"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::*;
    use crate::up::topology::{TopologyFile, plan};

    const ROUTERS: &str = "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
                           [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
                           [[link]]\nbetween = [\"r1\", \"r2\"]\n";

    fn capture(defaults: &str) -> Result<Capture, String> {
        let source = Source::new("t.toml", format!("[defaults]\n{defaults}\n{ROUTERS}"));
        let file: TopologyFile = source.parse().map_err(|e| e.to_string())?;
        plan(&source, &file, Path::new("."))
            .map(|p| p.capture)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_switch_turns_captures_off_caps_them_or_leaves_them_unbounded() {
        assert_eq!(capture(""), Ok(Capture::Unbounded));
        assert_eq!(capture("capture = true"), Ok(Capture::Unbounded));
        assert_eq!(capture("capture = false"), Ok(Capture::Off));
        assert_eq!(
            capture("capture = { ring_mb = 8 }"),
            Ok(Capture::Ring { megabytes: 8 })
        );
        assert_eq!(Capture::Off.args(), None);
        assert_eq!(Capture::Unbounded.args(), Some(vec![]));
        assert_eq!(
            Capture::Ring { megabytes: 8 }.args(),
            Some(vec!["--pcap-ring-mb".to_string(), "8".to_string()])
        );
    }

    #[test]
    fn bad_values_are_refused_at_the_key() {
        for (value, says) in [
            (
                "capture = { ring_mb = 0 }",
                "ring_mb = 0: a capture ring of 0 MB holds nothing",
            ),
            ("capture = { ring_mb = -3 }", "ring_mb = -3: expected"),
            ("capture = { ring_mb = \"8\" }", "ring_mb = \"8\": expected"),
            ("capture = { ring = 8 }", "unknown key `ring`: expected"),
            ("capture = {}", "no `ring_mb`: expected"),
            (
                "capture = 8",
                "`8`: expected `true`, `false` or `{ ring_mb = N }`",
            ),
        ] {
            let err = capture(value).unwrap_err();
            assert!(
                err.starts_with("t.toml:2:11: key `capture`: ") && err.contains(says),
                "{value}: {err}"
            );
        }
    }
}
