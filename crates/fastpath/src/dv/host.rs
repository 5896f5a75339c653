//! The host's side of threaded indices (§4, Fig. 6): before sending to a destination, a
//! source asks its first router for the destination's index there, caches it, and puts it
//! in the label of every packet to that destination.
//!
//! [`FirstHop`] keeps those answers. It accepts answers only for destinations it asked
//! about (so its memory is bounded by what it queried), and an answer only for as long as
//! the router keeps the index bound to its destination: entries older than `max_age`
//! milliseconds are not used, and the host asks again. Like the router it takes `now` as
//! an [`Instant`] and counts in whole milliseconds (`now.millis()`). Pick `max_age` below the routers'
//! garbage-collection delay ([`Config::gc_timeout`](super::Config::gc_timeout)), after
//! which an unreachable destination's index may be reused.
//!
//! ```
//! use fastpath::dv::host::FirstHop;
//! use fastpath::dv::{Config, Router};
//! use sansio::Instant;
//!
//! let ms = Instant::from_millis;
//! // A router that knows only itself (id 1): its own index delivers locally.
//! let mut router = Router::new(Config::new(1), ms(0));
//! let mut host = FirstHop::new(1_000, 5_000, 64);
//! let mut query = Vec::new();
//! assert_eq!(host.query(ms(0), &[1, 9], &mut query), 2);
//! let mut answer = Vec::new();
//! router.answer_query(&query, &mut answer)?;
//! assert_eq!(host.handle_answer(ms(10), &answer)?, 1); // 9 is unreachable
//! let label = host.label(ms(20), 1, 16).expect("learned");
//! assert_eq!(Some(label.index), router.index_of(1));
//! assert_eq!(host.label(ms(20), 9, 16), None);
//! assert_eq!(host.label(ms(10_000), 1, 16), None); // too old: ask again
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use sansio::Instant;

use super::RouterId;
use super::wire::{AdvEntry, Advertisement, MessageKind, UNREACHABLE, WireError};
use crate::threaded::Label;

/// What the host knows of one destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// Asked at this time (ms), no answer yet.
    Asked(u64),
    /// The first router's index and cost, learned at this time (ms).
    Index { index: u32, cost: u16, at: u64 },
}

/// A host's cache of its first router's indices.
#[derive(Clone, Debug)]
pub struct FirstHop {
    host: u32,
    max_age: u64,
    capacity: usize,
    known: BTreeMap<RouterId, Known>,
}

impl FirstHop {
    /// A cache for host `host` (the sender id its queries carry), whose answers are used
    /// for `max_age` ms, holding at most `capacity` destinations.
    pub fn new(host: u32, max_age: u64, capacity: usize) -> Self {
        Self {
            host,
            max_age,
            capacity,
            known: BTreeMap::new(),
        }
    }

    /// Appends to `out` a query for those of `dests` without a fresh answer (at most as
    /// many as there is room for); returns how many it asks about (0: nothing appended).
    pub fn query(&mut self, now: Instant, dests: &[RouterId], out: &mut Vec<u8>) -> usize {
        let now = now.millis();
        let mut ask: Vec<AdvEntry> = Vec::new();
        for &dest in dests {
            if self.fresh(now, dest).is_some() || ask.iter().any(|e| e.dest == dest) {
                continue;
            }
            if !self.known.contains_key(&dest) && self.known.len() >= self.capacity {
                continue;
            }
            self.known.insert(dest, Known::Asked(now));
            ask.push(AdvEntry {
                dest,
                cost: 0,
                index: 0,
            });
        }
        if !ask.is_empty() {
            Advertisement::emit(MessageKind::IndexQuery, self.host, &ask, out);
        }
        ask.len()
    }

    /// Takes a router's answer: each destination asked about that the router can reach
    /// is learned (one answered [`UNREACHABLE`] is forgotten). Entries for destinations not asked
    /// about are ignored. Returns how many were learned.
    ///
    /// # Errors
    ///
    /// Bytes that are not a well-formed index answer.
    pub fn handle_answer(&mut self, now: Instant, bytes: &[u8]) -> Result<usize, WireError> {
        let now = now.millis();
        let adv = Advertisement::parse(bytes)?;
        if adv.kind() != MessageKind::IndexAnswer {
            return Err(WireError::UnknownKind(u8::from(adv.kind())));
        }
        let mut learned = 0;
        for e in adv.entries() {
            let Some(k) = self.known.get_mut(&e.dest) else {
                continue;
            };
            if e.cost == UNREACHABLE {
                self.known.remove(&e.dest);
                continue;
            }
            *k = Known::Index {
                index: e.index,
                cost: e.cost,
                at: now,
            };
            learned += 1;
        }
        Ok(learned)
    }

    /// The label for a packet to `dest`, if a fresh answer is known.
    pub fn label(&self, now: Instant, dest: RouterId, hop_limit: u8) -> Option<Label> {
        self.fresh(now.millis(), dest)
            .map(|(index, _)| Label::threaded(index, hop_limit))
    }

    /// The first router's cost to `dest`, if a fresh answer is known.
    pub fn cost(&self, now: Instant, dest: RouterId) -> Option<u16> {
        self.fresh(now.millis(), dest).map(|(_, cost)| cost)
    }

    /// Forgets `dest` (for example after the router refused a packet sent with its index).
    pub fn forget(&mut self, dest: RouterId) {
        self.known.remove(&dest);
    }

    /// Destinations asked about or known.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether nothing is asked about or known.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    fn fresh(&self, now: u64, dest: RouterId) -> Option<(u32, u16)> {
        match self.known.get(&dest)? {
            Known::Index { index, cost, at } if now.saturating_sub(*at) < self.max_age => {
                Some((*index, *cost))
            }
            _ => None,
        }
    }
}
