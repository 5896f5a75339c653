//! What stream handlers' [`Work`] costs on the IXP1200: [`HandlerCosts`] (the machine's
//! [`Params`] plus the stream-handler runtime's instruction counts) and [`NpCycles`], which
//! prices a handler's plain counts in microengine cycles.
//!
//! The handlers themselves, and the counts they report, are in the `stream-handlers` crate;
//! this module is where those counts meet the chip. The host's side of the same pricing is
//! [`crate::host::HostParams::handler_ns`].

use stream_handlers::Work;

use crate::engine::{Program, Step};
use crate::params::{Memory, Params};

/// Prices a handler's [`Work`] on one microengine context.
pub trait NpCycles {
    /// Cycles on one microengine context: one cycle per instruction plus the full latency
    /// of every memory reference. A single context runs a message's handler, so its
    /// references are not hidden behind its own work (other threads' work may fill the
    /// engine meanwhile, which the throughput model counts separately).
    fn np_cycles(&self, c: &HandlerCosts) -> u64;
}

impl NpCycles for Work {
    fn np_cycles(&self, c: &HandlerCosts) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use stream_handlers::words;

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

    #[test]
    fn absurd_work_saturates_instead_of_overflowing() {
        let w = Work {
            instructions: u64::MAX,
            ..Work::default()
        };
        assert_eq!(w.np_cycles(&HandlerCosts::IXP1200), u64::MAX);
    }
}
