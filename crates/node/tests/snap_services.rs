//! SNAP services declared in the node's config (`Config::snap_ess`): `Node::new` registers
//! the ESS trio (`ess.get`, `ess.put`, `ess.count`), so a simulated router has them exactly
//! as the daemon does, and keeps them when the simulator rebuilds it to fit its links. A
//! router without them faults a program that calls one.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use ess::HashKey;
use netsim::{LinkConfig, NodeId, Simulator};
use snap_vm::ip::encapsulate;
use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::value::{Value, Word};
use snap_vm::vm::Delivered;
use waist_node::sim::snap::{add_host, install_routes, run};
use waist_node::sim::{SimNode, add_router_with, send_packet};
use waist_node::{Config, ConfigError, Delivery, Instant, MILLIS, Node, SnapEss};

const PORT: i32 = 7;

fn addr_of(id: NodeId) -> [u8; 4] {
    waist_node::sim::addr_of(id).octets()
}

/// SNAP host A and SNAP router R on one link, R built with `ess` as its SNAP services.
/// Routes are installed after R is added, which rebuilds R from its config.
fn net(ess: Option<SnapEss>) -> (Simulator<SimNode>, NodeId, NodeId) {
    let mut sim = Simulator::new(1);
    let a = add_host(&mut sim).unwrap();
    let r = add_router_with(&mut sim, |c| {
        c.snap = true;
        c.snap_ess = ess;
    })
    .unwrap();
    sim.connect(a, r, LinkConfig::with_delay(MILLIS));
    install_routes(&mut sim).unwrap();
    (sim, a, r)
}

/// A program from `src` to `dst` that counts under tag 5 there (`calls "ess.count"`) and
/// brings the count back to `src`'s port [`PORT`]. Stack `[0]`: the flag says "on the way
/// back".
fn count_there(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut p = Program {
        src,
        dst,
        rb: 8,
        code: [
            (Op::Forw, 0),   // to dst; back at src, on
            (Op::Bne, 6),    // back (flag 1): to the demux
            (Op::Push, 5),   // the tag
            (Op::Calls, 0),  // ess.count: the tag's count, bumped
            (Op::Push, 1),   // the flag
            (Op::Getsrc, 0), //
            (Op::Forwto, 0), // home
            (Op::Push, PORT),
            (Op::Demux, 0),
        ]
        .map(|(op, imm)| Word::new(op as u8, imm))
        .to_vec(),
        ..Program::default()
    };
    p.heap_bytes(b"ess.count");
    p.stack = vec![Value::int(0)];
    p.to_bytes().unwrap()
}

/// Sends [`count_there`] from `a` to `r` and runs the network until it falls idle: what
/// came back to `a`.
fn ask(sim: &mut Simulator<SimNode>, a: NodeId, r: NodeId) -> Vec<Delivered> {
    let snap = count_there(addr_of(a), addr_of(r));
    send_packet(sim, a, encapsulate(&snap).unwrap());
    run(sim, 1_000)
        .into_iter()
        .filter(|(_, at, _)| *at == a)
        .filter_map(|(_, _, d)| match d {
            Delivery::Snap(d) if d.port == PORT => Some(d.value),
            _ => None,
        })
        .collect()
}

#[test]
fn a_simulated_router_with_snap_ess_answers_a_program_calling_it() {
    let ess = SnapEss::for_rate(1_000, HashKey::from_seed(3)).unwrap();
    let (mut sim, a, r) = net(Some(ess));
    // One store behind the three services, kept across calls: the count goes up.
    assert_eq!(ask(&mut sim, a, r), vec![Delivered::Int(1)]);
    assert_eq!(ask(&mut sim, a, r), vec![Delivered::Int(2)]);
    let st = sim.node(r).router().unwrap().stats();
    assert_eq!((st.snap_executed, st.dropped.snap), (2, 0));
}

#[test]
fn a_simulated_router_without_snap_ess_does_not() {
    let (mut sim, a, r) = net(None);
    assert_eq!(ask(&mut sim, a, r), vec![]);
    // The run at R faulted (no such service): dropped there, nothing sent back.
    let st = sim.node(r).router().unwrap().stats();
    assert_eq!(st.dropped.snap, 1);
}

#[test]
fn snap_services_need_snap() {
    let mut c = Config::router([10, 0, 0, 1].into(), 1);
    c.snap_ess = Some(SnapEss::for_rate(1_000, HashKey::from_seed(3)).unwrap());
    assert_eq!(
        Node::new(c.clone(), Instant::ZERO).err(),
        Some(ConfigError::SnapServicesWithoutSnap)
    );
    c.snap = true;
    assert!(Node::new(c, Instant::ZERO).is_ok());
}
