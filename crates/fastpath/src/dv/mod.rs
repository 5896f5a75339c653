//! Distance-vector routing (Bellman-Ford) that computes threaded indices (§4, Fig. 7).
//!
//! Every router numbers the destinations it knows: the position of a destination in its
//! own [`ThreadedTable`] is that destination's *index at this router*. An advertisement
//! says "I reach D at cost c, and D sits at index i in MY table" ([`wire`]). A router keeps
//! the last vector heard from each neighbour, takes for each destination the neighbour with
//! the least `link cost + advertised cost`, and stores that neighbour's advertised index as
//! the entry's next index. Packets then carry only indices (Fig. 6).
//!
//! The machinery is RIP's: periodic full updates, triggered updates of changed routes,
//! split horizon with poisoned reverse, a finite infinity (default 16) that bounds
//! count-to-infinity, route timeouts for neighbours that fall silent, and garbage
//! collection of unreachable destinations (their index is reused later).
//!
//! # Destinations: routers and prefixes
//!
//! A destination ([`Dest`]) is a router, named by its [`RouterId`], or an IPv4 or IPv6
//! prefix that some router originates (a network attached to it,
//! [`Router::add_local_prefix`]). Every router advertises its own id at cost 0, as RIP
//! advertises a router; a prefix is advertised at cost 0 by its originator and learned by
//! everyone else like a router id. Both kinds are keys of the same maps and go through
//! the same code: one vector per neighbour, one Bellman-Ford, one index space, one
//! threaded table, the same split horizon with poisoned reverse, triggered and periodic
//! updates, timeouts and garbage collection. Only the wire differs: router ids ride in
//! kind 1 updates, prefixes in kind 5 updates of 24-byte entries ([`wire`]), both sent
//! by every full or triggered update. Withdrawing a prefix
//! ([`Router::remove_local_prefix`]) makes it unreachable at its originator, which
//! advertises it at infinity; the others follow as for a lost router.
//!
//! A prefix's threaded-table entry is a router id's: the originator delivers locally
//! (what "local" means for an attached network — ARP, neighbour discovery, the host
//! itself — is the caller's), every other router sends to its next hop with that hop's
//! index. For packets without a label, [`Router::lookup_v4`] and [`Router::lookup_v6`]
//! do longest-prefix match over the reachable prefix routes (kept in
//! [`crate::lpm`] tables beside the routes). A host asks its first router for the
//! index of the prefix holding an address with an address query (kind 6,
//! [`Router::answer_query`]), as it asks for a router's index with kind 3.
//!
//! Two routers originating the same prefix (anycast) are allowed: the prefix is one
//! destination and each router takes the nearer originator. A router originating a prefix
//! it also hears from a neighbour keeps its own (cost 0) and falls back to the learned
//! route when it withdraws.
//!
//! # Calling order (sans-IO, quinn-proto style)
//!
//! ```text
//!  link_up / link_down / handle_message(now, iface, bytes)   ─► state changes
//!  handle_timeout(now) once poll_timeout() = Some(t), now ≥ t ─► periodic/triggered updates
//!  poll_transmit() until None                                 ─► bytes for each neighbour
//!  poll_event() until None                                    ─► routes learned, changed,
//!                                                                withdrawn; neighbours up/down
//! ```
//!
//! Time is [`Instant`] (`sansio`'s, a microsecond a tick) from any origin; the router reads
//! no clock. Its timers run in whole milliseconds: every entry point converts `now` once
//! (`now.millis()`, rounding down), the [`Config`] durations are milliseconds, and
//! [`Router::poll_timeout`] answers a whole millisecond as an `Instant`. Triggered updates
//! are queued by `handle_timeout`: after a `handle_message` that changed routes,
//! `poll_timeout()` returns `now + triggered_delay`. `poll_timeout()` is never `None` for a
//! router (its periodic update is always pending); the `Option` is the workspace's shape.
//!
//! ```
//! use fastpath::dv::{Config, Router};
//! use sansio::Instant;
//!
//! let t0 = Instant::ZERO;
//! let mut a = Router::new(Config::new(1), t0);
//! let mut b = Router::new(Config::new(2), t0);
//! a.link_up(t0, 0, 1).unwrap();
//! b.link_up(t0, 0, 1).unwrap();
//! // Exchange until quiet (both routers call their one link interface 0).
//! for _ in 0..4 {
//!     while let Some(t) = a.poll_transmit() { b.handle_message(t0, 0, &t.bytes).unwrap(); }
//!     while let Some(t) = b.poll_transmit() { a.handle_message(t0, 0, &t.bytes).unwrap(); }
//!     a.handle_timeout(t0);
//!     b.handle_timeout(t0);
//! }
//! // Nothing due before the triggered update, one second (triggered_delay) on.
//! assert!(a.poll_timeout().is_some_and(|t| t > t0));
//! let route = a.route(2).unwrap();
//! assert_eq!(route.cost, 1);
//! // a's next index for 2 is 2's own index of itself.
//! assert_eq!(route.next_index, b.index_of(2).unwrap());
//! ```
//!
//! A prefix attached to `b` (continuing the example above):
//!
//! ```
//! # use fastpath::dv::{Config, Router};
//! # use sansio::Instant;
//! use fastpath::dv::Dest;
//! use fastpath::lpm::Prefix6;
//! use fastpath::threaded::NextHop;
//!
//! # let t0 = Instant::ZERO;
//! # let mut a = Router::new(Config::new(1), t0);
//! # let mut b = Router::new(Config::new(2), t0);
//! # a.link_up(t0, 0, 1).unwrap();
//! # b.link_up(t0, 0, 1).unwrap();
//! let lan = Prefix6::new([0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 48)?;
//! b.add_local_prefix(t0, lan)?;
//! for now in [t0, Instant::from_millis(1_000)] {
//!     while let Some(t) = a.poll_transmit() { b.handle_message(now, 0, &t.bytes)?; }
//!     while let Some(t) = b.poll_transmit() { a.handle_message(now, 0, &t.bytes)?; }
//!     a.handle_timeout(now);
//!     b.handle_timeout(now);
//! }
//! let host = [0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
//! let (prefix, route) = a.lookup_v6(host).unwrap();
//! assert_eq!((prefix, route.dest, route.cost), (lan, Dest::V6(lan), 1));
//! assert_eq!(route.next_hop, NextHop::Neighbour(0));
//! assert_eq!(Some(route.next_index), b.index_of_dest(lan));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

