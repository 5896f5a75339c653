//! Tree-structured aggregation end to end (paper §3.2, §4.2, §4.3): a collector, a tree of
//! ESP routers, and leaves that each contribute 1, so the right answer is the leaf count.
//!
//! [`AggTree::build`] makes the tree from a [`TreeSpec`]; [`AggTree::run`] runs one
//! computation — plain (COUNT, then COLLECT) or robust (RCHLD, then RCOLLECT, each leaf
//! sending `limit` copies) — with some links made lossy for the run, and reports whether a
//! result reached the collector and whether it was right. The instructions travel as
//! built-ins or as microcode ([`AggTree::build_with`], [`InstructionSet`]).

use alloc::vec::Vec;

use esp_proto::endpoint::Endpoint;
use esp_proto::idmap::IdMap;
use esp_proto::instr::{CombineOp, Instruction, Robust};
use esp_proto::wire::Loc;
use ess::HashKey;
use ess::{Tag, Value};
use netsim::{Instant, LinkConfig, LinkId, NodeId, Rng, Simulator};

use super::isa::InstructionSet;
use super::{Host, add_host, enable_esp_with, set_default};
use crate::sim::{BuildError, SimNode, add_router, addr_of};
use crate::{MILLIS as MS, SECONDS as SECOND};

/// The shape of an aggregation tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeSpec {
    /// Leaves (contributors).
    pub leaves: usize,
    /// Children of the root router: the tree's widest node.
    pub root_branching: usize,
    /// Below the root, each router adopts a uniformly random number of children in
    /// `min_branching..=max_branching`, grouping upward from the leaves.
    pub min_branching: usize,
    /// See `min_branching`.
    pub max_branching: usize,
    /// One-way delay of every link, in µs.
    pub hop_delay: u64,
    /// Seed for the shape and the routers' keys.
    pub seed: u64,
    /// log2 of each router context's store size.
    pub store_log2: u8,
}

impl TreeSpec {
    /// Our stand-in for the paper's §4.3 tree: 5000 leaves, root branching 40, 2–12
    /// children elsewhere, 1 ms links.
    pub const fn paper() -> TreeSpec {
        TreeSpec {
            leaves: 5000,
            root_branching: 40,
            min_branching: 2,
            max_branching: 12,
            hop_delay: MS,
            seed: 2002,
            store_log2: 6,
        }
    }
}

/// How a run aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// COUNT (threshold 1), then COLLECT (§3.2): one packet per leaf per phase.
    Plain,
    /// RCHLD, then RCOLLECT (§4.3.3).
    Robust {
        /// IDmap words (m = 64 × words bits).
        words: u8,
        /// Bits per IDmap.
        k: u8,
        /// Copies each leaf sends, and packets each node forwards, per phase.
        limit: u16,
    },
}

/// What one run delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// The first result the collector received, if any.
    pub result: Option<u64>,
    /// Whether that result is the leaf count.
    pub correct: bool,
    /// Result packets the collector received.
    pub deliveries: usize,
    /// Result packets that arrived with Err set.
    pub errors: usize,
}

impl RunOutcome {
    /// Whether a result arrived.
    pub const fn completed(&self) -> bool {
        self.result.is_some()
    }
}

/// What a leaf sends in one run: the first phase's instruction (COUNT, or RCHLD), the
/// second's (COLLECT, or RCOLLECT, contributing 1), and how many copies of each (1, or the
/// robust scheme's limit). `tags` are the run's six fresh tags; `key` draws a robust
/// leaf's IDmap. The simulator's [`AggTree::run`] and live experiments on real routers
/// send exactly these.
pub fn leaf_instructions(
    scheme: Scheme,
    tags: &[Tag; 6],
    cid: u32,
    key: &HashKey,
) -> (Instruction, Instruction, u16) {
    match scheme {
        Scheme::Plain => (
            Instruction::Count {
                counter: tags[0],
                thresh: 1,
            },
            Instruction::Collect {
                value: tags[1],
                val: Value(1),
                counter: tags[0],
                op: CombineOp::Add,
            },
            1,
        ),
        Scheme::Robust { words, k, limit } => {
            let robust = Robust {
                thresh: limit,
                k,
                idmap: IdMap::for_node(key, cid, k, words),
            };
            (
                Instruction::Rchld {
                    children: tags[2],
                    counter: tags[3],
                    robust,
                },
                Instruction::Rcollect {
                    value: tags[1],
                    val: Value(1),
                    heard: tags[4],
                    children: tags[2],
                    forwarded: tags[5],
                    op: CombineOp::Add,
                    robust,
                },
                limit,
            )
        }
    }
}

