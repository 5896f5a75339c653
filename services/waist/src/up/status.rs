//! `waist status [NAME] [--json]`: each process of a running `waist up` (in the
//! foreground or detached) and its live counters, read from its metrics page, then each of
//! its namespace hosts ([`super::netns`]) and whether its namespace still exists; and
//! [`resolve`], which finds a process's metrics address by its name for the other tools
//! (`waist route show r1`).
//!
//! `--json` prints one JSON document:
//!
//! ```json
//! {"run": "demo", "topology": "examples/topologies/demo.toml", "dir": "waist-run",
//!  "processes": [{"name": "r1", "program": "waist-router", "pid": 4242, "machine": "local",
//!                 "metrics": "127.0.0.1:28000", "answering": true, "error": null,
//!                 "counters": {"received": 10, "forwarded": 8, …}}, …],
//!  "namespaces": [{"host": "h1", "namespace": "waist-demo-h1", "address": "10.1.0.10",
//!                  "router": "r1", "device": "wh4242-0", "present": true}, …]}
//! ```

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use super::State;
use super::fleet::Started;
use super::topology::Role;

/// `waist status` options.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only this process (a router's or a replica's name).
    pub name: Option<String>,
    /// The run's directory (`waist up --dir`).
    #[arg(long, default_value = "waist-run")]
    pub dir: PathBuf,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A process's headline counters: (name, value), in a fixed order.
pub type Counters = Vec<(&'static str, f64)>;

/// One process's headline counters, from its metrics page.
///
/// # Errors
///
/// The page cannot be fetched.
pub fn counters(role: Role, metrics: SocketAddr) -> anyhow::Result<Counters> {
    let page = crate::host::scrape::fetch(metrics, Duration::from_secs(2))?;
    let s = crate::host::scrape::parse(&page);
    let get = |name: &str| crate::host::scrape::sum(&s, name, &[]).unwrap_or(0.0);
    Ok(match role {
        Role::Router => vec![
            ("received", get("waist_frames_received_total")),
            ("forwarded", get("waist_frames_forwarded_total")),
            ("delivered", get("waist_frames_delivered_total")),
            ("dropped", get("waist_frames_dropped_total")),
            ("esp", get("waist_esp_executed_total")),
            ("snap", get("waist_snap_executed_total")),
            (
                "routes",
                s.iter().filter(|x| x.name == "waist_route").count() as f64,
            ),
        ],
        Role::Server => vec![
            ("packets", get("trickles_packets_total")),
            ("responses", get("trickles_responses_total")),
            ("bytes", get("trickles_response_bytes_total")),
            ("refused", get("trickles_refused_total")),
        ],
    })
}

/// The process `name` of the run in `dir`.
///
/// # Errors
///
/// No run there, or no such process in it (the error lists the names it has).
pub fn find<'a>(state: &'a State, dir: &Path, name: &str) -> anyhow::Result<&'a Started> {
    state
        .processes
        .iter()
        .find(|p| p.name == name)
        .with_context(|| {
            let names: Vec<&str> = state.processes.iter().map(|p| p.name.as_str()).collect();
            format!(
                "the run in {} ({}) has no process `{name}` (it has: {})",
                dir.display(),
                state.name,
                names.join(", ")
            )
        })
}

/// The metrics address `target` means: an address as it is (`127.0.0.1:28000`), else the
/// name of a router of the `waist up` run in `dir`.
///
/// # Errors
///
/// No run in `dir`, no such process, or a process that is not a router.
pub fn resolve(dir: &Path, target: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(addr) = target.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let state = State::load(dir)?;
    let p = find(&state, dir, target)?;
    if p.role != Role::Router {
        bail!(
            "`{target}` is a {}, not a router (its metrics: {})",
            p.role.program(),
            p.metrics
        );
    }
    Ok(p.metrics)
}

/// A counter as JSON: an integer when it is one (they all are), else a float.
fn number(v: f64) -> serde_json::Value {
    if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) {
        serde_json::Value::from(v as u64)
    } else {
        serde_json::Value::from(v)
    }
}

/// `waist status`: each process of the run (or the one named) and its live counters;
/// returns 1 if one does not answer.
///
/// # Errors
///
/// No run in the directory, or no process of that name.
pub fn status(args: &StatusArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let state = State::load(&args.dir)?;
    let chosen: Vec<&Started> = match &args.name {
        Some(name) => vec![find(&state, &args.dir, name)?],
        None => state.processes.iter().collect(),
    };
    let read: Vec<(&Started, anyhow::Result<Counters>)> = chosen
        .into_iter()
        .map(|s| (s, counters(s.role, s.metrics)))
        .collect();
    let down = read.iter().filter(|(_, c)| c.is_err()).count();
    if args.json {
        let processes: Vec<serde_json::Value> = read
            .iter()
            .map(|(s, c)| {
                let counters: serde_json::Map<String, serde_json::Value> = c
                    .as_ref()
                    .map(|c| {
                        c.iter()
                            .map(|(k, v)| ((*k).to_string(), number(*v)))
                            .collect()
                    })
                    .unwrap_or_default();
                serde_json::json!({
                    "name": s.name,
                    "program": s.role.program(),
                    "pid": s.pid,
                    "machine": s.machine,
                    "metrics": s.metrics.to_string(),
                    "answering": c.is_ok(),
                    "error": c.as_ref().err().map(|e| format!("{e:#}")),
                    "counters": counters,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "run": state.name,
            "topology": state.topology.display().to_string(),
            "dir": args.dir.display().to_string(),
            "processes": processes,
            "namespaces": super::netns::status_json(&state.namespaces),
        });
        writeln!(out, "{doc:#}")?;
    } else {
        writeln!(out, "{} ({})", state.name, state.topology.display())?;
        for (s, c) in &read {
            let line = match c {
                Ok(c) => c
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join("  "),
                Err(e) => format!("not answering: {e:#}"),
            };
            writeln!(
                out,
                "{:<10} {:<13} {:>7}  {:<21}  {line}",
                s.name,
                s.role.program(),
                s.pid,
                s.metrics
            )?;
        }
        if args.name.is_none() {
            super::netns::print_status(&state.namespaces, out)?;
        }
    }
    Ok(if down == 0 { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_integers_in_json_when_they_are() {
        assert_eq!(number(94.0).to_string(), "94");
        assert_eq!(number(2.5).to_string(), "2.5");
        assert_eq!(number(-1.0).to_string(), "-1.0");
    }

    #[test]
    fn an_address_needs_no_run_and_a_name_does() {
        let nowhere = Path::new("/nonexistent-waist-run");
        assert_eq!(
            resolve(nowhere, "127.0.0.1:28000").unwrap(),
            "127.0.0.1:28000".parse::<SocketAddr>().unwrap()
        );
        let e = resolve(nowhere, "r1").unwrap_err().to_string();
        assert!(
            e.contains("no `waist up` run in /nonexistent-waist-run"),
            "{e}"
        );
    }
}
