//! SNAP routers and hosts for [`netsim`]: the real interpreter on simulated networks.
//!
//! Links carry raw IPv4 packets (one packet model for the whole workspace): a SNAP packet
//! is the payload of an IPv4 packet with protocol [`IP_PROTOCOL`] (254) whose source and
//! destination are the SNAP header's. A node strips the IP header, runs the SNAP packet and
//! wraps each packet it sends in a fresh one ([`encapsulate`], [`decapsulate`]).
//!
//! ```text
//!  IP ─► decapsulate ─► Vm::run ─► delivery ─► deliveries()
//!                          │
//!                          └─► transmits ─┬─ dst = this node ─► run here again (bounded)
//!                                         └─ route(dst) ─► encapsulate ─► interface
//! ```
//!
//! * [`SnapRouter`]: a SNAP-capable router runs every SNAP packet that reaches it (paper
//!   §III: a packet program is executed by every SNAP-enabled node) and sends each transmit
//!   out of the interface its routing table gives for the transmit's destination (a route
//!   per address, then a default). A [plain](SnapRouter::plain) router — partial
//!   deployment — forwards every IPv4 packet by destination, decrementing the TTL, SNAP or
//!   not; SNAP-capable routers forward other IP traffic the same way.
//! * [`SnapHost`]: an end system, and a SNAP node too: a packet it is told to send
//!   ([`send_at`](SnapHost::send_at)) runs there first, as the paper's ping does.
//! * [`SnapSimNode`]: either, for a [`Simulator`]; [`install_routes`] fills the routing
//!   tables along least-delay paths and tells each VM its interface count (its send limit).
//!
//! Choices the paper leaves open:
//!
//! * A transmit addressed to the node that sent it (`send` to `here`) runs there at once,
//!   as if it had arrived, with interface [`LOCAL_IFACE`]. Resource bound is conserved, so
//!   one arrival can cause at most its bound's worth of such runs; the node enforces that
//!   too and counts what it refused ([`SnapStats::local_refused`]).
//! * Packets that start at a node ([`send_at`](SnapHost::send_at),
//!   [`originate`](SnapRouter::originate)) also run with [`LOCAL_IFACE`] (`getifc` reads −1).
//! * The IPv4 TTL of a SNAP packet is [`TTL`] on every hop; the resource bound, not the TTL,
//!   limits SNAP packets, and only plain forwarding decrements the TTL.
//!
//! Simulated time is in microseconds ([`MS`], [`SECOND`]); VM services see the same ticks.
//!
//! # Example: Fig. 1's ping across a SNAP router
//!
//! ```
//! use netsim::{Instant, LinkConfig, Simulator};
//! use snap_vm::op::Op;
//! use snap_vm::program::Program;
//! use snap_vm::sim::{MS, add_host, add_router, addr_of, install_routes, send_from};
//! use snap_vm::value::{Value, Word};
//! use snap_vm::vm::Delivered;
//!
//! let mut sim = Simulator::new(1);
//! let (a, r, b) = (add_host(&mut sim), add_router(&mut sim), add_host(&mut sim));
//! sim.connect(a, r, LinkConfig::with_delay(MS));
//! sim.connect(r, b, LinkConfig::with_delay(MS));
//! install_routes(&mut sim);
//!
//! let mut ping = Program { src: addr_of(a), dst: addr_of(b), rb: 8, ..Program::default() };
//! ping.code = [(Op::Forw, 0), (Op::Bne, 5), (Op::Push, 1), (Op::Getsrc, 0), (Op::Forwto, 0), (Op::Pop, 0), (Op::Demux, 0)]
//!     .map(|(op, imm)| Word::new(op as u8, imm))
//!     .to_vec();
//! let payload = ping.heap_bytes(b"hi");
//! ping.stack = vec![payload, Value::int(7), Value::int(0)];
//! send_from(&mut sim, a, Instant::ZERO, ping.to_bytes()?);
//! sim.run(100);
//!
//! // Back at A after two hops out and two back; A, R, B, R and A ran it.
//! let (at, d) = &sim.node(a).deliveries()[0];
//! assert_eq!((at.ticks(), d.port, &d.value), (4 * MS, 7, &Delivered::Bytes(b"hi".to_vec())));
//! assert_eq!(sim.nodes().map(|n| n.stats().executed).sum::<u64>(), 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use netsim::{Instant, Node, NodeId, Outbox, Routes, Simulator};

pub use crate::ip::{FramingError, TTL, decapsulate, encapsulate};
use waist_ip::IpHeader;
use waist_ip::rewrite::decrement_ttl;

