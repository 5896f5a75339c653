//! The node's routing state: static routes, routes learned by distance vector, multicast
//! groups, and the compiled lookup structures packets meet.
//!
//! ```text
//!  static routes ─┐
//!                 ├─ compile (on change) ─► IPv4: compiled LPM (stride-8 multibit trie);
//!  DV routes ─────┘                               with a cache, RouteCache (source-hash
//!                                                 cache ─► LPM) for packets with a hash
//!                                           IPv6: LPM
//!  groups: destination address ─► downstream interfaces (copies, never back out the input)
//! ```
//!
//! A static route wins over a learned one for the same prefix (an administrator's word
//! beats a protocol's); between different prefixes the longest match wins. A change to any
//! route recompiles the tables and clears the source-hash cache, whose answers may be stale.
//! The IPv4 longest-prefix match packets meet is [`CompiledLpm`], built from an
//! [`LpmTable`] at each compile: the same answers in at most four table reads instead of
//! one trie node per prefix bit. A source-hash cache miss is answered by the cache's own
//! trie (`RouteCache` keeps one), once per flow.
//!
//! A static prefix may name several interfaces in preference order (a primary and its
//! backups). Packets to it leave by the first interface that is up
//! ([`Node::set_link`](crate::Node::set_link)); when all of them are down the prefix is as if
//! withdrawn, and the longest-prefix match falls back to shorter or learned routes. A link
//! going down or up recompiles the tables only if some static prefix's choice changes, so
//! the per-packet path is the same compiled lookup as with one interface per prefix.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use core::net::IpAddr;

use fastpath::apps::route::RouteCache;
use fastpath::cache::Lookup;
use fastpath::flow::SourceHash;
use fastpath::lpm::{CompiledLpm, IpPrefix, LpmTable, LpmTable6, Prefix, Prefix6, PrefixError};

/// An IPv4 or IPv6 prefix from an address and a length.
///
/// # Errors
///
/// [`PrefixError`] for a length past the family's width or host bits set.
pub fn prefix(addr: IpAddr, len: u8) -> Result<IpPrefix, PrefixError> {
    Ok(match addr {
        IpAddr::V4(a) => IpPrefix::V4(Prefix::new(a.octets(), len)?),
        IpAddr::V6(a) => IpPrefix::V6(Prefix6::new(a.octets(), len)?),
    })
}

/// The IPv4 lookup: the compiled longest-prefix match, with or without a source-hash
/// cache in front (packets without a source hash go to the compiled table).
#[derive(Clone, Debug)]
enum V4Table {
    Plain(CompiledLpm<u16>),
    Cached(RouteCache<u16>, CompiledLpm<u16>),
}

/// How a route was found (for the node's counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// From the longest-prefix match.
    Lpm,
    /// The source-hash cache answered.
    Hit,
    /// The cache missed; the LPM answered and the answer is now cached.
    Miss,
}

/// The node's routes. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Routes {
    /// Each static prefix's interfaces, in preference order (never empty).
    statics: BTreeMap<IpPrefix, Vec<u16>>,
    /// Interfaces that are down: static routes skip them.
    down: BTreeSet<u16>,
    learned: BTreeMap<IpPrefix, u16>,
    groups: BTreeMap<IpAddr, Vec<u16>>,
    v4: V4Table,
    v6: LpmTable6<u16>,
    cache_log2: Option<u8>,
}

impl Routes {
    /// No routes; a source-hash cache of `2^n` slots if `cache_log2` is `Some(n)`.
    pub(crate) fn new(cache_log2: Option<u8>) -> Routes {
        let mut r = Routes {
            statics: BTreeMap::new(),
            down: BTreeSet::new(),
            learned: BTreeMap::new(),
            groups: BTreeMap::new(),
            v4: V4Table::Plain(CompiledLpm::default()),
            v6: LpmTable6::new(),
            cache_log2,
        };
        r.compile();
        r
    }

    /// No routes, as [`Routes::new`], for a node whose interfaces were renumbered (new
    /// interface `j` continues old interface `from[j]`): the interfaces that were down stay
    /// down under their new numbers. Static routes, groups and learned routes are the
    /// caller's to add again.
    pub(crate) fn renumbered(&self, cache_log2: Option<u8>, from: &[Option<usize>]) -> Routes {
        let mut r = Routes::new(cache_log2);
        r.down = from
            .iter()
            .enumerate()
            .filter_map(|(j, f)| {
                let old = u16::try_from((*f)?).ok()?;
                let new = u16::try_from(j).ok()?;
                self.down.contains(&old).then_some(new)
            })
            .collect();
        r
    }

