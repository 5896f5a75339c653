//! Step 5 of `waist demo`: destination-customised multicast in r1 (the stream handlers
//! paper's overlay node), from h1 to h2, h3 and h4, each with its own filter, one of them
//! re-parameterised while the stream runs. Everything is done with the `waist stream`
//! tools, as a user would: three `sub`s, a `pub`, a `set`, each its own process.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use super::steps::{Reap, spawn_logged};
use crate::up::topology::HostPlan;

/// The stream the demo topology deploys on r1 (`examples/topologies/demo.toml`).
pub const STREAM: u16 = 7;
/// Messages per phase, their size and rate.
const MESSAGES: u32 = 60;
const SIZE: u32 = 4000;
const RATE: u32 = 200;
/// The subscribers' filters as the topology deploys them, then h2's after the change.
const FILTERS: [&str; 3] = ["status==2", "status<2", "all"];
const CHANGED: &str = "status in 3..4";

/// A `waist stream` tool running, reaped on every path out; its stdout in
/// `DIR/run/logs/NAME.out`.
struct Tool {
    child: Reap,
    out: PathBuf,
}

impl Tool {
    fn start(bins: &Path, dir: &Path, name: &str, args: &[String]) -> anyhow::Result<Tool> {
        let child = Reap(spawn_logged(bins, dir, "waist", name, args)?);
        let out = dir.join("run").join("logs").join(format!("{name}.out"));
        Ok(Tool { child, out })
    }

    /// Waits for it; its exit code and standard output.
    fn finish(mut self) -> anyhow::Result<(i32, String)> {
        let status = self.child.0.wait()?;
        let text = std::fs::read_to_string(&self.out)?;
        Ok((status.code().unwrap_or(-1), text))
    }
}

fn link(h: &HostPlan) -> [String; 4] {
    [
        "--via".into(),
        h.via(),
        "--src".into(),
        h.address.to_string(),
    ]
}

/// The step's parts: where the tools are and log, the publisher, the subscribers, r1.
struct Parts<'a> {
    bins: &'a Path,
    dir: &'a Path,
    h1: &'a HostPlan,
    subs: [&'a HostPlan; 3],
    router: IpAddr,
}

/// One phase: the three subscribers started, the publisher's messages sent, each
/// subscriber's JSON summary checked against its filter; a line per subscriber.
fn phase(
    p: &Parts<'_>,
    tag: &str,
    filters: [&str; 3],
    out: &mut dyn Write,
) -> anyhow::Result<Vec<String>> {
    let Parts {
        bins,
        dir,
        h1,
        subs,
        router,
    } = *p;
    let mut running = Vec::new();
    for (h, filter) in subs.iter().zip(filters) {
        let mut args: Vec<String> = ["stream", "sub"].map(String::from).to_vec();
        args.extend(link(h));
        args.extend(
            [
                "--stream",
                &STREAM.to_string(),
                "--fields",
                "flight",
                "--size",
                &SIZE.to_string(),
                "--count",
                &MESSAGES.to_string(),
                "--expect",
                filter,
                "--timeout",
                "15",
                "--json",
            ]
            .map(String::from),
        );
        running.push(Tool::start(
            bins,
            dir,
            &format!("stream-sub-{}-{tag}", h.name),
            &args,
        )?);
    }
    // The subscribers bind their links first.
    std::thread::sleep(Duration::from_millis(400));
    let mut args: Vec<String> = ["stream", "pub"].map(String::from).to_vec();
    args.extend(link(h1));
    args.extend(
        [
            "--to",
            &router.to_string(),
            "--stream",
            &STREAM.to_string(),
            "--fields",
            "flight",
            "--size",
            &SIZE.to_string(),
            "--rate",
            &RATE.to_string(),
            "--count",
            &MESSAGES.to_string(),
        ]
        .map(String::from),
    );
    let (code, said) = Tool::start(bins, dir, &format!("stream-pub-{tag}"), &args)?.finish()?;
    if code != 0 {
        bail!("waist stream pub failed ({code}): {said}");
    }
    writeln!(out, "  h1: {}", said.trim())?;
    let mut lines = Vec::new();
    for ((tool, h), filter) in running.into_iter().zip(subs).zip(filters) {
        let (code, json) = tool.finish()?;
        let v: serde_json::Value = serde_json::from_str(&json)
            .with_context(|| format!("{}'s subscriber said {json:?}", h.name))?;
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        let line = format!(
            "{} ({filter}): {} of {} expected, {} filtered out, {} intact, {} lost, latency p50 {:.0} µs",
            h.name,
            n("received"),
            n("expected"),
            n("filtered"),
            n("intact"),
            n("lost"),
            v["latency_us"]["p50"].as_f64().unwrap_or(0.0)
        );
        writeln!(out, "  {line}")?;
        if code != 0 || v["ok"] != serde_json::Value::Bool(true) {
            bail!("{}: {line} (unexpected {})", h.name, n("unexpected"));
        }
        lines.push(line);
    }
    Ok(lines)
}

/// Step 5: customised multicast in `router` (r1) from `h1` to `subs`, then h2's filter
/// changed by a control message and the stream sent again.
pub(super) fn multicast(
    bins: &Path,
    dir: &Path,
    h1: &HostPlan,
    subs: [&HostPlan; 3],
    router: IpAddr,
    out: &mut dyn Write,
) -> anyhow::Result<String> {
    writeln!(
        out,
        "  r1 runs stream {STREAM}: mirror to h2, h3, h4 (Rx side), each copy filtered for its subscriber (Tx side)"
    )?;
    let parts = Parts {
        bins,
        dir,
        h1,
        subs,
        router,
    };
    phase(&parts, "1", FILTERS, out)?;
    let mut args: Vec<String> = ["stream", "set"].map(String::from).to_vec();
    args.extend(link(h1));
    args.extend(
        [
            "--router",
            &router.to_string(),
            "--stream",
            &STREAM.to_string(),
            "--handler",
            "0",
            "--dest",
            "0",
            "--fields",
            "flight",
            "--predicate",
            CHANGED,
        ]
        .map(String::from),
    );
    let (code, said) = Tool::start(bins, dir, "stream-set", &args)?.finish()?;
    if code != 0 {
        bail!("waist stream set failed ({code}): {said}");
    }
    writeln!(out, "  h1 sets h2's filter to `{CHANGED}`: {}", said.trim())?;
    // The second run reuses the first one's message ids: r1 decides them afresh once the
    // first run's decisions are over (its reassembly timeout, 2 s).
    std::thread::sleep(Duration::from_millis(2_100));
    let [_, f3, f4] = FILTERS;
    let lines = phase(&parts, "2", [CHANGED, f3, f4], out)?;
    Ok(format!(
        "{MESSAGES} flight records to three subscribers, each its own filter, twice; after the change {}",
        lines.first().map_or("", String::as_str)
    ))
}
