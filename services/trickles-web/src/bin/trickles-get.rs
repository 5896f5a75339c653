//! `trickles-get URL [-o FILE] [--parallel N] [--server ADDR …] [--spray] [--emulate SPEC]
//! [--timeout-s N] [--via udp:LOCAL=PEER] [--src IP] [--bind UDPADDR]`: see [`trickles_web::get`].
use std::process::ExitCode;

use clap::Parser;
use trickles_web::get::{self, Args};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = args.log.init("warn") {
        eprintln!("trickles-get: {e:#}");
    }
    match get::run(&args).await {
        Ok(summary) => {
            eprintln!("trickles-get: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("trickles-get: {e:#}");
            ExitCode::FAILURE
        }
    }
}