    /// Adds or replaces a static route over one interface.
    pub(crate) fn add_static(&mut self, prefix: IpPrefix, iface: u16) {
        self.add_static_via(prefix, &[iface]);
    }

    /// Adds or replaces a static route over `ifaces` in preference order (the first up one
    /// carries it); an empty list removes the route.
    pub(crate) fn add_static_via(&mut self, prefix: IpPrefix, ifaces: &[u16]) {
        if ifaces.is_empty() {
            self.remove_static(prefix);
            return;
        }
        if self.statics.get(&prefix).map(Vec::as_slice) != Some(ifaces) {
            self.statics.insert(prefix, ifaces.to_vec());
            self.compile();
        }
    }

    /// Removes a static route; whether there was one.
    pub(crate) fn remove_static(&mut self, prefix: IpPrefix) -> bool {
        let had = self.statics.remove(&prefix).is_some();
        if had {
            self.compile();
        }
        had
    }

    /// Marks `iface` up or down for the static routes; recompiles only if some static
    /// prefix's chosen interface changes.
    pub(crate) fn set_link(&mut self, iface: u16, up: bool) {
        if up != self.down.contains(&iface) {
            return; // already so
        }
        // The choices this flip can change: prefixes that list `iface` before (or as)
        // their current choice.
        let affected = self.statics.values().any(|links| {
            links
                .iter()
                .find(|&&i| i == iface || !self.down.contains(&i))
                .is_some_and(|&i| i == iface)
        });
        if up {
            self.down.remove(&iface);
        } else {
            self.down.insert(iface);
        }
        if affected {
            self.compile();
        }
    }

    /// Whether `iface` is up for the static routes (every interface is, until
    /// [`Node::set_link`](crate::Node::set_link) says otherwise).
    pub fn link_up(&self, iface: u16) -> bool {
        !self.down.contains(&iface)
    }

    /// The interface a static prefix's packets leave by now: its first up interface.
    fn chosen(&self, links: &[u16]) -> Option<u16> {
        links.iter().copied().find(|i| !self.down.contains(i))
    }

    /// Replaces the learned routes; recompiles only if they changed.
    pub(crate) fn set_learned(&mut self, learned: BTreeMap<IpPrefix, u16>) {
        if learned != self.learned {
            self.learned = learned;
            self.compile();
        }
    }

    /// Copies packets to `group` onto `downstream`.
    pub(crate) fn add_group(&mut self, group: IpAddr, downstream: Vec<u16>) {
        self.groups.insert(group, downstream);
    }

    /// The downstream interfaces of `group`, if it is one.
    #[inline]
    pub fn group(&self, group: IpAddr) -> Option<&[u16]> {
        self.group_of(&group)
    }

    /// As [`group`](Routes::group), by reference (the forwarding path: no address copy,
    /// nothing read when there are no groups).
    #[inline]
    pub(crate) fn group_of(&self, group: &IpAddr) -> Option<&[u16]> {
        if self.groups.is_empty() {
            return None;
        }
        self.groups.get(group).map(Vec::as_slice)
    }

