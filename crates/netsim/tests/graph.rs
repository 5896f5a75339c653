//! `Graph::shortest_paths` against a brute force over every simple path (ties included) and
//! against Floyd–Warshall distances.

// Test harness: panics are the failure reports; Floyd–Warshall reads best with indices.
#![allow(clippy::unwrap_used, clippy::needless_range_loop, missing_docs)]

use netsim::graph::{Graph, Hop, Path};
use proptest::prelude::*;

/// Edges as (a, b, cost, one way only); interfaces are numbered per node in order.
type Edges = Vec<(usize, usize, u64, bool)>;

/// The graph and its arcs as (from, iface, to, cost).
fn build(n: usize, edges: &Edges) -> (Graph, Vec<(usize, usize, usize, u64)>) {
    let mut g = Graph::new(n);
    let mut next_iface = vec![0; n];
    let mut arcs = Vec::new();
    let mut iface = |node: usize| {
        next_iface[node] += 1;
        next_iface[node] - 1
    };
    for &(a, b, cost, one_way) in edges {
        let (ia, ib) = (iface(a), iface(b));
        if one_way {
            g.add_arc(a, ia, b, cost);
            arcs.push((a, ia, b, cost));
        } else {
            g.add_edge(a, ia, b, ib, cost);
            arcs.push((a, ia, b, cost));
            arcs.push((b, ib, a, cost));
        }
    }
    (g, arcs)
}

/// The least (cost, hops, first hop) over every simple path from `src`, by depth-first search.
fn brute_force(n: usize, arcs: &[(usize, usize, usize, u64)], src: usize) -> Vec<Option<Path>> {
    fn walk(
        arcs: &[(usize, usize, usize, u64)],
        at: usize,
        path: Path,
        seen: &mut Vec<bool>,
        best: &mut Vec<Option<Path>>,
    ) {
        let key = |p: &Path| (p.cost, p.hops, p.first);
        if best[at].is_none_or(|b| key(&path) < key(&b)) {
            best[at] = Some(path);
        }
        for &(from, iface, to, cost) in arcs {
            if from != at || seen[to] {
                continue;
            }
            seen[to] = true;
            let next = Path {
                cost: path.cost + cost,
                hops: path.hops + 1,
                first: path.first.or(Some(Hop { iface, next: to })),
            };
            walk(arcs, to, next, seen, best);
            seen[to] = false;
        }
    }
    let mut best = vec![None; n];
    let mut seen = vec![false; n];
    seen[src] = true;
    let start = Path {
        cost: 0,
        hops: 0,
        first: None,
    };
    walk(arcs, src, start, &mut seen, &mut best);
    best
}

/// All-pairs distances.
fn floyd_warshall(n: usize, arcs: &[(usize, usize, usize, u64)]) -> Vec<Vec<Option<u64>>> {
    let mut d = vec![vec![None; n]; n];
    for i in 0..n {
        d[i][i] = Some(0);
    }
    for &(a, _, b, c) in arcs {
        if d[a][b].is_none_or(|x| c < x) {
            d[a][b] = Some(c);
        }
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if let (Some(x), Some(y)) = (d[i][k], d[k][j])
                    && d[i][j].is_none_or(|z| x + y < z)
                {
                    d[i][j] = Some(x + y);
                }
            }
        }
    }
    d
}

fn graph(max_nodes: usize, max_edges: usize) -> impl Strategy<Value = (usize, Edges)> {
    (1..=max_nodes).prop_flat_map(move |n| {
        // Small costs (zero included) so that ties are common.
        let edge = (0..n, 0..n, 0u64..4, proptest::bool::weighted(0.2));
        (Just(n), proptest::collection::vec(edge, 0..=max_edges))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn paths_are_the_least_of_every_simple_path((n, edges) in graph(6, 10)) {
        let (g, arcs) = build(n, &edges);
        for src in 0..n {
            prop_assert_eq!(g.shortest_paths(src), brute_force(n, &arcs, src), "from {}", src);
        }
    }

    #[test]
    fn costs_are_floyd_warshall_distances((n, edges) in graph(24, 60)) {
        let (g, arcs) = build(n, &edges);
        let d = floyd_warshall(n, &arcs);
        for src in 0..n {
            let costs: Vec<Option<u64>> =
                g.shortest_paths(src).iter().map(|p| p.map(|p| p.cost)).collect();
            prop_assert_eq!(&costs, &d[src], "from {}", src);
        }
    }
}

#[test]
fn a_source_outside_the_graph_reaches_nothing() {
    let mut g = Graph::new(2);
    g.add_edge(0, 0, 1, 0, 1);
    assert_eq!(g.shortest_paths(2), vec![None, None]);
    assert_eq!(g.node_count(), 2);
}
