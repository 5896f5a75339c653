//! The [`StreamHandler`] trait: an application-level function applied to messages on the
//! data path, with a cost derived from what it does.
//!
//! A handler sees one assembled application message ([`Message`]) and pushes zero or more
//! output messages, each with its [`Destination`]. It runs natively: `handle` transforms real
//! bytes, with no cost model, so the same handler can later run on a router node's links.
//! Separately, [`StreamHandler::work`] says what the handler does to a message of a given
//! length (instructions, 32-bit words read and written in SRAM and SDRAM, output copies);
//! [`Work::np_cycles`] prices that on a microengine context with [`HandlerCosts`], and
//! [`crate::host::HostParams::handler_ns`] on the host. Costs are derived from the handler's
//! algorithm, never fitted per figure.
//!
//! Message bodies are described by compact binary formats (paper §3.1): a handler reads a
//! [`Field`] at a known offset and width, as NP code reads header fields.

use alloc::vec::Vec;
use core::fmt;

use crate::engine::{Program, Step};
use crate::params::{Memory, Params};

/// Where a message goes: an overlay destination (a port/peer index).
pub type Destination = u16;

/// One application-level message on the data path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The destination it is addressed to.
    pub dest: Destination,
    /// The application bytes (the assembled message, no RUDP headers).
    pub payload: Vec<u8>,
}

impl Message {
    /// A message to `dest` carrying `payload`.
    pub fn new(dest: Destination, payload: Vec<u8>) -> Self {
        Self { dest, payload }
    }
}

/// A field of the message body: `width` bytes (1, 2 or 4) big-endian at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Byte offset from the start of the payload.
    pub offset: u16,
    /// Width in bytes: 1, 2 or 4 (anything else reads as 4).
    pub width: u8,
}

impl Field {
    /// The field `width` bytes wide at `offset`.
    pub const fn new(offset: u16, width: u8) -> Self {
        Self { offset, width }
    }

    /// The field's value in `payload`, or `None` if the payload is too short.
    pub fn read(&self, payload: &[u8]) -> Option<u32> {
        let w = match self.width {
            1 => 1,
            2 => 2,
            _ => 4,
        };
        let start = usize::from(self.offset);
        let bytes = payload.get(start..start.checked_add(w)?)?;
        Some(bytes.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
    }
}

/// A comparison a filter applies to a [`Field`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Predicate {
    /// Keep every message.
    All,
    /// Keep messages whose field equals the value.
    Eq(Field, u32),
    /// Keep messages whose field is below the value.
    Lt(Field, u32),
    /// Keep messages whose field is at least the value.
    Ge(Field, u32),
    /// Keep messages whose field lies in `lo..=hi` (a bounding box edge, a threshold band).
    Range(Field, u32, u32),
}

impl Predicate {
    /// Whether `payload` passes. A payload too short to hold the field does not pass.
    pub fn matches(&self, payload: &[u8]) -> bool {
        match *self {
            Self::All => true,
            Self::Eq(f, v) => f.read(payload) == Some(v),
            Self::Lt(f, v) => f.read(payload).is_some_and(|x| x < v),
            Self::Ge(f, v) => f.read(payload).is_some_and(|x| x >= v),
            Self::Range(f, lo, hi) => f.read(payload).is_some_and(|x| lo <= x && x <= hi),
        }
    }

    /// Instructions to evaluate it on a microengine (load, mask/shift, compare, branch).
    pub const fn instructions(&self) -> u64 {
        match self {
            Self::All => 1,
            Self::Eq(..) | Self::Lt(..) | Self::Ge(..) => 6,
            Self::Range(..) => 9,
        }
    }

    /// Payload words it reads (the word holding its field).
    pub const fn words_read(&self) -> u64 {
        match self {
            Self::All => 0,
            _ => 1,
        }
    }
}

/// What a handler does to one message: the inputs of its cost on either machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Instructions executed (microengine instructions; the host runs the same algorithm).
    pub instructions: u64,
    /// 32-bit words read or written in SRAM (tables, queue descriptors).
    pub sram_words: u64,
    /// 32-bit words of the message read or written in SDRAM (where message buffers live).
    pub sdram_words: u64,
    /// Output messages it emits at most (each one a send on the way out).
    pub outputs: u64,
}

impl Work {
    /// The sum of two pieces of work (a composition runs both).
    #[must_use]
    pub const fn plus(self, o: Work) -> Work {
        Work {
            instructions: self.instructions.saturating_add(o.instructions),
            sram_words: self.sram_words.saturating_add(o.sram_words),
            sdram_words: self.sdram_words.saturating_add(o.sdram_words),
            outputs: if o.outputs > self.outputs {
                o.outputs
            } else {
                self.outputs
            },
        }
    }

