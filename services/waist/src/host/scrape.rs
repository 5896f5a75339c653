//! The other side of netio's [`metrics`](netio::metrics) endpoint: fetch a daemon's
//! `/metrics` page and read its samples, for tools (`waist route show`, `waist up`,
//! `waist status`) and tests.
//!
//! Blocking on purpose: a tool scrapes a handful of endpoints once, and a launcher polls
//! them while it waits for daemons to come up. The parser reads the text exposition the
//! endpoint writes (and Prometheus' classic format): one sample per line,
//! `name{label="value",…} number`, comments and anything it cannot read skipped.
//!
//! ```
//! let page = "# TYPE waist_frames_forwarded counter\n\
//!             waist_frames_forwarded_total 12\n\
//!             waist_frames_dropped_total{reason=\"no_route\"} 3\n";
//! let samples = waist::host::scrape::parse(page);
//! assert_eq!(waist::host::scrape::sum(&samples, "waist_frames_forwarded_total", &[]), Some(12.0));
//! assert_eq!(samples[1].label("reason"), Some("no_route"));
//! ```

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, bail};

/// One sample of a scraped page.
#[derive(Clone, Debug, PartialEq)]
pub struct Scraped {
    /// The metric name as written (counters carry `_total`).
    pub name: String,
    /// The labels, in the order written.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

impl Scraped {
    /// The value of label `name`, if the sample has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find_map(|(k, v)| (k == name).then_some(v.as_str()))
    }
}

/// Fetches `GET /metrics` from `addr` and returns the body (the classic text format),
/// each step bounded by `timeout`.
///
/// # Errors
///
/// The connection fails or times out, or the answer is not `200`.
pub fn fetch(addr: SocketAddr, timeout: Duration) -> anyhow::Result<String> {
    fetch_path(addr, netio::metrics::METRICS_PATH, timeout)
}

/// Fetches `GET PATH` from the endpoint at `addr` (`/metrics`, or `/api/status` for the
/// JSON view) and returns the body, each step bounded by `timeout`.
///
/// # Errors
///
/// The connection fails or times out, or the answer is not `200`.
pub fn fetch_path(addr: SocketAddr, path: &str, timeout: Duration) -> anyhow::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("cannot reach the metrics endpoint at {addr}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: waist\r\nConnection: close\r\n\r\n").as_bytes(),
    )?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)
        .with_context(|| format!("reading the metrics from {addr}"))?;
    let Some((head, body)) = answer.split_once("\r\n\r\n") else {
        bail!("{addr}: not an HTTP answer");
    };
    let status = head.lines().next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 200") {
        bail!("{addr}: {status}");
    }
    Ok(body.to_string())
}

/// The samples of a text exposition page; lines that are not samples are skipped.
pub fn parse(page: &str) -> Vec<Scraped> {
    page.lines().filter_map(sample).collect()
}

/// One line as a sample, if it is one.
fn sample(line: &str) -> Option<Scraped> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, labels, rest) = match line.find('{') {
        Some(open) => {
            let close = line.rfind('}')?;
            let inner = line.get(open + 1..close)?;
            (
                line.get(..open)?,
                labels(inner)?,
                line.get(close + 1..)?.trim(),
            )
        }
        None => {
            let (name, rest) = line.split_once(' ')?;
            (name, Vec::new(), rest.trim())
        }
    };
    // A timestamp may follow the value.
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Scraped {
        name: name.to_string(),
        labels,
        value,
    })
}

/// `k="v",k2="v2"` (values may hold escaped quotes and commas).
fn labels(mut inner: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    loop {
        inner = inner.trim_start_matches([',', ' ']);
        if inner.is_empty() {
            return Some(out);
        }
        let (key, rest) = inner.split_once('=')?;
        let rest = rest.strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        out.push((key.trim().to_string(), value));
        inner = rest.get(end + 1..)?;
    }
}

/// The sum of the samples named `name` whose labels include every `(key, value)` of
/// `labels`; `None` if there is none.
pub fn sum(samples: &[Scraped], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .filter(|s| s.name == name && labels.iter().all(|(k, v)| s.label(k) == Some(*v)))
        .map(|s| s.value)
        .reduce(|a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_with_and_without_labels() {
        let page = "# HELP x y\n\
                    a_total 3\n\
                    b{k=\"v\",q=\"a,\\\"b\\\"\"} 2.5 1700000000\n\
                    c{} 1\n\
                    garbage\n\
                    d{unterminated=\"x} 4\n\
                    # EOF\n";
        let s = parse(page);
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(s[0].name, "a_total");
        assert_eq!(s[0].value, 3.0);
        assert_eq!(s[1].label("k"), Some("v"));
        assert_eq!(s[1].label("q"), Some("a,\"b\""));
        assert_eq!(s[1].value, 2.5);
        assert_eq!(s[2].name, "c");
        assert!(s[2].labels.is_empty());
    }

    #[test]
    fn sums_filter_by_labels() {
        let s = parse("f{r=\"a\",l=\"x\"} 1\nf{r=\"b\",l=\"x\"} 2\nf{r=\"a\",l=\"y\"} 4\n");
        assert_eq!(sum(&s, "f", &[]), Some(7.0));
        assert_eq!(sum(&s, "f", &[("r", "a")]), Some(5.0));
        assert_eq!(sum(&s, "f", &[("r", "a"), ("l", "y")]), Some(4.0));
        assert_eq!(sum(&s, "f", &[("r", "c")]), None);
        assert_eq!(sum(&s, "g", &[]), None);
    }

    #[test]
    fn what_the_endpoint_renders_parses_back() {
        let snapshot = vec![
            netio::metrics::Sample::counter("pkts", "p", 7.0).with_label("link", "l\"1"),
            netio::metrics::Sample::gauge("up", "u", 1.0),
        ];
        for format in [
            netio::metrics::Format::Prometheus,
            netio::metrics::Format::OpenMetrics,
        ] {
            let s = parse(&netio::metrics::render(&snapshot, format).unwrap());
            assert_eq!(sum(&s, "pkts_total", &[("link", "l\"1")]), Some(7.0));
            assert_eq!(sum(&s, "up", &[]), Some(1.0));
        }
    }
}
