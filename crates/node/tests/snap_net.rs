//! SNAP on simulated networks (paper §III.A ping, §IV.A resource safety): waist nodes with
//! SNAP on (the code the daemon runs) at every SNAP router and host, IPv4 protocol 254 on
//! the links, plain nodes in between.
//!
//! The node keeps no record of how a SNAP run ended; where a test names the fault a run
//! stops with, it asks the node's own VM, given the packet as it arrived there.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use netsim::{Instant, LinkConfig, NodeId, Simulator};
use snap_vm::ip::{decapsulate, encapsulate};
use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::value::{Value, Word};
use snap_vm::vm::{Delivered, Delivery, End, Fault};
use snap_vm::wire::Packet;
use waist_node::MILLIS as MS;
use waist_node::sim::snap::{add_host, add_router, install_routes};
use waist_node::sim::{SimNode, add_router as add_plain_router, rebuild_router, send_packet};
use waist_node::snap::LOCAL_IFACE;
use waist_node::{Node, Stats};

const DELAY: u64 = MS;
const START: u64 = 1_000;
const PORT: i32 = 7;

fn addr_of(id: NodeId) -> [u8; 4] {
    waist_node::sim::addr_of(id).octets()
}

/// Starts the SNAP packet `snap` at node `from` at `at`: it runs there first.
fn send_from(sim: &mut Simulator<SimNode>, from: NodeId, at: Instant, snap: Vec<u8>) {
    sim.run_until(at);
    send_packet(sim, from, encapsulate(&snap).unwrap());
}

/// What was delivered where and when (the network runs until it falls idle).
struct Run(Vec<(Instant, NodeId, waist_node::Delivery)>);

impl Run {
    fn new(sim: &mut Simulator<SimNode>) -> Run {
        Run(waist_node::sim::snap::run(sim, 10_000))
    }

    /// SNAP deliveries (`demux`) at `node`, with their times.
    fn snap_at(&self, node: NodeId) -> Vec<(Instant, Delivery)> {
        self.0
            .iter()
            .filter(|(_, n, _)| *n == node)
            .filter_map(|(t, _, d)| match d {
                waist_node::Delivery::Snap(d) => Some((*t, d.clone())),
                waist_node::Delivery::Packet { .. } => None,
            })
            .collect()
    }

    /// SNAP deliveries anywhere.
    fn snap_count(&self) -> usize {
        self.0
            .iter()
            .filter(|(_, _, d)| matches!(d, waist_node::Delivery::Snap(_)))
            .count()
    }

    /// IP packets delivered at `node`, with their times.
    fn packets_at(&self, node: NodeId) -> Vec<(Instant, Vec<u8>)> {
        self.0
            .iter()
            .filter(|(_, n, _)| *n == node)
            .filter_map(|(t, _, d)| match d {
                waist_node::Delivery::Packet { packet, .. } => Some((*t, packet.clone())),
                waist_node::Delivery::Snap(_) => None,
            })
            .collect()
    }
}

fn node(sim: &Simulator<SimNode>, id: NodeId) -> &Node {
    sim.node(id).router().unwrap()
}

fn stats(sim: &Simulator<SimNode>, id: NodeId) -> Stats {
    node(sim, id).stats()
}

/// How a run of `snap` (as it arrives on `ifc`) ends on node `id`'s own VM.
fn ends_with(sim: &mut Simulator<SimNode>, id: NodeId, ifc: u32, snap: Vec<u8>) -> End {
    let now = sim.now().ticks();
    let vm = sim.node_mut(id).router_mut().unwrap().vm_mut().unwrap();
    vm.run(now, ifc, snap).end
}

fn code(ops: &[(Op, i32)]) -> Vec<Word> {
    ops.iter()
        .map(|&(op, imm)| Word::new(op as u8, imm))
        .collect()
}

/// Fig. 1's ping from `src` to `dst`, stack `[0 :: port :: payload]`.
fn ping(src: [u8; 4], dst: [u8; 4], rb: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = Program {
        src,
        dst,
        rb,
        code: code(&[
            (Op::Forw, 0),
            (Op::Bne, 5),
            (Op::Push, 1),
            (Op::Getsrc, 0),
            (Op::Forwto, 0),
            (Op::Pop, 0),
            (Op::Demux, 0),
        ]),
        ..Program::default()
    };
    let payload = p.heap_bytes(payload);
    p.stack = vec![payload, Value::int(PORT), Value::int(0)];
    p.to_bytes().unwrap()
}

