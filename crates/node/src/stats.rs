//! What a node counts. Every frame handed to
//! [`handle_packet`](crate::Node::handle_packet) ends in exactly one of forwarded,
//! delivered, routing or one drop reason, so
//! `received == forwarded + delivered + routing + dropped.total()` always holds
//! ([`Stats::balanced`]).

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
}
