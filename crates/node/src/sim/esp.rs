//! ESP routers and hosts for [`netsim`]: the real protocol code on simulated networks.
//!
//! A [`Router`] forwards raw IP packets by destination (a table of routes plus a default)
//! and multicast groups (downstream interfaces per group address), decrementing the TTL
//! like any router. An ESP-capable one runs each ESP packet through its [`EspNode`]: input
//! and central contexts on arrival, the output context for every copy it sends. A non-ESP
//! router (partial deployment, §4.1) just forwards. A [`Host`] sends packets at scheduled
//! times, reflects RB packets (§2.5) and keeps what it receives.
//!
//! Simulated time is in microseconds; ESS stores see the same ticks.

pub mod aggregate;
pub mod paths;

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr};

use ess::{ConfigError, EssConfig, HashKey};
use netsim::{Instant, Node, NodeId, Outbox, Routes, Simulator};

use crate::endpoint::{HostAction, host_receive};
use crate::node::{EspNode, NodeConfig};
use crate::wire::{addresses, decrement_ttl};

/// Microseconds per millisecond and per second, for readable simulated times.
pub const MS: u64 = 1_000;
/// Microseconds per second.
pub const SECOND: u64 = 1_000_000;

/// The address of simulated node `id`: 10.0.0.1 + id.
pub const fn addr_of(id: NodeId) -> Ipv4Addr {
    let [a, b, c, d] = (0x0A00_0001u32 + id.0 as u32).to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// The node id of an address made by [`addr_of`] (`None` for other addresses).
pub fn id_of(addr: IpAddr) -> Option<NodeId> {
    match addr {
        IpAddr::V4(a) => u32::from(a)
            .checked_sub(0x0A00_0001)
            .map(|i| NodeId(i as usize)),
        IpAddr::V6(_) => None,
    }
}

/// The config every simulated ESP router uses by default: 2^`log2` bindings per context,
/// τ = 10 s, 1 ms resolution, one shard, a key and IDmap secret derived from `seed` and the
/// node id.
///
/// # Errors
///
/// [`ConfigError`] if `log2` is out of range.
pub fn node_config(
    id: NodeId,
    ifaces: usize,
    log2: u8,
    seed: u64,
) -> Result<NodeConfig, ConfigError> {
    let key = HashKey::from_seed(seed ^ (id.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    Ok(NodeConfig {
        ifaces,
        store: EssConfig::new(log2, 10 * SECOND, MS, key.derive(1))?,
        shards: 1,
        node_id: u64::from(u32::from(addr_of(id))),
        idmap_key: key.derive(2),
        timestamp_shift: 10,
    })
}

/// Counters of a [`Router`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouterStats {
    /// Packets (copies) sent.
    pub forwarded: u64,
    /// Packets an ESP instruction dropped.
    pub esp_dropped: u64,
    /// Packets dropped for TTL expiry.
    pub ttl_expired: u64,
    /// Packets with no route, or not IP.
    pub unroutable: u64,
}

/// A simulated IP router, ESP-capable or not. See the [module docs](self).
#[derive(Debug)]
pub struct Router {
    esp: Option<EspNode>,
    routes: BTreeMap<IpAddr, usize>,
    default_route: Option<usize>,
    groups: BTreeMap<IpAddr, Vec<usize>>,
    stats: RouterStats,
}

impl Router {
    /// An ESP-capable router.
    pub fn esp(config: NodeConfig) -> Router {
        Router {
            esp: Some(EspNode::new(config)),
            ..Router::plain()
        }
    }

    /// A router without ESP.
    pub fn plain() -> Router {
        Router {
            esp: None,
            routes: BTreeMap::new(),
            default_route: None,
            groups: BTreeMap::new(),
            stats: RouterStats::default(),
        }
    }

    /// Makes the router ESP-capable (or replaces its contexts), keeping its routes.
    pub fn enable_esp(&mut self, config: NodeConfig) {
        self.esp = Some(EspNode::new(config));
    }

    /// Routes `dst` out of `iface`.
    pub fn add_route(&mut self, dst: IpAddr, iface: usize) {
        self.routes.insert(dst, iface);
    }

    /// Routes everything else out of `iface`.
    pub fn set_default(&mut self, iface: usize) {
        self.default_route = Some(iface);
    }

    /// Copies packets to multicast address `group` onto `downstream` (never back out of the
    /// interface they came in on).
    pub fn add_group(&mut self, group: IpAddr, downstream: Vec<usize>) {
        self.groups.insert(group, downstream);
    }

    /// The ESP contexts, if the router has them.
    pub fn esp_node(&self) -> Option<&EspNode> {
        self.esp.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> RouterStats {
        self.stats
    }

    fn out_ifaces(&self, dst: IpAddr, from: usize) -> Vec<usize> {
        if let Some(down) = self.groups.get(&dst) {
            return down.iter().copied().filter(|&i| i != from).collect();
        }
        self.routes
            .get(&dst)
            .copied()
            .or(self.default_route)
            .into_iter()
            .collect()
    }
}

impl Node for Router {
    fn handle_packet(&mut self, now: Instant, iface: usize, mut packet: Vec<u8>, out: &mut Outbox) {
        let t = ess::Instant::from_ticks(now.ticks());
        let Ok((_, dst)) = addresses(&packet) else {
            self.stats.unroutable += 1;
            return;
        };
        match decrement_ttl(&mut packet) {
            Ok(0) | Err(_) => {
                self.stats.ttl_expired += 1;
                return;
            }
            Ok(_) => {}
        }
        if let Some(esp) = &mut self.esp
            && !esp.ingress(t, iface, &mut packet)
        {
            self.stats.esp_dropped += 1;
            return;
        }
        let outs = self.out_ifaces(dst, iface);
        if outs.is_empty() {
            self.stats.unroutable += 1;
            return;
        }
        let last = outs.len() - 1;
        let mut packet = Some(packet);
        for (n, o) in outs.into_iter().enumerate() {
            let mut copy = if n == last {
                packet.take().unwrap_or_default()
            } else {
                packet.clone().unwrap_or_default()
            };
            if let Some(esp) = &mut self.esp
                && !esp.egress(t, o, &mut copy)
            {
                self.stats.esp_dropped += 1;
                continue;
            }
            self.stats.forwarded += 1;
            out.send(o, copy);
        }
    }
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

impl Node for Host {
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

/// A node of an ESP network: a router or a host.
#[derive(Debug)]
pub enum EspSimNode {
    /// A router (boxed: its contexts make it much larger than a host).
    Router(Box<Router>),
    /// A host.
    Host(Host),
}

impl EspSimNode {
    /// A router node.
    pub fn from_router(router: Router) -> EspSimNode {
        EspSimNode::Router(Box::new(router))
    }

    /// A host node with nothing to send.
    pub fn new_host() -> EspSimNode {
        EspSimNode::Host(Host::new())
    }

    /// The router, if it is one.
    pub fn router(&self) -> Option<&Router> {
        match self {
            EspSimNode::Router(r) => Some(r),
            EspSimNode::Host(_) => None,
        }
    }

    /// The router, mutably.
    pub fn router_mut(&mut self) -> Option<&mut Router> {
        match self {
            EspSimNode::Router(r) => Some(r),
            EspSimNode::Host(_) => None,
        }
    }

    /// The host, if it is one.
    pub fn host(&self) -> Option<&Host> {
        match self {
            EspSimNode::Host(h) => Some(h),
            EspSimNode::Router(_) => None,
        }
    }

    /// The host, mutably.
    pub fn host_mut(&mut self) -> Option<&mut Host> {
        match self {
            EspSimNode::Host(h) => Some(h),
            EspSimNode::Router(_) => None,
        }
    }
}

impl Node for EspSimNode {
    fn handle_packet(&mut self, now: Instant, iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        match self {
            EspSimNode::Router(r) => r.handle_packet(now, iface, packet, out),
            EspSimNode::Host(h) => h.handle_packet(now, iface, packet, out),
        }
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        if let EspSimNode::Host(h) = self {
            h.handle_timeout(now, out);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            EspSimNode::Host(h) => h.poll_timeout(),
            EspSimNode::Router(_) => None,
        }
    }
}

/// Fills every router's routes to every host along least-delay paths (all-pairs: for
/// networks of up to a few hundred nodes).
pub fn install_host_routes(sim: &mut Simulator<EspSimNode>) {
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
            {
                router.add_route(addr_of(h).into(), iface);
            }
        }
    }
}

/// Turns every router in `routers` ESP-capable with [`node_config`] (stores of 2^`log2`).
///
/// # Errors
///
/// [`ConfigError`] if `log2` is out of range.
pub fn enable_esp(
    sim: &mut Simulator<EspSimNode>,
    routers: &[NodeId],
    log2: u8,
    seed: u64,
) -> Result<(), ConfigError> {
    for &r in routers {
        let config = node_config(r, sim.iface_count(r), log2, seed)?;
        if let Some(router) = sim.node_mut(r).router_mut() {
            router.enable_esp(config);
        }
    }
    Ok(())
}

/// Schedules `packet` at host `host` at `at`.
pub fn send_from(sim: &mut Simulator<EspSimNode>, host: NodeId, at: Instant, packet: Vec<u8>) {
    sim.act(host, |node, _, _| {
        if let Some(h) = node.host_mut() {
            h.send_at(at, packet);
        }
    });
}
