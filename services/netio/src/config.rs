//! TOML configuration with errors that name the file, the line and the key.
//!
//! A daemon deserialises its whole config with [`load`] (or [`Source::parse`] for text already in
//! memory). Syntax and type errors come from `toml` with a byte span; [`ConfigError`] turns
//! the span into a line and column and names the key written on that line. Checks a daemon
//! makes after deserialising (an unknown link name, a prefix with host bits) use
//! [`Source::error_at`] with the span of the offending value (`toml::Spanned<T>` fields), so
//! they read the same way:
//!
//! ```text
//! r1.toml:14:8: key `peer`: invalid socket address syntax
//! ```
//!
//! An unknown key or value gets a guess when one expected is close
//! ([`with_suggestion`]: ``unknown field `adress`, …; did you mean `addresses`?``), and an
//! emulation parameter out of range is located at its own value ([`Source::emulation`]).
//!
//! The link section every daemon shares is [`LinkConfig`] (see `link.rs` for what each
//! kind does); emulation parameters are [`EmulationConfig`].

use std::fmt;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// A config error located in its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or `<input>` for text not read from a file).
    pub file: PathBuf,
    /// 1-based line, 0 if unknown.
    pub line: usize,
    /// 1-based column, 0 if unknown.
    pub column: usize,
    /// The key the error is about (the key written on that line), if one could be named.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{k}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// The text of a config and where it came from, to locate errors in it.
#[derive(Clone, Debug)]
pub struct Source {
    file: PathBuf,
    text: String,
}

impl Source {
    /// Text read from `file`.
    pub fn new(file: impl Into<PathBuf>, text: impl Into<String>) -> Source {
        Source {
            file: file.into(),
            text: text.into(),
        }
    }

    /// The file's path.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// An error about the bytes at `span`, naming the key on that line.
    pub fn error_at(&self, span: Option<Range<usize>>, message: impl Into<String>) -> ConfigError {
        let (line, column, key) = match span {
            Some(s) => {
                let at = s.start.min(self.text.len());
                let before = self.text.get(..at).unwrap_or_default();
                let line = before.matches('\n').count() + 1;
                let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                let column = before.get(line_start..).map_or(0, |l| l.chars().count()) + 1;
                let text_line = self.text.get(line_start..).unwrap_or_default();
                let text_line = text_line.split('\n').next().unwrap_or_default();
                (line, column, key_of(text_line))
            }
            None => (0, 0, None),
        };
        ConfigError {
            file: self.file.clone(),
            line,
            column,
            key,
            message: message.into(),
        }
    }

    /// An error about a value read through `toml::Spanned`.
    pub fn error_for<T>(&self, value: &Spanned<T>, message: impl Into<String>) -> ConfigError {
        self.error_at(Some(value.span()), message)
    }