    /// Cycles on one microengine context: one cycle per instruction plus the full latency
    /// of every memory reference. A single context runs a message's handler, so its
    /// references are not hidden behind its own work (other threads' work may fill the
    /// engine meanwhile, which the throughput model counts separately).
    pub fn np_cycles(&self, c: &HandlerCosts) -> u64 {
        self.instructions
            .saturating_mul(c.instruction_cycles())
            .saturating_add(self.sram_words.saturating_mul(c.sram_cycles()))
            .saturating_add(self.sdram_words.saturating_mul(c.sdram_cycles()))
    }
}

/// Microengine costs of the data path and handlers, in core cycles: the machine's
/// [`Params`] (memory latencies, bus widths, mpacket size, ports, engines, clock) plus the
/// instruction counts of the receive, transmit and RUDP code, which `Params` does not hold
/// (they belong to the stream-handler runtime, not the chip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerCosts {
    /// The machine.
    pub params: Params,
    /// Instructions a receive thread runs per mpacket besides its memory references:
    /// RFIFO element check, buffer pointer arithmetic, end-of-packet test (~20).
    pub rx_mpacket_instructions: u64,
    /// Instructions a transmit thread runs per mpacket: TFIFO slot, port handshake (~20).
    pub tx_mpacket_instructions: u64,
    /// Instructions per RUDP packet on either side: header parse or build, sequence check,
    /// acknowledgement bookkeeping (~40).
    pub rudp_packet_instructions: u64,
}

impl HandlerCosts {
    /// The IXP1200 of the paper (§2) with the runtime's instruction counts.
    pub const IXP1200: HandlerCosts = HandlerCosts {
        params: Params::IXP1200,
        rx_mpacket_instructions: 20,
        tx_mpacket_instructions: 20,
        rudp_packet_instructions: 40,
    };

    /// Core clock, Hz.
    pub fn clock_hz(&self) -> f64 {
        self.params.core_hz() as f64
    }

    /// Cycles per instruction.
    pub fn instruction_cycles(&self) -> u64 {
        u64::from(self.params.instruction_cycles)
    }

    /// One 32-bit SRAM reference seen by a context: its issue plus its unloaded access
    /// time, as the machine model charges it ([`Program::unloaded_cycles`]).
    pub fn sram_cycles(&self) -> u64 {
        Program::new(alloc::vec![Step::read(Memory::Sram, 1)])
            .unloaded_cycles(&self.params)
            .saturating_sub(self.loop_cycles())
    }

    /// One 32-bit SDRAM reference seen by a context (issue plus unloaded access).
    pub fn sdram_cycles(&self) -> u64 {
        Program::new(alloc::vec![Step::read(Memory::Sdram, 1)])
            .unloaded_cycles(&self.params)
            .saturating_sub(self.loop_cycles())
    }

    /// The loop-back instruction `unloaded_cycles` adds to every program.
    fn loop_cycles(&self) -> u64 {
        Program::new(alloc::vec![]).unloaded_cycles(&self.params)
    }

    /// A receive thread's program per mpacket: the instructions, the RFIFO → SDRAM move
    /// (IX bus, SDRAM burst), one SRAM descriptor write.
    pub fn rx_mpacket_program(&self) -> Program {
        Program::new(alloc::vec![
            Step::Compute(u32::try_from(self.rx_mpacket_instructions).unwrap_or(u32::MAX)),
            Step::ReceiveMpacket,
            Step::write(Memory::Sram, 1),
        ])
    }

    /// A transmit thread's program per mpacket: the instructions, one SRAM descriptor
    /// read, the SDRAM → TFIFO move.
    pub fn tx_mpacket_program(&self) -> Program {
        Program::new(alloc::vec![
            Step::Compute(u32::try_from(self.tx_mpacket_instructions).unwrap_or(u32::MAX)),
            Step::read(Memory::Sram, 1),
            Step::TransmitMpacket,
        ])
    }

    /// The RUDP program per packet: the instructions, a flow-state read and write in SRAM.
    pub fn rudp_packet_program(&self) -> Program {
        Program::new(alloc::vec![
            Step::Compute(u32::try_from(self.rudp_packet_instructions).unwrap_or(u32::MAX)),
            Step::read(Memory::Sram, 1),
            Step::write(Memory::Sram, 1),
        ])
    }

    /// Receive-thread cycles per mpacket ([`Self::rx_mpacket_program`], one thread alone).
    pub fn rx_mpacket_cycles(&self) -> u64 {
        self.rx_mpacket_program().unloaded_cycles(&self.params)
    }

    /// Transmit-thread cycles per mpacket ([`Self::tx_mpacket_program`], one thread alone).
    pub fn tx_mpacket_cycles(&self) -> u64 {
        self.tx_mpacket_program().unloaded_cycles(&self.params)
    }

