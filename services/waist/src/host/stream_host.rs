//! `waist stream host`: the host side of the router's stream handlers (the paper's host
//! processor). A router with `[streams] host = ADDR` hands it the streams it has no
//! headroom for: their deployment as a control envelope, then their fragments unchanged.
//! It runs them on the same code (`stream_handlers::node`, inside a `waist_node::Node`)
//! without admission, and sends their output back through the router.
//!
//! It is the router daemon itself, run with the config
//! [`waist_router::streams::host_config`] writes: one link to the router, everything
//! routed over it, `[streams] admission = false`. So it has the daemon's logs, metrics,
//! pcap and graceful shutdown.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;

use super::Via;

/// `waist stream host` options.
#[derive(Debug, Args)]
pub struct HostArgs {
    /// The link to the router: `udp:LOCAL=PEER`. Default: the `WAIST_VIA` environment
    /// variable.
    #[arg(long, env = "WAIST_VIA")]
    pub via: Via,
    /// The host's address: the router's `[streams] host`. Default: `WAIST_SRC`.
    #[arg(long, env = "WAIST_SRC")]
    pub src: IpAddr,
    /// Its name in logs and metrics.
    #[arg(long, default_value = "stream-host")]
    pub name: String,
    /// Where the generated config is written (default: in the temporary directory).
    #[arg(long, value_name = "FILE")]
    pub config_out: Option<PathBuf>,
    /// Serve Prometheus metrics at ADDR (127.0.0.1:0: any free port, printed).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Capture the link into DIR/NAME-router.pcap.
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
}

/// Runs the stream host until SIGINT or SIGTERM.
///
/// # Errors
///
/// A link that is not `udp:LOCAL=PEER`, a config file that cannot be written, or the
/// daemon's own errors (an address in use).
pub fn run(args: HostArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let Via::Udp { .. } = args.via else {
        bail!("--via: the stream host reaches its router over udp:LOCAL=PEER");
    };
    let text = waist_router::streams::host_config(&args.name, args.src, &args.via.to_string());
    let path = args.config_out.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("waist-stream-host-{}.toml", std::process::id()))
    });
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    let daemon = waist_router::daemon::Args {
        config: path,
        pcap: args.pcap,
        pcap_ring_mb: None,
        metrics: args.metrics,
        check: false,
        log: netio::trace::LogArgs::default(),
    };
    super::block_on(waist_router::daemon::run(&daemon, out))?;
    Ok(0)
}
