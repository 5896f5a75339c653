//! The processes of a run: started one by one from a [`Plan`], each waited for until its
//! metrics endpoint answers, and stopped together (SIGTERM, then SIGKILL after a bound)
//! when the run ends, fails or is dropped.
//!
//! A run's directory holds what its processes need and leave: `NAME.toml` (a router's
//! generated config), `keys/SERVER.key` (the key file a server's replicas share),
//! `logs/NAME.log` (stderr: the daemon's tracing) and `logs/NAME.out` (stdout: the line
//! that says where its metrics are), and `pcap/` (every link's capture).
//!
//! Each process serves its metrics on the port the plan gives it
//! ([`Plan::metrics_addr`]: `metrics_base` + its index in the plan), so a router's page is
//! at the same address run after run; [`check_ports`] refuses a run whose metrics port is
//! taken, naming the port and the process.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clap::ValueEnum;
use netio::trace::LogFormat;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use super::launch::Launch;
use super::topology::{Capture, Plan, Process, Role};

/// How long a process may take to say where its metrics are and answer there.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long processes get to stop after SIGTERM before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// A process that runs (or ran) in this run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Started {
    /// Its name.
    pub name: String,
    /// What it is.
    pub role: Role,
    /// Its machine.
    pub machine: String,
    /// Its pid.
    pub pid: u32,
    /// Its metrics endpoint.
    pub metrics: SocketAddr,
    /// Where its captures go (a router writes `NAME-LINK.pcap` files there).
    pub pcap: PathBuf,
    /// Its stderr.
    pub log: PathBuf,
    /// Its links: (name, local, peer).
    pub links: Vec<(String, SocketAddr, SocketAddr)>,
    /// What it captures (`[defaults] capture`; unbounded in an older state file).
    #[serde(default)]
    pub capture: Capture,
    /// How it was started, for `waist restart` (`None` in an older state file).
    #[serde(default)]
    pub launch: Option<Launch>,
    /// Set by `waist restart` while it stops and starts this process again, so a
    /// foreground `waist up` does not report the stop as a failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarting: bool,
}

/// The processes this run started. Dropping it stops them, unless it was detached.
#[derive(Debug, Default)]
pub struct Fleet {
    /// What runs, in start order.
    pub started: Vec<Started>,
    children: Vec<Child>,
    /// Indices of the exits [`Fleet::exited`] reported.
    reported: Vec<usize>,
}

/// The directory of the binaries that came with this `waist` (the same build).
///
/// # Errors
///
/// If the running executable cannot be found.
pub fn binary_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the running waist binary")?;
    let dir = exe.parent().context("the waist binary has no directory")?;
    // Test binaries live one level down, in `deps/`.
    Ok(if dir.ends_with("deps") {
        dir.parent().unwrap_or(dir).to_path_buf()
    } else {
        dir.to_path_buf()
    })
}

/// The path of `program` in `bins`, or an error that says how to build it.
///
/// # Errors
///
/// If it is not there.
pub fn find_binary(bins: &Path, program: &str) -> anyhow::Result<PathBuf> {
    let path = bins.join(program);
    if path.is_file() {
        return Ok(path);
    }
    let package = match program {
        "waist-router" => "waist-router",
        _ => "trickles-web",
    };
    let release = if bins.ends_with("release") {
        " --release"
    } else {
        ""
    };
    bail!(
        "{program} is not in {} (beside waist): build it with `cargo build{release} -p {package}`",
        bins.display()
    )
}

/// Builds the daemons beside `waist` if some are missing and this `waist` was started by
/// `cargo run` (cargo sets `CARGO`), so the first `cargo run -p waist -- demo` on a fresh
/// clone works; otherwise does nothing ([`preflight`] then names what is missing).
///
/// # Errors
///
/// The build fails.
pub fn build_if_missing(bins: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let programs = [
        "waist-router",
        "trickles-web",
        "trickles-get",
        "trickles-proxy",
    ];
    let missing: Vec<&str> = programs
        .into_iter()
        .filter(|p| !bins.join(p).is_file())
        .collect();
    let (Some(cargo), Some(manifest)) =
        (std::env::var_os("CARGO"), option_env!("CARGO_MANIFEST_DIR"))
    else {
        return Ok(());
    };
    if missing.is_empty() || !Path::new(manifest).join("Cargo.toml").is_file() {
        return Ok(());
    }
    writeln!(out, "building {} beside waist (once) …", missing.join(", "))?;
    out.flush()?;
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "waist-router",
        "-p",
        "trickles-web",
    ])
    .arg("--manifest-path")
    .arg(Path::new(manifest).join("Cargo.toml"));
    if let Some(target) = bins.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    if bins.ends_with("release") {
        cmd.arg("--release");
    }
    let status = cmd.status().context("cannot run cargo")?;
    if !status.success() {
        bail!("building the daemons failed ({status})");
    }
    Ok(())
}

