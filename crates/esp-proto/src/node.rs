//! An ESP-capable router's processing (paper §2.2, §2.5): one store context per input port,
//! one per output port, and a central one.
//!
//! A router calls [`EspNode::ingress`] when a packet arrives (input port, then central
//! context) and [`EspNode::egress`] for each copy it sends (output port). The packet's Loc
//! bits select which contexts run its instruction; its CID selects the shard of each
//! context, so packets of one computation always meet the same store. Packets without an
//! ESP instruction, and packets whose IP framing is malformed, are not ESP's business: they
//! are passed back untouched for ordinary forwarding (and counted).
//!
//! An instruction carried in IPv4 option 158 lies inside the IPv4 header, which the header
//! checksum covers (RFC 791): when processing rewrites its bytes (operands, Loc, Err and its
//! code), [`EspNode::process_at`] updates the header checksum incrementally over exactly the
//! bytes that changed (RFC 1624, `waist_ip::rewrite::note_rewrite`), so a packet that left
//! its sender with a good checksum leaves every ESP router with one too.
//!
//! Expired bindings are reclaimed lazily by the stores and in sweeps: a caller that wants
//! sweeps on a schedule calls [`EspNode::schedule_sweeps`], then
//! [`EspNode::handle_timeout`] whenever [`EspNode::poll_timeout`] comes due.

use alloc::vec::Vec;

use ess::{DefaultTables, Ess, EssConfig, HashKey, Instant, ShardedEss};

use crate::exec::{Context, Env, Extension, NoExtension, Processed, Verdict, process_with};
use crate::instr::Instruction;
use crate::wire::{Form, Header, Loc, Located, locate, locate_in};

/// Where the instruction of the commonest ESP packet sits, found without walking the
/// packet as [`locate`] does: a dedicated IPv4 packet with no options, not a later
/// fragment. `None` for anything else. A warming hint only: [`EspNode::warm`] falls back
/// to [`locate`], and processing always locates for itself.
fn dedicated_v4(packet: &[u8]) -> Option<core::ops::Range<usize>> {
    let head = packet.get(..24)?;
    let fragment = u16::from_be_bytes([head[6], head[7]]) & 0x1FFF;
    if head[0] != 0x45 || head[9] != crate::consts::IP_PROTOCOL || fragment != 0 {
        return None;
    }
    Some(20..20 + crate::consts::HEADER_LEN + usize::from(head[23]))
}

/// How to build an [`EspNode`].
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// Interfaces (ports) the router has.
    pub ifaces: usize,
    /// Each shard's store.
    pub store: EssConfig,
    /// Shards per context (at least 1): parallel stores a port card may run.
    pub shards: u32,
    /// The node's id, the [`Param::NodeId`](crate::instr::Param::NodeId) operand (by
    /// convention its IPv4 address, zero-extended).
    pub node_id: u64,
    /// The node's secret for IDmaps.
    pub idmap_key: HashKey,
    /// Right shift from store ticks to the coarse timestamp operand.
    pub timestamp_shift: u32,
}

/// Where in the router an instruction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Site {
    /// The input port card of an interface.
    Input(usize),
    /// The central facility.
    Central,
    /// The output port card of an interface.
    Output(usize),
}

impl Site {
    /// The Loc bit that selects this site.
    pub const fn loc(self) -> Loc {
        match self {
            Site::Input(_) => Loc::INPUT,
            Site::Central => Loc::CENTRAL,
            Site::Output(_) => Loc::OUTPUT,
        }
    }
}

