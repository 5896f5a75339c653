//! `waist demo`: the shipped topology (`examples/topologies/demo.toml`) brought up as real
//! processes on loopback, then exercised step by step with figures measured in this run:
//!
//! 1. ESP: a COUNT and a COLLECT from h1, answered along the path (which router answered,
//!    which routers ran it);
//! 2. SNAP: the paper's Fig. 1 ping from h1 to r4 through r1 and r2 (RTT per reply);
//! 3. Trickles: `trickles-get` of a few MB from the two-replica server across the lossy
//!    link (throughput, byte-exact check);
//! 4. `curl` through `trickles-proxy` on h2;
//! 5. stream handlers in r1: destination-customised multicast of flight records from h1 to
//!    h2, h3 and h4, each with its own filter, h2's changed by a control message while
//!    the stream runs (per-subscriber counts and latency);
//! 6. r2 killed while h1 pings r4: the traffic rerouted over r3 (time to reroute);
//! 7. a replica killed in the middle of a transfer, which completes from the other;
//!
//! then where the captures are and how to read them with our dissectors, each daemon's
//! counters, and a stop of every process it started. No root is needed. `waist demo --sim`
//! is the older tour of the cores on a virtual clock ([`super::sim`]); the steps
//! themselves are in [`super::steps`].

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, anyhow, bail};

use super::tun::{self, Kernel};
use super::{DemoArgs, steps};
use crate::up::fleet::{self, Fleet, STOP_GRACE};
use crate::up::topology::{self, Capture, HostPlan, Plan, Role};

/// The shipped topology.
pub const TOPOLOGY: &str = include_str!("../../../../examples/topologies/demo.toml");
/// The first UDP port of the shipped topology.
const FIRST_PORT: u16 = 27000;
/// How far the demo moves its ports when the shipped ones are taken.
const PORT_BLOCK: u16 = 100;
/// The object fetched across the lossy link.
const BIG: (&str, usize) = ("big.bin", 4 << 20);
/// The object whose transfer loses a replica a quarter of the way.
const HUGE: (&str, usize) = ("huge.bin", 8 << 20);

/// One step's outcome, for the summary.
struct Step {
    name: &'static str,
    result: anyhow::Result<String>,
}

/// Runs the demo on real processes; returns 0 if every step succeeded, 1 otherwise.
///
/// # Errors
///
/// If the network cannot be brought up, or writing fails.
pub fn run(args: &DemoArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let started = Instant::now();
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("waist-demo-{}", std::process::id())),
    };
    if let Some(why) = args.tun.then(tun::unsupported).flatten() {
        bail!("--tun needs root, /dev/net/tun and ip: {why}");
    }
    let bins = fleet::binary_dir()?;
    fleet::build_if_missing(&bins, out)?;
    let plan = plan_on_free_ports(&dir, args.tun)?;
    fleet::preflight(&plan, None, &bins)?;
    let (mut fleet, kernel) = bring_up(&plan, &dir, &bins, args.tun, out)?;
    let mut done = exercise(&plan, &mut fleet, &bins, &dir, out)?;
    if let Some(k) = &kernel {
        kernel_steps(k, &dir, &mut done, out)?;
    }
    header(out, "Captures")?;
    captures(&dir.join("run"), plan.capture, out)?;
    counters_and_stop(fleet, out)?;
    summary(&done, started, out)
}

/// The shipped topology planned on its own ports, or on the next free block (another demo
/// may be running).
fn plan_on_free_ports(dir: &Path, tun: bool) -> anyhow::Result<Plan> {
    let mut first = FIRST_PORT;
    loop {
        let plan = prepare(dir, tun, first)?;
        match fleet::check_ports(&plan, None) {
            Ok(()) => return Ok(plan),
            Err(e) if first >= FIRST_PORT + 9 * PORT_BLOCK => return Err(e),
            Err(_) => first += PORT_BLOCK,
        }
    }
}

