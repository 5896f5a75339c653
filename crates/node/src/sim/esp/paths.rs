//! Path intersection (paper §1, Fig. 1): which routers do the paths from a source to two
//! receivers share? The source marks its path to A with MARK, then sends LASTMARK toward B;
//! B learns the last marked node its packet passed: where the paths part. With partial
//! deployment (§4.1) the answer is the last *ESP-capable* common node. The instructions
//! travel as built-ins or as microcode ([`Fig1::build_with`], [`InstructionSet`]).
//!
//! The network ([`Fig1::build`]):
//!
//! ```text
//!  S ── R0 ── R1 ── R2 ── R3 ── A
//!                    └── R4 ── B
//! ```

use alloc::vec::Vec;
use core::net::IpAddr;

use esp_proto::endpoint::{Endpoint, EndpointError};
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use ess::{Tag, Value};
use netsim::{Instant, LinkConfig, NodeId, Simulator};

use super::isa::InstructionSet;
use super::{add_host, enable_esp_with, install_host_routes, send_from};
use crate::sim::{BuildError, SimNode, add_router, addr_of};
use crate::{MILLIS as MS, SECONDS};

/// The network of Fig. 1 on a simulator.
#[derive(Debug)]
pub struct Fig1 {
    /// The network.
    pub sim: Simulator<SimNode>,
    /// The source.
    pub s: NodeId,
    /// The first receiver (its path is marked).
    pub a: NodeId,
    /// The second receiver (it asks).
    pub b: NodeId,
    /// R0 … R4.
    pub routers: Vec<NodeId>,
    isa: InstructionSet,
}

/// What B learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The last marked node's id on B's path (0: none), as LASTMARK delivered it.
    pub node: u64,
    /// The index in [`Fig1::routers`] of that node, if it is one of them.
    pub router: Option<usize>,
}

impl Fig1 {
    /// Builds the network with 1 ms links; routers whose index is in `esp` run ESP, the
    /// others only forward.
    ///
    /// # Errors
    ///
    /// [`BuildError`] only if the store constants were invalid.
    pub fn build(esp: &[usize], seed: u64) -> Result<Fig1, BuildError> {
        Fig1::build_with(esp, seed, InstructionSet::BuiltIn)
    }

    /// [`build`](Self::build), its packets and routers speaking `isa`.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with(esp: &[usize], seed: u64, isa: InstructionSet) -> Result<Fig1, BuildError> {
        let mut sim = Simulator::new(seed);
        let link = LinkConfig::with_delay(MS);
        let s = add_host(&mut sim);
        let routers: Vec<NodeId> = (0..5).map(|_| add_router(&mut sim)).collect();
        let (a, b) = (add_host(&mut sim), add_host(&mut sim));
        sim.connect(s, routers[0], link);
        for w in routers[..4].windows(2) {
            sim.connect(w[0], w[1], link);
        }
        sim.connect(routers[3], a, link);
        sim.connect(routers[2], routers[4], link);
        sim.connect(routers[4], b, link);
        install_host_routes(&mut sim)?;
        let esp: Vec<NodeId> = esp
            .iter()
            .filter_map(|&i| routers.get(i).copied())
            .collect();
        enable_esp_with(&mut sim, &esp, 8, seed, &isa)?;
        Ok(Fig1 {
            sim,
            s,
            a,
            b,
            routers,
            isa,
        })
    }

    /// Marks the path to A under `tag`, then queries toward B 50 ms later, and returns B's
    /// answer (`None` if the query did not arrive) a second after that.
    ///
    /// # Errors
    ///
    /// [`EndpointError`] if a packet cannot be built or the answer cannot be parsed.
    pub fn query(&mut self, tag: Tag) -> Result<Option<Answer>, EndpointError> {
        let ip = |n: NodeId| -> IpAddr { addr_of(n).into() };
        let ep = Endpoint::new(1, ip(self.s)).with_loc(Loc::CENTRAL);
        let mark = self
            .isa
            .packet_to(&ep, ip(self.a), &Instruction::Mark { tag })?;
        let ask = Instruction::LastMark {
            tag,
            node: Value(0),
        };
        let ask = self.isa.packet_to(&ep, ip(self.b), &ask)?;
        let t = self.sim.now().ticks();
        send_from(&mut self.sim, self.s, Instant::from_ticks(t), mark);
        send_from(&mut self.sim, self.s, Instant::from_ticks(t + 50 * MS), ask);
        // ESP routers sweep on a timer: run to a time well after both have arrived.
        self.sim
            .run_until(Instant::from_ticks(t + 50 * MS + SECONDS));
        let inbox = self
            .sim
            .node_mut(self.b)
            .host_mut()
            .map(super::Host::take_inbox)
            .unwrap_or_default();
        let Some((_, packet)) = inbox.last() else {
            return Ok(None);
        };
        let got = self.isa.receive(&Endpoint::new(1, ip(self.b)), packet)?;
        let Instruction::LastMark { node, .. } = got.instr else {
            return Err(EndpointError::NotEsp);
        };
        let router = self
            .routers
            .iter()
            .position(|&r| u64::from(u32::from(addr_of(r))) == node.0);
        Ok(Some(Answer {
            node: node.0,
            router,
        }))
    }

    /// Packets A received (the markers).
    pub fn marks_delivered(&mut self) -> usize {
        self.sim
            .node_mut(self.a)
            .host_mut()
            .map_or(0, |h| h.take_inbox().len())
    }
}
