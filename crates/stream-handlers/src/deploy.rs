//! Deployment points and compositions of stream handlers across them (paper §3.2).
//!
//! A [`Deployment`] is a pipeline of handlers, each at a [`Point`] of the data path: the
//! Rx side, the Tx side or in transit in NP memory on the IXP, or in the host kernel or at
//! host user level. [`Deployment::run`] applies it natively to real messages (every output
//! of one stage is an input of the next); [`Deployment::work_by_point`] says how much work
//! lands at each point for a message of a given size, counting stages after a fan-out once
//! per copy, as plain counts. A machine model turns that into time (`ixp-model`'s `path`
//! module, adding the data movement each point implies: FIFO transfers, PCI crossings,
//! kernel crossings and copies).

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::stream::{Message, Needs, StreamHandler, Work};

/// Where on the data path a handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point {
    /// In the NP's receive threads, as part of receive-side protocol processing.
    RxSide,
    /// In the NP's transmit threads, once per outgoing copy.
    TxSide,
    /// In an NP context of its own, on the message assembled in SDRAM.
    InTransit,
    /// In the host kernel (no user/kernel crossing, no copy to user space).
    HostKernel,
    /// At host user level (the message crosses PCI and is copied up and down).
    HostUser,
}

impl Point {
    /// All points, in data-path order.
    pub const ALL: [Point; 5] = [
        Point::RxSide,
        Point::InTransit,
        Point::TxSide,
        Point::HostKernel,
        Point::HostUser,
    ];

    /// Whether the point is on the NP (not the host).
    pub const fn on_np(self) -> bool {
        matches!(self, Self::RxSide | Self::TxSide | Self::InTransit)
    }

    /// The point's index in [`Point::ALL`].
    pub const fn index(self) -> usize {
        match self {
            Self::RxSide => 0,
            Self::InTransit => 1,
            Self::TxSide => 2,
            Self::HostKernel => 3,
            Self::HostUser => 4,
        }
    }
}

/// One handler at one point.
pub struct Stage {
    /// Where it runs.
    pub point: Point,
    /// What it does.
    pub handler: Box<dyn StreamHandler>,
}

impl core::fmt::Debug for Stage {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Stage")
            .field("point", &self.point)
            .field("handler", &self.handler.name())
            .finish()
    }
}

/// The work a deployment puts at each point for one input message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PointWork {
    /// Work per point, indexed by [`Point::index`].
    pub work: [Work; 5],
    /// Messages leaving the node per input message (at most).
    pub outputs: u64,
}

impl PointWork {
    /// The work at `p`.
    pub fn at(&self, p: Point) -> Work {
        self.work.get(p.index()).copied().unwrap_or_default()
    }

    /// Whether any work runs on the host.
    pub fn uses_host(&self) -> bool {
        self.at(Point::HostKernel) != Work::default() || self.at(Point::HostUser) != Work::default()
    }
}

/// A composition of stream handlers across deployment points.
#[derive(Debug, Default)]
pub struct Deployment {
    /// The stages, applied in order.
    pub stages: Vec<Stage>,
}

impl Deployment {
    /// An empty deployment (plain forwarding).
    pub fn new() -> Self {
        Self::default()
    }

    /// A deployment of one handler at `point`.
    pub fn single(point: Point, handler: Box<dyn StreamHandler>) -> Self {
        let mut d = Self::new();
        d.push(point, handler);
        d
    }

    /// Appends `handler` at `point`.
    pub fn push(&mut self, point: Point, handler: Box<dyn StreamHandler>) {
        self.stages.push(Stage { point, handler });
    }

    /// Runs the pipeline natively on `msg`: the messages that leave the node.
    pub fn run(&mut self, msg: Message) -> Vec<Message> {
        let mut cur = alloc::vec![msg];
        for s in &mut self.stages {
            let mut next = Vec::with_capacity(cur.len());
            for m in cur {
                s.handler.handle(m, &mut next);
            }
            cur = next;
        }
        cur
    }

