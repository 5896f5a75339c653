//! A Prometheus endpoint that asks the core for its numbers at scrape time, and a JSON
//! view of the same daemon for tools.
//!
//! A daemon's core (a `waist_node::Node`, say) lives in one task and shares nothing by
//! locks. So the endpoint does not hold metrics of its own: on each request the server
//! task sends a request down a channel, the core task answers it from its `select!` loop
//! with a fresh [`Snapshot`] of its counters (or, for the JSON view, its status), and the
//! server renders that.
//!
//! ```text
//!  scraper ──GET /metrics──► serve (one task per connection, ≤ MAX_CONNECTIONS)   (http)
//!  tool ──GET /api/status──►   │ MetricsHandle: oneshot request ─► ScrapeRequests::next
//!                              │                                   (in the core's select!)
//!                              │ ◄── Snapshot / status JSON ────── Responder::respond…
//!                              ▼
//!                            render (classic text or OpenMetrics) / json ─► 200, closed
//! ```
//!
//! What is served:
//!
//! | request | answer |
//! |---|---|
//! | `GET /metrics`, `Accept` preferring `application/openmetrics-text` (Prometheus does) | OpenMetrics 1.0.0, `application/openmetrics-text; version=1.0.0; charset=utf-8` ([`Format::OpenMetrics`]) |
//! | `GET /metrics`, any other `Accept` (curl, browsers) | the classic Prometheus text format 0.0.4, `text/plain; version=0.0.4; charset=utf-8` ([`Format::Prometheus`]) |
//! | `GET /api/status`, from a loopback address | JSON, `application/json`: the core's status if it gives one ([`Responder::respond_status`]; waist-router: routes, links, counters), otherwise `{"samples": […]}` ([`samples_json`]) |
//!
//! The two text formats differ where it matters to parsers: in the classic format a
//! counter's family is named with its `_total` suffix (`# TYPE x_total counter`, sample
//! `x_total`) and there is no `# EOF`; in OpenMetrics the family is `x`, its sample
//! `x_total`, and the body ends with `# EOF`. Each is labelled as what it is.
//!
//! The server is a deliberately tiny HTTP/1.1 responder on tokio ([`serve`]): it reads the
//! request head (at most [`MAX_REQUEST_BYTES`]), answers `GET` or `HEAD` of the paths above
//! (a query string is ignored), any other path with 404, another method with 405,
//! `/api/status` from a peer that is not loopback with 403, anything it cannot parse with
//! 400 (431 if the head is too long), and closes the connection after one response. The
//! whole exchange must finish within [`CONNECTION_TIMEOUT`]: a connection still
//! unanswered then is closed without an answer. If the core does not answer within
//! [`SCRAPE_TIMEOUT`] (or has stopped listening) the answer is 503. No input can make it
//! panic: the parser only slices checked ranges, and non-UTF-8 heads are a 400.
//!
//! What it does not do: no TLS, no authentication, no keep-alive, no compression, no
//! histograms. Bind it to loopback ([`bind_addr`]) unless the user asks otherwise; the
//! JSON view answers loopback peers only, wherever it is bound.
//!
//! ```
//! use netio::metrics::{Format, Sample, render};
//!
//! let snapshot = vec![
//!     Sample::counter("waist_frames_forwarded", "Frames forwarded.", 3.0).with_label("link", "eth0"),
//!     Sample::gauge("waist_ess_entries", "Live ESS entries.", 12.0),
//! ];
//! let classic = render(&snapshot, Format::Prometheus)?;
//! assert!(classic.contains("# TYPE waist_frames_forwarded_total counter\n"));
//! assert!(classic.contains("waist_frames_forwarded_total{link=\"eth0\"} 3\n"));
//! let open = render(&snapshot, Format::OpenMetrics)?;
//! assert!(open.contains("# TYPE waist_frames_forwarded counter\n"));
//! assert!(open.contains("waist_ess_entries 12.0\n") && open.ends_with("# EOF\n"));
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::anyhow;
use tokio::sync::{mpsc, oneshot};

mod http;
mod json;
mod render;

pub use http::serve;
pub use json::samples_json;
pub use render::{Format, render};

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

/// The path of the metrics page.
pub const METRICS_PATH: &str = "/metrics";
/// The path of the JSON view (loopback peers only).
pub const STATUS_PATH: &str = "/api/status";

/// Where the endpoint listens unless the user asks otherwise: loopback, a port the
/// kernel picks.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// Whether a sample is a counter (only goes up) or a gauge (goes up and down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A monotonic count; exposed with the `_total` suffix.
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
///
/// Name them as Prometheus asks: snake_case with the daemon's prefix (`waist_`,
/// `trickles_`), in base units (`_bytes`, `_seconds`), a counter without its `_total`
/// (the renderers add it; one given is stripped).
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

/// What the core sends back: samples, or its status as JSON.
#[derive(Debug)]
enum Answer {
    Samples(Snapshot),
    Status(serde_json::Value),
}

/// One request to the core.
#[derive(Debug)]
struct Ask {
    /// The JSON view asks; the metrics page does not.
    status: bool,
    reply: oneshot::Sender<Answer>,
}

/// The server's side of the scrape channel: asks the core for a [`Snapshot`] or its
/// status.
///
/// Cheap to clone. When every handle is dropped, [`ScrapeRequests::next`] returns `None`.
#[derive(Debug, Clone)]
pub struct MetricsHandle {
    requests: mpsc::Sender<Ask>,
}

