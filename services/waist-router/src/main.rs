//! `waist-router --config r1.toml [--pcap DIR] [--metrics ADDR] [--check]`
use std::path::PathBuf;

use clap::Parser;

/// The waist router node: ESP, SNAP, source hashing and threaded labels over TUN and UDP links.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The router's TOML config.
    #[arg(long)]
    config: PathBuf,
    /// Check the config and exit.
    #[arg(long)]
    check: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (source, file) = netio::config::load::<waist_router::config::RouterFile>(&args.config)?;
    let plan = waist_router::config::plan(&source, &file)?;
    if args.check {
        println!(
            "{}: ok ({} links, {} routes)",
            args.config.display(),
            plan.links.len(),
            plan.routes.len()
        );
        return Ok(());
    }
    let router = waist_router::Router::open(&plan, &source).await?;
    let summary = router
        .run(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    println!("{:?}", summary.node);
    Ok(())
}
