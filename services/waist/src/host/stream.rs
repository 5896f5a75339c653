//! `waist stream …`: the ends of a stream-handler stream and its control, over a real link.
//!
//! ```text
//!  waist stream pub ─► endpoint::Publisher ─► RUDP fragments in UDP to ADDR:7400 ─┐
//!  waist stream sub ◄─ endpoint::Subscriber ◄─ UDP to our --port (7400) ◄──────────┤ router
//!  waist stream deploy|set|terminate ─► Envelope to ROUTER:7401, its reply ◄───────┘
//! ```
//!
//! Messages are generated and checked by `stream_handlers::endpoint` (message `i` has id
//! `i`, its `seq` field `i`, its timestamp the publisher's wall clock in ns since the
//! epoch): a subscriber given the publisher's `--fields`, `--size` and `--seed` checks each
//! message byte for byte (`--verify content`; handlers that rewrite messages on the way,
//! `delta` and `byteswap`, are undone first when `--undo` names them), or only its header
//! (`--verify header`), and reports latency from the timestamps (publisher and subscriber
//! on one machine, or on clocks kept in step). Packets are built and read by
//! `waist_ip::udp`; the link is a [`HostLink`], as for every host tool.

pub mod control;

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use stream_handlers::endpoint::{
    Publisher, PublisherConfig, Received, Subscriber, SubscriberConfig, Summary, Verify,
    parse_transforms,
};
use stream_handlers::node::DATA_PORT;
use stream_handlers::spec::Fields;
use tokio::time::Instant;

pub use control::{ControlArgs, DeployArgs, SetArgs, TerminateArgs};

use super::link::{HostLink, buffer};
use super::{DEFAULT_SRC, EXIT_ANSWER, Via};

/// Exit code of `waist stream sub` when a message was not intact or fewer than `--count`
/// arrived, and of `deploy`/`set`/`terminate` when the node refused.
pub const EXIT_FAILED: u8 = 1;

/// TTL of the packets the tools send.
const TTL: u8 = 64;

/// `waist stream …`.
#[derive(Debug, Subcommand)]
pub enum StreamCommand {
    /// Publish generated messages to a stream node's data port, paced at a rate.
    Pub(PubArgs),
    /// Receive a stream's messages, check each, and print a summary (exit code 1 if any
    /// was not intact or fewer than --count arrived before the timeout).
    Sub(SubArgs),
    /// Deploy a handler composition (a spec, see `stream_handlers::spec`) for a stream on
    /// a node; exit code 1 if it was refused, 2 if no reply came.
    Deploy(DeployArgs),
    /// Change a deployed stream's handler parameters at run time (a control message).
    Set(SetArgs),
    /// Terminate a stream on a node.
    Terminate(TerminateArgs),
    /// Run the host side of a router's stream handlers: the streams the router has no
    /// headroom for run here (a waist-router with one link to it and no admission) until
    /// SIGINT or SIGTERM.
    Host(super::stream_host::HostArgs),
}

/// How a stream tool reaches its router (as every host tool does).
#[derive(Debug, Args)]
pub struct LinkArgs {
    /// The link to the router: `udp:LOCAL=PEER` binds LOCAL (the router's link `peer`)
    /// and sends to PEER (the router's link `local`); `raw` uses the kernel's raw IPv4
    /// sockets (a host behind a TUN device; root). Default: the `WAIST_VIA` environment
    /// variable (a containerlab export's hosts set it).
    #[arg(long, env = "WAIST_VIA")]
    pub via: Via,
    /// Our IP address (the router must route it back to us; a subscriber takes datagrams
    /// sent to it). Default: the `WAIST_SRC` environment variable, else 10.1.0.1.
    #[arg(long, env = "WAIST_SRC", default_value_t = IpAddr::V4(DEFAULT_SRC))]
    pub src: IpAddr,
}

/// The declared fields of the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FieldsArg {
    /// Image sequence frames (`stream_handlers::format::shipped::ImageFrame`).
    Image,
    /// Flight records (`stream_handlers::format::shipped::FlightRecord`).
    Flight,
}

impl From<FieldsArg> for Fields {
    fn from(f: FieldsArg) -> Fields {
        match f {
            FieldsArg::Image => Fields::Image,
            FieldsArg::Flight => Fields::Flight,
        }
    }
}

