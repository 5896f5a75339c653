//! The steps of `waist demo` ([`super::net`]), each against the running network and
//! measured in this run: ESP from h1, the SNAP ping, a `trickles-get` (with a replica
//! stopped mid-transfer, or not), curl through `trickles-proxy`, and a router stopped under
//! a ping. Each returns the line the summary prints, or why it failed.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use esp_proto::instr::{CombineOp, Instruction};
use ess::{Tag, Value};

use crate::host::esp::{self, Outcome, Query};
use crate::host::link::HostLink;
use crate::host::snap::{self, Ping};
use crate::up::fleet::{self, Fleet, STOP_GRACE};
use crate::up::topology::{HostPlan, Role};

/// `len` bytes that are not all alike, the same every run.
pub(super) fn object(len: usize) -> Vec<u8> {
    let mut rng = repro::common::SplitMix(0xDE30);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// `h`'s IPv4 address.
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

/// Step 1: a COUNT and a COLLECT from `h1` to `dst`, reflected there and run by the
/// routers on the way back (which ones: their counters before and after).
pub(super) fn esp(
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

/// Step 2: the SNAP paper's Fig. 1 ping from `h1` to `dst`, five times.
pub(super) fn ping(h1: &HostPlan, dst: Ipv4Addr, out: &mut dyn Write) -> anyhow::Result<String> {
    let p = Ping {
        src: v4(h1)?.into(),
        host: dst.into(),
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

/// Starts `program` with `args`, stdout to `DIR/run/logs/PROGRAM.out`, stderr inherited
/// (its progress bar shows on a terminal).
fn spawn_tool(bins: &Path, dir: &Path, program: &str, args: &[String]) -> anyhow::Result<Child> {
    spawn_logged(bins, dir, program, program, args)
}

/// Starts `program` with `args`, stdout to `DIR/run/logs/LOG.out`, stderr inherited.
pub(super) fn spawn_logged(
    bins: &Path,
    dir: &Path,
    program: &str,
    log: &str,
    args: &[String],
) -> anyhow::Result<Child> {
    let path = fleet::find_binary(bins, program)?;
    let logs = dir.join("run").join("logs");
    std::fs::create_dir_all(&logs)?;
    let stdout = std::fs::File::create(logs.join(format!("{log}.out")))?;
    Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {}", path.display()))
}

/// Kills and reaps a tool on every path out.
pub(super) struct Reap(pub(super) Child);

impl Drop for Reap {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Steps 3 and 6: `trickles-get` of `name` (`len` bytes) from `web` as `h1`, checked
/// byte for byte; with `kill_replica`, the transfer is held to 40 Mbit/s and web-1 is
/// stopped once a quarter has arrived.
pub(super) fn get(
    bins: &Path,
    dir: &Path,
    h1: &HostPlan,
    web: IpAddr,
    (name, len): (&str, usize),
    kill_replica: Option<&mut Fleet>,
    out: &mut dyn Write,
) -> anyhow::Result<String> {
    let dest = dir.join(format!("downloaded-{name}"));
    let _ = std::fs::remove_file(&dest);
    let t = Instant::now();
    let mut args = get_args(h1, web, name, &dest);
    if kill_replica.is_some() {
        // At 40 Mbit/s the three quarters after the stop take over a second, so web-2
        // serves them even when a loaded machine is slow to notice the first quarter.
        args.extend(["--emulate".to_string(), "rate_mbps=40".to_string()]);
    }
    let mut child = Reap(spawn_tool(bins, dir, "trickles-get", &args)?);
    let killed = match kill_replica {
        Some(fleet) => Some(stop_at_a_quarter(&mut child, &dest, len, fleet, t, out)?),
        None => None,
    };
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

/// `trickles-get`'s arguments: `name` from `web` into `dest`, as `h1` on its link.
fn get_args(h1: &HostPlan, web: IpAddr, name: &str, dest: &Path) -> Vec<String> {
    vec![
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
    ]
}

/// Once a quarter of `len` has arrived in `dest`, stops web-1 (the replica r4 sends to
/// first); returns how many bytes had arrived. `t`: when the transfer started.
fn stop_at_a_quarter(
    child: &mut Reap,
    dest: &Path,
    len: usize,
    fleet: &mut Fleet,
    t: Instant,
    out: &mut dyn Write,
) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(dest).map_or(0, |m| m.len()) < (len / 4) as u64 {
        if Instant::now() > deadline || !matches!(child.0.try_wait(), Ok(None)) {
            bail!("the transfer did not reach a quarter");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let at = std::fs::metadata(dest).map_or(0, |m| m.len());
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
    Ok(at)
}

/// Step 4: curl fetches `index.html` from `web` through a `trickles-proxy` on `h2`.
pub(super) fn proxy(
    bins: &Path,
    dir: &Path,
    h2: &HostPlan,
    web: IpAddr,
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

/// Step 5: r2 stopped while `h1` pings `dst` every 20 ms; how long until answers come
/// over r3.
pub(super) fn reroute(
    h1: &HostPlan,
    dst: Ipv4Addr,
    fleet: &mut Fleet,
    out: &mut dyn Write,
) -> anyhow::Result<String> {
    let interval = Duration::from_millis(20);
    let p = Ping {
        src: v4(h1)?.into(),
        host: dst.into(),
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
