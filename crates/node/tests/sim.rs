//! Random networks of `Node`s in the simulator: every packet arrives along a shortest path
//! with its TTL decremented once per router, and ESP and SNAP run exactly once at each
//! router they cross that has them on (partial deployment: never where they are off).
//! Routes come from static config or from distance vector over the links.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
// Routers are numbered: indexing per-router vectors by number reads best.
#![allow(clippy::needless_range_loop)]

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use ess::{HashKey, Tag};
use netsim::{Instant, LinkConfig, NodeId, Simulator};
use proptest::prelude::*;
use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::value::Word;
use waist_ip::{IpHeader, emit_header};
use waist_node::routes::prefix;
use waist_node::sim::Host;
use waist_node::sim::SimNode;
use waist_node::{Config, EspConfig, IfaceConfig, Node};

const SECOND: u64 = 1_000_000;

#[derive(Clone, Debug)]
struct Net {
    routers: usize,
    /// Router–router links.
    edges: Vec<(usize, usize)>,
    /// The router each host hangs off.
    hosts: Vec<usize>,
    esp: Vec<bool>,
    snap: Vec<bool>,
    /// (source host, destination host) of each flow.
    flows: Vec<(usize, usize)>,
}

fn net() -> impl Strategy<Value = Net> {
    (2usize..7).prop_flat_map(|r| {
        let tree = (1..r)
            .map(|i| (0..i).prop_map(move |j| (j, i)))
            .collect::<Vec<_>>();
        let extra = proptest::collection::vec((0..r, 0..r), 0..r);
        let hosts = proptest::collection::vec(0..r, 2..5);
        let flags = proptest::collection::vec(any::<bool>(), r);
        (Just(r), tree, extra, hosts, flags.clone(), flags).prop_flat_map(
            |(r, tree, extra, hosts, esp, snap)| {
                let mut edges = tree;
                for (a, b) in extra {
                    let e = (a.min(b), a.max(b));
                    if a != b && !edges.contains(&e) {
                        edges.push(e);
                    }
                }
                let h = hosts.len();
                let flows = proptest::collection::vec((0..h, 0..h), 1..6);
                (
                    Just(Net {
                        routers: r,
                        edges,
                        hosts,
                        esp,
                        snap,
                        flows: vec![],
                    }),
                    flows,
                )
                    .prop_map(|(mut n, f)| {
                        n.flows = f.into_iter().filter(|(a, b)| a != b).collect();
                        n
                    })
            },
        )
    })
}

fn router_addr(i: usize) -> [u8; 4] {
    [10, 0, 0, i as u8 + 1]
}

fn host_addr(h: usize) -> [u8; 4] {
    [10, h as u8 + 1, 0, 1]
}

/// Builds the network; routers are nodes 0..r, hosts r.. . Returns the simulator.
fn build(n: &Net, dv: bool) -> Simulator<SimNode> {
    let mut degree = vec![0usize; n.routers];
    for &(a, b) in &n.edges {
        degree[a] += 1;
        degree[b] += 1;
    }
    for &r in &n.hosts {
        degree[r] += 1;
    }
    let mut sim = Simulator::new(7);
    for i in 0..n.routers {
        let addr = router_addr(i);
        let mut c = Config::router(addr.into(), degree[i]);
        c.snap = n.snap[i];
        if n.esp[i] {
            c.esp = Some(
                EspConfig::new(
                    u64::from(u32::from_be_bytes(addr)),
                    8,
                    HashKey::from_seed(i as u64),
                )
                .unwrap(),
            );
        }
        if dv {
            c.dv = Some(fastpath::dv::Config::new(u32::from_be_bytes(addr)));
            // Links to routers run DV; the host link (numbered last) does not.
            let links = degree[i] - n.hosts.iter().filter(|&&r| r == i).count();
            for f in c.ifaces.iter_mut().take(links) {
                *f = IfaceConfig::new(1500).with_dv(1);
            }
        }
        sim.add_node(SimNode::Router(Box::new(
            Node::new(c, waist_node::Instant::ZERO).unwrap(),
        )));
    }
    for _ in &n.hosts {
        sim.add_node(SimNode::Host(Host::new()));
    }
    for &(a, b) in &n.edges {
        sim.connect(NodeId(a), NodeId(b), LinkConfig::with_delay(100));
    }
    for (h, &r) in n.hosts.iter().enumerate() {
        sim.connect(
            NodeId(r),
            NodeId(n.routers + h),
            LinkConfig::with_delay(100),
        );
    }
    // Each router reaches its own hosts statically (the attached network).
    for (h, &r) in n.hosts.iter().enumerate() {
        let iface = (0..sim.iface_count(NodeId(r)))
            .find(|&i| sim.peer(NodeId(r), i).map(|p| p.0) == Some(NodeId(n.routers + h)))
            .unwrap();
        let p = prefix([10, h as u8 + 1, 0, 0].into(), 16).unwrap();
        let node = sim.node_mut(NodeId(r)).router_mut().unwrap();
        node.add_route(prefix([10, h as u8 + 1, 0, 0].into(), 16).unwrap(), iface);
        if dv {
            assert!(node.originate(waist_node::Instant::ZERO, p));
        }
    }
    if !dv {
        // Everything else by breadth-first next hops (ties to the lowest interface).
        for r in 0..n.routers {
            for (h, &hr) in n.hosts.iter().enumerate() {
                if hr == r {
                    continue;
                }
                let iface = next_hop(&sim, n, r, hr);
                let node = sim.node_mut(NodeId(r)).router_mut().unwrap();
                node.add_route(prefix([10, h as u8 + 1, 0, 0].into(), 16).unwrap(), iface);
            }
        }
    }
    sim
}

