//! Routes against Floyd–Warshall, and packets forwarded hop by hop along them.

// Test harness: panics are the failure reports; Floyd–Warshall reads best with indices.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_range_loop,
    missing_docs
)]

use netsim::{Instant, LinkConfig, Node, NodeId, Outbox, Routes, Simulator};
use proptest::prelude::*;

/// Forwards packets `[dst, ...]` along a routing table; keeps those addressed to itself.
struct Router {
    me: usize,
    table: Vec<Option<usize>>, // next-hop interface per destination
    got: Vec<Instant>,
}

impl Node for Router {
    fn handle_packet(&mut self, now: Instant, _: usize, p: Vec<u8>, out: &mut Outbox) {
        let dst = usize::from(p[0]);
        if dst == self.me {
            self.got.push(now);
        } else if let Some(iface) = self.table[dst] {
            out.send(iface, p);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn routes_are_shortest_and_forwarding_follows_them(
        n in 2usize..12,
        extra in proptest::collection::vec((0usize..12, 0usize..12, 1u64..20), 0..20),
        chain_delays in proptest::collection::vec(1u64..20, 11),
        seed in any::<u64>(),
    ) {
        let mut sim = Simulator::new(seed);
        let ids: Vec<NodeId> = (0..n).map(|me| sim.add_node(Router { me, table: vec![], got: vec![] })).collect();
        let mut w = vec![vec![u64::MAX / 4; n]; n];
        for i in 0..n { w[i][i] = 0; }
        let mut link = |sim: &mut Simulator<Router>, a: usize, b: usize, d: u64| {
            sim.connect(ids[a], ids[b], LinkConfig::with_delay(d));
            w[a][b] = w[a][b].min(d);
            w[b][a] = w[b][a].min(d);
        };
        for i in 1..n { link(&mut sim, i - 1, i, chain_delays[i - 1]); } // connected
        for &(a, b, d) in &extra { if a < n && b < n && a != b { link(&mut sim, a, b, d); } }
        for k in 0..n { for i in 0..n { for j in 0..n {
            let via = w[i][k] + w[k][j];
            if via < w[i][j] { w[i][j] = via; }
        } } }
        let routes = Routes::shortest(&sim);
        for i in 0..n {
            for j in 0..n {
                prop_assert_eq!(routes.distance(ids[i], ids[j]), Some(w[i][j]));
                let path = routes.path(ids[i], ids[j]);
                prop_assert_eq!(path.first(), Some(&ids[i]));
                prop_assert_eq!(path.last(), Some(&ids[j]));
            }
        }
        // Install the tables and send one packet from node 0 to every node.
        for i in 0..n {
            let table = (0..n).map(|j| routes.next_hop(ids[i], ids[j])).collect();
            sim.act(ids[i], |r, _, _| r.table = table);
        }
        for j in 1..n {
            let iface = routes.next_hop(ids[0], ids[j]).unwrap();
            sim.act(ids[0], |_, _, out| out.send(iface, vec![j as u8]));
        }
        sim.run(10_000);
        for j in 1..n {
            prop_assert_eq!(&sim.node(ids[j]).got, &vec![Instant::from_ticks(w[0][j])]);
        }
    }
}

#[test]
fn down_links_are_routed_around_and_partitions_are_unreachable() {
    struct Nop;
    impl Node for Nop {
        fn handle_packet(&mut self, _: Instant, _: usize, _: Vec<u8>, _: &mut Outbox) {}
    }
    let mut sim = Simulator::new(0);
    let [a, b, c] = [(); 3].map(|_| sim.add_node(Nop));
    let ab = sim.connect(a, b, LinkConfig::with_delay(1));
    sim.connect(b, c, LinkConfig::with_delay(1));
    sim.connect(a, c, LinkConfig::with_delay(9));
    sim.set_link_up(ab, false);
    let r = Routes::shortest(&sim);
    assert_eq!(r.next_hop(a, b), Some(1)); // via c
    assert_eq!(r.distance(a, b), Some(10));
    assert_eq!(r.path(a, b), vec![a, c, b]);
    let d = sim.add_node(Nop);
    let r = Routes::shortest(&sim);
    assert_eq!(
        (r.next_hop(a, d), r.distance(a, d), r.path(a, d)),
        (None, None, vec![])
    );
    assert_eq!(r.next_hop(a, NodeId(99)), None);
}
