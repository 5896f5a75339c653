//! A deterministic multi-router simulation of [`crate::dv`] (feature `sim`).
//!
//! Routers `0 … n-1` (router `i` has id `i`) joined by point-to-point links with a cost and
//! a one-way delay. A link's interface number at both ends is its position in the link
//! list. There is a virtual clock and an event loop: messages are delivered in time order
//! (ties in send order), timers fire when due, and loss, if set, comes from a seeded
//! generator. Used by the tests, the
//! proptests and the fuzz target; [`Network::trace`] follows threaded labels hop by hop,
//! [`Network::trace_dest`] to a prefix a router originates ([`Network::add_prefix`]).
//!
//! ```
//! use fastpath::lpm::Prefix;
//! use fastpath::sim::Network;
//!
//! // A triangle: 0–1 cost 1, 1–2 cost 1, 0–2 cost 5.
//! let mut net = Network::new(3, &[(0, 1, 1), (1, 2, 1), (0, 2, 5)], 16);
//! let lan = Prefix::new([192, 168, 2, 0], 24).unwrap();
//! assert!(net.add_prefix(2, lan));
//! net.run_for(5_000);
//! assert_eq!(net.router(0).route(2).unwrap().cost, 2);
//! assert_eq!(net.trace(0, 2).unwrap(), vec![0, 1, 2]);
//! assert_eq!(net.router(0).lookup_v4([192, 168, 2, 9]).unwrap().1.cost, 2);
//! assert_eq!(net.trace_dest(0, lan, 2).unwrap(), vec![0, 1, 2]);
//! ```

use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::fmt;

use netsim::graph::Graph;
use sansio::{Instant, SplitMix64};

use crate::dv::{Config, Dest, Router};
use crate::lpm::IpPrefix;
use crate::threaded::{Forward, Label, MAX_HOP_LIMIT};

/// One link of the simulated topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimLink {
    /// One end.
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// Cost, the same in both directions.
    pub cost: u16,
    /// Whether the link carries messages.
    pub up: bool,
}

/// Why a threaded trace failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// A router number out of range.
    NoSuchRouter,
    /// The source has no index for the destination.
    NoIndex,
    /// Forwarding refused the label at this router.
    Forward(usize, crate::threaded::ForwardError),
    /// The label named an interface with no up link.
    DeadInterface(usize),
    /// The packet was delivered at a router that is not the destination.
    WrongDelivery(usize),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchRouter => write!(f, "no such router"),
            Self::NoIndex => write!(f, "source has no index for the destination"),
            Self::Forward(r, e) => write!(f, "router {r} refused the label: {e}"),
            Self::DeadInterface(r) => write!(f, "router {r} sent on a link that is down"),
            Self::WrongDelivery(r) => write!(f, "delivered at router {r}, not the destination"),
        }
    }
}

impl core::error::Error for TraceError {}

/// A message on the wire: (arrival time, send order, to router, link, bytes).
type InFlight = (u64, u64, usize, u16, Vec<u8>);

/// The simulated network.
#[derive(Clone, Debug)]
pub struct Network {
    routers: Vec<Router>,
    links: Vec<SimLink>,
    queue: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    now: u64,
    delay: u64,
    /// Loss: (generator, messages dropped per 1,000).
    loss: (SplitMix64, u16),
    /// Messages delivered so far.
    pub delivered: u64,
    /// Messages dropped by the simulated loss.
    pub dropped: u64,
}

impl Network {
    /// `n` routers and `links` as `(a, b, cost)`, all up, with test-speed timers: updates
    /// every 1 s, triggered updates after 5 ms, route timeout 6 s, GC 4 s, link delay 10 ms.
    /// Links naming a router out of range or with an invalid cost are kept but stay down.
    pub fn new(n: usize, links: &[(usize, usize, u16)], infinity: u16) -> Self {
        let routers = (0..n)
            .map(|i| {
                let mut c = Config::new(u32::try_from(i).unwrap_or(u32::MAX));
                c.infinity = infinity;
                c.update_interval = 1_000;
                c.triggered_delay = 5;
                c.route_timeout = 6_000;
                c.gc_timeout = 4_000;
                Router::new(c, Instant::ZERO)
            })
            .collect();
        let mut net = Self {
            routers,
            links: Vec::new(),
            queue: BinaryHeap::new(),
            seq: 0,
            now: 0,
            delay: 10,
            loss: (SplitMix64::new(0), 0),
            delivered: 0,
            dropped: 0,
        };
        for &(a, b, cost) in links {
            let i = net.links.len();
            net.links.push(SimLink {
                a,
                b,
                cost,
                up: false,
            });
            net.set_link(i, Some(cost));
        }
        net
    }

    /// Drops each message with probability `per_mille` / 1000, drawn from a generator
    /// seeded with `seed` (deterministic: the same seed drops the same messages).
    pub fn set_loss(&mut self, seed: u64, per_mille: u16) {
        self.loss = (SplitMix64::new(seed), per_mille.min(1000));
    }

