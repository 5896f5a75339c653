//! Admission control by headroom (paper §3.2): "compute the total number of cycles that can
//! be allocated to a single packet's processing (i.e., headroom) and compare this number
//! with the number of cycles consumed by the stream handler being deployed … If ANP-level
//! resources are not available, handlers are executed on the host".
//!
//! [`Admission`] computes, at the offered packet rate, the context cycles per packet the
//! runtime's engines provide (engines × threads × clock / rate), subtracts the fixed Rx and
//! Tx protocol cost of a packet, and admits a deployment to the NP only if its handlers'
//! cycles per packet fit; it also requires their instructions to fit the engines' issue
//! cycles (engines × clock / rate), since threads hide latency but do not add issue slots.
//! [`Controller`] applies [`ControlMessage`]s: rate changes and handler parameters at run
//! time.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::costs::{HandlerCosts, NpCycles};
use crate::path::PathParams;
use stream_handlers::control::{ControlError, ControlMessage};
use stream_handlers::deploy::{Deployment, Point};
use stream_handlers::{HandlerError, Needs, Param, StreamHandler};

/// Where admission put a deployment, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the NP runs it (else the host does).
    pub on_np: bool,
    /// Context cycles per packet left after the fixed Rx/Tx cost.
    pub headroom: u64,
    /// Context cycles per packet the handlers need.
    pub cost: u64,
    /// Issue cycles per packet left after the fixed Rx/Tx instructions.
    pub issue_headroom: u64,
    /// Instructions per packet the handlers execute.
    pub instructions: u64,
}

/// The admission-control unit's view of the NP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Admission {
    /// The machine's costs.
    pub costs: HandlerCosts,
    /// Packet sizes.
    pub path: PathParams,
    /// Microengines given to the stream-handler runtime.
    pub engines: u64,
    /// Offered load on the input port, packets per second.
    pub offered_pps: u64,
}

impl Admission {
    /// All of the IXP1200's engines, at `offered_pps`.
    pub fn new(offered_pps: u64) -> Self {
        let costs = HandlerCosts::IXP1200;
        Self {
            costs,
            path: PathParams::PAPER,
            engines: u64::from(costs.params.microengines),
            offered_pps,
        }
    }

    fn per_packet(&self, per_second: u64) -> u64 {
        per_second.checked_div(self.offered_pps).unwrap_or(u64::MAX)
    }

    /// Context cycles per packet: engines × threads × clock / rate.
    pub fn context_budget(&self) -> u64 {
        let threads = u64::from(self.costs.params.threads_per_engine);
        self.per_packet(
            self.costs
                .params
                .core_hz()
                .saturating_mul(self.engines)
                .saturating_mul(threads),
        )
    }

    /// Issue cycles per packet: engines × clock / rate.
    pub fn issue_budget(&self) -> u64 {
        self.per_packet(self.costs.params.core_hz().saturating_mul(self.engines))
    }

    /// Packets of a `len`-byte message and their mean payload.
    fn packets(&self, len: u64) -> (u64, u64) {
        let n = self.path.packet_count(len);
        (n, len / n)
    }

    /// The fixed context cycles per packet: receive it, transmit each of `outputs` copies.
    pub fn fixed_per_packet(&self, payload: u64, outputs: u64) -> u64 {
        let mp = self.costs.mpackets(self.path.frame(payload));
        let rx = mp * self.costs.rx_mpacket_cycles() + self.costs.rudp_packet_cycles();
        let tx = mp * self.costs.tx_mpacket_cycles() + self.costs.rudp_packet_cycles();
        rx.saturating_add(outputs.saturating_mul(tx))
    }

    /// Fixed instructions per packet (the same paths, instructions only).
    fn fixed_instructions(&self, payload: u64, outputs: u64) -> u64 {
        let mp = self.costs.mpackets(self.path.frame(payload));
        let rx = mp * self.costs.rx_mpacket_instructions + self.costs.rudp_packet_instructions;
        let tx = mp * self.costs.tx_mpacket_instructions + self.costs.rudp_packet_instructions;
        rx.saturating_add(outputs.saturating_mul(tx))
    }