    /// The static routes: each prefix with its interfaces in preference order (the first
    /// that is [up](Routes::link_up) carries it; none up: the prefix is withdrawn).
    pub fn statics(&self) -> impl Iterator<Item = (IpPrefix, &[u16])> + '_ {
        self.statics.iter().map(|(&p, l)| (p, l.as_slice()))
    }

    /// The interface static prefix `prefix` uses now: `None` if it has no static route or
    /// all its interfaces are down.
    pub fn static_choice(&self, prefix: IpPrefix) -> Option<u16> {
        self.statics.get(&prefix).and_then(|l| self.chosen(l))
    }

    /// The routes learned from the routing protocol (those not shadowed included).
    pub fn learned(&self) -> impl Iterator<Item = (IpPrefix, u16)> + '_ {
        self.learned.iter().map(|(&p, &i)| (p, i))
    }

    fn compile(&mut self) {
        let mut v4 = LpmTable::new();
        let mut v6 = LpmTable6::new();
        // Learned first, statics (each by its first up interface) over them.
        let statics: Vec<(IpPrefix, u16)> = self
            .statics
            .iter()
            .filter_map(|(&p, l)| self.chosen(l).map(|i| (p, i)))
            .collect();
        let routes = || {
            self.learned
                .iter()
                .map(|(&p, &i)| (p, i))
                .chain(statics.iter().copied())
        };
        for (p, i) in routes() {
            match p {
                IpPrefix::V4(p) => {
                    v4.insert(p, i);
                }
                IpPrefix::V6(p) => {
                    v6.insert(p, i);
                }
            }
        }
        let lpm = v4.compile();
        self.v4 = match self.cache_log2.and_then(|n| RouteCache::new(n).ok()) {
            Some(mut cache) => {
                for (p, i) in routes() {
                    if let IpPrefix::V4(p) = p {
                        cache.add_route(p, i);
                    }
                }
                V4Table::Cached(cache, lpm)
            }
            None => V4Table::Plain(lpm),
        };
        self.v6 = v6;
    }

    /// The interface toward `dst`: through the source-hash cache when the packet carries a
    /// source hash and the node has a cache, else by longest-prefix match.
    #[inline]
    pub(crate) fn lookup(
        &mut self,
        dst: &IpAddr,
        src: &IpAddr,
        hash: Option<SourceHash>,
    ) -> (Option<u16>, Found) {
        match (*dst, &mut self.v4) {
            (IpAddr::V4(d), V4Table::Plain(t)) => {
                (t.lookup(d.octets()).map(|(_, &i)| i), Found::Lpm)
            }
            (IpAddr::V4(d), V4Table::Cached(c, lpm)) => {
                let d = d.octets();
                match (hash, *src) {
                    (Some(h), IpAddr::V4(s)) => {
                        let (v, l) = c.route(h, d, s.octets(), 0);
                        let found = if l == Lookup::Hit {
                            Found::Hit
                        } else {
                            Found::Miss
                        };
                        (v.copied(), found)
                    }
                    _ => (lpm.lookup(d).map(|(_, &i)| i), Found::Lpm),
                }
            }
            (IpAddr::V6(d), _) => (self.v6.lookup(d.octets()).map(|(_, &i)| i), Found::Lpm),
        }
    }

    /// The interface toward `dst` by longest-prefix match alone (no cache).
    pub fn route(&self, dst: IpAddr) -> Option<u16> {
        match (dst, &self.v4) {
            (IpAddr::V4(d), V4Table::Plain(t) | V4Table::Cached(_, t)) => {
                t.lookup(d.octets()).map(|(_, &i)| i)
            }
            (IpAddr::V6(d), _) => self.v6.lookup(d.octets()).map(|(_, &i)| i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: [u8; 4], l: u8) -> IpPrefix {
        prefix(IpAddr::from(a), l).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn statics_win_over_learned_and_longest_wins() {
        for cache in [None, Some(8)] {
            let mut r = Routes::new(cache);
            let mut learned = BTreeMap::new();
            learned.insert(p([10, 0, 0, 0], 8), 1);
            learned.insert(p([10, 1, 0, 0], 16), 2);
            r.set_learned(learned);
            r.add_static(p([10, 1, 0, 0], 16), 3);
            let (s, d) = (IpAddr::from([9, 9, 9, 9]), IpAddr::from([10, 1, 2, 3]));
            assert_eq!(r.lookup(&d, &s, None).0, Some(3));
            assert_eq!(r.lookup(&[10, 2, 0, 1].into(), &s, None).0, Some(1));
            assert_eq!(r.lookup(&[11, 0, 0, 1].into(), &s, None).0, None);
            assert!(r.remove_static(p([10, 1, 0, 0], 16)));
            assert_eq!(r.route(d), Some(2));
        }
    }

    #[test]
    fn the_cache_answers_the_second_time() {
        let mut r = Routes::new(Some(4));
        r.add_static(p([0, 0, 0, 0], 0), 5);
        let (s, d) = (IpAddr::from([1, 1, 1, 1]), IpAddr::from([2, 2, 2, 2]));
        let h = Some(SourceHash::new(77));
        assert_eq!(r.lookup(&d, &s, h), (Some(5), Found::Miss));
        assert_eq!(r.lookup(&d, &s, h), (Some(5), Found::Hit));
        // A route change clears the cache.
        r.add_static(p([2, 0, 0, 0], 8), 6);
        assert_eq!(r.lookup(&d, &s, h), (Some(6), Found::Miss));
    }

    proptest::proptest! {
        /// Static and learned IPv4 routes of every length, overlapping: `route`, `lookup`
        /// without a source hash and (with a cache) with one, twice, all answer as a plain
        /// `LpmTable` filled the same way (statics over learned).
        #[test]
        fn lookups_agree_with_the_trie(
            learned in proptest::collection::vec((0u32..4, proptest::num::u32::ANY, 0u8..=32, 0u16..8), 0..40),
            statics in proptest::collection::vec((0u32..4, proptest::num::u32::ANY, 0u8..=32, 0u16..8), 0..20),
            probes in proptest::collection::vec(proptest::num::u32::ANY, 0..40),
        ) {
            // Prefixes cut from four shared addresses (or from their own, for pick 0), so
            // they nest.
            let bases = [0u32, 0x0A01_0203, 0x0A01_FF00, 0xC0A8_0101];
            let cut = |(pick, a, l): (u32, u32, u8)| {
                let a = if pick == 0 { a } else { bases[pick as usize] };
                let m = if l == 0 { 0 } else { u32::MAX << (32 - u32::from(l)) };
                Prefix::new((a & m).to_be_bytes(), l).unwrap_or_else(|e| panic!("{e}"))
            };
            let mut want = LpmTable::new();
            let mut dv = BTreeMap::new();
            for &(pick, a, l, i) in &learned {
                let pre = cut((pick, a, l));
                dv.insert(IpPrefix::V4(pre), i);
                want.insert(pre, i);
            }
            for &(pick, a, l, i) in &statics {
                want.insert(cut((pick, a, l)), i + 100);
            }
            let edges = want_edges(&learned, &statics, &cut);
            for cache in [None, Some(6)] {
                let mut r = Routes::new(cache);
                r.set_learned(dv.clone());
                for &(pick, a, l, i) in &statics {
                    r.add_static(IpPrefix::V4(cut((pick, a, l))), i + 100);
                }
                let s = IpAddr::from([172, 16, 0, 1]);
                let h = Some(SourceHash::new(0x5EED));
                for a in probes.iter().copied().chain(bases).chain(edges.iter().copied()) {
                    let d = IpAddr::from(a.to_be_bytes());
                    let w = want.lookup(a.to_be_bytes()).map(|(_, &i)| i);
                    proptest::prop_assert_eq!(r.route(d), w);
                    proptest::prop_assert_eq!(r.lookup(&d, &s, None).0, w);
                    if cache.is_some() {
                        proptest::prop_assert_eq!(r.lookup(&d, &s, h).0, w);
                        proptest::prop_assert_eq!(r.lookup(&d, &s, h).0, w);
                    }
                }
            }
        }
    }

    /// Each route's first and last address and the addresses just outside it.
    fn want_edges(
        learned: &[(u32, u32, u8, u16)],
        statics: &[(u32, u32, u8, u16)],
        cut: &dyn Fn((u32, u32, u8)) -> Prefix,
    ) -> Vec<u32> {
        learned
            .iter()
            .chain(statics)
            .flat_map(|&(pick, a, l, _)| {
                let p = cut((pick, a, l));
                let first = u32::from_be_bytes(p.addr());
                let last = first | u32::MAX.checked_shr(u32::from(p.len())).unwrap_or(0);
                [first, last, first.wrapping_sub(1), last.wrapping_add(1)]
            })
            .collect()
    }

    #[test]
    fn ipv6_routes() {
        let mut r = Routes::new(None);
        let net = prefix(IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 0]), 16)
            .unwrap_or_else(|e| panic!("{e}"));
        r.add_static(net, 4);
        let s = IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(
            r.lookup(&[0xfd00, 1, 0, 0, 0, 0, 0, 9].into(), &s, None).0,
            Some(4)
        );
        assert_eq!(r.route([0xfe80, 0, 0, 0, 0, 0, 0, 1].into()), None);
    }
}
