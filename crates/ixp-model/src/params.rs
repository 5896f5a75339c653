//! Every cost in the model, in one place.
//!
//! [`Params`] holds the machine's physical figures: clocks, bus widths, access latencies,
//! instruction and context-switch cycles, FIFO and port sizes. Every other module reads its
//! costs from here and nowhere else; no table row of the reproductions has a number of its
//! own. [`Params::IXP1200`] is the Intel IXP1200 of the ESP paper (§5) and the
//! stream-handlers paper (§2, §4).
//!
//! Time is counted in **core cycles** (one cycle of the 232 MHz StrongARM and microengine
//! clock, ≈ 4.31 ns). Memories clocked slower (SDRAM at half clock) are charged in core
//! cycles too.
//!
//! Where a figure comes from:
//!
//! * *ESP paper* — Calvert, Griffioen, Wen, SIGCOMM'02, §5–§6 (`shared/seeds/000_…`).
//! * *SH paper* — Gavrilovska et al., network processors in overlays (`shared/seeds/001_…`).
//! * *IXP1200 datasheet* — Intel IXP1200 Network Processor Datasheet and Hardware Reference
//!   Manual (2000–2001): figures we quote from memory of those documents, rounded; each one
//!   is flagged as such on its field.

use core::fmt;

/// One of the IXP1200's data memories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Memory {
    /// Off-chip SRAM: 32-bit bus at the core clock; low latency, 8 MB.
    Sram,
    /// Off-chip SDRAM: 64-bit bus at half the core clock; higher latency, 256 MB.
    Sdram,
    /// On-chip scratchpad: 4 KB, lowest latency.
    Scratch,
}

impl Memory {
    /// All three memories, in a fixed order (for tables indexed by memory).
    pub const ALL: [Memory; 3] = [Memory::Sram, Memory::Sdram, Memory::Scratch];

    /// The memory's position in [`Memory::ALL`].
    pub const fn index(self) -> usize {
        match self {
            Memory::Sram => 0,
            Memory::Sdram => 1,
            Memory::Scratch => 2,
        }
    }
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Memory::Sram => "SRAM",
            Memory::Sdram => "SDRAM",
            Memory::Scratch => "scratch",
        })
    }
}

