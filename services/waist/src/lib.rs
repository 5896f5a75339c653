//! The `waist` command line, by command. `main` only parses arguments; everything runs
//! through [`run`], so tests can drive it and capture its output. No protocol logic lives
//! here: every command drives a core crate or a daemon and prints what comes back.
//!
//! ```text
//!  waist demo [--sim]   demo/      the shipped network as real processes (net, steps, tun),
//!                                  or the cores on a virtual clock (sim)
//!  waist up|down|status up/        a topology file (topology) as processes (fleet);
//!  waist restart                   one of them stopped and started again (restart)
//!  waist esp send       host/      an end host on a link to a router: esp, snap ping,
//!  waist snap ping                 route show (a router by name or metrics address); the
//!  waist route show                link (link), metrics pages and the JSON view (scrape)
//!  waist stream pub|sub|deploy|…   stream handlers: publish, subscribe, deploy, control
//!  waist snap asm|…     snap.rs    SNAP programs: assemble, disassemble, verify, run
//!  waist plan compile   plan.rs    PLAN compiled to SNAP
//!  waist repro NAME     reproduce/ the papers' tables and figures (the waist-repro crate),
//!                                  with a progress bar on a terminal (progress)
//!  waist completions    completions.rs  shell completions and man pages of every binary
//!  waist man
//!  waist node           node.rs    a container's init: wait for interfaces and addresses, exec
//!  waist image          image.rs   the container image, FROM scratch (docker build)
//! ```
//!
//! * [`demo`]: `waist demo` brings `examples/topologies/demo.toml` up as real processes and
//!   exercises it step by step ([`demo::net`], [`demo::steps`], [`demo::tun`] for `--tun`);
//!   `--sim` is the tour of the cores on a virtual clock ([`demo::sim`]).
//! * [`up`]: `waist up`, `down`, `status` and `restart`: a network of our daemons from a
//!   topology file ([`up::topology`]), each daemon its own process ([`up::fleet`]), found
//!   again by name through the run's state file ([`mod@up::status`],
//!   [`up::restart`]).
//!
//! `--json` on `waist status`, `waist route show`, `waist snap ping` and `waist esp send`
//! prints one JSON document instead of text (its fields are documented with each command).
//! * [`host`]: the host tools (`esp send`, `snap ping`, `route show`, `stream …`) over a
//!   real link, and the client side of the daemons' metrics ([`host::scrape`]) that `up` uses too.
//! * [`snap`] and [`plan`]: the SNAP and PLAN tools, which run no network.
//! * [`reproduce`]: `waist repro`, handing the options to the `waist-repro` crate
//!   ([`repro`]).
//! * [`completions`]: `waist completions SHELL [BINARY]` and `waist man DIR`, from the
//!   clap definitions of waist and of the daemons and clients.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub mod completions;
pub mod demo;
pub mod host;
pub mod image;
pub mod node;
pub mod plan;
pub mod reproduce;
pub mod snap;
pub mod up;

