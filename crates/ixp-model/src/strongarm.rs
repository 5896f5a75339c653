//! The StrongARM core as the ESS/ESP executor: what the ESP paper measured Tables 1–2 on.
//!
//! ESP paper §6: the microengines "detect ESP packets \[and\] dispatch them to the core
//! processor for further processing"; Table 2's latencies "are taken on the StrongARM
//! processor and factor out the cost of transferring data to/from the core". So the paper's
//! ESS calls ran as ordinary code on the 232 MHz StrongARM, not as microengine programs.
//!
//! [`Core`] is that processor: one in-order core with **no** hardware threads. Code is a
//! sequence of [`CoreStep`]s — runs of ALU/branch instructions charged at
//! [`Params::core_cpi_milli`], and uncached 32-bit memory references that stall the core for
//! their full latency ([`Params::core_latency_cycles`]); nothing overlaps.
//!
//! How many instructions the core runs is not invented per call: [`CoreCode::MEASURED`]
//! holds counts measured with callgrind on our own implementations (the `ess` store's
//! calls, `esp-proto`'s `process` of a COUNT and a COMPARE packet), x86-64 instruction counts
//! standing in for ARM ones. The memory references stay Table 1's: 5·cl, 5 + 5·cl, 2 and 2
//! 32-bit accesses, each in the memory the [`EssPlacement`] puts its table in
//! ([`call_steps`], [`instruction_steps`]).
//!
//! [`pipeline_run`] is the whole ESP path with the core as the bottleneck: every microengine
//! thread classifies packets (75 cycles each) and hands them to the core, which runs them
//! one at a time.
//!
//! ```
//! use ixp_model::esp::{EspCase, EspInstruction, LookupStyle};
//! use ixp_model::ess_model::EssPlacement;
//! use ixp_model::strongarm::{instruction_steps, Core, CoreCode};
//! use ixp_model::Params;
//!
//! let p = Params::IXP1200;
//! let case = EspCase::bound(LookupStyle::Once);
//! let code = CoreCode::MEASURED;
//! let run = |pl| Core::new(p).run(&instruction_steps(&code, EspInstruction::Count, &pl, &case));
//! let (sram, sdram) = (run(EssPlacement::SRAM), run(EssPlacement::SDRAM));
//! assert_eq!(sram.accesses, 9); // find_create 5 + read 2 + write 2
//! assert!(sram.micros(&p) > 2.0 && sram.micros(&p) < 4.0); // the paper: 2.62 µs
//! assert!(sdram.cycles() > sram.cycles()); // every access stalls longer
//! ```

use alloc::vec::Vec;

use crate::esp::{EspCase, EspInstruction};
use crate::ess_model::{EssCall, EssPlacement};
use crate::params::{Memory, Params};

/// One step of StrongARM code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoreStep {
    /// A run of this many register, cached-load/store and branch instructions.
    Instructions(u32),
    /// One uncached 32-bit reference: the core stalls until it completes.
    Access {
        /// The memory referenced.
        memory: Memory,
        /// Whether it is a store.
        write: bool,
    },
}

/// What running some [`CoreStep`]s cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreRun {
    /// Instructions executed.
    pub instructions: u64,
    /// Instruction time in thousandths of a cycle (instructions × CPI).
    pub instruction_millicycles: u64,
    /// Memory references made.
    pub accesses: u64,
    /// Cycles stalled on memory references.
    pub stall_cycles: u64,
}

impl CoreRun {
    /// Total cycles, instruction time rounded up to a whole cycle.
    pub fn cycles(&self) -> u64 {
        self.stall_cycles + self.instruction_millicycles.div_ceil(1000)
    }

    /// Total time in µs at `params`' clock (instruction time not rounded).
    pub fn micros(&self, params: &Params) -> f64 {
        params.cycles_to_us(self.stall_cycles as f64 + self.instruction_millicycles as f64 / 1e3)
    }
}

/// The StrongARM core of an IXP1200: in order, single-threaded, stalling on every
/// uncached reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Core {
    params: Params,
}

impl Core {
    /// The core of the machine described by `params`.
    pub fn new(params: Params) -> Core {
        Core { params }
    }

    /// The machine's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Thousandths of a cycle `count` instructions take: count × CPI.
    pub fn instruction_millicycles(&self, count: u64) -> u64 {
        count.saturating_mul(u64::from(self.params.core_cpi_milli))
    }