/// Checks, before anything starts, that every binary is there and every UDP port the
/// processes of `machine` (all for `None`) bind is free.
///
/// # Errors
///
/// The first missing binary or port in use, named.
pub fn preflight(plan: &Plan, machine: Option<&str>, bins: &Path) -> anyhow::Result<()> {
    for role in [Role::Router, Role::Server] {
        if plan.on(machine).any(|p| p.role == role) {
            find_binary(bins, role.program())?;
        }
    }
    check_ports(plan, machine)
}

/// Checks that every UDP port the processes of `machine` (all for `None`) and its hosts'
/// tools bind is free, and every metrics port (TCP, on 127.0.0.1) its processes serve on.
///
/// # Errors
///
/// The first port in use, with the process and link (or host) that needs it.
pub fn check_ports(plan: &Plan, machine: Option<&str>) -> anyhow::Result<()> {
    for (i, p) in plan.processes.iter().enumerate() {
        let metrics = plan.metrics_addr(i);
        if machine.is_none_or(|m| p.machine == m) && metrics.port() != 0 {
            TcpListener::bind(metrics).map_err(|e| {
                anyhow!(
                    "{} `{}`: cannot serve its metrics on {metrics} (metrics_base {} + {i}): {e}; \
                     set another `metrics_base` in the topology's [defaults]",
                    p.role.program(),
                    p.name,
                    plan.metrics_base,
                )
            })?;
        }
    }
    for p in plan.on(machine) {
        for l in &p.links {
            UdpSocket::bind(l.local).map_err(|e| {
                anyhow!(
                    "{} `{}`, link `{}`: cannot bind {}: {e}",
                    p.role.program(),
                    p.name,
                    l.name,
                    l.local
                )
            })?;
        }
    }
    for h in plan
        .hosts
        .iter()
        .filter(|h| machine.is_none_or(|m| h.machine == m))
    {
        UdpSocket::bind(h.local)
            .map_err(|e| anyhow!("host `{}`: cannot bind {}: {e}", h.name, h.local))?;
    }
    Ok(())
}

impl Fleet {
    /// Starts the processes of `machine` (all for `None`) in plan order, each ready before
    /// the next starts, writing their files under `dir`, each logging as `log_format`
    /// says. On any failure, what was started is stopped before the error returns.
    ///
    /// # Errors
    ///
    /// A file cannot be written, a process cannot start or does not become ready.
    pub fn start(
        plan: &Plan,
        machine: Option<&str>,
        dir: &Path,
        bins: &Path,
        log_format: LogFormat,
    ) -> anyhow::Result<Fleet> {
        for sub in ["logs", "pcap", "keys"] {
            std::fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("cannot create {}", dir.join(sub).display()))?;
        }
        let mut fleet = Fleet::default();
        let ours = plan
            .processes
            .iter()
            .enumerate()
            .filter(|(_, p)| machine.is_none_or(|m| p.machine == m));
        for (i, p) in ours {
            // On error `fleet` is dropped here, which stops what runs.
            let metrics = plan.metrics_addr(i);
            let (child, started) = spawn(p, dir, bins, metrics, log_format, plan.capture)?;
            fleet.children.push(child);
            let metrics = wait_ready(fleet.children.last_mut(), &started)?;
            fleet.started.push(Started { metrics, ..started });
        }
        Ok(fleet)
    }

    /// Lets the processes run on after this value is gone (`waist up --detach`).
    pub fn detach(mut self) -> Vec<Started> {
        self.children.clear();
        std::mem::take(&mut self.started)
    }

    /// The processes that exited since the last call, with how.
    pub fn exited(&mut self) -> Vec<(String, ExitStatus)> {
        let mut out = Vec::new();
        for (i, child) in self.children.iter_mut().enumerate() {
            if self.reported.contains(&i) {
                continue;
            }
            if let (Ok(Some(status)), Some(s)) = (child.try_wait(), self.started.get(i)) {
                self.reported.push(i);
                out.push((s.name.clone(), status));
            }
        }
        out
    }

    /// Stops one process by name (SIGTERM, SIGKILL after `grace`); true if it ran.
    pub fn stop_one(&mut self, name: &str, grace: Duration) -> bool {
        let Some(i) = self.started.iter().position(|s| s.name == name) else {
            return false;
        };
        match self.children.get_mut(i) {
            Some(child) => {
                stop_children(std::slice::from_mut(child), grace);
                true
            }
            None => false,
        }
    }

    /// Stops every process: SIGTERM to all, then SIGKILL to any still running after
    /// `grace`. Returns the pids of those that were still running (in start order).
    pub fn stop(&mut self, grace: Duration) -> Vec<u32> {
        let running = still_running(&mut self.children);
        stop_children(&mut self.children, grace);
        running
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        stop_children(&mut self.children, STOP_GRACE);
    }
}

