//! Shortest-path routes over a simulator's topology, for nodes that forward.

use alloc::vec;
use alloc::vec::Vec;

use crate::graph::Graph;
use crate::node::Node;
use crate::sim::{NodeId, Simulator};

/// Next hops from every node to every other, by least total link delay (ties: fewer hops,
/// then lower interface number, as [`Graph::shortest_paths`] breaks them), over the links as
/// they are now (up links only).
///
/// Routers in a simulation use it as their forwarding table; because it is computed once,
/// routes stay fixed while ESP-style computations run (paper §4.5 assumes stable routes).
///
/// ```
/// use netsim::{Instant, LinkConfig, Node, NodeId, Outbox, Routes, Simulator};
/// struct Dummy;
/// impl Node for Dummy {
///     fn handle_packet(&mut self, _: Instant, _: usize, _: Vec<u8>, _: &mut Outbox) {}
/// }
/// // a — b — c, and a slow shortcut a — c.
/// let mut sim = Simulator::new(0);
/// let [a, b, c] = [(); 3].map(|_| sim.add_node(Dummy));
/// sim.connect(a, b, LinkConfig::with_delay(1));
/// sim.connect(b, c, LinkConfig::with_delay(1));
/// sim.connect(a, c, LinkConfig::with_delay(5));
/// let routes = Routes::shortest(&sim);
/// assert_eq!(routes.next_hop(a, c), Some(0)); // via b, interface 0
/// assert_eq!(routes.distance(a, c), Some(2));
/// assert_eq!(routes.path(a, c), vec![a, b, c]);
/// ```
#[derive(Clone, Debug)]
pub struct Routes {
    n: usize,
    /// `hop[from * n + to]`: the interface `from` sends on toward `to`.
    hop: Vec<Option<usize>>,
    dist: Vec<Option<u64>>,
    /// `via[from * n + to]`: the neighbour `from` sends to toward `to`.
    via: Vec<Option<usize>>,
}

impl Routes {
    /// Computes routes over `sim`'s up links (a [`Graph`] of the simulator, costs are link
    /// delays, searched from every node).
    pub fn shortest<N: Node>(sim: &Simulator<N>) -> Self {
        let n = sim.node_count();
        let mut graph = Graph::new(n);
        for node in 0..n {
            for iface in 0..sim.iface_count(NodeId(node)) {
                let link = sim
                    .iface_link(NodeId(node), iface)
                    .filter(|l| sim.link_up(*l));
                if let (Some(link), Some((peer, _))) = (link, sim.peer(NodeId(node), iface)) {
                    graph.add_arc(node, iface, peer.0, sim.link_config(link).delay);
                }
            }
        }
        let mut routes = Routes {
            n,
            hop: vec![None; n * n],
            dist: vec![None; n * n],
            via: vec![None; n * n],
        };
        for src in 0..n {
            for (dst, path) in graph.shortest_paths(src).into_iter().enumerate() {
                let Some(path) = path else { continue };
                routes.dist[src * n + dst] = Some(path.cost);
                routes.hop[src * n + dst] = path.first.map(|h| h.iface);
                routes.via[src * n + dst] = path.first.map(|h| h.next);
            }
        }
        routes
    }

    fn at<T: Copy>(&self, table: &[Option<T>], from: NodeId, to: NodeId) -> Option<T> {
        if from.0 >= self.n || to.0 >= self.n {
            return None;
        }
        table.get(from.0 * self.n + to.0).copied().flatten()
    }

    /// The interface `from` forwards on toward `to` (`None` if unreachable or `from == to`).
    pub fn next_hop(&self, from: NodeId, to: NodeId) -> Option<usize> {
        self.at(&self.hop, from, to)
    }

    /// Total delay of the best path (`Some(0)` from a node to itself).
    pub fn distance(&self, from: NodeId, to: NodeId) -> Option<u64> {
        self.at(&self.dist, from, to)
    }

    /// The nodes on the best path, both ends included (empty if unreachable).
    pub fn path(&self, from: NodeId, to: NodeId) -> Vec<NodeId> {
        if self.distance(from, to).is_none() {
            return Vec::new();
        }
        let mut path = vec![from];
        let mut cur = from;
        while cur != to && path.len() <= self.n {
            match self.at(&self.via, cur, to) {
                Some(next) => {
                    cur = NodeId(next);
                    path.push(cur);
                }
                None => return Vec::new(),
            }
        }
        path
    }
}
