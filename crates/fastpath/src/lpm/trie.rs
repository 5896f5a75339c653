//! The binary trie behind [`LpmTable`](super::LpmTable) and
//! [`LpmTable6`](super::LpmTable6): one node per prefix bit, generic over the key width so
//! the IPv4 table walks `u32` words and the IPv6 table `u128` words (monomorphised; the
//! IPv4 lookup is the same code it was before IPv6 existed).
//!
//! Values live in a dense vector (`values`, with `owners` naming the node that holds each);
//! a removal swaps the last value into the hole. Nodes left without a route or children
//! by a removal are unlinked and their slots reused by later inserts, so memory follows
//! the live routes, not the history of inserts.

use alloc::vec::Vec;

/// A key word: an address whose bit 0 is the most significant.
pub(super) trait Key: Copy {
    /// Bits in the key (32 or 128).
    const BITS: u8;
    /// Bit `i` (0 = most significant) as 0 or 1; `i < BITS`.
    fn bit(self, i: u8) -> usize;
}

impl Key for u32 {
    const BITS: u8 = 32;
    #[inline]
    fn bit(self, i: u8) -> usize {
        ((self >> (31 - u32::from(i))) & 1) as usize
    }
}

impl Key for u128 {
    const BITS: u8 = 128;
    #[inline]
    fn bit(self, i: u8) -> usize {
        ((self >> (127 - u32::from(i))) & 1) as usize
    }
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    child: [u32; 2],
    route: u32,
}

const EMPTY: Node = Node {
    child: [NONE; 2],
    route: NONE,
};

/// Prefixes of `K` (given as key and length, host bits already zero) to values.
#[derive(Clone, Debug)]
pub(super) struct Trie<V> {
    nodes: Vec<Node>,
    free: Vec<u32>,
    values: Vec<V>,
    owners: Vec<u32>,
}

impl<V> Trie<V> {
    pub(super) fn new() -> Self {
        Self {
            nodes: alloc::vec![EMPTY],
            free: Vec::new(),
            values: Vec::new(),
            owners: Vec::new(),
        }
    }

    fn new_node(&mut self) -> u32 {
        match self.free.pop() {
            Some(i) => {
                if let Some(n) = self.nodes.get_mut(i as usize) {
                    *n = EMPTY;
                }
                i
            }
            None => {
                self.nodes.push(EMPTY);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    pub(super) fn insert<K: Key>(&mut self, key: K, len: u8, value: V) -> Option<V> {
        let mut at = 0u32;
        for i in 0..len.min(K::BITS) {
            let bit = key.bit(i);
            let next = self.nodes.get(at as usize).map_or(NONE, |n| n.child[bit]);
            at = if next == NONE {
                let new = self.new_node();
                if let Some(n) = self.nodes.get_mut(at as usize) {
                    n.child[bit] = new;
                }
                new
            } else {
                next
            };
        }
        let node = self.nodes.get_mut(at as usize)?;
        if node.route == NONE {
            node.route = self.values.len() as u32;
            self.values.push(value);
            self.owners.push(at);
            None
        } else {
            let slot = self.values.get_mut(node.route as usize)?;
            Some(core::mem::replace(slot, value))
        }
    }

    pub(super) fn remove<K: Key>(&mut self, key: K, len: u8) -> Option<V> {
        let len = len.min(K::BITS);
        // The path from the root: path[d] is the node at depth d.
        let mut path: Vec<u32> = Vec::with_capacity(usize::from(len) + 1);
        let mut at = 0u32;
        path.push(at);
        for i in 0..len {
            at = self.nodes.get(at as usize)?.child[key.bit(i)];
            if at == NONE {
                return None;
            }
            path.push(at);
        }
        let node = self.nodes.get_mut(at as usize)?;
        let route = node.route;
        if route as usize >= self.values.len() {
            return None; // NONE: no route here
        }
        node.route = NONE;
        let value = self.values.swap_remove(route as usize);
        self.owners.swap_remove(route as usize);
        if let Some(&moved) = self.owners.get(route as usize)
            && let Some(n) = self.nodes.get_mut(moved as usize)
        {
            n.route = route;
        }
        // Unlink nodes that now hold nothing, deepest first (never the root).
        for depth in (1..=len).rev() {
            let d = usize::from(depth);
            let (Some(&node), Some(&parent)) = (path.get(d), path.get(d - 1)) else {
                break;
            };
            let bare = self
                .nodes
                .get(node as usize)
                .is_some_and(|n| n.route == NONE && n.child == [NONE; 2]);
            if !bare {
                break;
            }
            if let Some(p) = self.nodes.get_mut(parent as usize) {
                p.child[key.bit(depth - 1)] = NONE;
            }
            self.free.push(node);
        }
        Some(value)
    }

    /// The longest stored prefix containing `key`: its length and value.
    #[inline]
    pub(super) fn lookup<K: Key>(&self, key: K) -> Option<(u8, &V)> {
        let mut best: Option<(u8, u32)> = None;
        let mut at = 0usize;
        let mut depth = 0u8;
        loop {
            let node = self.nodes.get(at)?;
            if node.route != NONE {
                best = Some((depth, node.route));
            }
            if depth == K::BITS {
                break;
            }
            let next = node.child[key.bit(depth)];
            if next == NONE {
                break;
            }
            at = next as usize;
            depth += 1;
        }
        let (len, route) = best?;
        self.values.get(route as usize).map(|v| (len, v))
    }

    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    /// Every route of an IPv4 trie: its key (host bits zero), length and value, in no
    /// particular order. Walks the nodes once (an explicit stack, no recursion).
    pub(super) fn routes_v4(&self) -> Vec<(u32, u8, &V)> {
        let mut out = Vec::with_capacity(self.values.len());
        let mut stack: Vec<(u32, u32, u8)> = alloc::vec![(0, 0, 0)];
        while let Some((at, key, depth)) = stack.pop() {
            let Some(node) = self.nodes.get(at as usize) else {
                continue;
            };
            if let Some(v) = self.values.get(node.route as usize) {
                out.push((key, depth, v));
            }
            if depth >= <u32 as Key>::BITS {
                continue;
            }
            for (bit, &child) in node.child.iter().enumerate() {
                if child != NONE {
                    let key = key | ((bit as u32) << (31 - u32::from(depth)));
                    stack.push((child, key, depth + 1));
                }
            }
        }
        out
    }

    /// Nodes in use (the root included): for tests of pruning.
    #[cfg(test)]
    pub(super) fn live_nodes(&self) -> usize {
        self.nodes.len() - self.free.len()
    }
}
