//! `waist-router --config r1.toml [--pcap DIR] [--metrics ADDR] [--check] [--log-format json]`: parses the
//! arguments, sets up tracing and calls [`waist_router::daemon::run`].
use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = waist_router::daemon::Args::parse();
    netio::trace::report(
        async {
            args.log.init("info")?;
            waist_router::daemon::run(&args, &mut std::io::stdout()).await
        }
        .await,
    )
}