/// Router-hop distances from `to` to every router.
fn distances(sim: &Simulator<SimNode>, n: &Net, to: usize) -> Vec<usize> {
    let mut d = vec![usize::MAX; n.routers];
    d[to] = 0;
    let mut q = VecDeque::from([to]);
    while let Some(r) = q.pop_front() {
        for i in 0..sim.iface_count(NodeId(r)) {
            if let Some((NodeId(p), _)) = sim.peer(NodeId(r), i)
                && p < n.routers
                && d[p] == usize::MAX
            {
                d[p] = d[r] + 1;
                q.push_back(p);
            }
        }
    }
    d
}

fn next_hop(sim: &Simulator<SimNode>, n: &Net, from: usize, to: usize) -> usize {
    let d = distances(sim, n, to);
    (0..sim.iface_count(NodeId(from)))
        .find(|&i| matches!(sim.peer(NodeId(from), i), Some((NodeId(p), _)) if p < n.routers && d[p] + 1 == d[from]))
        .unwrap()
}

/// The routers a packet to host `dst` crosses from router `r`, by the routers' own tables.
fn trace(sim: &Simulator<SimNode>, n: &Net, mut r: usize, dst: usize) -> Vec<usize> {
    let mut path = vec![r];
    while r != n.hosts[dst] {
        let iface = sim
            .node(NodeId(r))
            .router()
            .unwrap()
            .routes()
            .route(host_addr(dst).into())
            .unwrap();
        r = sim.peer(NodeId(r), usize::from(iface)).unwrap().0.0;
        path.push(r);
        assert!(path.len() <= n.routers, "routing loop");
    }
    path
}

fn udp(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut p = vec![0u8; 28];
    emit_header(&mut p, src.into(), dst.into(), 17, 64, 8).unwrap();
    p
}

fn snap_packet(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let code = [(Op::Forw, 0), (Op::Exit, 0)]
        .map(|(op, imm)| Word::new(op as u8, imm))
        .to_vec();
    let p = Program {
        src,
        dst,
        rb: 32,
        code,
        ..Program::default()
    };
    snap_vm::ip::encapsulate(&p.to_bytes().unwrap()).unwrap()
}

/// The routing events a router produced, replayed from nothing (learned and changed
/// install, withdrawn removes), give exactly its reachable routes: the events the daemon
/// logs tell the whole story, in the simulator as in the daemon.
fn replay_events(node: &mut Node) -> Result<(), TestCaseError> {
    use fastpath::dv::Event;
    let mut held = BTreeMap::new();
    while let Some(e) = node.poll_event() {
        match e {
            Event::RouteLearned(r) | Event::RouteChanged { new: r, .. } => {
                held.insert(r.dest, r);
            }
            Event::RouteWithdrawn(r) => {
                held.remove(&r.dest);
            }
            Event::NeighbourUp { .. } | Event::NeighbourDown { .. } => {}
        }
    }
    let dv = node.dv().unwrap();
    let infinity = dv.config().infinity;
    let routes: BTreeMap<_, _> = dv
        .routes()
        .filter(|r| r.index != 0 && r.cost < infinity)
        .map(|r| (r.dest, r))
        .collect();
    prop_assert!(!routes.is_empty());
    prop_assert_eq!(held, routes);
    prop_assert_eq!(dv.stats().events_dropped, 0);
    Ok(())
}