/// Where a packet's instruction is, found once and handed to every site the packet visits
/// ([`EspNode::ingress_found`], [`EspNode::egress_found`], [`EspNode::warm_found`]), so no
/// site walks the packet again. Processing rewrites only an instruction's flags and
/// operands, never the IP framing or the instruction's length, so what was found before
/// the first site holds at the last: the `*_found` calls answer exactly as
/// [`EspNode::ingress`] and [`EspNode::egress`], which find it for themselves.
///
/// ```
/// use esp_proto::endpoint::Endpoint;
/// use esp_proto::instr::Instruction;
/// use esp_proto::node::{EspNode, Found, NodeConfig};
/// use esp_proto::{EssConfig, HashKey, Instant, Tag};
/// let store = EssConfig::new(10, 1_000, 1, HashKey::from_seed(1))?;
/// let mut node = EspNode::new(NodeConfig {
///     ifaces: 2, store, shards: 1, node_id: 1,
///     idmap_key: HashKey::from_seed(2), timestamp_shift: 0,
/// });
/// let ep = Endpoint::new(3, [10, 0, 0, 1].into());
/// let count = Instruction::Count { counter: Tag(7), thresh: 9 };
/// let mut packet = ep.packet_to([10, 0, 0, 2].into(), &count, &[])?;
/// // A router has checked the IP header already.
/// let h = waist_ip::IpHeader::parse(&packet)?;
/// let found = Found::in_checked(&h, &packet);
/// assert_eq!(found, Found::in_packet(&packet));
/// let now = Instant::from_ticks(0);
/// assert!(node.ingress_found(now, 0, &mut packet, &found));
/// assert!(node.egress_found(now, 1, &mut packet, &found));
/// assert_eq!(node.stats().executed, 3); // input, central and output: Loc selects all
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// The packet carries this instruction.
    Instruction(Located),
    /// A well-formed packet without an instruction (counted as `not_esp` at each site).
    NotEsp,
    /// Malformed IP framing or instruction bytes (counted as `malformed` at each site,
    /// and forwarded as ordinary IP).
    Malformed,
}

impl Found {
    /// Finds the instruction of `packet` ([`locate`]).
    #[inline]
    pub fn in_packet(packet: &[u8]) -> Found {
        Found::from_located(locate(packet))
    }

    /// Finds the instruction of a packet whose IP header `h` the caller has checked
    /// ([`locate_in`]): the same answer as [`Found::in_packet`], without reading the fixed
    /// header again.
    #[inline(always)]
    pub fn in_checked(h: &waist_ip::IpHeader, packet: &[u8]) -> Found {
        Found::from_located(locate_in(h, packet))
    }

    #[inline(always)]
    fn from_located<E>(r: Result<Option<Located>, E>) -> Found {
        match r {
            Ok(Some(l)) => Found::Instruction(l),
            Ok(None) => Found::NotEsp,
            Err(_) => Found::Malformed,
        }
    }
}

/// What happened to a packet at one site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not an ESP packet (or not one this node can frame): forward it as ordinary IP.
    NotEsp,
    /// An ESP packet whose Loc does not select this site, or which carries Err or RB.
    Skipped,
    /// The instruction ran (or aborted: see [`Processed::abort`]).
    Ran(Processed),
}

impl Outcome {
    /// Whether the packet goes on.
    pub const fn forwards(&self) -> bool {
        !matches!(
            self,
            Outcome::Ran(Processed {
                verdict: Verdict::Drop,
                ..
            })
        )
    }
}

/// Running totals of an [`EspNode`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Instructions run (including aborted ones).
    pub executed: u64,
    /// Packets an instruction dropped.
    pub dropped: u64,
    /// Instructions that aborted.
    pub aborted: u64,
    /// Packets skipped because Loc did not select the site or Err/RB was set.
    pub skipped: u64,
    /// Packets with no ESP instruction.
    pub not_esp: u64,
    /// Packets whose IP framing was malformed (passed on as ordinary IP).
    pub malformed: u64,
}

/// One port card: its input and output contexts and the interface's parameters.
#[derive(Debug)]
struct Port {
    input: ShardedEss,
    output: ShardedEss,
    load: u64,
    queue_len: u64,
}

/// An ESP router's contexts. See the [module docs](self).
#[derive(Debug)]
pub struct EspNode {
    ports: Vec<Port>,
    central: ShardedEss,
    config: NodeConfig,
    stats: NodeStats,
    /// The sweep schedule: next sweep, interval, budget per shard.
    sweeps: Option<(Instant, u64, usize)>,
    /// The kinds of site that run instructions here (a router may offer only some).
    sites: Loc,
}