    /// The admission decision for `dep` on `len`-byte messages (host stages do not count
    /// against the NP).
    pub fn decide(&self, dep: &Deployment, len: u64) -> Decision {
        let pw = dep.work_by_point(len);
        let (n, payload) = self.packets(len);
        let (mut cycles, mut instr) = (0u64, 0u64);
        for p in [Point::RxSide, Point::InTransit, Point::TxSide] {
            let w = pw.at(p);
            cycles = cycles.saturating_add(w.np_cycles(&self.costs));
            instr = instr.saturating_add(w.instructions);
        }
        let cost = cycles.div_ceil(n);
        let instructions = instr.div_ceil(n);
        let headroom = self
            .context_budget()
            .saturating_sub(self.fixed_per_packet(payload, pw.outputs));
        let issue_headroom = self
            .issue_budget()
            .saturating_sub(self.fixed_instructions(payload, pw.outputs));
        Decision {
            on_np: cost <= headroom && instructions <= issue_headroom,
            headroom,
            cost,
            issue_headroom,
            instructions,
        }
    }

    /// Places `dep`: unchanged if admitted to the NP, else every NP stage moved to the host.
    pub fn place(&self, dep: Deployment, len: u64) -> (Deployment, Decision) {
        let d = self.decide(&dep, len);
        if d.on_np {
            (dep, d)
        } else {
            (dep.on_host(), d)
        }
    }
}

/// Why a control message could not be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// It did not parse.
    Parse(ControlError),
    /// No handler has that index.
    NoSuchHandler(u16),
    /// The handler refused the parameter.
    Handler(HandlerError),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Parse(e) => write!(f, "control message: {e}"),
            Self::NoSuchHandler(h) => write!(f, "no handler {h}"),
            Self::Handler(e) => write!(f, "handler: {e}"),
        }
    }
}

impl core::error::Error for ApplyError {}

/// What a control message did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The offered rate changed.
    Rate(u32),
    /// A handler took a new parameter.
    Configured(u16),
    /// A stream now uses a handler.
    Selected {
        /// The stream.
        stream: u16,
        /// Its handler.
        handler: u16,
    },
    /// A stream was terminated.
    Terminated(u16),
}

/// The NP's control side: the pre-existing handlers, which stream uses which, the rate.
pub struct Controller {
    /// Admission state (its `offered_pps` follows `SetRate`).
    pub admission: Admission,
    /// The handlers, by index.
    pub handlers: Vec<Box<dyn StreamHandler>>,
    /// Stream → handler index.
    pub streams: Vec<(u16, u16)>,
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("admission", &self.admission)
            .field("handlers", &self.handlers.len())
            .field("streams", &self.streams)
            .finish()
    }
}

impl Controller {
    /// A controller over `handlers`.
    pub fn new(admission: Admission, handlers: Vec<Box<dyn StreamHandler>>) -> Self {
        Self {
            admission,
            handlers,
            streams: Vec::new(),
        }
    }

    /// Parses and applies one control message.
    ///
    /// # Errors
    ///
    /// [`ApplyError`]; nothing changes then.
    pub fn apply(&mut self, bytes: &[u8]) -> Result<Applied, ApplyError> {
        match ControlMessage::parse(bytes).map_err(ApplyError::Parse)? {
            ControlMessage::SetRate { rate } => {
                self.admission.offered_pps = u64::from(rate);
                Ok(Applied::Rate(rate))
            }
            ControlMessage::SetPredicate { handler, predicate } => {
                self.configure(handler, Param::Predicate(predicate))
            }
            ControlMessage::SetFanOut { handler, n } => self.configure(handler, Param::FanOut(n)),
            ControlMessage::SetRoute {
                handler,
                value,
                dest,
            } => self.configure(handler, Param::Route(value, dest)),
            ControlMessage::SetDestPredicate {
                handler,
                dest,
                predicate,
            } => self.configure(handler, Param::DestPredicate(dest, predicate)),
            ControlMessage::Select { stream, handler } => {
                if usize::from(handler) >= self.handlers.len() {
                    return Err(ApplyError::NoSuchHandler(handler));
                }
                self.streams.retain(|s| s.0 != stream);
                self.streams.push((stream, handler));
                Ok(Applied::Selected { stream, handler })
            }
            ControlMessage::Terminate { stream } => {
                self.streams.retain(|s| s.0 != stream);
                Ok(Applied::Terminated(stream))
            }
        }
    }

