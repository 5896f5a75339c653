//! `waist demo`: the workspace at work, two ways.
//!
//! ```text
//!  waist demo ──────► net: examples/topologies/demo.toml as real processes (up::fleet),
//!                     │    exercised by the host tools (host), trickles-get/-proxy, curl
//!                     ├─ steps: the seven steps, each measured in this run
//!                     └─ tun (--tun, root): namespaces at the edges; the kernel's ping, curl
//!  waist demo --sim ─► sim: the cores on a virtual clock, no processes:
//!                          the ESS store, then esp, trickles, fastpath, ixp
//! ```
//!
//! [`net`] is the real thing: four routers, two trickles-web replicas and two end hosts,
//! each daemon its own process on loopback, then ESP, SNAP, Trickles, a proxy, a router
//! and a replica killed ([`steps`]); [`tun`] adds network namespaces with `--tun`. [`sim`]
//! is the older tour of the cores on the simulator's virtual clock: numbers that repeat
//! exactly from run to run.

pub mod multicast;
pub mod net;
pub mod sim;
pub mod steps;
pub mod tun;

use std::io::Write;
use std::path::PathBuf;

/// `waist demo` options.
#[derive(Debug, Default, clap::Args)]
pub struct DemoArgs {
    /// The older tour of the cores on a virtual clock (no processes, no network).
    #[arg(long)]
    pub sim: bool,
    /// Where the run's files go (configs, logs, captures, downloads); default a fresh
    /// directory under the system's temporary directory, kept afterwards.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also two network namespaces at the edges (root): the kernel's own ping and curl
    /// cross the routers.
    #[arg(long, conflicts_with = "sim")]
    pub tun: bool,
}

/// Runs the demo `args` ask for; returns 0 if every step succeeded, 1 otherwise (the tour
/// on a virtual clock always returns 0).
///
/// # Errors
///
/// If the network cannot be brought up, a core refuses a valid config, or writing fails.
pub fn run(args: &DemoArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    if args.sim {
        sim::run(out)?;
        return Ok(0);
    }
    net::run(args, out)
}
