//! ESS calls on the model against Table 1, for the chain lengths the real store produces.

use ess::HashRatio;
use ixp_model::Params;
use ixp_model::esp::{EspCase, EspInstruction, LookupStyle, latency_cycles};
use ixp_model::ess_model::{ChainSample, EssCall, EssPlacement};
use proptest::prelude::*;

const P: Params = Params::IXP1200;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// For every chain length a real `ess::Ess` walks (any h, any fill), the modelled calls
    /// make exactly Table 1's number of 32-bit accesses: find 5·cl, find_create 5 + 5·cl.
    #[test]
    fn access_counts_equal_table1_for_observed_chains(
        quarters in prop_oneof![Just(2u8), Just(4), Just(8)],
        fill_pct in 1u32..=100,
        seed in any::<u64>(),
    ) {
        let h = HashRatio::from_quarters(quarters).unwrap();
        let sample = ChainSample::measure(9, h, f64::from(fill_pct) / 100.0, seed).unwrap();
        prop_assert!(sample.hits.iter().sum::<u64>() > 0);
        for (cl, &n) in sample.hits.iter().enumerate() {
            if n == 0 { continue; }
            let cl = cl as u32;
            prop_assert!(cl >= 1, "a hit examines at least its own entry");
            let find = EssCall::Find { examined: cl };
            prop_assert_eq!(find.access_count(), 5 * cl);
            let create = EssCall::FindCreate { examined: cl, created: true };
            prop_assert_eq!(create.access_count(), 5 + 5 * cl);
        }
        for (cl, &n) in sample.misses.iter().enumerate() {
            if n == 0 { continue; }
            let cl = cl as u32;
            let find = EssCall::Find { examined: cl };
            // An empty slot still costs its one read; otherwise Table 1's 5·cl.
            prop_assert_eq!(find.access_count(), (5 * cl).max(1));
        }
    }

    /// Latency grows with the chain, by exactly one entry's four field references (five
    /// words) per entry, in any placement.
    #[test]
    fn find_latency_grows_five_accesses_per_entry(cl in 1u32..10) {
        for (_, pl) in EssPlacement::TABLE2 {
            let a = latency_cycles(&P, &EssCall::Find { examined: cl }.program(&P, &pl)).unwrap();
            let b = latency_cycles(&P, &EssCall::Find { examined: cl + 1 }.program(&P, &pl)).unwrap();
            let field = |words| u64::from(P.ess_step_cycles + P.reference_issue_cycles)
                + u64::from(P.access_cycles(pl.tag, words, false));
            // Entry k+1, all in the tag table: its link, tag (2 words), expiry, chain.
            prop_assert_eq!(b - a, 3 * field(1) + field(2));
        }
    }
}

#[test]
fn sram_beats_split_beats_sdram_for_both_instructions() {
    for instr in EspInstruction::ALL {
        for style in [LookupStyle::Once, LookupStyle::GetPut] {
            let case = EspCase::bound(style);
            let lat: Vec<u64> = EssPlacement::TABLE2
                .iter()
                .map(|(_, pl)| latency_cycles(&P, &instr.program(&P, pl, &case)).unwrap())
                .collect();
            assert!(
                lat[0] < lat[2] && lat[2] < lat[1],
                "{instr} {style}: {lat:?}"
            );
        }
    }
}

/// The cleaner runs as a thread beside the packet threads (ESP paper §6): at the line rate
/// of four ports of minimum frames, with a COUNT creating a binding per packet, it keeps up
/// (reclaims every period what the period created) and no packet is dropped.
#[test]
fn cleaner_thread_keeps_up_beside_count_packets_at_line_rate() {
    use ixp_model::esp::packet_program;
    use ixp_model::ess_model::cleaner_program;
    use ixp_model::{Machine, MachineConfig, Stop};

    let case = EspCase {
        style: LookupStyle::Once,
        bound: false,
        cl: 1,
    };
    let pl = EssPlacement::SDRAM;
    let prog = packet_program(&P, EspInstruction::Count, &pl, &case);
    let line_pps = P.line_rate_pps(64) * u64::from(P.ports);
    let interval = P.cycles_per_packet_at(line_pps);
    let period = 10_000u64;
    let per_period = period.div_ceil(interval);
    let mut m = Machine::new(P, MachineConfig::full(&P)).unwrap();
    m.load_all(std::slice::from_ref(&prog)).unwrap();
    m.set_arrival_interval(interval);
    m.set_periodic(
        0,
        0,
        cleaner_program(&P, &pl, u32::try_from(per_period).unwrap()),
        period,
    )
    .unwrap();
    let r = m.run(Stop::Packets(5_000));
    assert_eq!(r.dropped, 0);
    assert_eq!(r.packets(), 5_000);
    // One run per period over the whole run (plus the one at cycle 0 and possibly one
    // after the last packet): it never fell behind.
    let expected = r.cycles / period;
    assert!(
        r.periodic_runs >= expected && r.periodic_runs <= expected + 2,
        "{} runs in {} cycles",
        r.periodic_runs,
        r.cycles
    );
    // At line rate each packet is served on arrival: latency = its unloaded cost.
    let floor = prog.unloaded_cycles(&P);
    let mean = r.mean_service_cycles();
    assert!(
        mean >= floor as f64 && mean < 1.2 * floor as f64,
        "{mean} vs {floor}"
    );
}
