//! `trickles-get`: downloads one URL over Trickles, from one server or several replicas,
//! over one connection or several (byte ranges), to a file or to stdout.
//!
//! ```text
//!  URL ─► GET head in the SYN ─► udp::Link ─► output stream ─► ResponseHead::parse
//!                                                 └─► body ─► Output::write_at(offset)
//! ```
//!
//! With `--via udp:LOCAL=PEER` every datagram goes from the local socket LOCAL to that
//! first hop PEER (a waist router's link socket) and the URL's host is the server's inner
//! address (`trickles://10.2.0.80/f`, the port optional); `--src` sets the inner source
//! (see [`Hop`]; `--via PEER --bind LOCAL` is the older spelling).
//!
//! With `--parallel N` (N > 1) the first connection asks for the first
//! [`FIRST_PART`] bytes; the `Content-Range` of its answer gives the file's length, and
//! the rest is split among N − 1 more connections, each writing at its own offset. To
//! stdout, parts that arrive ahead of their turn wait in memory.
//!
//! ## Giving up
//!
//! Three deadlines, as curl's `--connect-timeout` and `--max-time`:
//!
//! * `--connect-timeout SECS` (5): no datagram from any server since the request;
//! * `--idle-timeout SECS` (10): no byte of the response for that long once a server has
//!   answered (meanwhile the link fails over to the next replica after every
//!   `--failover-ms` of silence, so each replica has been asked);
//! * `--timeout-s SECS` (alias `--max-time`, none by default): the whole transfer.
//!
//! Each ends the download with one line naming the server(s) and what timed out, and exit
//! code 28 ([`EXIT_TIMEOUT`], curl's); any other failure exits 1, bad arguments 2. A
//! failed download to a file never leaves a file that looks complete: the bytes received
//! are kept as `FILE.partial` (named in the error), or the file is removed if none came.
//! `--json` prints one object on stdout at the end ([`outcome`]).

use std::io::IsTerminal;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant as StdInstant};

use anyhow::{Context as _, bail};
use indicatif::{ProgressBar, ProgressStyle};
use trickles::app::http::{ContentRange, HttpError, ResponseHead};
use trickles::client::ConnId;

use crate::options::{parse_secs, secs_text};
use crate::udp::{DEFAULT_FAILOVER, Hop, Link, LinkStats, Mode, parse_emulation};

pub mod outcome;
mod output;
mod url;

use output::Output;
pub use url::{Url, request_head};

pub use outcome::{EXIT_FAILURE, EXIT_TIMEOUT, ErrorKind, Failed, GetError, main};

/// Bytes the first connection of a parallel download asks for.
pub const FIRST_PART: u64 = 1 << 20;

