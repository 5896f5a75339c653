//! `trickles-get URL [-o FILE] [--parallel N] [--server ADDR …] [--spray] [--emulate SPEC]
//! [--connect-timeout S]
//! [--idle-timeout S] [--timeout-s N] [--json] [--via udp:LOCAL=PEER] [--src IP] [--bind UDPADDR]`: see [`trickles_web::get`].
use std::process::ExitCode;

use clap::Parser;
use trickles_web::get::{self, Args};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = args.log.init("warn") {
        eprintln!("trickles-get: {e:#}");
    }
    ExitCode::from(get::main(&args).await)
}
