//! # waist-router — the router node as a daemon
//!
//! One task owns a [`waist_node::Node`] and `select!`s over its links (netio: IP-in-UDP and
//! TUN), the node's next deadline, the links' emulation deadlines and shutdown. The daemon
//! contains no protocol logic: every per-packet decision is the node's, the code the
//! simulator runs too.
//!
//! ```text
//!  links.recv / try_recv_batch (recvmmsg+GRO, TUN offload split; one batch per link per turn)
//!     ─► Node::handle_packets(now, [(iface, frame)]) ─► in place: links.send(iface, frame[range])
//!                                    └► poll_transmit ─► links.send   (copies, ICMP, routing, SNAP)
//!     ─► links.flush(): GSO runs, sendmmsg, coalesced TUN writes
//!  sleep_until(min(node.poll_timeout, links.next_due)) ─► Node::handle_timeout / links.send_due
//! ```
//!
//! Every receive is batched, and a turn takes one batch from each ready link before it
//! looks again, up to [`ROUND`] frames before the timers get their turn: a flooded link
//! cannot starve the others. Each datagram a link counts reaches the node or is dropped
//! at the link with a reason (`waist_link_rx_dropped`).
//!
//! Time at the node is microseconds since the daemon started. The config is described in
//! [`config`]; [`Router::run`] is the loop. On SIGHUP the config is re-read and applied
//! without a restart ([`reload`]).

pub mod config;
pub mod daemon;
pub mod embed;
pub mod events;
mod metrics;
pub mod microcode;
pub mod reload;
pub mod status;
pub mod streams;

use std::future::Future;
use std::time::{Duration, Instant as StdInstant};

use netio::clock::Clock;

use netio::link::{Batch, Links};
use netio::metrics::ScrapeRequests;
use std::io;
use tracing::{debug, info};
use waist_node::{Delivery, Instant, MAX_FRAME, Node, Stats};

use crate::config::Plan;

/// Frames taken from the links in one turn before timers are looked at again.
pub const ROUND: usize = 2048;

/// The stream handlers' meter: monotonic nanoseconds since `origin` (the router's clock's,
/// fixed: reading it costs no clock call).
fn meter(origin: StdInstant) -> impl FnMut() -> u64 {
    move || u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Batches over which the forwarding cost per frame is measured (the least counts).
pub const BASE_WINDOW: u32 = 64;

/// The one link every frame of a run of `len` bytes (frames of `stride`, the last maybe
/// shorter) leaves by whole, if there is one: then the run can go on as it came.
fn whole_to(answers: &[Option<waist_node::InPlace>], len: usize, stride: usize) -> Option<usize> {
    let first = answers.first()?.as_ref()?.iface;
    let mut at = 0;
    for a in answers {
        let a = a.as_ref()?;
        let this = stride.min(len.saturating_sub(at));
        if a.iface != first || a.range != (0..this) {
            return None;
        }
        at += this;
    }
    (at == len).then_some(first)
}

/// What the daemon did, reported when it stops.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The node's counters.
    pub node: Stats,
    /// Per link: name and counters.
    pub links: Vec<(String, netio::link::LinkCounters)>,
    /// Packets for the router itself that no one took (it runs no applications).
    pub unclaimed: u64,
}

/// The router: its node and links, built from a plan.
#[derive(Debug)]
pub struct Router {
    name: String,
    node: Node,
    links: Links,
    /// The one clock the router reads.
    clock: Clock,
    unclaimed: u64,
    /// The node's answers for the frames of the batch in hand (reused).
    answers: Vec<Option<waist_node::InPlace>>,
    /// What the log remembers of links and neighbours ([`events`]).
    log: events::LinkLog,
    /// Where a reload re-reads the config from ([`Router::reload_from`]).
    reload: Option<reload::Reload>,
    /// Forwarding's own cost per frame, ns: the least per-frame cost of a batch in the
    /// last window of batches (the stream handlers' headroom is what it leaves of the
    /// budget), and the window's least so far with its batch count.
    base_ns: u64,
    base_window: (u64, u32),
}

impl Router {
    /// Opens the links and builds the node.
    ///
    /// # Errors
    ///
    /// A located config error, or an I/O error naming the link.
    pub async fn open(plan: &Plan, source: &netio::config::Source) -> anyhow::Result<Router> {
        let clock = Clock::monotonic();
        let links = Links::open(&plan.links, source, clock.origin()).await?;
        let mut node = Node::new(plan.node.clone(), Instant::ZERO)
            .map_err(|e| anyhow::anyhow!("{}: {e}", source.file().display()))?;
        if let Some(e) = &plan.node.esp {
            microcode::log_installed(&plan.name, &e.microcode.installed, "installed");
        }
        // The config's streams are admitted now, timed like every handler run.
        if node.streams().is_some() {
            node.run_streams(Instant::ZERO, &mut meter(clock.origin()));
        }
        Ok(Router {
            log: events::LinkLog::new(links.len()),
            name: plan.name.clone(),
            node,
            links,
            clock,
            unclaimed: 0,
            answers: Vec::new(),
            reload: None,
            base_ns: 0,
            base_window: (u64::MAX, 0),
        })
    }