/// Downloads a file from a Trickles web server (trickles-web) over IP-in-UDP.
#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "trickles-get",
    version,
    after_help = "Exit status: 0 downloaded; 1 failed (the server's error status, a broken \
                  response, sockets); 2 bad arguments; 28 timed out (--connect-timeout, \
                  --idle-timeout, --timeout-s). A failed download to FILE leaves FILE.partial \
                  (the bytes received) or nothing."
)]
pub struct Args {
    /// `trickles://HOST:PORT/path`: HOST:PORT is the server's UDP address (with --via:
    /// `trickles://IP[:PORT]/path`, IP the server's inner address, any port ignored).
    pub url: String,
    /// Write the body here (`-` or absent: stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Fetch the file over N connections by byte ranges.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub parallel: u16,
    /// Another replica's UDP address (repeatable; the URL's server comes first). Not with
    /// --via: behind routers replicas share the URL's (anycast) address.
    #[arg(long = "server", value_name = "ADDR")]
    pub servers: Vec<String>,
    /// Spread the packets over all replicas round-robin instead of failing over.
    #[arg(long)]
    pub spray: bool,
    /// Silence (milliseconds) after which the next replica takes over.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_FAILOVER.as_millis() as u64)]
    pub failover_ms: u64,
    /// Emulate loss, delay and jitter on what is sent and what is received, e.g.
    /// `loss=0.05,delay_ms=5,jitter_ms=5` (keys: delay_ms, jitter_ms, loss, duplicate,
    /// rate_mbps, queue_ms, seed).
    #[arg(long, value_name = "SPEC")]
    pub emulate: Option<String>,
    /// Give up when no server has answered this long after the request (exit code 28).
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_secs)]
    pub connect_timeout: Duration,
    /// Give up when no byte has arrived for this long once a server answered, failing
    /// over to every replica meanwhile (exit code 28).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    pub idle_timeout: Duration,
    /// Give up after this many seconds in all, whatever the progress (exit code 28).
    #[arg(long, visible_alias = "max-time", value_name = "SECS")]
    pub timeout_s: Option<u64>,
    /// Print one JSON object on stdout when done: what was fetched, from where, how
    /// fast, or why not (needs -o FILE: stdout is the body's otherwise).
    #[arg(long)]
    pub json: bool,
    /// The first hop and the inner addresses (--via, --src, --bind).
    #[command(flatten)]
    pub hop: Hop,
    /// Logging: `--log-format text|json`.
    #[command(flatten)]
    pub log: netio::trace::LogArgs,
}

/// What a finished download did.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Body bytes written.
    pub bytes: u64,
    /// Time from the first SYN to the last byte.
    pub elapsed: Duration,
    /// Connections used.
    pub connections: usize,
    /// The link's counters.
    pub link: LinkStats,
    /// The replicas, in the order of the link's counters (with `--via`: the first hop).
    pub replicas: Vec<SocketAddr>,
    /// The inner server address the connections named.
    pub server: IpAddr,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            self.bytes as f64 / secs / 1e6
        } else {
            0.0
        };
        write!(
            f,
            "{} bytes in {secs:.3} s, {rate:.2} MB/s, {} connection(s) to {}",
            self.bytes, self.connections, self.server
        )?;
        for (i, r) in self.replicas.iter().enumerate() {
            let sent = self.link.sent.get(i).copied().unwrap_or(0);
            let received = self.link.received.get(i).copied().unwrap_or(0);
            write!(f, "; {r} sent {sent} received {received}")?;
        }
        if self.link.failovers > 0 {
            write!(f, "; {} failover(s)", self.link.failovers)?;
        }
        Ok(())
    }
}

/// Why a download failed in a way worth its own message.
#[derive(Debug)]
pub struct StatusError {
    /// The status code.
    pub status: u16,
    /// The reason phrase.
    pub reason: String,
}

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the server answered {} {}", self.status, self.reason)
    }
}

impl std::error::Error for StatusError {}

async fn resolve(addr: &str) -> anyhow::Result<SocketAddr> {
    tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("cannot resolve {addr}"))?
        .next()
        .with_context(|| format!("{addr} has no address"))
}

/// What a connection's answer must look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A plain GET: any 2xx.
    Whole,
    /// The first part of a parallel download: 206 with the length, 200, or 416 for an
    /// empty file.
    Probe,
    /// A later part: 206 for exactly these bytes.
    Range { first: u64, last: u64 },
}

/// One connection's progress.
struct Part {
    id: ConnId,
    expect: Expect,
    /// The output stream until the head is whole.
    head_buf: Vec<u8>,
    /// Body offset in the file and length, once the head has arrived.
    body: Option<(u64, u64)>,
    /// Body bytes taken.
    written: u64,
    /// Whether the body is the file's (an empty file's 416 brings an error text).
    keep: bool,
    done: bool,
}

/// What a connection's head said, for the download as a whole.
enum Learned {
    /// Nothing (a later part).
    Nothing,
    /// The whole object comes on this connection, this long.
    Whole(u64),
    /// The object is this long and the probe brings only its start: split the rest.
    Split(u64),
}

