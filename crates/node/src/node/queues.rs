//! What the node sends and delivers besides in-place forwarding: packets for the node
//! itself (echo requests answered, ESP packets reflected (§2.5), the rest delivered), its
//! own packets, the queues the caller drains, timers, and the routing protocol's messages
//! and routes.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use esp_proto::endpoint::{HostAction, host_receive};
use esp_proto::node::EspNode;
use fastpath::dv;
use fastpath::lpm::{IpPrefix, Prefix};
use fastpath::threaded::NextHop;
use waist_ip::IpHeader;
use waist_ip::icmp;

use super::input::Header;
use super::{Delivery, Fate, Node, Reason, Transmit};
use crate::Instant;
use crate::frame::KIND_ROUTING;

/// Deliveries that may wait for [`Node::poll_deliver`]; past this, packets for the node are
/// dropped (counted in `dropped.local`) rather than held without bound.
pub const MAX_DELIVERIES: usize = 4096;

impl Node {
    /// `packet` (trimmed to its IP length, header checked) is addressed to the node.
    pub(crate) fn deliver_local(&mut self, iface: usize, packet: &mut [u8]) -> Fate {
        if self.config.icmp && icmp::echo_reply(packet).is_ok() {
            self.send_own(packet.to_vec());
            return Fate::Delivered;
        }
        if let Ok(HostAction::Reflect) = host_receive(packet) {
            self.send_own(packet.to_vec());
            return Fate::Delivered;
        }
        match self.take_stream(packet) {
            Some(true) => return Fate::Delivered,
            Some(false) => return Fate::Dropped(Reason::Local),
            None => {}
        }
        if self.deliveries.len() >= MAX_DELIVERIES {
            return Fate::Dropped(Reason::Local);
        }
        self.deliveries.push_back(Delivery::Packet {
            iface,
            packet: packet.to_vec(),
        });
        Fate::Delivered
    }

    /// Routes a packet the node itself made (ICMP, reflections, echo replies) and queues it:
    /// by unicast routes only (never to a group), and only if it fits the link.
    pub(crate) fn send_own(&mut self, packet: Vec<u8>) {
        let Ok(h) = IpHeader::parse(&packet) else {
            return;
        };
        let fits = |o: &u16| {
            self.config
                .ifaces
                .get(usize::from(*o))
                .is_some_and(|f| packet.len() <= f.mtu)
        };
        let out = self.routes.route(h.dst).filter(fits);
        match out {
            Some(o) => {
                self.stats.icmp_sent += u64::from(
                    h.protocol == icmp::PROTOCOL_ICMP || h.protocol == icmp::PROTOCOL_ICMPV6,
                );
                self.out.push_back((usize::from(o), packet));
            }
            None => self.stats.icmp_suppressed += 1,
        }
    }

    /// Sends an IP packet the node originates (a tool's probe, an application's packet):
    /// routed like any other, without a TTL decrement; a SNAP packet runs here first.
    /// What it causes waits in [`poll_transmit`](Node::poll_transmit). Counted like a
    /// received frame.
    pub fn send(&mut self, now: Instant, mut packet: Vec<u8>) {
        self.stats.received += 1;
        let (fate, in_place) = self.ip(now, usize::MAX, &mut packet, (0, Header::Unread), true);
        self.count(fate);
        if let Some(t) = in_place {
            packet.truncate(t.range.end);
            self.out.push_back((t.iface, packet));
        }
    }

    /// Writes the next queued frame into `buf` and says where it goes; `None` when nothing
    /// waits. `buf` should hold [`MAX_FRAME`](super::MAX_FRAME) bytes: a frame that does not fit is dropped
    /// and counted ([`Stats::tx_buffer_short`](crate::Stats::tx_buffer_short)).
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<Transmit> {
        loop {
            let (iface, frame) = self.out.pop_front()?;
            match buf.get_mut(..frame.len()) {
                Some(slot) => {
                    slot.copy_from_slice(&frame);
                    return Some(Transmit {
                        iface,
                        len: frame.len(),
                    });
                }
                None => self.stats.tx_buffer_short += 1,
            }
        }
    }

    /// The next queued frame as an owned buffer (for callers that hand buffers on, like
    /// the simulator).
    pub fn poll_transmit_owned(&mut self) -> Option<(usize, Vec<u8>)> {
        self.out.pop_front()
    }

    /// The next thing addressed to the node itself.
    pub fn poll_deliver(&mut self) -> Option<Delivery> {
        self.deliveries.pop_front()
    }

    /// The next routing event (a route learned, changed or withdrawn, a neighbour up or
    /// down), oldest first; `None` when none waits or routing is off. Drain it after any
    /// call into the node; the events are distance vector's own ([`dv::Event`]: its
    /// interface numbers are the node's), bounded by its
    /// [`max_events`](dv::Config::max_events), past which they are counted dropped.
    pub fn poll_event(&mut self) -> Option<dv::Event> {
        self.dv.as_mut()?.poll_event()
    }

    /// When the node next wants [`handle_timeout`](Node::handle_timeout): the routing
    /// protocol's next update, the ESP stores' next sweep. `None` when nothing is timed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let dv = self.dv.as_ref().and_then(dv::Router::poll_timeout);
        let sweep = self.esp.as_ref().and_then(EspNode::poll_timeout);
        match (dv, sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs what is due at `now`: routing updates and timeouts, ESP store sweeps. Queued
    /// routing messages wait in [`poll_transmit`](Node::poll_transmit).
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(r) = &mut self.dv
            && r.poll_timeout().is_some_and(|t| t <= now)
        {
            r.handle_timeout(now);
        }
        self.drain_dv();
        if let Some(esp) = &mut self.esp {
            esp.handle_timeout(now);
        }
        if let Some(s) = self.streams_mut() {
            s.handle_timeout(now);
        }
    }

    /// Queues the routing protocol's messages and installs its routes if they changed.
    pub(super) fn drain_dv(&mut self) {
        let Some(r) = &mut self.dv else {
            return;
        };
        while let Some(t) = r.poll_transmit() {
            let mut f = Vec::with_capacity(1 + t.bytes.len());
            f.push(KIND_ROUTING);
            f.extend_from_slice(&t.bytes);
            self.stats.routing_sent += 1;
            self.out.push_back((usize::from(t.iface), f));
        }
        let changes = r.stats().route_changes;
        if self.dv_changes == Some(changes) {
            return;
        }
        self.dv_changes = Some(changes);
        let infinity = r.config().infinity;
        let mut learned = BTreeMap::new();
        for route in r.routes() {
            let (NextHop::Neighbour(i), true) = (route.next_hop, route.cost < infinity) else {
                continue;
            };
            let prefix = match route.dest {
                dv::Dest::Router(id) => Prefix::new(id.to_be_bytes(), 32).ok().map(IpPrefix::V4),
                dv::Dest::V4(p) => Some(IpPrefix::V4(p)),
                dv::Dest::V6(p) => Some(IpPrefix::V6(p)),
            };
            if let Some(p) = prefix {
                learned.insert(p, i);
            }
        }
        self.routes.set_learned(learned);
    }
}
