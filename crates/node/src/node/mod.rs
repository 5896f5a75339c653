//! The node: its parts, how it is built and configured. What it does with a frame is in
//! the submodules:
//!
//! ```text
//!  input.rs   frames in: handle_packet(s), the link frame, labels, a batch read and warmed
//!  ip.rs      the IP pipeline: TTL, ESP in and out, multicast, routes, MTU, ICMP errors
//!  snap.rs    SNAP packets run here, the transit fast path
//!  queues.rs  packets for the node itself, its own packets, poll_*, timers, routing messages
//!  reconfigure.rs  a new config applied to the running node, its state kept
//! ```

mod input;
mod ip;
mod queues;
mod reconfigure;
pub mod snap;
pub(crate) mod streams;

pub use queues::MAX_DELIVERIES;
pub use reconfigure::{Diff, Reconfigured, RoutingFate, StoreFate};

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::net::IpAddr;
use core::ops::Range;

use esp_proto::node::EspNode;
use fastpath::dv;
use fastpath::lpm::IpPrefix;
use snap_vm::vm::Vm;
use waist_ip::Version;

use crate::Instant;
use crate::config::{Config, ConfigError};
use crate::frame::LABEL_SHIM_LEN;
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

/// A router node. See the [crate docs](crate) for the pipeline and the calling order.
#[derive(Debug)]
pub struct Node {
    pub(crate) config: Config,
    pub(crate) esp: Option<EspNode>,
    pub(crate) vm: Option<Vm>,
    pub(crate) routes: Routes,
    pub(crate) dv: Option<dv::Router>,
    pub(crate) dv_changes: Option<u64>,
    pub(crate) out: VecDeque<(usize, Vec<u8>)>,
    pub(crate) deliveries: VecDeque<Delivery>,
    pub(crate) stats: Stats,
    /// The node's own addresses and its interfaces', gathered once.
    pub(crate) own: Vec<IpAddr>,
    /// [`Node::handle_packets`]' frames, read (kept to reuse its allocation).
    reads: Vec<input::Read>,
    /// Where the ESP instruction of the packet in the pipeline is: set at its first ESP
    /// site (found there, or read with its frame), used by the others. A field, not a
    /// local, so that a node without ESP pays nothing for it per packet.
    pub(crate) esp_found: esp_proto::node::Found,
    /// ESP instructions written in SNAP: inline microcode's policy, installed instructions
    /// and their counters (idle without an ESP stage).
    pub(crate) micro: esp_micro::Micro,
    /// The stream handlers, if on.
    pub(crate) streams: Option<streams::Streams>,
    /// Whether they take streams passing through ([`StreamsConfig::through`](crate::StreamsConfig::through)).
    pub(crate) streams_through: bool,
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
        let mut micro = esp_micro::Micro::default();
        if let Some(e) = &config.esp {
            micro
                .configure(e.microcode.inline.clone(), &e.microcode.installed)
                .map_err(ConfigError::Install)?;
        }
        let vm = snap::vm_for(&config);
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
            reads: Vec::new(),
            esp_found: esp_proto::node::Found::NotEsp,
            micro,
            streams: None,
            streams_through: false,
        };
        node.streams = node.config.streams.as_ref().map(streams::Streams::new);
        node.streams_through = node.config.streams.as_ref().is_some_and(|s| s.through);
        node.drain_dv();
        node.install(now)?;
        Ok(node)
    }

    /// Installs what the config declares besides the stages: its static routes, groups and
    /// originated prefixes (the config is valid: every interface named exists, routing
    /// runs if there is anything to originate).
    fn install(&mut self, now: Instant) -> Result<(), ConfigError> {
        let (routes, groups, originate) = (
            core::mem::take(&mut self.config.routes),
            core::mem::take(&mut self.config.groups),
            core::mem::take(&mut self.config.originate),
        );
        for (p, ifaces) in &routes {
            self.add_route_via(*p, ifaces);
        }
        for (g, ifaces) in &groups {
            self.add_group(*g, ifaces);
        }
        let all = originate.iter().all(|&p| self.originate(now, p));
        (
            self.config.routes,
            self.config.groups,
            self.config.originate,
        ) = (routes, groups, originate);
        if all {
            Ok(())
        } else {
            Err(ConfigError::RoutingTableFull)
        }
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

    /// The node's ESP microcode: installed instructions and counters of runs and refusals.
    pub fn micro(&self) -> &esp_micro::Micro {
        &self.micro
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
}
