//! IPv6 prefixes and their longest-prefix-match table (the same trie as IPv4's, 128 bits).

use super::PrefixError;
use super::trie::Trie;

/// An IPv6 prefix: address and length (at most 128), host bits zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix6 {
    addr: u128,
    len: u8,
}

fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

impl Prefix6 {
    /// `addr/len`.
    ///
    /// # Errors
    ///
    /// [`PrefixError::TooLong6`] for lengths above 128, [`PrefixError::HostBitsSet`] if
    /// `addr` has bits set past `len`.
    pub fn new(addr: [u8; 16], len: u8) -> Result<Prefix6, PrefixError> {
        if len > 128 {
            return Err(PrefixError::TooLong6(len));
        }
        let addr = u128::from_be_bytes(addr);
        if addr & !mask6(len) != 0 {
            return Err(PrefixError::HostBitsSet);
        }
        Ok(Prefix6 { addr, len })
    }

    /// The network address.
    pub fn addr(self) -> [u8; 16] {
        self.addr.to_be_bytes()
    }

    /// The prefix length.
    pub fn len(self) -> u8 {
        self.len
    }

    /// Whether this is the default route `::/0`.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Whether `addr` falls inside the prefix.
    pub fn contains(self, addr: [u8; 16]) -> bool {
        u128::from_be_bytes(addr) & mask6(self.len) == self.addr
    }
}

/// A longest-prefix-match table mapping IPv6 prefixes to values (the API of
/// [`LpmTable`](super::LpmTable), with 16-byte addresses).
#[derive(Clone, Debug)]
pub struct LpmTable6<V> {
    trie: Trie<V>,
}

impl<V> Default for LpmTable6<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> LpmTable6<V> {
    /// An empty table.
    pub fn new() -> Self {
        LpmTable6 { trie: Trie::new() }
    }

    /// Adds or replaces the route for `prefix`; returns the value it replaced.
    pub fn insert(&mut self, prefix: Prefix6, value: V) -> Option<V> {
        self.trie.insert(prefix.addr, prefix.len, value)
    }

    /// Removes the route for exactly `prefix` (a withdrawn route); returns its value, or
    /// `None` if the table held no route for it. Shorter and longer prefixes stay.
    pub fn remove(&mut self, prefix: Prefix6) -> Option<V> {
        self.trie.remove(prefix.addr, prefix.len)
    }

