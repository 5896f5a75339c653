//! The router's log: routing events and link changes, one line each at info, with
//! structured fields (`router`, `event`, `dest`, `link`, `neighbour`, `cost`) for
//! `--log-format json`; and the final counters as one line.
//!
//! ```text
//!  Node::poll_event (distance vector's events) ─► route learned / changed / withdrawn,
//!                                                 neighbour up / down
//!  Links::poll_event (refused, heard, retried)  ─► flap::Flap ─► link up / down, on change
//!                                                 only; a flapping link summarised
//! ```
//!
//! The lines read as BIRD's do: `route 10.9.0.0/16 learned via a (10.0.0.2), cost 2`.
//! A router id is shown as the IPv4 address it is.

pub mod flap;

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

use fastpath::dv::{Dest, Event, Route, RouterId};
use fastpath::threaded::NextHop;
use netio::link::{Cause, LinkEvent};
use tracing::{debug, info, warn};
use waist_node::{Instant, SECONDS};

use crate::{Router, Summary};
use flap::{Flap, Policy, Say};

/// What the log remembers: each link's [`Flap`], and the last neighbour heard on each
/// link (so a route withdrawn after its neighbour went down still names it).
#[derive(Debug)]
pub(crate) struct LinkLog {
    flaps: Vec<Flap>,
    neighbours: BTreeMap<u16, RouterId>,
}

impl LinkLog {
    /// The log of a router with `links` links, all up.
    pub(crate) fn new(links: usize) -> LinkLog {
        LinkLog {
            flaps: vec![Flap::new(Policy::default()); links],
            neighbours: BTreeMap::new(),
        }
    }

    /// Follows the links through a reload: new link `j` continues old link `from[j]`
    /// (its flap history and last neighbour kept), or starts afresh when `None`.
    pub(crate) fn renumber(&mut self, from: &[Option<usize>]) {
        let old = core::mem::take(&mut self.flaps);
        self.flaps = from
            .iter()
            .map(|f| {
                f.and_then(|i| old.get(i).cloned())
                    .unwrap_or_else(|| Flap::new(Policy::default()))
            })
            .collect();
        let neighbours = core::mem::take(&mut self.neighbours);
        for (j, f) in from.iter().enumerate() {
            let (Some(i), Ok(j)) = (f, u16::try_from(j)) else {
                continue;
            };
            if let Some(id) = u16::try_from(*i).ok().and_then(|i| neighbours.get(&i)) {
                self.neighbours.insert(j, *id);
            }
        }
    }

    /// When a retried link is confirmed up or a flapping link's summary is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.flaps.iter().filter_map(Flap::next_due).min()
    }
}

/// A destination as a log shows it: `router 10.0.0.2`, `10.9.0.0/16`.
struct ShowDest(Dest);

impl fmt::Display for ShowDest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Dest::Router(id) => write!(f, "router {}", Ipv4Addr::from(id)),
            Dest::V4(p) => write!(f, "{p}"),
            Dest::V6(p) => write!(f, "{p}"),
        }
    }
}

impl Router {
    /// The name of link `iface`.
    fn link_name(&self, iface: usize) -> &str {
        self.links.get(iface).map_or("?", |l| l.name())
    }

    /// How a route leaves: `via a (10.0.0.2)`, or `local`.
    fn via(&self, r: &Route) -> String {
        match r.next_hop {
            NextHop::Neighbour(i) => {
                let name = self.link_name(usize::from(i));
                match self.log.neighbours.get(&i) {
                    Some(&id) => format!("via {name} ({})", Ipv4Addr::from(id)),
                    None => format!("via {name}"),
                }
            }
            _ => "local".to_string(),
        }
    }

