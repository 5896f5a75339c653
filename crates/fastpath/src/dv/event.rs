//! Routing events: [`Event`], drained with [`Router::poll_event`].

use super::{Route, Router, RouterId};

/// Why a neighbour is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeighbourLost {
    /// Its link was taken down ([`Router::link_down`]).
    LinkDown,
    /// Nothing heard from it for the route timeout.
    TimedOut,
    /// Another router spoke on its link.
    Replaced,
}

impl core::fmt::Display for NeighbourLost {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::LinkDown => "link down",
            Self::TimedOut => "timed out",
            Self::Replaced => "replaced by another router",
        })
    }
}

/// A change in a router's routes or neighbours, read with [`Router::poll_event`].
///
/// Values the caller drains (quinn-proto's `poll_event` shape) and logs, counts or shows.
///
/// A route is *learned* when a destination becomes reachable, *changed* when a reachable
/// route takes another next hop, cost or next index, and *withdrawn* when it becomes
/// unreachable (its last route timed out, its link went down, its neighbours advertise it
/// at infinity, or this router stopped originating it). A neighbour is *up* from the first
/// message heard from it on a link, and *down* when its link goes down, when its own
/// entry times out (it fell silent for [`Config::route_timeout`](super::Config)), or when
/// another router speaks on its link. Each event is produced once, at the change: a
/// destination that stays unreachable, or a link brought up again whose neighbour stays
/// silent, produces nothing more.
///
/// The queue is bounded ([`Config::max_events`](super::Config::max_events)): when it is
/// full, new events are dropped and counted ([`Stats::events_dropped`](super::Stats)), so
/// a router whose caller never drains it holds a bounded amount of memory.
///
/// ```
/// use fastpath::dv::{Config, Event, Router};
/// use sansio::Instant;
///
/// let t0 = Instant::ZERO;
/// let (mut a, mut b) = (Router::new(Config::new(1), t0), Router::new(Config::new(2), t0));
/// a.link_up(t0, 0, 1)?;
/// b.link_up(t0, 0, 1)?;
/// while let Some(t) = b.poll_transmit() { a.handle_message(t0, 0, &t.bytes)?; }
/// assert_eq!(a.poll_event(), Some(Event::NeighbourUp { iface: 0, id: 2 }));
/// let Some(Event::RouteLearned(route)) = a.poll_event() else { panic!("learned") };
/// assert_eq!((route.dest.router(), route.cost), (Some(2), 1));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A destination became reachable: the route now held.
    RouteLearned(Route),
    /// A reachable route took another next hop, cost or next index.
    RouteChanged {
        /// The route before.
        old: Route,
        /// The route now.
        new: Route,
    },
    /// A destination became unreachable: the route as it was before (its last next hop
    /// and cost).
    RouteWithdrawn(Route),
    /// A neighbour was heard on link `iface` for the first time (or again after it was
    /// down).
    NeighbourUp {
        /// The link.
        iface: u16,
        /// The neighbour's id.
        id: RouterId,
    },
    /// The neighbour on link `iface` is gone.
    NeighbourDown {
        /// The link.
        iface: u16,
        /// The neighbour's id.
        id: RouterId,
        /// Why.
        why: NeighbourLost,
    },
}

impl Router {
    /// The next routing event, oldest first; `None` when none waits. Call after any entry
    /// point (`link_up`, `link_down`, `handle_message`, `handle_timeout`, the local prefix
    /// calls).
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Queues `event`, or counts it dropped if [`Config::max_events`](super::Config)
    /// already wait.
    pub(super) fn emit(&mut self, event: Event) {
        if self.events.len() < self.config.max_events {
            self.events.push_back(event);
        } else {
            self.stats.events_dropped += 1;
        }
    }