use crate::vm::{Delivery, End, Fault, NodeConfig, Vm};
use crate::wire::{IP_PROTOCOL, Packet};

/// Microseconds per millisecond, for readable simulated times.
pub const MS: u64 = 1_000;
/// Microseconds per second.
pub const SECOND: u64 = 1_000_000;
/// The interface packets that did not arrive on a link run with (`getifc` reads −1).
pub const LOCAL_IFACE: u32 = u32::MAX;
/// The MTU a node's VM assumes unless configured otherwise.
pub const DEFAULT_MTU: usize = 1500;

/// The address of simulated node `id`: 10.0.0.1 + id.
pub const fn addr_of(id: NodeId) -> [u8; 4] {
    0x0A00_0001u32.wrapping_add(id.0 as u32).to_be_bytes()
}

/// The node id of an address made by [`addr_of`] (`None` below 10.0.0.1).
pub fn id_of(addr: [u8; 4]) -> Option<NodeId> {
    u32::from_be_bytes(addr)
        .checked_sub(0x0A00_0001)
        .map(|i| NodeId(i as usize))
}

/// Counters of a SNAP node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapStats {
    /// IP packets that arrived on a link.
    pub received: u64,
    /// SNAP executions (packets that ran, from arrival or locally).
    pub executed: u64,
    /// Of those, transmits addressed to this node that ran here again.
    pub local_runs: u64,
    /// SNAP packets sent on an interface.
    pub transmitted: u64,
    /// IP packets forwarded unexecuted (non-SNAP traffic; everything at a plain router).
    pub forwarded: u64,
    /// Deliveries (`demux`).
    pub delivered: u64,
    /// Executions a safety rule stopped.
    pub faults: u64,
    /// SNAP packets dropped with no resource bound left.
    pub no_resource: u64,
    /// Packets that were not valid IPv4, or not valid SNAP.
    pub malformed: u64,
    /// Packets with no route (or, at a host, not addressed to it).
    pub unroutable: u64,
    /// Forwarded packets whose TTL ran out.
    pub ttl_expired: u64,
    /// SNAP packets too large to put in IPv4.
    pub too_big: u64,
    /// Local transmits refused because the arrival's resource bound was spent (only if the
    /// VM broke conservation of resource bound).
    pub local_refused: u64,
}

/// What routers and hosts share: the VM, the routing table and the records.
#[derive(Debug)]
struct Core {
    address: [u8; 4],
    vm: Option<Vm>,
    routes: BTreeMap<[u8; 4], usize>,
    default_route: Option<usize>,
    /// Whether IP packets for other nodes are forwarded (routers) or dropped (hosts).
    forwards: bool,
    deliveries: Vec<(Instant, Delivery)>,
    faults: Vec<(Instant, Fault)>,
    inbox: Vec<(Instant, Vec<u8>)>,
    stats: SnapStats,
}

impl Core {
    fn new(address: [u8; 4], vm: Option<Vm>, forwards: bool) -> Core {
        Core {
            address,
            vm,
            routes: BTreeMap::new(),
            default_route: None,
            forwards,
            deliveries: Vec::new(),
            faults: Vec::new(),
            inbox: Vec::new(),
            stats: SnapStats::default(),
        }
    }

    fn route(&self, dst: [u8; 4]) -> Option<usize> {
        self.routes.get(&dst).copied().or(self.default_route)
    }

    fn set_ifaces(&mut self, ifaces: u32) {
        if let Some(vm) = &mut self.vm {
            let config = NodeConfig {
                ifaces,
                ..vm.config().clone()
            };
            let services = core::mem::take(&mut vm.services);
            *vm = Vm::new(config);
            vm.services = services;
        }
    }

    fn handle_packet(&mut self, now: Instant, iface: usize, mut packet: Vec<u8>, out: &mut Outbox) {
        self.stats.received += 1;
        let Ok(ip) = IpHeader::parse(&packet) else {
            self.stats.malformed += 1;
            return;
        };
        if ip.protocol == IP_PROTOCOL
            && self.vm.is_some()
            && let Ok(payload) = crate::ip::payload_of(&ip, &packet)
        {
            let snap = payload.to_vec();
            self.execute(now, u32::try_from(iface).unwrap_or(LOCAL_IFACE), snap, out);
            return;
        }
        if ip.dst == core::net::IpAddr::from(self.address) {
            self.inbox.push((now, packet));
            return;
        }
        if !self.forwards {
            self.stats.unroutable += 1;
            return;
        }
        let core::net::IpAddr::V4(dst) = ip.dst else {
            self.stats.unroutable += 1;
            return;
        };
        match decrement_ttl(&mut packet) {
            Ok(0) | Err(_) => self.stats.ttl_expired += 1,
            Ok(_) => match self.route(dst.octets()) {
                Some(o) => {
                    self.stats.forwarded += 1;
                    out.send(o, packet);
                }
                None => self.stats.unroutable += 1,
            },
        }
    }

