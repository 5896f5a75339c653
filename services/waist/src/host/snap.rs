//! `waist snap ping`: the SNAP paper's Fig. 1 ping through real routers, or with `--plan`
//! a ping compiled from PLAN (Fig. 2 is `examples/plan/ping.plan`).
//!
//! `waist_node::host::SnapPinger` builds each request (an IPv4 packet of protocol 254, or
//! for an IPv6 target an IPv6 packet of next header 254, carrying the ping program,
//! resource bound `--rb`) and reads each reply by running it in
//! its own VM, as every SNAP node does: a reply is ours only if it delivers our ping
//! payload to our demultiplexing port; anything else on the link is ignored. Every SNAP
//! node a packet crosses spends one unit of its resource bound, so `rb` in a reply is the
//! bound sent minus the SNAP nodes crossed out and back (the target and this host
//! included).

use std::collections::BTreeSet;
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow};
use clap::Args;
use tokio::time::Instant;
use waist_node::host::{PingReply, SnapPinger};

use super::link::{HostLink, buffer};
use super::{DEFAULT_SRC, EXIT_ANSWER, EXIT_TIMEOUT, Via};

/// `waist snap ping` options.
#[derive(Debug, Args)]
pub struct PingArgs {
    /// The SNAP node to ping (IPv4 or IPv6).
    pub host: IpAddr,
    /// The link to the router: `udp:LOCAL=PEER` binds LOCAL (the router's link `peer`)
    /// and sends to PEER (the router's link `local`); `raw` uses the kernel's raw IPv4
    /// sockets (a host behind a TUN device; root). Default: the `WAIST_VIA` environment
    /// variable (a containerlab export's hosts set it).
    #[arg(long, env = "WAIST_VIA")]
    pub via: Via,
    /// Our address, of the target's family (the router must route it back to us).
    /// Default: the `WAIST_SRC` environment variable; else, for an IPv4 target, 10.1.0.1
    /// (an IPv6 target needs one).
    #[arg(long, env = "WAIST_SRC")]
    pub src: Option<IpAddr>,
    /// Pings to send.
    #[arg(short = 'c', long, default_value_t = 4)]
    pub count: u32,
    /// Milliseconds between pings.
    #[arg(short = 'i', long, default_value_t = 1000)]
    pub interval_ms: u64,
    /// Resource bound of each request (one unit per SNAP node, out and back).
    #[arg(long, default_value_t = 32)]
    pub rb: u16,
    /// The demultiplexing port replies deliver to here.
    #[arg(long, default_value_t = 7)]
    pub port: u16,
    /// Milliseconds to wait for replies after the last request.
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
    /// Send this PLAN program, compiled, instead of the hand-written Fig. 1 ping (e.g.
    /// Fig. 2, `services/waist/examples/plan/ping.plan`). The entry is the last function
    /// defined; it must take `(w: blob, n: int)`, the ping payload and `--port`, and
    /// deliver `w` to port `n` back at the source.
    #[arg(long, value_name = "FILE.plan")]
    pub plan: Option<PathBuf>,
    /// With `--plan`: how far a fold over a list of unknown length is unrolled (0: only
    /// folds over list literals).
    #[arg(long, default_value_t = 4, requires = "plan")]
    pub fold_bound: u32,
    /// Print one JSON document at the end (see [`summary_json`]) instead of ping(8)'s
    /// lines.
    #[arg(long)]
    pub json: bool,
}

/// A ping run's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ping {
    /// Our address.
    pub src: IpAddr,
    /// Whom to ping (of `src`'s family).
    pub host: IpAddr,
    /// Requests to send.
    pub count: u32,
    /// Between requests.
    pub interval: Duration,
    /// Resource bound of each request.
    pub rb: u16,
    /// Our demultiplexing port.
    pub port: u16,
    /// Wait after the last request.
    pub timeout: Duration,
}

impl Ping {
    /// The settings the options describe.
    ///
    /// # Errors
    ///
    /// If `--src` is missing for an IPv6 target, or of the other family than the target,
    /// or `--via raw` is asked for an IPv6 target (raw mode speaks IPv4).
    pub fn from_args(a: &PingArgs) -> anyhow::Result<Ping> {
        let src = match (a.src, a.host) {
            (Some(s), h) if s.is_ipv6() != h.is_ipv6() => {
                return Err(anyhow!(
                    "--src {s} and target {h} are of different address families"
                ));
            }
            (Some(s), _) => s,
            (None, IpAddr::V4(_)) => IpAddr::V4(DEFAULT_SRC),
            (None, IpAddr::V6(h)) => {
                return Err(anyhow!(
                    "an IPv6 target ({h}) needs --src, our IPv6 address (the router must route it back to us)"
                ));
            }
        };
        if a.host.is_ipv6() && a.via == Via::Raw {
            return Err(anyhow!(
                "--via raw speaks IPv4 only: reach an IPv6 target over a udp: link"
            ));
        }
        Ok(Ping {
            src,
            host: a.host,
            count: a.count,
            interval: Duration::from_millis(a.interval_ms),
            rb: a.rb,
            port: a.port,
            timeout: Duration::from_millis(a.timeout_ms),
        })
    }
}