/// An aggregation tree on a simulator. See the [module docs](self).
#[derive(Debug)]
pub struct AggTree {
    /// The network.
    pub sim: Simulator<SimNode>,
    /// The collector host.
    pub collector: NodeId,
    /// The leaf hosts.
    pub leaves: Vec<NodeId>,
    /// Every link.
    pub links: Vec<LinkId>,
    /// Routers (the root first).
    pub routers: Vec<NodeId>,
    /// Children of each router, in `routers` order.
    pub branching: Vec<usize>,
    /// Longest leaf-to-collector path, in hops.
    pub depth: usize,
    spec: TreeSpec,
    runs: u64,
    isa: InstructionSet,
}

impl AggTree {
    /// Builds the tree: collector — root router — subtrees — leaves. Every router runs
    /// ESP ([`esp_config`](super::esp_config)) and its default route points at its parent.
    ///
    /// # Errors
    ///
    /// [`BuildError`] if the store size is out of range.
    pub fn build(spec: TreeSpec) -> Result<AggTree, BuildError> {
        AggTree::build_with(spec, InstructionSet::BuiltIn)
    }

    /// [`build`](Self::build), its packets and routers speaking `isa`.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with(spec: TreeSpec, isa: InstructionSet) -> Result<AggTree, BuildError> {
        let mut rng = Rng::new(spec.seed);
        let mut sim = Simulator::new(spec.seed ^ 0x51u64);
        let link = LinkConfig::with_delay(spec.hop_delay);
        let collector = add_host(&mut sim);
        let leaves: Vec<NodeId> = (0..spec.leaves).map(|_| add_host(&mut sim)).collect();
        let mut links = Vec::new();
        // Per subtree of the root, group upward from the leaves.
        let per = spec.leaves.div_ceil(spec.root_branching.max(1));
        let mut tops = Vec::new();
        let mut parents: Vec<(NodeId, Vec<NodeId>)> = Vec::new();
        let mut depth = 0;
        for chunk in leaves.chunks(per.max(1)) {
            let mut level: Vec<NodeId> = chunk.to_vec();
            let mut height = 1;
            while level.len() > 1 {
                let mut next = Vec::new();
                let mut rest = &level[..];
                while !rest.is_empty() {
                    let span = (spec.max_branching - spec.min_branching + 1) as u64;
                    let take = (spec.min_branching + rng.below(span) as usize).min(rest.len());
                    let (kids, tail) = rest.split_at(take);
                    rest = tail;
                    let r = add_router(&mut sim);
                    parents.push((r, kids.to_vec()));
                    next.push(r);
                }
                level = next;
                height += 1;
            }
            if let Some(&top) = level.first() {
                tops.push(top);
            }
            depth = depth.max(height);
        }
        let root = add_router(&mut sim);
        parents.push((root, tops));
        // Wire parents before children, root first: every node's first link, interface 0,
        // is then its uplink (the collector's is its only link).
        parents.reverse();
        let (mut routers, mut branching) = (Vec::new(), Vec::new());
        links.push(sim.connect(collector, root, link));
        for (r, kids) in &parents {
            routers.push(*r);
            branching.push(kids.len());
            for &k in kids {
                links.push(sim.connect(*r, k, link));
            }
        }
        // Now the links are known: build the routers with their ESP contexts, default
        // routes up the tree.
        enable_esp_with(&mut sim, &routers, spec.store_log2, spec.seed, &isa)?;
        for &r in &routers {
            set_default(&mut sim, r, 0);
        }
        Ok(AggTree {
            sim,
            collector,
            leaves,
            links,
            routers,
            branching,
            depth: depth + 1,
            spec,
            runs: 0,
            isa,
        })
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &TreeSpec {
        &self.spec
    }