    /// The event for a route going from `old` to `new`, `infinity` meaning unreachable
    /// (nothing if it was and stays unreachable).
    pub(super) fn route_event(&mut self, old: Route, new: Route) {
        let infinity = self.config.infinity;
        let event = match (old.cost < infinity, new.cost < infinity) {
            (false, true) => Event::RouteLearned(new),
            (true, true) => Event::RouteChanged { old, new },
            (true, false) => Event::RouteWithdrawn(old),
            (false, false) => return,
        };
        self.emit(event);
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use sansio::Instant;

    use super::*;
    use crate::dv::{Config, Dest};
    use crate::threaded::NextHop;

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    /// Delivers what `from` queued for its link `out` to `to`'s link `iface` at `now`; the
    /// rest of what `from` queued is dropped.
    fn pass(from: &mut Router, out: u16, to: &mut Router, iface: u16, now: Instant) {
        while let Some(t) = from.poll_transmit() {
            if t.iface == out {
                to.handle_message(now, iface, &t.bytes)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }

    fn drain(r: &mut Router) -> Vec<Event> {
        core::iter::from_fn(|| r.poll_event()).collect()
    }

    fn router(id: RouterId) -> Router {
        Router::new(Config::new(id), ms(0))
    }

    fn learned(ev: &[Event], dest: RouterId) -> Option<Route> {
        ev.iter().find_map(|e| match e {
            Event::RouteLearned(r) if r.dest == Dest::Router(dest) => Some(*r),
            _ => None,
        })
    }

    #[test]
    fn learned_changed_withdrawn_and_neighbours() {
        // a(1) ─ link 0, cost 1 ─ b(2) ─ cost 1 ─ c(3), and a ─ link 1, cost 5 ─ c.
        let (mut a, mut b, mut c) = (router(1), router(2), router(3));
        a.link_up(ms(0), 0, 1).unwrap();
        a.link_up(ms(0), 1, 5).unwrap();
        b.link_up(ms(0), 0, 1).unwrap();
        b.link_up(ms(0), 1, 1).unwrap();
        c.link_up(ms(0), 0, 1).unwrap();
        c.link_up(ms(0), 1, 5).unwrap();
        // b hears c (b's link 1, c's link 0); a hears c directly (link 1): c learned at
        // cost 5 on link 1.
        pass(&mut c.clone(), 0, &mut b, 1, ms(0));
        pass(&mut c, 1, &mut a, 1, ms(0));
        let ev = drain(&mut a);
        assert_eq!(ev.first(), Some(&Event::NeighbourUp { iface: 1, id: 3 }));
        let r = learned(&ev, 3).unwrap_or_else(|| panic!("{ev:?}"));
        assert_eq!((r.cost, r.next_hop), (5, NextHop::Neighbour(1)));

        // Then b's periodic update: c is cheaper through b (1 + 1).
        while b.poll_transmit().is_some() {}
        b.handle_timeout(ms(30_000));
        pass(&mut b, 0, &mut a, 0, ms(30_000));
        let ev = drain(&mut a);
        assert!(
            ev.contains(&Event::NeighbourUp { iface: 0, id: 2 }),
            "{ev:?}"
        );
        assert!(learned(&ev, 2).is_some(), "{ev:?}");
        let changed = ev.iter().find_map(|e| match e {
            Event::RouteChanged { old, new } if new.dest == Dest::Router(3) => Some((*old, *new)),
            _ => None,
        });
        let (old, new) = changed.unwrap_or_else(|| panic!("{ev:?}"));
        assert_eq!((old.cost, old.next_hop), (5, NextHop::Neighbour(1)));
        assert_eq!((new.cost, new.next_hop), (2, NextHop::Neighbour(0)));

        // Link 0 down: b is gone (neighbour down, its route withdrawn), c goes back to
        // link 1 (changed), once each.
        a.link_down(ms(31_000), 0).unwrap();
        let ev = drain(&mut a);
        let down = Event::NeighbourDown {
            iface: 0,
            id: 2,
            why: NeighbourLost::LinkDown,
        };
        assert!(ev.contains(&down), "{ev:?}");
        let withdrawn: Vec<_> = ev
            .iter()
            .filter_map(|e| match e {
                Event::RouteWithdrawn(r) => Some(r.dest),
                _ => None,
            })
            .collect();
        assert_eq!(withdrawn, [Dest::Router(2)], "{ev:?}");
        assert!(
            ev.iter()
                .any(|e| matches!(e, Event::RouteChanged { new, .. }
                if new.dest == Dest::Router(3) && new.next_hop == NextHop::Neighbour(1))),
            "{ev:?}"
        );

        // A dead neighbour's link retried again and again: nothing more to say.
        for k in 0..5 {
            a.link_up(ms(32_000 + k * 100), 0, 1).unwrap();
            a.handle_timeout(ms(32_000 + k * 100));
            a.link_down(ms(32_050 + k * 100), 0).unwrap();
        }
        assert_eq!(drain(&mut a), []);

        // c falls silent: after the route timeout it is down and its route withdrawn.
        let timeout = a.config().route_timeout;
        a.handle_timeout(ms(timeout + 1_000));
        let ev = drain(&mut a);
        let down = Event::NeighbourDown {
            iface: 1,
            id: 3,
            why: NeighbourLost::TimedOut,
        };
        assert!(ev.contains(&down), "{ev:?}");
        assert!(
            ev.iter()
                .any(|e| matches!(e, Event::RouteWithdrawn(r) if r.dest == Dest::Router(3))),
            "{ev:?}"
        );
        // Heard again: up again, c learned again.
        while c.poll_transmit().is_some() {}
        c.handle_timeout(ms(timeout + 60_000));
        pass(&mut c, 1, &mut a, 1, ms(timeout + 60_000));
        let ev = drain(&mut a);
        assert_eq!(ev.first(), Some(&Event::NeighbourUp { iface: 1, id: 3 }));
        assert!(learned(&ev, 3).is_some(), "{ev:?}");
        assert_eq!(a.stats().events_dropped, 0);
    }

    #[test]
    fn a_full_queue_counts_what_it_drops() {
        let mut cfg = Config::new(1);
        cfg.max_events = 2;
        let mut a = Router::new(cfg, ms(0));
        let mut b = router(2);
        a.link_up(ms(0), 0, 1).unwrap();
        b.link_up(ms(0), 0, 1).unwrap();
        for i in 0..3u8 {
            let p = crate::lpm::Prefix::new([10, i, 0, 0], 16).unwrap_or_else(|e| panic!("{e}"));
            b.add_local_prefix(ms(0), p).unwrap();
        }
        b.handle_timeout(ms(1_000));
        pass(&mut b, 0, &mut a, 0, ms(1_000));
        // Neighbour up, router 2 and three prefixes learned: five events, room for two.
        let ev = drain(&mut a);
        assert_eq!(ev.len(), 2, "{ev:?}");
        assert_eq!(a.stats().events_dropped, 3);
        // Drained: room again.
        a.link_down(ms(2_000), 0).unwrap();
        assert_eq!(drain(&mut a).len(), 2);
        assert_eq!(a.stats().events_dropped, 6);
    }
}
