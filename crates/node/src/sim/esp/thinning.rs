//! Feedback thinning (paper §3.1.1): receivers of a multicast session report a value (a
//! loss rate, a delay) to the source with COMPARE (`<`) in their routers' output contexts,
//! so a router passes a report only if it beats every report it passed before; the source
//! receives an increasing sequence ending with the maximum, a small fraction of the
//! reports.
//!
//! The network ([`Feedback::build`]): the source, a root router R0, `fan` routers under it
//! and `leaves` receivers under each; links of 1 ms with 1 ms of jitter below R0 (the
//! source's own link is FIFO, so the order R0 forwards in is the order the source sees).
//!
//! ```text
//!  S ── R0 ─┬─ R1 ── receivers
//!           ├─ R2 ── receivers
//!           └─ …
//! ```

use alloc::vec::Vec;
use core::net::IpAddr;

use esp_proto::endpoint::{Endpoint, EndpointError};
use esp_proto::instr::{CompareOp, Instruction};
use esp_proto::wire::Loc;
use ess::{Tag, Value};
use netsim::{Instant, LinkConfig, NodeId, Rng, Simulator};

use super::isa::InstructionSet;
use super::{Host, add_host, enable_esp_with, install_host_routes, send_from};
use crate::sim::{BuildError, SimNode, add_router, addr_of};
use crate::{MILLIS as MS, SECONDS};

/// The feedback tree on a simulator. See the [module docs](self).
#[derive(Debug)]
pub struct Feedback {
    /// The network.
    pub sim: Simulator<SimNode>,
    /// The source the reports go to.
    pub source: NodeId,
    /// The receivers that report.
    pub receivers: Vec<NodeId>,
    /// R0 first, then the routers under it.
    pub routers: Vec<NodeId>,
    isa: InstructionSet,
    rounds: u32,
}

/// What one round delivered to the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    /// The values of the reports that arrived without Err, in arrival order.
    pub delivered: Vec<u64>,
    /// Reports that arrived with Err set.
    pub errors: usize,
    /// The largest value reported.
    pub max: u64,
    /// Reports sent.
    pub sent: usize,
}

impl Feedback {
    /// Builds the tree of `fan` routers under R0, each with `leaves` receivers, every
    /// router running ESP and speaking `isa`; `seed` seeds the simulator and the routers'
    /// keys.
    ///
    /// # Errors
    ///
    /// [`BuildError`] only if the store constants were invalid.
    pub fn build(
        fan: usize,
        leaves: usize,
        seed: u64,
        isa: InstructionSet,
    ) -> Result<Feedback, BuildError> {
        let mut sim = Simulator::new(seed);
        let link = LinkConfig::with_delay(MS).jitter(MS);
        let source = add_host(&mut sim);
        let r0 = add_router(&mut sim);
        sim.connect(source, r0, LinkConfig::with_delay(MS));
        let mut routers = Vec::from([r0]);
        let mut receivers = Vec::new();
        for _ in 0..fan {
            let r = add_router(&mut sim);
            sim.connect(r0, r, link);
            routers.push(r);
            for _ in 0..leaves {
                let h = add_host(&mut sim);
                sim.connect(r, h, link);
                receivers.push(h);
            }
        }
        install_host_routes(&mut sim)?;
        enable_esp_with(&mut sim, &routers, 8, seed ^ 0xFEED, &isa)?;
        Ok(Feedback {
            sim,
            source,
            receivers,
            routers,
            isa,
            rounds: 0,
        })
    }

    /// One round, after the last one's state expired: a fresh tag and computation, every
    /// receiver reporting a value below 10^6 at a random time within 100 ms; returns what
    /// reached the source a second later.
    ///
    /// # Errors
    ///
    /// [`EndpointError`] if a report cannot be built or an arrival parsed.
    pub fn round(&mut self, rng: &mut Rng) -> Result<Round, EndpointError> {
        let ip = |n: NodeId| -> IpAddr { addr_of(n).into() };
        let cid = self.rounds;
        self.rounds += 1;
        let tag = Tag(rng.next_u64());
        let start = self.sim.now().ticks() + 11 * SECONDS;
        let mut max = 0;
        for &h in &self.receivers {
            let u = rng.below(1_000_000);
            max = max.max(u);
            let ep = Endpoint::new(cid, ip(h)).with_loc(Loc::OUTPUT);
            let report = Instruction::Compare {
                value: tag,
                current: Value(u),
                op: CompareOp::Lt,
            };
            let p = self.isa.packet_to(&ep, ip(self.source), &report)?;
            let at = Instant::from_ticks(start + rng.below(100 * MS));
            send_from(&mut self.sim, h, at, p);
        }
        self.sim
            .run_until(Instant::from_ticks(start + 100 * MS + SECONDS));
        let inbox = self
            .sim
            .node_mut(self.source)
            .host_mut()
            .map(Host::take_inbox)
            .unwrap_or_default();
        let ep = Endpoint::new(cid, ip(self.source));
        let mut out = Round {
            delivered: Vec::new(),
            errors: 0,
            max,
            sent: self.receivers.len(),
        };
        for (_, p) in inbox {
            let got = self.isa.receive(&ep, &p)?;
            match (got.err, got.instr) {
                (Some(_), _) => out.errors += 1,
                (None, Instruction::Compare { current, .. }) => out.delivered.push(current.0),
                (None, _) => return Err(EndpointError::NotEsp),
            }
        }
        Ok(out)
    }
}