    fn lose(&mut self) -> bool {
        if self.loss.1 == 0 {
            return false;
        }
        self.loss.0.next_u64() % 1000 < u64::from(self.loss.1)
    }

    /// Current virtual time (ms).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Router `i`.
    ///
    /// # Panics
    ///
    /// If `i` is out of range (a test bug).
    pub fn router(&self, i: usize) -> &Router {
        &self.routers[i]
    }

    /// Number of routers.
    pub fn len(&self) -> usize {
        self.routers.len()
    }

    /// True if there are no routers.
    pub fn is_empty(&self) -> bool {
        self.routers.is_empty()
    }

    /// The links.
    pub fn links(&self) -> &[SimLink] {
        &self.links
    }

    /// Brings link `i` up with `cost` (or changes its cost), or takes it down (`None`).
    /// Both ends learn at once, as from carrier detect. Returns false if the routers refused
    /// (bad cost) or `i` is out of range.
    pub fn set_link(&mut self, i: usize, cost: Option<u16>) -> bool {
        let Ok(iface) = u16::try_from(i) else {
            return false;
        };
        let Some(link) = self.links.get(i).copied() else {
            return false;
        };
        if link.a >= self.routers.len() || link.b >= self.routers.len() || link.a == link.b {
            return false;
        }
        let now = Instant::from_millis(self.now);
        let ok = match cost {
            Some(c) => {
                let ra = self.routers[link.a].link_up(now, iface, c);
                let rb = self.routers[link.b].link_up(now, iface, c);
                if ra.is_err() || rb.is_err() {
                    let _ = self.routers[link.a].link_down(now, iface);
                    let _ = self.routers[link.b].link_down(now, iface);
                }
                ra.is_ok() && rb.is_ok()
            }
            None => {
                let _ = self.routers[link.a].link_down(now, iface);
                let _ = self.routers[link.b].link_down(now, iface);
                true
            }
        };
        if let Some(l) = self.links.get_mut(i) {
            l.up = ok && cost.is_some();
            if let Some(c) = cost.filter(|_| ok) {
                l.cost = c;
            }
        }
        self.flush_all();
        ok
    }

    /// Injects raw bytes as if router `from`'s neighbour on link `i` had sent them to
    /// `to` (used by the fuzz target). Returns the router's verdict.
    pub fn inject(
        &mut self,
        to: usize,
        i: u16,
        bytes: &[u8],
    ) -> Option<Result<(), crate::dv::HandleError>> {
        let now = Instant::from_millis(self.now);
        let r = self.routers.get_mut(to)?.handle_message(now, i, bytes);
        self.flush_all();
        Some(r)
    }

    fn flush_all(&mut self) {
        for r in 0..self.routers.len() {
            self.flush(r);
        }
    }

    fn flush(&mut self, r: usize) {
        while let Some(t) = self.routers.get_mut(r).and_then(Router::poll_transmit) {
            let Some(link) = self.links.get(usize::from(t.iface)).copied() else {
                continue;
            };
            if !link.up {
                continue;
            }
            let to = if link.a == r { link.b } else { link.a };
            self.seq += 1;
            self.queue.push(Reverse((
                self.now + self.delay,
                self.seq,
                to,
                t.iface,
                t.bytes,
            )));
        }
    }