    /// Deserialises the whole text as `T`.
    ///
    /// # Errors
    ///
    /// A located [`ConfigError`] for a syntax error, a wrong type or an unknown key.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        toml::from_str(&self.text).map_err(|e| {
            let unknown = e
                .message()
                .split_once("unknown field `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(field, _)| field);
            let message = with_suggestion(e.message());
            match (unknown, e.span()) {
                // In an inline table toml points at the table: point at the key instead.
                (Some(field), Some(table)) => {
                    let at = self
                        .find_key(table.clone(), field)
                        .map(|(k, _)| k..k + field.len());
                    let mut err = self.error_at(at.or(Some(table)), message);
                    err.key = Some(field.to_string());
                    err
                }
                (_, span) => self.error_at(span, message),
            }
        })
    }

    /// The span of the value of `key` written in the table that starts at `table` (the
    /// span `toml::Spanned` gives a table: an inline `{ … }`, a `[header]`, or the first
    /// part of a dotted key), for checks of a table's values that are not spanned one by
    /// one.
    pub fn value_span(&self, table: Range<usize>, key: &str) -> Option<Range<usize>> {
        self.find_key(table, key).map(|(_, value)| value)
    }

    /// Where `key` is written in the table at `table` (see [`value_span`](Self::value_span)):
    /// the key's first byte and its value's span.
    fn find_key(&self, table: Range<usize>, key: &str) -> Option<(usize, Range<usize>)> {
        let start = table.start.min(self.text.len());
        let rest = self.text.get(start..)?;
        // An inline table is its span; a table written over lines runs to the next header.
        let region = if rest.starts_with('{') {
            rest.get(..table.end.saturating_sub(start))?
        } else {
            let first = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let tail = rest.get(first..).unwrap_or_default();
            let end = tail
                .match_indices('\n')
                .map(|(i, _)| i + 1)
                .find(|&i| {
                    tail.get(i..)
                        .is_some_and(|l| l.trim_start().starts_with('['))
                })
                .map_or(rest.len(), |i| first + i);
            rest.get(..end)?
        };
        let mut from = 0;
        while let Some(i) = region.get(from..).and_then(|r| r.find(key)) {
            let at = from + i;
            from = at + key.len();
            let before = region.get(..at).and_then(|b| b.chars().next_back());
            let token_start = before.is_none_or(|c| c.is_whitespace() || "{,.\"".contains(c));
            let after = region.get(at + key.len()..).unwrap_or_default();
            let after = after
                .strip_prefix('"')
                .unwrap_or(after)
                .trim_start_matches([' ', '\t']);
            if let (true, Some(value)) = (token_start, after.strip_prefix('=')) {
                let value = value.trim_start_matches([' ', '\t']);
                let offset = start + (region.len() - value.len());
                let len = value.find(['\n', ',', '}']).unwrap_or(value.len()).max(1);
                return Some((start + at, offset..offset + len));
            }
        }
        None
    }

    /// The link model of `emulation` (the span of its table, as read) on a link of `mtu`
    /// bytes; an error located at the parameter out of range.
    ///
    /// # Errors
    ///
    /// As [`EmulationConfig::check`], located at the key's value and naming the key.
    pub fn emulation(
        &self,
        emulation: &Spanned<EmulationConfig>,
        mtu: usize,
    ) -> Result<netsim::LinkConfig, ConfigError> {
        emulation.get_ref().check(mtu).map_err(|e| {
            let at = self
                .value_span(emulation.span(), e.key)
                .unwrap_or_else(|| emulation.span());
            let mut err = self.error_at(Some(at), format!("emulation: {}", e.message));
            err.key = Some(e.key.to_string());
            err
        })
    }
}

/// `message` from toml/serde, with "did you mean `…`?" after an unknown field or variant
/// when one of those expected is close to what was written.
pub fn with_suggestion(message: &str) -> String {
    let message = message.trim();
    let written = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| message.split_once(p))
        .and_then(|(_, rest)| rest.split_once('`'));
    let Some((written, rest)) = written else {
        return message.to_string();
    };
    let expected = rest.split_once("expected").map_or("", |(_, e)| e);
    let best = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|c| (edit_distance(written, c), c))
        .filter(|&(d, c)| d > 0 && d <= (written.chars().count().max(c.chars().count()) / 3).max(1))
        .min_by_key(|&(d, _)| d);
    match best {
        Some((_, c)) => format!("{message}; did you mean `{c}`?"),
        None => message.to_string(),
    }
}

/// Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows of the optimal-string-alignment table: two back, one back, this one.
    let mut two: Vec<usize> = vec![0; b.len() + 1];
    let mut one: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (one[j] + 1).min(row[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(two[j - 2] + 1);
            }
        }
        two = std::mem::replace(&mut one, row);
    }
    one[b.len()]
}

/// The key written on a line: `key = …` (the last dotted part), `[table]` or `[[array]]`.
fn key_of(line: &str) -> Option<String> {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        let name = rest.trim_start_matches('[').split(']').next()?.trim();
        return (!name.is_empty()).then(|| name.to_string());
    }
    let (k, _) = t.split_once('=')?;
    let k = k.trim().trim_matches('"');
    let k = k.rsplit('.').next().unwrap_or(k).trim().trim_matches('"');
    (!k.is_empty() && !k.starts_with('#')).then(|| k.to_string())
}

/// Reads and parses the config file at `path`.
///
/// # Errors
///
/// A [`ConfigError`] naming the file: unreadable, or located as [`Source::parse`] does.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<(Source, T), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        key: None,
        message: format!("cannot read: {e}"),
    })?;
    let source = Source::new(path, text);
    let value = source.parse()?;
    Ok((source, value))
}

