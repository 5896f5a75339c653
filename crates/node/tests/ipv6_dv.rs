//! Distance vector over IPv6-only routers: three routers in a line, each named by a 32-bit
//! router id that is none of its addresses (as OSPF and BIRD name IPv6 routers), learn the
//! IPv6 prefixes the ends originate, and an IPv6 packet crosses them end to end: by the
//! longest-prefix match, under a threaded label, and with an ICMPv6 error coming back when
//! its hop limit runs out.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{IpAddr, Ipv6Addr};

use fastpath::dv::Dest;
use fastpath::lpm::{IpPrefix, Prefix6};
use fastpath::threaded::{Label, LabelKind};
use netsim::{Instant, LinkConfig, NodeId, Simulator};
use waist_ip::icmp::PROTOCOL_ICMPV6;
use waist_ip::{IpHeader, emit_header};
use waist_node::frame::emit_label_frame;
use waist_node::sim::{Host, SimNode};
use waist_node::{Config, IfaceConfig, Node};

const SECOND: u64 = 1_000_000;

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn p6(s: &str, len: u8) -> Prefix6 {
    Prefix6::new(v6(s).octets(), len).unwrap()
}

/// Routers 0, 1, 2 in a line (IPv6 addresses only, router ids 1.1.1.1 …), host 3 on
/// router 0's LAN fd00:a::/64, host 4 on router 2's LAN fd00:c::/64.
fn line() -> Simulator<SimNode> {
    let mut sim = Simulator::new(11);
    for i in 0..3u8 {
        let addr = IpAddr::V6(v6(&format!("fd00::{}", i + 1)));
        // Interfaces: to the left router, to the right router, to the LAN host.
        let links = [i > 0, i < 2, i != 1];
        let ifaces = links.iter().filter(|&&l| l).count();
        let mut c = Config::router(addr, ifaces);
        c.dv = Some(fastpath::dv::Config::new(u32::from_be_bytes([i + 1; 4])));
        let routers = links[..2].iter().filter(|&&l| l).count();
        for f in c.ifaces.iter_mut().take(routers) {
            *f = IfaceConfig::new(1500).with_dv(1);
        }
        match i {
            0 => c.originate.push(IpPrefix::V6(p6("fd00:a::", 64))),
            2 => c.originate.push(IpPrefix::V6(p6("fd00:c::", 64))),
            _ => {}
        }
        let node = Node::new(c, waist_node::Instant::ZERO).unwrap();
        sim.add_node(SimNode::Router(Box::new(node)));
    }
    sim.add_node(SimNode::Host(Host::new()));
    sim.add_node(SimNode::Host(Host::new()));
    // Router 0: iface 0 to router 1, iface 1 to host 3. Router 1: 0 to router 0, 1 to
    // router 2. Router 2: 0 to router 1, 1 to host 4.
    sim.connect(NodeId(0), NodeId(1), LinkConfig::with_delay(100));
    sim.connect(NodeId(1), NodeId(2), LinkConfig::with_delay(100));
    sim.connect(NodeId(0), NodeId(3), LinkConfig::with_delay(100));
    sim.connect(NodeId(2), NodeId(4), LinkConfig::with_delay(100));
    let lans = [(0, "fd00:a::"), (2, "fd00:c::")];
    for (r, lan) in lans {
        let node = sim.node_mut(NodeId(r)).router_mut().unwrap();
        assert!(node.add_route(IpPrefix::V6(p6(lan, 64)), 1));
    }
    sim
}

fn udp6(src: &str, dst: &str, hop_limit: u8) -> Vec<u8> {
    let mut p = vec![0u8; 40 + 8];
    emit_header(&mut p, v6(src).into(), v6(dst).into(), 17, hop_limit, 8).unwrap();
    p
}

fn send(sim: &mut Simulator<SimNode>, host: usize, at: u64, p: Vec<u8>) {
    sim.act(NodeId(host), |node, _, _| {
        node.host_mut().unwrap().send_at(Instant::from_ticks(at), p)
    });
}

#[test]
fn ipv6_only_routers_learn_prefixes_and_deliver() {
    let mut sim = line();
    let start = 60 * SECOND;
    sim.run_until(Instant::from_ticks(start));
    // Every router learned both LANs (the ends their far one, through the middle).
    let far = IpPrefix::V6(p6("fd00:c::", 64));
    let near = IpPrefix::V6(p6("fd00:a::", 64));
    let r0 = sim.node(NodeId(0)).router().unwrap();
    assert!(r0.routes().learned().any(|(p, i)| p == far && i == 0));
    let r1 = sim.node(NodeId(1)).router().unwrap();
    assert!(r1.routes().learned().any(|(p, i)| p == far && i == 1));
    assert!(r1.routes().learned().any(|(p, i)| p == near && i == 0));
    assert_eq!(r0.routes().route(v6("fd00:c::9").into()), Some(0));
    // Router 0's index for the far LAN, as a host that asked would put it in its label.
    let index = r0.dv().unwrap().index_of_dest(Dest::V6(p6("fd00:c::", 64)));

    // Plain: routed by each router's IPv6 longest-prefix match.
    send(
        &mut sim,
        3,
        start + 1_000,
        udp6("fd00:a::5", "fd00:c::9", 64),
    );
    // Labelled.
    let label = Label {
        kind: LabelKind::Threaded,
        hop_limit: 16,
        index: index.unwrap(),
    };
    let packet = udp6("fd00:a::5", "fd00:c::9", 64);
    let mut frame = vec![0u8; 5 + packet.len()];
    let n = emit_label_frame(label, &packet, &mut frame).unwrap();
    frame.truncate(n);
    send(&mut sim, 3, start + 2_000, frame);
    // Hop limit 2: router 1 is the second to decrement; an ICMPv6 time exceeded returns.
    send(
        &mut sim,
        3,
        start + 3_000,
        udp6("fd00:a::5", "fd00:c::9", 2),
    );
    sim.run_until(Instant::from_ticks(start + 2 * SECOND));

    let inbox = sim.node_mut(NodeId(4)).host_mut().unwrap().take_inbox();
    assert_eq!(inbox.len(), 2, "{inbox:?}");
    let hops: Vec<u8> = inbox
        .iter()
        .map(|(_, p)| {
            let h = IpHeader::parse(p).unwrap();
            assert_eq!(h.dst, IpAddr::V6(v6("fd00:c::9")));
            h.ttl
        })
        .collect();
    // The routed one lost one hop per router; the labelled one kept its IP header until
    // the router originating the LAN, whose index delivers there (then the IP path).
    assert!(hops.contains(&61) && hops.contains(&63), "{hops:?}");
    let back = sim.node_mut(NodeId(3)).host_mut().unwrap().take_inbox();
    assert_eq!(back.len(), 1, "{back:?}");
    let h = IpHeader::parse(&back[0].1).unwrap();
    assert_eq!(h.protocol, PROTOCOL_ICMPV6);
    assert_eq!(
        h.src,
        IpAddr::V6(v6("fd00::2")),
        "from the router it expired at"
    );
    assert_eq!(back[0].1[40], 3, "ICMPv6 time exceeded");
    let label_forwarded: u64 = (0..3)
        .map(|r| {
            sim.node(NodeId(r))
                .router()
                .unwrap()
                .stats()
                .label_forwarded
        })
        .sum();
    assert!(
        label_forwarded >= 2,
        "the label carried it ({label_forwarded})"
    );
}
