//! A stream node, sans-IO: the overlay node of the paper (§3) as a value. Datagrams for
//! its data and control ports go in; datagrams to send, events and counters come out.
//! The router daemon runs one on its own addresses, the host process (`waist stream
//! host`) runs another without admission, and the simulator runs the same code.
//!
//! ```text
//!  data port (RUDP fragment) ─► stream's deployment? ─ none ─► dropped, counted
//!     │ on the host ─► the fragment, unchanged, to the host's data port
//!     │ every handler needs a prefix the first fragment holds (route, mirror, filters):
//!     │    fragment 0 ─► handlers decide ─► every fragment of the message follows, as it
//!     │    comes (cut-through; fragments ahead of fragment 0 wait, bounded)
//!     │ else (delta, byteswap): bounded reassembly ─► handlers ─► refragmented, sent
//!  control port (Envelope) ─► deploy (admission: trial runs) │ control message │ reply
//! ```
//!
//! Handler cost is measured with the caller's [`Meter`] around each run (the router
//! passes its monotonic clock; a simulator a model): see [`admission`].
//!
//! A change (a control message, a move to the host) takes effect at a message boundary:
//! each message's fate (where it is handled, the cut-through decision) is fixed when its
//! first fragment arrives, and a whole message is handled as one.

pub mod admission;
mod run;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::net::{IpAddr, SocketAddr};

pub use admission::Admission;
use admission::Cost;

use crate::deploy::Deployment;
use crate::rudp::{Reassembler, ReassemblyConfig};
use crate::spec::Spec;

/// The UDP port RUDP fragments travel to.
pub const DATA_PORT: u16 = 7400;
/// The UDP port control envelopes travel to.
pub const CONTROL_PORT: u16 = 7401;

/// The caller's clock for timing handlers, in nanoseconds from any origin.
pub trait Meter {
    /// Now, ns.
    fn now_ns(&mut self) -> u64;
}

impl<F: FnMut() -> u64> Meter for F {
    fn now_ns(&mut self) -> u64 {
        self()
    }
}

/// How to build a [`StreamNode`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    /// Where fragments arrive and leave from ([`DATA_PORT`]).
    pub data_port: u16,
    /// Where control envelopes arrive ([`CONTROL_PORT`]).
    pub control_port: u16,
    /// Reassembly limits for streams handled whole (per source and stream).
    pub reassembly: ReassemblyConfig,
    /// Admission by headroom; `None` admits everything (the host's own node).
    pub admission: Option<Admission>,
    /// The host process a stream goes to when it is not admitted (its data and control
    /// ports are this node's), if any; without one such a deployment is refused.
    pub host: Option<IpAddr>,
    /// Who may send control envelopes (`None`: anyone).
    pub control_from: Option<Vec<IpAddr>>,
    /// Streams deployed at once.
    pub max_streams: usize,
    /// Fragments held (all streams) while their message's first fragment is awaited.
    pub max_held: usize,
    /// Deployments a `Select` control message chooses among (the paper's pre-existing
    /// handlers), by index.
    pub presets: Vec<Spec>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            data_port: DATA_PORT,
            control_port: CONTROL_PORT,
            reassembly: ReassemblyConfig::default(),
            admission: Some(Admission::default()),
            host: None,
            control_from: None,
            max_streams: 64,
            max_held: 256,
            presets: Vec::new(),
        }
    }
}

/// A datagram to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The node's UDP port it leaves from.
    pub src_port: u16,
    /// Where it goes.
    pub dst: SocketAddr,
    /// The UDP payload.
    pub payload: Vec<u8>,
}

/// Where a stream's handlers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On this node.
    Node,
    /// On the host process.
    Host,
}

/// How a stream's messages pass the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Decided on the first fragment; every fragment forwarded as it comes.
    CutThrough,
    /// Reassembled, handled whole, fragmented again.
    Whole,
}

