//! A longest-prefix-match table for IPv4: the routing layer's "long lookup" (the slow path
//! the [`RouteCache`](crate::apps::route::RouteCache) sits in front of).
//!
//! A binary trie, one node per prefix bit, like the BSD radix tree the paper's
//! experiments cached (without its path compression): lookup walks at most 32 nodes from
//! the root and remembers the last node holding a route.

use alloc::vec::Vec;
use core::fmt;

/// Why a prefix cannot be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// Prefix length above 32; carries the length.
    TooLong(u8),
    /// The address has bits set past the prefix length (e.g. `10.0.0.1/8`).
    HostBitsSet,
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixError::TooLong(n) => write!(f, "prefix length {n} exceeds 32"),
            PrefixError::HostBitsSet => f.write_str("address has bits set past the prefix"),
        }
    }
}

impl core::error::Error for PrefixError {}

/// An IPv4 prefix: address and length, host bits zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix {
    addr: u32,
    len: u8,
}

impl Prefix {
    /// `addr/len`; rejects lengths above 32 and set host bits.
    pub fn new(addr: [u8; 4], len: u8) -> Result<Prefix, PrefixError> {
        if len > 32 {
            return Err(PrefixError::TooLong(len));
        }
        let addr = u32::from_be_bytes(addr);
        if addr & !mask(len) != 0 {
            return Err(PrefixError::HostBitsSet);
        }
        Ok(Prefix { addr, len })
    }

    /// The network address.
    pub fn addr(self) -> [u8; 4] {
        self.addr.to_be_bytes()
    }

    /// The prefix length.
    pub fn len(self) -> u8 {
        self.len
    }

    /// Whether this is the default route `0.0.0.0/0`.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Whether `addr` falls inside the prefix.
    pub fn contains(self, addr: [u8; 4]) -> bool {
        u32::from_be_bytes(addr) & mask(self.len) == self.addr
    }
}

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    child: [u32; 2],
    route: u32,
}

/// A longest-prefix-match table mapping IPv4 prefixes to values.
#[derive(Clone, Debug)]
pub struct LpmTable<V> {
    nodes: Vec<Node>,
    values: Vec<V>,
    routes: usize,
}

impl<V> Default for LpmTable<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> LpmTable<V> {
    /// An empty table.
    pub fn new() -> Self {
        LpmTable {
            nodes: alloc::vec![Node {
                child: [NONE; 2],
                route: NONE,
            }],
            values: Vec::new(),
            routes: 0,
        }
    }

    /// Adds or replaces the route for `prefix`; returns the value it replaced.
    pub fn insert(&mut self, prefix: Prefix, value: V) -> Option<V> {
        let mut at = 0usize;
        for i in 0..prefix.len {
            let bit = ((prefix.addr >> (31 - u32::from(i))) & 1) as usize;
            let next = self.nodes.get(at).map_or(NONE, |n| n.child[bit]);
            at = if next == NONE {
                let new = self.nodes.len();
                self.nodes.push(Node {
                    child: [NONE; 2],
                    route: NONE,
                });
                if let Some(n) = self.nodes.get_mut(at) {
                    n.child[bit] = new as u32;
                }
                new
            } else {
                next as usize
            };
        }
        let node = self.nodes.get_mut(at)?;
        if node.route == NONE {
            node.route = self.values.len() as u32;
            self.values.push(value);
            self.routes += 1;
            None
        } else {
            let slot = self.values.get_mut(node.route as usize)?;
            Some(core::mem::replace(slot, value))
        }
    }

