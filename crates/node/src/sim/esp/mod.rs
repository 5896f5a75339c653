//! ESP on simulated networks of [`Node`](crate::Node)s: the paper's applications end to end.
//!
//! Routers are waist nodes ([`SimNode::Router`]): an ESP-capable one runs each ESP packet
//! through its contexts (input and central on arrival, output for every copy it sends); one
//! without ESP (partial deployment, §4.1) forwards ESP packets as plain IP. They route by
//! /32 routes to the hosts ([`install_host_routes`]) or a default route (`0.0.0.0/0`), and
//! copy multicast groups ([`Node::add_group`](crate::Node::add_group)). A [`Host`] is an
//! end system around `esp_proto::endpoint::host_receive`: it sends packets at set times,
//! reflects RB packets (§2.5) and keeps what it receives.
//!
//! Simulated time is in microseconds; ESS stores see the same ticks.
//!
//! ```text
//!  add_host / add_router ─► connect links ─► install_host_routes ─► enable_esp ─► groups
//!  send_from(host, at, packet) ─► sim.run_until(t) ─► host inbox
//! ```

pub mod aggregate;
pub mod isa;
pub mod paths;
pub mod thinning;

use alloc::vec::Vec;

use esp_proto::endpoint::{HostAction, host_receive};
use ess::HashKey;
use netsim::{Instant, NodeId, Outbox, Routes, Simulator};

use super::{BuildError, SimNode, addr_of, fit_routers, rebuild_router};
use crate::config::{ConfigError, EspConfig};
use crate::routes::prefix;
use isa::InstructionSet;

