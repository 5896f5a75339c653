//! The StrongARM core executor: a lone access costs its latency, accesses never overlap,
//! instruction time is count × CPI / clock, and ESS calls on the core make Table 1's
//! accesses in the placement's memories.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use ixp_model::esp::{EspCase, EspInstruction, LookupStyle};
use ixp_model::ess_model::{EssCall, EssPlacement};
use ixp_model::strongarm::{Core, CoreCode, CoreStep, call_steps, instruction_steps};
use ixp_model::{Memory, Params};
use proptest::prelude::*;

const P: Params = Params::IXP1200;

fn step() -> impl Strategy<Value = CoreStep> {
    prop_oneof![
        (0u32..500).prop_map(CoreStep::Instructions),
        (0usize..3, any::<bool>()).prop_map(|(m, write)| CoreStep::Access {
            memory: Memory::ALL[m],
            write
        }),
    ]
}

fn placement() -> impl Strategy<Value = EssPlacement> {
    (0usize..2, 0usize..2, 0usize..2).prop_map(|(h, t, v)| EssPlacement {
        hash: Memory::ALL[h],
        tag: Memory::ALL[t],
        value: Memory::ALL[v],
    })
}

#[test]
fn a_lone_access_costs_its_latency_and_nothing_else() {
    let core = Core::new(P);
    let lone = |memory, write| core.run(&[CoreStep::Access { memory, write }]).cycles();
    assert_eq!(
        lone(Memory::Sram, false),
        u64::from(P.core_sram_read_latency_cycles)
    );
    assert_eq!(
        lone(Memory::Sram, true),
        u64::from(P.core_sram_write_latency_cycles)
    );
    assert_eq!(
        lone(Memory::Sdram, false),
        u64::from(P.core_sdram_read_latency_cycles)
    );
    assert_eq!(
        lone(Memory::Sdram, true),
        u64::from(P.core_sdram_write_latency_cycles)
    );
    // No threads to hide behind: two SDRAM reads take twice one.
    let two = core.run(
        &[CoreStep::Access {
            memory: Memory::Sdram,
            write: false,
        }; 2],
    );
    assert_eq!(
        two.cycles(),
        2 * u64::from(P.core_sdram_read_latency_cycles)
    );
}

#[test]
fn instruction_time_is_count_times_cpi_over_clock() {
    let core = Core::new(P);
    let r = core.run(&[CoreStep::Instructions(1000)]);
    let cpi = f64::from(P.core_cpi_milli) / 1000.0;
    assert!((r.micros(&P) - 1000.0 * cpi / f64::from(P.core_mhz)).abs() < 1e-9);
    assert_eq!(r.cycles(), u64::from(P.core_cpi_milli));
    // A faster-clocked core takes proportionally less time for the same cycles.
    let fast = Params {
        core_mhz: 2 * P.core_mhz,
        ..P
    };
    let rf = Core::new(fast).run(&[CoreStep::Instructions(1000)]);
    assert!((rf.micros(&fast) * 2.0 - r.micros(&P)).abs() < 1e-9);
}

#[test]
fn the_core_is_slower_than_a_microengine_thread_per_call() {
    // Same accesses, but the core also runs its measured code.
    let code = CoreCode::MEASURED;
    for call in [EssCall::Find { examined: 1 }, EssCall::Read, EssCall::Write] {
        let core = Core::new(P).run(&call_steps(&code, &call, &EssPlacement::SRAM));
        assert_eq!(core.accesses, u64::from(call.table1_formula()));
        assert!(core.instruction_millicycles > 0);
    }
}

proptest! {
    /// No overlap: running two sequences back to back costs the sum of their stalls and
    /// instructions; the total is exactly Σ latency + ⌈Σ instructions × CPI⌉.
    #[test]
    fn steps_never_overlap(a in prop::collection::vec(step(), 0..40), b in prop::collection::vec(step(), 0..40)) {
        let core = Core::new(P);
        let ra = core.run(&a);
        let rb = core.run(&b);
        let both: Vec<CoreStep> = a.iter().chain(b.iter()).copied().collect();
        let r = core.run(&both);
        prop_assert_eq!(r.stall_cycles, ra.stall_cycles + rb.stall_cycles);
        prop_assert_eq!(r.instructions, ra.instructions + rb.instructions);
        prop_assert_eq!(r.accesses, ra.accesses + rb.accesses);
        let latency: u64 = both.iter().map(|s| match *s {
            CoreStep::Access { memory, write } => u64::from(P.core_latency_cycles(memory, write)),
            CoreStep::Instructions(_) => 0,
        }).sum();
        prop_assert_eq!(r.cycles(), latency + (r.instructions * u64::from(P.core_cpi_milli)).div_ceil(1000));
    }

    /// An ESS call on the core makes Table 1's count of 32-bit accesses at any chain length,
    /// and each is charged at its table's memory.
    #[test]
    fn core_calls_make_table1_accesses(cl in 1u32..8, created in any::<bool>(), pl in placement()) {
        let code = CoreCode::MEASURED;
        for call in [EssCall::Find { examined: cl }, EssCall::FindCreate { examined: cl, created }, EssCall::Read, EssCall::Write] {
            let steps = call_steps(&code, &call, &pl);
            let r = Core::new(P).run(&steps);
            prop_assert_eq!(r.accesses, u64::from(call.table1_formula()));
            let want: u64 = call.accesses().iter()
                .map(|a| u64::from(a.words) * u64::from(P.core_latency_cycles(pl.memory(a.table), a.write)))
                .sum();
            prop_assert_eq!(r.stall_cycles, want);
        }
    }

    /// Moving any table from SRAM to SDRAM never makes an instruction faster on the core.
    #[test]
    fn sdram_never_helps(pl in placement(), cl in 1u32..4, bound in any::<bool>()) {
        let code = CoreCode::MEASURED;
        let case = EspCase { style: LookupStyle::Once, bound, cl };
        for instr in EspInstruction::ALL {
            let t = |p: &EssPlacement| Core::new(P).run(&instruction_steps(&code, instr, p, &case)).cycles();
            let base = t(&pl);
            prop_assert!(t(&EssPlacement::SDRAM) >= base);
            prop_assert!(t(&EssPlacement::SRAM) <= base);
        }
    }
}