    /// Logs a link's change of state (`e`, at `now`) if it is one: see [`flap`].
    pub(crate) fn log_link(&mut self, now: Instant, e: LinkEvent) {
        // A retry is up once nothing refused it for its hold-down, and at least a second
        // (a refusal may take a moment to surface on a loaded machine).
        let holddown = self
            .links
            .get(e.iface)
            .map_or(Duration::ZERO, |l| l.holddown());
        let confirm =
            u64::try_from(holddown.max(Duration::from_secs(1)).as_micros()).unwrap_or(u64::MAX);
        let Some(flap) = self.log.flaps.get_mut(e.iface) else {
            return;
        };
        let say = match (e.up, e.cause) {
            (false, _) => flap.refused(now),
            (true, Cause::Retry) => {
                flap.retried(now, confirm);
                None
            }
            (true, _) => flap.heard(now),
        };
        let name = self.link_name(e.iface);
        debug!(router = %self.name, link = name, up = e.up, "link {name}: {}", e.cause);
        if let Some(say) = say {
            self.say(e.iface, say);
        }
    }

    /// Logs the routing events waiting at the node and what the links' logs have due at
    /// `now`.
    pub(crate) fn log_events(&mut self, now: Instant) {
        while let Some(e) = self.node.poll_event() {
            self.log_route(e);
        }
        if self.log.next_due().is_some_and(|t| t <= now) {
            for i in 0..self.log.flaps.len() {
                while let Some(say) = self.log.flaps.get_mut(i).and_then(|f| f.poll(now)) {
                    self.say(i, say);
                }
            }
        }
    }

    /// Logs what the stream handlers did: deployments, refusals, overruns, changes.
    pub(crate) fn log_stream_events(&mut self) {
        use stream_handlers::node::{Event, Placement};
        let router = self.name.clone();
        while let Some(e) = self.node.poll_stream_event() {
            match e {
                Event::Deployed {
                    stream,
                    placement,
                    cost_ns,
                    allowance_ns,
                } => {
                    let (on, place) = match placement {
                        Placement::Node => ("here", "runs here"),
                        Placement::Host => ("host", "goes to the stream host"),
                    };
                    let headroom = allowance_ns
                        .map_or("no admission".to_string(), |a| format!("headroom {a} ns"));
                    info!(router = %router, event = "stream_deployed", stream, on, cost_ns,
                        "stream {stream} {place}: {cost_ns} ns per packet, {headroom}");
                }
                Event::Refused { stream, why } => {
                    warn!(router = %router, event = "stream_refused", stream, "stream {stream} refused: {why}");
                }
                Event::Overrun {
                    stream,
                    cost_ns,
                    allowance_ns,
                    moved,
                } => {
                    let what = if moved {
                        "moved to the host"
                    } else {
                        "no host to move it to"
                    };
                    warn!(router = %router, event = "stream_overrun", stream, cost_ns, allowance_ns,
                        "stream {stream} overran its headroom ({cost_ns} ns per packet > {allowance_ns} ns): {what}");
                }
                Event::Changed { stream, spec } => {
                    info!(router = %router, event = "stream_changed", stream, "stream {stream} now runs `{spec}`");
                }
                Event::Terminated { stream } => {
                    info!(router = %router, event = "stream_terminated", stream, "stream {stream} terminated");
                }
            }
        }
    }

    fn say(&self, iface: usize, say: Say) {
        let (router, link) = (&self.name, self.link_name(iface));
        let state = |up| if up { "up" } else { "down" };
        let secs = |ticks: u64| ticks / SECONDS;
        match say {
            Say::Down => {
                info!(router = %router, event = "link_down", link, "link {link} down: peer refused");
            }
            Say::Up { heard } => {
                let why = if heard {
                    "heard from peer"
                } else {
                    "peer not refusing"
                };
                info!(router = %router, event = "link_up", link, "link {link} up: {why}");
            }
            Say::Flapping { changes, every, up } => warn!(
                router = %router, event = "link_flapping", link, changes,
                "link {link} flapping: {changes} changes within a minute, now {}; \
                 changes summarised every {} s", state(up), secs(every)
            ),
            Say::Suppressed {
                suppressed,
                every,
                up,
            } => warn!(
                router = %router, event = "link_flapping", link, suppressed,
                "link {link} flapping: {suppressed} changes suppressed, now {}; next in {} s",
                state(up), secs(every)
            ),
            Say::Stable { up } => info!(
                router = %router, event = "link_stable", link,
                "link {link} stable, {}: logging every change again", state(up)
            ),
        }
    }

