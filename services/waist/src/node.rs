//! `waist node`: the init of a container node (the image's entry for every node of an
//! exported containerlab topology).
//!
//! containerlab starts a `kind: linux` container with `--network none` and only then moves
//! the veth ends of its links in, one by one, and addresses them; it tells the container
//! how many to expect in `CLAB_INTFS`. A daemon started at once would bind its link sockets
//! to addresses that do not exist yet, so the node waits first:
//!
//! ```text
//!  start ─► CLAB_INTFS data interfaces in /sys/class/net (not lo, not eth0)
//!        ─► every --wait-address assigned to an interface that is up (getifaddrs), and
//!           bindable (a UDP socket binds IP:0)
//!        ─► exec PROGRAM ARGS (PATH lookup)   or, with no PROGRAM, hold until SIGTERM/SIGINT
//!  timeout (60 s) ─► one `Error:` line naming what is missing, exit 1
//! ```
//!
//! Each step prints one line on stderr (`waiting for 2 interfaces…`, `eth1, eth2 present`,
//! `exec waist-router …`). The image has no shell, so this is its only init; a node
//! without a program (an end host, whose tools run by `docker exec`) holds as PID 1 and
//! ends cleanly when `docker stop` sends SIGTERM.

use std::ffi::OsString;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use netio::link::address_assigned;

/// Where the kernel lists the network interfaces of this namespace.
pub const SYS_CLASS_NET: &str = "/sys/class/net";
/// The environment variable containerlab sets to a `kind: linux` node's number of data
/// interfaces.
pub const CLAB_INTFS: &str = "CLAB_INTFS";
/// How often the interfaces and addresses are looked at again while waiting.
const POLL: Duration = Duration::from_millis(50);

/// `waist node` options.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// Wait until this address is assigned to a local interface (repeatable).
    #[arg(long = "wait-address", value_name = "IP")]
    pub wait_address: Vec<IpAddr>,
    /// Give up after this many seconds (one `Error:` line, exit 1).
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_secs)]
    pub timeout: Duration,
    /// The program to exec once everything is there, with its arguments (after `--`);
    /// none: hold until SIGTERM or SIGINT.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<OsString>,
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s:?}: {e}"))
}

/// What the node waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wants {
    /// The directory listing the interfaces (`/sys/class/net`; a test's own elsewhere).
    pub net_dir: PathBuf,
    /// How many data interfaces (`CLAB_INTFS`).
    pub interfaces: usize,
    /// The addresses that must be assigned.
    pub addresses: Vec<IpAddr>,
}

