//! ESP instructions on the machine: COUNT and COMPARE as programs over ESS calls.
//!
//! Fig. 3 of the ESP paper gives both as `get`, an operation, and `put`. The store's design
//! (§5.1–§5.2) lets an instruction look its tag up once: `find_create`, then `read` and
//! `write` through the handle ([`LookupStyle::Once`]). Read literally, Fig. 3 looks the tag
//! up twice: `get` = `find` + `read`, `put` = `find_create` + `write`
//! ([`LookupStyle::GetPut`]). The paper does not say which its prototype did; we model
//! both and report both. Either way COUNT and COMPARE make the same memory accesses: they
//! differ only in the register operation between `read` and `write`.
//!
//! A packet's microengine program is the classification ([`Params::classification_cycles`],
//! ESP paper §6: 75 cycles for recognising the ESP packet and hashing its tag) followed by
//! the instruction ([`packet_program`]).
//!
//! These are the instructions *on the microengines*, the paper's future work ("pushing the
//! code completely into the μengines"). The paper measured Tables 1–2 on the StrongARM
//! core; [`crate::strongarm`] models that executor from the same [`EspInstruction::calls`].

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::LoadError;
use crate::engine::{Program, Step};
use crate::ess_model::{EssCall, EssPlacement};
use crate::params::Params;
use crate::sim::{ConfigError, Machine, MachineConfig, RunReport, Stop};

/// An ESP instruction of Fig. 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EspInstruction {
    /// COUNT(C, thresh): increment the counter, forward while it is at most `thresh`.
    Count,
    /// COMPARE(V, current, op): if nil or `value op current`, store `current` and forward.
    Compare,
}

impl EspInstruction {
    /// Both, in Table 2's row order.
    pub const ALL: [EspInstruction; 2] = [EspInstruction::Compare, EspInstruction::Count];

    /// Register-only cycles between `read` and `write`: COUNT increments and compares with
    /// the threshold; COMPARE evaluates `<op>`. Both are one ESS step of arithmetic.
    pub fn operation_cycles(&self, params: &Params) -> u32 {
        params.ess_step_cycles
    }
}

impl fmt::Display for EspInstruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EspInstruction::Count => "COUNT",
            EspInstruction::Compare => "COMPARE",
        })
    }
}

/// How an instruction looks its tag up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LookupStyle {
    /// One `find_create`, then `read`/`write` through the handle (§5.2).
    Once,
    /// Fig. 3 literally: `get` (`find` + `read`) then `put` (`find_create` + `write`).
    GetPut,
}

impl fmt::Display for LookupStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LookupStyle::Once => "one lookup",
            LookupStyle::GetPut => "get + put",
        })
    }
}

/// The state an instruction finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EspCase {
    /// Lookup style.
    pub style: LookupStyle,
    /// Whether the tag is already bound (false: the instruction creates it).
    pub bound: bool,
    /// Chain length walked (entries examined; the last matches if bound).
    pub cl: u32,
}

impl EspCase {
    /// A bound tag at chain length 1, the "essentially empty" store of Table 1.
    pub const fn bound(style: LookupStyle) -> EspCase {
        EspCase {
            style,
            bound: true,
            cl: 1,
        }
    }
}

impl EspInstruction {
    /// The ESS calls the instruction makes in `case` (the forwarding path of Fig. 3).
    pub fn calls(&self, case: &EspCase) -> Vec<EssCall> {
        let cl = case.cl;
        let create = EssCall::FindCreate {
            examined: cl,
            created: !case.bound,
        };
        match (case.style, case.bound) {
            // A new binding holds 0: nothing to read.
            (LookupStyle::Once, false) => vec![create, EssCall::Write],
            (LookupStyle::Once, true) => vec![create, EssCall::Read, EssCall::Write],
            (LookupStyle::GetPut, false) => {
                vec![EssCall::Find { examined: cl }, create, EssCall::Write]
            }
            (LookupStyle::GetPut, true) => vec![
                EssCall::Find { examined: cl },
                EssCall::Read,
                create,
                EssCall::Write,
            ],
        }
    }

    /// The instruction alone as a program (what Table 2 times).
    pub fn program(&self, params: &Params, placement: &EssPlacement, case: &EspCase) -> Program {
        let mut steps = Vec::new();
        let calls = self.calls(case);
        for call in &calls {
            if matches!(call, EssCall::Write) {
                steps.push(Step::Compute(self.operation_cycles(params)));
            }
            steps.extend(call.steps(params, placement));
        }
        Program::new(steps)
    }

    /// 32-bit ESS table accesses the instruction makes in `case`.
    pub fn access_count(&self, case: &EspCase) -> u32 {
        self.calls(case).iter().map(EssCall::access_count).sum()
    }
}

/// Classification (75 cycles) followed by the instruction: one packet's microengine work.
pub fn packet_program(
    params: &Params,
    instruction: EspInstruction,
    placement: &EssPlacement,
    case: &EspCase,
) -> Program {
    Program::new(vec![Step::Compute(params.classification_cycles)])
        .then(&instruction.program(params, placement, case))
}