/// The machine's cost parameters. Field names are stable: later versions add fields, they
/// do not rename them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Core clock in MHz: the StrongARM and the microengines run at it (ESP paper §5:
    /// "StrongARM processor running at 232 MHz"; IXP1200 datasheet: microengines at core
    /// clock).
    pub core_mhz: u32,
    /// Microengines on the chip (ESP paper §5: "six on-chip microengines").
    pub microengines: u32,
    /// Hardware threads (contexts) per microengine (ESP paper §5: "each supporting four
    /// hardware threads").
    pub threads_per_engine: u32,
    /// Instruction-store size per microengine, in instruction words (IXP1200 datasheet:
    /// 2 K words of control store per microengine). Longer programs are rejected.
    pub instruction_store_words: u32,
    /// Cycles one microengine instruction takes (IXP1200 datasheet: single-issue pipeline,
    /// one instruction per cycle when not stalled).
    pub instruction_cycles: u32,
    /// Cycles lost when a thread swaps out on a memory reference and the arbiter starts the
    /// next ready thread (IXP1200 datasheet: the `ctx_arb` swap itself; the pipeline's
    /// aborted instructions are charged here too). Rounded figure from memory of the manual.
    pub context_switch_cycles: u32,
    /// Cycles a memory reference occupies the issuing engine before it can swap out (the
    /// `sram[...]` / `sdram[...]` instruction itself, address computation included).
    pub reference_issue_cycles: u32,

    /// SRAM capacity in bytes (ESP paper §5: "up to 8 MB of SRAM").
    pub sram_bytes: u32,
    /// SRAM data-bus width in bytes (ESP paper §6: "The SRAM has a 32-bit wide bus").
    pub sram_bus_bytes: u32,
    /// Core cycles per SRAM bus cycle (ESP paper §6: SRAM "runs at the core clock
    /// frequency (232MHz)", so 1).
    pub sram_clock_divisor: u32,
    /// Core cycles from issuing an SRAM read until its first word is back, unloaded
    /// (IXP1200 datasheet: ≈ 16–20 cycles from a microengine; we take 20).
    pub sram_read_latency_cycles: u32,
    /// Core cycles from issuing an SRAM write until its completion signal, unloaded (same
    /// unit and pins as a read; we take the read figure).
    pub sram_write_latency_cycles: u32,

    /// SDRAM capacity in bytes (ESP paper §5: "256 MB of SDRAM").
    pub sdram_bytes: u32,
    /// SDRAM data-bus width in bytes (ESP paper §6: "The SDRAM has a 64-bit wide bus").
    pub sdram_bus_bytes: u32,
    /// Core cycles per SDRAM bus cycle (ESP paper §6: SDRAM "operates at half of the SRAM
    /// frequency (116MHz)", so 2).
    pub sdram_clock_divisor: u32,
    /// Core cycles from issuing an SDRAM read until its first quadword is back, unloaded
    /// (IXP1200 datasheet: ≈ 33–40 cycles from a microengine; we take 40).
    pub sdram_read_latency_cycles: u32,
    /// Core cycles from issuing an SDRAM write until its completion signal, unloaded (we
    /// take the read figure).
    pub sdram_write_latency_cycles: u32,

    /// Scratchpad capacity in bytes (IXP1200 datasheet: 4 KB on-chip scratch).
    pub scratch_bytes: u32,
    /// Core cycles for a scratchpad access (IXP1200 datasheet: ≈ 12 cycles).
    pub scratch_latency_cycles: u32,
    /// Scratchpad bytes moved per core cycle once an access is under way (32-bit path).
    pub scratch_bus_bytes: u32,

    /// Bytes in an mpacket, the unit the receive and transmit FIFOs move (SH paper §2:
    /// "64-byte mpackets"; IXP1200 datasheet).
    pub mpacket_bytes: u32,
    /// Elements (one mpacket each) in the receive FIFO (IXP1200 datasheet: 16).
    pub rfifo_elements: u32,
    /// Elements (one mpacket each) in the transmit FIFO (IXP1200 datasheet: 16).
    pub tfifo_elements: u32,
    /// Ethernet ports on the IX bus (ESP paper §5: "four 100 Mbps Ethernet ports").
    pub ports: u32,
    /// Line rate of one port in Mb/s (ESP paper §5).
    pub port_mbps: u32,
    /// Bytes on the wire per frame beyond the frame itself: preamble and start delimiter
    /// (8) and inter-frame gap (12) (IEEE 802.3).
    pub ethernet_overhead_bytes: u32,
    /// Smallest Ethernet frame in bytes, FCS included (IEEE 802.3): the "minimum-sized
    /// packet" of ESP paper Table 3.
    pub min_frame_bytes: u32,
    /// IX bus width in bytes (IXP1200 datasheet: 64-bit IX bus).
    pub ix_bus_bytes: u32,
    /// IX bus clock in MHz (ESP paper §5: ports "accessed by the processor through a
    /// 104 MHz bus").
    pub ix_bus_mhz: u32,

    /// Microengine cycles to classify one packet as ESP and hash its tag with the hardware
    /// hash unit (ESP paper §6: "averaged 75 cycles per packet (about 0.32 microseconds)").
    pub classification_cycles: u32,
    /// Cycles of register arithmetic between two dependent memory references of an ESS
    /// call: forming the next address, comparing a fetched field, branching (a handful of
    /// microengine or StrongARM instructions; our count of the code of ESP paper §5.1).
    pub ess_step_cycles: u32,

    /// StrongARM core: average cycles per instruction of its ALU, load/store-to-cache and
    /// branch code, in thousandths (1300 = CPI 1.3). The SA-1100-derived core is a
    /// single-issue five-stage pipeline: one cycle per instruction, plus a load-use
    /// interlock and a 2-cycle refill on every taken branch (no branch prediction) — SA-110
    /// / SA-1100 technical reference manuals, instruction timing chapter; 1.3 is our
    /// rounded average for such code, flagged as a figure from memory of those manuals.
    pub core_cpi_milli: u32,
    /// StrongARM core: cycles an uncached load from SRAM stalls the core, from issue until
    /// the word is in its register. The core reaches SRAM over its own bus through the
    /// SRAM unit; IXP1200 hardware reference manual figure from memory, rounded: about the
    /// microengines' 16–20 cycles, the low end as the core's request skips the
    /// microengine command queues.
    pub core_sram_read_latency_cycles: u32,
    /// StrongARM core: cycles an uncached store to SRAM stalls the core. The ESS region is
    /// taken as unbuffered (a store completes before the next instruction), so a store
    /// costs what a load does.
    pub core_sram_write_latency_cycles: u32,
    /// StrongARM core: cycles an uncached load from SDRAM stalls the core (half-clock
    /// 64-bit SDRAM behind the same core bus; IXP1200 hardware reference manual figure
    /// from memory, rounded: the microengines' ≈ 33–40 cycles, we take 40). A 32-bit load
    /// gets no benefit from the 64-bit bus.
    pub core_sdram_read_latency_cycles: u32,
    /// StrongARM core: cycles an uncached store to SDRAM stalls the core (as a load).
    pub core_sdram_write_latency_cycles: u32,
}