    /// The value of the longest prefix containing `addr`, with that prefix.
    pub fn lookup(&self, addr: [u8; 4]) -> Option<(Prefix, &V)> {
        let a = u32::from_be_bytes(addr);
        let mut best: Option<(u8, u32)> = None;
        let mut at = 0usize;
        let mut depth = 0u8;
        loop {
            let node = self.nodes.get(at)?;
            if node.route != NONE {
                best = Some((depth, node.route));
            }
            if depth == 32 {
                break;
            }
            let bit = ((a >> (31 - u32::from(depth))) & 1) as usize;
            let next = node.child[bit];
            if next == NONE {
                break;
            }
            at = next as usize;
            depth += 1;
        }
        let (len, route) = best?;
        let prefix = Prefix {
            addr: a & mask(len),
            len,
        };
        self.values.get(route as usize).map(|v| (prefix, v))
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes
    }

    /// Whether the table has no route.
    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::string::ToString;
    use std::vec::Vec;

    fn p(a: [u8; 4], l: u8) -> Prefix {
        Prefix::new(a, l).unwrap()
    }

    #[test]
    fn longest_prefix_wins() {
        let mut t = LpmTable::new();
        assert!(t.lookup([1, 2, 3, 4]).is_none());
        t.insert(p([0, 0, 0, 0], 0), "default");
        t.insert(p([10, 0, 0, 0], 8), "ten");
        t.insert(p([10, 1, 0, 0], 16), "ten-one");
        t.insert(p([10, 1, 2, 3], 32), "host");
        assert_eq!(t.lookup([10, 1, 2, 3]).map(|x| *x.1), Some("host"));
        assert_eq!(t.lookup([10, 1, 2, 4]).map(|x| *x.1), Some("ten-one"));
        assert_eq!(t.lookup([10, 2, 0, 0]), Some((p([10, 0, 0, 0], 8), &"ten")));
        assert_eq!(t.lookup([11, 0, 0, 0]).map(|x| *x.1), Some("default"));
        assert_eq!(t.insert(p([10, 0, 0, 0], 8), "TEN"), Some("ten"));
        assert_eq!(t.len(), 4);
    }

    #[test]
    fn bad_prefixes_are_rejected() {
        assert_eq!(Prefix::new([0; 4], 33), Err(PrefixError::TooLong(33)));
        assert_eq!(Prefix::new([10, 0, 0, 1], 8), Err(PrefixError::HostBitsSet));
        assert!(PrefixError::HostBitsSet.to_string().contains("bits"));
        assert!(p([10, 0, 0, 0], 8).contains([10, 9, 9, 9]));
        assert!(!p([10, 0, 0, 0], 8).contains([11, 0, 0, 0]));
        assert!(p([0; 4], 0).is_empty());
    }

    fn naive(routes: &[(Prefix, u32)], addr: [u8; 4]) -> Option<(Prefix, u32)> {
        // Last insert of a prefix wins; then the longest containing prefix.
        let mut best: Option<(Prefix, u32)> = None;
        for &(pre, v) in routes {
            if pre.contains(addr) && best.is_none_or(|(b, _)| pre.len() >= b.len()) {
                best = Some((pre, v));
            }
        }
        best
    }

    proptest! {
        #[test]
        fn matches_a_linear_scan(
            raw in proptest::collection::vec((any::<u32>(), 0u8..=32, any::<u32>()), 0..60),
            probes in proptest::collection::vec(any::<u32>(), 1..60),
        ) {
            let mut t = LpmTable::new();
            let mut routes: Vec<(Prefix, u32)> = Vec::new();
            for (a, l, v) in raw {
                let pre = Prefix::new((a & mask(l)).to_be_bytes(), l).unwrap();
                t.insert(pre, v);
                routes.retain(|r| r.0 != pre);
                routes.push((pre, v));
            }
            prop_assert_eq!(t.len(), routes.len());
            // Probe random addresses and addresses inside each route.
            let inside = routes.iter().map(|r| u32::from_be_bytes(r.0.addr()) | 1);
            for a in probes.into_iter().chain(inside) {
                let addr = a.to_be_bytes();
                prop_assert_eq!(t.lookup(addr).map(|(p, v)| (p, *v)), naive(&routes, addr));
            }
        }
    }
}
