//! A Prometheus endpoint that asks the core for its numbers at scrape time.
//!
//! A daemon's core (a `waist_node::Node`, say) lives in one task and shares nothing by
//! locks. So the endpoint does not hold metrics of its own: on each `GET /metrics` the
//! server task sends a request down a channel, the core task answers it from its
//! `select!` loop with a fresh [`Snapshot`] of its counters, and the server renders that
//! with `prometheus-client`'s text encoder.
//!
//! ```text
//!  scraper ──GET /metrics──► serve (one task per connection, ≤ MAX_CONNECTIONS)
//!                              │ MetricsHandle::scrape: oneshot request ─► ScrapeRequests::next
//!                              │                                          (in the core's select!)
//!                              │ ◄── Snapshot (Vec<Sample>) ──────────── Responder::respond
//!                              ▼
//!                            render ─► 200, text exposition, connection closed
//! ```
//!
//! The server is a deliberately tiny HTTP/1.1 responder on tokio: it reads the request
//! head (at most [`MAX_REQUEST_BYTES`]), answers `GET` or `HEAD` of `/metrics` (a query
//! string is ignored) with the exposition, any other path with 404, another method on
//! `/metrics` with 405, anything it cannot parse with 400 (431 if the head is too long),
//! and closes the connection after one response. The whole exchange must finish within
//! [`CONNECTION_TIMEOUT`]: a connection still unanswered then is closed without an
//! answer. If the core does not answer within [`SCRAPE_TIMEOUT`] (or has stopped
//! listening) the answer is 503. No input can make it panic: the parser only slices
//! checked ranges, and non-UTF-8 heads are a 400.
//!
//! The body is OpenMetrics text as `prometheus-client` writes it (counters get a `_total`
//! suffix, the body ends with `# EOF`). It is sent as
//! `application/openmetrics-text; version=1.0.0` when the request's `Accept` header asks
//! for that (Prometheus does), and as `text/plain; version=0.0.4` otherwise (curl, browsers),
//! which Prometheus' classic parser also reads (`# EOF` is a comment there).
//!
//! What it does not do: no TLS, no authentication, no keep-alive, no compression, no
//! histograms. Bind it to loopback ([`bind_addr`]) unless the user asks otherwise.
//!
//! ```
//! use netio::metrics::{Sample, render};
//!
//! let text = render(vec![
//!     Sample::counter("packets_forwarded", "Packets forwarded.", 3.0).with_label("link", "eth0"),
//!     Sample::gauge("ess_entries", "Live ESS entries.", 12.0),
//! ])?;
//! assert!(text.contains("packets_forwarded_total{link=\"eth0\"} 3.0\n"));
//! assert!(text.contains("ess_entries 12.0\n"));
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::fmt::Write as _;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, anyhow};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

/// The longest request head (request line and headers) the server reads.
pub const MAX_REQUEST_BYTES: usize = 8 * 1024;
/// How long one connection may take, from accept to the last byte of the answer.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server waits for the core to answer a scrape before answering 503.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections served at once; further ones are closed at accept.
pub const MAX_CONNECTIONS: usize = 32;
/// Scrape requests that may wait for the core at once.
const QUEUED_SCRAPES: usize = 16;

/// Where the endpoint listens unless the user asks otherwise: loopback, a port the
/// kernel picks.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether a sample is a counter (only goes up) or a gauge (goes up and down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A monotonic count; rendered with the `_total` suffix.
    Counter,
    /// A value that may go up and down.
    Gauge,
}

/// One number in a [`Snapshot`].
///
/// Samples with the same `name` form one metric family: give them the same `kind` and
/// `help` (the first sample's are used; samples of another kind are left out) and
/// distinct label sets. Names and label names are made valid for Prometheus (other
/// characters become `_`); help and label values are escaped.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric name, without the `_total` suffix for counters (one is stripped if given).
    pub name: String,
    /// One line saying what is counted.
    pub help: String,
    /// Counter or gauge.
    pub kind: Kind,
    /// Label pairs, for example `("link", "eth0")`.
    pub labels: Vec<(String, String)>,
    /// The value at the time of the snapshot.
    pub value: f64,
}

impl Sample {
    /// A counter sample without labels.
    pub fn counter(name: impl Into<String>, help: impl Into<String>, value: f64) -> Sample {
        Sample {
            name: name.into(),
            help: help.into(),
            kind: Kind::Counter,
            labels: Vec::new(),
            value,
        }
    }

    /// A gauge sample without labels.
    pub fn gauge(name: impl Into<String>, help: impl Into<String>, value: f64) -> Sample {
        Sample {
            name: name.into(),
            help: help.into(),
            kind: Kind::Gauge,
            labels: Vec::new(),
            value,
        }
    }