impl Params {
    /// The IXP1200 of the ESP paper's Bridalveil board and the SH paper's testbed.
    pub const IXP1200: Params = Params {
        core_mhz: 232,
        microengines: 6,
        threads_per_engine: 4,
        instruction_store_words: 2048,
        instruction_cycles: 1,
        context_switch_cycles: 1,
        reference_issue_cycles: 1,
        sram_bytes: 8 << 20,
        sram_bus_bytes: 4,
        sram_clock_divisor: 1,
        sram_read_latency_cycles: 20,
        sram_write_latency_cycles: 20,
        sdram_bytes: 256 << 20,
        sdram_bus_bytes: 8,
        sdram_clock_divisor: 2,
        sdram_read_latency_cycles: 40,
        sdram_write_latency_cycles: 40,
        scratch_bytes: 4096,
        scratch_latency_cycles: 12,
        scratch_bus_bytes: 4,
        mpacket_bytes: 64,
        rfifo_elements: 16,
        tfifo_elements: 16,
        ports: 4,
        port_mbps: 100,
        ethernet_overhead_bytes: 20,
        min_frame_bytes: 64,
        ix_bus_bytes: 8,
        ix_bus_mhz: 104,
        classification_cycles: 75,
        ess_step_cycles: 4,
        core_cpi_milli: 1300,
        core_sram_read_latency_cycles: 16,
        core_sram_write_latency_cycles: 16,
        core_sdram_read_latency_cycles: 40,
        core_sdram_write_latency_cycles: 40,
    };

    /// Checks that every divisor and count is non-zero and every program limit sensible.
    ///
    /// # Errors
    ///
    /// [`ParamsError::Zero`] naming the first field that is zero.
    pub fn validate(&self) -> Result<(), ParamsError> {
        let nonzero = [
            ("core_mhz", self.core_mhz),
            ("microengines", self.microengines),
            ("threads_per_engine", self.threads_per_engine),
            ("instruction_store_words", self.instruction_store_words),
            ("sram_bus_bytes", self.sram_bus_bytes),
            ("sram_clock_divisor", self.sram_clock_divisor),
            ("sdram_bus_bytes", self.sdram_bus_bytes),
            ("sdram_clock_divisor", self.sdram_clock_divisor),
            ("scratch_bus_bytes", self.scratch_bus_bytes),
            ("mpacket_bytes", self.mpacket_bytes),
            ("rfifo_elements", self.rfifo_elements),
            ("tfifo_elements", self.tfifo_elements),
            ("ports", self.ports),
            ("port_mbps", self.port_mbps),
            ("ix_bus_bytes", self.ix_bus_bytes),
            ("ix_bus_mhz", self.ix_bus_mhz),
            ("core_cpi_milli", self.core_cpi_milli),
        ];
        match nonzero.iter().find(|(_, v)| *v == 0) {
            Some((name, _)) => Err(ParamsError::Zero(name)),
            None => Ok(()),
        }
    }

    /// Nanoseconds in `cycles` core cycles, rounded to nearest.
    pub fn cycles_to_ns(&self, cycles: u64) -> u64 {
        let mhz = u64::from(self.core_mhz.max(1));
        (cycles.saturating_mul(1000) + mhz / 2) / mhz
    }

    /// Microseconds in `cycles` core cycles.
    pub fn cycles_to_us(&self, cycles: f64) -> f64 {
        cycles / f64::from(self.core_mhz.max(1))
    }

    /// Core cycles in `ns` nanoseconds, rounded to nearest.
    pub fn ns_to_cycles(&self, ns: u64) -> u64 {
        (ns.saturating_mul(u64::from(self.core_mhz)) + 500) / 1000
    }

    /// Core cycles per second.
    pub fn core_hz(&self) -> u64 {
        u64::from(self.core_mhz) * 1_000_000
    }