    /// The value of the longest prefix containing `addr`, with that prefix.
    pub fn lookup(&self, addr: [u8; 16]) -> Option<(Prefix6, &V)> {
        let a = u128::from_be_bytes(addr);
        let (len, v) = self.trie.lookup(a)?;
        let prefix = Prefix6 {
            addr: a & mask6(len),
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
    use std::vec::Vec;

    fn p(a: [u8; 16], l: u8) -> Prefix6 {
        Prefix6::new(a, l).unwrap()
    }

    /// 2001:db8::/32 and friends, written out byte by byte.
    const DOC: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    const DOC_1: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    const DOC_1_HOST: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7];
    const LOOPBACK: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

    #[test]
    fn longest_prefix_wins() {
        let mut t = LpmTable6::new();
        assert!(t.lookup(DOC_1_HOST).is_none());
        t.insert(p([0; 16], 0), "default");
        t.insert(p(DOC, 32), "doc");
        t.insert(p(DOC_1, 48), "doc-1");
        t.insert(p(DOC_1_HOST, 128), "host");
        t.insert(p(LOOPBACK, 128), "lo");
        assert_eq!(t.lookup(DOC_1_HOST).map(|x| *x.1), Some("host"));
        let mut other = DOC_1_HOST;
        other[15] = 8;
        assert_eq!(t.lookup(other), Some((p(DOC_1, 48), &"doc-1")));
        let mut two = DOC;
        two[5] = 2;
        assert_eq!(t.lookup(two), Some((p(DOC, 32), &"doc")));
        assert_eq!(
            t.lookup([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
                .map(|x| *x.1),
            Some("default")
        );
        assert_eq!(t.lookup(LOOPBACK).map(|x| *x.1), Some("lo"));
        assert_eq!(t.insert(p(DOC, 32), "DOC"), Some("doc"));
        assert_eq!(t.len(), 5);
        assert_eq!(t.remove(p(DOC_1, 48)), Some("doc-1"));
        assert_eq!(t.lookup(other).map(|x| *x.1), Some("DOC"));
        assert_eq!(t.lookup(DOC_1_HOST).map(|x| *x.1), Some("host"));
        assert_eq!(t.remove(p(DOC_1, 48)), None);
        assert_eq!(t.len(), 4);
        for (a, l) in [([0; 16], 0), (DOC, 32), (DOC_1_HOST, 128), (LOOPBACK, 128)] {
            assert!(t.remove(p(a, l)).is_some());
        }
        assert!(t.is_empty());
        assert_eq!(t.trie.live_nodes(), 1, "every node unlinked");
    }

    #[test]
    fn bad_prefixes_are_rejected() {
        assert_eq!(Prefix6::new([0; 16], 129), Err(PrefixError::TooLong6(129)));
        assert_eq!(Prefix6::new(DOC_1, 32), Err(PrefixError::HostBitsSet));
        assert_eq!(Prefix6::new(LOOPBACK, 127), Err(PrefixError::HostBitsSet));
        assert!(Prefix6::new(LOOPBACK, 128).is_ok());
        assert!(p(DOC, 32).contains(DOC_1_HOST));
        assert!(!p(DOC_1, 48).contains(DOC));
        assert!(p([0; 16], 0).is_empty());
        assert_eq!(p(DOC, 32).addr(), DOC);
        assert_eq!(p(DOC, 32).len(), 32);
    }

    fn naive(routes: &[(Prefix6, u32)], addr: [u8; 16]) -> Option<(Prefix6, u32)> {
        let mut best: Option<(Prefix6, u32)> = None;
        for &(pre, v) in routes {
            if pre.contains(addr) && best.is_none_or(|(b, _)| pre.len() > b.len()) {
                best = Some((pre, v));
            }
        }
        best
    }

    /// Addresses clustered under a few /16s so that prefixes nest and share paths.
    fn addr6() -> impl Strategy<Value = u128> {
        (0u128..4, any::<u128>()).prop_map(|(top, low)| (top << 112) | (low >> 16))
    }

    proptest! {
        /// Random inserts and removals against a list scanned linearly.
        #[test]
        fn matches_a_linear_scan(
            ops in proptest::collection::vec((any::<bool>(), addr6(), 0u8..=128, any::<u32>()), 0..80),
            probes in proptest::collection::vec(addr6(), 1..60),
        ) {
            let mut t = LpmTable6::new();
            let mut routes: Vec<(Prefix6, u32)> = Vec::new();
            for (remove, a, l, v) in ops {
                let pre = Prefix6::new((a & mask6(l)).to_be_bytes(), l).unwrap();
                let pre = if remove && v % 2 == 0 && !routes.is_empty() {
                    routes[v as usize % routes.len()].0
                } else {
                    pre
                };
                let want = routes.iter().find(|r| r.0 == pre).map(|r| r.1);
                routes.retain(|r| r.0 != pre);
                if remove {
                    prop_assert_eq!(t.remove(pre), want);
                } else {
                    prop_assert_eq!(t.insert(pre, v), want);
                    routes.push((pre, v));
                }
                prop_assert_eq!(t.len(), routes.len());
            }
            let inside = routes.iter().map(|r| u128::from_be_bytes(r.0.addr()) | 1);
            for a in probes.into_iter().chain(inside) {
                let addr = a.to_be_bytes();
                prop_assert_eq!(t.lookup(addr).map(|(p, v)| (p, *v)), naive(&routes, addr));
            }
        }
    }
}