/// What a ping run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Requests sent.
    pub sent: u32,
    /// The replies, in arrival order (one per sequence number; duplicates dropped).
    pub replies: Vec<PingReply>,
}

impl Summary {
    /// Distinct replies received.
    pub fn received(&self) -> u32 {
        u32::try_from(self.replies.len()).unwrap_or(u32::MAX)
    }

    /// Per cent of requests unanswered.
    pub fn loss_percent(&self) -> f64 {
        if self.sent == 0 {
            return 0.0;
        }
        100.0 * f64::from(self.sent.saturating_sub(self.received())) / f64::from(self.sent)
    }

    /// Minimum, mean and maximum round-trip time in µs, if any reply came.
    pub fn rtt_us(&self) -> Option<(u64, f64, u64)> {
        let rtts = self.replies.iter().map(|r| r.rtt_us);
        let min = rtts.clone().min()?;
        let max = rtts.clone().max()?;
        let avg = rtts.map(|r| r as f64).sum::<f64>() / self.replies.len() as f64;
        Some((min, avg, max))
    }

    /// The exit code: 0 if any reply came, 2 if none did.
    pub fn exit_code(&self) -> u8 {
        if self.replies.is_empty() {
            EXIT_TIMEOUT
        } else {
            EXIT_ANSWER
        }
    }
}

/// Pings over `link` as `p` says with the Fig. 1 ping, calling `on_reply` for each reply
/// as it arrives: a request every `interval`, then up to `timeout` for the stragglers (less
/// once every request is answered). Packets that are not replies to our pings are ignored.
///
/// # Errors
///
/// If a request cannot be built or the link fails.
pub async fn ping(
    link: &mut HostLink,
    p: &Ping,
    on_reply: impl FnMut(&PingReply) -> anyhow::Result<()>,
) -> anyhow::Result<Summary> {
    ping_with(link, p, SnapPinger::new(p.src, p.port), on_reply).await
}

/// [`ping`] with the requests `pinger` builds (e.g. a compiled program,
/// [`SnapPinger::with_program`]); `p.src` and `p.port` should be the pinger's.
///
/// # Errors
///
/// If a request cannot be built or the link fails.
pub async fn ping_with(
    link: &mut HostLink,
    p: &Ping,
    mut pinger: SnapPinger,
    mut on_reply: impl FnMut(&PingReply) -> anyhow::Result<()>,
) -> anyhow::Result<Summary> {
    let clock = netio::clock::Clock::monotonic();
    let mut summary = Summary::default();
    let mut seen = BTreeSet::new();
    let mut buf = buffer();
    for seq in 1..=p.count {
        let request = pinger
            .request(p.host, seq, clock.now(), p.rb)
            .map_err(|e| anyhow!("building ping {seq}: {e}"))?;
        link.send(&request).await?;
        summary.sent += 1;
        let last = seq == p.count;
        let deadline = Instant::now() + if last { p.timeout } else { p.interval };
        while !(last && seen.len() == summary.sent as usize) {
            let Some(r) = link.recv_until(&mut buf, deadline).await? else {
                break;
            };
            let Some(Ok(reply)) = buf.get(r).map(|b| pinger.handle_reply(clock.now(), b)) else {
                continue;
            };
            if reply.seq == 0 || reply.seq > seq || !seen.insert(reply.seq) {
                continue;
            }
            on_reply(&reply)?;
            summary.replies.push(reply);
        }
        if !last {
            tokio::time::sleep_until(deadline).await;
        }
    }
    Ok(summary)
}

/// One reply as ping(8) prints it.
pub fn reply_line(r: &PingReply) -> String {
    format!(
        "seq={} from={} rtt={} µs rb={}",
        r.seq, r.target, r.rtt_us, r.rb
    )
}

