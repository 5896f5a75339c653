//! The paper's applications end to end on simulated networks of waist nodes, the code the
//! daemon runs (§1 Fig. 1, §3.1.1, §3.1.2 Fig. 5, §3.2, §4.2 Fig. 7, §4.3.3).
//!
//! ESP routers sweep their stores on a timer, so these networks never fall idle: each step
//! runs the simulator to a time (a second past the last send, far beyond any path's
//! delay) where the old simulated routers ran until no event was left.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use netsim::Rng;
use waist_node::MILLIS as MS;
use waist_node::sim::esp::aggregate::{AggTree, Scheme, TreeSpec};
use waist_node::sim::esp::isa::InstructionSet;
use waist_node::sim::esp::paths::Fig1;
use waist_node::sim::esp::thinning::Feedback;

fn small_tree(seed: u64) -> AggTree {
    AggTree::build(TreeSpec {
        leaves: 200,
        root_branching: 8,
        min_branching: 2,
        max_branching: 6,
        hop_delay: MS,
        seed,
        store_log2: 6,
    })
    .unwrap()
}

#[test]
fn aggregation_counts_every_leaf_without_loss() {
    let mut tree = small_tree(1);
    let mut rng = Rng::new(2);
    for scheme in [
        Scheme::Plain,
        Scheme::Robust {
            words: 8,
            k: 11,
            limit: 2,
        },
    ] {
        let out = tree.run(scheme, &[], 0, 100 * MS, &mut rng);
        assert_eq!(out.result, Some(200), "{scheme:?}: {out:?}");
        assert!(out.correct && out.errors == 0);
    }
    assert_eq!(tree.branching[0], 8);
    assert!(tree.depth >= 4, "{}", tree.depth);
    // The nodes account for every packet; none was malformed, none needed ICMP.
    for &r in &tree.routers {
        let s = tree.sim.node(r).router().unwrap().stats();
        assert!(s.balanced(), "{s:?}");
        assert_eq!((s.dropped.malformed, s.icmp_sent), (0, 0), "{s:?}");
        assert!(s.esp_executed > 0);
    }
}

use core::net::{IpAddr, Ipv4Addr};
use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use ess::{Tag, Value};
use netsim::{Instant, LinkConfig, NodeId, Simulator};
use waist_node::sim::esp::{add_host as host, enable_esp, install_host_routes, send_from};
use waist_node::sim::{SimNode, add_router as router, addr_of};

/// Runs the network for `ticks` µs of simulated time.
fn run_for(sim: &mut Simulator<SimNode>, ticks: u64) {
    let until = Instant::from_ticks(sim.now().ticks() + ticks);
    sim.run_until(until);
}

fn ip(id: NodeId) -> IpAddr {
    addr_of(id).into()
}

fn inbox(sim: &mut Simulator<SimNode>, h: NodeId) -> Vec<Vec<u8>> {
    let host = sim.node_mut(h).host_mut().unwrap();
    host.take_inbox().into_iter().map(|(_, p)| p).collect()
}

/// Fig. 1: the router index B learns, with ESP on the routers in `esp`.
fn path_intersection(esp: &[usize]) -> Option<usize> {
    let mut net = Fig1::build(esp, 1).unwrap();
    let answer = net.query(Tag(0xF161)).unwrap().expect("the query arrives");
    assert_eq!(net.marks_delivered(), 1, "the marker reaches A");
    assert_eq!(answer.router.is_none(), answer.node == 0);
    answer.router
}

#[test]
fn path_intersection_finds_the_branch_point() {
    // S–R0–R1–R2–R3–A and R2–R4–B: the paths part at R2.
    assert_eq!(path_intersection(&[0, 1, 2, 3, 4]), Some(2));
    // Partial deployment (§4.1): the last *ESP-capable* common node.
    assert_eq!(path_intersection(&[0, 1, 3, 4]), Some(1));
    assert_eq!(path_intersection(&[0, 3, 4]), Some(0));
    assert_eq!(path_intersection(&[3, 4]), None, "no common ESP node");
}

#[test]
fn feedback_thinning_delivers_an_increasing_thinned_sequence() {
    let mut net = Feedback::build(4, 25, 3, InstructionSet::BuiltIn).unwrap();
    let mut rng = Rng::new(5);
    let (mut delivered, mut sent) = (0, 0);
    for _ in 0..10 {
        let round = net.round(&mut rng).unwrap();
        let got = &round.delivered;
        assert!(got.windows(2).all(|w| w[0] < w[1]), "increasing: {got:?}");
        assert_eq!(got.last(), Some(&round.max), "the maximum always arrives");
        assert_eq!(round.errors, 0);
        delivered += got.len();
        sent += round.sent;
    }
    println!(
        "feedback thinning: {delivered} of {sent} reports reached the source ({} saved)",
        sent - delivered
    );
    assert!(delivered * 5 < sent, "{delivered} of {sent}");
}

