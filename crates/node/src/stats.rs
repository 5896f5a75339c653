//! What a node counts. Every frame handed to
//! [`handle_packet`](crate::Node::handle_packet) ends in exactly one of forwarded,
//! delivered, routing or one drop reason, so
//! `received == forwarded + delivered + routing + dropped.total()` always holds
//! ([`Stats::balanced`]).

use core::fmt;

/// Why frames were dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    /// Not a frame (unknown first nibble or shim kind, truncated label).
    pub bad_frame: u64,
    /// On an interface the node does not have.
    pub bad_iface: u64,
    /// Not a well-formed IP packet (version, lengths, IPv4 header checksum).
    pub malformed: u64,
    /// TTL (hop limit) ran out.
    pub ttl_expired: u64,
    /// A threaded label's hop limit ran out.
    pub label_hop_limit: u64,
    /// No route to the destination.
    pub no_route: u64,
    /// Too big for the outgoing link and not fragmentable.
    pub too_big: u64,
    /// An ESP instruction dropped it (at ingress, or every copy at egress).
    pub esp: u64,
    /// A SNAP packet that ended here without sending or delivering (exit, fault, no
    /// resource bound left, malformed).
    pub snap: u64,
    /// A routing message that was malformed, or arrived with routing off.
    pub routing: u64,
    /// Addressed to this node, but nothing here takes it (a non-echo packet with no
    /// deliveries wanted is still delivered; this counts only what cannot be).
    pub local: u64,
}

impl Drops {
    /// All drops.
    pub const fn total(&self) -> u64 {
        self.bad_frame
            + self.bad_iface
            + self.malformed
            + self.ttl_expired
            + self.label_hop_limit
            + self.no_route
            + self.too_big
            + self.esp
            + self.snap
            + self.routing
            + self.local
    }

    /// Every reason with its count, named as metrics label them (`"no_route"`, …).
    pub const fn by_reason(&self) -> [(&'static str, u64); 11] {
        [
            ("bad_frame", self.bad_frame),
            ("bad_iface", self.bad_iface),
            ("malformed", self.malformed),
            ("ttl_expired", self.ttl_expired),
            ("label_hop_limit", self.label_hop_limit),
            ("no_route", self.no_route),
            ("too_big", self.too_big),
            ("esp", self.esp),
            ("snap", self.snap),
            ("routing", self.routing),
            ("local", self.local),
        ]
    }
}

/// A node's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames handed to the node.
    pub received: u64,
    /// Frames sent on (at least one copy left, or a SNAP packet sent something).
    pub forwarded: u64,
    /// Frames for the node itself (deliveries, echo requests answered, ESP reflections).
    pub delivered: u64,
    /// Routing messages taken in.
    pub routing: u64,
    /// Frames dropped, by reason.
    pub dropped: Drops,
    /// Frames put on links by forwarding (multicast copies and fragments each count).
    pub copies: u64,
    /// Copies an ESP instruction dropped at an output port (others went on).
    pub esp_copies_dropped: u64,
    /// IPv4 fragments made.
    pub fragments: u64,
    /// ICMP messages sent (errors and echo replies).
    pub icmp_sent: u64,
    /// ICMP errors the RFCs did not let us send or with no address to send from, and
    /// packets the node made (ICMP, echo replies, ESP reflections) with no unicast route or
    /// too big for their link.
    pub icmp_suppressed: u64,
    /// Routing messages sent.
    pub routing_sent: u64,
    /// SNAP executions (arrivals and local runs).
    pub snap_executed: u64,
    /// Packets SNAP programs sent.
    pub snap_sent: u64,
    /// Packets SNAP programs sent that had no route (or did not fit the link).
    pub snap_no_route: u64,
    /// ESP instructions executed (every site counts).
    pub esp_executed: u64,
    /// Frames forwarded by their threaded label.
    pub label_forwarded: u64,
    /// Labelled frames whose index failed, routed by their IP header instead.
    pub label_fallback: u64,
    /// Source-hash route cache hits.
    pub cache_hits: u64,
    /// Source-hash route cache misses.
    pub cache_misses: u64,
    /// Frames dropped at [`poll_transmit`](crate::Node::poll_transmit) because the
    /// caller's buffer was too small.
    pub tx_buffer_short: u64,
}

impl Stats {
    /// Whether every received frame is accounted for exactly once.
    pub const fn balanced(&self) -> bool {
        self.received == self.forwarded + self.delivered + self.routing + self.dropped.total()
    }