mod advertise;
mod dest;
mod error;
mod event;
pub mod host;
mod prefixes;
mod query;
mod recompute;
pub mod wire;

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec::Vec;

use sansio::Instant;

use crate::lpm::{LpmTable, LpmTable6};
use crate::threaded::{Entry, MAX_INDEX, NextHop, ThreadedTable};
pub use dest::Dest;
pub use error::{HandleError, LinkError, LocalError};
pub use event::{Event, NeighbourLost};
use wire::{Advertisement, MessageKind};

/// A router's identity (also the destination address that names it).
pub type RouterId = u32;

/// Knobs of one router. The durations are whole **milliseconds** (RIP's timers are
/// seconds; a microsecond would buy nothing), while every entry point takes an [`Instant`]
/// and converts it once ([`Instant::millis`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// This router's id.
    pub id: RouterId,
    /// The unreachable metric (RIP's 16). Path costs must stay below it.
    pub infinity: u16,
    /// Milliseconds between periodic full updates.
    pub update_interval: u64,
    /// Milliseconds after which a route not re-advertised is dropped.
    pub route_timeout: u64,
    /// Milliseconds an unreachable destination keeps its index before the index is freed.
    pub gc_timeout: u64,
    /// Milliseconds between a route change and its triggered update (batches changes).
    pub triggered_delay: u64,
    /// Router entries per update message, at most [`wire::MAX_ENTRIES`] (121, what fits
    /// one 1500-byte datagram); prefix updates carry at most this many and at most
    /// [`wire::MAX_PREFIX_ENTRIES`] (60) entries.
    pub max_entries: usize,
    /// Destinations the table may hold (at most 2^24, the label's index space).
    pub max_destinations: usize,
    /// Events that may wait for [`Router::poll_event`]; more are dropped and counted
    /// ([`Stats::events_dropped`]). 0 turns events off.
    pub max_events: usize,
}