#[test]
fn nack_suppression_and_subcast() {
    // Fig. 5: S–R0; R0 serves R1 (r1, r2), R2 (r3) and R3 (r4).
    let mut sim = Simulator::new(4);
    let link = LinkConfig::with_delay(MS);
    let s = host(&mut sim);
    let r: Vec<NodeId> = (0..4).map(|_| router(&mut sim)).collect();
    let rx: Vec<NodeId> = (0..4).map(|_| host(&mut sim)).collect();
    sim.connect(s, r[0], link);
    let r0_links: Vec<_> = (1..4).map(|i| sim.connect(r[0], r[i], link)).collect();
    sim.connect(r[1], rx[0], link);
    sim.connect(r[1], rx[1], link);
    sim.connect(r[2], rx[2], link);
    sim.connect(r[3], rx[3], link);
    install_host_routes(&mut sim).unwrap();
    // ESP first: enabling it rebuilds a router, which keeps its routes but not its groups.
    enable_esp(&mut sim, &r, 8, 11).unwrap();
    let group: IpAddr = Ipv4Addr::new(239, 1, 1, 1).into();
    for (router, down) in [
        (r[0], vec![1, 2, 3]),
        (r[1], vec![1, 2]),
        (r[2], vec![1]),
        (r[3], vec![1]),
    ] {
        sim.node_mut(router)
            .router_mut()
            .unwrap()
            .add_group(group, &down);
    }

    let data = |seq: u8| {
        let mut p = Vec::new();
        etherparse::PacketBuilder::ipv4(addr_of(s).octets(), [239, 1, 1, 1], 64)
            .udp(5000, 5000)
            .write(&mut p, &[seq; 32])
            .unwrap();
        p
    };
    // Data packet 7 is lost toward R1 and R2.
    sim.set_link_up(r0_links[0], false);
    sim.set_link_up(r0_links[1], false);
    send_from(&mut sim, s, Instant::from_ticks(0), data(7));
    run_for(&mut sim, waist_node::SECONDS);
    sim.set_link_up(r0_links[0], true);
    sim.set_link_up(r0_links[1], true);
    let got: Vec<usize> = rx.iter().map(|&h| inbox(&mut sim, h).len()).collect();
    assert_eq!(got, [0, 0, 0, 1]);

    // r1, r2, r3 NACK packet 7: marks at input ports, suppression at output ports.
    let tag = Tag(0xAC_0000 ^ 7);
    for &h in &rx[..3] {
        let ep = Endpoint::new(5, ip(h)).with_loc(Loc::INPUT | Loc::OUTPUT);
        let nack = ep
            .packet_to(
                ip(s),
                &Instruction::Count {
                    counter: tag,
                    thresh: 1,
                },
                &[],
            )
            .unwrap();
        let now = sim.now();
        send_from(&mut sim, h, now, nack);
    }
    run_for(&mut sim, waist_node::SECONDS);
    assert_eq!(
        inbox(&mut sim, s).len(),
        1,
        "one NACK of three reaches the source"
    );

    // The retransmission carries SUBCAST on the output side: only the NACKers get it.
    let ep = Endpoint::new(5, ip(s)).with_loc(Loc::OUTPUT);
    let retx = ep
        .piggyback(&data(7), &Instruction::Subcast { tag })
        .unwrap();
    let now = sim.now();
    send_from(&mut sim, s, now, retx);
    run_for(&mut sim, waist_node::SECONDS);
    let got: Vec<usize> = rx.iter().map(|&h| inbox(&mut sim, h).len()).collect();
    assert_eq!(got, [1, 1, 1, 0], "subcast to the NACKers only");
    // Without ESP's marks (another sequence number) nothing passes.
    let other = ep
        .piggyback(
            &data(8),
            &Instruction::Subcast {
                tag: Tag(0xAC_0000 ^ 8),
            },
        )
        .unwrap();
    let now = sim.now();
    send_from(&mut sim, s, now, other);
    run_for(&mut sim, waist_node::SECONDS);
    assert!(rx.iter().all(|&h| inbox(&mut sim, h).is_empty()));
}