/// Host A, then `hops − 1` routers (SNAP-capable where `snap` says so), then host B, in a
/// line of links with one-way delay [`DELAY`]. With no hops, A pings itself.
fn line(hops: usize, snap: impl Fn(usize) -> bool) -> (Simulator<SimNode>, NodeId, NodeId) {
    let mut sim = Simulator::new(1);
    let a = add_host(&mut sim).unwrap();
    let mut prev = a;
    for i in 1..hops {
        let r = if snap(i) {
            add_router(&mut sim).unwrap()
        } else {
            add_plain_router(&mut sim)
        };
        sim.connect(prev, r, LinkConfig::with_delay(DELAY));
        prev = r;
    }
    let b = if hops == 0 {
        a
    } else {
        let b = add_host(&mut sim).unwrap();
        sim.connect(prev, b, LinkConfig::with_delay(DELAY));
        b
    };
    install_routes(&mut sim).unwrap();
    (sim, a, b)
}

fn executions(sim: &Simulator<SimNode>) -> u64 {
    sim.nodes()
        .filter_map(SimNode::router)
        .map(|n| n.stats().snap_executed)
        .sum()
}

#[test]
fn ping_returns_its_payload_exactly_once_after_one_round_trip() {
    for hops in 0..=3 {
        let (mut sim, a, b) = line(hops, |_| true);
        let (src, dst) = (addr_of(a), addr_of(b));
        send_from(
            &mut sim,
            a,
            Instant::from_ticks(START),
            ping(src, dst, 16, b"hello"),
        );
        let run = Run::new(&mut sim);
        let got = run.snap_at(a);
        let want = Delivery {
            port: PORT,
            value: Delivered::Bytes(b"hello".to_vec()),
            src,
            src6: None,
        };
        assert_eq!(got.len(), 1, "{hops} hops: {got:?}");
        assert_eq!(got[0].1, want, "{hops} hops");
        assert_eq!(
            got[0].0.ticks() - START,
            2 * hops as u64 * DELAY,
            "{hops} hops: one round trip"
        );
        assert_eq!(run.snap_count(), 1, "{hops} hops: nowhere else");
        // It runs at A, at every node on the way out and back, and at A again.
        assert_eq!(executions(&sim), 2 * hops as u64 + 1, "{hops} hops");
        // No run ended without sending or delivering (a fault would).
        assert!(sim.nodes().filter_map(SimNode::router).all(|n| {
            let s = n.stats();
            s.dropped.snap == 0 && s.balanced()
        }));
    }
}

#[test]
fn resource_bound_exhaustion_stops_a_ping() {
    for hops in 1..=3u16 {
        // 2·hops + 1 executions make a round trip; any less and the ping dies on the way.
        for rb in 1..=2 * hops + 1 {
            let (mut sim, a, b) = line(usize::from(hops), |_| true);
            let p = ping(addr_of(a), addr_of(b), rb, b"x");
            send_from(&mut sim, a, Instant::from_ticks(START), p);
            let back = Run::new(&mut sim).snap_at(a).len();
            assert_eq!(back, usize::from(rb > 2 * hops), "{hops} hops, rb {rb}");
            assert!(
                executions(&sim) <= u64::from(rb),
                "{hops} hops, rb {rb}: {} executions",
                executions(&sim)
            );
            // The node counts a SNAP packet that ends without sending or delivering in
            // `dropped.snap`; in this ping only an arrival with no bound left does.
            let dropped: u64 = sim
                .nodes()
                .filter_map(SimNode::router)
                .map(|n| n.stats().dropped.snap)
                .sum();
            assert_eq!(
                dropped,
                u64::from(rb <= 2 * hops),
                "dropped once, on arrival"
            );
        }
    }
}

