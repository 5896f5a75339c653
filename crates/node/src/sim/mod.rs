//! The node in the [`netsim`] simulator: the very code a daemon runs, behind
//! [`netsim::Node`], plus end hosts, so simulations, tests and reproductions exercise it.
//!
//! A simulator tick is a microsecond. [`SimNode`] is a router ([`Node`]) or an ESP-aware
//! end host ([`Host`]: sends packets at set times, reflects RB packets, keeps what
//! arrives). A SNAP end system is a router node too, with SNAP on ([`snap`]).
//!
//! Building a network: a [`Node`] needs its interface list when it is made, but the
//! simulator numbers a node's interfaces as its links are connected. So add routers first
//! ([`add_router`], [`add_router_with`], [`snap::add_router`], …: nodes with no
//! interfaces yet), connect the links, then [`fit_routers`] (the route installers call it)
//! rebuilds every router with one interface per link, keeping its config and static
//! routes. Node `id` has address [`addr_of`] `id`.
//!
//! * [`esp`]: ESP configs, host routes, the end [`Host`], and the paper's applications
//!   ([`esp::aggregate`], [`esp::paths`], [`esp::thinning`]), each speaking the built-in
//!   instructions or the same ones as microcode ([`esp::isa`]).
//! * [`snap`]: SNAP routers and hosts, routes between all nodes.
//!
//! Routers with ESP sweep their stores on a timer, so a simulator holding them is never
//! idle: run it to a time ([`netsim::Simulator::run_until`]), not until it stops.

pub mod esp;
pub mod snap;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::net::{IpAddr, Ipv4Addr};

use netsim::{NodeId, Outbox, Simulator};

pub use esp::Host;

use crate::config::{Config, ConfigError, IfaceConfig};
use crate::node::{Delivery, Node};

/// The address of simulated node `id`: 10.0.0.1 + id.
pub const fn addr_of(id: NodeId) -> Ipv4Addr {
    let [a, b, c, d] = 0x0A00_0001u32.wrapping_add(id.0 as u32).to_be_bytes();
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

/// Why a simulated network could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// A node's config did not validate.
    Node(ConfigError),
    /// An ESP store's config was out of range.
    Store(ess::ConfigError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Node(e) => write!(f, "node config: {e}"),
            BuildError::Store(e) => write!(f, "ESP store config: {e}"),
        }
    }
}

impl core::error::Error for BuildError {}

impl From<ConfigError> for BuildError {
    fn from(e: ConfigError) -> Self {
        BuildError::Node(e)
    }
}

impl From<ess::ConfigError> for BuildError {
    fn from(e: ess::ConfigError) -> Self {
        BuildError::Store(e)
    }
}

/// Adds a router at [`addr_of`] its id, built from `config` with `edit` applied (its
/// interfaces are set when it is fitted to its links, [`fit_routers`]).
///
/// # Errors
///
/// [`ConfigError`] if the edited config does not validate.
pub fn add_router_with(
    sim: &mut Simulator<SimNode>,
    edit: impl FnOnce(&mut Config),
) -> Result<NodeId, ConfigError> {
    let id = NodeId(sim.node_count());
    let mut config = Config::router(addr_of(id).into(), 0);
    edit(&mut config);
    let node = Node::new(config, sim.now())?;
    Ok(sim.add_node(SimNode::Router(Box::new(node))))
}

/// Adds a plain IP router (no ESP, no SNAP, ICMP on) at [`addr_of`] its id.
pub fn add_router(sim: &mut Simulator<SimNode>) -> NodeId {
    let id = NodeId(sim.node_count());
    let node = Node::new(Config::router(addr_of(id).into(), 0), sim.now());
    match node {
        Ok(n) => sim.add_node(SimNode::Router(Box::new(n))),
        // A plain router with one IPv4 address and no interfaces always validates.
        Err(_) => unreachable!("a plain router's config validates"),
    }
}

/// Rebuilds router `id` at the current time from its own config with `edit` applied and
/// one interface per link it has now (new ones of MTU 1500), keeping its static routes.
/// Nothing else carries over (multicast groups, ESP state, VM services registered by hand,
/// counters; the SNAP services its config declares are registered afresh): call it while
/// building the network, before adding groups. Does nothing if `id` is a host.
///
/// # Errors
///
/// [`ConfigError`] if the edited config does not validate.
pub fn rebuild_router(
    sim: &mut Simulator<SimNode>,
    id: NodeId,
    edit: impl FnOnce(&mut Config),
) -> Result<(), ConfigError> {
    let links = sim.iface_count(id);
    let now = sim.now();
    let Some(old) = sim.node(id).router() else {
        return Ok(());
    };
    let mut config = old.config().clone();
    config.ifaces.resize(links, IfaceConfig::new(1500));
    edit(&mut config);
    let mut node = Node::new(config, now)?;
    for (prefix, ifaces) in old.routes().statics() {
        let ifaces: Vec<usize> = ifaces.iter().map(|&i| usize::from(i)).collect();
        node.add_route_via(prefix, &ifaces);
    }
    *sim.node_mut(id) = SimNode::Router(Box::new(node));
    Ok(())
}