    /// Headroom: core cycles of one processor (one microengine, or the StrongARM) between
    /// two packets arriving at `rate_pps` packets per second. Zero rate: `u64::MAX`.
    pub fn cycles_per_packet_at(&self, rate_pps: u64) -> u64 {
        self.core_hz().checked_div(rate_pps).unwrap_or(u64::MAX)
    }

    /// Headroom of all microengines together: `microengines ×`
    /// [`cycles_per_packet_at`](Self::cycles_per_packet_at).
    pub fn engine_cycles_per_packet_at(&self, rate_pps: u64) -> u64 {
        self.cycles_per_packet_at(rate_pps)
            .saturating_mul(u64::from(self.microengines))
    }

    /// Packets per second one port carries at line rate for frames of `frame_bytes` (the
    /// frame is raised to the minimum frame size; preamble and gap are added).
    pub fn line_rate_pps(&self, frame_bytes: u32) -> u64 {
        let wire_bits =
            u64::from(frame_bytes.max(self.min_frame_bytes) + self.ethernet_overhead_bytes) * 8;
        (u64::from(self.port_mbps) * 1_000_000)
            .checked_div(wire_bits)
            .unwrap_or(0)
    }

    /// Mpackets a packet of `len` bytes occupies in a FIFO (at least one).
    pub fn mpackets(&self, len: u32) -> u32 {
        len.div_ceil(self.mpacket_bytes.max(1)).max(1)
    }

    /// Bus width of `memory` in bytes.
    pub fn bus_bytes(&self, memory: Memory) -> u32 {
        match memory {
            Memory::Sram => self.sram_bus_bytes,
            Memory::Sdram => self.sdram_bus_bytes,
            Memory::Scratch => self.scratch_bus_bytes,
        }
        .max(1)
    }

    /// Core cycles the data bus of `memory` is occupied moving `words` 32-bit words: the
    /// bus transfers needed at its width, times its clock divisor. At least one transfer.
    pub fn occupancy_cycles(&self, memory: Memory, words: u32) -> u32 {
        let bytes = words.max(1).saturating_mul(4);
        let transfers = bytes.div_ceil(self.bus_bytes(memory));
        let divisor = match memory {
            Memory::Sram => self.sram_clock_divisor,
            Memory::Sdram => self.sdram_clock_divisor,
            Memory::Scratch => 1,
        };
        transfers.saturating_mul(divisor.max(1))
    }

    /// Unloaded latency of a read (`write == false`) or write to `memory`: cycles from
    /// issue until the first data (or the completion signal).
    pub fn latency_cycles(&self, memory: Memory, write: bool) -> u32 {
        match (memory, write) {
            (Memory::Sram, false) => self.sram_read_latency_cycles,
            (Memory::Sram, true) => self.sram_write_latency_cycles,
            (Memory::Sdram, false) => self.sdram_read_latency_cycles,
            (Memory::Sdram, true) => self.sdram_write_latency_cycles,
            (Memory::Scratch, _) => self.scratch_latency_cycles,
        }
    }

    /// Unloaded cost in core cycles of one reference moving `words` 32-bit words: latency
    /// to the first transfer, then one bus occupancy per further transfer. This is what a
    /// lone thread waits; [`crate::sim`] adds contention.
    pub fn access_cycles(&self, memory: Memory, words: u32, write: bool) -> u32 {
        let first = self.occupancy_cycles(memory, 1);
        self.latency_cycles(memory, write)
            .saturating_add(self.occupancy_cycles(memory, words).saturating_sub(first))
    }

    /// Cycles the StrongARM core stalls on one uncached 32-bit read (`write == false`) or
    /// write of `memory` (the scratchpad: the microengines' scratch latency).
    pub fn core_latency_cycles(&self, memory: Memory, write: bool) -> u32 {
        match (memory, write) {
            (Memory::Sram, false) => self.core_sram_read_latency_cycles,
            (Memory::Sram, true) => self.core_sram_write_latency_cycles,
            (Memory::Sdram, false) => self.core_sdram_read_latency_cycles,
            (Memory::Sdram, true) => self.core_sdram_write_latency_cycles,
            (Memory::Scratch, _) => self.scratch_latency_cycles,
        }
    }