    /// Runs `steps` in order; no step overlaps another.
    pub fn run(&self, steps: &[CoreStep]) -> CoreRun {
        let mut r = CoreRun::default();
        for step in steps {
            match *step {
                CoreStep::Instructions(n) => {
                    r.instructions += u64::from(n);
                    r.instruction_millicycles = r
                        .instruction_millicycles
                        .saturating_add(self.instruction_millicycles(u64::from(n)));
                }
                CoreStep::Access { memory, write } => {
                    r.accesses += 1;
                    r.stall_cycles = r
                        .stall_cycles
                        .saturating_add(u64::from(self.params.core_latency_cycles(memory, write)));
                }
            }
        }
        r
    }
}

/// Instruction counts of the code the core runs, per call or per packet.
///
/// [`CoreCode::MEASURED`] is measured, not fitted; see its provenance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoreCode {
    /// `find` of a bound tag at chain length 1 (also a `find_create` that finds its tag).
    pub find: u32,
    /// `find_create` that creates a new binding at chain length 1.
    pub find_create: u32,
    /// `read` through a handle.
    pub read: u32,
    /// `write` through a handle.
    pub write: u32,
    /// Processing one COUNT packet's ESP header: parse, execute (its ESS calls included),
    /// emit.
    pub count: u32,
    /// Processing one COMPARE packet's ESP header, as [`count`](Self::count).
    pub compare: u32,
    /// Dispatch: locating the ESP header in the packet the microengines handed over.
    pub dispatch: u32,
}

impl CoreCode {
    /// Counts measured on 2026-11-22 with valgrind's callgrind as (Ir(2N) − Ir(N)) / N,
    /// N = 20,000, on x86-64 release builds; **x86-64 instruction counts used as a proxy for
    /// StrongARM (ARMv4) instruction counts**. Commands:
    ///
    /// * ESS calls: `cargo build --release -p ixp-model --example ess_calls`, then
    ///   `valgrind --tool=callgrind --callgrind-out-file=/dev/null
    ///   target/release/examples/ess_calls <case> N` for `none` (17: the loop and tag
    ///   computation, subtracted), `find` (94), `find_create` (131), `read` (26), `write` (25).
    /// * Packets: `cargo build --release -p esp-proto --features alloc --example per_packet`,
    ///   then `per_packet count N` (313), `compare` (324): `process` on a bare ESP header;
    ///   dispatch = `full_count` (538) − `baseline` (85) − `count` (313) = 140 instructions:
    ///   finding the ESP header in an IPv4 packet (`full_compare` gives 138).
    ///
    /// Our store hashes the tag in software (a keyed folded multiply: `ess_calls hash`
    /// measures 7 instructions); the paper's core received the microengines' hardware hash,
    /// so `find` and `find_create` here include those few instructions.
    pub const MEASURED: CoreCode = CoreCode {
        find: 77,
        find_create: 114,
        read: 9,
        write: 8,
        count: 313,
        compare: 324,
        dispatch: 140,
    };

    /// Instructions of one ESS call (chain length 1; a longer walk adds only its accesses).
    pub fn call(&self, call: &EssCall) -> u32 {
        match *call {
            EssCall::Find { .. } | EssCall::FindCreate { created: false, .. } => self.find,
            EssCall::FindCreate { created: true, .. } => self.find_create,
            EssCall::Read => self.read,
            EssCall::Write => self.write,
        }
    }

    /// Instructions of one packet of `instruction` on the core: dispatch and processing
    /// (the processing count includes its ESS calls' code).
    pub fn packet(&self, instruction: EspInstruction) -> u32 {
        self.dispatch.saturating_add(match instruction {
            EspInstruction::Count => self.count,
            EspInstruction::Compare => self.compare,
        })
    }
}

/// The 32-bit references of `call` (Table 1's counts), each in the memory of its table.
fn call_accesses(call: &EssCall, placement: &EssPlacement, out: &mut Vec<CoreStep>) {
    for a in call.accesses() {
        for _ in 0..a.words {
            out.push(CoreStep::Access {
                memory: placement.memory(a.table),
                write: a.write,
            });
        }
    }
}

/// One ESS call as core code: its measured instructions, then its Table 1 accesses.
pub fn call_steps(code: &CoreCode, call: &EssCall, placement: &EssPlacement) -> Vec<CoreStep> {
    let mut v = alloc::vec![CoreStep::Instructions(code.call(call))];
    call_accesses(call, placement, &mut v);
    v
}