impl Part {
    fn new(id: ConnId, expect: Expect) -> Part {
        Part {
            id,
            expect,
            head_buf: Vec::new(),
            body: None,
            written: 0,
            keep: true,
            done: false,
        }
    }

    /// Checks the head against what was asked; returns the body's offset and length.
    fn accept(&self, head: &ResponseHead<'_>) -> anyhow::Result<(u64, u64, Learned)> {
        // A probe's 416 saying the object is empty is an empty download.
        let empty = self.expect == Expect::Probe
            && head.status == 416
            && head.content_range == Some(ContentRange::Unsatisfied { complete_len: 0 });
        if !head.is_success() && !empty {
            return Err(StatusError {
                status: head.status,
                reason: head.reason.to_string(),
            }
            .into());
        }
        if head.transfer_encoded {
            bail!("the server sent a Transfer-Encoding, which is not supported");
        }
        let len = head
            .content_length
            .context("the server sent no Content-Length")?;
        match (self.expect, head.status, head.content_range) {
            (Expect::Whole, _, _) | (Expect::Probe, 200, _) => Ok((0, len, Learned::Whole(len))),
            (Expect::Probe, 416, _) => Ok((0, len, Learned::Whole(0))),
            (
                Expect::Probe,
                206,
                Some(ContentRange::Bytes {
                    first: 0,
                    last,
                    complete_len: Some(total),
                }),
            ) if last + 1 == len => Ok((0, len, Learned::Split(total))),
            (
                Expect::Range { first, last },
                206,
                Some(ContentRange::Bytes {
                    first: f, last: l, ..
                }),
            ) if (f, l) == (first, last) && len == last - first + 1 => {
                Ok((first, len, Learned::Nothing))
            }
            _ => bail!(
                "unexpected answer {} {} ({:?}) to a {:?} request",
                head.status,
                head.reason,
                head.content_range,
                self.expect
            ),
        }
    }
}

/// What the progress line shows before the object's length is known: bytes and rate, no
/// bar (a bar of an unknown total would be drawn full).
const PROGRESS_UNKNOWN: &str = "{bytes} {binary_bytes_per_sec}";
/// What it shows once the length is known.
const PROGRESS_KNOWN: &str = "{bytes}/{total_bytes} {wide_bar} {binary_bytes_per_sec} eta {eta}";

/// The download's progress line: on a terminal, without a length until the response says
/// it ([`show_total`]); hidden otherwise.
fn progress_bar(visible: bool) -> ProgressBar {
    let bar = if visible {
        ProgressBar::no_length()
    } else {
        ProgressBar::hidden()
    };
    if let Ok(style) = ProgressStyle::with_template(PROGRESS_UNKNOWN) {
        bar.set_style(style);
    }
    bar
}

/// The object's length is known: the line becomes a bar of `total` bytes.
fn show_total(bar: &ProgressBar, total: u64) {
    bar.set_length(total);
    if let Ok(style) = ProgressStyle::with_template(PROGRESS_KNOWN) {
        bar.set_style(style);
    }
}

/// A download in progress.
struct Download {
    url: Url,
    parallel: u16,
    parts: Vec<Part>,
    output: Output,
    progress: ProgressBar,
    /// The object's length, once known.
    total: Option<u64>,
    /// Bytes of the output streams taken so far (heads included): the progress the idle
    /// timeout watches.
    taken: u64,
}

