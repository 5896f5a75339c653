//! Prefix destinations: the networks a router originates, and longest-prefix match over
//! the prefixes it reaches (what an IP packet without a label is routed by).

use sansio::Instant;

use super::{Dest, LocalError, Route, Router};
use crate::lpm::{IpPrefix, Prefix, Prefix6};

impl Router {
    /// Starts originating `prefix` (a network attached to this router): it gets an index
    /// in this router's table, a route at cost 0 delivered locally ([`NextHop::Local`],
    /// like the router's own id), and is advertised in kind 5 updates from the next
    /// triggered update on. Adding a prefix already local changes nothing. A route to the
    /// same prefix learned from a neighbour is replaced (local wins); the neighbours'
    /// advertisements are kept for when the prefix is removed. Returns its index.
    ///
    /// Delivering a packet to a host on the attached network is the caller's business:
    /// the threaded table says only "local".
    ///
    /// # Errors
    ///
    /// [`LocalError::TableFull`] if the prefix has no index yet and none is free; nothing
    /// changes then.
    ///
    /// [`NextHop::Local`]: crate::threaded::NextHop::Local
    pub fn add_local_prefix(
        &mut self,
        now: Instant,
        prefix: impl Into<IpPrefix>,
    ) -> Result<u32, LocalError> {
        let now = now.millis();
        let dest = Dest::from(prefix.into());
        let fresh = self.local.insert(dest);
        self.recompute(now, dest);
        match self.index_of_dest(dest) {
            Some(i) => Ok(i),
            None => {
                if fresh {
                    self.local.remove(&dest);
                }
                Err(LocalError::TableFull)
            }
        }
    }

    /// Stops originating `prefix`: the route falls back to what the neighbours advertise,
    /// or, if none does, becomes unreachable (advertised at infinity by the next triggered
    /// update, its table entry cleared) and is garbage collected after
    /// [`Config::gc_timeout`](super::Config::gc_timeout), as any lost route. Returns false
    /// if the prefix was not local.
    pub fn remove_local_prefix(&mut self, now: Instant, prefix: impl Into<IpPrefix>) -> bool {
        let now = now.millis();
        let dest = Dest::from(prefix.into());
        if !self.local.remove(&dest) {
            return false;
        }
        self.recompute(now, dest);
        true
    }

    /// The prefixes this router originates, in order.
    pub fn local_prefixes(&self) -> impl Iterator<Item = IpPrefix> + '_ {
        self.local.iter().filter_map(|d| d.prefix())
    }

    /// The reachable route of the longest IPv4 prefix containing `addr` (local or
    /// learned), with that prefix: how to forward an IPv4 packet that carries no label,
    /// and the index to give a source that asks ([`Router::answer_query`]).
    pub fn lookup_v4(&self, addr: [u8; 4]) -> Option<(Prefix, Route)> {
        let (prefix, &i) = self.lpm4.lookup(addr)?;
        Some((prefix, self.route_at(i)?))
    }

    /// The IPv6 counterpart of [`Router::lookup_v4`].
    pub fn lookup_v6(&self, addr: [u8; 16]) -> Option<(Prefix6, Route)> {
        let (prefix, &i) = self.lpm6.lookup(addr)?;
        Some((prefix, self.route_at(i)?))
    }

    fn route_at(&self, index: u32) -> Option<Route> {
        self.slots
            .get(index as usize)
            .copied()
            .flatten()
            .map(|s| s.route)
    }

    /// Keeps the longest-prefix-match tables equal to the set of reachable prefix routes:
    /// called with `Some(index)` when `dest` becomes (or stays) reachable, `None` when it
    /// becomes unreachable. Router ids are not prefixes and are ignored.
    pub(super) fn set_prefix_route(&mut self, dest: Dest, index: Option<u32>) {
        match (dest, index) {
            (Dest::Router(_), _) => {}
            (Dest::V4(p), Some(i)) => {
                self.lpm4.insert(p, i);
            }
            (Dest::V4(p), None) => {
                self.lpm4.remove(p);
            }
            (Dest::V6(p), Some(i)) => {
                self.lpm6.insert(p, i);
            }
            (Dest::V6(p), None) => {
                self.lpm6.remove(p);
            }
        }
    }
}