    /// Adds one label.
    pub fn with_label(mut self, name: impl Into<String>, value: impl Into<String>) -> Sample {
        self.labels.push((name.into(), value.into()));
        self
    }
}

/// What the core answers a scrape with: every sample, freshly read.
pub type Snapshot = Vec<Sample>;

/// The server's side of the scrape channel: asks the core for a [`Snapshot`].
///
/// Cheap to clone. When every handle is dropped, [`ScrapeRequests::next`] returns `None`.
#[derive(Debug, Clone)]
pub struct MetricsHandle {
    requests: mpsc::Sender<oneshot::Sender<Snapshot>>,
}

/// The core's side of the scrape channel: a stream of [`Responder`]s.
#[derive(Debug)]
pub struct ScrapeRequests {
    requests: mpsc::Receiver<oneshot::Sender<Snapshot>>,
}

/// One pending scrape; answer it with [`Responder::respond`].
#[derive(Debug)]
pub struct Responder {
    reply: oneshot::Sender<Snapshot>,
}

/// Creates the scrape channel: the handle goes to [`serve`], the requests to the core task.
pub fn channel() -> (MetricsHandle, ScrapeRequests) {
    let (tx, rx) = mpsc::channel(QUEUED_SCRAPES);
    (
        MetricsHandle { requests: tx },
        ScrapeRequests { requests: rx },
    )
}

impl MetricsHandle {
    /// Asks the core for a snapshot and waits for it (at most [`SCRAPE_TIMEOUT`]).
    ///
    /// Fails if the core has dropped its [`ScrapeRequests`] or the [`Responder`], or does
    /// not answer in time.
    pub async fn scrape(&self) -> anyhow::Result<Snapshot> {
        let ask = async {
            let (tx, rx) = oneshot::channel();
            self.requests
                .send(tx)
                .await
                .map_err(|_| anyhow!("the core no longer takes scrape requests"))?;
            rx.await
                .map_err(|_| anyhow!("the core dropped the scrape request"))
        };
        tokio::time::timeout(SCRAPE_TIMEOUT, ask)
            .await
            .map_err(|_| anyhow!("the core did not answer the scrape within {SCRAPE_TIMEOUT:?}"))?
    }
}

impl ScrapeRequests {
    /// Waits for the next scrape; `None` once every [`MetricsHandle`] is gone.
    ///
    /// Cancel-safe, for the core's `select!`: write the branch as
    /// `Some(r) = scrapes.next() => r.respond(node_snapshot(&node))`, so that it is
    /// disabled, not spinning, after `None`. Requests whose scraper already gave up are
    /// skipped.
    pub async fn next(&mut self) -> Option<Responder> {
        loop {
            let reply = self.requests.recv().await?;
            if !reply.is_closed() {
                return Some(Responder { reply });
            }
        }
    }

    /// The next scrape if one is already waiting, without waiting.
    pub fn try_next(&mut self) -> Option<Responder> {
        loop {
            let reply = self.requests.try_recv().ok()?;
            if !reply.is_closed() {
                return Some(Responder { reply });
            }
        }
    }
}

impl Responder {
    /// Answers the scrape. If the scraper has gone meanwhile, the snapshot is dropped.
    pub fn respond(self, snapshot: Snapshot) {
        let _ = self.reply.send(snapshot);
    }
}

/// The address to bind the endpoint to: `requested` if the user gave one, else
/// [`DEFAULT_ADDR`] (`127.0.0.1:0`: loopback only, a port the kernel picks).
///
/// The daemon logs the bound address (`TcpListener::local_addr`) so the user can find it;
/// to expose the endpoint beyond the machine, or on a fixed port, the user passes an
/// address.
pub fn bind_addr(requested: Option<SocketAddr>) -> SocketAddr {
    requested.unwrap_or(DEFAULT_ADDR)
}

/// Renders a snapshot as OpenMetrics text with `prometheus-client`'s encoder.
///
/// Families appear in the order of their first sample. Fails only if the encoder does.
pub fn render(snapshot: Snapshot) -> anyhow::Result<String> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(SnapshotCollector(snapshot)));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)
        .map_err(|_| anyhow!("encoding the metrics failed"))?;
    Ok(out)
}