    /// Core cycles the IX bus needs to move one mpacket between a port and a FIFO.
    pub fn ix_bus_mpacket_cycles(&self) -> u32 {
        let transfers = self.mpacket_bytes.div_ceil(self.ix_bus_bytes.max(1));
        // transfers at ix_bus_mhz, expressed in core cycles (rounded up).
        (transfers * self.core_mhz).div_ceil(self.ix_bus_mhz.max(1))
    }

    /// Core cycles to move one mpacket between a FIFO and SDRAM (the receive/transmit path's
    /// DMA: one SDRAM reference of `mpacket_bytes`).
    pub fn fifo_transfer_cycles(&self) -> u32 {
        self.access_cycles(Memory::Sdram, self.mpacket_bytes / 4, false)
    }

    /// Core cycles a frame of `frame_bytes` takes on one port's wire (with overhead).
    pub fn wire_cycles(&self, frame_bytes: u32) -> u64 {
        let bits =
            u64::from(frame_bytes.max(self.min_frame_bytes) + self.ethernet_overhead_bytes) * 8;
        (bits * u64::from(self.core_mhz)).div_ceil(u64::from(self.port_mbps.max(1)))
    }
}

impl Default for Params {
    fn default() -> Self {
        Params::IXP1200
    }
}

/// [`Params::validate`] found an unusable parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamsError {
    /// This field is zero but is a divisor or a count that must be positive.
    Zero(&'static str),
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamsError::Zero(name) => write!(f, "parameter {name} must be non-zero"),
        }
    }
}

impl core::error::Error for ParamsError {}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    const P: Params = Params::IXP1200;

    #[test]
    fn ixp1200_is_valid() {
        assert_eq!(P.validate(), Ok(()));
        let mut bad = P;
        bad.sdram_clock_divisor = 0;
        assert_eq!(
            bad.validate(),
            Err(ParamsError::Zero("sdram_clock_divisor"))
        );
    }

    #[test]
    fn conversions() {
        // 75 cycles at 232 MHz is "about 0.32 microseconds" (ESP paper §6).
        assert_eq!(P.cycles_to_ns(75), 323);
        assert_eq!(P.ns_to_cycles(1000), 232);
        assert!((P.cycles_to_us(232.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn headroom_and_line_rate() {
        // Minimum frames on 100 Mb/s: 84 bytes on the wire → 148,809 pps.
        assert_eq!(P.line_rate_pps(64), 148_809);
        assert_eq!(P.line_rate_pps(10), 148_809);
        assert_eq!(P.cycles_per_packet_at(148_809), 1559);
        assert_eq!(P.engine_cycles_per_packet_at(148_809), 6 * 1559);
        assert_eq!(P.cycles_per_packet_at(0), u64::MAX);
        // 84 bytes × 8 bits at 100 Mb/s = 6.72 µs = 1559.04 cycles, rounded up.
        assert_eq!(P.wire_cycles(64), 1560);
    }

    #[test]
    fn bus_widths_and_clocks() {
        // SRAM: 4 bytes per core cycle; SDRAM: 8 bytes per two core cycles.
        assert_eq!(P.occupancy_cycles(Memory::Sram, 1), 1);
        assert_eq!(P.occupancy_cycles(Memory::Sram, 4), 4);
        assert_eq!(P.occupancy_cycles(Memory::Sdram, 1), 2);
        assert_eq!(P.occupancy_cycles(Memory::Sdram, 2), 2);
        assert_eq!(P.occupancy_cycles(Memory::Sdram, 3), 4);
        // A 2-word read: latency then one more bus transfer on SRAM, none on SDRAM.
        assert_eq!(P.access_cycles(Memory::Sram, 2, false), 21);
        assert_eq!(P.access_cycles(Memory::Sdram, 2, false), 40);
        assert_eq!(P.access_cycles(Memory::Scratch, 1, true), 12);
        // One mpacket FIFO↔SDRAM: 40 + 7 further quadwords × 2 cycles.
        assert_eq!(P.fifo_transfer_cycles(), 54);
        // 8 IX-bus transfers at 104 MHz = 17.8 core cycles → 18.
        assert_eq!(P.ix_bus_mpacket_cycles(), 18);
        assert_eq!(P.mpackets(0), 1);
        assert_eq!(P.mpackets(65), 2);
    }

    #[test]
    fn memory_display_and_index() {
        for (i, m) in Memory::ALL.iter().enumerate() {
            assert_eq!(m.index(), i);
        }
        assert_eq!(Memory::Sdram.to_string(), "SDRAM");
    }
}
