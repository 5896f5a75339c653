//! The daemon's command line and its start: what `main` calls.
//!
//! `main` parses [`Args`], sets up tracing and calls [`run`]: load and check the config,
//! then (unless `--check`) install the signal handlers, open the router's links, start the
//! capture and the metrics endpoint, and serve until SIGINT or SIGTERM, reloading the
//! config on SIGHUP ([`crate::reload`]). Tests and tools
//! call [`run`] the same way (mini-redis's `src/bin/server.rs` is the model).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

use crate::Router;
use netio::config::Source;

use crate::config::{Plan, RouterFile, plan};

/// The waist router node: ESP, SNAP, source hashing and threaded labels over TUN devices
/// and IP-in-UDP links. Stops cleanly on SIGINT or SIGTERM (captures flushed, final
/// counters logged); on SIGHUP re-reads its config and applies it (a bad one is logged
/// and the running one kept). Logging: RUST_LOG (default info),
/// --log-format text|json.
#[derive(Parser, Debug, Clone)]
#[command(name = "waist-router", version, about)]
pub struct Args {
    /// The router's TOML config (format: see services/waist-router/README.md).
    #[arg(long)]
    pub config: PathBuf,
    /// Capture every link's frames into DIR/NAME-LINK.pcap (unbounded unless
    /// --pcap-ring-mb caps it).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// With --pcap: keep at most MB MiB per link, in NAME-LINK.pcap (the newest) and
    /// NAME-LINK.pcap.1 … .3 (older; each a whole pcap), rotated like `tcpdump -C -W`.
    #[arg(long, value_name = "MB", requires = "pcap")]
    pub pcap_ring_mb: Option<u32>,
    /// Serve Prometheus metrics at ADDR (GET /metrics); use 127.0.0.1:0 for any free port.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Check the config and exit.
    #[arg(long)]
    pub check: bool,
    /// Logging: `--log-format text|json`.
    #[command(flatten)]
    pub log: netio::trace::LogArgs,
}

/// Everything the start checks before it binds or opens anything, `--check` and the start
/// alike: the config read (returned, as the file and as its plan) and planned ([`plan`]: the node built, every link checked as
/// netio opens it), `--pcap` a directory if it exists and `--pcap-ring-mb` a ring netio
/// can keep.
///
/// # Errors
///
/// The first problem, located by file, line and key when it is in the config.
pub fn check(args: &Args) -> anyhow::Result<(Source, RouterFile, Plan)> {
    let (source, file) = netio::config::load::<RouterFile>(&args.config)?;
    let plan = plan(&source, &file)?;
    if let Some(dir) = &args.pcap
        && dir.exists()
        && !dir.is_dir()
    {
        anyhow::bail!("--pcap {}: not a directory", dir.display());
    }
    ring(args)?;
    Ok((source, file, plan))
}

/// The capture ring `--pcap-ring-mb` asks for (`None`: unbounded).
///
/// # Errors
///
/// A size netio refuses (0, or past its maximum).
pub fn ring(args: &Args) -> anyhow::Result<Option<netio::pcap::Ring>> {
    args.pcap_ring_mb
        .map(|mb| {
            netio::pcap::Ring::megabytes(mb)
                .map_err(|e| anyhow::anyhow!("--pcap-ring-mb {mb}: {e}"))
        })
        .transpose()
}

/// Runs the daemon as `args` say, writing what scripts read (the `--check` verdict, the
/// metrics address) to `out`; returns when shutdown completes.
///
/// # Errors
///
/// A config error located by file, line and key; a link, capture directory or metrics
/// address that cannot be opened.
pub async fn run(args: &Args, out: &mut dyn Write) -> anyhow::Result<()> {
    let (source, file, plan) = check(args)?;
    if args.check {
        writeln!(
            out,
            "{}: ok ({} links, {} routes, {} groups)",
            args.config.display(),
            plan.links.len(),
            plan.node.routes.len(),
            plan.node.groups.len()
        )?;
        // The verifier's bounds on each installed instruction's run.
        for (opcode, name, m) in plan.node.esp.iter().flat_map(|e| &e.microcode.installed) {
            writeln!(out, "  {}", crate::microcode::describe(*opcode, name, m))?;
        }
        return Ok(());
    }
    let (trigger, shutdown) = netio::shutdown::Shutdown::new();
    let _signals = netio::shutdown::on_signals(trigger)?;
    let (reload, reloads) = netio::shutdown::Reloads::new();
    let _hangups = netio::shutdown::on_reload(reload)?;
    let mut router = Router::open(&plan, &source).await?;
    router.reload_from(reloads, args.config.clone(), source, file);
    if let Some(dir) = &args.pcap {
        std::fs::create_dir_all(dir)?;
        router.capture(dir, ring(args)?)?;
    }
    let scrapes = match args.metrics {
        Some(addr) => {
            let listener =
                tokio::net::TcpListener::bind(netio::metrics::bind_addr(Some(addr))).await?;
            // Printed so scripts and `waist up` can find a port chosen by the OS.
            writeln!(out, "metrics http://{}/metrics", listener.local_addr()?)?;
            out.flush()?;
            let (handle, scrapes) = netio::metrics::channel();
            let mut sd = shutdown.clone();
            tokio::spawn(netio::metrics::serve(listener, handle, async move {
                sd.wait().await
            }));
            Some(scrapes)
        }
        None => None,
    };
    let mut sd = shutdown.clone();
    // The run logs its final counters itself, as one line.
    router.run(async move { sd.wait().await }, scrapes).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn check_reports_the_plan_and_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("waist-router-daemon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("r.toml");
        std::fs::write(
            &good,
            "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n\n[[link]]\nname = \"a\"\n\
             kind = \"udp\"\nlocal = \"127.0.0.1:0\"\npeer = \"127.0.0.1:9\"\n\n\
             [[route]]\nprefix = \"10.9.0.0/16\"\nlink = \"a\"\n",
        )
        .unwrap();
        let mut args = Args::parse_from([
            "waist-router",
            "--config",
            good.to_str().unwrap(),
            "--check",
        ]);
        let mut out = Vec::new();
        run(&args, &mut out).await.unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with(": ok (1 links, 1 routes, 0 groups)\n"),
            "{text}"
        );

        // A capture directory that is a file: refused before anything opens.
        args.pcap = Some(good.clone());
        let err = run(&args, &mut Vec::new()).await.unwrap_err().to_string();
        assert!(err.ends_with(": not a directory"), "{err}");
        args.pcap = None;

        // A ring size netio cannot keep: refused by --check already.
        args.pcap = Some(dir.clone());
        args.pcap_ring_mb = Some(0);
        let err = run(&args, &mut Vec::new()).await.unwrap_err().to_string();
        assert!(err.starts_with("--pcap-ring-mb 0: "), "{err}");
        args.pcap = None;
        args.pcap_ring_mb = None;

        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[node]\nname = \"r1\"\nadress = [\"10.0.0.1\"]\n").unwrap();
        args.config = bad;
        let err = run(&args, &mut Vec::new()).await.unwrap_err().to_string();
        assert!(err.contains("bad.toml"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
