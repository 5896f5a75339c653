//! `trickles-load (--trickles UDPADDR | --tcp ADDR) [--path P] [--concurrency N]
//! [--duration-s S] [--requests N] [--keepalive] [--stall-s S] [--json]`: closed-loop load
//! against a Trickles or a TCP web server (see [`trickles_web::load`]). Prints one line
//! (or `--json`) when the run ends.
use clap::Parser;
use trickles_web::load::{self, Args};

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    netio::trace::report(args.log.init("warn").and_then(|()| load::main(&args)))
}