/// [`rebuild_router`]s every router whose interface count is not its link count.
///
/// # Errors
///
/// [`ConfigError`] if a config does not validate.
pub fn fit_routers(sim: &mut Simulator<SimNode>) -> Result<(), ConfigError> {
    for id in (0..sim.node_count()).map(NodeId) {
        let fits = sim
            .node(id)
            .router()
            .is_none_or(|r| r.config().ifaces.len() == sim.iface_count(id));
        if !fits {
            rebuild_router(sim, id, |_| ())?;
        }
    }
    Ok(())
}

/// Router `id` originates `packet` now ([`Node::send`]): a SNAP packet runs there first.
/// What it sends leaves at once. Does nothing if `id` is a host.
pub fn send_packet(sim: &mut Simulator<SimNode>, id: NodeId, packet: Vec<u8>) {
    sim.act(id, |node, now, out| {
        if let SimNode::Router(r) = node {
            r.send(now, packet);
            drain(r, now, out);
        }
    });
}

/// Runs the node's stream handlers (timed by a virtual meter: every reading one
/// nanosecond later, so a handler run costs 1 ns and admission admits), then hands
/// everything the node queued to the simulator.
fn drain(node: &mut Node, now: netsim::Instant, out: &mut Outbox) {
    if node.streams().is_some() {
        let mut t = 0u64;
        node.run_streams(now, &mut || {
            t += 1;
            t
        });
    }
    while let Some((i, f)) = node.poll_transmit_owned() {
        out.send(i, f);
    }
}

impl netsim::Node for Node {
    fn handle_packet(
        &mut self,
        now: netsim::Instant,
        iface: usize,
        mut frame: Vec<u8>,
        out: &mut Outbox,
    ) {
        if let Some(t) = Node::handle_packet(self, now, iface, &mut frame) {
            frame.truncate(t.range.end);
            frame.drain(..t.range.start);
            out.send(t.iface, frame);
        }
        drain(self, now, out);
    }

    fn handle_timeout(&mut self, now: netsim::Instant, out: &mut Outbox) {
        Node::handle_timeout(self, now);
        drain(self, now, out);
    }

    fn poll_timeout(&self) -> Option<netsim::Instant> {
        Node::poll_timeout(self)
    }
}

/// A node of a simulated network: a router or an end host.
#[derive(Debug)]
pub enum SimNode {
    /// A router (boxed: its contexts make it much larger than a host).
    Router(Box<Node>),
    /// An end host.
    Host(Host),
}

impl SimNode {
    /// The router, if it is one.
    pub fn router(&self) -> Option<&Node> {
        match self {
            SimNode::Router(r) => Some(r),
            SimNode::Host(_) => None,
        }
    }

    /// The router, mutably.
    pub fn router_mut(&mut self) -> Option<&mut Node> {
        match self {
            SimNode::Router(r) => Some(r),
            SimNode::Host(_) => None,
        }
    }

    /// The host, if it is one.
    pub fn host(&self) -> Option<&Host> {
        match self {
            SimNode::Host(h) => Some(h),
            SimNode::Router(_) => None,
        }
    }

    /// The host, mutably.
    pub fn host_mut(&mut self) -> Option<&mut Host> {
        match self {
            SimNode::Host(h) => Some(h),
            SimNode::Router(_) => None,
        }
    }

    /// What the router holds for itself (drained).
    pub fn take_deliveries(&mut self) -> Vec<Delivery> {
        let mut v = Vec::new();
        if let SimNode::Router(r) = self {
            while let Some(d) = r.poll_deliver() {
                v.push(d);
            }
        }
        v
    }
}

impl netsim::Node for SimNode {
    fn handle_packet(
        &mut self,
        now: netsim::Instant,
        iface: usize,
        packet: Vec<u8>,
        out: &mut Outbox,
    ) {
        match self {
            SimNode::Router(r) => netsim::Node::handle_packet(r.as_mut(), now, iface, packet, out),
            SimNode::Host(h) => netsim::Node::handle_packet(h, now, iface, packet, out),
        }
    }

    fn handle_timeout(&mut self, now: netsim::Instant, out: &mut Outbox) {
        match self {
            SimNode::Router(r) => netsim::Node::handle_timeout(r.as_mut(), now, out),
            SimNode::Host(h) => netsim::Node::handle_timeout(h, now, out),
        }
    }

    fn poll_timeout(&self) -> Option<netsim::Instant> {
        match self {
            SimNode::Router(r) => netsim::Node::poll_timeout(r.as_ref()),
            SimNode::Host(h) => netsim::Node::poll_timeout(h),
        }
    }
}
