//! `waist-router --config r1.toml [--pcap DIR] [--metrics ADDR] [--check]`
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use tracing::info;

/// The waist router node: ESP, SNAP, source hashing and threaded labels over TUN devices
/// and IP-in-UDP links. Stops cleanly on SIGINT or SIGTERM (captures flushed, final
/// counters logged). Logging: RUST_LOG (default info).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The router's TOML config (format: see services/waist-router/README.md).
    #[arg(long)]
    config: PathBuf,
    /// Capture every link's frames into DIR/NAME-LINK.pcap.
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// Serve Prometheus metrics at ADDR (GET /metrics); use 127.0.0.1:0 for any free port.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Check the config and exit.
    #[arg(long)]
    check: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    netio::trace::init("info")?;
    let (source, file) = netio::config::load::<waist_router::config::RouterFile>(&args.config)?;
    let plan = waist_router::config::plan(&source, &file)?;
    if args.check {
        println!(
            "{}: ok ({} links, {} routes, {} groups)",
            args.config.display(),
            plan.links.len(),
            plan.node.routes.len(),
            plan.node.groups.len()
        );
        return Ok(());
    }
    let (trigger, shutdown) = netio::shutdown::Shutdown::new();
    let _signals = netio::shutdown::on_signals(trigger)?;
    let mut router = waist_router::Router::open(&plan, &source).await?;
    if let Some(dir) = &args.pcap {
        std::fs::create_dir_all(dir)?;
        router.capture(dir)?;
    }
    let scrapes = match args.metrics {
        Some(addr) => {
            let listener =
                tokio::net::TcpListener::bind(netio::metrics::bind_addr(Some(addr))).await?;
            // Printed on stdout so scripts and `waist up` can find a port chosen by the OS.
            println!("metrics http://{}/metrics", listener.local_addr()?);
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
    let summary = router.run(async move { sd.wait().await }, scrapes).await?;
    info!(unclaimed = summary.unclaimed, "bye");
    Ok(())
}
