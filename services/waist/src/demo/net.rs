//! `waist demo`: the shipped topology (`examples/topologies/demo.toml`) brought up as real
//! processes on loopback, then exercised step by step with figures measured in this run:
//!
//! 1. ESP: a COUNT and a COLLECT from h1, answered along the path (which router answered,
//!    which routers ran it);
//! 2. SNAP: the paper's Fig. 1 ping from h1 to r4 through r1 and r2 (RTT per reply);
//! 3. Trickles: `trickles-get` of a few MB from the two-replica server across the lossy
//!    link (throughput, byte-exact check);
//! 4. `curl` through `trickles-proxy` on h2;
//! 5. r2 killed while h1 pings r4: the traffic rerouted over r3 (time to reroute);
//! 6. a replica killed in the middle of a transfer, which completes from the other;
//!
//! then where the captures are and how to read them with our dissectors, each daemon's
//! counters, and a stop of every process it started. No root is needed. `waist demo --sim`
//! is the older tour of the cores on a virtual clock ([`super::sim`]).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use esp_proto::instr::{CombineOp, Instruction};
use ess::{Tag, Value};

use super::DemoArgs;
use crate::host::esp::{self, Outcome, Query};
use crate::host::link::HostLink;
use crate::host::snap::{self, Ping};
use crate::up::fleet::{self, Fleet, STOP_GRACE};
use crate::up::topology::{self, HostPlan, Plan, Role};

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
    if let Some(why) = args.tun.then(super::tun::unsupported).flatten() {
        bail!("--tun needs root, /dev/net/tun and ip: {why}");
    }
    let bins = fleet::binary_dir()?;
    fleet::build_if_missing(&bins, out)?;
    // The shipped ports, or the next free block (another demo may be running).
    let mut first = FIRST_PORT;
    let plan = loop {
        let plan = prepare(&dir, args.tun, first)?;
        match fleet::check_ports(&plan, None) {
            Ok(()) => break plan,
            Err(e) if first >= FIRST_PORT + 9 * PORT_BLOCK => return Err(e),
            Err(_) => first += PORT_BLOCK,
        }
    };
    fleet::preflight(&plan, None, &bins)?;
    writeln!(
        out,
        "waist demo: {} routers, {} replicas of trickles-web and {} hosts from examples/topologies/demo.toml, each daemon its own process on loopback\nrun directory: {}\n",
        plan.processes
            .iter()
            .filter(|p| p.role == Role::Router)
            .count(),
        plan.processes
            .iter()
            .filter(|p| p.role == Role::Server)
            .count(),
        plan.hosts.len(),
        dir.display()
    )?;
    let t = Instant::now();
    let mut fleet = Fleet::start(&plan, None, &dir.join("run"), &bins)?;
    let kernel = match args.tun {
        true => Some(super::tun::Kernel::setup(
            &dir.join("run"),
            &dir.join("site"),
            &bins,
        )?),
        false => None,
    };
    fleet::print_table(&plan, &fleet.started, None, out)?;
    if kernel.is_some() {
        writeln!(
            out,
            "\nnamespaces: the kernel at 10.9.1.2 behind r1, a kernel TCP server at 10.9.2.2 behind r4"
        )?;
    }
    writeln!(out, "\nup in {} ms", t.elapsed().as_millis())?;
    let h1 = host(&plan, "h1")?;
    let h2 = host(&plan, "h2")?;
    let web = plan
        .servers
        .first()
        .map(|(_, a, _)| *a)
        .ok_or_else(|| anyhow!("the demo topology has no server"))?;
    let r4: Ipv4Addr = "10.0.0.4".parse()?;

    let mut steps = Vec::new();
    let mut step = |name: &'static str, out: &mut dyn Write, result: anyhow::Result<String>| {
        let line = match &result {
            Ok(s) => format!("  ok: {s}"),
            Err(e) => format!("  FAILED: {e:#}"),
        };
        let _ = writeln!(out, "{line}");
        steps.push(Step { name, result });
    };

    header(
        out,
        "1. ESP: COUNT and COLLECT from h1 to r4, run by the routers on the way back",
    )?;
    let r = esp_step(&h1, r4, &fleet, out);
    step("ESP COUNT and COLLECT", out, r);

    header(
        out,
        "2. SNAP: the Fig. 1 ping from h1 to r4 (through r1 and r2)",
    )?;
    let r = ping_step(&h1, r4, out);
    step("SNAP ping", out, r);

    header(
        out,
        "3. Trickles: trickles-get of 4 MiB from web (10.2.0.80) across the lossy r2–r4 link",
    )?;
    let r = get_step(&bins, &dir, &h1, web, BIG, None, out);
    step("trickles-get across the lossy link", out, r);

    header(out, "4. curl through trickles-proxy on h2")?;
    let r = proxy_step(&bins, &dir, &h2, web, out);
    step("curl through trickles-proxy", out, r);

    header(out, "5. r2 killed while h1 pings r4 every 20 ms")?;
    let r = reroute_step(&h1, r4, &mut fleet, out);
    step("reroute around a dead router", out, r);

    header(out, "6. web-1 killed in the middle of an 8 MiB transfer")?;
    let r = get_step(&bins, &dir, &h1, web, HUGE, Some(&mut fleet), out);
    step("replica killed mid-transfer", out, r);

    if let Some(k) = &kernel {
        header(
            out,
            "7. The kernel's ping from a namespace behind r1 to one behind r4",
        )?;
        let r = k.ping(out);
        step("kernel ping across the routers", out, r);
        header(
            out,
            "8. The kernel's curl from that namespace to a kernel TCP server behind r4",
        )?;
        let expected = std::fs::read(dir.join("site").join("index.html"))?;
        let r = k.curl(&expected, out);
        step("kernel curl across the routers", out, r);
    }

    header(out, "Captures")?;
    captures(&dir.join("run"), out)?;

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
    let pids: Vec<String> = fleet.started.iter().map(|s| s.pid.to_string()).collect();
    let n = fleet.stop(STOP_GRACE);
    drop(fleet);
    writeln!(
        out,
        "\nstopped the {n} processes still running (pids {})",
        pids.join(" ")
    )?;

    let failed = steps.iter().filter(|s| s.result.is_err()).count();
    writeln!(out, "\nsummary")?;
    for s in &steps {
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
        std::fs::write(site.join(name), object(len))?;
    }
    let file = dir.join("demo.toml");
    let shipped = format!("first_port = {FIRST_PORT}\n");
    if !TOPOLOGY.contains(&shipped) {
        bail!("the demo topology does not start its ports at {FIRST_PORT}");
    }
    let topology = TOPOLOGY.replace(&shipped, &format!("first_port = {first_port}\n"));
    let text = match tun {
        true => super::tun::with_tun(&topology, dir)?,
        false => topology,
    };
    std::fs::write(&file, text)?;
    Ok(topology::load(&file)?)
}

