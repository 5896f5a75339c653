//! `trickles-load`'s command line ([`Args`]) and what the binary does with it ([`main`]):
//! the arguments checked and turned into a [`LoadConfig`], one run on a current-thread
//! runtime, its report printed.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use clap::ArgGroup;

use super::{LoadConfig, Target, run};

/// Closed-loop HTTP GET load over Trickles (IP-in-UDP) or TCP.
#[derive(clap::Parser, Clone, Debug)]
#[command(
    name = "trickles-load",
    version,
    group(ArgGroup::new("target").required(true).args(["trickles", "tcp"]))
)]
pub struct Args {
    /// A Trickles server's UDP address (IP-in-UDP).
    #[arg(long, value_name = "UDPADDR")]
    pub trickles: Option<SocketAddr>,
    /// An HTTP/1.1 server's TCP address.
    #[arg(long, value_name = "ADDR")]
    pub tcp: Option<SocketAddr>,
    /// The path to GET.
    #[arg(long, default_value = "/")]
    pub path: String,
    /// Requests outstanding at any time.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 5.0)]
    pub duration_s: f64,
    /// Stop after this many requests, if sooner.
    #[arg(long)]
    pub requests: Option<u64>,
    /// TCP: one connection per task for all its requests (default: one per request,
    /// `Connection: close`).
    #[arg(long)]
    pub keepalive: bool,
    /// Seconds after which an unfinished request counts as an error.
    #[arg(long, default_value_t = 10.0)]
    pub stall_s: f64,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Logging: `--log-format text|json`.
    #[command(flatten)]
    pub log: netio::trace::LogArgs,
}

impl Args {
    /// The run these arguments describe.
    ///
    /// # Errors
    ///
    /// No target, or a duration that is negative, not a number or too large (named by
    /// its option).
    pub fn config(&self) -> anyhow::Result<LoadConfig> {
        let target = match (self.trickles, self.tcp) {
            (Some(a), _) => Target::Trickles(a),
            (None, Some(a)) => Target::Tcp(a),
            (None, None) => anyhow::bail!("--trickles or --tcp"),
        };
        Ok(LoadConfig {
            target,
            path: self.path.clone(),
            concurrency: self.concurrency,
            duration: Duration::try_from_secs_f64(self.duration_s)
                .with_context(|| format!("--duration-s {}", self.duration_s))?,
            requests: self.requests,
            keepalive: self.keepalive,
            stall: Duration::try_from_secs_f64(self.stall_s)
                .with_context(|| format!("--stall-s {}", self.stall_s))?,
        })
    }
}

/// What `trickles-load` does once its arguments are parsed: one run on a current-thread
/// runtime (the generator is pinned to one core in the benchmarks), then its report on
/// stdout, one line or (`--json`) one JSON object.
///
/// # Errors
///
/// Bad arguments ([`Args::config`]), no runtime, a run that could not start.
pub fn main(args: &Args) -> anyhow::Result<()> {
    let cfg = args.config()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = rt.block_on(run(&cfg))?;
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn args(line: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("trickles-load").chain(line.iter().copied()))
    }

    #[test]
    fn defaults_and_targets() {
        let cfg = args(&["--trickles", "127.0.0.1:7700"])
            .unwrap()
            .config()
            .unwrap();
        assert_eq!(
            cfg.target,
            Target::Trickles("127.0.0.1:7700".parse().unwrap())
        );
        assert_eq!((cfg.path.as_str(), cfg.concurrency), ("/", 1));
        assert_eq!(cfg.duration, Duration::from_secs(5));
        assert_eq!(cfg.stall, Duration::from_secs(10));
        assert_eq!((cfg.requests, cfg.keepalive), (None, false));
        let cfg = args(&[
            "--tcp",
            "127.0.0.1:80",
            "--path",
            "/f",
            "--concurrency",
            "8",
            "--duration-s",
            "0.5",
            "--requests",
            "100",
            "--keepalive",
            "--stall-s",
            "2",
        ])
        .unwrap()
        .config()
        .unwrap();
        assert_eq!(cfg.target, Target::Tcp("127.0.0.1:80".parse().unwrap()));
        assert_eq!((cfg.path.as_str(), cfg.concurrency), ("/f", 8));
        assert_eq!(cfg.duration, Duration::from_millis(500));
        assert_eq!((cfg.requests, cfg.keepalive), (Some(100), true));
        assert_eq!(cfg.stall, Duration::from_secs(2));
    }

    #[test]
    fn errors_name_the_option() {
        assert!(args(&[]).is_err(), "a target is required");
        assert!(args(&["--trickles", "127.0.0.1:1", "--tcp", "127.0.0.1:2"]).is_err());
        let bad = |opt: &str, v: &str| {
            args(&["--trickles", "127.0.0.1:1", &format!("{opt}={v}")])
                .unwrap()
                .config()
                .unwrap_err()
                .to_string()
        };
        assert!(bad("--duration-s", "-1").contains("--duration-s"));
        assert!(bad("--stall-s", "NaN").contains("--stall-s"));
        assert!(bad("--duration-s", "1e300").contains("--duration-s"));
    }
}
