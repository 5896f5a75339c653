//! Links: IP-in-UDP to one peer or to many, or a TUN device, polled together by one task;
//! the one link layer of every waist daemon and tool.
//!
//! ```text
//!            ┌─────────────── one receive per ready link per turn (round-robin) ─────────────┐
//!  kernel ─► recvmmsg + GRO / TUN read + offload split ─► Batch: frames ≤ MTU ─► the core
//!            counted: rx_frames = delivered + truncated + oversize + empty + offload
//!  the core ─► send / send_to ─► [emulation] ─► queue ─► flush: GSO runs (sendmsg) and
//!            sendmmsg of the rest / TUN writes coalesced ─► kernel
//! ```
//!
//! A daemon's core is one task: it awaits [`Links::recv`] (whichever link has frames,
//! round-robin so none starves: one batch per link per turn, at most [`BATCH`] slots), then
//! takes one more batch from each ready link with [`Links::try_recv_batch`] while its budget
//! for the turn lasts, hands [`Batch::frames`] to its core, queues what the core returns
//! with [`Links::send`] (or [`Links::send_to`]) and ends the turn with [`Links::flush`],
//! which sends the queues and never blocks: a full socket drops what does not fit and
//! counts it, as a router's output queue does. Emulated links hold frames until they are
//! due ([`Links::next_due`], [`Links::send_due`]).
//!
//! **Every datagram is counted once.** What the kernel hands over is counted at the link
//! ([`LinkCounters::rx_frames`]) and either reaches the core through [`Batch::frames`] or
//! is dropped with a named reason ([`LinkCounters::rx_drops`]).
//!
//! * **UDP to one peer** (`local` and `peer`): a socket bound to `local` and connected to
//!   `peer`, so only the peer's datagrams arrive; one frame per datagram
//!   (`waist_node::frame`). A peer whose port is closed makes the kernel refuse a send or a
//!   receive (ICMP port unreachable, at once on loopback): the refusal is counted
//!   (`refused`) and takes the link *down*; any datagram from the peer brings it *up*, and
//!   a down link is tried again after its hold-down (`holddown_ms`, default 1 s). Changes
//!   of state wait in [`Links::poll_event`], the hold-down's end in [`Links::next_retry`] /
//!   [`Links::retry_due`] (see [`liveness`]).
//! * **UDP to many peers** (`local` only): an unconnected socket, for servers and clients;
//!   [`Batch::datagrams`] gives each datagram's source, [`Links::send_to`] a destination.
//! * **TUN**: a device created (or opened) by name, given its addresses and MTU, with
//!   offload (virtio-net header, TSO/USO) unless `offload = false`; it carries plain IP
//!   packets to and from the host's kernel. Needs root. See [`open_tun_with`].
//!
//! Every receive is batched (no plain `recv` on a socket with GRO on: it would glue a
//! coalesced run into one frame). A link is written in a config as `kind` with
//! `local`/`peer` or `device`/`addresses`, or in the one notation every flag also takes,
//! [`LinkSpec`]: `udp:LOCAL=PEER`, `udp:LOCAL`, `tun:NAME[,CIDR…]`.
//!
//! A daemon that reloads its config changes its links while it runs: [`Links::take_all`],
//! keep, drop, open ([`Links::open_config`]) or re-emulate ([`Link::set_emulation`]) each,
//! then [`Links::set_all`] (see `swap.rs`).

mod batch;
mod counters;
pub mod liveness;
mod one;
pub mod spec;
mod split;
mod swap;
#[cfg(test)]
mod tests;
mod tun;
mod tx;

pub use batch::{BATCH, Batch, Fill};
pub use counters::LinkCounters;
pub use liveness::{Cause, LinkEvent};
pub use one::{Link, LinkOptions, SOCKET_BUFFER, address_assigned, local_ip_towards};
pub use spec::LinkSpec;
pub use split::{Split, split};
pub use swap::Carried;
pub use tun::{AsyncDevice, netns_unsupported, open_tun, open_tun_with, parse_cidr};
pub use tx::{MAX_RUN_BYTES, Run, runs};

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::config::{LinkConfig, Source};
use crate::emulate::Emulator;
use one::Io;