/// What a subscriber checks of each message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VerifyArg {
    /// Every byte is what the publisher generated.
    Content,
    /// The seq field is the message id and the length the size (handlers rewrite bodies).
    Header,
    /// Nothing.
    Off,
}

impl From<VerifyArg> for Verify {
    fn from(v: VerifyArg) -> Verify {
        match v {
            VerifyArg::Content => Verify::Content,
            VerifyArg::Header => Verify::Header,
            VerifyArg::Off => Verify::Off,
        }
    }
}

/// `ADDR` or `ADDR:PORT` (`[V6]:PORT`), the port `default` when left out.
pub fn parse_addr(s: &str, default: u16) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>()
        .or_else(|_| s.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, default)))
        .map_err(|_| format!("`{s}`: not ADDR or ADDR:PORT"))
}

fn parse_data_addr(s: &str) -> Result<SocketAddr, String> {
    parse_addr(s, DATA_PORT)
}

/// `waist stream pub` options.
#[derive(Debug, Args)]
pub struct PubArgs {
    /// The link and our address.
    #[command(flatten)]
    pub link: LinkArgs,
    /// Where the fragments go: a stream node's address (data port 7400 unless given).
    #[arg(long, value_parser = parse_data_addr)]
    pub to: SocketAddr,
    /// The stream id.
    #[arg(long)]
    pub stream: u16,
    /// The messages' declared fields; without, a 12-byte header (seq, timestamp_ns) and
    /// pseudo-random bytes.
    #[arg(long, value_enum)]
    pub fields: Option<FieldsArg>,
    /// Bytes per message.
    #[arg(long, default_value_t = 1000)]
    pub size: u32,
    /// Messages per second.
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// Messages to send.
    #[arg(long, default_value_t = 10)]
    pub count: u64,
    /// The generators' seed (a subscriber needs the same).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Payload bytes per RUDP fragment.
    #[arg(long, default_value_t = 1400)]
    pub fragment: u16,
}

/// `waist stream sub` options.
#[derive(Debug, Args)]
pub struct SubArgs {
    /// The link and our address (the stream's destination).
    #[command(flatten)]
    pub link: LinkArgs,
    /// The UDP port fragments arrive at.
    #[arg(long, default_value_t = DATA_PORT)]
    pub port: u16,
    /// The stream id.
    #[arg(long)]
    pub stream: u16,
    /// The publisher's --fields.
    #[arg(long, value_enum)]
    pub fields: Option<FieldsArg>,
    /// The publisher's --size.
    #[arg(long, default_value_t = 1000)]
    pub size: u32,
    /// The publisher's --seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// What is checked of each message.
    #[arg(long, value_enum, default_value_t = VerifyArg::Content)]
    pub verify: VerifyArg,
    /// The handlers that rewrite messages on the way, as spec clauses (`delta 20 1 |
    /// byteswap`): undone, last first, before each message is checked.
    #[arg(long, value_name = "CLAUSES")]
    pub undo: Option<String>,
    /// Messages expected: stop once they are in; fewer before the timeout fails. With
    /// `--expect`, how many the publisher sends (ids 0..N), of which the filter's share is
    /// expected.
    #[arg(long)]
    pub count: Option<u64>,
    /// The filter between the publisher and us, as the spec grammar writes a predicate
    /// (`status==2`, `altitude_ft>=30000`, `status in 2..3`; names from `--fields`): only
    /// the messages it passes are expected, the others count as filtered, not lost, and
    /// one that arrives without passing it fails the check.
    #[arg(long, value_name = "PRED")]
    pub expect: Option<String>,
    /// Seconds to receive for (at most).
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Print one line per message.
    #[arg(short, long)]
    pub verbose: bool,
    /// Print the summary as one JSON document (see [`summary_json`]).
    #[arg(long)]
    pub json: bool,
}

