//! `trickles-load`: closed-loop load against a Trickles or a TCP web server (see
//! `trickles_web::load`). Prints one line (or `--json`) when the run ends.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{ArgGroup, Parser};
use trickles_web::load::{self, LoadConfig, Target};

/// Closed-loop HTTP GET load over Trickles (IP-in-UDP) or TCP.
#[derive(Parser, Debug)]
#[command(version, group(ArgGroup::new("target").required(true).args(["trickles", "tcp"])))]
struct Args {
    /// A Trickles server's UDP address (IP-in-UDP).
    #[arg(long, value_name = "UDPADDR")]
    trickles: Option<SocketAddr>,
    /// An HTTP/1.1 server's TCP address.
    #[arg(long, value_name = "ADDR")]
    tcp: Option<SocketAddr>,
    /// The path to GET.
    #[arg(long, default_value = "/")]
    path: String,
    /// Requests outstanding at any time.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 5.0)]
    duration_s: f64,
    /// Stop after this many requests, if sooner.
    #[arg(long)]
    requests: Option<u64>,
    /// TCP: one connection per task for all its requests (default: one per request,
    /// `Connection: close`).
    #[arg(long)]
    keepalive: bool,
    /// Seconds after which an unfinished request counts as an error.
    #[arg(long, default_value_t = 10.0)]
    stall_s: f64,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let target = match (args.trickles, args.tcp) {
        (Some(a), _) => Target::Trickles(a),
        (None, Some(a)) => Target::Tcp(a),
        (None, None) => anyhow::bail!("--trickles or --tcp"),
    };
    let cfg = LoadConfig {
        target,
        path: args.path,
        concurrency: args.concurrency,
        duration: Duration::try_from_secs_f64(args.duration_s)?,
        requests: args.requests,
        keepalive: args.keepalive,
        stall: Duration::try_from_secs_f64(args.stall_s)?,
    };
    // One thread: the generator is pinned to one core in the benchmarks.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = rt.block_on(load::run(&cfg))?;
    println!(
        "{}",
        if args.json {
            report.json()
        } else {
            report.line()
        }
    );
    Ok(())
}