impl EspNode {
    /// A node with empty stores.
    pub fn new(config: NodeConfig) -> EspNode {
        let ctx = |i: u64| {
            ShardedEss::new(
                config.store.with_key(config.store.key().derive(i)),
                config.shards,
            )
        };
        let ports = (0..config.ifaces as u64)
            .map(|i| Port {
                input: ctx(2 * i + 1),
                output: ctx(2 * i + 2),
                load: 0,
                queue_len: 0,
            })
            .collect();
        EspNode {
            ports,
            central: ctx(0),
            config,
            stats: NodeStats::default(),
            sweeps: None,
            sites: Loc::ALL,
        }
    }

    /// Runs instructions only at these kinds of site (input ports, central, output ports);
    /// a packet whose Loc selects only sites switched off is skipped there (counted), as
    /// at a router without those contexts. All three by default.
    pub fn set_sites(&mut self, sites: Loc) {
        self.sites = sites;
    }

    /// The kinds of site that run instructions.
    pub fn sites(&self) -> Loc {
        self.sites
    }

    /// Sweeps every context for expired bindings every `interval` ticks from `now` on,
    /// reclaiming up to `budget` per shard each time (see [`EspNode::poll_timeout`]).
    pub fn schedule_sweeps(&mut self, now: Instant, interval: u64, budget: usize) {
        let interval = interval.max(1);
        self.sweeps = Some((
            Instant::from_ticks(now.ticks().saturating_add(interval)),
            interval,
            budget,
        ));
    }

