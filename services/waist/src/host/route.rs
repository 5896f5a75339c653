//! `waist route show`: a router's routing table, read from its metrics endpoint (the
//! router publishes every route as a `waist_route{prefix,link,source}` sample whose value
//! is the cost), so no second control protocol is needed.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;

/// `waist route …`.
#[derive(clap::Subcommand, Debug)]
pub enum RouteCommand {
    /// Print a router's routing table (static routes and what distance vector learned).
    Show {
        /// The router's metrics address (its `--metrics ADDR`).
        #[arg(long)]
        metrics: SocketAddr,
    },
}

/// One route as the router reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct RouteRow {
    /// `10.3.0.0/16`.
    pub prefix: String,
    /// The link it leaves by.
    pub link: String,
    /// `static` or `dv`.
    pub source: String,
    /// The cost (0 for static routes).
    pub cost: f64,
    /// A static route's state on this link: `active`, `backup` or `down` (empty for
    /// learned routes).
    pub state: String,
}

/// The `waist_route` samples of a Prometheus text page.
pub fn parse_routes(page: &str) -> Vec<RouteRow> {
    super::scrape::parse(page)
        .into_iter()
        .filter(|s| s.name == "waist_route")
        .filter_map(|s| {
            Some(RouteRow {
                prefix: s.label("prefix")?.to_string(),
                link: s.label("link")?.to_string(),
                source: s.label("source")?.to_string(),
                cost: s.value,
                state: s.label("state").unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// Fetches the router's metrics page from `addr`.
///
/// # Errors
///
/// Connection or HTTP errors.
pub fn fetch(addr: SocketAddr) -> anyhow::Result<String> {
    super::scrape::fetch(addr, Duration::from_secs(5))
        .with_context(|| format!("cannot read the router's metrics at {addr}"))
}

/// Runs a route command; returns the exit code.
///
/// # Errors
///
/// The router cannot be reached.
pub fn run(command: RouteCommand, out: &mut dyn Write) -> anyhow::Result<u8> {
    match command {
        RouteCommand::Show { metrics } => {
            let mut rows = parse_routes(&fetch(metrics)?);
            rows.sort_by(|a, b| a.prefix.cmp(&b.prefix));
            writeln!(
                out,
                "{:<24} {:<12} {:<7} {:<5} state",
                "prefix", "link", "source", "cost"
            )?;
            for r in rows {
                writeln!(
                    out,
                    "{:<24} {:<12} {:<7} {:<5} {}",
                    r.prefix, r.link, r.source, r.cost, r.state
                )?;
            }
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_from_a_metrics_page() {
        let page = "# HELP waist_route a route\n# TYPE waist_route gauge\nwaist_route{prefix=\"10.1.0.0/16\",link=\"host\",source=\"static\"} 0\nwaist_route{prefix=\"10.3.0.0/16\",link=\"r2\",source=\"dv\"} 2.0\nwaist_up 1\n";
        let r = parse_routes(page);
        assert_eq!(r.len(), 2);
        let backed = parse_routes(
            "waist_route{prefix=\"10.2.0.80/32\",link=\"web-1\",source=\"static\",rank=\"0\",state=\"down\"} 0\n\
             waist_route{prefix=\"10.2.0.80/32\",link=\"web-2\",source=\"static\",rank=\"1\",state=\"active\"} 0\n",
        );
        let states: Vec<(&str, &str)> = backed
            .iter()
            .map(|r| (r.link.as_str(), r.state.as_str()))
            .collect();
        assert_eq!(states, [("web-1", "down"), ("web-2", "active")]);
        assert_eq!(
            r[1],
            RouteRow {
                prefix: "10.3.0.0/16".into(),
                link: "r2".into(),
                source: "dv".into(),
                cost: 2.0,
                state: String::new(),
            }
        );
    }
}