/// Bytes a received frame may exceed the link's MTU by: room for a waist shim (a threaded
/// label, 5 bytes) in front of an MTU-sized packet. Longer frames are dropped as `oversize`.
pub const SHIM_ROOM: usize = 64;

/// Checks every link of `configs` as [`Links::open`] would before it binds anything (it
/// calls this): names and local addresses used once, a TUN device named 1 to 15
/// characters and once, the MTU, the hold-down, the notation, the emulation's parameters.
/// Returns each link's name, where it goes and its options, in order. A daemon's
/// `--check` calls it too, so it finds every error a start would (short of the kernel's:
/// an address in use, no permission for TUN).
///
/// # Errors
///
/// A [`ConfigError`](crate::config::ConfigError) located at the offending value.
pub fn check(
    configs: &[LinkConfig],
    source: &Source,
) -> Result<Vec<(String, LinkSpec, LinkOptions)>, crate::config::ConfigError> {
    let mut out: Vec<(String, LinkSpec, LinkOptions)> = Vec::with_capacity(configs.len());
    for c in configs {
        let name = c.name.get_ref().clone();
        if out.iter().any(|(n, _, _)| *n == name) {
            return Err(source.error_for(&c.name, format!("a second link named `{name}`")));
        }
        let (spec, options) = Links::options_of(c, source)?;
        // Where the notation's value was written, for errors about the whole of it.
        let at = c.on.as_ref().or(c.local.as_ref()).or(c.device.as_ref());
        let at = at.unwrap_or(&c.name);
        let clash = out.iter().find(|(_, s, _)| match (s, &spec) {
            (LinkSpec::Udp { local: a, .. }, LinkSpec::Udp { local: b, .. }) => {
                a == b && a.port() != 0
            }
            (LinkSpec::Tun { device: a, .. }, LinkSpec::Tun { device: b, .. }) => a == b,
            _ => false,
        });
        if let Some((other, _, _)) = clash {
            return Err(source.error_for(at, format!("link `{other}` is there already")));
        }
        out.push((name, spec, options));
    }
    Ok(out)
}

impl Links {
    /// Checks link section `c` (read from `source`) alone, without opening anything: where
    /// it goes and how, as [`Links::open`] would open it ([`check`] adds the checks across
    /// links).
    ///
    /// # Errors
    ///
    /// A located [`ConfigError`](crate::config::ConfigError): a bad spec, an MTU out of
    /// 68..=65535, a hold-down on a TUN link, a TUN device name not 1 to 15 characters, a
    /// bad emulation parameter.
    pub fn options_of(
        c: &LinkConfig,
        source: &Source,
    ) -> Result<(LinkSpec, LinkOptions), crate::config::ConfigError> {
        let mtu = c.mtu.as_ref().map_or(1500, |m| *m.get_ref());
        if let Some(m) = &c.mtu
            && !(68..=65_535).contains(&mtu)
        {
            return Err(source.error_for(m, "MTU must be 68..=65535"));
        }
        let holddown = match &c.holddown_ms {
            Some(h) if c.is_tun() => {
                return Err(source.error_for(h, "a tun link is always up: no hold-down"));
            }
            Some(h) => std::time::Duration::from_millis(*h.get_ref()),
            None => liveness::DEFAULT_HOLDDOWN,
        };
        let spec = c.spec(source)?;
        if let LinkSpec::Tun { device, .. } = &spec
            && (device.is_empty() || device.len() > 15)
        {
            let at = c.on.as_ref().or(c.device.as_ref()).unwrap_or(&c.name);
            return Err(source.error_for(at, "a TUN device name has 1 to 15 characters"));
        }
        let emulation = match &c.emulation {
            Some(e) => Some((source.emulation(e, mtu)?, e.get_ref().seed.unwrap_or(1))),
            None => None,
        };
        let options = LinkOptions {
            mtu,
            cost: c.cost.as_ref().map(|c| *c.get_ref()),
            holddown,
            offload: c.offload.as_ref().is_none_or(|o| *o.get_ref()),
            buffer: SOCKET_BUFFER,
            emulation,
        };
        Ok((spec, options))
    }
}