/// The core's side of the scrape channel: a stream of [`Responder`]s.
#[derive(Debug)]
pub struct ScrapeRequests {
    requests: mpsc::Receiver<Ask>,
}

/// One pending request; answer it with [`Responder::respond`] (or, if
/// [`wants_status`](Responder::wants_status), optionally [`Responder::respond_status`]).
#[derive(Debug)]
pub struct Responder {
    ask: Ask,
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
    /// Sends one request and waits for the answer (at most [`SCRAPE_TIMEOUT`]).
    async fn ask(&self, status: bool) -> anyhow::Result<Answer> {
        let ask = async {
            let (tx, rx) = oneshot::channel();
            self.requests
                .send(Ask { status, reply: tx })
                .await
                .map_err(|_| anyhow!("the core no longer takes scrape requests"))?;
            rx.await
                .map_err(|_| anyhow!("the core dropped the scrape request"))
        };
        tokio::time::timeout(SCRAPE_TIMEOUT, ask)
            .await
            .map_err(|_| anyhow!("the core did not answer the scrape within {SCRAPE_TIMEOUT:?}"))?
    }

    /// Asks the core for a snapshot and waits for it (at most [`SCRAPE_TIMEOUT`]).
    ///
    /// Fails if the core has dropped its [`ScrapeRequests`] or the [`Responder`], or does
    /// not answer in time.
    pub async fn scrape(&self) -> anyhow::Result<Snapshot> {
        match self.ask(false).await? {
            Answer::Samples(s) => Ok(s),
            Answer::Status(_) => Err(anyhow!("the core answered a scrape with its status")),
        }
    }

    /// Asks the core for its status as JSON: what it gives with
    /// [`Responder::respond_status`], or else its samples as [`samples_json`] shows them.
    ///
    /// Fails as [`scrape`](MetricsHandle::scrape) does.
    pub async fn status(&self) -> anyhow::Result<serde_json::Value> {
        Ok(match self.ask(true).await? {
            Answer::Samples(s) => samples_json(&s),
            Answer::Status(v) => v,
        })
    }
}

impl ScrapeRequests {
    /// Waits for the next request; `None` once every [`MetricsHandle`] is gone.
    ///
    /// Cancel-safe, for the core's `select!`: write the branch as
    /// `Some(r) = scrapes.next() => r.respond(node_snapshot(&node))`, so that it is
    /// disabled, not spinning, after `None`. Requests whose asker already gave up are
    /// skipped.
    pub async fn next(&mut self) -> Option<Responder> {
        loop {
            let ask = self.requests.recv().await?;
            if !ask.reply.is_closed() {
                return Some(Responder { ask });
            }
        }
    }

    /// The next request if one is already waiting, without waiting.
    pub fn try_next(&mut self) -> Option<Responder> {
        loop {
            let ask = self.requests.try_recv().ok()?;
            if !ask.reply.is_closed() {
                return Some(Responder { ask });
            }
        }
    }
}

impl Responder {
    /// Whether this request is for the JSON view (`GET /api/status`) rather than the
    /// metrics page: a core with a status of its own answers it with
    /// [`respond_status`](Responder::respond_status).
    pub fn wants_status(&self) -> bool {
        self.ask.status
    }

    /// Answers with the samples (for the JSON view, they are shown as [`samples_json`]
    /// does). If the asker has gone meanwhile, the snapshot is dropped.
    pub fn respond(self, snapshot: Snapshot) {
        let _ = self.ask.reply.send(Answer::Samples(snapshot));
    }

    /// Answers with the core's status, served as it is by `GET /api/status`. Meant for
    /// requests that [`wants_status`](Responder::wants_status); a metrics scrape answered
    /// this way fails (503).
    pub fn respond_status(self, status: serde_json::Value) {
        let _ = self.ask.reply.send(Answer::Status(status));
    }
}

/// The address to bind the endpoint to: `requested` if the user gave one, else
/// [`DEFAULT_ADDR`] (`127.0.0.1:0`: loopback only, a port the kernel picks).
///
/// The daemon logs the bound address (`TcpListener::local_addr`) so the user can find it;
/// to expose the endpoint beyond the machine, or on a fixed port, the user passes an
/// address. The JSON view answers loopback peers only, whatever the address.
pub fn bind_addr(requested: Option<SocketAddr>) -> SocketAddr {
    requested.unwrap_or(DEFAULT_ADDR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addr_defaults_to_loopback() {
        assert_eq!(bind_addr(None).to_string(), "127.0.0.1:0");
        let asked: SocketAddr = ([0, 0, 0, 0], 9464).into();
        assert_eq!(bind_addr(Some(asked)), asked);
    }

    #[tokio::test]
    async fn status_requests_are_marked_and_fall_back_to_the_samples() {
        let (handle, mut requests) = channel();
        let core = tokio::spawn(async move {
            let mut seen = Vec::new();
            for _ in 0..3 {
                let Some(r) = requests.next().await else {
                    break;
                };
                seen.push(r.wants_status());
                match seen.len() {
                    2 => r.respond_status(serde_json::json!({"router": "r1"})),
                    _ => r.respond(vec![Sample::gauge("g", "a gauge", 2.0)]),
                }
            }
            seen
        });
        let scraped = handle.scrape().await.unwrap();
        assert_eq!(scraped.len(), 1);
        assert_eq!(
            handle.status().await.unwrap(),
            serde_json::json!({"router": "r1"})
        );
        let fallback = handle.status().await.unwrap();
        assert_eq!(fallback["samples"][0]["name"], "g");
        assert_eq!(core.await.unwrap(), [false, true, true]);
    }
}
