//! The event loop: a virtual clock, an event queue, nodes and links.

use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::{Ordering, Reverse};

use crate::Instant;
use crate::Rng;
use crate::link::{Direction, Link, LinkConfig, LinkStats};
use crate::node::{Node, Outbox};

/// Index of a node in a [`Simulator`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

/// Index of a link in a [`Simulator`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub usize);

#[derive(Debug)]
enum Kind {
    Deliver {
        node: usize,
        iface: usize,
        packet: Vec<u8>,
    },
    Timer {
        node: usize,
        generation: u64,
    },
}

#[derive(Debug)]
struct Event {
    at: Instant,
    seq: u64,
    kind: Kind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    /// Earliest first; ties in the order the events were scheduled, so runs repeat exactly.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Debug)]
struct Slot<N> {
    node: N,
    /// Interface `i` is the `.0`-th end of link `.1`.
    ifaces: Vec<(usize, usize)>,
    /// The deadline scheduled for the node and its generation (older timer events are
    /// ignored).
    timer: Option<Instant>,
    generation: u64,
}

/// A deterministic discrete-event network simulator.
///
/// It owns a virtual clock and a seeded [`Rng`]; nodes are any [`Node`]; links carry whole
/// packets between two interfaces with a delay, jitter (hence reordering), loss,
/// duplication and an MTU. Nothing depends on wall time or thread scheduling: the same seed
/// and the same calls give the same run, event for event.
///
/// ```
/// use netsim::{Instant, LinkConfig, Node, Outbox, Simulator};
///
/// /// Answers every packet on the interface it came in on.
/// struct Echo(usize);
/// impl Node for Echo {
///     fn handle_packet(&mut self, _: Instant, iface: usize, p: Vec<u8>, out: &mut Outbox) {
///         self.0 += 1;
///         if p[0] > 0 {
///             out.send(iface, vec![p[0] - 1]);
///         }
///     }
/// }
///
/// let mut sim = Simulator::new(42);
/// let (a, b) = (sim.add_node(Echo(0)), sim.add_node(Echo(0)));
/// sim.connect(a, b, LinkConfig::with_delay(5));
/// sim.act(a, |_, _, out| out.send(0, vec![3])); // 3 → b, 2 → a, 1 → b, 0 → a
/// sim.run(100);
/// assert_eq!(sim.now(), Instant::from_ticks(20));
/// assert_eq!((sim.node(a).0, sim.node(b).0), (2, 2));
/// ```
#[derive(Debug)]
pub struct Simulator<N> {
    now: Instant,
    seq: u64,
    rng: Rng,
    queue: BinaryHeap<Reverse<Event>>,
    nodes: Vec<Slot<N>>,
    links: Vec<Link>,
    misrouted: u64,
    events: u64,
}

impl<N: Node> Simulator<N> {
    /// An empty network at time zero, all randomness drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        Simulator {
            now: Instant::ZERO,
            seq: 0,
            rng: Rng::new(seed),
            queue: BinaryHeap::new(),
            nodes: Vec::new(),
            links: Vec::new(),
            misrouted: 0,
            events: 0,
        }
    }

    /// Adds `node` (with no interfaces yet).
    pub fn add_node(&mut self, node: N) -> NodeId {
        self.nodes.push(Slot {
            node,
            ifaces: Vec::new(),
            timer: None,
            generation: 0,
        });
        let id = self.nodes.len() - 1;
        self.reschedule(id);
        NodeId(id)
    }

    /// Connects `a` and `b` with a link; each gets a new interface, numbered in the order
    /// its links were connected (the first is 0).
    ///
    /// # Panics
    ///
    /// If `a` or `b` is not a node of this simulator (a caller bug).
    pub fn connect(&mut self, a: NodeId, b: NodeId, config: LinkConfig) -> LinkId {
        let id = self.links.len();
        let ia = self.nodes[a.0].ifaces.len();
        let ib = self.nodes[b.0].ifaces.len() + usize::from(a == b);
        self.nodes[a.0].ifaces.push((0, id));
        self.nodes[b.0].ifaces.push((1, id));
        self.links.push(Link {
            config,
            ends: [(a.0, ia), (b.0, ib)],
            stats: LinkStats::default(),
            up: true,
            dirs: [Direction::default(); 2],
        });
        LinkId(id)
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The node `id`.
    ///
    /// # Panics
    ///
    /// If `id` is not a node of this simulator.
    pub fn node(&self, id: NodeId) -> &N {
        &self.nodes[id.0].node
    }

    /// All nodes, in [`NodeId`] order.
    pub fn nodes(&self) -> impl Iterator<Item = &N> {
        self.nodes.iter().map(|s| &s.node)
    }

    /// How many nodes there are.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The link behind node `id`'s interface `iface`.
    pub fn iface_link(&self, id: NodeId, iface: usize) -> Option<LinkId> {
        self.nodes
            .get(id.0)?
            .ifaces
            .get(iface)
            .map(|&(_, l)| LinkId(l))
    }

    /// How link `id` is configured (the default config if there is no such link).
    pub fn link_config(&self, id: LinkId) -> LinkConfig {
        self.links
            .get(id.0)
            .map_or_else(LinkConfig::default, |l| l.config)
    }

    /// Reconfigures link `id` (delay, loss, …) for packets offered from now on. Ignored for
    /// a link that does not exist.
    pub fn set_link_config(&mut self, id: LinkId, config: LinkConfig) {
        if let Some(l) = self.links.get_mut(id.0) {
            l.config = config;
        }
    }

    /// Links so far.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// Mutable access to node `id` (panics on an id this simulator did not hand out, like
    /// [`node`](Self::node)).
    pub fn node_mut(&mut self, id: NodeId) -> &mut N {
        &mut self.nodes[id.0].node
    }

    /// Whether link `id` is up.
    pub fn link_up(&self, id: LinkId) -> bool {
        self.links.get(id.0).is_some_and(|l| l.up)
    }

    /// How many interfaces node `id` has.
    pub fn iface_count(&self, id: NodeId) -> usize {
        self.nodes.get(id.0).map_or(0, |s| s.ifaces.len())
    }

    /// The node and interface at the far end of `id`'s interface `iface`.
    pub fn peer(&self, id: NodeId, iface: usize) -> Option<(NodeId, usize)> {
        let &(end, link) = self.nodes.get(id.0)?.ifaces.get(iface)?;
        let (n, i) = self.links.get(link)?.ends[1 - end];
        Some((NodeId(n), i))
    }

    /// What link `id` has done so far.
    pub fn link_stats(&self, id: LinkId) -> LinkStats {
        self.links
            .get(id.0)
            .map_or_else(LinkStats::default, |l| l.stats)
    }

    /// Takes link `id` down (every packet offered is lost) or brings it back up.
    pub fn set_link_up(&mut self, id: LinkId, up: bool) {
        if let Some(l) = self.links.get_mut(id.0) {
            l.up = up;
        }
    }

    /// Packets nodes sent on interfaces they do not have.
    pub fn misrouted(&self) -> u64 {
        self.misrouted
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Lets a test or driver act as node `id` at the current time: `f` gets the node, the
    /// time and an outbox, whose packets are then sent. The node's timer is polled again.
    ///
    /// # Panics
    ///
    /// If `id` is not a node of this simulator.
    pub fn act<R>(&mut self, id: NodeId, f: impl FnOnce(&mut N, Instant, &mut Outbox) -> R) -> R {
        let mut out = Outbox::default();
        let r = f(&mut self.nodes[id.0].node, self.now, &mut out);
        self.flush(id.0, out);
        r
    }

    /// Schedules `packet` to arrive at node `id` on interface `iface` at time `at` (or now,
    /// if `at` has passed), as if a link had carried it.
    pub fn inject(&mut self, id: NodeId, iface: usize, packet: Vec<u8>, at: Instant) {
        let at = at.max(self.now);
        self.push(
            at,
            Kind::Deliver {
                node: id.0,
                iface,
                packet,
            },
        );
    }

    /// Processes the next event, advancing the clock to it. Returns its time, or `None` if
    /// nothing is scheduled.
    pub fn step(&mut self) -> Option<Instant> {
        let Reverse(event) = self.queue.pop()?;
        self.now = self.now.max(event.at);
        self.events += 1;
        let mut out = Outbox::default();
        let node = match event.kind {
            Kind::Deliver {
                node,
                iface,
                packet,
            } => {
                let slot = self.nodes.get_mut(node)?;
                slot.node.handle_packet(self.now, iface, packet, &mut out);
                node
            }
            Kind::Timer { node, generation } => {
                let slot = self.nodes.get_mut(node)?;
                if slot.generation != generation {
                    return Some(self.now); // superseded
                }
                slot.timer = None;
                slot.node.handle_timeout(self.now, &mut out);
                node
            }
        };
        self.flush(node, out);
        Some(self.now)
    }

    /// Processes every event due at or before `t`, then sets the clock to `t`.
    pub fn run_until(&mut self, t: Instant) {
        while self.queue.peek().is_some_and(|Reverse(e)| e.at <= t) {
            self.step();
        }
        self.now = self.now.max(t);
    }

    /// Processes events until none is left or `max_events` have run; returns how many ran.
    pub fn run(&mut self, max_events: u64) -> u64 {
        let mut n = 0;
        while n < max_events && self.step().is_some() {
            n += 1;
        }
        n
    }

    fn push(&mut self, at: Instant, kind: Kind) {
        self.seq += 1;
        self.queue.push(Reverse(Event {
            at,
            seq: self.seq,
            kind,
        }));
    }

    /// Sends what node `from` put in `out`, then polls its timer.
    fn flush(&mut self, from: usize, out: Outbox) {
        for (iface, packet) in out.sends {
            self.transmit(from, iface, packet);
        }
        self.reschedule(from);
    }

    fn transmit(&mut self, from: usize, iface: usize, packet: Vec<u8>) {
        let Some(&(end, link)) = self.nodes.get(from).and_then(|s| s.ifaces.get(iface)) else {
            self.misrouted += 1;
            return;
        };
        let Some(l) = self.links.get_mut(link) else {
            return;
        };
        if !l.up {
            l.stats.sent += 1;
            l.stats.lost += 1;
            return;
        }
        let dir = 1 - end;
        let (to, to_iface) = l.ends[dir];
        let fate = l.dirs[dir].transmit(
            &l.config,
            self.now,
            packet.len(),
            &mut self.rng,
            &mut l.stats,
        );
        let mut packet = Some(packet);
        let arrivals: Vec<Instant> = fate.arrivals().collect();
        let n = arrivals.len();
        for (k, at) in arrivals.into_iter().enumerate() {
            let p = if k + 1 == n {
                packet.take().unwrap_or_default()
            } else {
                packet.clone().unwrap_or_default()
            };
            self.push(
                at,
                Kind::Deliver {
                    node: to,
                    iface: to_iface,
                    packet: p,
                },
            );
        }
    }

    fn reschedule(&mut self, id: usize) {
        let Some(slot) = self.nodes.get_mut(id) else {
            return;
        };
        let want = slot.node.poll_timeout().map(|t| t.max(self.now));
        if want == slot.timer {
            return;
        }
        slot.generation += 1;
        slot.timer = want;
        let generation = slot.generation;
        if let Some(at) = want {
            self.push(
                at,
                Kind::Timer {
                    node: id,
                    generation,
                },
            );
        }
    }
}
