//! An IP routing cache in front of a longest-prefix-match table (Table 3, network layer;
//! the paper's IP forwarding experiment, §3.4).
//!
//! A packet names its flow by `(destination, source, flow number)` — the 12-byte flow id
//! of the paper's experiment — and carries a source hash. The router builds the flow id
//! itself from those header fields, so the cached next hop (a function of the destination
//! alone) is right for every packet that hits, whoever installed it. A change to the
//! table clears the cache.

use crate::cache::{CacheError, FlowCache, Lookup};
use crate::flow::{FlowId, SourceHash};
use crate::lpm::{LpmTable, Prefix};

/// The 12-byte routing flow id: destination, source, flow number (big-endian).
pub fn route_flow_id(dst: [u8; 4], src: [u8; 4], flow: u32) -> FlowId {
    let f = flow.to_be_bytes();
    let [a, b, c, d] = dst;
    let [e, g, h, i] = src;
    FlowId::from_array(&[a, b, c, d, e, g, h, i, f[0], f[1], f[2], f[3]])
        .unwrap_or(FlowId::from_u32(0))
}

/// A source-hash route cache over an [`LpmTable`].
#[derive(Clone, Debug)]
pub struct RouteCache<V> {
    table: LpmTable<V>,
    cache: FlowCache<Option<V>>,
}

impl<V: Clone> RouteCache<V> {
    /// An empty table with a cache of `2^log2` slots.
    pub fn new(log2: u8) -> Result<Self, CacheError> {
        Ok(RouteCache {
            table: LpmTable::new(),
            cache: FlowCache::new(log2)?,
        })
    }

    /// Adds or replaces a route and clears the cache (cached answers may be stale).
    pub fn add_route(&mut self, prefix: Prefix, next_hop: V) -> Option<V> {
        self.cache.clear();
        self.table.insert(prefix, next_hop)
    }

    /// The next hop of a packet: from the cache on a hit, from the LPM table on a miss
    /// (then cached, no-route answers included).
    pub fn route(
        &mut self,
        hash: SourceHash,
        dst: [u8; 4],
        src: [u8; 4],
        flow: u32,
    ) -> (Option<&V>, Lookup) {
        let fid = route_flow_id(dst, src, flow);
        let table = &self.table;
        let (v, l) = self
            .cache
            .get_or_insert_with(hash, &fid, |_| table.lookup(dst).map(|(_, v)| v.clone()));
        (v.as_ref(), l)
    }

    /// The slow path alone: the LPM table's answer.
    pub fn route_uncached(&self, dst: [u8; 4]) -> Option<&V> {
        self.table.lookup(dst).map(|(_, v)| v)
    }

    /// The LPM table.
    pub fn table(&self) -> &LpmTable<V> {
        &self.table
    }

    /// The flow cache (for its counters).
    pub fn cache(&self) -> &FlowCache<Option<V>> {
        &self.cache
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(a: [u8; 4], l: u8) -> Prefix {
        Prefix::new(a, l).unwrap()
    }

    #[test]
    fn second_packet_hits_and_agrees() {
        let mut r = RouteCache::new(8).unwrap();
        r.add_route(pre([10, 0, 0, 0], 8), 1u16);
        r.add_route(pre([10, 1, 0, 0], 16), 2);
        let h = SourceHash::new(0x77);
        assert_eq!(
            r.route(h, [10, 1, 0, 5], [1, 1, 1, 1], 0),
            (Some(&2), Lookup::Miss)
        );
        assert_eq!(
            r.route(h, [10, 1, 0, 5], [1, 1, 1, 1], 0),
            (Some(&2), Lookup::Hit)
        );
        assert_eq!(
            r.route(h, [10, 2, 0, 5], [1, 1, 1, 1], 0),
            (Some(&1), Lookup::Miss)
        );
        assert_eq!(
            r.route(h, [11, 0, 0, 1], [1, 1, 1, 1], 0),
            (None, Lookup::Miss)
        );
        assert_eq!(
            r.route(h, [11, 0, 0, 1], [1, 1, 1, 1], 0),
            (None, Lookup::Hit)
        );
    }

    #[test]
    fn table_change_clears_the_cache() {
        let mut r = RouteCache::new(8).unwrap();
        r.add_route(pre([10, 0, 0, 0], 8), 1u16);
        let h = SourceHash::new(3);
        r.route(h, [10, 1, 0, 5], [1, 1, 1, 1], 0);
        r.add_route(pre([10, 1, 0, 0], 16), 2);
        assert_eq!(
            r.route(h, [10, 1, 0, 5], [1, 1, 1, 1], 0),
            (Some(&2), Lookup::Miss)
        );
        assert_eq!(r.route_uncached([10, 1, 0, 5]), Some(&2));
        assert_eq!(r.table().len(), 2);
    }

    #[test]
    fn flow_id_layout() {
        let f = route_flow_id([10, 0, 0, 2], [10, 0, 0, 1], 0x0102_0304);
        assert_eq!(f.as_bytes(), &[10, 0, 0, 2, 10, 0, 0, 1, 1, 2, 3, 4]);
    }
}