    /// Runs `snap` (arrived on `iface`) and everything it sends to this node.
    fn execute(&mut self, now: Instant, iface: u32, snap: Vec<u8>, out: &mut Outbox) {
        let Some(mut vm) = self.vm.take() else {
            return;
        };
        let mut queue = VecDeque::from([(iface, snap)]);
        // Local runs the first packet's resource bound pays for (set once it has run).
        let mut budget: Option<u32> = None;
        while let Some((ifc, packet)) = queue.pop_front() {
            let o = vm.run(now.ticks(), ifc, packet);
            match o.end {
                End::Malformed(_) => {
                    self.stats.malformed += 1;
                    continue;
                }
                End::NoResource => {
                    self.stats.no_resource += 1;
                    continue;
                }
                End::Fault(f) => {
                    self.stats.faults += 1;
                    self.faults.push((now, f));
                }
                End::Exit | End::Forwarded | End::Delivered => {}
            }
            self.stats.executed += 1;
            let budget = budget.get_or_insert(u32::from(o.rb_in).saturating_sub(1));
            if let Some(d) = o.delivery {
                self.stats.delivered += 1;
                self.deliveries.push((now, d));
            }
            for t in o.transmits {
                if t.dst != self.address {
                    self.send_snap(t.dst, &t.packet, out);
                    continue;
                }
                let rb = Packet::new_checked(&t.packet[..]).map_or(0, |p| p.rb());
                if rb == 0 {
                    self.stats.no_resource += 1;
                } else if *budget == 0 {
                    self.stats.local_refused += 1;
                } else {
                    *budget -= 1;
                    self.stats.local_runs += 1;
                    queue.push_back((LOCAL_IFACE, t.packet));
                }
            }
        }
        self.vm = Some(vm);
    }

    fn send_snap(&mut self, dst: [u8; 4], snap: &[u8], out: &mut Outbox) {
        let Some(iface) = self.route(dst) else {
            self.stats.unroutable += 1;
            return;
        };
        match encapsulate(snap) {
            Ok(ip) => {
                self.stats.transmitted += 1;
                out.send(iface, ip);
            }
            Err(_) => self.stats.too_big += 1,
        }
    }
}

/// The accessors routers and hosts share, written once.
macro_rules! shared_accessors {
    () => {
        /// The node's address.
        pub fn address(&self) -> [u8; 4] {
            self.core.address
        }

        /// Routes packets for `dst` out of `iface`.
        pub fn add_route(&mut self, dst: [u8; 4], iface: usize) {
            self.core.routes.insert(dst, iface);
        }

        /// Routes packets with no route of their own out of `iface`.
        pub fn set_default(&mut self, iface: usize) {
            self.core.default_route = Some(iface);
        }

        /// The interface packets for `dst` leave on, if any.
        pub fn route(&self, dst: [u8; 4]) -> Option<usize> {
            self.core.route(dst)
        }

        /// Tells the VM how many interfaces the node has (its send limit), keeping its
        /// services. [`install_routes`] calls this with the node's link count.
        pub fn set_ifaces(&mut self, ifaces: u32) {
            self.core.set_ifaces(ifaces);
        }

        /// What SNAP packets delivered here (`demux`), with the times.
        pub fn deliveries(&self) -> &[(Instant, Delivery)] {
            &self.core.deliveries
        }

        /// Takes the deliveries so far.
        pub fn take_deliveries(&mut self) -> Vec<(Instant, Delivery)> {
            core::mem::take(&mut self.core.deliveries)
        }

        /// The faults executions here stopped with, with the times.
        pub fn faults(&self) -> &[(Instant, Fault)] {
            &self.core.faults
        }

        /// Non-SNAP IP packets addressed to this node (whole, with arrival times).
        pub fn inbox(&self) -> &[(Instant, Vec<u8>)] {
            &self.core.inbox
        }

        /// Counters.
        pub fn stats(&self) -> SnapStats {
            self.core.stats
        }

        /// Runs `snap` here at `now` as a packet starting at this node (interface
        /// [`LOCAL_IFACE`]); what it sends goes into `out`. Use it from
        /// [`Simulator::act`]. A plain router ignores it.
        pub fn originate(&mut self, now: Instant, snap: Vec<u8>, out: &mut Outbox) {
            self.core.execute(now, LOCAL_IFACE, snap, out);
        }
    };
}