/// Now on the wall clock, ns since the epoch (the timestamps' clock).
pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A UDP datagram `src:sport` → `dst` carrying `data`, as an IP packet.
///
/// # Errors
///
/// If the addresses are of different families or the datagram is too long.
pub fn datagram(src: IpAddr, sport: u16, dst: SocketAddr, data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut p = vec![0u8; 40 + 8 + data.len()];
    let n = waist_ip::udp::emit_datagram(src, dst.ip(), TTL, sport, dst.port(), data, &mut p)
        .map_err(|e| anyhow!("a datagram from {src} to {dst}: {e}"))?;
    p.truncate(n);
    Ok(p)
}

/// What a publisher sent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sent {
    /// Messages.
    pub messages: u64,
    /// Fragments (one datagram each).
    pub fragments: u64,
    /// UDP payload bytes.
    pub bytes: u64,
    /// Fragments the socket dropped (full).
    pub dropped: u64,
    /// From the first send to the last.
    pub seconds: f64,
}

/// Publishes `a.count` messages at `a.rate` per second: on each tick of the pacing interval
/// the messages due by then are generated and sent as one batch.
///
/// # Errors
///
/// If the publisher's configuration is invalid (a size below the format's header, a zero
/// fragment size), the rate is not positive, or the link fails.
pub async fn publish(link: &mut HostLink, a: &PubArgs) -> anyhow::Result<Sent> {
    if !(a.rate.is_finite() && a.rate > 0.0) {
        return Err(anyhow!("--rate {}: not a positive number", a.rate));
    }
    let mut p = Publisher::new(PublisherConfig {
        stream: a.stream,
        fields: a.fields.map(Fields::from),
        size: a.size,
        seed: a.seed,
        fragment: a.fragment,
    })
    .map_err(|e| anyhow!("stream {}: {e}", a.stream))?;
    let tick = Duration::from_secs_f64((1.0 / a.rate).max(0.001));
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let start = Instant::now();
    let mut sent = Sent::default();
    let mut batch = Vec::new();
    while sent.messages < a.count {
        interval.tick().await;
        let due = (start.elapsed().as_secs_f64() * a.rate) as u64 + 1;
        batch.clear();
        while sent.messages < due.min(a.count) {
            for f in p.next(wall_ns())? {
                sent.fragments += 1;
                sent.bytes += f.len() as u64;
                batch.push(datagram(a.link.src, DATA_PORT, a.to, &f)?);
            }
            sent.messages += 1;
        }
        sent.dropped += link.send_all(batch.iter().map(Vec::as_slice)).await?;
    }
    sent.seconds = start.elapsed().as_secs_f64();
    Ok(sent)
}

/// Receives until `a.count` messages are in or `a.timeout` passes, calling `on_message`
/// for each; the subscriber, for its summary. Datagrams not to our address and port are
/// skipped; fragments refused are counted by the subscriber.
///
/// # Errors
///
/// If the link fails or `on_message` does.
pub async fn subscribe(
    link: &mut HostLink,
    a: &SubArgs,
    mut on_message: impl FnMut(&Received) -> anyhow::Result<()>,
) -> anyhow::Result<Subscriber> {
    let mut cfg = SubscriberConfig::new(a.stream, a.fields.map(Fields::from), a.size, a.seed);
    cfg.verify = a.verify.into();
    if let Some(text) = &a.undo {
        cfg.undo = parse_transforms(text).map_err(|e| anyhow!("--undo: {e}"))?;
    }
    if let Some(text) = &a.expect {
        let fields = a.fields.map(Fields::from);
        cfg.expect = Some(
            stream_handlers::endpoint::parse_predicate(fields, text)
                .map_err(|e| anyhow!("--expect: {e}"))?,
        );
    }
    let mut sub = Subscriber::new(cfg);
    // With a filter, the messages it passes among the publisher's.
    let target = match (a.count, &a.expect) {
        (Some(n), Some(_)) => Some(sub.expected(n).expected),
        (n, _) => n,
    };
    let timeout = Duration::try_from_secs_f64(a.timeout)
        .map_err(|_| anyhow!("--timeout {}: not a number of seconds", a.timeout))?;
    let deadline = Instant::now() + timeout;
    let mut buf = buffer();
    let mut received = 0u64;
    while target.is_none_or(|n| received < n) {
        let Some(r) = link.recv_until(&mut buf, deadline).await? else {
            break;
        };
        let Some(d) = buf.get(r).and_then(waist_ip::udp::parse_datagram) else {
            continue;
        };
        if d.dst != a.link.src || d.dport != a.port {
            continue;
        }
        if let Ok(Some(m)) = sub.handle_fragment(wall_ns(), d.data) {
            received += 1;
            on_message(&m)?;
        }
    }
    Ok(sub)
}

