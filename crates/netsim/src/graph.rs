//! Shortest paths over a small weighted graph: the workspace's one implementation.
//!
//! Nodes are `0 … n-1`; an edge joins two of them at a cost, and each end reaches it on an
//! interface of its own (the numbers a router sends on). [`Graph::shortest_paths`] runs
//! Dijkstra from one source and returns, for every node, the cost of the best path, its
//! length in hops and its first step (the interface the source sends on and the neighbour
//! at the other end). Among paths of equal cost the one with fewer hops wins, then the one
//! whose first interface is lower, so every caller picks the same path on a tie.
//!
//! Who uses it: [`Routes::shortest`](crate::Routes::shortest) (the simulator's forwarding
//! tables, costs are link delays), fastpath's `sim::Network::shortest_paths` (the reference
//! its distance-vector tables are checked against) and `waist up` (static routes of routers
//! without distance vector).
//!
//! ```
//! use netsim::graph::{Graph, Hop};
//!
//! // A square 0–1–2–3–0, every edge cost 1; node 0 has interface 0 to 1 and 1 to 3.
//! let mut g = Graph::new(4);
//! g.add_edge(0, 0, 1, 0, 1);
//! g.add_edge(1, 1, 2, 0, 1);
//! g.add_edge(2, 1, 3, 0, 1);
//! g.add_edge(3, 1, 0, 1, 1);
//! let from0 = g.shortest_paths(0);
//! // Two paths of cost 2 to node 2: the one leaving on the lower interface wins.
//! let to2 = from0[2].unwrap();
//! assert_eq!((to2.cost, to2.hops), (2, 2));
//! assert_eq!(to2.first, Some(Hop { iface: 0, next: 1 }));
//! assert_eq!(from0[3].unwrap().first, Some(Hop { iface: 1, next: 3 }));
//! assert_eq!(from0[0].unwrap().first, None); // the source itself, cost 0
//! // A cheaper path with more hops beats a dearer direct edge.
//! g.add_edge(0, 2, 2, 2, 3);
//! assert_eq!(g.shortest_paths(0)[2].unwrap().first, Some(Hop { iface: 0, next: 1 }));
//! // Unreachable nodes have no path.
//! assert_eq!(Graph::new(2).shortest_paths(0)[1], None);
//! ```

use alloc::collections::BinaryHeap;
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;

/// A weighted graph of nodes `0 … n-1` whose edges carry the interface each end uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// `arcs[node]`: the ways out of `node`, in the order they were added.
    arcs: Vec<Vec<Arc>>,
}

/// One direction of an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Arc {
    iface: usize,
    to: usize,
    cost: u64,
}

/// The first step of a path: the interface the source sends on and the neighbour there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hop {
    /// The source's interface.
    pub iface: usize,
    /// The node at the other end of it.
    pub next: usize,
}

/// The best path from a source to one node: least cost, then fewest hops, then lowest
/// first interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    /// The sum of its edges' costs (0 from the source to itself).
    pub cost: u64,
    /// How many edges it crosses (0 from the source to itself).
    pub hops: usize,
    /// Its first step (`None` from the source to itself).
    pub first: Option<Hop>,
}

impl Graph {
    /// A graph of `nodes` nodes and no edges.
    pub fn new(nodes: usize) -> Self {
        Graph {
            arcs: vec![Vec::new(); nodes],
        }
    }

    /// How many nodes it has.
    pub fn node_count(&self) -> usize {
        self.arcs.len()
    }

    /// Adds an edge between `a` and `b` costing `cost` in both directions: `a` reaches it on
    /// its interface `a_iface`, `b` on `b_iface`.
    ///
    /// # Panics
    ///
    /// If `a` or `b` is not a node of the graph.
    pub fn add_edge(&mut self, a: usize, a_iface: usize, b: usize, b_iface: usize, cost: u64) {
        self.add_arc(a, a_iface, b, cost);
        self.add_arc(b, b_iface, a, cost);
    }

    /// Adds one direction: `from` reaches `to` on its interface `iface` at `cost` (for
    /// graphs whose edges cost differently each way, or that are up one way only).
    ///
    /// # Panics
    ///
    /// If `from` or `to` is not a node of the graph.
    pub fn add_arc(&mut self, from: usize, iface: usize, to: usize, cost: u64) {
        assert!(
            to < self.arcs.len(),
            "node {to} is not in a graph of {}",
            self.arcs.len()
        );
        self.arcs[from].push(Arc { iface, to, cost });
    }

    /// The best path from `source` to every node (index = node; `None` where there is no
    /// path, and for every node if `source` is not in the graph). Dijkstra: O(E log E).
    pub fn shortest_paths(&self, source: usize) -> Vec<Option<Path>> {
        let n = self.arcs.len();
        let mut best: Vec<Option<Path>> = vec![None; n];
        if source >= n {
            return best;
        }
        // Ordered as the tie-breaking says: cost, hops, first step; then the node.
        let mut heap = BinaryHeap::new();
        heap.push(Reverse((0u64, 0usize, None::<Hop>, source)));
        while let Some(Reverse((cost, hops, first, node))) = heap.pop() {
            let Some(slot @ None) = best.get_mut(node) else {
                continue;
            };
            *slot = Some(Path { cost, hops, first });
            for arc in &self.arcs[node] {
                if best[arc.to].is_some() {
                    continue;
                }
                let first = first.or(Some(Hop {
                    iface: arc.iface,
                    next: arc.to,
                }));
                heap.push(Reverse((
                    cost.saturating_add(arc.cost),
                    hops + 1,
                    first,
                    arc.to,
                )));
            }
        }
        best
    }
}
