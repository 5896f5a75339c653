//! SNAP on simulated networks of [`Node`](crate::Node)s: the interpreter at every SNAP node, IPv4
//! protocol 254 (or IPv6 next header 254) on the links (`snap_vm::ip`), plain routers in
//! between. The helpers here number nodes by IPv4 address ([`addr_of`]); IPv6 networks are
//! built from [`Node`](crate::Node)s directly (`tests/snap_ipv6.rs`).
//!
//! * A SNAP router ([`add_router`]) is a node with `snap` on: every SNAP packet that
//!   reaches it runs there (SNAP §III), whatever its destination. A plain router
//!   ([`add_router`](super::add_router)) forwards SNAP packets as IP, decrementing the TTL
//!   (partial deployment).
//! * A SNAP host ([`add_host`]) is a node with `snap` on too, with a default route out of
//!   its first interface. A packet it originates ([`send_packet`](super::send_packet))
//!   runs there first, with interface [`LOCAL_IFACE`](crate::snap::LOCAL_IFACE), as the
//!   paper's ping does.
//! * [`install_routes`] fits every router to its links and routes every node's address
//!   along least-delay paths; [`run`] runs the network and says what was delivered where
//!   and when.
//!
//! # Example: Fig. 1's ping across a SNAP router
//!
//! ```
//! use netsim::{LinkConfig, Simulator};
//! use snap_vm::op::Op;
//! use snap_vm::program::Program;
//! use snap_vm::value::{Value, Word};
//! use snap_vm::vm::Delivered;
//! use waist_node::Delivery;
//! use waist_node::sim::{addr_of, send_packet, snap};
//!
//! let mut sim = Simulator::new(1);
//! let (a, r, b) = (snap::add_host(&mut sim)?, snap::add_router(&mut sim)?, snap::add_host(&mut sim)?);
//! sim.connect(a, r, LinkConfig::with_delay(1_000));
//! sim.connect(r, b, LinkConfig::with_delay(1_000));
//! snap::install_routes(&mut sim)?;
//!
//! let (src, dst) = (addr_of(a).octets(), addr_of(b).octets());
//! let mut ping = Program { src, dst, rb: 8, ..Program::default() };
//! ping.code = [(Op::Forw, 0), (Op::Bne, 5), (Op::Push, 1), (Op::Getsrc, 0), (Op::Forwto, 0), (Op::Pop, 0), (Op::Demux, 0)]
//!     .map(|(op, imm)| Word::new(op as u8, imm))
//!     .to_vec();
//! let payload = ping.heap_bytes(b"hi");
//! ping.stack = vec![payload, Value::int(7), Value::int(0)];
//! send_packet(&mut sim, a, snap_vm::ip::encapsulate(&ping.to_bytes()?)?);
//! let got = snap::run(&mut sim, 100);
//!
//! // Back at A after two hops out and two back; A, R, B, R and A ran it.
//! let (at, node, Delivery::Snap(d)) = &got[0] else { panic!("{got:?}") };
//! assert_eq!((*node, at.ticks(), d.port, &d.value), (a, 4_000, 7, &Delivered::Bytes(b"hi".to_vec())));
//! let runs: u64 = sim.nodes().filter_map(|n| n.router()).map(|n| n.stats().snap_executed).sum();
//! assert_eq!(runs, 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::vec::Vec;

use netsim::{Instant, NodeId, Routes, Simulator};

use super::{SimNode, add_router_with, addr_of, fit_routers};
use crate::config::{ConfigError, IfaceConfig};
use crate::node::Delivery;
use crate::routes::prefix;

/// Adds a SNAP router at [`addr_of`] its id.
///
/// # Errors
///
/// [`ConfigError`] never in practice (the config is fixed); kept for the builder's sake.
pub fn add_router(sim: &mut Simulator<SimNode>) -> Result<NodeId, ConfigError> {
    add_router_with(sim, |c| c.snap = true)
}

/// Adds a SNAP host at [`addr_of`] its id: a SNAP node with one interface (more if it gets
/// more links, [`fit_routers`]) and its default route out of the first.
///
/// # Errors
///
/// [`ConfigError`] never in practice (the config is fixed).
pub fn add_host(sim: &mut Simulator<SimNode>) -> Result<NodeId, ConfigError> {
    let id = add_router_with(sim, |c| {
        c.snap = true;
        c.ifaces = alloc::vec![IfaceConfig::new(1500)];
    })?;
    if let (Some(n), Ok(p)) = (
        sim.node_mut(id).router_mut(),
        prefix([0, 0, 0, 0].into(), 0),
    ) {
        n.add_route(p, 0);
    }
    Ok(id)
}

/// Fits every router to its links ([`fit_routers`]: each VM's interface count, its send
/// limit, is then its link count) and routes every other node's address (/32) along
/// least-delay paths ([`Routes::shortest`]; all-pairs: for networks of up to a few hundred
/// nodes).
///
/// # Errors
///
/// [`ConfigError`] if a router's config does not validate.
pub fn install_routes(sim: &mut Simulator<SimNode>) -> Result<(), ConfigError> {
    fit_routers(sim)?;
    let routes = Routes::shortest(sim);
    let n = sim.node_count();
    for from in (0..n).map(NodeId) {
        for to in (0..n).map(NodeId) {
            if let Some(iface) = routes.next_hop(from, to)
                && let Some(r) = sim.node_mut(from).router_mut()
                && let Ok(p) = prefix(addr_of(to).into(), 32)
            {
                r.add_route(p, iface);
            }
        }
    }
    Ok(())
}

/// Runs up to `max_events` events ([`Simulator::step`]) and returns what the router nodes
/// delivered ([`Node::poll_deliver`](crate::Node::poll_deliver)), in order, each with the
/// node and the time. For networks without timers (no ESP, no routing protocol), which
/// fall idle; it looks at every node after every event, so keep them small.
pub fn run(sim: &mut Simulator<SimNode>, max_events: u64) -> Vec<(Instant, NodeId, Delivery)> {
    let mut got = Vec::new();
    let mut collect = |sim: &mut Simulator<SimNode>, now: Instant| {
        for id in (0..sim.node_count()).map(NodeId) {
            for d in sim.node_mut(id).take_deliveries() {
                got.push((now, id, d));
            }
        }
    };
    // What nodes delivered before (a packet a node originated to itself).
    collect(sim, sim.now());
    for _ in 0..max_events {
        let Some(now) = sim.step() else {
            break;
        };
        collect(sim, now);
    }
    got
}
