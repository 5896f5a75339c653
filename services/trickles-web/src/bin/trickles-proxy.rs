//! `trickles-proxy [--listen ADDR] --server ADDR [--server ADDR …] [--spray] [--via UDPADDR]
//! [--src IP] [--bind UDPADDR]`: see
//! [`trickles_web::proxy`]. Prints `ready tcp=IP:PORT` on stdout once listening.
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use clap::Parser;
use trickles_web::proxy::{self, Args, ProxyStats};
use trickles_web::udp::Link;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    netio::trace::init("info")?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    let link = Link::bind(args.link_config()?).await?;
    let (trigger, shutdown) = netio::shutdown::Shutdown::new();
    let _signals = netio::shutdown::on_signals(trigger)?;
    println!("ready tcp={}", listener.local_addr()?);
    let stats = Arc::new(ProxyStats::default());
    proxy::run(listener, link, shutdown, stats.clone()).await?;
    tracing::info!(
        connections = stats.tcp_connections.load(Ordering::Relaxed),
        requests = stats.requests.load(Ordering::Relaxed),
        bytes = stats.bytes.load(Ordering::Relaxed),
        "bye"
    );
    Ok(())
}
