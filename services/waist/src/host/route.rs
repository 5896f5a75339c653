//! `waist route show`: a router's routing table, read from the JSON view of its metrics
//! endpoint (`GET /api/status`, [`waist_router::status::Status`]), so no second control
//! protocol is needed.
//!
//! The router is named as `waist up` named it (`waist route show r1`, looked up in the
//! run's state file, [`crate::up::status::resolve`]) or by its metrics address
//! (`waist route show 127.0.0.1:28000`, or `--metrics ADDR`). `--json` prints one JSON
//! document:
//!
//! ```json
//! {"router": "r1", "metrics": "127.0.0.1:28000",
//!  "routes": [{"prefix": "10.0.0.2/32", "link": "r2", "next_hop": "127.0.0.1:27001",
//!              "cost": 1, "source": "dv", "rank": null, "state": null}, …]}
//! ```

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use waist_router::status::{RouteStatus, Status};

/// `waist route …`.
#[derive(clap::Subcommand, Debug)]
pub enum RouteCommand {
    /// Print a router's routing table (static routes and what distance vector learned).
    Show {
        /// The router: its name in the `waist up` run in --dir (r1), or its metrics
        /// address (127.0.0.1:28000).
        #[arg(value_name = "ROUTER", required_unless_present = "metrics")]
        router: Option<String>,
        /// The router's metrics address (its `--metrics ADDR`), as ROUTER may give it.
        #[arg(long, conflicts_with = "router")]
        metrics: Option<SocketAddr>,
        /// The `waist up` run's directory, where a router's name is looked up.
        #[arg(long, default_value = "waist-run")]
        dir: PathBuf,
        /// Print one JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Reads the router's status from the JSON view of its metrics endpoint at `addr`.
///
/// # Errors
///
/// Connection or HTTP errors, or an answer that is not a router's status (a trickles-web
/// endpoint, say).
pub fn fetch(addr: SocketAddr) -> anyhow::Result<Status> {
    let body = super::scrape::fetch_path(addr, netio::metrics::STATUS_PATH, Duration::from_secs(5))
        .with_context(|| format!("cannot read the router's status at {addr}"))?;
    serde_json::from_str(&body)
        .with_context(|| format!("{addr} answers, but not with a router's status"))
}

/// The routes as `waist route show` prints them: sorted by prefix (a static prefix's links
/// in rank order).
pub fn sorted(mut routes: Vec<RouteStatus>) -> Vec<RouteStatus> {
    routes.sort_by(|a, b| a.prefix.cmp(&b.prefix));
    routes
}

/// The one JSON document of `--json`.
pub fn json(status: &Status, metrics: SocketAddr) -> serde_json::Value {
    serde_json::json!({
        "router": status.router,
        "metrics": metrics.to_string(),
        "routes": sorted(status.routes.clone()),
    })
}

/// Writes the table.
///
/// # Errors
///
/// If writing fails.
pub fn table(status: &Status, out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:<20} {:<10} {:<22} {:<7} {:<5} state",
        "prefix", "link", "next hop", "source", "cost"
    )?;
    for r in sorted(status.routes.clone()) {
        let line = format!(
            "{:<20} {:<10} {:<22} {:<7} {:<5} {}",
            r.prefix,
            r.link,
            r.next_hop.as_deref().unwrap_or("-"),
            r.source,
            r.cost,
            r.state.as_deref().unwrap_or("")
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// Runs a route command; returns the exit code.
///
/// # Errors
///
/// The router cannot be found or reached.
pub fn run(command: RouteCommand, out: &mut dyn Write) -> anyhow::Result<u8> {
    match command {
        RouteCommand::Show {
            router,
            metrics,
            dir,
            json: as_json,
        } => {
            let addr = match (metrics, router) {
                (Some(addr), _) => addr,
                (None, Some(target)) => crate::up::status::resolve(&dir, &target)?,
                (None, None) => anyhow::bail!("name a router, or give --metrics ADDR"),
            };
            let status = fetch(addr)?;
            if as_json {
                writeln!(out, "{:#}", json(&status, addr))?;
            } else {
                table(&status, out)?;
            }
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(prefix: &str, source: &str, state: Option<&str>) -> RouteStatus {
        RouteStatus {
            prefix: prefix.into(),
            link: "r2".into(),
            next_hop: Some("127.0.0.1:27001".into()),
            cost: u32::from(source == "dv"),
            source: source.into(),
            rank: state.map(|_| 0),
            state: state.map(Into::into),
        }
    }

    fn status() -> Status {
        Status {
            router: "r1".into(),
            routes: vec![
                route("10.3.0.0/16", "dv", None),
                route("10.1.0.0/16", "static", Some("active")),
            ],
            links: Vec::new(),
            counters: Default::default(),
            dropped: Default::default(),
        }
    }

    #[test]
    fn the_table_sorts_by_prefix_and_shows_next_hops() {
        let mut out = Vec::new();
        table(&status(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("prefix") && lines[0].contains("next hop"));
        assert!(
            lines[1].starts_with("10.1.0.0/16") && lines[1].ends_with("static  0     active"),
            "{text}"
        );
        assert!(lines[2].contains("127.0.0.1:27001") && lines[2].ends_with("dv      1"));
    }

    #[test]
    fn the_json_document_has_stable_fields() {
        let addr: SocketAddr = "127.0.0.1:28000".parse().unwrap();
        let v = json(&status(), addr);
        assert_eq!(v["router"], "r1");
        assert_eq!(v["metrics"], "127.0.0.1:28000");
        let first = &v["routes"][0];
        for key in [
            "prefix", "link", "next_hop", "cost", "source", "rank", "state",
        ] {
            assert!(first.get(key).is_some(), "no {key} in {first}");
        }
        assert_eq!(first["prefix"], "10.1.0.0/16");
        assert_eq!(v["routes"][1]["cost"], 1);
        assert!(v["routes"][1]["state"].is_null());
    }
}