/// A simulated router, SNAP-capable or plain. See the [module docs](self).
#[derive(Debug)]
pub struct SnapRouter {
    core: Core,
}

impl SnapRouter {
    /// A SNAP-capable router whose VM is configured by `config` (its address is the
    /// router's).
    pub fn new(config: NodeConfig) -> SnapRouter {
        SnapRouter {
            core: Core::new(config.address, Some(Vm::new(config)), true),
        }
    }

    /// A router without SNAP (partial deployment): it forwards SNAP packets like any other.
    pub fn plain(address: [u8; 4]) -> SnapRouter {
        SnapRouter {
            core: Core::new(address, None, true),
        }
    }

    /// Whether it runs SNAP.
    pub fn is_snap(&self) -> bool {
        self.core.vm.is_some()
    }

    /// The VM (to register services), if it runs SNAP.
    pub fn vm(&self) -> Option<&Vm> {
        self.core.vm.as_ref()
    }

    /// The VM, mutably.
    pub fn vm_mut(&mut self) -> Option<&mut Vm> {
        self.core.vm.as_mut()
    }

    shared_accessors!();
}

impl Node for SnapRouter {
    fn handle_packet(&mut self, now: Instant, iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        self.core.handle_packet(now, iface, packet, out);
    }
}

/// A simulated end system running SNAP. See the [module docs](self).
#[derive(Debug)]
pub struct SnapHost {
    core: Core,
    /// SNAP packets to start, each at its time (sorted, latest first).
    pending: Vec<(Instant, Vec<u8>)>,
}

impl SnapHost {
    /// A host at `address` with one interface (its default route), MTU [`DEFAULT_MTU`].
    pub fn new(address: [u8; 4]) -> SnapHost {
        SnapHost::with_config(NodeConfig {
            address,
            ifaces: 1,
            mtu: DEFAULT_MTU,
        })
    }

    /// A host whose VM is configured by `config`; its default route is interface 0.
    pub fn with_config(config: NodeConfig) -> SnapHost {
        let mut core = Core::new(config.address, Some(Vm::new(config)), false);
        core.default_route = Some(0);
        SnapHost {
            core,
            pending: Vec::new(),
        }
    }

    /// The VM (to register services).
    pub fn vm(&self) -> Option<&Vm> {
        self.core.vm.as_ref()
    }

    /// The VM, mutably.
    pub fn vm_mut(&mut self) -> Option<&mut Vm> {
        self.core.vm.as_mut()
    }

    /// Starts the SNAP packet `snap` here at `at` (or when the host next runs, if later):
    /// it executes here first, then goes where it sends itself.
    pub fn send_at(&mut self, at: Instant, snap: Vec<u8>) {
        let pos = self.pending.partition_point(|(t, _)| *t > at);
        self.pending.insert(pos, (at, snap));
    }

    shared_accessors!();
}