/// Serves `GET /metrics` on `listener` until `shutdown` completes, asking the core through
/// `handle` on every scrape.
///
/// One task per connection, at most [`MAX_CONNECTIONS`] at once, each bounded by
/// [`MAX_REQUEST_BYTES`] and [`CONNECTION_TIMEOUT`] (see the module docs for the answers).
/// When `shutdown` completes the server stops accepting, aborts the connections in
/// progress and returns `Ok`. Accept errors (such as running out of file descriptors) are
/// logged and retried after a pause, not returned.
pub async fn serve(
    listener: TcpListener,
    handle: MetricsHandle,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let local = listener
        .local_addr()
        .context("metrics listener has no address")?;
    tracing::debug!(%local, "metrics endpoint listening");
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if connections.len() >= MAX_CONNECTIONS {
                        tracing::debug!(%peer, "metrics: too many connections, closing");
                        continue;
                    }
                    let handle = handle.clone();
                    connections.spawn(async move {
                        let served = tokio::time::timeout(CONNECTION_TIMEOUT, answer(stream, &handle));
                        match served.await {
                            Ok(Ok(())) => {}
                            Ok(Err(e)) => tracing::debug!(%peer, error = %e, "metrics connection failed"),
                            Err(_) => tracing::debug!(%peer, "metrics connection timed out"),
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(done) = connections.join_next(), if !connections.is_empty() => {
                if let Err(e) = done {
                    tracing::error!(error = %e, "metrics connection task failed");
                }
            }
        }
    }
    connections.shutdown().await;
    Ok(())
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `GET`/`HEAD /metrics`; `head` is true for `HEAD`, `openmetrics` if `Accept` asks.
    Metrics {
        head: bool,
        openmetrics: bool,
    },
    NotFound,
    MethodNotAllowed,
    Malformed,
}

/// Serves one connection: reads the head, answers once, closes.
async fn answer(mut stream: TcpStream, handle: &MetricsHandle) -> std::io::Result<()> {
    let mut buf = vec![0u8; MAX_REQUEST_BYTES];
    let mut len = 0;
    let request = loop {
        if let Some(head) = buf.get(..len).and_then(head_of) {
            break parse(head);
        }
        let Some(room) = buf.get_mut(len..).filter(|room| !room.is_empty()) else {
            let response = status(431, "Request Header Fields Too Large");
            return finish(stream, &response).await;
        };
        let n = stream.read(room).await?;
        if n == 0 {
            if len == 0 {
                return Ok(()); // connected and closed without a byte: nothing to answer
            }
            break Request::Malformed; // the head never ended
        }
        len += n;
    };
    let response = match request {
        Request::Metrics { head, openmetrics } => match handle.scrape().await.and_then(render) {
            Ok(body) => {
                let kind = if openmetrics {
                    OPENMETRICS
                } else {
                    PROMETHEUS_TEXT
                };
                let mut out = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                if !head {
                    out.push_str(&body);
                }
                out
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics scrape failed");
                status(503, "Service Unavailable")
            }
        },
        Request::NotFound => status(404, "Not Found"),
        Request::MethodNotAllowed => status(405, "Method Not Allowed"),
        Request::Malformed => status(400, "Bad Request"),
    };
    finish(stream, &response).await
}

/// Writes the whole response and closes our side.
async fn finish(mut stream: TcpStream, response: &str) -> std::io::Result<()> {
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// A bodyless answer with a one-line text explanation.
fn status(code: u16, reason: &str) -> String {
    let body = format!("{code} {reason}\n");
    let allow = if code == 405 {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n{allow}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The request head (without the blank line) once `buf` holds all of it.
fn head_of(buf: &[u8]) -> Option<&[u8]> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = buf.windows(2).position(|w| w == b"\n\n");
    match (crlf, lf) {
        (Some(a), Some(b)) => buf.get(..a.min(b)),
        (Some(end), None) | (None, Some(end)) => buf.get(..end),
        (None, None) => None,
    }
}

/// Reads the request line and the `Accept` header of a complete head.
fn parse(head: &[u8]) -> Request {
    let Ok(head) = std::str::from_utf8(head) else {
        return Request::Malformed;
    };
    let mut lines = head.lines();
    let mut parts = lines.next().unwrap_or("").split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Request::Malformed;
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Request::Malformed;
    }
    let path = target.split('?').next().unwrap_or(target);
    if path != "/metrics" {
        return Request::NotFound;
    }
    let head = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Request::MethodNotAllowed,
    };
    let openmetrics = lines.any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("accept")
                && value.contains("application/openmetrics-text")
        })
    });
    Request::Metrics { head, openmetrics }
}