/// ns as µs with one decimal.
fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// One message as `--verbose` prints it.
pub fn message_line(m: &Received) -> String {
    let verdict = match m.intact {
        Some(true) => "intact",
        Some(false) => "NOT INTACT",
        None => "unchecked",
    };
    let late = if m.reordered { " reordered" } else { "" };
    format!(
        "message {} seq={} len={} latency={} µs {verdict}{late}",
        m.message,
        m.seq,
        m.len,
        us(m.latency_ns)
    )
}

/// How a subscription went, against the publisher's `count` messages if given.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// The subscriber's summary.
    pub summary: Summary,
    /// Messages expected (all of `count`, or the filter's share of them).
    pub expected: Option<u64>,
    /// Expected messages that never arrived.
    pub lost: u64,
    /// Messages the filter rightly kept back (0 without `--expect`).
    pub filtered: u64,
}

impl Outcome {
    /// The outcome of `sub` after the publisher sent `count` messages (if known).
    pub fn of(sub: &Subscriber, count: Option<u64>) -> Outcome {
        let summary = sub.summary();
        match sub.config().expect {
            Some(_) => {
                let e = sub.expected(count.unwrap_or(0));
                Outcome {
                    summary,
                    expected: count.map(|_| e.expected),
                    lost: e.lost,
                    filtered: e.filtered,
                }
            }
            None => Outcome {
                summary,
                expected: count,
                lost: summary.lost_of(count.unwrap_or(0)),
                filtered: 0,
            },
        }
    }

    /// Whether it succeeded: nothing found not intact, nothing the filter should have kept,
    /// and every expected message received.
    pub fn ok(&self) -> bool {
        let s = &self.summary;
        s.corrupt == 0 && s.unexpected == 0 && self.expected.is_none_or(|n| s.received >= n)
    }
}

/// The one JSON document of `waist stream sub --json`: `{"stream", "expected" (or null),
/// "received", "intact", "corrupt", "lost", "filtered", "unexpected", "duplicates",
/// "reordered", "refused", "other_streams", "ok", "latency_us": {"min", "avg", "p50",
/// "p99", "max"} or null}`.
pub fn summary_json(stream: u16, o: &Outcome) -> serde_json::Value {
    let f = |ns: u64| ns as f64 / 1000.0;
    let s = &o.summary;
    serde_json::json!({
        "stream": stream,
        "expected": o.expected,
        "received": s.received,
        "intact": s.intact,
        "corrupt": s.corrupt,
        "lost": o.lost,
        "filtered": o.filtered,
        "unexpected": s.unexpected,
        "duplicates": s.duplicates,
        "reordered": s.reordered,
        "refused": s.refused,
        "other_streams": s.other_streams,
        "ok": o.ok(),
        "latency_us": s.latency.map(|l| serde_json::json!({
            "min": f(l.min_ns), "avg": f(l.avg_ns), "p50": f(l.p50_ns),
            "p99": f(l.p99_ns), "max": f(l.max_ns),
        })),
    })
}

fn run_pub(a: &PubArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let sent = super::block_on(async {
        let mut link = HostLink::open(a.link.via, waist_ip::udp::PROTOCOL_UDP).await?;
        publish(&mut link, a).await
    })?;
    write!(
        out,
        "stream {} to {}: {} messages, {} fragments, {} bytes in {:.2} s",
        a.stream, a.to, sent.messages, sent.fragments, sent.bytes, sent.seconds
    )?;
    if sent.dropped > 0 {
        write!(out, " ({} fragments dropped: socket full)", sent.dropped)?;
    }
    writeln!(out)?;
    Ok(EXIT_ANSWER)
}

