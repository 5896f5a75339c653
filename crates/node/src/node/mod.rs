//! The node: one packet's way through the pipeline, and the queues the caller drains.

mod ip;
mod queues;

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::net::IpAddr;
use core::ops::Range;

use esp_proto::node::EspNode;
use fastpath::dv;
use fastpath::lpm::IpPrefix;
use fastpath::threaded::ForwardError;
use snap_vm::vm::Vm;
use waist_ip::{IpHeader, Version};

use crate::Instant;
use crate::config::{Config, ConfigError};
use crate::frame::{Frame, LABEL_SHIM_LEN};
use crate::routes::Routes;
use crate::stats::Stats;

/// The largest frame [`Node::poll_transmit`] may write: a whole IPv4 packet behind a label.
pub const MAX_FRAME: usize = 65_535 + LABEL_SHIM_LEN;

/// A frame the caller sends on as it is, from its own buffer: `frame[range]` out of
/// `iface`. Returned by [`Node::handle_packet`] for the common case of one outgoing copy,
/// so forwarding copies nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InPlace {
    /// The interface it leaves by.
    pub iface: usize,
    /// The bytes of the caller's buffer to send.
    pub range: Range<usize>,
}

/// A frame [`Node::poll_transmit`] wrote into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// The interface it leaves by.
    pub iface: usize,
    /// Bytes written.
    pub len: usize,
}

/// What is addressed to the node itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivery {
    /// An IP packet for one of the node's addresses that the node does not answer itself
    /// (not an echo request, not an ESP packet to reflect), trimmed to its IP length.
    Packet {
        /// The interface it arrived on.
        iface: usize,
        /// The packet.
        packet: Vec<u8>,
    },
    /// A SNAP packet delivered a value to a local port (`demux`).
    Snap(snap_vm::vm::Delivery),
}

/// Frames [`Node::handle_packets`] warms at a time before running them: enough for the
/// processor to overlap their misses, few enough that the lines are still in L1 when their
/// frames run.
const WARM_AHEAD: usize = 32;

/// The IP packet in a frame: the frame itself, or what follows a label.
fn ip_of(frame: &[u8]) -> Option<&[u8]> {
    match Frame::parse(frame).ok()? {
        Frame::Ip(p) | Frame::Labelled { packet: p, .. } => Some(p),
        Frame::Routing(_) => None,
    }
}

/// A router node. See the [crate docs](crate) for the pipeline and the calling order.
#[derive(Debug)]
pub struct Node {
    pub(crate) config: Config,
    pub(crate) esp: Option<EspNode>,
    pub(crate) vm: Option<Vm>,
    pub(crate) routes: Routes,
    pub(crate) dv: Option<dv::Router>,
    dv_changes: Option<u64>,
    pub(crate) out: VecDeque<(usize, Vec<u8>)>,
    pub(crate) deliveries: VecDeque<Delivery>,
    pub(crate) stats: Stats,
    /// The node's own addresses and its interfaces', gathered once.
    own: Vec<IpAddr>,
}

/// How one frame ended (each frame ends exactly one way; see [`Stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    Forwarded,
    Delivered,
    Dropped(Reason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    Malformed,
    TtlExpired,
    LabelHopLimit,
    NoRoute,
    TooBig,
    Esp,
    Snap,
    Local,
}

impl Node {
    /// A node built from `config`, at `now`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] if the config does not validate.
    pub fn new(config: Config, now: Instant) -> Result<Node, ConfigError> {
        config.validate()?;
        let ifaces = config.ifaces.len();
        let esp = config.esp.as_ref().map(|e| {
            let mut c = e.node.clone();
            c.ifaces = ifaces;
            let mut esp = EspNode::new(c);
            esp.schedule_sweeps(now, e.clean_interval, e.clean_budget);
            esp.set_sites(e.sites);
            esp
        });
        let vm = match (config.snap, config.ipv4()) {
            (true, Some(address)) => Some(Vm::new(snap_vm::vm::NodeConfig {
                address,
                ifaces: u32::try_from(ifaces).unwrap_or(u32::MAX),
                mtu: config.ifaces.iter().map(|f| f.mtu).max().unwrap_or(1500),
            })),
            _ => None,
        };
        let mut dv = config.dv.map(|c| dv::Router::new(c, now));
        if let Some(r) = &mut dv {
            for (i, f) in config.ifaces.iter().enumerate() {
                if let (Some(cost), Ok(i)) = (f.dv_cost, u16::try_from(i)) {
                    r.link_up(now, i, cost).map_err(|_| ConfigError::ZeroCost {
                        iface: usize::from(i),
                    })?;
                }
            }
        }
        let mut own: Vec<IpAddr> = config.addrs.clone();
        own.extend(config.ifaces.iter().flat_map(|f| f.addrs.iter().copied()));
        own.sort_unstable();
        own.dedup();
        let mut node = Node {
            own,
            routes: Routes::new(config.route_cache_log2),
            config,
            esp,
            vm,
            dv,
            dv_changes: None,
            out: VecDeque::new(),
            deliveries: VecDeque::new(),
            stats: Stats::default(),
        };
        node.drain_dv();
        Ok(node)
    }

