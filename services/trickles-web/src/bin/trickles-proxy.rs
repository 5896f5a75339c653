//! `trickles-proxy [--listen ADDR] --server ADDR [--server ADDR …] [--spray] [--via UDPADDR]
//! [--src IP] [--bind UDPADDR]`: see [`trickles_web::proxy`]. Prints `ready tcp=IP:PORT`
//! on stdout once listening.
use clap::Parser;
use trickles_web::proxy::{self, Args};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    netio::trace::report(
        async {
            args.log.init("info")?;
            proxy::main(&args).await
        }
        .await,
    )
}