fn run_sub(a: &SubArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let sub = super::block_on(async {
        let mut link = HostLink::open(a.link.via, waist_ip::udp::PROTOCOL_UDP).await?;
        subscribe(&mut link, a, |m| {
            if a.verbose && !a.json {
                writeln!(out, "{}", message_line(m)).context("writing a message line")?;
            }
            Ok(())
        })
        .await
    })?;
    let o = Outcome::of(&sub, a.count);
    let s = o.summary;
    let code = if o.ok() { EXIT_ANSWER } else { EXIT_FAILED };
    if a.json {
        writeln!(out, "{:#}", summary_json(a.stream, &o))?;
        return Ok(code);
    }
    let filtered = match a.expect {
        Some(_) => format!(
            " ({} filtered out, {} that should have been)",
            o.filtered, s.unexpected
        ),
        None => String::new(),
    };
    writeln!(
        out,
        "stream {}: {} received{filtered}, {} intact, {} not intact, {} lost, {} duplicates, {} reordered",
        a.stream, s.received, s.intact, s.corrupt, o.lost, s.duplicates, s.reordered
    )?;
    if let Some(l) = s.latency {
        writeln!(
            out,
            "latency min/avg/p50/p99/max = {}/{}/{}/{}/{} µs",
            us(l.min_ns),
            us(l.avg_ns),
            us(l.p50_ns),
            us(l.p99_ns),
            us(l.max_ns)
        )?;
    }
    if let Some(n) = o.expected.filter(|&n| s.received < n) {
        writeln!(
            out,
            "only {} of {n} messages within {} s",
            s.received, a.timeout
        )?;
    }
    Ok(code)
}

/// `waist stream …`: runs the tool; returns the exit code.
///
/// # Errors
///
/// If the link cannot be opened, the arguments do not make a valid publisher, spec or
/// control message, or the report cannot be written.
pub fn run(command: StreamCommand, out: &mut dyn Write) -> anyhow::Result<u8> {
    match command {
        StreamCommand::Pub(a) => run_pub(&a, out),
        StreamCommand::Sub(a) => run_sub(&a, out),
        StreamCommand::Deploy(a) => control::deploy(&a, out),
        StreamCommand::Set(a) => control::set(&a, out),
        StreamCommand::Terminate(a) => control::terminate(&a, out),
        StreamCommand::Host(a) => super::stream_host::run(a, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stream_handlers::endpoint::Latency;

    #[test]
    fn addresses_take_a_default_port() {
        assert_eq!(
            parse_data_addr("10.0.0.1"),
            Ok(SocketAddr::from(([10, 0, 0, 1], 7400)))
        );
        assert_eq!(
            parse_data_addr("10.0.0.1:9000"),
            Ok(SocketAddr::from(([10, 0, 0, 1], 9000)))
        );
        assert_eq!(
            parse_addr("::1", 7401).map(|a| a.to_string()),
            Ok("[::1]:7401".to_owned())
        );
        assert!(
            parse_data_addr("router1")
                .unwrap_err()
                .contains("ADDR:PORT")
        );
    }

    #[test]
    fn summaries_print_and_judge() {
        let s = Summary {
            received: 3,
            intact: 3,
            highest: Some(3),
            latency: Some(Latency {
                min_ns: 1_500,
                avg_ns: 2_000,
                p50_ns: 2_000,
                p99_ns: 2_500,
                max_ns: 2_500,
            }),
            ..Summary::default()
        };
        let o = |summary: Summary, expected: Option<u64>| Outcome {
            summary,
            expected,
            lost: expected.map_or(0, |n| n.saturating_sub(summary.received)),
            filtered: 0,
        };
        assert!(o(s, Some(3)).ok());
        assert!(!o(s, Some(5)).ok());
        assert!(!o(Summary { corrupt: 1, ..s }, None).ok());
        assert!(!o(Summary { unexpected: 1, ..s }, None).ok());
        let v = summary_json(4, &o(s, Some(5)));
        assert_eq!((&v["lost"], &v["ok"]), (&2.into(), &false.into()));
        assert_eq!(v["latency_us"]["p99"], 2.5);
        assert!(summary_json(4, &o(Summary::default(), None))["latency_us"].is_null());
        let m = Received {
            message: 2,
            seq: 2,
            len: 100,
            latency_ns: 12_345,
            intact: Some(false),
            reordered: true,
            payload: Vec::new(),
        };
        assert_eq!(
            message_line(&m),
            "message 2 seq=2 len=100 latency=12.3 µs NOT INTACT reordered"
        );
    }
}