    /// The node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The links.
    pub fn links(&self) -> &Links {
        &self.links
    }

    /// The time now, read once: as the links count it and as the node does.
    fn now(&self) -> (StdInstant, Instant) {
        self.clock.read()
    }

    /// The next instant something is due: the node's timer, an emulated frame or the end
    /// of a down link's hold-down.
    fn deadline(&self) -> Option<StdInstant> {
        let node = self.node.poll_timeout().map(|t| self.clock.deadline(t));
        let log = self.log.next_due().map(|t| self.clock.deadline(t));
        [node, self.links.next_due(), self.links.next_retry(), log]
            .into_iter()
            .flatten()
            .min()
    }

    /// Tells the node about links that went down or came up (logged on change only).
    #[cold]
    fn link_events(&mut self) {
        while let Some(e) = self.links.poll_event() {
            let (_, now) = self.now();
            self.node.set_link(now, e.iface, e.up);
            self.log_link(now, e);
        }
    }

    /// A batch of frames from link `iface` in (one `recvmmsg` or TUN read): the node warms
    /// their ESP lookups together, then decides each in order; then the frames that go on
    /// in place are sent: a GRO run every datagram of which leaves whole by one link goes
    /// out as the run it came in as, from the receive buffer ([`Links::send_run`]), the
    /// others are queued one by one; what the node made waits until after the batch; then
    /// every queue is flushed.
    fn batch(&mut self, iface: usize, batch: &mut Batch, out: &mut [u8]) {
        let (wall, now) = self.now();
        let mut answers = std::mem::take(&mut self.answers);
        answers.clear();
        let taken = batch.last().datagrams;
        {
            // The same frames as `Batch::frames`, cut from each run by its stride (cheaper).
            let mut frames: Vec<(usize, &mut [u8])> = Vec::with_capacity(batch.last().datagrams);
            for (_, stride, region) in batch.runs_mut() {
                frames.extend(region.chunks_mut(stride.max(1)).map(|f| (iface, f)));
            }
            self.node
                .handle_packets(now, &mut frames, |_, sent, _| answers.push(sent));
        }
        if self.node.streams().is_some() {
            self.measure_base(wall, taken);
        }
        let mut k = 0;
        for (_, stride, region) in batch.runs_mut() {
            let n = region.len().div_ceil(stride.max(1));
            let these = answers.get(k..k + n).unwrap_or_default();
            k += n;
            match whole_to(these, region.len(), stride) {
                Some(o) if n > 1 => self.links.send_run(o, region, stride, wall),
                _ => {
                    for (t, frame) in these.iter().zip(region.chunks(stride.max(1))) {
                        if let Some(t) = t
                            && let Some(bytes) = frame.get(t.range.clone())
                        {
                            self.links.send(t.iface, bytes, wall);
                        }
                    }
                }
            }
        }
        self.answers = answers;
        self.drain(out, wall);
    }

    /// The rest of a turn after the batch that woke the task: one more batch from each
    /// link that has one, pass after pass, until a pass finds nothing or `taken` reaches
    /// [`ROUND`]; whether it did.
    fn turn(&mut self, mut taken: usize, batch: &mut Batch, out: &mut [u8]) -> bool {
        while taken < ROUND {
            let mut any = false;
            for i in 0..self.links.len() {
                match self.links.try_recv_batch(i, batch) {
                    Ok(f) => {
                        any = true;
                        taken += f.datagrams;
                        self.batch(i, batch, out);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // Counted at the link; a refusal may have taken it down.
                    Err(_) => self.drain(out, self.now().0),
                }
                if taken >= ROUND {
                    return true;
                }
            }
            if !any {
                return false;
            }
        }
        true
    }

    /// Forwarding's cost per frame from a batch of `frames` begun at `began`. The base
    /// cost handed to the stream node is the least per-frame cost of the last
    /// [`BASE_WINDOW`] batches: what forwarding costs when nothing else (a cold cache, a
    /// page fault, a preempted thread) is in the way. Until a window is complete it is 0.
    fn measure_base(&mut self, began: StdInstant, frames: usize) {
        let per =
            u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX) / frames.max(1) as u64;
        let (least, n) = self.base_window;
        self.base_window = (least.min(per), n + 1);
        if n + 1 >= BASE_WINDOW {
            self.base_ns = self.base_window.0;
            self.base_window = (u64::MAX, 0);
            if let Some(s) = self.node.streams_mut() {
                s.set_base_cost(self.base_ns);
            }
        }
    }