#[test]
fn resource_bound_is_conserved_across_the_network() {
    // At every SNAP node: give a child 1 of the bound (it runs once, at the next hop), then
    // forw the rest on. It starts at the first router (two interfaces: a send and a forw);
    // a bound of 6 pays for exactly 6 executions in all.
    let (mut sim, _, b) = line(4, |_| true);
    let r1 = NodeId(1);
    let mut p = Program {
        src: addr_of(r1),
        dst: addr_of(b),
        rb: 6,
        ..Program::default()
    };
    let to_b = p.heap_addr(addr_of(b));
    p.code = code(&[
        (Op::Push, 7),
        (Op::Push, 0),
        (Op::Push, 1),
        (Op::Pushh, to_b.data() as i32),
        (Op::Send, 0),
        (Op::Pop, 0),
        (Op::Forw, 0),
        (Op::Exit, 0),
    ]);
    let bytes = p.to_bytes().unwrap();
    send_packet(&mut sim, r1, encapsulate(&bytes).unwrap());
    Run::new(&mut sim);
    // At R1 it ran to its `forw`, no fault.
    assert_eq!(ends_with(&mut sim, r1, LOCAL_IFACE, bytes), End::Forwarded);
    assert!(
        executions(&sim) <= 6,
        "a bound of 6 paid for {} executions",
        executions(&sim)
    );
}

/// A program that runs `prefix`, then `send`s one child per entry of `rbs` (that bound) to
/// `leaves` in turn, each child delivering the resource bound it has left to port 9 once it
/// arrives.
fn multicast_after(
    prefix: &[(Op, i32)],
    (src, dst): ([u8; 4], [u8; 4]),
    leaves: &[[u8; 4]],
    rbs: &[i32],
    rb: u16,
) -> Vec<u8> {
    let mut p = Program {
        src,
        dst,
        rb,
        ..Program::default()
    };
    let addrs: Vec<Value> = leaves.iter().map(|&l| p.heap_addr(l)).collect();
    let entry = (prefix.len() + 6 * rbs.len() + 1) as i32;
    let mut ops = prefix.to_vec();
    for (i, &r) in rbs.iter().enumerate() {
        let addr = addrs[i % addrs.len()].data() as i32;
        ops.extend([
            (Op::Push, entry),
            (Op::Push, 0),
            (Op::Push, r),
            (Op::Pushh, addr),
            (Op::Send, 0),
            (Op::Pop, 0),
        ]);
    }
    ops.extend([
        (Op::Exit, 0),
        (Op::Forw, 0),
        (Op::Getrb, 0),
        (Op::Push, 9),
        (Op::Demux, 0),
    ]);
    p.code = code(&ops);
    p.to_bytes().unwrap()
}

/// [`multicast_after`] from a host to its own neighbours, starting there.
fn multicast(src: [u8; 4], leaves: &[[u8; 4]], rbs: &[i32], rb: u16) -> Vec<u8> {
    multicast_after(&[], (src, src), leaves, rbs, rb)
}

/// A source host linked to `k` leaf hosts (the source has `k` interfaces, the first its
/// default route).
fn star(k: usize) -> (Simulator<SimNode>, NodeId, Vec<NodeId>) {
    let mut sim = Simulator::new(2);
    let s = add_host(&mut sim).unwrap();
    let leaves: Vec<NodeId> = (0..k)
        .map(|_| {
            let l = add_host(&mut sim).unwrap();
            sim.connect(s, l, LinkConfig::with_delay(DELAY));
            l
        })
        .collect();
    install_routes(&mut sim).unwrap();
    (sim, s, leaves)
}

fn left_at(run: &Run, leaf: NodeId) -> Vec<Delivered> {
    run.snap_at(leaf)
        .into_iter()
        .map(|(_, d)| d.value)
        .collect()
}

#[test]
fn multicast_children_share_the_parents_bound() {
    let (mut sim, s, leaves) = star(3);
    let addrs: Vec<[u8; 4]> = leaves.iter().map(|&l| addr_of(l)).collect();
    // Arrives with 7, keeps 6 after the decrement, gives 1 + 2 + 3.
    let p = multicast(addr_of(s), &addrs, &[1, 2, 3], 7);
    send_from(&mut sim, s, Instant::from_ticks(START), p.clone());
    let run = Run::new(&mut sim);
    let mut given = 0;
    for (i, &l) in leaves.iter().enumerate() {
        let left = left_at(&run, l);
        assert_eq!(left, [Delivered::Int(i as i32)], "leaf {i}");
        given += i as i32 + 1;
    }
    assert!(
        given < 7,
        "children's bounds sum to at most the parent's, less its own hop"
    );
    assert_eq!(ends_with(&mut sim, s, LOCAL_IFACE, p), End::Exit);
    assert_eq!(stats(&sim, s).snap_sent, 3);
}

