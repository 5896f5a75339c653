//! A compiled, read-only IPv4 longest-prefix match: [`CompiledLpm`], built from an
//! [`LpmTable`] when its routes change and asked on every packet.
//!
//! The type and its design are documented on [`CompiledLpm`].

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{LpmTable, Prefix, mask};

/// An entry's flag bit: set, the other 31 bits index a node; clear, they index a route.
const LINK: u32 = 1 << 31;
/// A leaf naming no route (no prefix covers the addresses that reach it).
const NO_ROUTE: u32 = LINK - 1;

/// Entries per node: one per value of an address byte.
const FANOUT: usize = 256;

/// A node: the entry for each value of the next address byte.
type Node = [u32; FANOUT];

/// A compiled, read-only IPv4 longest-prefix-match table.
///
/// Built by [`LpmTable::compile`] (or `From<&LpmTable<V>>`) after the routes change;
/// [`lookup`](CompiledLpm::lookup) then answers exactly as the table it was built from, in
/// at most five dependent loads. It does not follow later changes to that table: compile
/// again.
///
/// The binary trie behind [`LpmTable`] walks one node per address bit, so a /24 route
/// costs 25 dependent loads. The compiled form is a multibit trie of stride 8 with
/// controlled prefix expansion and leaf pushing: each node is 256 entries, one per value
/// of the next address byte, and each entry is either a leaf (the longest route covering
/// every address that reaches it, or none) or a link to the node for the next byte. A
/// lookup reads at most four entries, one per address byte, then the route they name:
///
/// ```text
///  address a.b.c.d
///  root[a] ──leaf──► routes[i] = (mask, length, value) ─► (a.b.c.d & mask, &value)
///     │ link
///  node[b] ──leaf──► routes[i]
///     │ link
///  node[c] ──leaf──► routes[i]
///     │ link
///  node[d] ──leaf──► routes[i]          (the fourth level holds leaves only)
/// ```
///
/// Building sorts the routes by length and writes each over the entries its prefix spans
/// at the level of its last byte (a /20 fills 16 entries of a second-level node); a longer
/// route written later overwrites, and a node created under a leaf starts as 256 copies of
/// that leaf, so every entry ends up naming its longest covering route.
///
/// ```
/// use fastpath::lpm::{LpmTable, Prefix};
///
/// let mut t = LpmTable::new();
/// let ten = Prefix::new([10, 0, 0, 0], 8)?;
/// let lab = Prefix::new([10, 1, 16, 0], 20)?;
/// t.insert(ten, "ten");
/// t.insert(lab, "lab");
/// let c = t.compile();
/// assert_eq!(c.lookup([10, 1, 31, 9]), Some((lab, &"lab")));
/// assert_eq!(c.lookup([10, 1, 32, 9]), Some((ten, &"ten")));
/// assert_eq!(c.lookup([10, 1, 31, 9]), t.lookup([10, 1, 31, 9]));
/// assert_eq!(c.lookup([11, 0, 0, 1]), None);
/// # Ok::<(), fastpath::lpm::PrefixError>(())
/// ```
///
/// # Memory
///
/// Nodes exist only where routes longer than a level exist: the root, plus one node per
/// distinct first byte of the routes longer than /8, per distinct first two bytes of the
/// routes longer than /16, and per distinct first three bytes of the routes longer than
/// /24. With `n8`, `n16`, `n24` the numbers of routes longer than /8, /16 and /24 there
/// are at most `1 + min(256, n8) + min(65,536, n16) + min(2^24, n24)` nodes of 1 KiB
/// (256 × `u32`), so at most `1 + 3n` KiB for `n` routes, plus one `(u32, u8, V)` per
/// route. A router's few hundred /24s take at most a few hundred KiB (256 /24s in one /16:
/// three nodes, 3 KiB); a table whose longer routes fall in 50,000 distinct /16s, none
/// longer than /24, takes about 50 MiB of nodes however many routes it has (every /24 of
/// the IPv4 space would take 64 MiB).
#[derive(Clone, Debug)]
pub struct CompiledLpm<V> {
    /// The first level (first address byte).
    root: Box<Node>,
    /// The nodes below the root; links index this vector.
    nodes: Vec<Node>,
    /// Each route's prefix mask, length and value; leaves index this vector.
    routes: Vec<Route<V>>,
}