/// Fig. 7: C–R0; R0–L1 (1 ms); R0–R2 (30 ms); R2–L3, R2–L4 (1 ms). Leaves start both phases
/// at the same times, `gap` apart. Returns the results the collector received.
fn fig7(gap: u64) -> Vec<u64> {
    let mut sim = Simulator::new(7);
    let fast = LinkConfig::with_delay(MS);
    let c = host(&mut sim);
    let r0 = router(&mut sim);
    let r2 = router(&mut sim);
    let leaves: Vec<NodeId> = (0..3).map(|_| host(&mut sim)).collect();
    sim.connect(c, r0, fast);
    sim.connect(r0, leaves[0], fast);
    sim.connect(r0, r2, LinkConfig::with_delay(30 * MS));
    sim.connect(r2, leaves[1], fast);
    sim.connect(r2, leaves[2], fast);
    install_host_routes(&mut sim).unwrap();
    enable_esp(&mut sim, &[r0, r2], 8, 13).unwrap();
    let (count, value) = (Tag(1), Tag(2));
    for &l in &leaves {
        let ep = Endpoint::new(3, ip(l))
            .with_loc(Loc::OUTPUT)
            .with_dest(ip(c));
        let a = ep
            .packet(&Instruction::Count {
                counter: count,
                thresh: 1,
            })
            .unwrap();
        let b = Instruction::Collect {
            value,
            val: Value(1),
            counter: count,
            op: esp_proto::instr::CombineOp::Add,
        };
        let b = ep.packet(&b).unwrap();
        send_from(&mut sim, l, Instant::from_ticks(0), a);
        send_from(&mut sim, l, Instant::from_ticks(gap), b);
    }
    run_for(&mut sim, waist_node::SECONDS);
    // The root also forwards the first COUNT to the collector; keep COLLECT results.
    inbox(&mut sim, c)
        .iter()
        .filter_map(
            |p| match Endpoint::new(3, ip(c)).receive(p).unwrap().instr {
                Instruction::Collect { val, .. } => Some(val.0),
                _ => None,
            },
        )
        .collect()
}

#[test]
fn overlapping_phases_fail_and_two_delta_cures_it() {
    // δ, the largest one-way delay: L3 → R2 → R0 → C = 32 ms.
    let delta = 32 * MS;
    let early = fig7(5 * MS);
    assert_eq!(
        early.first(),
        Some(&1),
        "Node 0 delivers prematurely: {early:?}"
    );
    assert_eq!(fig7(2 * delta), [3], "an inter-phase delay of 2δ is enough");
}

#[test]
fn robust_aggregation_survives_loss_that_breaks_plain_aggregation() {
    let mut tree = small_tree(3);
    let mut rng = Rng::new(17);
    let (mut plain, mut robust) = (0, 0);
    let runs = 40;
    for _ in 0..runs {
        let lossy: Vec<_> = (0..4)
            .map(|_| tree.links[rng.below(tree.links.len() as u64) as usize])
            .collect();
        let loss = 100_000;
        plain += usize::from(
            tree.run(Scheme::Plain, &lossy, loss, 100 * MS, &mut rng)
                .correct,
        );
        let scheme = Scheme::Robust {
            words: 8,
            k: 11,
            limit: 3,
        };
        robust += usize::from(tree.run(scheme, &lossy, loss, 100 * MS, &mut rng).correct);
    }
    println!("10% loss on 4 links: plain {plain}/{runs} correct, robust (limit 3) {robust}/{runs}");
    assert!(robust >= runs * 9 / 10, "robust {robust}/{runs}");
    assert!(plain < runs * 7 / 10, "plain {plain}, robust {robust}");
}

#[test]
fn runs_are_repeatable_from_their_seeds() {
    let outcomes = |seed| {
        let mut tree = small_tree(seed);
        let mut rng = Rng::new(seed);
        (0..6)
            .map(|_| {
                let lossy: Vec<_> = (0..4)
                    .map(|_| tree.links[rng.below(tree.links.len() as u64) as usize])
                    .collect();
                tree.run(Scheme::Plain, &lossy, 200_000, 100 * MS, &mut rng)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(outcomes(21), outcomes(21));
    assert_ne!(
        outcomes(21),
        outcomes(22),
        "different seeds, different runs"
    );
}

#[test]
fn duplicated_packets_break_plain_but_not_robust_aggregation() {
    // §4.3: "the solution for losses protects against duplicates as well". Every link
    // duplicates 5% of packets.
    let mut tree = small_tree(5);
    for &l in &tree.links.clone() {
        let c = tree.sim.link_config(l);
        tree.sim.set_link_config(l, c.duplicate_ppm(50_000));
    }
    let mut rng = Rng::new(6);
    let (mut plain, mut robust) = (0, 0);
    let runs = 10;
    for _ in 0..runs {
        // `run` restores lossy links to the base config; pass none so duplication stays.
        plain += usize::from(tree.run(Scheme::Plain, &[], 0, 100 * MS, &mut rng).correct);
        let scheme = Scheme::Robust {
            words: 8,
            k: 11,
            limit: 2,
        };
        robust += usize::from(tree.run(scheme, &[], 0, 100 * MS, &mut rng).correct);
    }
    println!("5% duplication: plain {plain}/{runs} correct, robust {robust}/{runs}");
    assert_eq!(robust, runs);
    assert!(plain < runs / 2, "plain {plain}/{runs}");
}