/// Starts every process of `plan` (and with `tun` the namespaces), then prints what runs
/// where and how long it took.
fn bring_up(
    plan: &Plan,
    dir: &Path,
    bins: &Path,
    tun: bool,
    out: &mut dyn Write,
) -> anyhow::Result<(Fleet, Option<Kernel>)> {
    let count = |role| plan.processes.iter().filter(|p| p.role == role).count();
    writeln!(
        out,
        "waist demo: {} routers, {} replicas of trickles-web and {} hosts from examples/topologies/demo.toml, each daemon its own process on loopback\nrun directory: {}\n",
        count(Role::Router),
        count(Role::Server),
        plan.hosts.len(),
        dir.display()
    )?;
    let t = Instant::now();
    let fleet = Fleet::start(
        plan,
        None,
        &dir.join("run"),
        bins,
        netio::trace::LogFormat::Text,
    )?;
    let kernel = match tun {
        true => Some(Kernel::setup(&dir.join("run"), &dir.join("site"), bins)?),
        false => None,
    };
    fleet::print_table(plan, &fleet.started, None, out)?;
    if kernel.is_some() {
        writeln!(
            out,
            "\nnamespaces: the kernel at 10.9.1.2 behind r1, a kernel TCP server at 10.9.2.2 behind r4"
        )?;
    }
    writeln!(out, "\nup in {} ms", t.elapsed().as_millis())?;
    Ok((fleet, kernel))
}

/// Prints a step's outcome and keeps it for the summary.
fn record(
    steps: &mut Vec<Step>,
    name: &'static str,
    result: anyhow::Result<String>,
    out: &mut dyn Write,
) {
    let line = match &result {
        Ok(s) => format!("  ok: {s}"),
        Err(e) => format!("  FAILED: {e:#}"),
    };
    let _ = writeln!(out, "{line}");
    steps.push(Step { name, result });
}

