//! `waist up`, `waist down`, `waist status`: a whole network of our daemons from one
//! topology file ([`topology`]), each daemon its own process ([`fleet`]).
//!
//! `waist up FILE` checks the file, checks that every binary is there and every port free
//! (the links' UDP ports and the metrics endpoints' TCP ports, both derived from the
//! topology), starts the routers and then the servers, each ready (its metrics endpoint
//! answers) before the next, prints what runs where (each process's metrics URL
//! included), and stays in the foreground until Ctrl-C or SIGTERM, when it stops
//! everything it started (SIGTERM, SIGKILL after a bound) — also when it fails half-way.
//! `--only MACHINE` starts one machine's part of a network that spans machines.
//!
//! End hosts of `kind = "netns"` are kernel network namespaces ([`netns`]): made once the
//! routers run, listed with how to use them, deleted when the run stops.
//!
//! `waist up FILE --export containerlab DIR` ([`export`]) starts nothing: it plans the same
//! file for containers (a veth pair with a /31 per link, each router's config written by
//! the same code) and writes a containerlab lab into DIR, one file per machine for a
//! network spanning machines (joined by `vxlan-stitch` links), refusing with a located
//! error what containers cannot express.
//!
//! Every run writes `DIR/state.json` once its processes are up: a foreground run removes
//! it when it stops, `--detach` leaves the processes running and the file behind. `waist
//! status` ([`mod@status`]), `waist route show NAME` and `waist down` read it, so they find a
//! process by its name under either. `waist restart NAME` ([`restart`]) stops one process
//! and starts it again as it was started, under either too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde::{Deserialize, Serialize};

pub mod export;
pub mod fleet;
pub mod launch;
pub mod netns;
pub mod restart;
pub mod status;
pub mod topology;

use fleet::{Fleet, STOP_GRACE, Started};
use netns::Namespaces;
use topology::{NetnsHost, Plan};

pub use status::{counters, status};

/// The state file of a detached run, in its directory.
pub const STATE_FILE: &str = "state.json";

/// `waist up` options.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// The topology file (its format: services/waist/README.md and the docs of
    /// `waist::up::topology`; an example: examples/topologies/demo.toml).
    pub file: PathBuf,
    /// Start only the nodes of this machine (its `[[machine]]` name; `local` for nodes
    /// that name none).
    #[arg(long, value_name = "MACHINE")]
    pub only: Option<String>,
    /// The run's directory: generated configs, keys, logs, captures, state.
    #[arg(long, default_value = "waist-run")]
    pub dir: PathBuf,
    /// Start, write DIR/state.json and return, leaving the processes running (stop them
    /// with `waist down`).
    #[arg(long)]
    pub detach: bool,
    /// Check the file, the binaries and the ports, print the plan, start nothing.
    #[arg(long)]
    pub check: bool,
    /// Write the network as a containerlab lab into DIR instead of starting it (FORMAT:
    /// `containerlab`): DIR/NAME.clab.yml (one per machine for a network spanning
    /// machines) and each node's files; prints the deploy command. Starts nothing.
    #[arg(
        long,
        num_args = 2,
        value_names = ["FORMAT", "DIR"],
        conflicts_with_all = ["only", "detach", "check"]
    )]
    pub export: Option<Vec<String>>,
    /// How the daemons write their logs (`waist --log-format`, passed on to each).
    #[arg(skip)]
    pub log_format: netio::trace::LogFormat,
}

/// `waist down` options.
#[derive(Debug, Args)]
pub struct RunDirArgs {
    /// The run's directory (`waist up --dir`).
    #[arg(long, default_value = "waist-run")]
    pub dir: PathBuf,
}

/// What a run leaves for `waist down`, `waist status` and `waist route show`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    /// The run's name.
    pub name: String,
    /// The topology file.
    pub topology: PathBuf,
    /// What runs.
    pub processes: Vec<Started>,
    /// The pid of the `waist up` that runs in the foreground and stops them; `None` for a
    /// detached run.
    #[serde(default)]
    pub supervisor: Option<u32>,
    /// The network namespaces of its netns hosts, deleted when it stops.
    #[serde(default)]
    pub namespaces: Vec<NetnsHost>,
}

impl State {
    /// Whether this is a foreground run whose `waist up` and processes are all gone (it
    /// was killed before it could remove its state file).
    fn stale(&self) -> bool {
        self.supervisor.is_some_and(|pid| !alive(pid))
            && !self
                .processes
                .iter()
                .any(|s| is_ours(s.pid, s.role.program()))
    }