impl Node for SnapHost {
    fn handle_packet(&mut self, now: Instant, iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        self.core.handle_packet(now, iface, packet, out);
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        while self.pending.last().is_some_and(|(t, _)| *t <= now) {
            if let Some((_, snap)) = self.pending.pop() {
                self.core.execute(now, LOCAL_IFACE, snap, out);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending.last().map(|(t, _)| *t)
    }
}

/// A node of a SNAP network: a router or a host.
#[derive(Debug)]
pub enum SnapSimNode {
    /// A router.
    Router(SnapRouter),
    /// A host.
    Host(SnapHost),
}

impl SnapSimNode {
    fn core(&self) -> &Core {
        match self {
            SnapSimNode::Router(r) => &r.core,
            SnapSimNode::Host(h) => &h.core,
        }
    }

    fn core_mut(&mut self) -> &mut Core {
        match self {
            SnapSimNode::Router(r) => &mut r.core,
            SnapSimNode::Host(h) => &mut h.core,
        }
    }

    /// The router, if it is one.
    pub fn router(&self) -> Option<&SnapRouter> {
        match self {
            SnapSimNode::Router(r) => Some(r),
            SnapSimNode::Host(_) => None,
        }
    }

    /// The router, mutably.
    pub fn router_mut(&mut self) -> Option<&mut SnapRouter> {
        match self {
            SnapSimNode::Router(r) => Some(r),
            SnapSimNode::Host(_) => None,
        }
    }

    /// The host, if it is one.
    pub fn host(&self) -> Option<&SnapHost> {
        match self {
            SnapSimNode::Host(h) => Some(h),
            SnapSimNode::Router(_) => None,
        }
    }

    /// The host, mutably.
    pub fn host_mut(&mut self) -> Option<&mut SnapHost> {
        match self {
            SnapSimNode::Host(h) => Some(h),
            SnapSimNode::Router(_) => None,
        }
    }

    /// The node's address.
    pub fn address(&self) -> [u8; 4] {
        self.core().address
    }

    /// Its VM, unless it is a plain router.
    pub fn vm(&self) -> Option<&Vm> {
        self.core().vm.as_ref()
    }

    /// Its VM, mutably.
    pub fn vm_mut(&mut self) -> Option<&mut Vm> {
        self.core_mut().vm.as_mut()
    }

    /// What was delivered here.
    pub fn deliveries(&self) -> &[(Instant, Delivery)] {
        &self.core().deliveries
    }

    /// The faults executions here stopped with.
    pub fn faults(&self) -> &[(Instant, Fault)] {
        &self.core().faults
    }

    /// Counters.
    pub fn stats(&self) -> SnapStats {
        self.core().stats
    }
}

impl Node for SnapSimNode {
    fn handle_packet(&mut self, now: Instant, iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        self.core_mut().handle_packet(now, iface, packet, out);
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        if let SnapSimNode::Host(h) = self {
            h.handle_timeout(now, out);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            SnapSimNode::Host(h) => h.poll_timeout(),
            SnapSimNode::Router(_) => None,
        }
    }
}

/// Adds a SNAP-capable router at address [`addr_of`] its id, with MTU [`DEFAULT_MTU`].
pub fn add_router(sim: &mut Simulator<SnapSimNode>) -> NodeId {
    let address = addr_of(NodeId(sim.node_count()));
    sim.add_node(SnapSimNode::Router(SnapRouter::new(NodeConfig {
        address,
        ifaces: 1,
        mtu: DEFAULT_MTU,
    })))
}

/// Adds a plain (non-SNAP) router at address [`addr_of`] its id.
pub fn add_plain_router(sim: &mut Simulator<SnapSimNode>) -> NodeId {
    let address = addr_of(NodeId(sim.node_count()));
    sim.add_node(SnapSimNode::Router(SnapRouter::plain(address)))
}

/// Adds a host at address [`addr_of`] its id.
pub fn add_host(sim: &mut Simulator<SnapSimNode>) -> NodeId {
    let address = addr_of(NodeId(sim.node_count()));
    sim.add_node(SnapSimNode::Host(SnapHost::new(address)))
}

/// Routes every node's packets to every other node's address along least-delay paths
/// ([`Routes::shortest`]) and sets each VM's interface count to the node's link count. Call
/// it once the links are connected (all-pairs: for networks of up to a few hundred nodes).
pub fn install_routes(sim: &mut Simulator<SnapSimNode>) {
    let routes = Routes::shortest(sim);
    let addresses: Vec<[u8; 4]> = sim.nodes().map(SnapSimNode::address).collect();
    for from in (0..sim.node_count()).map(NodeId) {
        let ifaces = u32::try_from(sim.iface_count(from)).unwrap_or(u32::MAX);
        let core = sim.node_mut(from).core_mut();
        core.set_ifaces(ifaces);
        for (to, &addr) in addresses.iter().enumerate() {
            if let Some(iface) = routes.next_hop(from, NodeId(to)) {
                core.routes.insert(addr, iface);
            }
        }
    }
}

/// Schedules the SNAP packet `snap` to start at host `host` at `at` (nothing if `host` is
/// a router).
pub fn send_from(sim: &mut Simulator<SnapSimNode>, host: NodeId, at: Instant, snap: Vec<u8>) {
    sim.act(host, |node, _, _| {
        if let Some(h) = node.host_mut() {
            h.send_at(at, snap);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_of_nodes() {
        assert_eq!(addr_of(NodeId(0)), [10, 0, 0, 1]);
        assert_eq!(addr_of(NodeId(256)), [10, 0, 1, 1]);
        assert_eq!(id_of([10, 0, 1, 1]), Some(NodeId(256)));
        assert_eq!(id_of([9, 0, 0, 0]), None);
    }
}