/// What carries a link's frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// IP-in-UDP to one peer: one frame per datagram.
    Udp,
    /// A TUN device: plain IP packets to and from the host's kernel.
    Tun,
}

/// One `[[link]]` of a daemon's config: where its frames go, written as one string
/// (`on = "udp:LOCAL=PEER"`, see [`LinkSpec`](crate::link::LinkSpec)) or spelt out
/// (`kind` with `local`/`peer` or `device`/`addresses`). It writes back as it reads, absent
/// fields left out (a config generated by a launcher, `waist up`'s, stays minimal).
///
/// ```
/// use netio::config::{LinkConfig, Source};
///
/// let link = LinkConfig::udp("r2", "127.0.0.1:40001".parse().unwrap(), "127.0.0.1:40002".parse().unwrap());
/// let text = toml::to_string(&link).unwrap();
/// assert_eq!(text, "name = \"r2\"\nkind = \"udp\"\nlocal = \"127.0.0.1:40001\"\npeer = \"127.0.0.1:40002\"\n");
/// assert_eq!(Source::new("r1.toml", text).parse::<LinkConfig>().unwrap(), link);
/// ```
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// The link's name (for routes, logs, metrics and pcap file names).
    pub name: Spanned<String>,
    /// The link in the one notation: `udp:LOCAL=PEER`, `udp:LOCAL` or
    /// `tun:NAME[,CIDR…]`. Instead of `kind` and its fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<Spanned<String>>,
    /// `udp` or `tun` (with the fields below), when `on` is not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<Spanned<LinkKind>>,
    /// UDP: the local address to bind (`127.0.0.1:40001`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<Spanned<String>>,
    /// UDP: the peer's address; datagrams from anyone else are ignored. Absent: a link to
    /// many peers, each datagram with its source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<Spanned<String>>,
    /// TUN: the device name (`wr1`); created if missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<Spanned<String>>,
    /// TUN: addresses with prefix length to give the device (`["10.1.0.1/24"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<Spanned<String>>,
    /// Largest IP packet the link carries (default 1500).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<Spanned<usize>>,
    /// Distance-vector cost over this link (absent: no routing protocol here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Spanned<u16>>,
    /// UDP: how long, in milliseconds, the link stays down after the kernel refused a send
    /// or receive (the peer's port is closed) before it is tried again (default 1000). Any
    /// datagram from the peer brings it up at once. Not for TUN links (always up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holddown_ms: Option<Spanned<u64>>,
    /// TUN: read and write with a virtio-net header and TSO/USO (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<Spanned<bool>>,
    /// Accepted and ignored (every receive is batched now): kept so older configs load.
    #[serde(default, skip_serializing_if = "is_false")]
    pub batch: bool,
    /// User-space emulation of what this end sends (delay, jitter, loss, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulation: Option<Spanned<EmulationConfig>>,
}

impl LinkConfig {
    /// An IP-in-UDP link to one peer, spelt out (`kind = "udp"`, `local`, `peer`), every
    /// other field absent.
    pub fn udp(name: &str, local: SocketAddr, peer: SocketAddr) -> LinkConfig {
        let at = |v| Spanned::new(0..0, v);
        LinkConfig {
            name: at(name.to_string()),
            on: None,
            kind: Some(Spanned::new(0..0, LinkKind::Udp)),
            local: Some(at(local.to_string())),
            peer: Some(at(peer.to_string())),
            device: None,
            addresses: Vec::new(),
            mtu: None,
            cost: None,
            holddown_ms: None,
            offload: None,
            batch: false,
            emulation: None,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// User-space emulation of one direction of a link (the kernel's netem, which this machine
/// lacks, done by `netsim`'s link model on the wall clock). Each end emulates what it sends.
/// Written back without its zero (off) parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmulationConfig {
    /// Fixed one-way delay, milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: f64,
    /// Extra delay drawn uniformly from 0..=jitter per packet, milliseconds (reorders).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter_ms: f64,
    /// Probability a packet is lost (0–1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub loss: f64,
    /// Probability a packet arrives twice (0–1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicate: f64,
    /// Bottleneck rate, megabits per second (0: unlimited).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rate_mbps: f64,
    /// Most backlog the bottleneck queues before dropping, milliseconds (0: unlimited).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queue_ms: f64,
    /// Seed of the emulation's random draws (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// An emulation parameter out of range: its key and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmulationError {
    /// The parameter's key (`loss`, `delay_ms`, …).
    pub key: &'static str,
    /// What is wrong (`must be a probability between 0 and 1`).
    pub message: String,
}

impl fmt::Display for EmulationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.key, self.message)
    }
}