    /// The node's config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.esp_executed = self.esp.as_ref().map_or(0, |e| e.stats().executed);
        s
    }

    /// The routes.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// The ESP contexts, if ESP runs here.
    pub fn esp(&self) -> Option<&EspNode> {
        self.esp.as_ref()
    }

    /// The ESP contexts, mutably (to set interface load parameters).
    pub fn esp_mut(&mut self) -> Option<&mut EspNode> {
        self.esp.as_mut()
    }

    /// The SNAP VM, if SNAP runs here (to register services).
    pub fn vm_mut(&mut self) -> Option<&mut Vm> {
        self.vm.as_mut()
    }

    /// The distance-vector router, if routing runs here.
    pub fn dv(&self) -> Option<&dv::Router> {
        self.dv.as_ref()
    }

    /// Adds or replaces a static route: packets to `prefix` leave by `iface`. Returns false
    /// (and changes nothing) for an interface the node does not have.
    pub fn add_route(&mut self, prefix: IpPrefix, iface: usize) -> bool {
        match u16::try_from(iface) {
            Ok(i) if iface < self.config.ifaces.len() => {
                self.routes.add_static(prefix, i);
                true
            }
            _ => false,
        }
    }

    /// Adds or replaces a static route with backups: packets to `prefix` leave by the first
    /// of `ifaces` (in preference order) that is up (see [`set_link`](Node::set_link)); when
    /// all are down the prefix is as if withdrawn and shorter or learned routes take over.
    /// Returns false (and changes nothing) if the list is empty or names an interface the
    /// node does not have.
    pub fn add_route_via(&mut self, prefix: IpPrefix, ifaces: &[usize]) -> bool {
        let n = self.config.ifaces.len();
        let list: Option<Vec<u16>> = ifaces
            .iter()
            .map(|&i| u16::try_from(i).ok().filter(|_| i < n))
            .collect();
        match list {
            Some(l) if !l.is_empty() => {
                self.routes.add_static_via(prefix, &l);
                true
            }
            _ => false,
        }
    }

    /// Removes a static route; whether there was one.
    pub fn remove_route(&mut self, prefix: IpPrefix) -> bool {
        self.routes.remove_static(prefix)
    }

    /// Copies packets to multicast address `group` onto `downstream` (never back out of the
    /// interface a packet came in on); each copy gets its own ESP output processing.
    /// Interfaces the node does not have are left out.
    pub fn add_group(&mut self, group: IpAddr, downstream: &[usize]) {
        let ifaces = self.config.ifaces.len();
        let d = downstream
            .iter()
            .filter(|&&i| i < ifaces)
            .filter_map(|&i| u16::try_from(i).ok())
            .collect();
        self.routes.add_group(group, d);
    }

    /// Advertises `prefix` (a network attached to this node) through distance vector.
    /// Returns false when routing is off or its table is full.
    pub fn originate(&mut self, now: Instant, prefix: IpPrefix) -> bool {
        let ok = self
            .dv
            .as_mut()
            .is_some_and(|r| r.add_local_prefix(now, prefix).is_ok());
        self.drain_dv();
        ok
    }

    /// Brings interface `iface` up or down for routing: down withdraws every route through
    /// it at once (distance vector's, and static routes move to their first backup that is
    /// up, or are withdrawn if none is); up puts static routes back on it and (at its
    /// configured cost) asks the neighbour for its table. Setting a link to the state it is
    /// in changes nothing. Call this when the daemon learns a link died or came back.
    pub fn set_link(&mut self, now: Instant, iface: usize, up: bool) {
        if let (Ok(i), true) = (u16::try_from(iface), iface < self.config.ifaces.len()) {
            self.routes.set_link(i, up);
        }
        let cost = self.config.ifaces.get(iface).and_then(|f| f.dv_cost);
        if let (Some(r), Ok(i), Some(cost)) = (&mut self.dv, u16::try_from(iface), cost) {
            // A link already in the state asked for is not an error worth reporting.
            let _ = if up {
                r.link_up(now, i, cost)
            } else {
                r.link_down(now, i)
            };
        }
        self.drain_dv();
    }

    /// Whether `addr` is one of the node's own.
    #[inline]
    pub fn is_own(&self, addr: IpAddr) -> bool {
        self.own.contains(&addr)
    }

    /// The address ICMP about a packet that arrived on `iface` comes from.
    pub(crate) fn icmp_source(&self, iface: usize, version: Version) -> Option<IpAddr> {
        let fits = |a: &&IpAddr| {
            matches!(
                (version, a),
                (Version::V4, IpAddr::V4(_)) | (Version::V6, IpAddr::V6(_))
            )
        };
        self.config
            .ifaces
            .get(iface)
            .and_then(|f| f.addrs.iter().find(fits))
            .or_else(|| self.config.addrs.iter().find(fits))
            .copied()
    }

    /// Takes in one frame that arrived on `iface` at `now`, and runs the pipeline on it.
    ///
    /// The buffer is rewritten in place (TTL, checksum, ESP operands, label). If the frame
    /// leaves as exactly one copy, the answer says which bytes of the buffer to send where
    /// and nothing is copied; everything else the frame caused (multicast copies,
    /// fragments, ICMP, SNAP sends, routing messages) waits in
    /// [`poll_transmit`](Node::poll_transmit), and what is for the node in
    /// [`poll_deliver`](Node::poll_deliver). Call those after this, and re-read
    /// [`poll_timeout`](Node::poll_timeout).
    pub fn handle_packet(
        &mut self,
        now: Instant,
        iface: usize,
        frame: &mut [u8],
    ) -> Option<InPlace> {
        self.stats.received += 1;
        if iface >= self.config.ifaces.len() {
            self.stats.dropped.bad_iface += 1;
            return None;
        }
        // Plain IP, by far the most common frame, goes straight on.
        if matches!(frame.first().map(|b| b >> 4), Some(4 | 6)) {
            let (fate, in_place) = self.ip(now, iface, frame, 0, false);
            self.count(fate);
            return in_place;
        }
        let (label_at, ip_at) = match Frame::parse(frame) {
            Ok(Frame::Ip(_)) => (None, 0),
            Ok(Frame::Labelled { .. }) => (Some(1), LABEL_SHIM_LEN),
            Ok(Frame::Routing(msg)) => {
                let ok = match (&mut self.dv, u16::try_from(iface)) {
                    (Some(r), Ok(i)) => r.handle_message(now, i, msg).is_ok(),
                    _ => false,
                };
                if ok {
                    self.stats.routing += 1;
                } else {
                    self.stats.dropped.routing += 1;
                }
                self.drain_dv();
                return None;
            }
            Err(_) => {
                self.stats.dropped.bad_frame += 1;
                return None;
            }
        };
        let (fate, in_place) = match label_at {
            Some(at) => self.labelled(now, iface, frame, at),
            None => self.ip(now, iface, frame, ip_at, false),
        };
        self.count(fate);
        in_place
    }

    /// Takes in a batch of frames, each with the interface it arrived on (say, one
    /// `recvmmsg`), all at `now`, and runs the pipeline on each in order, exactly as
    /// [`handle_packet`](Node::handle_packet) one at a time would: the same rewrites, the
    /// same answers, the same queued transmits and deliveries, the same statistics.
    ///
    /// What batching adds: before each run of up to 32 frames, the ESP store lookups
    /// their instructions will make at the input port and centrally are brought into
    /// cache together
    /// ([`EspNode::warm`](esp_proto::node::EspNode::warm)), so their memory accesses
    /// overlap instead of each packet waiting on its own.
    ///
    /// `each(i, sent, frame)` is called after frame `i` has run, with
    /// [`handle_packet`](Node::handle_packet)'s answer and the rewritten frame, so the
    /// caller sends it on as it would after one call. What the frames queued waits in
    /// [`poll_transmit`](Node::poll_transmit) and [`poll_deliver`](Node::poll_deliver)
    /// after the batch (drain them then: relative to frames sent in place, queued frames
    /// go later than one call at a time would send them).
    pub fn handle_packets<B: AsRef<[u8]> + AsMut<[u8]>>(
        &mut self,
        now: Instant,
        frames: &mut [(usize, B)],
        mut each: impl FnMut(usize, Option<InPlace>, &[u8]),
    ) {
        for (c, chunk) in frames.chunks_mut(WARM_AHEAD).enumerate() {
            self.warm_esp(chunk);
            for (i, (iface, frame)) in chunk.iter_mut().enumerate() {
                let frame = frame.as_mut();
                let sent = self.handle_packet(now, *iface, frame);
                each(c * WARM_AHEAD + i, sent, frame);
            }
        }
    }

    /// Warms the ESP lookups of `frames` (see [`handle_packets`](Node::handle_packets)).
    fn warm_esp<B: AsRef<[u8]>>(&self, frames: &[(usize, B)]) {
        let Some(esp) = &self.esp else {
            return;
        };
        if frames.len() < 2 {
            return;
        }
        let ifaces = self.config.ifaces.len();
        for (iface, frame) in frames {
            let Some(packet) = ip_of(frame.as_ref()) else {
                continue;
            };
            let input = (*iface < ifaces).then_some(*iface);
            // The output port is known only once the frame is routed: guessing it by a
            // longest-prefix match per frame cost more than the miss it saves (see
            // examples/esp_batch.rs), so output contexts are not warmed.
            esp.warm(packet, input, |_| None);
        }
    }

    pub(crate) fn count(&mut self, fate: Fate) {
        let d = &mut self.stats.dropped;
        match fate {
            Fate::Forwarded => self.stats.forwarded += 1,
            Fate::Delivered => self.stats.delivered += 1,
            Fate::Dropped(r) => match r {
                Reason::Malformed => d.malformed += 1,
                Reason::TtlExpired => d.ttl_expired += 1,
                Reason::LabelHopLimit => d.label_hop_limit += 1,
                Reason::NoRoute => d.no_route += 1,
                Reason::TooBig => d.too_big += 1,
                Reason::Esp => d.esp += 1,
                Reason::Snap => d.snap += 1,
                Reason::Local => d.local += 1,
            },
        }
    }

    /// A labelled frame: the threaded table decides; a label that fails falls back to the
    /// IP header. The IP header is not touched on the label path (the label's hop limit is
    /// its loop guard).
    fn labelled(
        &mut self,
        now: Instant,
        iface: usize,
        frame: &mut [u8],
        at: usize,
    ) -> (Fate, Option<InPlace>) {
        let forwarded = match &self.dv {
            Some(r) => frame.get_mut(at..).map(|f| r.table().forward_packet(f)),
            None => None,
        };
        match forwarded {
            Some(Ok(Some(out))) => {
                let Ok(h) = IpHeader::parse(frame.get(LABEL_SHIM_LEN..).unwrap_or_default()) else {
                    return (Fate::Dropped(Reason::Malformed), None);
                };
                let end = LABEL_SHIM_LEN + h.total_len;
                if h.total_len
                    > self
                        .config
                        .ifaces
                        .get(usize::from(out))
                        .map_or(0, |f| f.mtu)
                {
                    // Too big for the label's link: the IP path fragments or answers.
                    self.stats.label_fallback += 1;
                    return self.ip(now, iface, frame, LABEL_SHIM_LEN, false);
                }
                if let Some(esp) = &mut self.esp {
                    let Some(p) = frame.get_mut(LABEL_SHIM_LEN..end) else {
                        return (Fate::Dropped(Reason::Malformed), None);
                    };
                    if !esp.ingress(now, iface, p) || !esp.egress(now, usize::from(out), p) {
                        return (Fate::Dropped(Reason::Esp), None);
                    }
                }
                self.stats.label_forwarded += 1;
                self.stats.copies += 1;
                (
                    Fate::Forwarded,
                    Some(InPlace {
                        iface: usize::from(out),
                        range: 0..end,
                    }),
                )
            }
            Some(Err(ForwardError::HopLimitExceeded)) => {
                (Fate::Dropped(Reason::LabelHopLimit), None)
            }
            // Delivered here (the label's destination is this router: the packet goes on by
            // its IP header), a random label (leaving the area), or an index that failed.
            other => {
                if !matches!(other, Some(Ok(None)) | Some(Err(ForwardError::NotThreaded))) {
                    self.stats.label_fallback += 1;
                }
                self.ip(now, iface, frame, LABEL_SHIM_LEN, false)
            }
        }
    }
}
