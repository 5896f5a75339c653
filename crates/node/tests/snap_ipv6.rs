//! SNAP over IPv6 in the simulator: the paper's Fig. 1 ping between two IPv6-only SNAP
//! end systems, across a plain router (which forwards it as IPv6, decrementing the hop
//! limit) and a SNAP router (which runs it: the forwarding fast path in its IPv6 frame),
//! out and back; and a ping to the SNAP router itself, answered by it. Next header 254 on
//! every link.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{IpAddr, Ipv6Addr};

use netsim::{Instant, LinkConfig, NodeId, Simulator};
use snap_vm::vm::Delivered;
use waist_ip::{IpHeader, Version};
use waist_node::host::SnapPinger;
use waist_node::routes::prefix;
use waist_node::sim::{SimNode, send_packet};
use waist_node::{Config, Delivery, Node};

fn six(last: u16) -> IpAddr {
    Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, last).into()
}

/// A ─ R1 (plain) ─ R2 (SNAP) ─ B, IPv6 addresses only: A fd00::1, R1 fd00::11, R2
/// fd00::12, B fd00::2. Interface 0 leads toward A, 1 toward B.
fn line() -> Simulator<SimNode> {
    let mut sim = Simulator::new(5);
    let nodes = [
        (1, true, 1),
        (0x11, false, 2),
        (0x12, true, 2),
        (2, true, 1),
    ];
    for (last, snap, ifaces) in nodes {
        let mut c = Config::router(six(last), ifaces);
        c.snap = snap;
        sim.add_node(SimNode::Router(Box::new(
            Node::new(c, waist_node::Instant::ZERO).unwrap(),
        )));
    }
    for i in 0..3 {
        sim.connect(NodeId(i), NodeId(i + 1), LinkConfig::with_delay(1_000));
    }
    let route = |sim: &mut Simulator<SimNode>, n: usize, to: IpAddr, len: u8, iface: usize| {
        let node = sim.node_mut(NodeId(n)).router_mut().unwrap();
        assert!(node.add_route(prefix(to, len).unwrap(), iface));
    };
    // The ends send everything out of their one link; the routers know both ends.
    let any = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    route(&mut sim, 0, any, 0, 0);
    route(&mut sim, 3, any, 0, 0);
    for r in [1, 2] {
        route(&mut sim, r, six(1), 128, 0);
        route(&mut sim, r, six(2), 128, 1);
        route(&mut sim, r, six(0x12), 128, 1);
    }
    sim
}

fn deliveries(sim: &mut Simulator<SimNode>, n: usize) -> Vec<snap_vm::vm::Delivery> {
    sim.node_mut(NodeId(n))
        .take_deliveries()
        .into_iter()
        .filter_map(|d| match d {
            Delivery::Snap(d) => Some(d),
            _ => None,
        })
        .collect()
}

#[test]
fn an_ipv6_snap_ping_crosses_a_plain_and_a_snap_router_and_returns() {
    let mut sim = line();
    let pinger = SnapPinger::new(six(1), 7);
    let request = pinger
        .request(six(2), 1, waist_node::Instant::ZERO, 16)
        .unwrap();
    let h = IpHeader::parse(&request).unwrap();
    assert_eq!((h.version, h.protocol), (Version::V6, 254));
    send_packet(&mut sim, NodeId(0), request);
    sim.run_until(Instant::from_ticks(100_000));

    let home = deliveries(&mut sim, 0);
    assert_eq!(home.len(), 1, "{home:?}");
    let d = &home[0];
    assert_eq!((d.port, d.source()), (7, six(1)));
    let Delivered::Bytes(payload) = &d.value else {
        panic!("{d:?}")
    };
    assert_eq!(&payload[..4], &1u32.to_be_bytes());
    assert_eq!(
        &payload[12..],
        &Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2).octets()
    );
    // A ran it twice (sending, delivering), B once, R2 once each way; R1 forwarded it as
    // plain IPv6 both ways.
    let stats = |n: usize| sim.node(NodeId(n)).router().unwrap().stats();
    let runs: Vec<u64> = (0..4).map(|n| stats(n).snap_executed).collect();
    assert_eq!(runs, [2, 0, 2, 1]);
    assert_eq!(stats(1).forwarded, 2, "{:?}", stats(1));
    for n in 0..4 {
        assert!(stats(n).balanced(), "node {n}: {:?}", stats(n));
    }
}

#[test]
fn the_snap_router_answers_an_ipv6_ping_to_itself() {
    let mut sim = line();
    let pinger = SnapPinger::new(six(1), 9);
    let request = pinger
        .request(six(0x12), 4, waist_node::Instant::ZERO, 8)
        .unwrap();
    send_packet(&mut sim, NodeId(0), request);
    sim.run_until(Instant::from_ticks(100_000));
    let home = deliveries(&mut sim, 0);
    assert_eq!(home.len(), 1, "{home:?}");
    assert_eq!((home[0].port, home[0].source()), (9, six(1)));
    let runs: Vec<u64> = (0..4)
        .map(|n| sim.node(NodeId(n)).router().unwrap().stats().snap_executed)
        .collect();
    assert_eq!(runs, [2, 0, 1, 0], "R2 turned it round; B never saw it");
}