fn check(n: &Net, dv: bool) -> Result<(), TestCaseError> {
    prop_assume!(!n.flows.is_empty());
    let mut sim = build(n, dv);
    let start = if dv { 60 * SECOND } else { 0 };
    sim.run_until(Instant::from_ticks(start));
    if dv {
        for r in 0..n.routers {
            replay_events(sim.node_mut(NodeId(r)).router_mut().unwrap())?;
        }
    }
    // Every flow sends one UDP, one ESP COUNT (central context only) and one SNAP packet.
    for (k, &(s, d)) in n.flows.iter().enumerate() {
        let at = Instant::from_ticks(start + 1_000 * (k as u64 + 1));
        let ep = Endpoint::new(k as u32 + 1, host_addr(s).into()).with_loc(Loc::CENTRAL);
        let esp = ep
            .packet_to(
                host_addr(d).into(),
                &Instruction::Count {
                    counter: Tag(k as u64),
                    thresh: 1_000,
                },
                &[],
            )
            .unwrap();
        for p in [
            udp(host_addr(s), host_addr(d)),
            esp,
            snap_packet(host_addr(s), host_addr(d)),
        ] {
            // Through `act`, so the simulator re-reads the host's timer.
            sim.act(NodeId(n.routers + s), |node, _, _| {
                node.host_mut().unwrap().send_at(at, p)
            });
        }
    }
    sim.run_until(Instant::from_ticks(start + 10 * SECOND));
    // What each router should have run.
    let mut crossings = vec![0u64; n.routers];
    for &(s, d) in &n.flows {
        let path = trace(&sim, n, n.hosts[s], d);
        let shortest = distances(&sim, n, n.hosts[d])[n.hosts[s]] + 1;
        prop_assert_eq!(path.len(), shortest, "path {:?} not shortest", path);
        for r in path {
            crossings[r] += 1;
        }
    }
    for (h, _) in n.hosts.iter().enumerate() {
        let host = sim.node_mut(NodeId(n.routers + h)).host_mut().unwrap();
        let inbox = host.take_inbox();
        let expected: Vec<_> = n.flows.iter().filter(|f| f.1 == h).collect();
        prop_assert_eq!(
            inbox.len(),
            3 * expected.len(),
            "host {} got {:?}",
            h,
            inbox.len()
        );
        for (_, p) in &inbox {
            let ip = IpHeader::parse(p).unwrap();
            let IpAddr::V4(src) = ip.src else {
                unreachable!()
            };
            let s = n.hosts.len().min(usize::from(src.octets()[1]) - 1);
            let routers = distances(&sim, n, n.hosts[h])[n.hosts[s]] as u8 + 1;
            if ip.protocol != snap_vm::wire::IP_PROTOCOL {
                prop_assert_eq!(ip.ttl, 64 - routers, "TTL once per router");
            } else {
                // SNAP nodes frame afresh (TTL 64); plain routers after the last one decrement.
                prop_assert!(ip.ttl <= 64 && ip.ttl >= 64 - routers);
            }
        }
    }
    for r in 0..n.routers {
        let node = sim.node(NodeId(r)).router().unwrap();
        let s = node.stats();
        prop_assert!(s.balanced(), "{:?}", s);
        let esp = if n.esp[r] { crossings[r] } else { 0 };
        let snap = if n.snap[r] { crossings[r] } else { 0 };
        prop_assert_eq!(s.esp_executed, esp, "ESP executions at router {}", r);
        prop_assert_eq!(s.snap_executed, snap, "SNAP executions at router {}", r);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn static_routes_deliver_along_shortest_paths(n in net()) {
        check(&n, false)?;
    }

    #[test]
    fn distance_vector_routes_deliver_along_shortest_paths(n in net()) {
        check(&n, true)?;
    }
}