/// Steps 1 to 7, in order, each under its header.
fn exercise(
    plan: &Plan,
    fleet: &mut Fleet,
    bins: &Path,
    dir: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<Vec<Step>> {
    let h1 = host(plan, "h1")?;
    let h2 = host(plan, "h2")?;
    let web = plan
        .servers
        .first()
        .map(|(_, a, _)| *a)
        .ok_or_else(|| anyhow!("the demo topology has no server"))?;
    let r4: Ipv4Addr = "10.0.0.4".parse()?;
    let mut done = Vec::new();

    header(
        out,
        "1. ESP: COUNT and COLLECT from h1 to r4, run by the routers on the way back",
    )?;
    let r = steps::esp(&h1, r4, fleet, out);
    record(&mut done, "ESP COUNT and COLLECT", r, out);

    header(
        out,
        "2. SNAP: the Fig. 1 ping from h1 to r4 (through r1 and r2)",
    )?;
    let r = steps::ping(&h1, r4, out);
    record(&mut done, "SNAP ping", r, out);

    header(
        out,
        "3. Trickles: trickles-get of 4 MiB from web (10.2.0.80) across the lossy r2–r4 link",
    )?;
    let r = steps::get(bins, dir, &h1, web, BIG, None, out);
    record(&mut done, "trickles-get across the lossy link", r, out);

    header(out, "4. curl through trickles-proxy on h2")?;
    let r = steps::proxy(bins, dir, &h2, web, out);
    record(&mut done, "curl through trickles-proxy", r, out);

    header(
        out,
        "5. Stream handlers: customised multicast in r1 from h1 to h2, h3 and h4, re-parameterised while it runs",
    )?;
    let subs = [&h2, &host(plan, "h3")?, &host(plan, "h4")?];
    let r1: std::net::IpAddr = "10.0.0.1".parse()?;
    let r = super::multicast::multicast(bins, dir, &h1, subs, r1, out);
    record(&mut done, "customised multicast in r1", r, out);

    header(out, "6. r2 killed while h1 pings r4 every 20 ms")?;
    let r = steps::reroute(&h1, r4, fleet, out);
    record(&mut done, "reroute around a dead router", r, out);

    header(out, "7. web-1 killed in the middle of an 8 MiB transfer")?;
    let r = steps::get(bins, dir, &h1, web, HUGE, Some(fleet), out);
    record(&mut done, "replica killed mid-transfer", r, out);
    Ok(done)
}

/// Steps 8 and 9 (`--tun`): the kernel's ping and curl across the routers.
fn kernel_steps(
    k: &Kernel,
    dir: &Path,
    done: &mut Vec<Step>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    header(
        out,
        "8. The kernel's ping from a namespace behind r1 to one behind r4",
    )?;
    let r = k.ping(out);
    record(done, "kernel ping across the routers", r, out);
    header(
        out,
        "9. The kernel's curl from that namespace to a kernel TCP server behind r4",
    )?;
    let expected = std::fs::read(dir.join("site").join("index.html"))?;
    let r = k.curl(&expected, out);
    record(done, "kernel curl across the routers", r, out);
    Ok(())
}

/// Each daemon's counters from its metrics endpoint, then every process stopped.
fn counters_and_stop(mut fleet: Fleet, out: &mut dyn Write) -> anyhow::Result<()> {
    header(out, "Counters, from each daemon's metrics endpoint")?;
    for s in &fleet.started {
        match crate::up::counters(s.role, s.metrics) {
            Ok(c) => {
                let line: Vec<String> = c.iter().map(|(k, v)| format!("{k} {v}")).collect();
                writeln!(out, "  {:<6} {}", s.name, line.join("  "))?;
            }
            Err(_) => writeln!(out, "  {:<6} (stopped)", s.name)?,
        }
    }
    let stopped = fleet.stop(STOP_GRACE);
    drop(fleet);
    writeln!(out, "\n{}", stopped_line(&stopped))?;
    Ok(())
}

/// The demo's closing line: how many processes were still running, and exactly their pids.
fn stopped_line(pids: &[u32]) -> String {
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    format!(
        "stopped the {} processes still running (pids {})",
        pids.len(),
        list.join(" ")
    )
}

/// Every step's outcome; returns the exit code (0: all succeeded).
fn summary(steps: &[Step], started: Instant, out: &mut dyn Write) -> anyhow::Result<u8> {
    let failed = steps.iter().filter(|s| s.result.is_err()).count();
    writeln!(out, "\nsummary")?;
    for s in steps {
        let mark = if s.result.is_ok() { "ok" } else { "FAILED" };
        writeln!(out, "  {mark:<6} {}", s.name)?;
    }
    writeln!(
        out,
        "{} of {} steps succeeded in {:.1} s",
        steps.len() - failed,
        steps.len(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(if failed == 0 { 0 } else { 1 })
}

fn header(out: &mut dyn Write, title: &str) -> anyhow::Result<()> {
    writeln!(out, "\n{title}")?;
    out.flush()?;
    Ok(())
}

/// Writes the topology and its site into `dir` and plans it.
fn prepare(dir: &Path, tun: bool, first_port: u16) -> anyhow::Result<Plan> {
    if dir.join("run").join(crate::up::STATE_FILE).exists() {
        bail!(
            "{} holds a detached run; stop it with `waist down` first",
            dir.display()
        );
    }
    let site = dir.join("site");
    std::fs::create_dir_all(&site).with_context(|| format!("cannot create {}", site.display()))?;
    std::fs::write(
        site.join("index.html"),
        "<!doctype html><title>waist</title><p>Served by trickles-web, a stateless server.\n",
    )?;
    for (name, len) in [BIG, HUGE] {
        std::fs::write(site.join(name), steps::object(len))?;
    }
    let file = dir.join("demo.toml");
    let shipped = format!("first_port = {FIRST_PORT}\n");
    if !TOPOLOGY.contains(&shipped) {
        bail!("the demo topology does not start its ports at {FIRST_PORT}");
    }
    let topology = TOPOLOGY.replace(&shipped, &format!("first_port = {first_port}\n"));
    let text = match tun {
        true => tun::with_tun(&topology, dir)?,
        false => topology,
    };
    std::fs::write(&file, text)?;
    Ok(topology::load(&file)?)
}

fn host(plan: &Plan, name: &str) -> anyhow::Result<HostPlan> {
    plan.hosts
        .iter()
        .find(|h| h.name == name)
        .cloned()
        .ok_or_else(|| anyhow!("the demo topology has no host {name}"))
}

fn captures(run: &Path, capture: Capture, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut files = Vec::new();
    collect_pcaps(&run.join("pcap"), &mut files);
    files.sort();
    let mut total = 0;
    for f in &files {
        let len = std::fs::metadata(f).map_or(0, |m| m.len());
        total += len;
        writeln!(out, "  {:>9} bytes  {}", len, f.display())?;
    }
    writeln!(
        out,
        "  {total} bytes in {} files (`capture` in demo.toml: {}; X.pcap holds the newest packets, X.pcap.1 … older ones)",
        files.len(),
        capture
    )?;
    let example = files
        .iter()
        .find(|f| f.ends_with("r2-r4.pcap"))
        .or(files.first())
        .map_or("FILE.pcap".into(), |f| f.display().to_string());
    writeln!(
        out,
        "  read one with our dissectors (from the repository root):\n    wireshark $(for s in esp snap trickles shim; do printf -- '-X lua_script:tools/wireshark/waist_%s.lua ' $s; done) -r {example}\n  or install them once: cp tools/wireshark/waist_*.lua ~/.local/lib/wireshark/plugins/"
    )?;
    Ok(())
}

fn collect_pcaps(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_pcaps(&p, into);
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".pcap") || n.contains(".pcap."))
        {
            into.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_line_counts_the_pids_it_lists() {
        assert_eq!(
            stopped_line(&[11, 12, 13, 14]),
            "stopped the 4 processes still running (pids 11 12 13 14)"
        );
    }
}