    /// When the next scheduled sweep is due (`None` if none is scheduled).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sweeps.map(|(at, _, _)| at)
    }

    /// Runs the scheduled sweep if it is due at `now`; returns the bindings reclaimed.
    pub fn handle_timeout(&mut self, now: Instant) -> usize {
        match self.sweeps {
            Some((at, interval, budget)) if at <= now => {
                let next = Instant::from_ticks(now.ticks().saturating_add(interval));
                self.sweeps = Some((next, interval, budget));
                self.clean(now, budget)
            }
            _ => 0,
        }
    }

    /// The node's config.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// Running totals.
    pub fn stats(&self) -> NodeStats {
        self.stats
    }

    /// The store in which packets of computation `cid` run at `site` (the context's shard
    /// for that CID), to inspect what instructions left there; `None` for a port the node
    /// does not have.
    pub fn store(&self, site: Site, cid: u32) -> Option<&Ess> {
        let cid = u64::from(cid);
        match site {
            Site::Central => Some(self.central.shard(cid)),
            Site::Input(i) => self.ports.get(i).map(|p| p.input.shard(cid)),
            Site::Output(i) => self.ports.get(i).map(|p| p.output.shard(cid)),
        }
    }

    /// Sets interface `iface`'s load and queue length (the
    /// [`IfaceLoad`](crate::instr::Param::IfaceLoad) and
    /// [`QueueLen`](crate::instr::Param::QueueLen) operands). Ignored for a port that does
    /// not exist.
    pub fn set_iface_params(&mut self, iface: usize, load: u64, queue_len: u64) {
        if let Some(p) = self.ports.get_mut(iface) {
            p.load = load;
            p.queue_len = queue_len;
        }
    }

    /// Runs `packet`'s instruction at `site`, if its Loc selects it. Unknown ports are
    /// treated as not selected.
    pub fn process_at(&mut self, now: Instant, site: Site, packet: &mut [u8]) -> Outcome {
        self.process_found(now, site, packet, &Found::in_packet(packet))
    }

    /// As [`process_at`](Self::process_at), with the instruction already found in `packet`
    /// ([`Found`]).
    pub fn process_found(
        &mut self,
        now: Instant,
        site: Site,
        packet: &mut [u8],
        found: &Found,
    ) -> Outcome {
        self.process_found_with(now, site, packet, found, &mut NoExtension)
    }

    /// As [`process_found`](Self::process_found), with opcodes that are not built in run by
    /// `ext` (inline microcode, installed instructions: the `esp-micro` crate).
    pub fn process_found_with<E: Extension<DefaultTables> + ?Sized>(
        &mut self,
        now: Instant,
        site: Site,
        packet: &mut [u8],
        found: &Found,
        ext: &mut E,
    ) -> Outcome {
        let located = match found {
            Found::Instruction(l) => l,
            Found::NotEsp => {
                self.stats.not_esp += 1;
                return Outcome::NotEsp;
            }
            Found::Malformed => {
                self.stats.malformed += 1;
                return Outcome::NotEsp;
            }
        };
        // In the option form the instruction's bytes are IPv4 header bytes: keep them to fix
        // the header checksum after processing (at most 40 bytes of option space).
        let mut before = [0u8; 40];
        let saved = match located.form {
            Form::Ipv4Option => packet
                .get(located.range.clone())
                .and_then(|b| before.get_mut(..b.len()).map(|d| d.copy_from_slice(b)))
                .map(|()| located.range.len()),
            Form::Dedicated | Form::Ipv6HopByHop => None,
        };
        let outcome = self.process_located(now, site, packet, located.range.clone(), ext);
        if let (Some(n), Outcome::Ran(_)) = (saved, &outcome) {
            waist_ip::rewrite::note_rewrite(
                packet,
                located.range.start,
                before.get(..n).unwrap_or_default(),
            );
        }
        outcome
    }

    fn process_located<E: Extension<DefaultTables> + ?Sized>(
        &mut self,
        now: Instant,
        site: Site,
        packet: &mut [u8],
        range: core::ops::Range<usize>,
        ext: &mut E,
    ) -> Outcome {
        let Some(Ok(mut header)) = packet.get_mut(range).map(Header::new_checked) else {
            self.stats.malformed += 1;
            return Outcome::NotEsp;
        };
        if !header.loc().contains(site.loc())
            || !self.sites.contains(site.loc())
            || header.err()
            || header.rb()
        {
            self.stats.skipped += 1;
            return Outcome::Skipped;
        }
        let cid = header.cid();
        let mut env = Env::new(self.config.node_id, self.config.idmap_key);
        env.timestamp = now.ticks() >> self.config.timestamp_shift.min(63);
        let processed = match site {
            Site::Central => {
                let store = self.central.shard_mut(u64::from(cid));
                process_with(&mut Context::new(store, &env, cid), now, &mut header, ext)
            }
            Site::Input(i) | Site::Output(i) => {
                let Some(port) = self.ports.get_mut(i) else {
                    self.stats.skipped += 1;
                    return Outcome::Skipped;
                };
                env.iface = i as u32;
                env.iface_load = port.load;
                env.queue_len = port.queue_len;
                let mut ctx = if let Site::Output(_) = site {
                    Context {
                        store: port.output.shard_mut(u64::from(cid)),
                        port_input: Some(port.input.shard(u64::from(cid))),
                        env: &env,
                        cid,
                    }
                } else {
                    Context::new(port.input.shard_mut(u64::from(cid)), &env, cid)
                };
                process_with(&mut ctx, now, &mut header, ext)
            }
        };
        self.stats.executed += 1;
        self.stats.aborted += u64::from(processed.abort.is_some());
        self.stats.dropped += u64::from(processed.verdict == Verdict::Drop);
        Outcome::Ran(processed)
    }

    /// Brings into cache the store lookups `packet`'s instruction will make
    /// ([`Ess::warm_tag`](ess::Ess::warm_tag): the hash slot and the live head entry), so
    /// that the [`ingress`](Self::ingress) / [`egress`](Self::egress) calls that run it
    /// find those lines cached. For a batch of packets (one `recvmmsg`), warm every packet
    /// first, then run them one at a time: nothing waits on the warming reads, so the
    /// misses of many packets overlap instead of each packet waiting on its own.
    ///
    /// `input` is the interface the packet arrived on, if it did; `output` names the one
    /// it will leave by, asked only if the packet's Loc selects output ports. The sites
    /// its Loc selects among those and the central context are warmed, at most two tags
    /// each (the ones the instruction looks up first). Changes nothing (no store, no
    /// statistic): a hint, so processing gives exactly the results it would without it.
    /// Packets that are not ESP, malformed or skipped are passed over.
    ///
    /// ```
    /// use esp_proto::endpoint::Endpoint;
    /// use esp_proto::instr::Instruction;
    /// use esp_proto::node::{EspNode, NodeConfig};
    /// use esp_proto::{EssConfig, HashKey, Instant, Tag};
    /// let store = EssConfig::new(10, 1_000, 1, HashKey::from_seed(1))?;
    /// let mut node = EspNode::new(NodeConfig {
    ///     ifaces: 2, store, shards: 1, node_id: 1,
    ///     idmap_key: HashKey::from_seed(2), timestamp_shift: 0,
    /// });
    /// let ep = Endpoint::new(3, [10, 0, 0, 1].into());
    /// let mut packets: Vec<Vec<u8>> = (0..4)
    ///     .map(|t| ep.packet_to([10, 0, 0, 2].into(), &Instruction::Count { counter: Tag(t), thresh: 9 }, &[]))
    ///     .collect::<Result<_, _>>()?;
    /// for p in &packets {
    ///     node.warm(p, Some(0), |_| Some(1));
    /// }
    /// let now = Instant::from_ticks(0);
    /// for p in &mut packets {
    ///     assert!(node.ingress(now, 0, p) && node.egress(now, 1, p));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn warm(
        &self,
        packet: &[u8],
        input: Option<usize>,
        output: impl FnOnce(&[u8]) -> Option<usize>,
    ) {
        if let Some(range) =
            dedicated_v4(packet).or_else(|| locate(packet).ok().flatten().map(|l| l.range))
        {
            self.warm_range(packet, range, input, output);
        }
    }

    /// As [`warm`](Self::warm), with the instruction already found in `packet` ([`Found`]).
    #[inline]
    pub fn warm_found(
        &self,
        packet: &[u8],
        found: &Found,
        input: Option<usize>,
        output: impl FnOnce(&[u8]) -> Option<usize>,
    ) {
        if let Found::Instruction(l) = found {
            self.warm_range(packet, l.range.clone(), input, output);
        }
    }

    /// Warms the lookups of the instruction at `packet[range]`.
    #[inline]
    fn warm_range(
        &self,
        packet: &[u8],
        range: core::ops::Range<usize>,
        input: Option<usize>,
        output: impl FnOnce(&[u8]) -> Option<usize>,
    ) {
        let Some(Ok(header)) = packet.get(range).map(Header::new_checked) else {
            return;
        };
        if header.err() || header.rb() {
            return;
        }
        let loc = Loc::from_bits(header.loc().bits() & self.sites.bits());
        let cid = u64::from(header.cid());
        let tags = Instruction::first_tags(header.opcode(), header.operands());
        let warm = |store: &ess::Ess| {
            for tag in tags.into_iter().flatten() {
                store.warm_tag(tag);
            }
        };
        if let Some(port) = input.and_then(|i| self.ports.get(i))
            && loc.contains(Loc::INPUT)
        {
            warm(port.input.shard(cid));
        }
        if loc.contains(Loc::CENTRAL) {
            warm(self.central.shard(cid));
        }
        if loc.contains(Loc::OUTPUT)
            && let Some(port) = output(packet).and_then(|i| self.ports.get(i))
        {
            warm(port.output.shard(cid));
        }
    }

    /// A packet arrived on `iface`: runs its input and central contexts. `false` if an
    /// instruction dropped it.
    pub fn ingress(&mut self, now: Instant, iface: usize, packet: &mut [u8]) -> bool {
        let found = Found::in_packet(packet);
        self.ingress_found(now, iface, packet, &found)
    }

    /// As [`ingress`](Self::ingress), with the instruction already found in `packet`
    /// ([`Found`]).
    #[inline]
    pub fn ingress_found(
        &mut self,
        now: Instant,
        iface: usize,
        packet: &mut [u8],
        found: &Found,
    ) -> bool {
        self.ingress_found_with(now, iface, packet, found, &mut NoExtension)
    }

    /// As [`ingress_found`](Self::ingress_found), with `ext` for the opcodes that are not
    /// built in.
    #[inline]
    pub fn ingress_found_with<E: Extension<DefaultTables> + ?Sized>(
        &mut self,
        now: Instant,
        iface: usize,
        packet: &mut [u8],
        found: &Found,
        ext: &mut E,
    ) -> bool {
        self.process_found_with(now, Site::Input(iface), packet, found, ext)
            .forwards()
            && self
                .process_found_with(now, Site::Central, packet, found, ext)
                .forwards()
    }

    /// A packet (or one copy of it) leaves by `iface`: runs its output context. `false` if
    /// the instruction dropped it.
    pub fn egress(&mut self, now: Instant, iface: usize, packet: &mut [u8]) -> bool {
        self.process_at(now, Site::Output(iface), packet).forwards()
    }

    /// As [`egress`](Self::egress), with the instruction already found in `packet`
    /// ([`Found`]; found before [`ingress_found`](Self::ingress_found) ran, it still holds).
    #[inline]
    pub fn egress_found(
        &mut self,
        now: Instant,
        iface: usize,
        packet: &mut [u8],
        found: &Found,
    ) -> bool {
        self.egress_found_with(now, iface, packet, found, &mut NoExtension)
    }

    /// As [`egress_found`](Self::egress_found), with `ext` for the opcodes that are not
    /// built in.
    #[inline]
    pub fn egress_found_with<E: Extension<DefaultTables> + ?Sized>(
        &mut self,
        now: Instant,
        iface: usize,
        packet: &mut [u8],
        found: &Found,
        ext: &mut E,
    ) -> bool {
        self.process_found_with(now, Site::Output(iface), packet, found, ext)
            .forwards()
    }

    /// Reclaims up to `budget` expired bindings in each shard of every context.
    pub fn clean(&mut self, now: Instant, budget: usize) -> usize {
        let mut n = self.central.clean(now, budget);
        for p in &mut self.ports {
            n += p.input.clean(now, budget) + p.output.clean(now, budget);
        }
        n
    }

    /// Bindings created so far in all contexts (the stores' running totals).
    pub fn created(&self) -> u64 {
        let sum = |c: &ShardedEss| c.shards().iter().map(|s| s.counters().created).sum::<u64>();
        self.ports
            .iter()
            .map(|p| sum(&p.input) + sum(&p.output))
            .sum::<u64>()
            + sum(&self.central)
    }

    /// Renumbers the ports after the router's interfaces changed: new port `j` continues
    /// old port `from[j]` (its input and output contexts, bindings and parameters kept),
    /// or, for `None` (or an old port that does not exist), starts with empty contexts as
    /// [`EspNode::new`] makes them. Old ports no `from` names are dropped, with their
    /// bindings; the central context is untouched. What a router calls when it is
    /// reconfigured live (links added, removed or reordered).
    pub fn remap_ports(&mut self, from: &[Option<usize>]) {
        let mut old: Vec<Option<Port>> = core::mem::take(&mut self.ports)
            .into_iter()
            .map(Some)
            .collect();
        let store = self.config.store;
        let shards = self.config.shards;
        let ctx = |i: u64| ShardedEss::new(store.with_key(store.key().derive(i)), shards);
        self.ports = from
            .iter()
            .enumerate()
            .map(|(j, f)| {
                f.and_then(|i| old.get_mut(i).and_then(Option::take))
                    .unwrap_or_else(|| Port {
                        input: ctx(2 * j as u64 + 1),
                        output: ctx(2 * j as u64 + 2),
                        load: 0,
                        queue_len: 0,
                    })
            })
            .collect();
        self.config.ifaces = from.len();
    }

    /// Bytes of memory the node's stores use.
    pub fn memory_bytes(&self) -> usize {
        self.ports
            .iter()
            .map(|p| p.input.memory_bytes() + p.output.memory_bytes())
            .sum::<usize>()
            + self.central.memory_bytes()
    }
}