impl Download {
    /// Reads every connection's new output and writes its body. Returns whether every
    /// part is done.
    fn read(&mut self, link: &mut Link) -> anyhow::Result<bool> {
        let mut i = 0;
        while let Some(part) = self.parts.get_mut(i) {
            i += 1;
            if part.done {
                continue;
            }
            let mut learned = Learned::Nothing;
            loop {
                // In place: the body goes from the connection's buffer to the output with
                // no copy in between (only the head is gathered).
                let waiting = link.demux().peek(part.id);
                let n = waiting.len();
                if n == 0 {
                    break;
                }
                'chunk: {
                    let mut chunk = waiting;
                    let head_rest;
                    if part.body.is_none() {
                        part.head_buf.extend_from_slice(chunk);
                        let head_len = match ResponseHead::parse(&part.head_buf) {
                            Ok((head, head_len)) => {
                                let (offset, len, l) = part.accept(&head)?;
                                part.body = Some((offset, len));
                                part.keep = head.is_success();
                                learned = l;
                                head_len
                            }
                            Err(HttpError::Incomplete) => break 'chunk,
                            Err(e) => bail!("bad response head: {e}"),
                        };
                        head_rest = part.head_buf.split_off(head_len);
                        part.head_buf = Vec::new();
                        chunk = &head_rest;
                    }
                    let Some((offset, len)) = part.body else {
                        break 'chunk;
                    };
                    if part.written + chunk.len() as u64 > len {
                        bail!("the server sent more than its Content-Length of {len}");
                    }
                    if part.keep {
                        self.output.write_at(offset + part.written, chunk)?;
                        self.progress.inc(chunk.len() as u64);
                    }
                    part.written += chunk.len() as u64;
                }
                link.demux_mut().consume(part.id, n);
                self.taken += n as u64;
            }
            let Some(client) = link.demux().get(part.id) else {
                bail!("connection {} vanished", part.id);
            };
            if client.is_reset() {
                bail!("the server reset the connection");
            }
            if client.is_complete() && client.readable() == 0 {
                match part.body {
                    Some((_, len)) if part.written == len => {}
                    Some((_, len)) => {
                        bail!("the body ended after {} of its {len} bytes", part.written)
                    }
                    None => bail!("the connection ended before a whole response head"),
                }
                part.done = true;
                tracing::debug!(conn = %part.id, stats = ?client.stats(), srtt_us = ?client.srtt_us(), "part done");
                // Let its FIN leave before the connection goes.
                link.send_pending();
                link.demux_mut().close(part.id);
            }
            match learned {
                Learned::Nothing => {}
                Learned::Whole(len) => {
                    self.total = Some(len);
                    show_total(&self.progress, len);
                }
                Learned::Split(total) => {
                    self.total = Some(total);
                    show_total(&self.progress, total);
                    self.split_rest(link, total)?;
                }
            }
        }
        Ok(self.parts.iter().all(|p| p.done))
    }

    /// Opens the connections for the bytes the probe did not ask for.
    fn split_rest(&mut self, link: &mut Link, total: u64) -> anyhow::Result<()> {
        let start = FIRST_PART.min(total);
        let rest = total - start;
        if rest == 0 {
            return Ok(());
        }
        let n = u64::from(self.parallel.saturating_sub(1).max(1)).min(rest);
        let share = rest.div_ceil(n);
        let mut first = start;
        while first < total {
            let last = (first + share).min(total) - 1;
            let request = request_head(&self.url, Some((first, last)));
            let id = link
                .open(&request)
                .map_err(|e| anyhow::anyhow!("opening a connection: {e}"))?;
            self.parts
                .push(Part::new(id, Expect::Range { first, last }));
            first = last + 1;
        }
        Ok(())
    }
}

/// The inner address of `host` (an IP literal, or a name resolved by the system).
async fn resolve_ip(host: &str) -> anyhow::Result<IpAddr> {
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    Ok(resolve(&format!("{host}:0")).await?.ip())
}