    /// Runs one aggregation with the links in `lossy` losing `loss_ppm` per million packets
    /// (the others lossless), phases `gap` µs apart. Each run starts after the previous
    /// one's state has expired, with fresh tags and CID, and ends a second (plus the
    /// tree's depth in hop delays) after the last leaf sent.
    pub fn run(
        &mut self,
        scheme: Scheme,
        lossy: &[LinkId],
        loss_ppm: u32,
        gap: u64,
        rng: &mut Rng,
    ) -> RunOutcome {
        let base = LinkConfig::with_delay(self.spec.hop_delay);
        for &l in lossy {
            self.sim.set_link_config(l, base.loss_ppm(loss_ppm));
        }
        self.runs += 1;
        let cid = self.runs as u32;
        let start = Instant::from_ticks(self.sim.now().ticks() + 11 * SECOND);
        let tags: [Tag; 6] = core::array::from_fn(|_| Tag(rng.next_u64()));
        let dest = addr_of(self.collector).into();
        let mut last = start.ticks();
        for &leaf in &self.leaves.clone() {
            let ep = Endpoint::new(cid, addr_of(leaf).into())
                .with_dest(dest)
                .with_loc(Loc::OUTPUT);
            // A robust run draws each leaf's IDmap key from the run's generator.
            let key = match scheme {
                Scheme::Robust { .. } => HashKey::from_seed(rng.next_u64()),
                Scheme::Plain => HashKey::from_seed(0),
            };
            let (first, second, copies) = leaf_instructions(scheme, &tags, cid, &key);
            for (phase, instr) in [(0, first), (gap, second)] {
                let Ok(packet) = self.isa.packet_to(&ep, dest, &instr) else {
                    continue;
                };
                for c in 0..copies {
                    let at = start.ticks() + phase + rng.below(MS) + u64::from(c) * 10;
                    last = last.max(at);
                    let h = self.sim.node_mut(leaf).host_mut();
                    if let Some(h) = h {
                        h.send_at(Instant::from_ticks(at), packet.clone());
                    }
                }
            }
        }
        // Hosts only run when the simulator asks them: poke each leaf so its first send is
        // scheduled.
        for &leaf in &self.leaves.clone() {
            self.sim.act(leaf, |_, _, _| ());
        }
        // ESP routers sweep their stores on a timer, so the network is never idle: run until
        // well after the last send (a path's delay is depth × hop delay).
        let settle = (self.depth as u64 + 1) * self.spec.hop_delay + SECOND;
        self.sim.run_until(Instant::from_ticks(last + settle));
        for &l in lossy {
            self.sim.set_link_config(l, base);
        }
        let ep = Endpoint::new(cid, dest);
        let inbox = self
            .sim
            .node_mut(self.collector)
            .host_mut()
            .map(Host::take_inbox)
            .unwrap_or_default();
        let mut out = RunOutcome {
            result: None,
            correct: false,
            deliveries: 0,
            errors: 0,
        };
        for (_, p) in inbox {
            let Ok(got) = self.isa.receive(&ep, &p) else {
                continue;
            };
            out.deliveries += 1;
            if got.err.is_some() {
                out.errors += 1;
                continue;
            }
            let val = match got.instr {
                Instruction::Collect { val, .. } | Instruction::Rcollect { val, .. } => val.0,
                _ => continue,
            };
            if out.result.is_none() {
                out.result = Some(val);
                out.correct = val == self.leaves.len() as u64;
            }
        }
        out
    }
}