    fn configure(&mut self, h: u16, param: Param) -> Result<Applied, ApplyError> {
        let handler = self
            .handlers
            .get_mut(usize::from(h))
            .ok_or(ApplyError::NoSuchHandler(h))?;
        handler.configure(param).map_err(ApplyError::Handler)?;
        Ok(Applied::Configured(h))
    }

    /// Whether handler `h` fits the NP at the current rate on `len`-byte messages, deployed
    /// at `point`.
    pub fn decide(&self, h: u16, point: Point, len: u64) -> Option<Decision> {
        let handler = self.handlers.get(usize::from(h))?;
        let w = handler.work(len);
        let dep = Deployment::single(point, Box::new(Fixed(w, handler.name())));
        Some(self.admission.decide(&dep, len))
    }
}

/// A stand-in with a fixed work, for pricing a handler held elsewhere.
struct Fixed(stream_handlers::Work, &'static str);

impl StreamHandler for Fixed {
    fn name(&self) -> &'static str {
        self.1
    }
    fn handle(&mut self, msg: stream_handlers::Message, out: &mut Vec<stream_handlers::Message>) {
        out.push(msg);
    }
    fn work(&self, _len: u64) -> stream_handlers::Work {
        self.0
    }
    fn needs(&self) -> Needs {
        Needs::Prefix(0)
    }
    fn configure(&mut self, _p: Param) -> Result<(), HandlerError> {
        Err(HandlerError::UnsupportedParam)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use stream_handlers::handlers::{ByteSwap, Mirror};

    #[test]
    fn format_fits_at_low_rates_and_falls_back_to_the_host_at_line_rate() {
        let dep = || Deployment::single(Point::InTransit, Box::new(ByteSwap));
        // All six engines at 1,000 packets/s; one engine at 40,000.
        let slow = Admission::new(1_000);
        let (d, dec) = slow.place(dep(), 50_000);
        assert!(dec.on_np && d.all_on_np(), "{dec:?}");
        let fast = Admission {
            engines: 1,
            ..Admission::new(40_000)
        };
        let (d, dec) = fast.place(dep(), 50_000);
        assert!(!dec.on_np && !d.all_on_np(), "{dec:?}");
        assert!(dec.cost > dec.headroom || dec.instructions > dec.issue_headroom);
    }

    #[test]
    fn control_messages_change_rate_and_parameters() {
        let mut c = Controller::new(
            Admission::new(1_000),
            vec![Box::new(Mirror::new(vec![1])), Box::new(ByteSwap)],
        );
        let enc = |m: ControlMessage| {
            let mut b = Vec::new();
            m.emit(&mut b);
            b
        };
        let before = c.decide(0, Point::RxSide, 1_000).unwrap();
        assert_eq!(
            c.apply(&enc(ControlMessage::SetFanOut { handler: 0, n: 3 })),
            Ok(Applied::Configured(0))
        );
        let after = c.decide(0, Point::RxSide, 1_000).unwrap();
        assert!(after.cost > before.cost);
        assert_eq!(
            c.apply(&enc(ControlMessage::SetFanOut { handler: 1, n: 3 })),
            Err(ApplyError::Handler(HandlerError::UnsupportedParam))
        );
        assert_eq!(
            c.apply(&enc(ControlMessage::SetFanOut { handler: 5, n: 3 })),
            Err(ApplyError::NoSuchHandler(5))
        );
        assert_eq!(
            c.apply(&enc(ControlMessage::SetRate { rate: 200_000 })),
            Ok(Applied::Rate(200_000))
        );
        assert!(c.decide(1, Point::InTransit, 50_000).unwrap().headroom < before.headroom);
        assert!(
            c.apply(&enc(ControlMessage::Select {
                stream: 4,
                handler: 1
            }))
            .is_ok()
        );
        assert_eq!(c.streams, vec![(4, 1)]);
        assert!(
            c.apply(&enc(ControlMessage::Terminate { stream: 4 }))
                .is_ok()
        );
        assert!(c.streams.is_empty());
        assert!(matches!(c.apply(&[1]), Err(ApplyError::Parse(_))));
    }
}