/// Runs the download `args` describes and returns its summary (print it on stderr).
///
/// # Errors
///
/// Bad arguments, an address that cannot be bound or resolved; once the transfer has
/// begun, a [`Failed`] (a timeout is a [`GetError`] inside it).
pub async fn run(args: &Args) -> anyhow::Result<Summary> {
    let via = args.hop.via.is_some();
    let url = Url::parse(&args.url, !via)?;
    let mut cfg = if via {
        if let Some(s) = args.servers.first() {
            bail!(
                "--server {s} with --via: behind routers the URL's host is the one (anycast) \
                 server address and the network picks the replica"
            );
        }
        args.hop.check(1, args.spray)?;
        let inner = resolve_ip(url.host()).await?;
        args.hop.link_config(Vec::new(), inner)
    } else {
        let first = resolve(&url.authority).await?;
        let mut replicas = vec![first];
        for s in &args.servers {
            replicas.push(resolve(s).await?);
        }
        args.hop.link_config(replicas, first.ip())
    };
    cfg.mode = if args.spray {
        Mode::Spray
    } else {
        Mode::Failover
    };
    cfg.failover = Duration::from_millis(args.failover_ms.max(1));
    cfg.emulation = args.emulate.as_deref().map(parse_emulation).transpose()?;
    // The parts share the socket's receive window.
    cfg.connections = u32::from(args.parallel.max(1));
    let replicas = cfg.replicas.clone();
    let mut link = Link::bind(cfg).await?;
    let servers = match args.hop.via {
        Some(v) => format!("{} via {}", link.server(), v.peer),
        None => replicas
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    };
    let output = Output::open(args.output.as_ref())?;
    let progress = progress_bar(std::io::stderr().is_terminal());
    let started = StdInstant::now();
    let (expect, range) = if args.parallel > 1 {
        (Expect::Probe, Some((0, FIRST_PART - 1)))
    } else {
        (Expect::Whole, None)
    };
    let id = link
        .open(&request_head(&url, range))
        .map_err(|e| anyhow::anyhow!("opening a connection: {e}"))?;
    let mut dl = Download {
        url,
        parallel: args.parallel,
        parts: vec![Part::new(id, expect)],
        output,
        progress,
        total: None,
        taken: 0,
    };
    let limits = Limits {
        connect: args.connect_timeout,
        idle: args.idle_timeout,
        max: args.timeout_s.map(Duration::from_secs),
    };
    let result = transfer(&mut dl, &mut link, &limits, &servers, started).await;
    let elapsed = started.elapsed();
    let bytes: u64 = dl.parts.iter().filter(|p| p.keep).map(|p| p.written).sum();
    dl.progress.finish_and_clear();
    let stats = link.stats();
    if let Err(error) = result {
        let kind = ErrorKind::of(&error);
        return Err(Failed {
            kind,
            error,
            bytes,
            total: dl.total,
            elapsed,
            partial: dl.output.abandon(bytes),
            replicas,
            connections: dl.parts.len(),
            failovers: stats.failovers,
        }
        .into());
    }
    dl.output.finish(bytes)?;
    Ok(Summary {
        bytes,
        elapsed,
        connections: dl.parts.len(),
        link: stats,
        replicas,
        server: link.server(),
    })
}

/// The deadlines of a transfer (see the module docs).
#[derive(Clone, Copy, Debug)]
struct Limits {
    connect: Duration,
    idle: Duration,
    max: Option<Duration>,
}