#[test]
fn a_child_asking_for_more_than_is_left_faults_the_parent() {
    let (mut sim, s, leaves) = star(3);
    let addrs: Vec<[u8; 4]> = leaves.iter().map(|&l| addr_of(l)).collect();
    // Keeps 7: gives 2, then 2, then asks for 5 of the 3 left.
    let p = multicast(addr_of(s), &addrs, &[2, 2, 5], 8);
    send_from(&mut sim, s, Instant::from_ticks(START), p.clone());
    let run = Run::new(&mut sim);
    assert_eq!(
        ends_with(&mut sim, s, LOCAL_IFACE, p),
        End::Fault(Fault::ResourceBound)
    );
    assert_eq!(left_at(&run, leaves[0]), [Delivered::Int(1)]);
    assert_eq!(left_at(&run, leaves[1]), [Delivered::Int(1)]);
    assert!(left_at(&run, leaves[2]).is_empty(), "nothing more is sent");
    assert_eq!(stats(&sim, s).snap_sent, 2);
}

#[test]
fn multicast_at_a_branch_router_is_limited_by_its_interfaces() {
    // A — R — {L1, L2, L3}: the packet forwards itself to R, which has 4 interfaces.
    let mut sim = Simulator::new(3);
    let a = add_host(&mut sim).unwrap();
    let r = add_router(&mut sim).unwrap();
    sim.connect(a, r, LinkConfig::with_delay(DELAY));
    let leaves: Vec<NodeId> = (0..3)
        .map(|_| {
            let l = add_host(&mut sim).unwrap();
            sim.connect(r, l, LinkConfig::with_delay(DELAY));
            l
        })
        .collect();
    install_routes(&mut sim).unwrap();
    let addrs: Vec<[u8; 4]> = leaves.iter().map(|&l| addr_of(l)).collect();
    // forw to R first, then five children for four interfaces.
    let ends = (addr_of(a), addr_of(r));
    let p = multicast_after(&[(Op::Forw, 0)], ends, &addrs, &[1, 1, 1, 1, 1], 9);
    send_from(&mut sim, a, Instant::from_ticks(START), p);
    let run = Run::new(&mut sim);
    // As it reached R: A's run took one of its bound (its `forw` changes nothing else).
    let arrived = multicast_after(&[(Op::Forw, 0)], ends, &addrs, &[1, 1, 1, 1, 1], 8);
    assert_eq!(
        ends_with(&mut sim, r, 0, arrived),
        End::Fault(Fault::SendLimit),
        "the fifth send at a four-interface router"
    );
    // Leaves 0, 1, 2 got one child each and leaf 0 a second: one hop, so 0 left.
    let got: Vec<usize> = leaves.iter().map(|&l| left_at(&run, l).len()).collect();
    assert_eq!(got, [2, 1, 1]);
    assert_eq!(stats(&sim, r).snap_sent, 4);
}

#[test]
fn sending_more_packets_than_interfaces_stops_with_send_limit() {
    let (mut sim, s, leaves) = star(2);
    let addrs: Vec<[u8; 4]> = leaves.iter().map(|&l| addr_of(l)).collect();
    let p = multicast(addr_of(s), &addrs, &[1, 1, 1], 10);
    send_from(&mut sim, s, Instant::from_ticks(START), p.clone());
    let run = Run::new(&mut sim);
    assert_eq!(
        ends_with(&mut sim, s, LOCAL_IFACE, p),
        End::Fault(Fault::SendLimit)
    );
    assert_eq!(left_at(&run, leaves[0]), [Delivered::Int(0)]);
    assert_eq!(left_at(&run, leaves[1]), [Delivered::Int(0)]);
    assert_eq!(stats(&sim, s).snap_sent, 2);
}