    /// Runs the event loop until virtual time `now + ms`.
    pub fn run_for(&mut self, ms: u64) {
        let end = self.now.saturating_add(ms);
        loop {
            let next_msg = self.queue.peek().map(|Reverse(m)| m.0);
            let next_timer = self
                .routers
                .iter()
                .filter_map(Router::poll_timeout)
                .map(Instant::millis)
                .min();
            let next = match (next_msg, next_timer) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).unwrap_or(u64::MAX),
            };
            if next > end {
                self.now = end;
                return;
            }
            self.now = self.now.max(next);
            while self.queue.peek().is_some_and(|Reverse(m)| m.0 <= self.now) {
                let Some(Reverse((_, _, to, iface, bytes))) = self.queue.pop() else {
                    break;
                };
                let up = self.links.get(usize::from(iface)).is_some_and(|l| l.up);
                if up && self.lose() {
                    self.dropped += 1;
                } else if up {
                    self.delivered += 1;
                    let now = Instant::from_millis(self.now);
                    if let Some(r) = self.routers.get_mut(to) {
                        // Routers reject malformed bytes; simulated routers send none.
                        let _ = r.handle_message(now, iface, &bytes);
                    }
                }
            }
            for r in 0..self.routers.len() {
                let now = Instant::from_millis(self.now);
                if self.routers[r].poll_timeout().is_some_and(|t| t <= now) {
                    self.routers[r].handle_timeout(now);
                }
                self.flush(r);
            }
        }
    }

    /// Router `r` starts originating `prefix` ([`Router::add_local_prefix`]). Returns
    /// false if `r` is out of range or its table is full.
    pub fn add_prefix(&mut self, r: usize, prefix: impl Into<IpPrefix>) -> bool {
        let now = Instant::from_millis(self.now);
        let ok = self
            .routers
            .get_mut(r)
            .is_some_and(|router| router.add_local_prefix(now, prefix).is_ok());
        self.flush_all();
        ok
    }

    /// Router `r` stops originating `prefix` ([`Router::remove_local_prefix`]). Returns
    /// false if `r` is out of range or did not originate it.
    pub fn remove_prefix(&mut self, r: usize, prefix: impl Into<IpPrefix>) -> bool {
        let now = Instant::from_millis(self.now);
        let ok = self
            .routers
            .get_mut(r)
            .is_some_and(|router| router.remove_local_prefix(now, prefix));
        self.flush_all();
        ok
    }

    /// Follows threaded labels from `src` to `dst` hop by hop, as a data packet would:
    /// `src` looks up its own index for `dst`, each router forwards on the label and
    /// rewrites it. Returns the routers visited, `src` first.
    ///
    /// # Errors
    ///
    /// Any refusal on the way (no route, dead link, hop limit, wrong delivery).
    pub fn trace(&self, src: usize, dst: usize) -> Result<Vec<usize>, TraceError> {
        let dst_id = u32::try_from(dst).map_err(|_| TraceError::NoSuchRouter)?;
        let first = self.routers.get(src).ok_or(TraceError::NoSuchRouter)?;
        let label = Label::threaded(
            first.index_of(dst_id).ok_or(TraceError::NoIndex)?,
            MAX_HOP_LIMIT,
        );
        self.trace_label(src, dst, label)
    }

    /// Follows threaded labels from `src` towards any destination `dest` (a router or a
    /// prefix), expecting delivery at router `at` (the prefix's originator): `src` looks
    /// up its own index for `dest` and each router forwards on the label. Returns the
    /// routers visited, `src` first.
    ///
    /// # Errors
    ///
    /// As [`Network::trace`].
    pub fn trace_dest(
        &self,
        src: usize,
        dest: impl Into<Dest>,
        at: usize,
    ) -> Result<Vec<usize>, TraceError> {
        let first = self.routers.get(src).ok_or(TraceError::NoSuchRouter)?;
        let index = first.index_of_dest(dest).ok_or(TraceError::NoIndex)?;
        self.trace_label(src, at, Label::threaded(index, MAX_HOP_LIMIT))
    }

    /// Follows `label` (for example one a host built from its first router's answer,
    /// [`crate::dv::host::FirstHop`]) from router `src`, hop by hop, expecting delivery at
    /// `dst`. Returns the routers visited, `src` first.
    ///
    /// # Errors
    ///
    /// As [`Network::trace`].
    pub fn trace_label(
        &self,
        src: usize,
        dst: usize,
        label: Label,
    ) -> Result<Vec<usize>, TraceError> {
        if dst >= self.routers.len() || src >= self.routers.len() {
            return Err(TraceError::NoSuchRouter);
        }
        let mut label = label;
        let mut at = src;
        let mut path = alloc::vec![src];
        loop {
            let router = self.routers.get(at).ok_or(TraceError::NoSuchRouter)?;
            match router
                .table()
                .forward(label)
                .map_err(|e| TraceError::Forward(at, e))?
            {
                Forward::Deliver if at == dst => return Ok(path),
                Forward::Deliver => return Err(TraceError::WrongDelivery(at)),
                Forward::Send { iface, out_label } => {
                    let link = self
                        .links
                        .get(usize::from(iface))
                        .filter(|l| l.up && (l.a == at || l.b == at))
                        .ok_or(TraceError::DeadInterface(at))?;
                    at = if link.a == at { link.b } else { link.a };
                    label = out_label;
                    path.push(at);
                }
            }
        }
    }

    /// Cost of a path of routers over the up links (the cheapest link between each pair).
    pub fn path_cost(&self, path: &[usize]) -> Option<u32> {
        path.windows(2)
            .map(|w| {
                self.links
                    .iter()
                    .filter(|l| l.up && ((l.a, l.b) == (w[0], w[1]) || (l.b, l.a) == (w[0], w[1])))
                    .map(|l| u32::from(l.cost))
                    .min()
            })
            .sum()
    }

    /// All-pairs shortest path costs over the up links, the reference the distance-vector
    /// tables are checked against (`netsim::graph`, searched from every router).
    /// `None` = unreachable.
    pub fn shortest_paths(&self) -> Vec<Vec<Option<u32>>> {
        let n = self.routers.len();
        let mut graph = Graph::new(n);
        for (i, l) in self.links.iter().enumerate().filter(|(_, l)| l.up) {
            graph.add_edge(l.a, i, l.b, i, u64::from(l.cost));
        }
        (0..n)
            .map(|src| {
                let paths = graph.shortest_paths(src).into_iter();
                paths
                    .map(|p| p.map(|p| u32::try_from(p.cost).unwrap_or(u32::MAX)))
                    .collect()
            })
            .collect()
    }
}
