//! Longest-prefix-match tables for IPv4 and IPv6: the routing layer's "long lookup" (the
//! slow path the [`RouteCache`](crate::apps::route::RouteCache) sits in front of), and the
//! tables a router fills with the prefixes distance-vector routing learns
//! ([`crate::dv`]).
//!
//! A binary trie, one node per prefix bit, like the BSD radix tree the paper's
//! experiments cached (without its path compression): lookup walks at most 32 (IPv4,
//! [`LpmTable`]) or 128 (IPv6, [`LpmTable6`]) nodes from the root and remembers the last
//! node holding a route. Both tables share one trie, generic over the address word.
//! Routes can be removed (withdrawn); nodes a removal leaves empty are reused.
//!
//! For the per-packet path, [`LpmTable::compile`] turns an IPv4 table into a
//! [`CompiledLpm`]: read-only, a multibit trie of stride 8 that answers the same lookups
//! reading at most four entries (one per address byte) instead of up to 33 nodes.
//!
//! ```
//! use fastpath::lpm::{LpmTable6, Prefix6};
//!
//! let mut t = LpmTable6::new();
//! let doc = Prefix6::new([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 32)?;
//! t.insert(doc, "documentation");
//! let host = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
//! assert_eq!(t.lookup(host), Some((doc, &"documentation")));
//! assert_eq!(t.remove(doc), Some("documentation"));
//! assert!(t.lookup(host).is_none());
//! # Ok::<(), fastpath::lpm::PrefixError>(())
//! ```

mod compiled;
mod trie;
mod v6;

use core::fmt;

pub use compiled::CompiledLpm;
use trie::Trie;
pub use v6::{LpmTable6, Prefix6};

/// Why a prefix cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// IPv4 prefix length above 32; carries the length.
    TooLong(u8),
    /// IPv6 prefix length above 128; carries the length.
    TooLong6(u8),
    /// The address has bits set past the prefix length (e.g. `10.0.0.1/8`).
    HostBitsSet,
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixError::TooLong(n) => write!(f, "prefix length {n} exceeds 32"),
            PrefixError::TooLong6(n) => write!(f, "IPv6 prefix length {n} exceeds 128"),
            PrefixError::HostBitsSet => f.write_str("address has bits set past the prefix"),
        }
    }
}

impl core::error::Error for PrefixError {}

/// A prefix of either family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpPrefix {
    /// An IPv4 prefix.
    V4(Prefix),
    /// An IPv6 prefix.
    V6(Prefix6),
}

impl IpPrefix {
    /// The prefix length.
    pub fn len(self) -> u8 {
        match self {
            Self::V4(p) => p.len(),
            Self::V6(p) => p.len(),
        }
    }

    /// Whether this is a default route (`0.0.0.0/0` or `::/0`).
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

impl From<Prefix> for IpPrefix {
    fn from(p: Prefix) -> Self {
        Self::V4(p)
    }
}

impl From<Prefix6> for IpPrefix {
    fn from(p: Prefix6) -> Self {
        Self::V6(p)
    }
}

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

/// A longest-prefix-match table mapping IPv4 prefixes to values.
#[derive(Clone, Debug)]
pub struct LpmTable<V> {
    trie: Trie<V>,
}

impl<V> Default for LpmTable<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> LpmTable<V> {
    /// An empty table.
    pub fn new() -> Self {
        LpmTable { trie: Trie::new() }
    }

    /// Adds or replaces the route for `prefix`; returns the value it replaced.
    pub fn insert(&mut self, prefix: Prefix, value: V) -> Option<V> {
        self.trie.insert(prefix.addr, prefix.len, value)
    }

    /// Removes the route for exactly `prefix` (a withdrawn route); returns its value, or
    /// `None` if the table held no route for it. Shorter and longer prefixes stay.
    pub fn remove(&mut self, prefix: Prefix) -> Option<V> {
        self.trie.remove(prefix.addr, prefix.len)
    }

    /// The value of the longest prefix containing `addr`, with that prefix.
    pub fn lookup(&self, addr: [u8; 4]) -> Option<(Prefix, &V)> {
        let a = u32::from_be_bytes(addr);
        let (len, v) = self.trie.lookup(a)?;
        let prefix = Prefix {
            addr: a & mask(len),
            len,
        };
        Some((prefix, v))
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.trie.len()
    }