    /// Every counter but the drops ([`Drops::by_reason`] has those) as a metric name, a
    /// one-line help text and its value: what a daemon's metrics endpoint or a simulation's
    /// report prints.
    pub const fn named(&self) -> [(&'static str, &'static str, u64); 19] {
        [
            (
                "frames_received",
                "frames handed to the node",
                self.received,
            ),
            ("frames_forwarded", "frames sent on", self.forwarded),
            (
                "frames_delivered",
                "frames for the router itself",
                self.delivered,
            ),
            (
                "routing_messages",
                "routing messages taken in",
                self.routing,
            ),
            ("routing_sent", "routing messages sent", self.routing_sent),
            ("copies", "frames put on links by forwarding", self.copies),
            ("fragments", "IPv4 fragments made", self.fragments),
            ("icmp_sent", "ICMP messages sent", self.icmp_sent),
            (
                "icmp_suppressed",
                "ICMP errors not sent",
                self.icmp_suppressed,
            ),
            (
                "esp_executed",
                "ESP instructions executed",
                self.esp_executed,
            ),
            (
                "esp_copies_dropped",
                "copies an ESP instruction dropped at an output port",
                self.esp_copies_dropped,
            ),
            ("snap_executed", "SNAP executions", self.snap_executed),
            ("snap_sent", "packets SNAP programs sent", self.snap_sent),
            (
                "snap_no_route",
                "packets SNAP programs sent with no route or too big for their link",
                self.snap_no_route,
            ),
            (
                "label_forwarded",
                "frames forwarded by their threaded label",
                self.label_forwarded,
            ),
            (
                "label_fallback",
                "labelled frames routed by their IP header",
                self.label_fallback,
            ),
            (
                "cache_hits",
                "source-hash route cache hits",
                self.cache_hits,
            ),
            (
                "cache_misses",
                "source-hash route cache misses",
                self.cache_misses,
            ),
            (
                "tx_buffer_short",
                "frames dropped: the caller's transmit buffer was too small",
                self.tx_buffer_short,
            ),
        ]
    }
}

/// One line for a log: `12034 in, 11990 forwarded, 0 delivered, 0 routing, 44 dropped
/// (ttl_expired 3, no_route 41), esp 120, snap 4`, then every other counter that is not 0
/// as `name value` (the metric names of [`Stats::named`] and [`Drops::by_reason`]).
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in, {} forwarded, {} delivered, {} routing, {} dropped",
            self.received,
            self.forwarded,
            self.delivered,
            self.routing,
            self.dropped.total()
        )?;
        let mut first = true;
        for (name, n) in self.dropped.by_reason() {
            if n != 0 {
                f.write_str(if first { " (" } else { ", " })?;
                write!(f, "{name} {n}")?;
                first = false;
            }
        }
        if !first {
            f.write_str(")")?;
        }
        write!(
            f,
            ", esp {}, snap {}",
            self.esp_executed, self.snap_executed
        )?;
        // The rest, when they say something.
        const SHOWN: [&str; 6] = [
            "frames_received",
            "frames_forwarded",
            "frames_delivered",
            "routing_messages",
            "esp_executed",
            "snap_executed",
        ];
        for (name, _, n) in self.named() {
            if n != 0 && !SHOWN.contains(&name) {
                write!(f, ", {name} {n}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_readable_line() {
        let s = Stats {
            received: 12_034,
            forwarded: 11_990,
            dropped: Drops {
                ttl_expired: 3,
                no_route: 41,
                ..Drops::default()
            },
            esp_executed: 120,
            snap_executed: 4,
            icmp_sent: 3,
            ..Stats::default()
        };
        assert_eq!(
            alloc::format!("{s}"),
            "12034 in, 11990 forwarded, 0 delivered, 0 routing, 44 dropped \
             (ttl_expired 3, no_route 41), esp 120, snap 4, icmp_sent 3"
        );
        assert_eq!(
            alloc::format!("{}", Stats::default()),
            "0 in, 0 forwarded, 0 delivered, 0 routing, 0 dropped, esp 0, snap 0"
        );
    }

    #[test]
    fn named_and_by_reason_cover_every_counter_once() {
        // Every field a distinct power of two: a sum names exactly the fields it covers.
        let dropped = Drops {
            bad_frame: 1 << 0,
            bad_iface: 1 << 1,
            malformed: 1 << 2,
            ttl_expired: 1 << 3,
            label_hop_limit: 1 << 4,
            no_route: 1 << 5,
            too_big: 1 << 6,
            esp: 1 << 7,
            snap: 1 << 8,
            routing: 1 << 9,
            local: 1 << 10,
        };
        let s = Stats {
            received: 1 << 11,
            forwarded: 1 << 12,
            delivered: 1 << 13,
            routing: 1 << 14,
            dropped,
            copies: 1 << 15,
            esp_copies_dropped: 1 << 16,
            fragments: 1 << 17,
            icmp_sent: 1 << 18,
            icmp_suppressed: 1 << 19,
            routing_sent: 1 << 20,
            snap_executed: 1 << 21,
            snap_sent: 1 << 22,
            snap_no_route: 1 << 23,
            esp_executed: 1 << 24,
            label_forwarded: 1 << 25,
            label_fallback: 1 << 26,
            cache_hits: 1 << 27,
            cache_misses: 1 << 28,
            tx_buffer_short: 1 << 29,
        };
        let drops: u64 = dropped.by_reason().iter().map(|(_, v)| v).sum();
        assert_eq!(drops, dropped.total());
        assert_eq!(drops, (1 << 11) - 1);
        let named: u64 = s.named().iter().map(|(_, _, v)| v).sum();
        // Every counter but the drops.
        assert_eq!(named, ((1 << 30) - 1) & !((1 << 11) - 1));
        let mut names: alloc::vec::Vec<_> = s.named().iter().map(|(n, _, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), s.named().len());
    }
}