/// One ESP packet as core code (Table 2): dispatch and processing instructions, then the
/// accesses of the ESS calls `instruction` makes in `case`.
pub fn instruction_steps(
    code: &CoreCode,
    instruction: EspInstruction,
    placement: &EssPlacement,
    case: &EspCase,
) -> Vec<CoreStep> {
    let mut v = alloc::vec![CoreStep::Instructions(code.packet(instruction))];
    for call in instruction.calls(case) {
        call_accesses(&call, placement, &mut v);
    }
    v
}

/// What [`pipeline_run`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineReport {
    /// Packets completed by the core.
    pub packets: u64,
    /// Cycle at which the last one completed.
    pub cycles: u64,
    /// Cycles the core was busy.
    pub core_busy_cycles: u64,
}

impl PipelineReport {
    /// Packets per second at `params`' clock.
    pub fn throughput_pps(&self, params: &Params) -> f64 {
        if self.cycles == 0 {
            return 0.0;
        }
        self.packets as f64 * params.core_hz() as f64 / self.cycles as f64
    }

    /// Fraction of the run the core was busy (0 ..= 1).
    pub fn core_utilisation(&self) -> f64 {
        self.core_busy_cycles as f64 / self.cycles.max(1) as f64
    }
}

/// `packets` packets, all waiting at cycle 0, through the paper's split: `threads`
/// microengine threads each classify a packet in [`Params::classification_cycles`] and
/// hand it to the core, which runs each for `core_cycles`, one at a time in arrival order.
/// Zero threads: nothing completes.
pub fn pipeline_run(
    params: &Params,
    threads: u32,
    core_cycles: u64,
    packets: u64,
) -> PipelineReport {
    let classify = u64::from(params.classification_cycles);
    let mut thread_free = alloc::vec![0u64; threads as usize];
    let mut core_free = 0u64;
    let mut busy = 0u64;
    let mut done = 0u64;
    for _ in 0..packets {
        // The thread that frees first takes the next packet.
        let Some(slot) = thread_free.iter_mut().min() else {
            break;
        };
        let handed = *slot + classify;
        *slot = handed;
        let start = handed.max(core_free);
        core_free = start + core_cycles;
        busy += core_cycles;
        done += 1;
    }
    PipelineReport {
        packets: done,
        cycles: core_free,
        core_busy_cycles: busy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::esp::LookupStyle;

    const P: Params = Params::IXP1200;

    #[test]
    fn a_lone_access_costs_its_latency() {
        let core = Core::new(P);
        for m in [Memory::Sram, Memory::Sdram] {
            for write in [false, true] {
                let r = core.run(&[CoreStep::Access { memory: m, write }]);
                assert_eq!(r.cycles(), u64::from(P.core_latency_cycles(m, write)));
            }
        }
    }

    #[test]
    fn table1_access_counts_are_the_core_references() {
        let code = CoreCode::MEASURED;
        let create = EssCall::FindCreate {
            examined: 1,
            created: true,
        };
        let r = Core::new(P).run(&call_steps(&code, &create, &EssPlacement::SRAM));
        assert_eq!(r.accesses, 10);
        assert_eq!(r.instructions, u64::from(code.find_create));
        assert_eq!(
            r.stall_cycles,
            10 * u64::from(P.core_sram_read_latency_cycles)
        );
    }

    #[test]
    fn placement_decides_each_latency() {
        let code = CoreCode::MEASURED;
        let case = EspCase::bound(LookupStyle::Once);
        let run =
            |pl| Core::new(P).run(&instruction_steps(&code, EspInstruction::Count, &pl, &case));
        let (sram, sdram, split) = (
            run(EssPlacement::SRAM),
            run(EssPlacement::SDRAM),
            run(EssPlacement::SPLIT),
        );
        assert_eq!(sram.accesses, 9);
        assert!(sram.cycles() < split.cycles() && split.cycles() < sdram.cycles());
        // Split: the hash slot in SRAM, the other 8 words in SDRAM.
        let d = u64::from(P.core_sdram_read_latency_cycles - P.core_sram_read_latency_cycles);
        assert_eq!(split.cycles() - sram.cycles(), 8 * d);
    }

    #[test]
    fn pipeline_is_bound_by_the_slower_stage() {
        // Core slower than 24 threads classifying: one packet per core time.
        let r = pipeline_run(&P, 24, 500, 1000);
        assert_eq!(r.packets, 1000);
        assert_eq!(r.cycles, 75 + 1000 * 500);
        // One thread and a fast core: one packet per classification.
        let r = pipeline_run(&P, 1, 10, 100);
        assert_eq!(r.cycles, 100 * 75 + 10);
        assert_eq!(pipeline_run(&P, 0, 10, 100).packets, 0);
    }
}