/// The pids of the children that have not exited (in order).
fn still_running(children: &mut [Child]) -> Vec<u32> {
    children
        .iter_mut()
        .filter_map(|c| matches!(c.try_wait(), Ok(None)).then(|| c.id()))
        .collect()
}

/// SIGTERM to every child still running, SIGKILL after `grace`, and every one reaped.
fn stop_children(children: &mut [Child], grace: Duration) {
    for c in children.iter_mut() {
        if matches!(c.try_wait(), Ok(None)) {
            let _ = kill(pid(c.id()), Signal::SIGTERM);
        }
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline
        && children
            .iter_mut()
            .any(|c| matches!(c.try_wait(), Ok(None)))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    for c in children.iter_mut() {
        if matches!(c.try_wait(), Ok(None)) {
            let _ = c.kill();
        }
        let _ = c.wait();
    }
}

fn pid(id: u32) -> Pid {
    Pid::from_raw(i32::try_from(id).unwrap_or(i32::MAX))
}

/// Starts `p` with its metrics endpoint on `metrics` (port 0: any), capturing as `capture`
/// says; returns the child and its record (metrics address not known yet).
fn spawn(
    p: &Process,
    dir: &Path,
    bins: &Path,
    metrics: SocketAddr,
    log_format: LogFormat,
    capture: Capture,
) -> anyhow::Result<(Child, Started)> {
    let program = find_binary(bins, p.role.program())?;
    let log = dir.join("logs").join(format!("{}.log", p.name));
    let mut args: Vec<String> = Vec::new();
    let arg = |args: &mut Vec<String>, k: &str, v: &dyn AsRef<std::ffi::OsStr>| {
        args.push(k.into());
        args.push(v.as_ref().to_string_lossy().into_owned());
    };
    let pcap = match p.role {
        Role::Router => {
            let config = dir.join(format!("{}.toml", p.name));
            std::fs::write(&config, p.config.as_deref().unwrap_or_default())
                .with_context(|| format!("cannot write {}", config.display()))?;
            arg(&mut args, "--config", &config);
            dir.join("pcap")
        }
        Role::Server => {
            let (address, root) = p
                .serves
                .as_ref()
                .ok_or_else(|| anyhow!("server `{}` without a root", p.name))?;
            let link = p
                .links
                .first()
                .ok_or_else(|| anyhow!("server `{}` without a link", p.name))?;
            let keys = dir
                .join("keys")
                .join(format!("{}.key", p.server.as_deref().unwrap_or(&p.name)));
            arg(&mut args, "--root", root);
            arg(&mut args, "--keys", &keys);
            arg(&mut args, "--listen", &format!("udp:{}", link.local));
            arg(&mut args, "--address", &address.to_string());
            dir.join("pcap").join(&p.name)
        }
    };
    if let Some(extra) = capture.args() {
        std::fs::create_dir_all(&pcap)
            .with_context(|| format!("cannot create {}", pcap.display()))?;
        arg(&mut args, "--pcap", &pcap);
        args.extend(extra);
    }
    arg(&mut args, "--metrics", &metrics.to_string());
    if let Some(format) = log_format.to_possible_value() {
        arg(&mut args, "--log-format", &format.get_name());
    }
    let launch = Launch::here(program, args);
    let child = launch.start(&log, false)?;
    let started = Started {
        name: p.name.clone(),
        role: p.role,
        machine: p.machine.clone(),
        pid: child.id(),
        metrics: SocketAddr::from(([0, 0, 0, 0], 0)),
        pcap,
        log,
        links: p
            .links
            .iter()
            .map(|l| (l.name.clone(), l.local, l.peer))
            .collect(),
        capture,
        launch: Some(launch),
        restarting: false,
    };
    Ok((child, started))
}

/// Waits until `s` has printed its metrics address and answers there.
pub(super) fn wait_ready(child: Option<&mut Child>, s: &Started) -> anyhow::Result<SocketAddr> {
    let child = child.ok_or_else(|| anyhow!("{}: no process", s.name))?;
    let out = s.log.with_extension("out");
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut metrics = None;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            bail!(
                "{} `{}` exited at start ({status}); its log ({}):\n{}",
                s.role.program(),
                s.name,
                s.log.display(),
                tail(&s.log, 12)
            );
        }
        if metrics.is_none() {
            metrics = std::fs::read_to_string(&out)
                .ok()
                .and_then(|text| metrics_address(&text));
        }
        if let Some(addr) = metrics
            && crate::host::scrape::fetch(addr, Duration::from_millis(500)).is_ok()
        {
            return Ok(addr);
        }
        if Instant::now() > deadline {
            bail!(
                "{} `{}` was not ready after {:?}; its log ({}):\n{}",
                s.role.program(),
                s.name,
                READY_TIMEOUT,
                s.log.display(),
                tail(&s.log, 12)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The metrics address a daemon prints: `metrics http://ADDR/metrics` (waist-router) or
/// `ready … metrics=ADDR` (trickles-web).
pub fn metrics_address(stdout: &str) -> Option<SocketAddr> {
    stdout.lines().find_map(|l| {
        if let Some(rest) = l.strip_prefix("metrics http://") {
            return rest.trim_end_matches("/metrics").parse().ok();
        }
        l.strip_prefix("ready")?
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("metrics="))?
            .parse()
            .ok()
    })
}

/// What a log says about a failure: from its last `Error:` line up to a backtrace (at most
/// `n` lines), or else its last `n` lines (empty if unreadable).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    if let Some(at) = lines.iter().rposition(|l| l.starts_with("Error:")) {
        return lines[at..]
            .iter()
            .take_while(|l| !l.starts_with("Stack backtrace:"))
            .take(n)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
    }
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Prints what runs where: one row per process with its links below it, then the hosts.
///
/// # Errors
///
/// If writing fails.
pub fn print_table(
    plan: &Plan,
    started: &[Started],
    machine: Option<&str>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:<10} {:<13} {:>7}  {:<8} {:<38} pcap",
        "process", "program", "pid", "machine", "metrics"
    )?;
    for s in started {
        let pcap = match (s.capture, s.role) {
            (Capture::Off, _) => PathBuf::from("(capture off)"),
            (_, Role::Router) => s.pcap.join(format!("{}-*.pcap", s.name)),
            (_, Role::Server) => s.pcap.join("trickles-web.pcap"),
        };
        writeln!(
            out,
            "{:<10} {:<13} {:>7}  {:<8} {:<38} {}",
            s.name,
            s.role.program(),
            s.pid,
            s.machine,
            format!("http://{}/metrics", s.metrics),
            pcap.display()
        )?;
        for (name, local, peer) in &s.links {
            writeln!(out, "    link {name:<8} {local} -> {peer}")?;
        }
    }
    let hosts: Vec<_> = plan
        .hosts
        .iter()
        .filter(|h| machine.is_none_or(|m| h.machine == m))
        .collect();
    if !hosts.is_empty() {
        writeln!(
            out,
            "\n{:<10} {:<12} {:<8} host tools' options",
            "host", "address", "router"
        )?;
        // `--src` too: the tools' default source (10.1.0.1) is no host's address here, and
        // an answer to it would find no route back.
        for h in hosts {
            writeln!(
                out,
                "{:<10} {:<12} {:<8} --via {} --src {}",
                h.name,
                h.address,
                h.router,
                h.via(),
                h.address
            )?;
        }
    }
    for (name, address, replicas) in &plan.servers {
        writeln!(
            out,
            "\nserver {name} at {address}: replicas {} (trickles://{address}/…)",
            replicas.join(", ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn only_the_children_still_running_are_reported() {
        let spawn = || Command::new("sleep").arg("30").spawn().unwrap();
        let mut children = vec![spawn(), spawn(), spawn()];
        let gone = children[1].id();
        kill(pid(gone), Signal::SIGKILL).unwrap();
        children[1].wait().unwrap();
        let running = still_running(&mut children);
        assert_eq!(running, [children[0].id(), children[2].id()]);
        stop_children(&mut children, Duration::from_secs(2));
        assert!(still_running(&mut children).is_empty());
    }
}