    /// The work at each point for one message of `len` bytes: a stage after a fan-out runs
    /// once per copy. Every output is counted as sent (an upper bound for filters).
    pub fn work_by_point(&self, len: u64) -> PointWork {
        let mut pw = PointWork {
            outputs: 1,
            ..PointWork::default()
        };
        for s in &self.stages {
            let w = s.handler.work(len);
            let n = pw.outputs;
            if let Some(slot) = pw.work.get_mut(s.point.index()) {
                slot.instructions = slot
                    .instructions
                    .saturating_add(n.saturating_mul(w.instructions));
                slot.sram_words = slot
                    .sram_words
                    .saturating_add(n.saturating_mul(w.sram_words));
                slot.sdram_words = slot
                    .sdram_words
                    .saturating_add(n.saturating_mul(w.sdram_words));
                slot.outputs = slot.outputs.max(n.saturating_mul(w.outputs));
            }
            pw.outputs = n.saturating_mul(w.outputs);
        }
        pw
    }

    /// The same handlers, every NP stage moved to host user level: the fallback when the
    /// NP lacks headroom (paper §3.2).
    pub fn on_host(self) -> Self {
        Self {
            stages: self
                .stages
                .into_iter()
                .map(|s| Stage {
                    point: if s.point.on_np() {
                        Point::HostUser
                    } else {
                        s.point
                    },
                    handler: s.handler,
                })
                .collect(),
        }
    }

    /// How much of a message the whole pipeline must see: its stages' needs composed
    /// ([`Needs::then`]); an empty deployment needs nothing ([`Needs::Prefix`]`(0)`).
    pub fn needs(&self) -> Needs {
        self.stages
            .iter()
            .fold(Needs::Prefix(0), |n, s| n.then(s.handler.needs()))
    }

    /// Whether every stage runs on the NP.
    pub fn all_on_np(&self) -> bool {
        self.stages.iter().all(|s| s.point.on_np())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handlers::{ByteSwap, DestFilter, Filter, Mirror};
    use crate::stream::{Field, Predicate};
    use alloc::vec;

    #[test]
    fn stages_after_a_fan_out_run_per_copy() {
        let mut d = Deployment::single(Point::RxSide, Box::new(Mirror::new(vec![1, 2, 3])));
        d.push(Point::TxSide, Box::new(DestFilter::new(vec![])));
        let pw = d.work_by_point(1000);
        assert_eq!(pw.outputs, 3);
        assert_eq!(
            pw.at(Point::TxSide).instructions,
            3 * DestFilter::new(vec![]).work(1000).instructions
        );
        assert!(!pw.uses_host());
        assert!(d.all_on_np());
        let host = d.on_host();
        assert!(!host.all_on_np());
        assert!(host.work_by_point(1000).uses_host());
    }

    #[test]
    fn run_composes_natively() {
        let f = Field::new(0, 1);
        let mut d = Deployment::single(Point::RxSide, Box::new(Filter::new(Predicate::Lt(f, 5))));
        d.push(Point::InTransit, Box::new(ByteSwap));
        assert_eq!(d.run(Message::new(0, vec![9, 0, 0, 0])), vec![]);
        let out = d.run(Message::new(0, vec![1, 2, 3, 4]));
        assert_eq!(out, vec![Message::new(0, vec![4, 3, 2, 1])]);
        assert_eq!(Deployment::new().run(Message::new(7, vec![1])).len(), 1);
    }

    #[test]
    fn a_deployment_needs_what_its_stages_need() {
        let f = Field::new(6, 2);
        assert_eq!(Deployment::new().needs(), Needs::Prefix(0));
        let mut d = Deployment::single(Point::RxSide, Box::new(Mirror::new(vec![1, 2])));
        assert_eq!(d.needs(), Needs::Prefix(0));
        d.push(
            Point::TxSide,
            Box::new(DestFilter::new(vec![(1, Predicate::Lt(f, 5))])),
        );
        assert_eq!(d.needs(), Needs::Prefix(8));
        d.push(Point::InTransit, Box::new(ByteSwap));
        assert_eq!(d.needs(), Needs::Whole);
    }

    #[test]
    fn absurd_sizes_saturate_instead_of_overflowing() {
        let mut d = Deployment::single(Point::RxSide, Box::new(Mirror::new(vec![1, 2, 3])));
        d.push(Point::TxSide, Box::new(ByteSwap));
        let pw = d.work_by_point(u64::MAX);
        assert_eq!(pw.at(Point::TxSide).instructions, u64::MAX);
        assert_eq!(pw.at(Point::TxSide).sdram_words, u64::MAX);
    }
}