#[test]
fn plain_routers_in_the_path_just_forward() {
    // Only the hosts run SNAP: three executions for any number of hops.
    let (mut sim, a, b) = line(3, |_| false);
    send_from(
        &mut sim,
        a,
        Instant::from_ticks(START),
        ping(addr_of(a), addr_of(b), 3, b"partial"),
    );
    let got = Run::new(&mut sim).snap_at(a);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0.ticks() - START, 6 * DELAY);
    assert_eq!(executions(&sim), 3);
    for r in [NodeId(1), NodeId(2)] {
        let st = stats(&sim, r);
        assert_eq!((st.forwarded, st.snap_executed), (2, 0), "{r:?}");
    }
    // The same bound is too little once the routers run SNAP.
    let (mut sim, a, b) = line(3, |_| true);
    let p = ping(addr_of(a), addr_of(b), 3, b"partial");
    send_from(&mut sim, a, Instant::from_ticks(START), p);
    assert!(Run::new(&mut sim).snap_at(a).is_empty());
    // Mixed: the first router runs it, the second does not.
    let (mut sim, a, b) = line(3, |i| i == 1);
    let p = ping(addr_of(a), addr_of(b), 5, b"partial");
    send_from(&mut sim, a, Instant::from_ticks(START), p);
    assert_eq!(Run::new(&mut sim).snap_at(a).len(), 1);
    assert_eq!(executions(&sim), 5);
}

#[test]
fn a_child_sent_to_the_node_itself_runs_there_bounded_by_the_resource_bound() {
    // entry 0: send a child to `here` with all the bound left; the child does the same.
    let mut p = Program {
        src: addr_of(NodeId(0)),
        dst: addr_of(NodeId(0)),
        rb: 5,
        code: code(&[
            (Op::Push, 0),
            (Op::Push, 0),
            (Op::Getrb, 0),
            (Op::Here, 0),
            (Op::Send, 0),
        ]),
        ..Program::default()
    };
    let net = || {
        let mut sim = Simulator::new(4);
        let s = add_host(&mut sim).unwrap();
        let other = add_host(&mut sim).unwrap();
        // One link: each execution may send once (a send to itself counts too).
        sim.connect(s, other, LinkConfig::with_delay(DELAY));
        install_routes(&mut sim).unwrap();
        (sim, s)
    };
    let (mut sim, s) = net();
    send_from(
        &mut sim,
        s,
        Instant::from_ticks(START),
        p.to_bytes().unwrap(),
    );
    Run::new(&mut sim);
    let st = stats(&sim, s);
    // Bounds 5, 4, 3, 2, 1 run: one packet in, so four local runs; the last child, with
    // 0, is dropped, and with it the packet (nothing left the node or was delivered).
    assert_eq!((st.received, st.snap_executed, st.dropped.snap), (1, 5, 1));
    assert_eq!(st.snap_sent, 0);
    // The node also caps the local runs one packet may cause (`snap_local_runs`), below
    // what the resource bound allows if so configured: two, then the rest are refused.
    let (mut capped, s) = net();
    rebuild_router(&mut capped, s, |c| c.snap_local_runs = 2).unwrap();
    send_from(
        &mut capped,
        s,
        Instant::from_ticks(START),
        p.to_bytes().unwrap(),
    );
    Run::new(&mut capped);
    assert_eq!(stats(&capped, s).snap_executed, 3);

    // A child addressed here delivers here, with the interface reading −1.
    p.code = code(&[
        (Op::Push, 7),
        (Op::Push, 0),
        (Op::Push, 2),
        (Op::Here, 0),
        (Op::Send, 0),
        (Op::Pop, 0),
        (Op::Exit, 0),
        (Op::Getifc, 0),
        (Op::Push, 9),
        (Op::Demux, 0),
    ]);
    send_from(
        &mut sim,
        s,
        Instant::from_ticks(2 * START),
        p.to_bytes().unwrap(),
    );
    let got = Run::new(&mut sim).snap_at(s);
    let d = &got[0].1;
    assert_eq!((d.port, &d.value), (9, &Delivered::Int(LOCAL_IFACE as i32)));
}