/// Lightweight network support, made real: demo and paper reproductions.
#[derive(Debug, Parser)]
#[command(name = "waist", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Logging: `--log-format text|json`.
    #[command(flatten)]
    pub log: netio::trace::LogArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Bring the shipped topology up as real processes on loopback (four routers, two
    /// trickles-web replicas, two hosts) and exercise it: ESP, SNAP, Trickles, a proxy,
    /// a router and a replica killed. `--sim`: the tour of the cores on a virtual clock.
    Demo(demo::DemoArgs),
    /// Reproduce a paper's table or figure, ours beside the paper's.
    Repro {
        /// Which reproduction.
        #[arg(value_enum)]
        name: repro::Name,
        /// Directory for plots and data files.
        #[arg(long, default_value = "repro-out")]
        out: PathBuf,
        /// Store size, log2 of the capacity (ess-fig11).
        #[arg(long, default_value_t = 16)]
        log2: u8,
        /// Seed for tags and hash keys.
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
        /// Repetitions: runs per scheme (esp-aggregation, default 1000), sets per point
        /// (esp-fig8, default 2000).
        #[arg(long)]
        runs: Option<u64>,
    },
    /// ESP host tools: send a query through a router over a real link.
    Esp {
        /// Which tool.
        #[command(subcommand)]
        command: host::esp::EspCommand,
    },
    /// Routing tools: a router's table, from its metrics endpoint.
    Route {
        /// Which tool.
        #[command(subcommand)]
        command: host::route::RouteCommand,
    },
    /// PLAN tools: compile a PLAN program to SNAP (the SNAP paper's §V).
    Plan {
        /// Which tool.
        #[command(subcommand)]
        command: plan::PlanCommand,
    },
    /// SNAP tools: assemble, disassemble, verify and run active packets; ping through
    /// routers.
    Snap {
        /// Which tool.
        #[command(subcommand)]
        command: snap::SnapCommand,
    },
    /// Stream handler tools: publish and subscribe to a stream through a stream node,
    /// deploy handlers on it and change them at run time.
    Stream {
        /// Which tool.
        #[command(subcommand)]
        command: host::stream::StreamCommand,
    },
    /// Bring a network of routers and Trickles servers up from a topology file, each
    /// daemon its own process, until Ctrl-C (or --detach).
    Up(up::UpArgs),
    /// Stop a `waist up` run (detached, or running in the foreground of another terminal).
    Down(up::RunDirArgs),
    /// Restart one process of a running `waist up` (detached or in the foreground): stop
    /// it, start it again with the same command line, environment and log files, wait
    /// until its metrics answer.
    Restart(up::restart::RestartArgs),
    /// Each process of a running `waist up` (or the one named) and its live counters.
    Status(up::status::StatusArgs),
    /// Print the shell completion script for waist or another of our binaries.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
        /// Whose script.
        #[arg(value_enum, default_value = "waist")]
        binary: completions::Binary,
    },
    /// Write a man page NAME.1 for every binary (waist-SUB.1 per waist subcommand) into DIR.
    Man {
        /// Where the pages go (made if missing).
        dir: PathBuf,
    },
    /// A container's init: wait for `$CLAB_INTFS` interfaces and every `--wait-address`,
    /// then exec the program after `--` (or hold until SIGTERM).
    Node(node::NodeArgs),
    /// Build the container image (`FROM scratch`, static binaries): `waist:latest` and
    /// `waist:VERSION`, and print its size.
    Image(image::ImageArgs),
}

/// Runs one command, writing its report to `out`; returns the process exit code (0 but
/// for the host tools: 1 when an ESP computation aborted, 2 when nothing answered).
///
/// # Errors
///
/// If writing the report or a plot fails, or a host tool's link cannot be opened.
pub fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<u8> {
    let log = cli.log.log_format;
    let done = match cli.command {
        Command::Demo(args) => return demo::run(&args, out),
        Command::Repro {
            name,
            out: dir,
            log2,
            seed,
            runs,
        } => {
            let opts = repro::Options {
                dir,
                log2,
                seed,
                runs,
                progress: repro::Progress::default(),
            };
            reproduce::run(name, opts, out)
        }
        Command::Esp { command } => return host::esp::run(command, out),
        Command::Route { command } => return host::route::run(command, out),
        Command::Snap { command } => return snap::run(command, out),
        Command::Stream { command } => return host::stream::run(command, out),
        Command::Plan { command } => return plan::run(command, out),
        Command::Up(mut args) => {
            // The daemons log as `waist` was asked to.
            args.log_format = log;
            return up::up(&args, out);
        }
        Command::Down(args) => return up::down(&args, out),
        Command::Restart(args) => return up::restart::restart(&args, out),
        Command::Node(args) => return node::run(args),
        Command::Image(args) => image::run(&args, out),
        Command::Status(args) => return up::status(&args, out),
        Command::Completions { shell, binary } => completions::completions(shell, binary, out),
        Command::Man { dir } => completions::man_pages(&dir).and_then(|pages| {
            for p in pages {
                writeln!(out, "{}", p.display())?;
            }
            Ok(())
        }),
    };
    done.map(|()| 0)
}