/// A route as a leaf names it: the mask of its prefix, the prefix length, the value.
#[derive(Clone, Debug)]
struct Route<V> {
    mask: u32,
    len: u8,
    value: V,
}

impl<V> Default for CompiledLpm<V> {
    /// A table without routes (every lookup answers `None`).
    fn default() -> Self {
        CompiledLpm {
            root: Box::new([NO_ROUTE; FANOUT]),
            nodes: Vec::new(),
            routes: Vec::new(),
        }
    }
}

impl<V: Clone> LpmTable<V> {
    /// The table's routes compiled into a [`CompiledLpm`]: the same answers, fewer memory
    /// accesses per lookup. Costs one pass over the routes, a sort by length, and 1 KiB per
    /// node (see the [memory bound](CompiledLpm#memory)); the table itself is unchanged.
    ///
    /// Call this after the last change to the routes; the compiled table is a snapshot.
    pub fn compile(&self) -> CompiledLpm<V> {
        CompiledLpm::from(self)
    }
}

impl<V: Clone> From<&LpmTable<V>> for CompiledLpm<V> {
    /// Compiles `table` (see [`LpmTable::compile`]).
    ///
    /// A table of more than 2^31 − 1 routes (tens of GiB as a binary trie) cannot be
    /// indexed by the compiled entries: routes are taken shortest first, and those past
    /// that many are left out.
    fn from(table: &LpmTable<V>) -> Self {
        let mut routes = table.trie.routes_v4();
        // Shortest first, so a longer route overwrites the entries of the shorter ones it
        // nests in, and never meets a link inside the span it fills (links are only made
        // by routes longer than the span's level).
        routes.sort_unstable_by_key(|&(_, len, _)| len);
        let mut c = CompiledLpm {
            routes: Vec::with_capacity(routes.len()),
            ..CompiledLpm::default()
        };
        for (key, len, value) in routes {
            let Ok(index) = u32::try_from(c.routes.len()) else {
                break;
            };
            if index >= NO_ROUTE {
                break;
            }
            c.routes.push(Route {
                mask: mask(len),
                len,
                value: value.clone(),
            });
            c.fill(key, len, index);
        }
        c
    }
}

impl<V> CompiledLpm<V> {
    /// Writes route `index` (`key/len`, host bits zero) over the entries its prefix spans,
    /// creating the nodes on its way down.
    fn fill(&mut self, key: u32, len: u8, index: u32) {
        let bytes = key.to_be_bytes();
        let len = usize::from(len.min(32));
        // The level holding the prefix's last (possibly partial) byte.
        let level = len.saturating_sub(1) / 8;
        // The node being walked: `None` for the root, else an index into `nodes`.
        let mut at: Option<usize> = None;
        for &b in bytes.iter().take(level) {
            let new = self.nodes.len();
            let Some(slot) = self.node_mut(at).map(|n| &mut n[usize::from(b)]) else {
                return;
            };
            let entry = *slot;
            if entry & LINK != 0 {
                at = Some((entry & !LINK) as usize);
                continue;
            }
            // A new node below a leaf: every entry starts as that leaf (leaf pushing).
            let Ok(link) = u32::try_from(new) else {
                return; // never: at most 256 + 65,536 + 2^24 nodes below the root
            };
            *slot = LINK | link;
            self.nodes.push([entry; FANOUT]);
            at = Some(new);
        }
        // The prefix spans 2^(8(level + 1) − len) entries of that node, from its last byte.
        let span = 1usize << (8 * (level + 1) - len);
        let start = bytes.get(level).map_or(0, |&b| usize::from(b));
        if let Some(entries) = self
            .node_mut(at)
            .and_then(|n| n.get_mut(start..start + span))
        {
            entries.fill(index);
        }
    }

    /// The root (`None`) or node `at` below it.
    fn node_mut(&mut self, at: Option<usize>) -> Option<&mut Node> {
        match at {
            None => Some(&mut self.root),
            Some(i) => self.nodes.get_mut(i),
        }
    }

