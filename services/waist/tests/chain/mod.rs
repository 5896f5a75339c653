//! Two `waist-router`s on loopback UDP links, each on its own thread and runtime (as
//! `services/waist-router/tests/udp_chain.rs` runs them), and the tool as the far end of
//! R1's host link — the network the host-tool tests run against:
//!
//! ```text
//!  tool 10.1.0.1 ─ host [R1 10.0.0.1] ── [R2 10.0.0.2] far ─ (nobody; 10.2.0.0/16)
//!                  ESP + SNAP, distance vector (R1 originates 10.1/16, R2 10.2/16)
//! ```

// Each test file uses its own part of it.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use waist::host::{HostLink, Via};
use waist_router::embed::Embedded;

/// The tool's address.
pub(crate) const TOOL: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
/// R1's address.
pub(crate) const R1: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// R2's address.
pub(crate) const R2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// Behind R2's far link, where nobody listens.
pub(crate) const NOBODY: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 9);

/// A free loopback UDP address, never the same one twice in this process.
pub(crate) fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

pub(crate) fn link(name: &str, local: SocketAddr, peer: SocketAddr, cost: bool) -> String {
    let cost = if cost { "cost = 1\n" } else { "" };
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{cost}\n"
    )
}

pub(crate) type Running = Embedded;

/// Runs a router from `text` on its own thread and runtime (as a process would), serving
/// metrics.
pub(crate) fn start(text: String) -> Running {
    Embedded::start("test.toml", text, true).unwrap()
}

/// R1 and R2 running, and the tool's side of R1's host link.
pub(crate) struct Chain {
    pub(crate) via: Via,
    pub(crate) routers: Vec<Running>,
}

impl Chain {
    /// The two routers running, converged.
    pub(crate) async fn start() -> Chain {
        Chain::start_with("").await
    }

    /// The two routers running (both with `esp_extra` appended to their `[esp]` section),
    /// converged.
    pub(crate) async fn start_with(esp_extra: &str) -> Chain {
        let (tool, r1h, r1b, r2a, r2f, far) = (free(), free(), free(), free(), free(), free());
        let common = format!(
            "[esp]\nrate = 1000\nkey_seed = 7\n{esp_extra}[snap]\n[dv]\ntriggered_ms = 20\nupdate_ms = 200\n"
        );
        let r1 = format!(
            "[node]\nname = \"r1\"\naddresses = [\"{R1}\"]\n{common}originate = [\"10.1.0.0/16\"]\n{}{}[[route]]\nprefix = \"10.1.0.0/16\"\nlink = \"host\"\n",
            link("host", r1h, tool, false),
            link("r2", r1b, r2a, true)
        );
        let r2 = format!(
            "[node]\nname = \"r2\"\naddresses = [\"{R2}\"]\n{common}originate = [\"10.2.0.0/16\"]\n{}{}[[route]]\nprefix = \"10.2.0.0/16\"\nlink = \"far\"\n",
            link("r1", r2a, r1b, true),
            link("far", r2f, far, false)
        );
        let chain = Chain {
            via: Via::Udp {
                local: tool,
                peer: r1h,
            },
            routers: vec![start(r1), start(r2)],
        };
        chain.converged().await;
        chain
    }

    /// The tool's side of R1's host link, for IP protocol `protocol`.
    pub(crate) async fn link(&self, protocol: u8) -> HostLink {
        HostLink::open(self.via, protocol).await.unwrap()
    }

    /// Waits until distance vector has converged both ways: R1 routes to R2 and to 10.2/16,
    /// R2 to R1 and to 10.1/16, as their metrics pages show.
    ///
    /// It reads the routers' tables rather than pinging through the tool's link, so the
    /// tool's address is bound once, by the test: a socket closed to be reopened can stay
    /// bound for a moment in a child another test is spawning (forked, not yet exec'd), and
    /// the reopen then fails with `AddrInUse`.
    pub(crate) async fn converged(&self) {
        let wanted = [
            (0, ["10.0.0.2/32", "10.2.0.0/16"]),
            (1, ["10.0.0.1/32", "10.1.0.0/16"]),
        ];
        let has_routes = |r: usize, prefixes: [&str; 2]| {
            let metrics = self.routers[r].metrics().expect("started with metrics");
            let Ok(page) = waist::host::scrape::fetch(metrics, Duration::from_secs(1)) else {
                return false;
            };
            let samples = waist::host::scrape::parse(&page);
            prefixes.iter().all(|p| {
                waist::host::scrape::sum(&samples, "waist_route", &[("prefix", p)]).is_some()
            })
        };
        for _ in 0..100 {
            if wanted.iter().all(|&(r, prefixes)| has_routes(r, prefixes)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the chain did not converge");
    }

    /// The tool's link as `--via` takes it.
    pub(crate) fn via_arg(&self) -> String {
        match self.via {
            Via::Udp { local, peer } => format!("udp:{local}={peer}"),
            Via::Raw => unreachable!(),
        }
    }

    /// Stops both routers; their summaries.
    pub(crate) fn stop(self) -> Vec<waist_router::Summary> {
        self.routers
            .into_iter()
            .map(|r| r.stop().unwrap())
            .collect()
    }
}