/// The one JSON document of `waist snap ping --json`:
/// `{"target", "src", "rb", "port", "program", "sent", "received", "loss_percent",
/// "rtt_us": {"min", "avg", "max"} or null, "replies": [{"seq", "from", "rtt_us", "rb"}]}`.
pub fn summary_json(p: &Ping, program: &str, s: &Summary) -> serde_json::Value {
    let replies: Vec<serde_json::Value> = s
        .replies
        .iter()
        .map(|r| {
            serde_json::json!({
                "seq": r.seq,
                "from": r.target.to_string(),
                "rtt_us": r.rtt_us,
                "rb": r.rb,
            })
        })
        .collect();
    serde_json::json!({
        "target": p.host.to_string(),
        "src": p.src.to_string(),
        "rb": p.rb,
        "port": p.port,
        "program": program,
        "sent": s.sent,
        "received": s.received(),
        "loss_percent": s.loss_percent(),
        "rtt_us": s.rtt_us().map(|(min, avg, max)| serde_json::json!({"min": min, "avg": avg, "max": max})),
        "replies": replies,
    })
}

/// `waist snap ping`: pings, printing each reply and then the summary; returns the exit
/// code (0 if any reply came, 2 if none).
///
/// # Errors
///
/// If the `--plan` file cannot be read or compiled, or its entry function does not take a
/// ping's arguments; if the link cannot be opened, a request built or the report written.
pub fn run(args: &PingArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let p = Ping::from_args(args)?;
    let (pinger, program) = match &args.plan {
        None => (
            SnapPinger::new(p.src, p.port),
            "Fig. 1 ping (hand-written)".to_owned(),
        ),
        Some(file) => {
            let (compiled, opts) =
                crate::plan::compile_file(file, args.fold_bound, None, Vec::new())?;
            let pinger = SnapPinger::with_program(p.src, p.port, &compiled)
                .map_err(|e| anyhow!("{}: entry `{}`: {e}", file.display(), opts.entry))?;
            let program = format!(
                "{} compiled from PLAN (entry `{}`, {} instructions)",
                file.display(),
                opts.entry,
                compiled.program.code.len()
            );
            (pinger, program)
        }
    };
    if !args.json {
        writeln!(
            out,
            "SNAP PING {} from {} (rb {}, port {}): {program}",
            p.host, p.src, p.rb, p.port
        )?;
    }
    let summary = super::block_on(async {
        let mut link = HostLink::open(args.via, snap_vm::wire::IP_PROTOCOL).await?;
        ping_with(&mut link, &p, pinger, |r| {
            if args.json {
                return Ok(());
            }
            writeln!(out, "{}", reply_line(r)).context("writing a reply")?;
            out.flush().context("writing a reply")
        })
        .await
    })?;
    if args.json {
        writeln!(out, "{:#}", summary_json(&p, &program, &summary))?;
        return Ok(summary.exit_code());
    }
    writeln!(out, "--- {} SNAP ping statistics ---", p.host)?;
    writeln!(
        out,
        "{} sent, {} received, {:.0}% loss",
        summary.sent,
        summary.received(),
        summary.loss_percent()
    )?;
    if let Some((min, avg, max)) = summary.rtt_us() {
        writeln!(out, "rtt min/avg/max = {min}/{avg:.1}/{max} µs")?;
    }
    Ok(summary.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_arithmetic() {
        let r = |seq, rtt_us| PingReply {
            seq,
            target: [10, 0, 0, 2].into(),
            rtt_us,
            rb: 28,
        };
        let s = Summary {
            sent: 4,
            replies: vec![r(1, 100), r(2, 300)],
        };
        assert_eq!(s.received(), 2);
        assert!((s.loss_percent() - 50.0).abs() < 1e-9);
        assert_eq!(s.rtt_us(), Some((100, 200.0, 300)));
        assert_eq!(s.exit_code(), EXIT_ANSWER);
        assert_eq!(Summary::default().exit_code(), EXIT_TIMEOUT);
        assert_eq!(
            reply_line(&r(1, 100)),
            "seq=1 from=10.0.0.2 rtt=100 µs rb=28"
        );
        let p = Ping {
            src: std::net::Ipv4Addr::new(10, 1, 0, 1).into(),
            host: std::net::Ipv4Addr::new(10, 0, 0, 2).into(),
            count: 4,
            interval: Duration::from_millis(10),
            rb: 32,
            port: 7,
            timeout: Duration::from_millis(10),
        };
        let v = summary_json(&p, "Fig. 1", &s);
        assert_eq!(
            (&v["target"], &v["src"]),
            (&"10.0.0.2".into(), &"10.1.0.1".into())
        );
        assert_eq!(
            (&v["sent"], &v["received"], &v["loss_percent"]),
            (&4.into(), &2.into(), &50.0.into())
        );
        assert_eq!(v["rtt_us"]["avg"], 200.0);
        assert_eq!(v["replies"][1]["from"], "10.0.0.2");
        assert_eq!(v["replies"][1]["rtt_us"], 300);
        assert!(summary_json(&p, "Fig. 1", &Summary::default())["rtt_us"].is_null());
    }
}