/// Feeds a snapshot to `prometheus-client`'s encoder at scrape time.
#[derive(Debug)]
struct SnapshotCollector(Snapshot);

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut families: Vec<(String, &Sample, Vec<&Sample>)> = Vec::new();
        for sample in &self.0 {
            let mut name = metric_name(&sample.name);
            if sample.kind == Kind::Counter
                && let Some(stem) = name.strip_suffix("_total").filter(|s| !s.is_empty())
            {
                name = stem.to_owned();
            }
            match families.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, first, members)) if first.kind == sample.kind => members.push(sample),
                Some(_) => tracing::debug!(name, "metrics: sample of another kind left out"),
                None => families.push((name, sample, vec![sample])),
            }
        }
        for (name, first, members) in &families {
            let metric_type = match first.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
            };
            let help = escape(&first.help, false);
            let mut metric = encoder.encode_descriptor(name, &help, None, metric_type)?;
            for sample in members {
                let labels: Vec<(String, String)> = sample
                    .labels
                    .iter()
                    .map(|(k, v)| (label_name(k), escape(v, true)))
                    .collect();
                if labels.is_empty() {
                    encode_value(&mut metric, sample)?;
                } else {
                    encode_value(&mut metric.encode_family(&labels)?, sample)?;
                }
            }
        }
        Ok(())
    }
}

/// Writes one sample's value line (the family's labels, if any, are in `metric`).
fn encode_value(metric: &mut MetricEncoder<'_>, sample: &Sample) -> Result<(), std::fmt::Error> {
    match sample.kind {
        Kind::Counter => metric.encode_counter::<NoLabelSet, f64, f64>(&sample.value, None),
        Kind::Gauge => metric.encode_gauge(&sample.value),
    }
}

/// A valid metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`, other characters replaced by `_`.
fn metric_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`, other characters replaced by `_`.
fn label_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_')
}

fn sanitize(name: &str, allowed: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| if allowed(c) { c } else { '_' }));
    out
}

/// Escapes `\` and newlines (and `"` in label values) as the exposition format asks.
fn escape(text: &str, quote: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if quote => out.push_str("\\\""),
            c => {
                let _ = out.write_char(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_request_heads() {
        let get = |head: &str| parse(head.as_bytes());
        assert_eq!(
            get("GET /metrics HTTP/1.1\r\nHost: x"),
            Request::Metrics {
                head: false,
                openmetrics: false
            }
        );
        assert_eq!(
            get("HEAD /metrics?x=1 HTTP/1.0\r\naccept: application/openmetrics-text;version=1.0.0"),
            Request::Metrics {
                head: true,
                openmetrics: true
            }
        );
        assert_eq!(get("GET /other HTTP/1.1"), Request::NotFound);
        assert_eq!(get("POST /metrics HTTP/1.1"), Request::MethodNotAllowed);
        assert_eq!(get("GET /metrics"), Request::Malformed);
        assert_eq!(get("GET /metrics HTTP/1.1 extra"), Request::Malformed);
        assert_eq!(get("GET metrics SPDY/3"), Request::Malformed);
        assert_eq!(get(""), Request::Malformed);
        assert_eq!(parse(&[0xff, 0xfe, b' ', b'/']), Request::Malformed);
    }

    #[test]
    fn finds_the_end_of_the_head() {
        assert_eq!(
            head_of(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"),
            Some(&b"GET / HTTP/1.1\r\nA: b"[..])
        );
        assert_eq!(head_of(b"GET / HTTP/1.1\n\n"), Some(&b"GET / HTTP/1.1"[..]));
        assert_eq!(head_of(b"GET / HTTP/1.1\r\n"), None);
    }

    #[test]
    fn renders_families_once_with_escaped_labels() -> anyhow::Result<()> {
        let text = render(vec![
            Sample::counter("rx_packets_total", "Packets received.", 5.0).with_label("link", "a"),
            Sample::gauge("rx_packets", "wrong kind", 1.0),
            Sample::counter("rx_packets", "ignored help", 7.0).with_label("link", "b\"\\\n"),
            Sample::gauge("1 bad-name", "Line one\nline two", 2.5).with_label("bad label", "v"),
        ])?;
        let expected = "# HELP rx_packets Packets received.\n\
                        # TYPE rx_packets counter\n\
                        rx_packets_total{link=\"a\"} 5.0\n\
                        rx_packets_total{link=\"b\\\"\\\\\\n\"} 7.0\n\
                        # HELP _1_bad_name Line one\\nline two\n\
                        # TYPE _1_bad_name gauge\n\
                        _1_bad_name{bad_label=\"v\"} 2.5\n\
                        # EOF\n";
        assert_eq!(text, expected);
        Ok(())
    }

    #[test]
    fn bind_addr_defaults_to_loopback() {
        assert_eq!(bind_addr(None).to_string(), "127.0.0.1:0");
        let asked: SocketAddr = ([0, 0, 0, 0], 9464).into();
        assert_eq!(bind_addr(Some(asked)), asked);
    }
}
