//! A learning bridge keyed by link address (Table 3, data link layer; §3.3).
//!
//! Stations carry manufacturer-assigned addresses
//! ([`ManufacturedAddress`]): 6 address bytes plus a
//! 2-byte random index. The bridge learns `source → port` and looks up the destination
//! in one [`FlowCache`] indexed by those 16 bits, compared on the full 6-byte address.
//! A station whose entry was evicted by a collision (or never learnt) is flooded, which
//! is what a bridge does for an unknown address anyway: collisions cost bandwidth, never
//! a wrong port.

use crate::assign::ManufacturedAddress;
use crate::cache::{CacheError, FlowCache};

/// A bridge port number.
pub type Port = u16;

/// Where a frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// Out of this one port.
    Port(Port),
    /// Out of every port but the arrival port (destination unknown).
    Flood,
    /// Dropped: the destination is on the arrival port's segment.
    Filter,
}

/// A learning bridge whose station table is a source-hash [`FlowCache`].
#[derive(Clone, Debug)]
pub struct LearningBridge {
    stations: FlowCache<Port>,
}

impl LearningBridge {
    /// A bridge with a station table of `2^log2` slots.
    pub fn new(log2: u8) -> Result<LearningBridge, CacheError> {
        Ok(LearningBridge {
            stations: FlowCache::new(log2)?,
        })
    }

    /// Handles a frame from `src` to `dst` that arrived on `port`: learns where `src` is,
    /// then decides where the frame goes.
    pub fn handle_frame(
        &mut self,
        port: Port,
        src: ManufacturedAddress,
        dst: ManufacturedAddress,
    ) -> Forward {
        self.learn(port, src);
        self.forward(port, dst)
    }

    /// Records that `station` is reachable through `port`.
    pub fn learn(&mut self, port: Port, station: ManufacturedAddress) {
        let fid = station.flow_id();
        let h = station.source_hash();
        if self.stations.get(h, &fid) != Some(&port) {
            self.stations.insert(h, fid, port);
        }
    }

    /// Where a frame for `dst` arriving on `port` goes.
    pub fn forward(&mut self, port: Port, dst: ManufacturedAddress) -> Forward {
        match self.stations.lookup(dst.source_hash(), &dst.flow_id()) {
            Some(&p) if p == port => Forward::Filter,
            Some(&p) => Forward::Port(p),
            None => Forward::Flood,
        }
    }

    /// The station table (for its counters).
    pub fn stations(&self) -> &FlowCache<Port> {
        &self.stations
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn st(last: u8, index: u16) -> ManufacturedAddress {
        ManufacturedAddress {
            mac: [2, 0, 0, 0, 0, last],
            index,
        }
    }

    #[test]
    fn learns_then_forwards() {
        let mut b = LearningBridge::new(8).unwrap();
        let (a, c) = (st(1, 0x1001), st(2, 0x2002));
        assert_eq!(b.handle_frame(1, a, c), Forward::Flood);
        assert_eq!(b.handle_frame(2, c, a), Forward::Port(1));
        assert_eq!(b.handle_frame(1, a, c), Forward::Port(2));
        // A station moves: relearnt.
        assert_eq!(b.handle_frame(3, a, c), Forward::Port(2));
        assert_eq!(b.forward(2, a), Forward::Port(3));
        assert_eq!(b.forward(3, a), Forward::Filter);
    }

    #[test]
    fn colliding_indices_flood_never_misdirect() {
        // Two stations with the same low 8 bits of index share one slot.
        let mut b = LearningBridge::new(8).unwrap();
        let (x, y) = (st(1, 0x0107), st(2, 0x0207));
        b.learn(1, x);
        b.learn(2, y); // evicts x
        assert_eq!(b.forward(5, x), Forward::Flood);
        assert_eq!(b.forward(5, y), Forward::Port(2));
        assert_eq!(b.stations().stats().evictions, 1);
    }

    proptest! {
        /// Whatever the indices (few, so stations collide), a frame is only ever sent
        /// where its destination was last seen; "unknown" floods, never misdirects.
        #[test]
        fn never_misdirects(frames in proptest::collection::vec((0u16..4, 0u8..8, 0u8..8), 1..200)) {
            let mut b = LearningBridge::new(2).unwrap();
            let station = |i: u8| st(i, u16::from(i % 3));
            let mut last: HashMap<u8, Port> = HashMap::new();
            for (port, src, dst) in frames {
                last.insert(src, port);
                match b.handle_frame(port, station(src), station(dst)) {
                    Forward::Port(p) => {
                        prop_assert_eq!(Some(&p), last.get(&dst));
                        prop_assert_ne!(p, port);
                    }
                    Forward::Filter => prop_assert_eq!(Some(&port), last.get(&dst)),
                    Forward::Flood => {}
                }
            }
        }
    }
}
