//! `waist-router --config r1.toml [--pcap DIR] [--metrics ADDR] [--check]`: parses the
//! arguments, sets up tracing and calls [`waist_router::daemon::run`].
use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = waist_router::daemon::Args::parse();
    netio::trace::init("info")?;
    waist_router::daemon::run(&args, &mut std::io::stdout()).await
}
