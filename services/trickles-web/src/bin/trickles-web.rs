//! `trickles-web --root DIR --keys FILE [--listen udp:ADDR | tun:NAME[,CIDR]] [--address IP]
//! [--tcp ADDR] [--config FILE]`: see [`trickles_web::daemon`].
use clap::Parser;
use trickles_web::daemon::{self, Args};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    netio::trace::report(
        async {
            args.log.init("info")?;
            daemon::run(&args).await
        }
        .await,
    )
}