    /// The value of the longest prefix containing `addr`, with that prefix: the same answer
    /// as [`LpmTable::lookup`] on the table this was compiled from.
    #[inline]
    pub fn lookup(&self, addr: [u8; 4]) -> Option<(Prefix, &V)> {
        let [a, b, c, d] = addr;
        // An index from a `u8` is below FANOUT: indexing a node cannot panic.
        let mut entry = self.root[usize::from(a)];
        for byte in [b, c, d] {
            if entry & LINK == 0 {
                break;
            }
            entry = self.nodes.get((entry & !LINK) as usize)?[usize::from(byte)];
        }
        // A link here (never built at the fourth level) indexes past the routes: `None`.
        let route = self.routes.get(entry as usize)?;
        let prefix = Prefix {
            addr: u32::from_be_bytes(addr) & route.mask,
            len: route.len,
        };
        Some((prefix, &route.value))
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether the table has no route.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Number of 256-entry nodes, the root included (each 1 KiB; see the
    /// [memory bound](CompiledLpm#memory)).
    pub fn nodes(&self) -> usize {
        1 + self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    fn p(a: [u8; 4], l: u8) -> Prefix {
        Prefix::new(a, l).unwrap()
    }

    /// `lookup` of the compiled table equals the trie's for every address in `probes`.
    fn agree<V: Clone + PartialEq + core::fmt::Debug>(t: &LpmTable<V>, probes: &[[u8; 4]]) {
        let c = t.compile();
        assert_eq!(c.len(), t.len());
        for &a in probes {
            assert_eq!(c.lookup(a), t.lookup(a), "at {a:?}");
        }
    }

    #[test]
    fn empty_table_answers_none() {
        let t: LpmTable<u8> = LpmTable::new();
        let c = t.compile();
        assert!(c.is_empty());
        assert_eq!(c.nodes(), 1);
        for a in [[0; 4], [10, 0, 0, 1], [255; 4]] {
            assert_eq!(c.lookup(a), None);
        }
        assert_eq!(CompiledLpm::<u8>::default().lookup([1, 2, 3, 4]), None);
    }

    #[test]
    fn default_route_covers_everything() {
        let mut t = LpmTable::new();
        t.insert(p([0; 4], 0), 7);
        let c = t.compile();
        assert_eq!(c.nodes(), 1);
        assert_eq!(c.lookup([0; 4]), Some((p([0; 4], 0), &7)));
        assert_eq!(c.lookup([255; 4]), Some((p([0; 4], 0), &7)));
        agree(&t, &[[0; 4], [128, 0, 0, 0], [255; 4]]);
    }

    #[test]
    fn host_route_matches_one_address() {
        let mut t = LpmTable::new();
        t.insert(p([192, 168, 1, 77], 32), "host");
        let c = t.compile();
        assert_eq!(c.nodes(), 4); // root and one node per further byte
        assert_eq!(
            c.lookup([192, 168, 1, 77]),
            Some((p([192, 168, 1, 77], 32), &"host"))
        );
        for a in [
            [192, 168, 1, 76],
            [192, 168, 1, 78],
            [192, 168, 0, 77],
            [0; 4],
        ] {
            assert_eq!(c.lookup(a), None);
        }
    }

    #[test]
    fn nested_routes_pick_the_longest() {
        let mut t = LpmTable::new();
        t.insert(p([0; 4], 0), "default");
        t.insert(p([10, 0, 0, 0], 8), "/8");
        t.insert(p([10, 1, 0, 0], 16), "/16");
        t.insert(p([10, 1, 2, 0], 24), "/24");
        let c = t.compile();
        assert_eq!(c.nodes(), 3); // root, 10.x, 10.1.x
        assert_eq!(
            c.lookup([10, 1, 2, 3]),
            Some((p([10, 1, 2, 0], 24), &"/24"))
        );
        assert_eq!(
            c.lookup([10, 1, 3, 3]),
            Some((p([10, 1, 0, 0], 16), &"/16"))
        );
        assert_eq!(c.lookup([10, 2, 2, 3]), Some((p([10, 0, 0, 0], 8), &"/8")));
        assert_eq!(c.lookup([11, 1, 2, 3]), Some((p([0; 4], 0), &"default")));
        agree(
            &t,
            &[
                [10, 1, 2, 0],
                [10, 1, 2, 255],
                [10, 1, 1, 255],
                [10, 1, 3, 0],
                [10, 0, 255, 255],
                [10, 2, 0, 0],
                [9, 255, 255, 255],
                [11, 0, 0, 0],
            ],
        );
    }

    #[test]
    fn partial_bytes_expand_to_their_span() {
        // /20 and /28 inside a /12: spans of 16 entries in their nodes.
        let mut t = LpmTable::new();
        t.insert(p([172, 16, 0, 0], 12), 12);
        t.insert(p([172, 16, 16, 0], 20), 20);
        t.insert(p([172, 16, 16, 32], 28), 28);
        let c = t.compile();
        assert_eq!(
            c.lookup([172, 16, 16, 47]),
            Some((p([172, 16, 16, 32], 28), &28))
        );
        assert_eq!(
            c.lookup([172, 16, 16, 48]),
            Some((p([172, 16, 16, 0], 20), &20))
        );
        assert_eq!(
            c.lookup([172, 16, 31, 255]),
            Some((p([172, 16, 16, 0], 20), &20))
        );
        assert_eq!(
            c.lookup([172, 16, 32, 0]),
            Some((p([172, 16, 0, 0], 12), &12))
        );
        assert_eq!(
            c.lookup([172, 31, 255, 255]),
            Some((p([172, 16, 0, 0], 12), &12))
        );
        assert_eq!(c.lookup([172, 32, 0, 0]), None);
    }

    #[test]
    fn a_snapshot_ignores_later_changes() {
        let mut t = LpmTable::new();
        t.insert(p([10, 0, 0, 0], 8), 1);
        let c = t.compile();
        t.insert(p([10, 1, 0, 0], 16), 2);
        t.remove(p([10, 0, 0, 0], 8));
        assert_eq!(c.lookup([10, 1, 0, 1]), Some((p([10, 0, 0, 0], 8), &1)));
        agree(&t, &[[10, 1, 0, 1], [10, 2, 0, 1]]);
    }

    /// Nodes per level the memory bound allows: distinct leading bytes of longer routes.
    fn node_bound(routes: &[Prefix]) -> usize {
        let mut n = 1;
        for level in 1..=3u8 {
            let mut heads: Vec<u32> = routes
                .iter()
                .filter(|r| r.len() > 8 * level)
                .map(|r| u32::from_be_bytes(r.addr()) >> (32 - 8 * u32::from(level)))
                .collect();
            heads.sort_unstable();
            heads.dedup();
            n += heads.len();
        }
        n
    }

    /// A route set: prefixes of every length, half of them cut from a few shared
    /// addresses so they nest and overlap.
    fn ops() -> impl Strategy<Value = Vec<(bool, bool, u32, u8, u32)>> {
        proptest::collection::vec(
            (
                prop::bool::weighted(0.15), // remove
                any::<bool>(),              // from the shared bases
                any::<u32>(),
                0u8..=32,
                any::<u32>(),
            ),
            0..120,
        )
    }

    proptest! {
        /// The compiled table answers every address exactly as the trie it came from:
        /// random addresses, and each route's first and last address and its neighbours
        /// just outside. Its node count stays within the documented bound.
        #[test]
        fn matches_the_trie(
            bases in proptest::array::uniform4(any::<u32>()),
            ops in ops(),
            probes in proptest::collection::vec(any::<u32>(), 0..64),
        ) {
            let mut t = LpmTable::new();
            for (remove, shared, a, l, v) in ops {
                let a = if shared { bases[(a % 4) as usize] } else { a };
                let pre = Prefix::new((a & mask(l)).to_be_bytes(), l).unwrap();
                if remove {
                    t.remove(pre);
                } else {
                    t.insert(pre, v);
                }
            }
            let c = t.compile();
            prop_assert_eq!(c.len(), t.len());
            let routes: Vec<Prefix> = t
                .trie
                .routes_v4()
                .into_iter()
                .map(|(k, l, _)| Prefix { addr: k, len: l })
                .collect();
            prop_assert_eq!(routes.len(), t.len());
            prop_assert!(c.nodes() <= node_bound(&routes));
            let edges = routes.iter().flat_map(|r| {
                let first = r.addr;
                let last = first | !mask(r.len);
                [first, last, first.wrapping_sub(1), last.wrapping_add(1), first ^ 0x80]
            });
            for a in probes.into_iter().chain(bases).chain(edges) {
                let addr = a.to_be_bytes();
                prop_assert_eq!(c.lookup(addr), t.lookup(addr), "at {:?}", addr);
            }
        }
    }
}