/// `len` bytes that are not all alike, the same every run.
fn object(len: usize) -> Vec<u8> {
    let mut rng = repro::common::SplitMix(0xDE30);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

fn host(plan: &Plan, name: &str) -> anyhow::Result<HostPlan> {
    plan.hosts
        .iter()
        .find(|h| h.name == name)
        .cloned()
        .ok_or_else(|| anyhow!("the demo topology has no host {name}"))
}

fn v4(h: &HostPlan) -> anyhow::Result<Ipv4Addr> {
    match h.address {
        std::net::IpAddr::V4(a) => Ok(a),
        std::net::IpAddr::V6(_) => bail!("{} is not IPv4", h.name),
    }
}

/// The sum of one router counter over every router.
fn esp_runs(fleet: &Fleet) -> Vec<(String, f64)> {
    fleet
        .started
        .iter()
        .filter(|s| s.role == Role::Router)
        .filter_map(|s| {
            let c = crate::up::counters(s.role, s.metrics).ok()?;
            let esp = c.iter().find(|(k, _)| *k == "esp")?.1;
            Some((s.name.clone(), esp))
        })
        .collect()
}

fn esp_step(
    h1: &HostPlan,
    dst: Ipv4Addr,
    fleet: &Fleet,
    out: &mut dyn Write,
) -> anyhow::Result<String> {
    let before = esp_runs(fleet);
    let src = h1.address;
    let count = Instruction::Count {
        counter: Tag(0xC0),
        thresh: 100,
    };
    let collect = Instruction::Collect {
        value: Tag(0xC1),
        val: Value(42),
        counter: Tag(0xC0),
        op: CombineOp::Add,
    };
    let answers = crate::host::block_on(async {
        let mut link = HostLink::udp(h1.local, h1.peer).await?;
        let mut answers = Vec::new();
        for instr in [count, collect] {
            let q = Query::new(src, dst.into(), instr);
            let t = Instant::now();
            let o = esp::send(&mut link, &q).await?;
            answers.push((q, o, t.elapsed()));
        }
        anyhow::Ok(answers)
    })?;
    let mut from = Vec::new();
    for (q, o, rtt) in &answers {
        let mut line = Vec::new();
        esp::report(q, o, false, &mut line)?;
        write!(
            out,
            "  {} µs  {}",
            rtt.as_micros(),
            String::from_utf8_lossy(&line)
        )?;
        match o {
            Outcome::Answer(r) => from.push(r.from),
            other => bail!("no answer: {other:?}"),
        }
    }
    let after = esp_runs(fleet);
    let ran: Vec<String> = after
        .iter()
        .filter_map(|(name, n)| {
            let b = before.iter().find(|(x, _)| x == name).map_or(0.0, |x| x.1);
            (*n > b).then(|| format!("{name} ×{}", n - b))
        })
        .collect();
    writeln!(
        out,
        "  instructions executed per router: {}",
        ran.join(", ")
    )?;
    if ran.is_empty() {
        bail!("no router ran the instructions");
    }
    Ok(format!(
        "answered by {} (it reflected them); run on the way back at {}",
        from.first().map_or(String::new(), ToString::to_string),
        ran.join(", ")
    ))
}

fn ping_step(h1: &HostPlan, dst: Ipv4Addr, out: &mut dyn Write) -> anyhow::Result<String> {
    let p = Ping {
        src: v4(h1)?,
        host: dst,
        count: 5,
        interval: Duration::from_millis(100),
        rb: 32,
        port: 7,
        timeout: Duration::from_secs(2),
    };
    let summary = crate::host::block_on(async {
        let mut link = HostLink::udp(h1.local, h1.peer).await?;
        snap::ping(&mut link, &p, |r| {
            writeln!(out, "  {}", snap::reply_line(r))?;
            Ok(())
        })
        .await
    })?;
    let Some((min, avg, max)) = summary.rtt_us() else {
        bail!("no reply to {} pings", summary.sent);
    };
    Ok(format!(
        "{} of {} replies, rtt min/avg/max {min}/{avg:.0}/{max} µs",
        summary.received(),
        summary.sent
    ))
}

/// Starts `program` with `args`, stdout to `DIR/logs/NAME.out`, stderr inherited (its
/// progress bar shows on a terminal).
fn spawn_tool(bins: &Path, dir: &Path, program: &str, args: &[String]) -> anyhow::Result<Child> {
    let path = fleet::find_binary(bins, program)?;
    let logs = dir.join("run").join("logs");
    std::fs::create_dir_all(&logs)?;
    let stdout = std::fs::File::create(logs.join(format!("{program}.out")))?;
    Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {}", path.display()))
}

/// Kills and reaps a tool on every path out.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

fn get_step(
    bins: &Path,
    dir: &Path,
    h1: &HostPlan,
    web: std::net::IpAddr,
    (name, len): (&str, usize),
    kill_replica: Option<&mut Fleet>,
    out: &mut dyn Write,
) -> anyhow::Result<String> {
    let dest = dir.join(format!("downloaded-{name}"));
    let _ = std::fs::remove_file(&dest);
    let args = vec![
        format!("trickles://{web}/{name}"),
        "-o".into(),
        dest.display().to_string(),
        "--via".into(),
        h1.peer.to_string(),
        "--src".into(),
        h1.address.to_string(),
        "--bind".into(),
        h1.local.to_string(),
        "--timeout-s".into(),
        "40".into(),
    ];
    let t = Instant::now();
    let mut child = Reap(spawn_tool(bins, dir, "trickles-get", &args)?);
    let mut killed = None;
    if let Some(fleet) = kill_replica {
        // Once a quarter has arrived, stop web-1 (the replica r4 sends to first).
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::metadata(&dest).map_or(0, |m| m.len()) < (len / 4) as u64 {
            if Instant::now() > deadline || !matches!(child.0.try_wait(), Ok(None)) {
                bail!("the transfer did not reach a quarter");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let at = std::fs::metadata(&dest).map_or(0, |m| m.len());
        if !fleet.stop_one("web-1", STOP_GRACE) {
            bail!("web-1 was not running");
        }
        writeln!(
            out,
            "  web-1 stopped after {:.1} MiB of {} MiB, {} ms into the transfer",
            at as f64 / f64::from(1 << 20),
            len >> 20,
            t.elapsed().as_millis()
        )?;
        killed = Some(at);
    }
    let status = child.0.wait()?;
    let elapsed = t.elapsed();
    if !status.success() {
        bail!("trickles-get failed ({status})");
    }
    let got = std::fs::read(&dest).with_context(|| format!("no {}", dest.display()))?;
    if got != object(len) {
        bail!(
            "{} differs from what web serves ({} bytes)",
            dest.display(),
            got.len()
        );
    }
    let mbit = len as f64 * 8.0 / elapsed.as_secs_f64() / 1e6;
    writeln!(
        out,
        "  {} bytes in {:.2} s: {mbit:.1} Mbit/s, byte-exact",
        got.len(),
        elapsed.as_secs_f64()
    )?;
    Ok(match killed {
        Some(_) => format!(
            "{} MiB complete and byte-exact after web-1 was stopped ({:.2} s, {mbit:.1} Mbit/s): web-2 carried on",
            len >> 20,
            elapsed.as_secs_f64()
        ),
        None => format!(
            "{} MiB in {:.2} s ({mbit:.1} Mbit/s), byte-exact",
            len >> 20,
            elapsed.as_secs_f64()
        ),
    })
}

fn proxy_step(
    bins: &Path,
    dir: &Path,
    h2: &HostPlan,
    web: std::net::IpAddr,
    out: &mut dyn Write,
) -> anyhow::Result<String> {
    let args = vec![
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--server".into(),
        web.to_string(),
        "--via".into(),
        h2.peer.to_string(),
        "--src".into(),
        h2.address.to_string(),
        "--bind".into(),
        h2.local.to_string(),
    ];
    let _proxy = Reap(spawn_tool(bins, dir, "trickles-proxy", &args)?);
    let out_file = dir.join("run").join("logs").join("trickles-proxy.out");
    let deadline = Instant::now() + Duration::from_secs(10);
    let listen: SocketAddr = loop {
        let text = std::fs::read_to_string(&out_file).unwrap_or_default();
        if let Some(a) = text
            .lines()
            .find_map(|l| l.strip_prefix("ready tcp="))
            .and_then(|a| a.split_whitespace().next())
            .and_then(|a| a.parse().ok())
        {
            break a;
        }
        if Instant::now() > deadline {
            bail!("trickles-proxy did not say where it listens");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let url = format!("http://{web}/index.html");
    let t = Instant::now();
    let curl = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-x"])
        .arg(format!("http://{listen}"))
        .arg(&url)
        .output();
    let body = match curl {
        Ok(o) if o.status.success() => o.stdout,
        Ok(o) => bail!("curl failed: {}", String::from_utf8_lossy(&o.stderr).trim()),
        Err(e) => bail!("cannot run curl ({e}); install it (apt install curl)"),
    };
    let expected = std::fs::read(dir.join("site").join("index.html"))?;
    if body != expected {
        bail!("curl got {} bytes that differ from index.html", body.len());
    }
    writeln!(
        out,
        "  curl -x http://{listen} {url}: {} bytes in {} ms, byte-exact",
        body.len(),
        t.elapsed().as_millis()
    )?;
    Ok(format!(
        "curl fetched {url} through trickles-proxy, byte-exact"
    ))
}

fn reroute_step(
    h1: &HostPlan,
    dst: Ipv4Addr,
    fleet: &mut Fleet,
    out: &mut dyn Write,
) -> anyhow::Result<String> {
    let interval = Duration::from_millis(20);
    let p = Ping {
        src: v4(h1)?,
        host: dst,
        count: 100,
        interval,
        rb: 32,
        port: 9,
        timeout: Duration::from_secs(1),
    };
    let r2 = fleet
        .started
        .iter()
        .find(|s| s.name == "r2")
        .map(|s| s.pid)
        .ok_or_else(|| anyhow!("r2 is not running"))?;
    // The kill happens on this thread while another pings.
    let (h1l, h1p) = (h1.local, h1.peer);
    let pinger = std::thread::spawn(move || {
        crate::host::block_on(async {
            let mut link = HostLink::udp(h1l, h1p).await?;
            let mut times = Vec::new();
            let t0 = Instant::now();
            let summary = snap::ping(&mut link, &p, |r| {
                times.push((r.seq, t0.elapsed()));
                Ok(())
            })
            .await?;
            anyhow::Ok((summary, times, t0))
        })
    });
    std::thread::sleep(Duration::from_millis(1000));
    let killed_at = Instant::now();
    fleet.stop_one("r2", STOP_GRACE);
    writeln!(out, "  r2 (pid {r2}) stopped")?;
    let (summary, times, t0) = pinger
        .join()
        .map_err(|_| anyhow!("the pinging thread panicked"))??;
    let kill = killed_at.duration_since(t0);
    // The first answer to a ping sent after the stop (pings go out every `interval`).
    let first_after = times
        .iter()
        .find(|(seq, _)| interval * seq.saturating_sub(1) >= kill);
    let Some((seq, at)) = first_after else {
        bail!(
            "no reply to a ping sent after r2 stopped ({} of {} answered)",
            summary.received(),
            summary.sent
        );
    };
    let lost = summary.sent - summary.received();
    let reroute = at.saturating_sub(kill);
    writeln!(
        out,
        "  {} pings, {} answered; the first answer to a ping sent after the stop was seq {seq}, {} ms after it; {lost} lost",
        summary.sent,
        summary.received(),
        reroute.as_millis()
    )?;
    Ok(format!(
        "rerouted over r3 in {} ms ({lost} of {} pings lost)",
        reroute.as_millis(),
        summary.sent
    ))
}

fn captures(run: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut files = Vec::new();
    collect_pcaps(&run.join("pcap"), &mut files);
    files.sort();
    for f in &files {
        let len = std::fs::metadata(f).map_or(0, |m| m.len());
        writeln!(out, "  {:>9} bytes  {}", len, f.display())?;
    }
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
        } else if p.extension().is_some_and(|x| x == "pcap") {
            into.push(p);
        }
    }
}