#[test]
fn plain_ipv4_is_forwarded_with_its_ttl_decremented() {
    let (mut sim, a, b) = line(3, |_| true);
    let mut bytes = Vec::new();
    etherparse::PacketBuilder::ipv4(addr_of(a), addr_of(b), 20)
        .udp(1000, 2000)
        .write(&mut bytes, b"datagram")
        .unwrap();
    // A originates it (no TTL decrement at the source); the two routers forward it.
    send_packet(&mut sim, a, bytes.clone());
    let inbox = Run::new(&mut sim).packets_at(b);
    assert_eq!(inbox.len(), 1);
    let (at, got) = &inbox[0];
    assert_eq!(at.ticks(), 3 * DELAY);
    let ip = etherparse::Ipv4Slice::from_slice(got).unwrap();
    assert_eq!(ip.header().ttl(), 18, "two routers");
    assert_eq!(
        ip.header().header_checksum(),
        ip.header().to_header().calc_header_checksum()
    );
    assert_eq!(&got[20..], &bytes[20..]);
    assert_eq!(executions(&sim), 0);
}

#[test]
fn snap_travels_in_ipv4_protocol_254() {
    let snap = ping([10, 0, 0, 1], [10, 0, 0, 2], 4, b"ip");
    let ip = encapsulate(&snap).unwrap();
    let parsed = etherparse::Ipv4Slice::from_slice(&ip).unwrap();
    let h = parsed.header();
    assert_eq!(h.protocol().0, 254);
    assert_eq!(
        (h.source(), h.destination()),
        ([10, 0, 0, 1], [10, 0, 0, 2])
    );
    assert_eq!(h.header_checksum(), h.to_header().calc_header_checksum());
    assert_eq!(parsed.payload().payload, &snap[..]);
    assert_eq!(decapsulate(&ip).unwrap(), &snap[..]);
    assert!(Packet::new_checked(decapsulate(&ip).unwrap()).is_ok());
}

/// The SNAP paper's Fig. 2: ping written in PLAN and compiled (`snap_vm::plan`), against
/// the hand-written Fig. 1 ping on the same networks: the same reply, at the same time, at
/// the same node. (`p` runs at the pinged node and sends `r` back; its stack is the entry
/// function's arguments with the entry index on top.)
#[test]
fn compiled_plan_ping_answers_like_the_hand_written_one() {
    let source = "fun r(w:blob, n:int) = deliverUDP(w, n)\n\
                  fun p(w:blob, n:int) = OnRemote(|r|(w, n), getSrc(), getRB(), defaultRoute)";
    let opts = snap_vm::plan::Options {
        fold_bound: 1,
        services: snap_vm::plan::ServiceSig::ess(),
        entry: "p".into(),
    };
    let compiled = snap_vm::plan::compile(source, &opts).unwrap();
    let compiled_ping = |src, dst, rb, payload: &[u8]| {
        let mut p = Program {
            src,
            dst,
            rb,
            code: compiled.program.code.clone(),
            entry: compiled.program.entry,
            ..Program::default()
        };
        let w = p.heap_bytes(payload);
        p.stack = vec![
            w,
            Value::int(PORT),
            Value::int(i32::from(compiled.entry_index)),
        ];
        p.to_bytes().unwrap()
    };
    // 1 to 3 hops. (With none, a lone host pinging itself, they differ: Fig. 1's `forwto`
    // falls through at its own source, while the compiled `send` to itself is a real send,
    // and a host with no links has a send limit of 0: `Fault(SendLimit)`.)
    for hops in 1..=3 {
        let mut replies = Vec::new();
        for compiled_one in [false, true] {
            let (mut sim, a, b) = line(hops, |_| true);
            let (src, dst) = (addr_of(a), addr_of(b));
            let packet = if compiled_one {
                compiled_ping(src, dst, 16, b"hello")
            } else {
                ping(src, dst, 16, b"hello")
            };
            send_from(&mut sim, a, Instant::from_ticks(START), packet);
            let run = Run::new(&mut sim);
            assert_eq!(run.snap_count(), 1, "{hops} hops, compiled {compiled_one}");
            replies.push(run.snap_at(a));
        }
        assert_eq!(
            replies[0], replies[1],
            "{hops} hops: Fig. 1 vs compiled Fig. 2"
        );
        assert_eq!(replies[1][0].1.value, Delivered::Bytes(b"hello".to_vec()));
    }
    eprintln!(
        "Fig. 2 compiled: {} instructions ({} bytes of code); Fig. 1 by hand: 7 (28 bytes)",
        compiled.program.code.len(),
        compiled.program.code.len() * 4
    );
}