/// Something a caller logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A stream was deployed.
    Deployed {
        /// The stream.
        stream: u16,
        /// Where it runs.
        placement: Placement,
        /// Its measured cost, ns per packet.
        cost_ns: u64,
        /// The allowance it was measured against, ns per packet (`None`: no admission).
        allowance_ns: Option<u64>,
    },
    /// A deployment was refused.
    Refused {
        /// The stream.
        stream: u16,
        /// Why.
        why: String,
    },
    /// A stream overran its allowance at run time and moved to the host (or could not:
    /// `moved` false, no host configured).
    Overrun {
        /// The stream.
        stream: u16,
        /// Its measured cost, ns per packet.
        cost_ns: u64,
        /// The allowance, ns per packet.
        allowance_ns: u64,
        /// Whether it moved to the host.
        moved: bool,
    },
    /// A control message changed a stream's handlers.
    Changed {
        /// The stream.
        stream: u16,
        /// The spec it now runs.
        spec: String,
    },
    /// A stream was terminated.
    Terminated {
        /// The stream.
        stream: u16,
    },
}

/// Counters of a stream node (each datagram in is counted once among the `*_in` and the
/// drops).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Data fragments received.
    pub fragments_in: u64,
    /// Data fragments sent (copies counted).
    pub fragments_out: u64,
    /// Fragments passed to the host unchanged.
    pub to_host: u64,
    /// Messages handled on this node (cut-through or whole).
    pub messages: u64,
    /// Messages sent (copies counted).
    pub messages_out: u64,
    /// Fragments dropped: not RUDP data.
    pub malformed: u64,
    /// Fragments dropped: no deployment for their stream.
    pub unknown_stream: u64,
    /// Fragments dropped by reassembly (duplicate, inconsistent, stale, too long).
    pub reassembly_refused: u64,
    /// Fragments dropped: held too long or past `max_held` waiting for their first fragment.
    pub held_dropped: u64,
    /// Control envelopes applied (deploys included).
    pub control_applied: u64,
    /// Control envelopes refused (malformed, not allowed, not applicable).
    pub control_refused: u64,
    /// Deployments admitted on the node.
    pub deployed_node: u64,
    /// Deployments placed on the host.
    pub deployed_host: u64,
    /// Streams moved to the host after overrunning their allowance.
    pub overruns: u64,
}

impl Stats {
    /// Every counter: name (for metrics, `snake_case`), what it counts, value.
    pub fn named(&self) -> [(&'static str, &'static str, u64); 14] {
        [
            (
                "fragments_in",
                "stream fragments received",
                self.fragments_in,
            ),
            (
                "fragments_out",
                "stream fragments sent (copies counted)",
                self.fragments_out,
            ),
            (
                "to_host",
                "stream fragments passed to the host unchanged",
                self.to_host,
            ),
            ("messages", "stream messages handled here", self.messages),
            (
                "messages_out",
                "stream messages sent (copies counted)",
                self.messages_out,
            ),
            (
                "malformed",
                "datagrams on the data port that are not RUDP data",
                self.malformed,
            ),
            (
                "unknown_stream",
                "fragments of streams with no deployment",
                self.unknown_stream,
            ),
            (
                "reassembly_refused",
                "fragments refused by reassembly",
                self.reassembly_refused,
            ),
            (
                "held_dropped",
                "fragments dropped waiting for their first fragment",
                self.held_dropped,
            ),
            (
                "control_applied",
                "control envelopes applied",
                self.control_applied,
            ),
            (
                "control_refused",
                "control envelopes refused",
                self.control_refused,
            ),
            (
                "deployed_node",
                "deployments admitted here",
                self.deployed_node,
            ),
            (
                "deployed_host",
                "deployments placed on the host",
                self.deployed_host,
            ),
            (
                "overruns",
                "streams that overran their headroom",
                self.overruns,
            ),
        ]
    }
}

/// One stream as the node runs it (for metrics and `status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// The stream id.
    pub stream: u16,
    /// Where its handlers run.
    pub placement: Placement,
    /// How its messages pass.
    pub mode: Mode,
    /// Measured cost, ns per packet.
    pub cost_ns: u64,
    /// Messages measured.
    pub samples: u64,
    /// The spec it runs, as text.
    pub spec: String,
}

/// A message's fate, fixed at its first fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fate {
    /// To the host, fragment by fragment.
    Host,
    /// Reassembled here.
    Whole,
    /// Cut-through to these destinations.
    Cut(Vec<SocketAddr>),
}