    /// Reads `dir`'s state file.
    ///
    /// # Errors
    ///
    /// No run there.
    pub fn load(dir: &Path) -> anyhow::Result<State> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no `waist up` run in {} (no {}): start one with `waist up FILE --dir {}`",
                dir.display(),
                path.display(),
                dir.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))
    }

    /// Writes the state file of the run in `dir`: whole (a temporary file renamed into
    /// place) and readable by its owner only (it holds the processes' environment).
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn save(&self, dir: &Path) -> anyhow::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join(STATE_FILE);
        let tmp = dir.join(format!(".{STATE_FILE}.{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(serde_json::to_string_pretty(self)?.as_bytes())?;
            std::fs::rename(&tmp, &path)
        };
        write().with_context(|| format!("cannot write {}", path.display()))
    }
}

/// Checks `args.file` and the machine, ready to start.
fn prepare(args: &UpArgs) -> anyhow::Result<(Plan, PathBuf)> {
    let plan = topology::load(&args.file)?;
    if let Some(m) = &args.only
        && !plan.machines.contains_key(m)
    {
        let known: Vec<_> = plan.machines.keys().cloned().collect();
        bail!(
            "--only {m}: {} has no such machine (it has: {})",
            args.file.display(),
            known.join(", ")
        );
    }
    netns::preflight(&plan, args.only.as_deref())?;
    let bins = fleet::binary_dir()?;
    fleet::build_if_missing(&bins, &mut std::io::stderr())?;
    fleet::preflight(&plan, args.only.as_deref(), &bins)?;
    Ok((plan, bins))
}

/// `waist up`; returns the exit code.
///
/// # Errors
///
/// A bad topology, a missing binary, a port in use, a process that does not start.
pub fn up(args: &UpArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    if let Some([format, dir]) = args.export.as_deref() {
        return export::run(&args.file, format, Path::new(dir), out);
    }
    let (plan, bins) = prepare(args)?;
    let only = args.only.as_deref();
    if args.check {
        writeln!(
            out,
            "{}: ok: {} processes to start{}",
            args.file.display(),
            plan.on(only).count(),
            only.map_or(String::new(), |m| format!(" on {m}"))
        )?;
        for (i, p) in plan.processes.iter().enumerate() {
            if only.is_some_and(|m| p.machine != m) {
                continue;
            }
            let links: Vec<_> = p.links.iter().map(|l| l.name.as_str()).collect();
            writeln!(
                out,
                "  {:<10} {:<13} metrics {:<16} links {}",
                p.name,
                p.role.program(),
                plan.metrics_addr(i),
                links.join(", ")
            )?;
        }
        let spaces: Vec<NetnsHost> = netns::of(&plan, only).cloned().collect();
        netns::print_usage(&plan, &spaces, out)?;
        return Ok(0);
    }
    let state_file = args.dir.join(STATE_FILE);
    if state_file.exists() {
        match State::load(&args.dir) {
            Ok(old) if old.stale() => std::fs::remove_file(&state_file)
                .with_context(|| format!("cannot remove {}", state_file.display()))?,
            _ => bail!(
                "{} holds a run that is still up: stop it with `waist down --dir {}` first",
                args.dir.display(),
                args.dir.display()
            ),
        }
    }
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    writeln!(out, "starting {} from {}", plan.name, args.file.display())?;
    let mut fleet = Fleet::start(&plan, only, &args.dir, &bins, args.log_format)?;
    let spaces = Namespaces::create(&plan, only)?;
    fleet::print_table(&plan, &fleet.started, only, out)?;
    netns::print_usage(&plan, spaces.hosts(), out)?;
    let state = State {
        name: plan.name.clone(),
        topology: args.file.clone(),
        processes: fleet.started.clone(),
        supervisor: (!args.detach).then(std::process::id),
        namespaces: spaces.hosts().to_vec(),
    };
    state.save(&args.dir)?;
    if args.detach {
        fleet.detach();
        spaces.detach();
        writeln!(
            out,
            "\ndetached; `waist status --dir {0}` shows counters, `waist down --dir {0}` stops it",
            args.dir.display()
        )?;
        return Ok(0);
    }
    let signal = wait_for_signal(&mut fleet, &args.dir, out);
    // Its own children, and those `waist restart` started in their place.
    let stopped = restart::stop_all(&args.dir, &mut fleet, STOP_GRACE);
    let deleted = spaces.delete();
    let _ = std::fs::remove_file(&state_file);
    writeln!(
        out,
        "{}: stopped {stopped} processes{}",
        signal?,
        namespaces_deleted(deleted)
    )?;
    Ok(0)
}