/// The ESP config every simulated router uses by default ([`EspConfig::new`]: τ = 10 s at
/// 1 ms resolution, one shard): stores of 2^`log2` bindings, node id [`addr_of`] `id`,
/// secrets derived from `seed` and the node id.
///
/// Sweeps run every second, not every 100 ms as in a daemon: in a network of hundreds of
/// routers idling through τ between runs, 100 ms sweeps are most of the simulator's events
/// (four times the run time of `waist repro esp-aggregation`). A sweep only gives memory
/// back: a store reclaims expired entries itself before it allocates, so what packets see
/// does not depend on the interval.
///
/// # Errors
///
/// [`ess::ConfigError`] if `log2` is out of range.
pub fn esp_config(id: NodeId, log2: u8, seed: u64) -> Result<EspConfig, ess::ConfigError> {
    let key = HashKey::from_seed(seed ^ (id.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut c = EspConfig::new(u64::from(u32::from(addr_of(id))), log2, key)?;
    c.clean_interval = crate::SECONDS;
    Ok(c)
}

/// A simulated end system with one interface. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Host {
    /// Packets to send, each at its time (kept sorted, latest first).
    pending: Vec<(Instant, Vec<u8>)>,
    /// What arrived and was delivered, with arrival times.
    pub inbox: Vec<(Instant, Vec<u8>)>,
    /// Packets reflected back (RB set on arrival).
    pub reflected: u64,
}

impl Host {
    /// A host with nothing to send.
    pub fn new() -> Host {
        Host::default()
    }

    /// Sends `packet` at `at` (or as soon as the host next runs, if that is later).
    pub fn send_at(&mut self, at: Instant, packet: Vec<u8>) {
        let pos = self.pending.partition_point(|(t, _)| *t > at);
        self.pending.insert(pos, (at, packet));
    }

    /// Takes the delivered packets.
    pub fn take_inbox(&mut self) -> Vec<(Instant, Vec<u8>)> {
        core::mem::take(&mut self.inbox)
    }
}

impl netsim::Node for Host {
    fn handle_packet(
        &mut self,
        now: Instant,
        _iface: usize,
        mut packet: Vec<u8>,
        out: &mut Outbox,
    ) {
        match host_receive(&mut packet) {
            Ok(HostAction::Reflect) => {
                self.reflected += 1;
                out.send(0, packet);
            }
            _ => self.inbox.push((now, packet)),
        }
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        while self.pending.last().is_some_and(|(t, _)| *t <= now) {
            if let Some((_, p)) = self.pending.pop() {
                out.send(0, p);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending.last().map(|(t, _)| *t)
    }
}

/// Adds an end [`Host`] with nothing to send.
pub fn add_host(sim: &mut Simulator<SimNode>) -> NodeId {
    sim.add_node(SimNode::Host(Host::new()))
}

/// Fits every router to its links ([`fit_routers`]), then routes every host's address
/// (/32) along least-delay paths (all-pairs: for networks of up to a few hundred nodes).
///
/// # Errors
///
/// [`ConfigError`] if a router's config does not validate.
pub fn install_host_routes(sim: &mut Simulator<SimNode>) -> Result<(), ConfigError> {
    fit_routers(sim)?;
    let routes = Routes::shortest(sim);
    let n = sim.node_count();
    let hosts: Vec<NodeId> = (0..n)
        .map(NodeId)
        .filter(|&i| sim.node(i).host().is_some())
        .collect();
    for r in (0..n).map(NodeId) {
        for &h in &hosts {
            if let Some(iface) = routes.next_hop(r, h)
                && let Some(router) = sim.node_mut(r).router_mut()
                && let Ok(p) = prefix(addr_of(h).into(), 32)
            {
                router.add_route(p, iface);
            }
        }
    }
    Ok(())
}

/// Routes everything without a route of its own at router `id` out of `iface`
/// (`0.0.0.0/0`).
pub fn set_default(sim: &mut Simulator<SimNode>, id: NodeId, iface: usize) {
    if let (Some(r), Ok(p)) = (
        sim.node_mut(id).router_mut(),
        prefix([0, 0, 0, 0].into(), 0),
    ) {
        r.add_route(p, iface);
    }
}

/// Rebuilds every router in `routers` ESP-capable with [`esp_config`] (stores of
/// 2^`log2`), fitted to its links, its static routes kept ([`rebuild_router`]: add
/// multicast groups after this).
///
/// # Errors
///
/// [`BuildError`] if `log2` is out of range or a config does not validate.
pub fn enable_esp(
    sim: &mut Simulator<SimNode>,
    routers: &[NodeId],
    log2: u8,
    seed: u64,
) -> Result<(), BuildError> {
    enable_esp_with(sim, routers, log2, seed, &InstructionSet::BuiltIn)
}

/// [`enable_esp`] with the microcode `isa` needs installed on every router
/// ([`InstructionSet::microcode`]).
///
/// # Errors
///
/// As [`enable_esp`].
pub fn enable_esp_with(
    sim: &mut Simulator<SimNode>,
    routers: &[NodeId],
    log2: u8,
    seed: u64,
    isa: &InstructionSet,
) -> Result<(), BuildError> {
    for &r in routers {
        let mut esp = esp_config(r, log2, seed)?;
        esp.microcode = isa.microcode();
        rebuild_router(sim, r, |c| c.esp = Some(esp))?;
    }
    Ok(())
}

/// What a router's ESP did, as far as it shows from outside: the node's packet totals, its
/// ESP layer's (instructions executed, dropped, aborted, …) and the bindings its stores
/// created. Two runs of an application that match here left the same state behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The node's totals.
    pub node: crate::Stats,
    /// Its ESP layer's totals (zero without ESP).
    pub esp: esp_proto::node::NodeStats,
    /// Bindings its ESP stores created.
    pub created: u64,
}

/// The [`Tally`] of every router in `routers` (hosts and unknown nodes are skipped).
pub fn tally(sim: &Simulator<SimNode>, routers: &[NodeId]) -> Vec<Tally> {
    routers
        .iter()
        .filter_map(|&r| sim.node(r).router())
        .map(|n| Tally {
            node: n.stats(),
            esp: n.esp().map(|e| e.stats()).unwrap_or_default(),
            created: n.esp().map_or(0, |e| e.created()),
        })
        .collect()
}

/// Schedules `packet` at host `host` at `at`.
pub fn send_from(sim: &mut Simulator<SimNode>, host: NodeId, at: Instant, packet: Vec<u8>) {
    sim.act(host, |node, _, _| {
        if let Some(h) = node.host_mut() {
            h.send_at(at, packet);
        }
    });
}