    /// Cycles per RUDP packet ([`Self::rudp_packet_program`], one thread alone).
    pub fn rudp_packet_cycles(&self) -> u64 {
        self.rudp_packet_program().unloaded_cycles(&self.params)
    }

    /// Mpacket size, bytes.
    pub fn mpacket_bytes(&self) -> u64 {
        u64::from(self.params.mpacket_bytes)
    }

    /// Port line rate, bits per second.
    pub fn port_bps(&self) -> f64 {
        f64::from(self.params.port_mbps) * 1e6
    }

    /// Nanoseconds for `cycles` core cycles.
    pub fn ns(&self, cycles: u64) -> f64 {
        cycles as f64 * 1e9 / self.clock_hz()
    }

    /// Mpackets a frame of `bytes` occupies (at least one).
    pub fn mpackets(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mpacket_bytes().max(1)).max(1)
    }
}

impl Default for HandlerCosts {
    fn default() -> Self {
        Self::IXP1200
    }
}

/// A handler parameter a control message may change at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Replace a filter's predicate.
    Predicate(Predicate),
    /// Set a mirror's fan-out to destinations `0..n`.
    FanOut(u16),
    /// Set a content route: field value → destination.
    Route(u32, Destination),
}

/// Why a handler refused a message or a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerError {
    /// The parameter does not apply to this handler.
    UnsupportedParam,
    /// The route table is full.
    TableFull,
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedParam => f.write_str("parameter does not apply to this handler"),
            Self::TableFull => f.write_str("handler table is full"),
        }
    }
}

impl core::error::Error for HandlerError {}

/// A stream handler: lightweight, composable, parameterisable (paper §3.1).
pub trait StreamHandler {
    /// A short name (the paper's vocabulary: "route", "mirror", "filter", …).
    fn name(&self) -> &'static str;

    /// Applies the handler to `msg`, pushing its outputs onto `out` (none: dropped).
    fn handle(&mut self, msg: Message, out: &mut Vec<Message>);

    /// What handling one message of `len` payload bytes costs (an upper bound: every
    /// output counted as sent).
    fn work(&self, len: u64) -> Work;

    /// Changes a parameter at run time (a control message's effect).
    ///
    /// # Errors
    ///
    /// [`HandlerError::UnsupportedParam`] if the handler has no such parameter, or
    /// [`HandlerError::TableFull`] if a table cannot take it.
    fn configure(&mut self, param: Param) -> Result<(), HandlerError>;
}

/// Words of a `len`-byte payload (rounded up).
pub const fn words(len: u64) -> u64 {
    len.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn fields_read_big_endian_and_refuse_short_payloads() {
        let p = [0x12, 0x34, 0x56, 0x78, 0x9a];
        assert_eq!(Field::new(0, 1).read(&p), Some(0x12));
        assert_eq!(Field::new(1, 2).read(&p), Some(0x3456));
        assert_eq!(Field::new(1, 4).read(&p), Some(0x3456_789a));
        assert_eq!(Field::new(2, 4).read(&p), None);
        assert_eq!(Field::new(u16::MAX, 4).read(&p), None);
    }

    #[test]
    fn predicates_compare_and_drop_short_messages() {
        let f = Field::new(0, 2);
        let m = vec![0, 7, 1];
        assert!(Predicate::Eq(f, 7).matches(&m));
        assert!(!Predicate::Eq(f, 8).matches(&m));
        assert!(Predicate::Lt(f, 8).matches(&m));
        assert!(Predicate::Ge(f, 7).matches(&m));
        assert!(Predicate::Range(f, 5, 7).matches(&m));
        assert!(!Predicate::Range(f, 8, 9).matches(&m));
        assert!(!Predicate::Ge(f, 0).matches(&[1]));
        assert!(Predicate::All.matches(&[]));
    }

    #[test]
    fn np_cycles_charge_instructions_and_memory_latency() {
        let c = HandlerCosts::IXP1200;
        let w = Work {
            instructions: 10,
            sram_words: 2,
            sdram_words: 3,
            outputs: 1,
        };
        assert_eq!(c.sram_cycles(), 21);
        assert_eq!(c.sdram_cycles(), 41);
        assert_eq!(w.np_cycles(&c), 10 + 2 * 21 + 3 * 41);
        let both = w.plus(Work { outputs: 3, ..w });
        assert_eq!(both.np_cycles(&c), 2 * w.np_cycles(&c));
        assert_eq!(both.outputs, 3);
        assert!((c.ns(232) - 1000.0).abs() < 1e-9);
        assert!(c.rx_mpacket_cycles() > c.sdram_cycles());
        assert!(c.rudp_packet_cycles() > 2 * c.sram_cycles());
        assert_eq!(c.mpackets(65), 2);
        assert_eq!(words(5), 2);
    }
}