impl Config {
    /// RIP-like defaults: infinity 16, updates every 30 s, timeout 180 s, GC 120 s,
    /// triggered updates after 1 s, 100 entries per message, 65,536 destinations, 1,024
    /// waiting events.
    pub fn new(id: RouterId) -> Self {
        Self {
            id,
            infinity: 16,
            update_interval: 30_000,
            route_timeout: 180_000,
            gc_timeout: 120_000,
            triggered_delay: 1_000,
            max_entries: 100,
            max_destinations: 65_536,
            max_events: 1_024,
        }
    }
}

/// Bytes for one neighbour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// The interface (link) to send on.
    pub iface: u16,
    /// One advertisement message.
    pub bytes: Vec<u8>,
}

/// A route as the router holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The destination: a router or a prefix.
    pub dest: Dest,
    /// The destination's index in this router's table.
    pub index: u32,
    /// Cost to it (`infinity` = unreachable, kept until garbage collected).
    pub cost: u16,
    /// Next hop.
    pub next_hop: NextHop,
    /// The destination's index in the next hop's table.
    pub next_index: u32,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages accepted.
    pub messages: u64,
    /// Messages refused.
    pub bad_messages: u64,
    /// Destinations not installed because the table was full.
    pub table_full: u64,
    /// Route changes (cost, next hop or next index).
    pub route_changes: u64,
    /// Index queries from hosts answered.
    pub queries: u64,
    /// Events dropped because [`Config::max_events`] were waiting.
    pub events_dropped: u64,
}

#[derive(Clone, Copy, Debug)]
struct Heard {
    cost: u16,
    index: u32,
    at: u64,
}

#[derive(Clone, Debug)]
struct Link {
    cost: u16,
    peer: Option<RouterId>,
    vector: BTreeMap<Dest, Heard>,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    route: Route,
    changed: bool,
    unreachable_since: Option<u64>,
}

/// One distance-vector router: the sans-IO state machine.
#[derive(Clone, Debug)]
pub struct Router {
    config: Config,
    links: BTreeMap<u16, Link>,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    index_of: BTreeMap<Dest, u32>,
    /// Prefixes this router originates (cost 0, delivered locally).
    local: BTreeSet<Dest>,
    /// Reachable prefix routes by prefix, to their index (for longest-prefix match).
    lpm4: LpmTable<u32>,
    lpm6: LpmTable6<u32>,
    table: ThreadedTable,
    next_periodic: u64,
    triggered_at: Option<u64>,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
}

impl Router {
    /// A router that knows only itself (at index 0). `max_destinations` is clamped to the
    /// label's index space.
    pub fn new(mut config: Config, now: Instant) -> Self {
        let now = now.millis();
        config.max_destinations = config.max_destinations.clamp(1, MAX_INDEX as usize + 1);
        config.infinity = config.infinity.max(1);
        config.max_entries = config.max_entries.clamp(1, wire::MAX_ENTRIES);
        let me = Route {
            dest: Dest::Router(config.id),
            index: 0,
            cost: 0,
            next_hop: NextHop::Local,
            next_index: 0,
        };
        let mut table = ThreadedTable::new();
        // Index 0 and next index 0 always fit.
        let _ = table.set(
            0,
            Entry {
                next_hop: NextHop::Local,
                next_index: 0,
            },
        );
        let mut index_of = BTreeMap::new();
        index_of.insert(Dest::Router(config.id), 0);
        Self {
            config,
            links: BTreeMap::new(),
            slots: alloc::vec![Some(Slot {
                route: me,
                changed: false,
                unreachable_since: None,
            })],
            free: Vec::new(),
            index_of,
            local: BTreeSet::new(),
            lpm4: LpmTable::new(),
            lpm6: LpmTable6::new(),
            table,
            next_periodic: now.saturating_add(config.update_interval),
            triggered_at: None,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// This router's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// This router's id.
    pub fn id(&self) -> RouterId {
        self.config.id
    }

    /// The forwarding table that threaded labels index.
    pub fn table(&self) -> &ThreadedTable {
        &self.table
    }

    /// The index of router `dest` in this router's table (what a source puts in its first
    /// label).
    pub fn index_of(&self, dest: RouterId) -> Option<u32> {
        self.index_of_dest(Dest::Router(dest))
    }

    /// The index of any destination (a router or a prefix) in this router's table.
    pub fn index_of_dest(&self, dest: impl Into<Dest>) -> Option<u32> {
        self.index_of.get(&dest.into()).copied()
    }

    /// The route to router `dest`, reachable or not (until garbage collected).
    pub fn route(&self, dest: RouterId) -> Option<Route> {
        self.route_to(Dest::Router(dest))
    }

    /// The route to any destination (a router or a prefix), reachable or not (until
    /// garbage collected). For the route an IP packet takes, see [`Router::lookup_v4`].
    pub fn route_to(&self, dest: impl Into<Dest>) -> Option<Route> {
        let i = self.index_of_dest(dest)?;
        self.slots
            .get(i as usize)
            .copied()
            .flatten()
            .map(|s| s.route)
    }

    /// Every route, in index order.
    pub fn routes(&self) -> impl Iterator<Item = Route> + '_ {
        self.slots.iter().flatten().map(|s| s.route)
    }

    /// The up links and their costs.
    pub fn links(&self) -> impl Iterator<Item = (u16, u16)> + '_ {
        self.links.iter().map(|(&i, l)| (i, l.cost))
    }