/// The links of a daemon. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Links {
    links: Vec<Link>,
    next: usize,
    events: VecDeque<LinkEvent>,
    /// Where captures go and their names' prefix, once [`Links::capture`] was called.
    capturing: Option<(std::path::PathBuf, String, Option<crate::pcap::Ring>)>,
}

impl Links {
    /// Opens every link of `configs` (binding sockets, creating TUN devices), numbering
    /// them in order: link `i` is the core's interface `i`. Emulated links count time from
    /// `origin`.
    ///
    /// # Errors
    ///
    /// A located [`ConfigError`](crate::config::ConfigError) for a bad or missing field; an I/O error (address in use,
    /// no permission for TUN) names the link.
    pub async fn open(
        configs: &[LinkConfig],
        source: &Source,
        origin: Instant,
    ) -> anyhow::Result<Links> {
        let mut links = Vec::with_capacity(configs.len());
        for (name, spec, options) in check(configs, source)? {
            links.push(Link::open(name, &spec, &options, origin).await?);
        }
        Ok(Links {
            links,
            next: 0,
            events: VecDeque::new(),
            capturing: None,
        })
    }

    /// No links yet (add them with [`add`](Links::add)).
    pub fn new() -> Links {
        Links {
            links: Vec::new(),
            next: 0,
            events: VecDeque::new(),
            capturing: None,
        }
    }

    /// Opens one more link, `name` to `spec`, as interface [`len`](Links::len); emulated
    /// time counts from `origin`. What a daemon whose links come from flags (not a
    /// `[[link]]` section) calls.
    ///
    /// # Errors
    ///
    /// A second link of that name, an MTU out of 68..=65535, an address that cannot be
    /// bound, a TUN device that cannot be made: each names the link.
    pub async fn add(
        &mut self,
        name: &str,
        spec: &LinkSpec,
        options: &LinkOptions,
        origin: Instant,
    ) -> anyhow::Result<usize> {
        if self.index_of(name).is_some() {
            anyhow::bail!("a second link named `{name}`");
        }
        if !(68..=65_535).contains(&options.mtu) {
            anyhow::bail!("link `{name}`: MTU {} not in 68..=65535", options.mtu);
        }
        let link = Link::open(name.to_string(), spec, options, origin).await?;
        self.links.push(link);
        Ok(self.links.len() - 1)
    }

    /// The links, by interface number.
    pub fn iter(&self) -> impl Iterator<Item = &Link> {
        self.links.iter()
    }

    /// Link `iface`.
    pub fn get(&self, iface: usize) -> Option<&Link> {
        self.links.get(iface)
    }

    /// How many links.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The interface of the link named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }

    /// Polls every link once, starting after the one that last delivered, and reads one
    /// batch from the first that has something: `Ready(iface)` with [`Batch::frames`] holding
    /// what it delivered (possibly nothing: a receive error or only drops, each counted;
    /// after a refusal, see [`poll_event`](Links::poll_event)).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>, batch: &mut Batch) -> Poll<usize> {
        let n = self.links.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let Some(link) = self.links.get_mut(i) else {
                continue;
            };
            if let Poll::Ready(r) = link.poll_batch(cx, batch) {
                self.next = (i + 1) % n;
                if link.took(&r, batch) {
                    self.changed(i);
                }
                if r.is_err() {
                    batch.clear();
                }
                return Poll::Ready(i);
            }
        }
        Poll::Pending
    }

    /// Waits for the next batch from any link (see [`poll_recv`](Links::poll_recv)): the
    /// interface it came from, its frames in `batch`.
    pub async fn recv(&mut self, batch: &mut Batch) -> usize {
        if self.links.is_empty() {
            return std::future::pending().await;
        }
        poll_fn(|cx| self.poll_recv(cx, batch)).await
    }

    /// Receives one batch from link `iface` if anything waits (recvmmsg with GRO, or a TUN
    /// read split by its offload): what the kernel handed over and what was dropped; the
    /// frames are in [`Batch::frames`]. Call it for each link in turn to drain a busy
    /// moment fairly: one batch per link per turn. It goes by tokio's readiness (an idle
    /// link costs no system call), which the reactor refreshes only when the task yields:
    /// after a long turn, yield to the runtime (`tokio::task::yield_now`), so the other
    /// links' arrivals, timers and other tasks are seen.
    ///
    /// # Errors
    ///
    /// The link's error; `WouldBlock` when nothing waits; `NotFound` for no such link.
    pub fn try_recv_batch(&mut self, iface: usize, batch: &mut Batch) -> io::Result<Fill> {
        batch.clear();
        let link = self
            .links
            .get_mut(iface)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let r = link.read_batch(batch);
        if link.took(&r, batch) {
            self.changed(iface);
        }
        if r.is_err() {
            batch.clear();
        }
        r
    }

    /// Queues `frame` for link `iface`'s peer (a TUN link: the kernel) at `now`, through
    /// its emulation if it has one. Nothing is sent before [`flush`](Links::flush) (or a
    /// queue grown past its bound).
    #[inline]
    pub fn send(&mut self, iface: usize, frame: &[u8], now: Instant) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        if link.queue(None, frame, now) {
            self.changed(iface);
        }
    }

    /// Sends `region` on link `iface` to its peer as the run of datagrams it holds (all
    /// `stride` bytes long but the last): a GRO run received, rewritten in place and
    /// forwarded unchanged in length leaves as the run it came in as, without a copy. What
    /// the link had queued goes first (order is kept). A TUN or emulated link, or a region
    /// the socket cannot send as one run, takes the datagrams one by one through
    /// [`send`](Links::send).
    pub fn send_run(&mut self, iface: usize, region: &[u8], stride: usize, now: Instant) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        let stride = stride.max(1);
        let direct = matches!(link.io, Io::Udp { peer: Some(_), .. })
            && link.emulator.is_none()
            && region.len() > stride
            && region.len() <= MAX_RUN_BYTES
            && region.len().div_ceil(stride) <= link.max_segments();
        let mut changed = false;
        if direct {
            changed |= link.flush();
            changed |= link.send_direct(region, stride);
        } else {
            for d in region.chunks(stride) {
                changed |= link.queue(None, d, now);
            }
        }
        if changed {
            self.changed(iface);
        }
    }

    /// Queues `frame` for `dest` on UDP link `iface` (a link to many peers), as
    /// [`send`](Links::send) does.
    pub fn send_to(&mut self, iface: usize, dest: SocketAddr, frame: &[u8], now: Instant) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        if link.queue(Some(dest), frame, now) {
            self.changed(iface);
        }
    }

    /// [`send_to`](Links::send_to) of the frame made of `parts` (for example an IP header
    /// and the segment after it), gathered into the send queue without joining them
    /// first; `dest` `None` is the link's peer, as [`send`](Links::send).
    pub fn send_parts(
        &mut self,
        iface: usize,
        dest: Option<SocketAddr>,
        parts: &[&[u8]],
        now: Instant,
    ) {
        let Some(link) = self.links.get_mut(iface) else {
            return;
        };
        if link.queue_parts(dest, parts, now) {
            self.changed(iface);
        }
    }

    /// Sends every link's queue: GSO runs and `sendmmsg` on UDP, coalesced writes on TUN.
    /// Call at the end of each turn (after a batch and its core's output). Never blocks.
    pub fn flush(&mut self) {
        for i in 0..self.links.len() {
            if self.links.get_mut(i).is_some_and(Link::flush) {
                self.changed(i);
            }
        }
    }

    /// Queues the event of link `iface`'s new state after a refusal (down) or a datagram
    /// from the peer (up).
    #[cold]
    fn changed(&mut self, iface: usize) {
        if let Some(l) = self.links.get(iface) {
            let up = l.is_up();
            let cause = if up { Cause::Heard } else { Cause::Refused };
            self.events.push_back(LinkEvent { iface, up, cause });
        }
    }

    /// The next change of a link's state, oldest first: a link went down (its peer
    /// refused) or came up (its peer was heard, or its hold-down ended). Call after
    /// receiving, sending and [`retry_due`](Links::retry_due); each change is reported once.
    #[inline]
    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    /// Whether a change waits in [`poll_event`](Links::poll_event).
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// When a down link's hold-down next ends.
    pub fn next_retry(&self) -> Option<Instant> {
        self.links.iter().filter_map(|l| l.live.retry_at()).min()
    }

    /// Brings up every down link whose hold-down is over at `now` (each reported by
    /// [`poll_event`](Links::poll_event)), so traffic tries its peer again.
    pub fn retry_due(&mut self, now: Instant) {
        for i in 0..self.links.len() {
            if self.links.get_mut(i).is_some_and(|l| l.live.retry_due(now)) {
                self.events.push_back(LinkEvent {
                    iface: i,
                    up: true,
                    cause: Cause::Retry,
                });
            }
        }
    }

    /// When an emulated link next has a frame due.
    pub fn next_due(&self) -> Option<Instant> {
        self.links
            .iter()
            .filter_map(|l| l.emulator.as_ref().and_then(Emulator::next_due))
            .min()
    }

    /// Captures every link's frames, both ways, exactly as on the wire, into
    /// `DIR/PREFIX-LINK.pcap` (LINKTYPE_RAW: plain IP packets; the waist shims 0xF1/0xF2
    /// show as non-IP until a dissector knows them), unbounded.
    ///
    /// # Errors
    ///
    /// A file that cannot be created.
    pub fn capture(&mut self, dir: &std::path::Path, prefix: &str) -> anyhow::Result<()> {
        self.capture_with(dir, prefix, None)
    }

    /// [`Links::capture`], each link's capture a [`Ring`](crate::pcap::Ring) if one is
    /// given (at most its bytes per link, in `DIR/PREFIX-LINK.pcap` and `….pcap.1` …).
    ///
    /// # Errors
    ///
    /// A file that cannot be created.
    pub fn capture_with(
        &mut self,
        dir: &std::path::Path,
        prefix: &str,
        ring: Option<crate::pcap::Ring>,
    ) -> anyhow::Result<()> {
        self.capturing = Some((dir.to_path_buf(), prefix.to_string(), ring));
        for link in &mut self.links {
            let path = dir.join(format!("{prefix}-{}.pcap", link.name));
            link.pcap = Some(crate::pcap::PcapWriter::create_with(&path, ring)?);
        }
        Ok(())
    }

    /// Flushes every capture (call once a second and at shutdown).
    pub fn flush_captures(&mut self) {
        for link in &mut self.links {
            if let Some(p) = &mut link.pcap
                && let Err(e) = p.flush()
            {
                tracing::warn!(link = %link.name, "pcap flush failed: {e}");
            }
        }
    }

    /// The capture files, with the packets each holds.
    pub fn captures(&self) -> impl Iterator<Item = (&std::path::Path, u64)> {
        self.links
            .iter()
            .filter_map(|l| l.pcap.as_ref().map(|p| (p.path(), p.packets())))
    }

    /// Queues every emulated frame due at `now` and flushes.
    pub fn send_due(&mut self, now: Instant) {
        for i in 0..self.links.len() {
            let Some(link) = self.links.get_mut(i) else {
                continue;
            };
            let mut changed = false;
            while let Some(f) = link.emulator.as_mut().and_then(|e| e.pop_due(now)) {
                changed |= link.enqueue(None, &f);
            }
            changed |= link.flush();
            if changed {
                self.changed(i);
            }
        }
    }
}