/// The data interfaces listed in `net_dir`: every entry but `lo` and `eth0` (the
/// management interface containerlab's other kinds have), sorted by name.
pub fn data_interfaces(net_dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(net_dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name != "lo" && name != "eth0" {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The number of data interfaces `CLAB_INTFS` asks for (`None`, unset: 0).
pub fn wanted_interfaces(value: Option<&str>) -> anyhow::Result<usize> {
    match value {
        None => Ok(0),
        Some(v) => v
            .trim()
            .parse()
            .with_context(|| format!("{CLAB_INTFS}={v:?} is not a number of interfaces")),
    }
}

/// Waits until `wants` holds, looking every 50 ms, writing one line per step to `log`;
/// returns the data interfaces present. Fails after `timeout` with what is missing.
pub fn wait(wants: &Wants, timeout: Duration, log: &mut dyn Write) -> anyhow::Result<Vec<String>> {
    let deadline = Instant::now() + timeout;
    let present = if wants.interfaces > 0 {
        let plural = if wants.interfaces == 1 { "" } else { "s" };
        let _ = writeln!(log, "waiting for {} interface{plural}…", wants.interfaces);
        loop {
            let present = data_interfaces(&wants.net_dir)
                .with_context(|| format!("reading {}", wants.net_dir.display()))?;
            if present.len() >= wants.interfaces {
                let _ = writeln!(log, "{} present", present.join(", "));
                break present;
            }
            if Instant::now() >= deadline {
                let have = if present.is_empty() {
                    "none".to_string()
                } else {
                    present.join(", ")
                };
                bail!(
                    "timed out after {}: {} of {} interfaces present ({have}){}",
                    secs(timeout),
                    present.len(),
                    wants.interfaces,
                    missing_addresses(&wants.addresses)
                );
            }
            std::thread::sleep(POLL);
        }
    } else {
        Vec::new()
    };
    if !wants.addresses.is_empty() {
        let list: Vec<String> = wants.addresses.iter().map(|a| a.to_string()).collect();
        let _ = writeln!(log, "waiting for address {}…", list.join(", "));
        loop {
            let missing: Vec<IpAddr> = wants
                .addresses
                .iter()
                .copied()
                .filter(|a| !address_assigned(*a))
                .collect();
            if missing.is_empty() {
                let _ = writeln!(log, "{} assigned", list.join(", "));
                break;
            }
            if Instant::now() >= deadline {
                bail!(
                    "timed out after {}{}",
                    secs(timeout),
                    missing_addresses(&missing)
                );
            }
            std::thread::sleep(POLL);
        }
    }
    Ok(present)
}

/// `: address A, B not assigned` (nothing when `missing` is empty).
fn missing_addresses(missing: &[IpAddr]) -> String {
    if missing.is_empty() {
        return String::new();
    }
    let list: Vec<String> = missing.iter().map(|a| a.to_string()).collect();
    format!(
        ": address {} not assigned (or its interface down)",
        list.join(", ")
    )
}

fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// `waist node`: waits ([`wait`]), then execs the program or holds until SIGTERM/SIGINT.
/// Returns only on an error or after the hold (exit code 0).
pub fn run(args: NodeArgs) -> anyhow::Result<u8> {
    let interfaces = wanted_interfaces(std::env::var(CLAB_INTFS).ok().as_deref())?;
    let wants = Wants {
        net_dir: PathBuf::from(SYS_CLASS_NET),
        interfaces,
        addresses: args.wait_address,
    };
    wait(&wants, args.timeout, &mut std::io::stderr()).context("node")?;
    match args.program.split_first() {
        Some((program, rest)) => Err(exec(program, rest)),
        None => hold().map(|()| 0),
    }
}

/// Replaces this process by `program` (found in PATH); returns only the error.
fn exec(program: &OsString, args: &[OsString]) -> anyhow::Error {
    use std::os::unix::process::CommandExt;
    let shown: Vec<String> = std::iter::once(program)
        .chain(args)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    eprintln!("exec {}", shown.join(" "));
    let e = std::process::Command::new(program).args(args).exec();
    anyhow::Error::new(e).context(format!("node: exec {}", program.to_string_lossy()))
}

/// Holds until SIGTERM or SIGINT (handlers installed, so this works as PID 1 too).
fn hold() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("node: runtime")?;
    rt.block_on(async {
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        eprintln!("holding until SIGTERM");
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        eprintln!("{name}: exiting");
        Ok::<(), std::io::Error>(())
    })
    .context("node: signal handlers")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// A fake `/sys/class/net` with these entries.
    fn net_dir(tag: &str, names: &[&str]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("waist-node-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for n in names {
            std::fs::create_dir(dir.join(n)).unwrap();
        }
        dir
    }

    #[test]
    fn counts_data_interfaces_only() {
        let dir = net_dir("count", &["lo", "eth2", "eth0", "eth1"]);
        assert_eq!(data_interfaces(&dir).unwrap(), ["eth1", "eth2"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn clab_intfs_parses() {
        assert_eq!(wanted_interfaces(None).unwrap(), 0);
        assert_eq!(wanted_interfaces(Some("3")).unwrap(), 3);
        let e = wanted_interfaces(Some("two")).unwrap_err();
        assert!(e.to_string().contains("CLAB_INTFS=\"two\""), "{e}");
    }

    #[test]
    fn waits_for_an_interface_that_comes_late() {
        let dir = net_dir("late", &["lo", "eth1"]);
        let wants = Wants {
            net_dir: dir.clone(),
            interfaces: 2,
            addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        };
        let late = dir.join("eth2");
        let maker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            std::fs::create_dir(late).unwrap();
        });
        let start = Instant::now();
        let mut log = Vec::new();
        let present = wait(&wants, Duration::from_secs(30), &mut log).unwrap();
        maker.join().unwrap();
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert_eq!(present, ["eth1", "eth2"]);
        let log = String::from_utf8(log).unwrap();
        assert_eq!(
            log.lines().collect::<Vec<_>>(),
            [
                "waiting for 2 interfaces…",
                "eth1, eth2 present",
                "waiting for address 127.0.0.1…",
                "127.0.0.1 assigned",
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn times_out_naming_the_missing_interfaces() {
        let dir = net_dir("few", &["lo", "eth0", "eth1"]);
        let wants = Wants {
            net_dir: dir.clone(),
            interfaces: 2,
            addresses: vec![],
        };
        let start = Instant::now();
        let e = wait(&wants, Duration::from_millis(150), &mut Vec::new()).unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(150));
        let line = netio::trace::one_line(&e.context("node"));
        assert_eq!(
            line,
            "Error: node: timed out after 0.15 s: 1 of 2 interfaces present (eth1)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn times_out_naming_the_missing_address() {
        // 192.0.2.1 (TEST-NET-1) is assigned nowhere; 127.0.0.1 always is.
        let wants = Wants {
            net_dir: PathBuf::from("/nonexistent"),
            interfaces: 0,
            addresses: vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            ],
        };
        assert!(!address_assigned(wants.addresses[1]));
        let e = wait(&wants, Duration::from_millis(100), &mut Vec::new()).unwrap_err();
        assert_eq!(
            netio::trace::one_line(&e.context("node")),
            "Error: node: timed out after 0.1 s: address 192.0.2.1 not assigned (or its interface down)"
        );
    }

    #[test]
    fn timeout_parses_fractions() {
        assert_eq!(parse_secs("60").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_secs("0.5").unwrap(), Duration::from_millis(500));
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("soon").is_err());
    }
}