/// Cycles one thread alone takes for `program`, measured by running it on the simulator.
///
/// # Errors
///
/// [`LoadError`] if the program does not fit the instruction store (or is empty).
pub fn latency_cycles(params: &Params, program: &Program) -> Result<u64, EspError> {
    let mut m = Machine::new(*params, MachineConfig::SERIAL)?;
    m.load(0, vec![program.clone()])?;
    let r = m.run(Stop::Packets(1));
    r.completions
        .first()
        .map(|c| c.service_cycles())
        .ok_or(EspError::NothingRan)
}

/// Runs `packets` packets of `programs` (packet i runs program i mod k) on `config` with
/// every packet waiting at cycle 0: the machine's saturated throughput.
///
/// # Errors
///
/// [`EspError`] for an impossible configuration or a program that does not fit.
pub fn saturated_run(
    params: &Params,
    config: MachineConfig,
    programs: &[Program],
    packets: u64,
) -> Result<RunReport, EspError> {
    let mut m = Machine::new(*params, config)?;
    m.load_all(programs)?;
    Ok(m.run(Stop::Packets(packets)))
}

/// Why an ESP measurement could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EspError {
    /// The machine configuration is impossible.
    Config(ConfigError),
    /// The program does not load.
    Load(LoadError),
    /// The run completed no packet.
    NothingRan,
}

impl From<ConfigError> for EspError {
    fn from(e: ConfigError) -> Self {
        EspError::Config(e)
    }
}

impl From<LoadError> for EspError {
    fn from(e: LoadError) -> Self {
        EspError::Load(e)
    }
}

impl fmt::Display for EspError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EspError::Config(e) => write!(f, "machine: {e}"),
            EspError::Load(e) => write!(f, "program: {e}"),
            EspError::NothingRan => f.write_str("no packet completed"),
        }
    }
}

impl core::error::Error for EspError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Memory;

    const P: Params = Params::IXP1200;

    #[test]
    fn count_and_compare_make_the_same_accesses() {
        for style in [LookupStyle::Once, LookupStyle::GetPut] {
            for bound in [false, true] {
                let case = EspCase {
                    style,
                    bound,
                    cl: 2,
                };
                assert_eq!(
                    EspInstruction::Count.access_count(&case),
                    EspInstruction::Compare.access_count(&case)
                );
            }
        }
        // One lookup, bound, cl = 1: find_create 5 + read 2 + write 2.
        assert_eq!(
            EspInstruction::Count.access_count(&EspCase::bound(LookupStyle::Once)),
            9
        );
        // get + put: find 5 + read 2 + find_create 5 + write 2.
        assert_eq!(
            EspInstruction::Count.access_count(&EspCase::bound(LookupStyle::GetPut)),
            14
        );
        let new = EspCase {
            style: LookupStyle::Once,
            bound: false,
            cl: 1,
        };
        assert_eq!(EspInstruction::Count.access_count(&new), 12);
    }

    #[test]
    fn latency_is_simulated_and_placement_orders_it() {
        let case = EspCase::bound(LookupStyle::Once);
        let lat = |pl: &EssPlacement| {
            latency_cycles(&P, &EspInstruction::Count.program(&P, pl, &case)).unwrap()
        };
        let (sram, sdram, split) = (
            lat(&EssPlacement::SRAM),
            lat(&EssPlacement::SDRAM),
            lat(&EssPlacement::SPLIT),
        );
        assert!(sram < split && split < sdram, "{sram} {split} {sdram}");
        // 6 SRAM field references (link, tag, expiry, chain, value read, value write) at
        // step + issue + latency, one more bus cycle for each of the three 64-bit fields,
        // one operation, one loop branch.
        assert_eq!(sram, 6 * 25 + 3 + 4 + 1);
        let prog = EspInstruction::Count.program(&P, &EssPlacement::SPLIT, &case);
        // Split: only the hash-slot read is in SRAM.
        assert_eq!(prog.words_in(Memory::Sram), 1);
        assert_eq!(prog.words_in(Memory::Sdram), 8);
    }

    #[test]
    fn serial_throughput_is_one_over_classification_plus_latency() {
        let case = EspCase::bound(LookupStyle::Once);
        let pl = EssPlacement::SRAM;
        let prog = packet_program(&P, EspInstruction::Compare, &pl, &case);
        let alone = EspInstruction::Compare.program(&P, &pl, &case);
        let lat = latency_cycles(&P, &alone).unwrap();
        let r = saturated_run(&P, MachineConfig::SERIAL, &[prog], 100).unwrap();
        assert_eq!(r.cycles, 100 * (lat + 75));
        // The full machine does far better than one thread.
        let full = saturated_run(
            &P,
            MachineConfig::full(&P),
            &[packet_program(&P, EspInstruction::Compare, &pl, &case)],
            2400,
        )
        .unwrap();
        assert!(full.throughput_pps(&P) > 10.0 * r.throughput_pps(&P));
    }
}