    fn log_route(&mut self, e: Event) {
        let router = &self.name;
        match e {
            Event::RouteLearned(r) => {
                let (dest, via) = (ShowDest(r.dest), self.via(&r));
                info!(router = %router, event = "route_learned", dest = %dest, cost = r.cost,
                    "route {dest} learned {via}, cost {}", r.cost);
            }
            Event::RouteChanged { old, new } => {
                let (dest, was, now) = (ShowDest(new.dest), self.via(&old), self.via(&new));
                if (old.cost, old.next_hop) == (new.cost, new.next_hop) {
                    debug!(router = %router, event = "route_index", dest = %dest,
                        "route {dest}: next index {} (was {})", new.next_index, old.next_index);
                } else {
                    info!(router = %router, event = "route_changed", dest = %dest, cost = new.cost,
                        "route {dest} changed {now}, cost {} (was {was}, cost {})",
                        new.cost, old.cost);
                }
            }
            Event::RouteWithdrawn(r) => {
                let (dest, via) = (ShowDest(r.dest), self.via(&r));
                info!(router = %router, event = "route_withdrawn", dest = %dest,
                    "route {dest} withdrawn (was {via}, cost {})", r.cost);
            }
            Event::NeighbourUp { iface, id } => {
                self.log.neighbours.insert(iface, id);
                let (link, id) = (self.link_name(usize::from(iface)), Ipv4Addr::from(id));
                info!(router = %router, event = "neighbour_up", link, neighbour = %id,
                    "neighbour {id} up on {link}");
            }
            Event::NeighbourDown { iface, id, why } => {
                let (link, id) = (self.link_name(usize::from(iface)), Ipv4Addr::from(id));
                info!(router = %router, event = "neighbour_down", link, neighbour = %id,
                    "neighbour {id} down on {link}: {why}");
            }
        }
    }
}

/// One line: the node's counters ([`waist_node::Stats`]' `Display`), the packets no one
/// took, and each link's frames in and out (`a 120/118`, and `refused N` if any).
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, unclaimed {}", self.node, self.unclaimed)?;
        for (name, c) in &self.links {
            write!(f, "; link {name} {} in, {} out", c.rx_frames, c.tx_frames)?;
            if c.refused != 0 {
                write!(f, ", {} refused", c.refused)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_one_line_without_debug_braces() {
        let mut s = Summary::default();
        s.node.received = 12;
        s.node.forwarded = 11;
        s.node.dropped.no_route = 1;
        s.unclaimed = 2;
        let c = netio::link::LinkCounters {
            rx_frames: 12,
            tx_frames: 11,
            refused: 3,
            ..Default::default()
        };
        s.links.push(("a".to_string(), c));
        let line = s.to_string();
        assert_eq!(
            line,
            "12 in, 11 forwarded, 0 delivered, 0 routing, 1 dropped (no_route 1), esp 0, \
             snap 0, unclaimed 2; link a 12 in, 11 out, 3 refused"
        );
        assert!(!line.contains(['{', '}', '\n']), "{line}");
    }

    #[test]
    fn destinations_read_as_addresses_and_prefixes() {
        let id = u32::from_be_bytes([10, 0, 0, 2]);
        assert_eq!(ShowDest(Dest::Router(id)).to_string(), "router 10.0.0.2");
        let p = fastpath::lpm::Prefix::new([10, 9, 0, 0], 16).unwrap();
        assert_eq!(ShowDest(Dest::V4(p)).to_string(), "10.9.0.0/16");
    }
}