    /// The neighbour heard on link `iface` (until it is down: see [`Event::NeighbourDown`]).
    pub fn neighbour(&self, iface: u16) -> Option<RouterId> {
        self.links.get(&iface).and_then(|l| l.peer)
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Brings link `iface` up with `cost`, or changes the cost of a link that is up. A new
    /// link gets our table and a request for the neighbour's.
    ///
    /// # Errors
    ///
    /// A cost of 0 or at/above infinity.
    pub fn link_up(&mut self, now: Instant, iface: u16, cost: u16) -> Result<(), LinkError> {
        let now = now.millis();
        if cost == 0 {
            return Err(LinkError::ZeroCost);
        }
        if cost >= self.config.infinity {
            return Err(LinkError::CostTooHigh);
        }
        match self.links.get_mut(&iface) {
            Some(link) => link.cost = cost,
            None => {
                self.links.insert(
                    iface,
                    Link {
                        cost,
                        peer: None,
                        vector: BTreeMap::new(),
                    },
                );
                self.queue(iface, MessageKind::Request, &[]);
                self.queue_vector(iface, false);
            }
        }
        self.recompute_all(now);
        Ok(())
    }

    /// Takes link `iface` down: every route through it is recomputed at once.
    ///
    /// # Errors
    ///
    /// If the link is not up.
    pub fn link_down(&mut self, now: Instant, iface: u16) -> Result<(), LinkError> {
        let now = now.millis();
        let link = self.links.remove(&iface).ok_or(LinkError::UnknownLink)?;
        self.out.retain(|t| t.iface != iface);
        if let Some(id) = link.peer {
            self.emit(Event::NeighbourDown {
                iface,
                id,
                why: NeighbourLost::LinkDown,
            });
        }
        self.recompute_all(now);
        Ok(())
    }

    /// Takes in one message that arrived on `iface`.
    ///
    /// # Errors
    ///
    /// If the link is not up or the message is malformed; nothing changes then.
    pub fn handle_message(
        &mut self,
        now: Instant,
        iface: u16,
        bytes: &[u8],
    ) -> Result<(), HandleError> {
        let result = self.apply(now.millis(), iface, bytes);
        match result {
            Ok(()) => self.stats.messages += 1,
            Err(_) => self.stats.bad_messages += 1,
        }
        result
    }

    fn apply(&mut self, now: u64, iface: u16, bytes: &[u8]) -> Result<(), HandleError> {
        let adv = Advertisement::parse(bytes)?;
        if adv.kind().is_host_message() {
            return Err(HandleError::HostMessage);
        }
        if adv.sender() == self.config.id {
            return Err(HandleError::FromSelf);
        }
        let infinity = self.config.infinity;
        if adv.dest_entries().any(|e| e.cost > infinity) {
            return Err(HandleError::CostAboveInfinity);
        }
        let link = self.links.get_mut(&iface).ok_or(HandleError::UnknownLink)?;
        if link.peer != Some(adv.sender()) {
            // A different router on this link: forget what the old one said.
            let stale: Vec<Dest> = link.vector.keys().copied().collect();
            link.vector.clear();
            let old = link.peer.replace(adv.sender());
            if let Some(id) = old {
                self.emit(Event::NeighbourDown {
                    iface,
                    id,
                    why: NeighbourLost::Replaced,
                });
            }
            self.emit(Event::NeighbourUp {
                iface,
                id: adv.sender(),
            });
            for d in stale {
                self.recompute(now, d);
            }
        }
        match adv.kind() {
            MessageKind::Request => {
                self.queue_vector(iface, false);
                Ok(())
            }
            // Refused before the link's peer was looked at (above).
            MessageKind::IndexQuery
            | MessageKind::IndexAnswer
            | MessageKind::AddressQuery
            | MessageKind::AddressAnswer => Err(HandleError::HostMessage),
            // Router ids and prefixes go through the same vector and the same Bellman-Ford.
            MessageKind::Update | MessageKind::PrefixUpdate => {
                let mut touched = Vec::with_capacity(adv.len());
                let me = Dest::Router(self.config.id);
                if let Some(link) = self.links.get_mut(&iface) {
                    for e in adv.dest_entries() {
                        if e.dest == me {
                            continue;
                        }
                        if e.cost >= infinity {
                            link.vector.remove(&e.dest);
                        } else {
                            let heard = Heard {
                                cost: e.cost,
                                index: e.index,
                                at: now,
                            };
                            link.vector.insert(e.dest, heard);
                        }
                        touched.push(e.dest);
                    }
                }
                for d in touched {
                    self.recompute(now, d);
                }
                Ok(())
            }
        }
    }

    /// The next instant `handle_timeout` has work to do (a whole millisecond). Always
    /// `Some`: the periodic update is always pending.
    pub fn poll_timeout(&self) -> Option<Instant> {
        Some(Instant::from_millis(self.next_due()))
    }

    /// [`Router::poll_timeout`] in milliseconds.
    fn next_due(&self) -> u64 {
        let mut t = self.next_periodic;
        if let Some(tr) = self.triggered_at {
            t = t.min(tr);
        }
        for link in self.links.values() {
            for h in link.vector.values() {
                t = t.min(h.at.saturating_add(self.config.route_timeout));
            }
        }
        for s in self.slots.iter().flatten() {
            if let Some(since) = s.unreachable_since {
                t = t.min(since.saturating_add(self.config.gc_timeout));
            }
        }
        t
    }

    /// Runs the timers due at `now`: route timeouts, garbage collection, triggered and
    /// periodic updates.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = now.millis();
        let timeout = self.config.route_timeout;
        let mut expired = Vec::new();
        let mut silent = Vec::new();
        for (&iface, link) in &mut self.links {
            let peer = link.peer.map(Dest::Router);
            let mut peer_expired = false;
            link.vector.retain(|&d, h| {
                let keep = h.at.saturating_add(timeout) > now;
                if !keep {
                    expired.push(d);
                    peer_expired |= Some(d) == peer;
                }
                keep
            });
            // The neighbour's own entry timed out: it fell silent. The next message from
            // it (or another router) makes it a neighbour again.
            if peer_expired && let Some(id) = link.peer.take() {
                silent.push((iface, id));
            }
        }
        for (iface, id) in silent {
            self.emit(Event::NeighbourDown {
                iface,
                id,
                why: NeighbourLost::TimedOut,
            });
        }
        for d in expired {
            self.recompute(now, d);
        }
        self.collect_garbage(now);
        if now >= self.next_periodic {
            let ifaces: Vec<u16> = self.links.keys().copied().collect();
            for iface in ifaces {
                self.queue_vector(iface, false);
            }
            self.clear_changed();
            self.next_periodic = now.saturating_add(self.config.update_interval);
        } else if self.triggered_at.is_some_and(|t| t <= now) {
            let ifaces: Vec<u16> = self.links.keys().copied().collect();
            for iface in ifaces {
                self.queue_vector(iface, true);
            }
            self.clear_changed();
        }
    }

    /// The next message to send, if any.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }
}