    /// Whether the table has no route.
    pub fn is_empty(&self) -> bool {
        self.trie.len() == 0
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

    #[test]
    fn remove_withdraws_only_that_prefix() {
        let mut t = LpmTable::new();
        t.insert(p([10, 0, 0, 0], 8), 8);
        t.insert(p([10, 1, 0, 0], 16), 16);
        t.insert(p([10, 1, 2, 0], 24), 24);
        assert_eq!(t.remove(p([10, 1, 0, 0], 16)), Some(16));
        assert_eq!(t.remove(p([10, 1, 0, 0], 16)), None);
        assert_eq!(t.remove(p([10, 2, 0, 0], 16)), None);
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup([10, 1, 9, 9]), Some((p([10, 0, 0, 0], 8), &8)));
        assert_eq!(t.lookup([10, 1, 2, 9]), Some((p([10, 1, 2, 0], 24), &24)));
        assert_eq!(t.remove(p([10, 1, 2, 0], 24)), Some(24));
        assert_eq!(t.lookup([10, 1, 2, 9]), Some((p([10, 0, 0, 0], 8), &8)));
        // The /24's branch below the /8 is unlinked: only the root and the /8's path remain.
        assert_eq!(t.trie.live_nodes(), 9);
        assert_eq!(t.remove(p([10, 0, 0, 0], 8)), Some(8));
        assert!(t.is_empty());
        assert_eq!(t.trie.live_nodes(), 1);
        assert_eq!(t.lookup([10, 0, 0, 1]), None);
        // Freed nodes are reused.
        t.insert(p([192, 168, 0, 0], 16), 1);
        assert_eq!(t.trie.live_nodes(), 17);
        assert_eq!(t.lookup([192, 168, 3, 4]).map(|x| *x.1), Some(1));
    }

    fn naive(routes: &[(Prefix, u32)], addr: [u8; 4]) -> Option<(Prefix, u32)> {
        // The longest containing prefix (each prefix appears at most once).
        let mut best: Option<(Prefix, u32)> = None;
        for &(pre, v) in routes {
            if pre.contains(addr) && best.is_none_or(|(b, _)| pre.len() > b.len()) {
                best = Some((pre, v));
            }
        }
        best
    }

    proptest! {
        /// Random inserts and removals (a removal names a prefix inserted before, or a
        /// random one) against a list scanned linearly.
        #[test]
        fn matches_a_linear_scan(
            ops in proptest::collection::vec((any::<bool>(), any::<u32>(), 0u8..=32, any::<u32>()), 0..80),
            probes in proptest::collection::vec(any::<u32>(), 1..60),
        ) {
            let mut t = LpmTable::new();
            let mut routes: Vec<(Prefix, u32)> = Vec::new();
            for (remove, a, l, v) in ops {
                let pre = Prefix::new((a & mask(l)).to_be_bytes(), l).unwrap();
                if remove {
                    // Half the removals hit a live route.
                    let pre = if v % 2 == 0 && !routes.is_empty() {
                        routes[v as usize % routes.len()].0
                    } else {
                        pre
                    };
                    let want = routes.iter().find(|r| r.0 == pre).map(|r| r.1);
                    prop_assert_eq!(t.remove(pre), want);
                    routes.retain(|r| r.0 != pre);
                } else {
                    let want = routes.iter().find(|r| r.0 == pre).map(|r| r.1);
                    prop_assert_eq!(t.insert(pre, v), want);
                    routes.retain(|r| r.0 != pre);
                    routes.push((pre, v));
                }
                prop_assert_eq!(t.len(), routes.len());
            }
            // Probe random addresses and addresses inside each route.
            let inside = routes.iter().map(|r| u32::from_be_bytes(r.0.addr()) | 1);
            for a in probes.into_iter().chain(inside) {
                let addr = a.to_be_bytes();
                prop_assert_eq!(t.lookup(addr).map(|(p, v)| (p, *v)), naive(&routes, addr));
            }
        }
    }
}

impl fmt::Display for Prefix {
    /// `10.1.0.0/16`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            core::net::Ipv4Addr::from(self.addr()),
            self.len()
        )
    }
}

impl fmt::Display for Prefix6 {
    /// `fd00:1::/32`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            core::net::Ipv6Addr::from(self.addr()),
            self.len()
        )
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpPrefix::V4(p) => p.fmt(f),
            IpPrefix::V6(p) => p.fmt(f),
        }
    }
}

#[cfg(test)]
mod display_tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn prefixes_display_as_cidr() {
        assert_eq!(
            Prefix::new([10, 1, 0, 0], 16).unwrap().to_string(),
            "10.1.0.0/16"
        );
        let p6 = Prefix6::new([0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 32).unwrap();
        assert_eq!(IpPrefix::V6(p6).to_string(), "fd00:1::/32");
    }
}