/// Drives `link` until every part of `dl` is done or a deadline of `limits` passes
/// (counted from `started`; `servers` names them in the error).
async fn transfer(
    dl: &mut Download,
    link: &mut Link,
    limits: &Limits,
    servers: &str,
    started: StdInstant,
) -> anyhow::Result<()> {
    let mut taken = dl.taken;
    let mut progress_at = started;
    let max_due = limits.max.map(|m| started + m);
    // One timer, re-armed only when it has fired or must fire sooner: progress moves the
    // idle deadline later at every step, and a late wake-up just re-checks it.
    let mut armed = started + limits.connect;
    let sleep = tokio::time::sleep_until(armed.into());
    tokio::pin!(sleep);
    loop {
        if dl.read(link)? {
            return Ok(());
        }
        let now = StdInstant::now();
        if dl.taken != taken {
            (taken, progress_at) = (dl.taken, now);
        }
        let got = || {
            let got: u64 = dl.parts.iter().map(|p| p.written).sum();
            let of = dl.total.map(|t| format!(" of {t}")).unwrap_or_default();
            format!("{got}{of} bytes received")
        };
        if let Some(due) = max_due
            && now >= due
        {
            return Err(GetError::new(
                ErrorKind::MaxTime,
                format!(
                    "{servers}: gave up after {} (--timeout-s), {}",
                    secs_text(limits.max.unwrap_or_default()),
                    got()
                ),
            )
            .into());
        }
        let (kind, due) = match link.last_heard() {
            None => (ErrorKind::ConnectTimeout, started + limits.connect),
            Some(_) => (ErrorKind::IdleTimeout, progress_at + limits.idle),
        };
        if now >= due {
            let message = match kind {
                ErrorKind::ConnectTimeout => format!(
                    "no answer from {servers} within {}",
                    secs_text(limits.connect)
                ),
                _ => format!(
                    "no data from {servers} for {} ({} failover(s)), {}",
                    secs_text(limits.idle),
                    link.stats().failovers,
                    got()
                ),
            };
            return Err(GetError::new(kind, message).into());
        }
        let wake = max_due.map_or(due, |m| m.min(due));
        if sleep.is_elapsed() || wake < armed {
            armed = wake;
            sleep.as_mut().reset(armed.into());
        }
        // Cancel-safe: a step cut short by the timer loses nothing.
        tokio::select! {
            () = link.drive() => {}
            () = &mut sleep => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_progress_line_has_no_length_until_the_total_is_known() {
        let bar = super::progress_bar(true);
        bar.inc(15);
        // Before: a bar of length 0 with 15 bytes done, drawn full ("15 B/0 B ████").
        assert_eq!(bar.length(), None);
        assert!(!super::PROGRESS_UNKNOWN.contains("bar"));
        super::show_total(&bar, 100);
        assert_eq!((bar.position(), bar.length()), (15, Some(100)));
    }

    use super::*;

    #[test]
    fn urls() {
        let u: Url = "trickles://127.0.0.1:7700/a/b.txt?x=1".parse().unwrap();
        assert_eq!(u.authority, "127.0.0.1:7700");
        assert_eq!(u.path, "/a/b.txt?x=1");
        let u: Url = "trickles://localhost:1".parse().unwrap();
        assert_eq!(u.path, "/");
        assert!("http://h:1/".parse::<Url>().is_err());
        assert!("trickles://h/".parse::<Url>().is_err());
        assert!("trickles://h:1/a b".parse::<Url>().is_err());
        // Behind a router the port may go.
        let u = Url::parse("trickles://10.2.0.80/x", false).unwrap();
        assert_eq!((u.host(), u.path.as_str()), ("10.2.0.80", "/x"));
        assert!(Url::parse("trickles://10.2.0.80/x", true).is_err());
        assert_eq!(
            Url::parse("trickles://10.2.0.80:7/", false).unwrap().host(),
            "10.2.0.80"
        );
        assert_eq!(
            Url::parse("trickles://[fd00::80]/", false).unwrap().host(),
            "fd00::80"
        );
        assert_eq!(
            Url::parse("trickles://[fd00::80]:9/", true).unwrap().host(),
            "fd00::80"
        );
    }

    #[test]
    fn request_heads_parse_on_the_server_side() {
        let u: Url = "trickles://h:1/f".parse().unwrap();
        let head = request_head(&u, Some((5, 9)));
        let (req, used) = trickles::app::http::parse_request(&head).unwrap();
        assert_eq!(used, head.len());
        assert_eq!(
            req.range,
            Some(trickles::app::http::RangeSpec::FromTo { first: 5, last: 9 })
        );
        assert_eq!((&*req.path, req.host), ("/f", Some("h:1")));
    }
}