impl std::error::Error for EmulationError {}

impl EmulationConfig {
    /// The `netsim` link model for these parameters (one tick a microsecond), or a message
    /// naming the parameter out of range ([`check`](Self::check) as a string).
    ///
    /// # Errors
    ///
    /// A probability outside 0–1 or a negative or non-finite time or rate.
    pub fn model(&self, mtu: usize) -> Result<netsim::LinkConfig, String> {
        self.check(mtu).map_err(|e| e.to_string())
    }

    /// The `netsim` link model for these parameters (one tick a microsecond); what a
    /// daemon's config check and its start both call ([`Source::emulation`] locates the
    /// error in a file).
    ///
    /// # Errors
    ///
    /// A probability outside 0–1 or a negative or non-finite time or rate, naming the key.
    pub fn check(&self, mtu: usize) -> Result<netsim::LinkConfig, EmulationError> {
        let err = |key, message: &str| EmulationError {
            key,
            message: message.to_string(),
        };
        let us = |key: &'static str, ms: f64| -> Result<u64, EmulationError> {
            if ms.is_finite() && ms >= 0.0 {
                Ok((ms * 1000.0).round() as u64)
            } else {
                Err(err(key, "must be a finite number of milliseconds ≥ 0"))
            }
        };
        let ppm = |key: &'static str, p: f64| -> Result<u32, EmulationError> {
            if (0.0..=1.0).contains(&p) {
                Ok((p * 1e6).round() as u32)
            } else {
                Err(err(key, "must be a probability between 0 and 1"))
            }
        };
        if !(self.rate_mbps.is_finite() && self.rate_mbps >= 0.0) {
            return Err(err("rate_mbps", "must be ≥ 0"));
        }
        // One tick is a microsecond, so bits per tick is megabits per second.
        let bits_per_tick = self.rate_mbps.round() as u64;
        if self.rate_mbps > 0.0 && bits_per_tick == 0 {
            return Err(err(
                "rate_mbps",
                "below 1 is not supported (1 Mb/s resolution)",
            ));
        }
        Ok(
            netsim::LinkConfig::with_delay(us("delay_ms", self.delay_ms)?)
                .jitter(us("jitter_ms", self.jitter_ms)?)
                .loss_ppm(ppm("loss", self.loss)?)
                .duplicate_ppm(ppm("duplicate", self.duplicate)?)
                .mtu(mtu.max(1))
                .rate(bits_per_tick, us("queue_ms", self.queue_ms)?),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        link: Vec<LinkConfig>,
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let text = "[[link]]\nname = \"a\"\nkind = \"udp\"\nmtu = \"big\"\n";
        let e = Source::new("r1.toml", text).parse::<File>().unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (4, Some("mtu")), "{e}");
        assert!(e.to_string().starts_with("r1.toml:4:7: key `mtu`: "), "{e}");
        let text = "[[link]]\nname = \"a\"\nkind = \"carrier-pigeon\"\n";
        let e = Source::new("r1.toml", text).parse::<File>().unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (3, Some("kind")), "{e}");
        let text = "[[link]]\nname = \"a\"\nkind = \"tun\"\ncolour = 3\n";
        let e = Source::new("x.toml", text).parse::<File>().unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (4, Some("colour")), "{e}");
        let e = Source::new("x.toml", "[[link]\n")
            .parse::<File>()
            .unwrap_err();
        assert_eq!(e.line, 1, "{e}");
    }

    #[test]
    fn spanned_values_locate_later_checks() {
        let text = "[[link]]\nname = \"a\"\nkind = \"udp\"\npeer = \"nowhere\"\n";
        let s = Source::new("r.toml", text);
        let f: File = s.parse().unwrap();
        let peer = f.link[0].peer.as_ref().unwrap();
        let e = s.error_for(peer, "invalid socket address");
        assert_eq!(
            e.to_string(),
            "r.toml:4:8: key `peer`: invalid socket address"
        );
    }

    #[test]
    fn a_misspelt_key_or_variant_gets_a_suggestion() {
        let text = "[[link]]\nname = \"a\"\nkind = \"udp\"\nlocall = \"127.0.0.1:1\"\n";
        let e = Source::new("r.toml", text).parse::<File>().unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (4, Some("locall")), "{e}");
        assert!(e.message.ends_with("; did you mean `local`?"), "{e}");
        let text = "[[link]]\nname = \"a\"\nkind = \"upd\"\n";
        let e = Source::new("r.toml", text).parse::<File>().unwrap_err();
        assert!(e.message.ends_with("did you mean `udp`?"), "{e}");
        let text = "[[link]]\nname = \"a\"\nadress = []\n";
        let e = Source::new("r.toml", text).parse::<File>().unwrap_err();
        assert!(e.message.ends_with("did you mean `addresses`?"), "{e}");
        // In an inline table: the key itself, not the table.
        let text = "[[link]]\nname = \"a\"\nemulation = { delay_ms = 1, los = 0.1 }\n";
        let e = Source::new("r.toml", text).parse::<File>().unwrap_err();
        assert_eq!(
            (e.line, e.column, e.key.as_deref()),
            (3, 29, Some("los")),
            "{e}"
        );
        assert!(e.message.ends_with("did you mean `loss`?"), "{e}");
        // Nothing close: no guess.
        let text = "[[link]]\nname = \"a\"\ncolour = 3\n";
        let e = Source::new("r.toml", text).parse::<File>().unwrap_err();
        assert!(!e.message.contains("did you mean"), "{e}");
        assert_eq!(edit_distance("upd", "udp"), 1);
        assert_eq!(edit_distance("adress", "addresses"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn emulation_errors_are_located_at_their_key() {
        for (text, line, column) in [
            (
                "[[link]]\nname = \"a\"\nemulation = { delay_ms = 1.0, loss = 2.0 }\n",
                3,
                38,
            ),
            (
                "[[link]]\nname = \"a\"\n[link.emulation]\ndelay_ms = 1\nloss = 2.0\n[[link]]\nname = \"b\"\n",
                5,
                8,
            ),
            (
                "[[link]]\nname = \"a\"\nemulation.delay_ms = 1.0\nemulation.loss = 2.0\n",
                4,
                18,
            ),
        ] {
            let s = Source::new("r.toml", text);
            let f: File = s.parse().unwrap();
            let emulation = f.link[0].emulation.as_ref().unwrap();
            let e = s.emulation(emulation, 1500).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "r.toml:{line}:{column}: key `loss`: emulation: must be a probability between 0 and 1"
                ),
                "{text}"
            );
        }
        // A key that is a suffix of another is not taken for it.
        let text = "[[link]]\nname = \"a\"\nemulation = { jitter_ms = 1, delay_ms = -1 }\n";
        let s = Source::new("r.toml", text);
        let f: File = s.parse().unwrap();
        let e = s
            .emulation(f.link[0].emulation.as_ref().unwrap(), 1500)
            .unwrap_err();
        assert_eq!((e.column, e.key.as_deref()), (41, Some("delay_ms")), "{e}");
    }

    #[test]
    fn emulation_maps_to_the_link_model() {
        let e = EmulationConfig {
            delay_ms: 5.0,
            jitter_ms: 0.5,
            loss: 0.01,
            duplicate: 0.0,
            rate_mbps: 100.0,
            queue_ms: 20.0,
            seed: None,
        };
        let m = e.model(1400).unwrap();
        assert_eq!(
            (
                m.delay,
                m.jitter,
                m.loss_ppm,
                m.bits_per_tick,
                m.queue_ticks,
                m.mtu
            ),
            (5000, 500, 10_000, 100, 20_000, 1400)
        );
        assert!(
            EmulationConfig { loss: 1.5, ..e }
                .model(1500)
                .unwrap_err()
                .contains("loss")
        );
        assert!(
            EmulationConfig {
                delay_ms: -1.0,
                ..e
            }
            .model(1500)
            .unwrap_err()
            .contains("delay_ms")
        );
    }
}