/// Says it runs once SIGINT and SIGTERM are handled, then waits for one, reporting
/// processes that exit meanwhile (those `waist restart` stopped as such, and again once
/// started); returns the signal's name.
fn wait_for_signal(
    fleet: &mut Fleet,
    dir: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<&'static str> {
    crate::host::block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        // Only now that Ctrl-C is ours (before, it would kill this process and orphan the
        // daemons).
        writeln!(
            out,
            "\nrunning; `waist status --dir {0}` and `waist route show NAME --dir {0}` read it; Ctrl-C stops everything",
            dir.display()
        )?;
        out.flush()?;
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        // Processes `waist restart` is starting again: (name, old pid).
        let mut restarting: Vec<(String, u32)> = Vec::new();
        loop {
            tokio::select! {
                _ = int.recv() => return Ok("interrupted"),
                _ = term.recv() => return Ok("terminated"),
                _ = tick.tick() => {
                    for (name, status) in fleet.exited() {
                        let old = fleet.started.iter().find(|s| s.name == name).map_or(0, |s| s.pid);
                        match restart::restarted(dir, &name, old) {
                            Some((note, under_way)) => {
                                writeln!(out, "{note}")?;
                                if under_way {
                                    restarting.push((name, old));
                                }
                            }
                            None => writeln!(out, "{name} exited ({status})")?,
                        }
                        out.flush()?;
                    }
                    restarting.retain(|(name, old)| {
                        match restart::settled_pid(dir, name) {
                            Some(new) => {
                                let _ = if new == *old {
                                    writeln!(out, "{name} did not start again (see `waist restart`)")
                                } else {
                                    writeln!(out, "{name} running again: pid {new}")
                                };
                                let _ = out.flush();
                                false
                            }
                            None => true,
                        }
                    });
                }
            }
        }
    })
}

/// `waist down`: stops a run (a detached one, or one whose `waist up` runs in the
/// foreground: that `waist up` is sent SIGTERM too); returns the exit code.
///
/// # Errors
///
/// No run in the directory.
pub fn down(args: &RunDirArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let state = State::load(&args.dir)?;
    if let Some(sup) = state.supervisor.filter(|p| alive(*p)) {
        let _ = nix::sys::signal::kill(pid(sup), nix::sys::signal::Signal::SIGTERM);
    }
    let procs: Vec<(u32, &str)> = state
        .processes
        .iter()
        .map(|s| (s.pid, s.role.program()))
        .collect();
    let killed = stop_pids(&procs, STOP_GRACE);
    let deleted = netns::delete(&state.namespaces);
    // A foreground `waist up` may have removed it already.
    match std::fs::remove_file(args.dir.join(STATE_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => {}
    }
    writeln!(
        out,
        "{}: stopped {} processes{}{}",
        state.name,
        state.processes.len(),
        match killed {
            0 => String::new(),
            n => format!(" ({n} needed SIGKILL)"),
        },
        namespaces_deleted(deleted)
    )?;
    Ok(0)
}

/// `, deleted N network namespaces` if there were any.
fn namespaces_deleted(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => ", deleted 1 network namespace".into(),
        n => format!(", deleted {n} network namespaces"),
    }
}

/// SIGTERM to each `(pid, program)` whose pid runs that program, SIGKILL to those still
/// running after `grace`; returns once none runs (or `grace` after the SIGKILL), with how
/// many needed SIGKILL.
pub(super) fn stop_pids(procs: &[(u32, &str)], grace: Duration) -> usize {
    let running = |(p, program): &&(u32, &str)| is_ours(*p, program);
    for (p, _) in procs.iter().filter(running) {
        let _ = nix::sys::signal::kill(pid(*p), nix::sys::signal::Signal::SIGTERM);
    }
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline && procs.iter().any(|x| running(&x)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stubborn: Vec<(u32, &str)> = procs.iter().filter(running).copied().collect();
    for (p, _) in &stubborn {
        let _ = nix::sys::signal::kill(pid(*p), nix::sys::signal::Signal::SIGKILL);
    }
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline && stubborn.iter().any(|x| running(&x)) {
        std::thread::sleep(Duration::from_millis(10));
    }
    stubborn.len()
}

fn pid(p: u32) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(i32::try_from(p).unwrap_or(i32::MAX))
}

/// Whether `pid` runs `program` (so a reused pid is never signalled).
pub fn is_ours(pid: u32, program: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| {
        let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
        Path::new(&*String::from_utf8_lossy(argv0)).file_name() == Some(program.as_ref())
    }) && !is_zombie(pid)
}

/// Whether `pid` runs (and is not a zombie).
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid)
}

/// Whether `pid` has exited and awaits its parent.
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}