    /// Passes on link changes; runs the stream handlers on what arrived for them (timed
    /// with the monotonic clock); sends what the node queued (and flushes every link's
    /// queue); takes what it delivered.
    fn drain(&mut self, out: &mut [u8], wall: StdInstant) {
        if self.links.has_events() {
            self.link_events();
        }
        if self.node.streams().is_some() {
            let now = self.clock.at(wall);
            self.node.run_streams(now, &mut meter(self.clock.origin()));
            self.log_stream_events();
        }
        while let Some(t) = self.node.poll_transmit(out) {
            if let Some(bytes) = out.get(..t.len) {
                self.links.send(t.iface, bytes, wall);
            }
        }
        self.links.flush();
        if self.links.has_events() {
            self.link_events();
        }
        self.log_events(self.clock.at(wall));
        while let Some(d) = self.node.poll_deliver() {
            self.unclaimed += 1;
            match d {
                Delivery::Packet { iface, packet } => {
                    debug!(iface, len = packet.len(), "packet for the router itself");
                }
                Delivery::Snap(d) => debug!(port = d.port, "SNAP delivery to a local port"),
            }
        }
    }

    /// Captures every link's frames into `DIR/NAME-LINK.pcap` (flushed every second and at
    /// shutdown): unbounded for `None`, else at most the ring's bytes per link
    /// ([`netio::pcap::Ring`]).
    ///
    /// # Errors
    ///
    /// A capture file that cannot be created.
    pub fn capture(
        &mut self,
        dir: &std::path::Path,
        ring: Option<netio::pcap::Ring>,
    ) -> anyhow::Result<()> {
        self.links.capture_with(dir, &self.name, ring)
    }

    /// Runs until `shutdown` completes, answering scrapes from `scrapes` (the metrics
    /// endpoint), then flushes captures and reports.
    ///
    /// # Errors
    ///
    /// Only if the runtime fails; link errors are counted, not fatal.
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()>,
        mut scrapes: Option<ScrapeRequests>,
    ) -> anyhow::Result<Summary> {
        let mut out = vec![0u8; MAX_FRAME];
        let mut batch = Batch::new();
        info!(router = %self.name, links = self.links.len(), "running");
        self.log_stream_events();
        tokio::pin!(shutdown);
        let mut flush = tokio::time::interval(Duration::from_secs(1));
        loop {
            let deadline = self.deadline();
            let sleep = async move {
                match deadline {
                    Some(t) => tokio::time::sleep_until(tokio::time::Instant::from_std(t)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                // Before the links: a flood must not hold up a scrape or the captures.
                Some(r) = async {
                    match &mut scrapes {
                        Some(s) => s.next().await,
                        None => std::future::pending().await,
                    }
                } => metrics::answer(r, &self),
                () = reload::requested(&mut self.reload) => self.reload(&mut out).await,
                _ = flush.tick() => self.links.flush_captures(),
                iface = self.links.recv(&mut batch) => {
                    self.batch(iface, &mut batch, &mut out);
                    if self.turn(batch.last().datagrams, &mut batch, &mut out) {
                        // A full turn: let the reactor refresh every link's readiness
                        // (the next turn then sees the others' arrivals) and the timers
                        // and the metrics task run, before the next one.
                        tokio::task::yield_now().await;
                    }
                }
                () = sleep => {}
            }
            // Timers only when due: not once per batch of frames.
            let (wall, now) = self.now();
            if self.deadline().is_some_and(|d| d <= wall) {
                self.node.handle_timeout(now);
                self.links.send_due(wall);
                self.links.retry_due(wall);
                self.drain(&mut out, wall);
            }
        }
        self.links.flush_captures();
        for (path, packets) in self.links.captures() {
            info!(path = %path.display(), packets, "capture closed");
        }
        let summary = self.summary();
        info!(router = %self.name, "{} stopped: {summary}", self.name);
        Ok(summary)
    }

    /// The router's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Packets for the router itself that no one took.
    pub fn unclaimed(&self) -> u64 {
        self.unclaimed
    }

    /// The counters now.
    pub fn summary(&self) -> Summary {
        Summary {
            node: self.node.stats(),
            links: self
                .links
                .iter()
                .map(|l| (l.name().to_string(), l.counters()))
                .collect(),
            unclaimed: self.unclaimed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::whole_to;
    use waist_node::InPlace;

    fn to(iface: usize, len: usize) -> Option<InPlace> {
        Some(InPlace {
            iface,
            range: 0..len,
        })
    }

    #[test]
    fn a_run_goes_on_whole_only_if_every_frame_does() {
        // 100 + 100 + 40 bytes.
        assert_eq!(
            whole_to(&[to(1, 100), to(1, 100), to(1, 40)], 240, 100),
            Some(1)
        );
        assert_eq!(
            whole_to(&[to(1, 100), to(2, 100), to(1, 40)], 240, 100),
            None
        );
        assert_eq!(whole_to(&[to(1, 100), None, to(1, 40)], 240, 100), None);
        // A label stripped (range not the whole frame), or the lengths disagree.
        let stripped = Some(InPlace {
            iface: 1,
            range: 5..100,
        });
        assert_eq!(whole_to(&[to(1, 100), stripped, to(1, 40)], 240, 100), None);
        assert_eq!(whole_to(&[to(1, 100), to(1, 100)], 240, 100), None);
        assert_eq!(whole_to(&[], 0, 100), None);
    }
}