pub(crate) struct Stream {
    spec: Spec,
    deployment: Deployment,
    mode: Mode,
    /// The prefix the handlers read (cut-through) or `usize::MAX`.
    prefix: usize,
    placement: Placement,
    cost: Cost,
    /// Fates of recent messages, (source, message id) → fate; the oldest forgotten first.
    fates: Fates,
    overrun_reported: bool,
}

/// Fates remembered per stream.
const FATES: usize = 128;

/// The fates of a stream's recent messages: (source, message id) → fate and when it was
/// fixed (µs), the oldest forgotten first. Keyed message id first: most comparisons end
/// at an integer. A fate older than the reassembly timeout is over (its message's
/// fragments would have arrived): a publisher that starts again from id 0 is decided
/// afresh.
#[derive(Default)]
pub(crate) struct Fates {
    map: BTreeMap<(u32, IpAddr), (Fate, u64)>,
    order: VecDeque<(u32, IpAddr)>,
}

impl Fates {
    fn get(&self, (src, message): (IpAddr, u32), now: u64, ttl: u64) -> Option<&Fate> {
        self.map
            .get(&(message, src))
            .filter(|(_, at)| now.saturating_sub(*at) <= ttl)
            .map(|(f, _)| f)
    }

    fn remember(&mut self, (src, message): (IpAddr, u32), fate: Fate, now: u64) {
        let key = (message, src);
        if self.map.insert(key, (fate, now)).is_some() {
            return;
        }
        if self.order.len() >= FATES
            && let Some(old) = self.order.pop_front()
        {
            self.map.remove(&old);
        }
        self.order.push_back(key);
    }
}

/// The stream node. See the [module docs](self).
pub struct StreamNode {
    cfg: NodeConfig,
    streams: BTreeMap<u16, Stream>,
    reassemblers: BTreeMap<(IpAddr, u16), Reassembler>,
    /// Fragments waiting for their message's first fragment: (arrival µs, source, stream,
    /// message, fragment).
    held: VecDeque<(u64, IpAddr, u16, u32, Vec<u8>)>,
    out: VecDeque<Output>,
    events: VecDeque<Event>,
    stats: Stats,
    base_ns: u64,
    next_id: u32,
}

impl core::fmt::Debug for StreamNode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StreamNode")
            .field("streams", &self.streams.keys().collect::<Vec<_>>())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl StreamNode {
    /// A node with nothing deployed.
    pub fn new(cfg: NodeConfig) -> Self {
        Self {
            cfg,
            streams: BTreeMap::new(),
            reassemblers: BTreeMap::new(),
            held: VecDeque::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            base_ns: 0,
            next_id: 1,
        }
    }

    /// Its config.
    pub fn config(&self) -> &NodeConfig {
        &self.cfg
    }

    /// Its counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// What the node forwarding one packet costs by itself, ns (measured by the caller):
    /// the allowance for handlers is what is left of the budget's share.
    pub fn set_base_cost(&mut self, ns: u64) {
        self.base_ns = ns;
    }

    /// The handlers' allowance per packet, ns (`None`: no admission).
    pub fn allowance_ns(&self) -> Option<u64> {
        self.cfg.admission.map(|a| a.allowance_ns(self.base_ns))
    }

    /// Whether `stream` is deployed here (on this node or its host).
    pub fn deploys(&self, stream: u16) -> bool {
        self.streams.contains_key(&stream)
    }

    /// The deployed streams.
    pub fn streams(&self) -> impl Iterator<Item = StreamInfo> + '_ {
        self.streams.iter().map(|(&stream, s)| StreamInfo {
            stream,
            placement: s.placement,
            mode: s.mode,
            cost_ns: s.cost.ns_per_packet,
            samples: s.cost.samples,
            spec: alloc::string::ToString::to_string(&s.spec),
        })
    }

    /// The next datagram to send.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// The next event to log.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Drops what waited too long: partial messages and held fragments older than the
    /// reassembly timeout.
    pub fn handle_timeout(&mut self, now: sansio::Instant) {
        let limit = self.cfg.reassembly.timeout;
        let before = self.held.len();
        self.held
            .retain(|h| now.micros().saturating_sub(h.0) <= limit);
        self.stats.held_dropped += (before - self.held.len()) as u64;
        for r in self.reassemblers.values_mut() {
            r.expire(now);
        }
    }
}
