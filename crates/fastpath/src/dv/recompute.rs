//! Route computation: recomputing each destination's best route from what the neighbours
//! advertised, allocating its threaded-table index, and collecting routes gone stale.

use alloc::vec::Vec;

use super::{Dest, Route, Router, Slot};
use crate::threaded::{Entry, MAX_INDEX, NextHop};

impl Router {
    pub(super) fn clear_changed(&mut self) {
        for s in self.slots.iter_mut().flatten() {
            s.changed = false;
        }
        self.triggered_at = None;
    }

    pub(super) fn collect_garbage(&mut self, now: u64) {
        let gc = self.config.gc_timeout;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let due = slot
                .as_ref()
                .and_then(|s| s.unreachable_since)
                .is_some_and(|since| since.saturating_add(gc) <= now);
            if due {
                if let Some(s) = slot.take() {
                    self.index_of.remove(&s.route.dest);
                }
                // `i` < slots.len() ≤ max_destinations ≤ 2^24.
                let i = u32::try_from(i).unwrap_or(MAX_INDEX);
                self.table.clear(i);
                self.free.push(i);
            }
        }
    }

    pub(super) fn recompute_all(&mut self, now: u64) {
        let mut dests: Vec<Dest> = self.index_of.keys().copied().collect();
        for link in self.links.values() {
            dests.extend(link.vector.keys().copied());
        }
        dests.sort_unstable();
        dests.dedup();
        for d in dests {
            self.recompute(now, d);
        }
    }

    /// Bellman-Ford for one destination: the least `link cost + advertised cost` over the
    /// up links; ties go to the lowest interface number. A prefix this router originates
    /// is local at cost 0, whatever the neighbours say.
    pub(super) fn recompute(&mut self, now: u64, dest: Dest) {
        if dest == Dest::Router(self.config.id) {
            return;
        }
        let infinity = self.config.infinity;
        let mut best: Option<(u16, NextHop, u32)> = None;
        if self.local.contains(&dest) {
            best = Some((0, NextHop::Local, 0));
        }
        for (&iface, link) in &self.links {
            if let Some(h) = link.vector.get(&dest) {
                let cost = h.cost.saturating_add(link.cost).min(infinity);
                if cost < infinity && best.is_none_or(|(c, _, _)| cost < c) {
                    best = Some((cost, NextHop::Neighbour(iface), h.index));
                }
            }
        }
        let index = match (self.index_of_dest(dest), best) {
            (Some(i), _) => i,
            (None, None) => return,
            (None, Some(_)) => match self.allocate(dest) {
                Some(i) => i,
                None => {
                    self.stats.table_full += 1;
                    return;
                }
            },
        };
        let Some(Some(slot)) = self.slots.get_mut(index as usize) else {
            return;
        };
        let new = match best {
            Some((cost, next_hop, next_index)) => Route {
                dest,
                index,
                cost,
                next_hop,
                next_index,
            },
            None => Route {
                cost: infinity,
                ..slot.route
            },
        };
        if new == slot.route && slot.unreachable_since.is_some() == best.is_none() {
            return;
        }
        let old = slot.route;
        let was_reachable = old.cost < infinity;
        slot.route = new;
        slot.changed = true;
        self.stats.route_changes += 1;
        match best {
            Some(_) => {
                slot.unreachable_since = None;
                // Both indices fit in 24 bits (allocation and wire parsing check them).
                let _ = self.table.set(
                    index,
                    Entry {
                        next_hop: new.next_hop,
                        next_index: new.next_index,
                    },
                );
                self.set_prefix_route(dest, Some(index));
            }
            None => {
                if was_reachable || slot.unreachable_since.is_none() {
                    slot.unreachable_since = Some(now);
                }
                self.table.clear(index);
                self.set_prefix_route(dest, None);
            }
        }
        if self.triggered_at.is_none() {
            self.triggered_at = Some(now.saturating_add(self.config.triggered_delay));
        }
        self.route_event(old, new);
    }

    pub(super) fn allocate(&mut self, dest: Dest) -> Option<u32> {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.slots.len() >= self.config.max_destinations {
                    return None;
                }
                let i = u32::try_from(self.slots.len()).ok()?;
                self.slots.push(None);
                i
            }
        };
        let slot = self.slots.get_mut(index as usize)?;
        *slot = Some(Slot {
            route: Route {
                dest,
                index,
                cost: self.config.infinity,
                next_hop: NextHop::Local,
                next_index: 0,
            },
            changed: false,
            unreachable_since: Some(0),
        });
        self.index_of.insert(dest, index);
        Some(index)
    }
}
