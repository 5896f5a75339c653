//! Advertising: queuing the distance vector (whole or changed entries) on a link.

use alloc::vec::Vec;

use super::wire::{self, AdvEntry, Advertisement, MessageKind, PrefixEntry};
use super::{Dest, Router, Transmit};
use crate::lpm::IpPrefix;
use crate::threaded::NextHop;

impl Router {
    /// Queues our vector (all routes, or only the changed ones) for `iface`, with split
    /// horizon and poisoned reverse: routes through `iface` are advertised at infinity.
    /// Router ids go in kind 1 updates, prefixes in kind 5 updates (routers first).
    pub(super) fn queue_vector(&mut self, iface: u16, only_changed: bool) {
        let infinity = self.config.infinity;
        let mut routers: Vec<AdvEntry> = Vec::new();
        let mut prefixes: Vec<PrefixEntry> = Vec::new();
        for s in self.slots.iter().flatten() {
            if only_changed && !s.changed {
                continue;
            }
            let cost = if s.route.next_hop == NextHop::Neighbour(iface) {
                infinity
            } else {
                s.route.cost
            };
            let index = s.route.index;
            match s.route.dest {
                Dest::Router(dest) => routers.push(AdvEntry { dest, cost, index }),
                Dest::V4(p) => prefixes.push(PrefixEntry {
                    prefix: IpPrefix::V4(p),
                    cost,
                    index,
                }),
                Dest::V6(p) => prefixes.push(PrefixEntry {
                    prefix: IpPrefix::V6(p),
                    cost,
                    index,
                }),
            }
        }
        for chunk in routers.chunks(self.config.max_entries) {
            self.queue(iface, MessageKind::Update, chunk);
        }
        let per_message = self.config.max_entries.min(wire::MAX_PREFIX_ENTRIES);
        for chunk in prefixes.chunks(per_message) {
            let mut bytes = Vec::new();
            Advertisement::emit_prefixes(
                MessageKind::PrefixUpdate,
                self.config.id,
                chunk,
                &mut bytes,
            );
            self.out.push_back(Transmit { iface, bytes });
        }
    }

    pub(super) fn queue(&mut self, iface: u16, kind: MessageKind, entries: &[AdvEntry]) {
        let mut bytes = Vec::new();
        Advertisement::emit(kind, self.config.id, entries, &mut bytes);
        self.out.push_back(Transmit { iface, bytes });
    }
}
