//! Properties of the machine model: threads, saturation, determinism.

use ixp_model::{Machine, MachineConfig, Memory, Params, Program, Step, Stop};
use proptest::prelude::*;

const P: Params = Params::IXP1200;

fn step() -> impl Strategy<Value = Step> {
    let memory = prop_oneof![
        Just(Memory::Sram),
        Just(Memory::Sdram),
        Just(Memory::Scratch)
    ];
    prop_oneof![
        (0u32..60).prop_map(Step::Compute),
        (memory.clone(), 1u32..9).prop_map(|(m, w)| Step::read(m, w)),
        (memory, 1u32..9).prop_map(|(m, w)| Step::write(m, w)),
        Just(Step::ReceiveMpacket),
    ]
}

fn program() -> impl Strategy<Value = Program> {
    proptest::collection::vec(step(), 1..8).prop_map(Program::new)
}

#[allow(clippy::expect_used)] // a test helper: a panic is how the test reports failure
fn completed(engines: u32, threads: u32, programs: &[Program], horizon: u64) -> u64 {
    let mut m = Machine::new(
        P,
        MachineConfig {
            engines,
            threads_per_engine: threads,
        },
    )
    .expect("valid config");
    m.load_all(programs).expect("programs fit");
    m.run(Stop::Cycle(horizon)).packets()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Adding a thread never lowers throughput, below or past saturation.
    ///
    /// Throughput is packets completed by a fixed horizon. Tolerance: at the horizon each
    /// of the `engines × (threads + 1)` threads may hold one packet it has not finished, so
    /// two runs with the same steady-state rate may differ by that many completions.
    #[test]
    fn more_threads_never_lower_throughput(
        programs in proptest::collection::vec(program(), 1..3),
        engines in 1u32..=6,
    ) {
        let horizon = 40_000;
        let mut previous = 0u64;
        for threads in 1..=P.threads_per_engine {
            let now = completed(engines, threads, &programs, horizon);
            let tolerance = u64::from(engines * threads);
            prop_assert!(
                now + tolerance >= previous,
                "{threads} threads: {now} packets, {} threads: {previous}", threads - 1
            );
            previous = now;
        }
    }

    /// Engines never beat their own bounds: compute and issue cycles per engine, and each
    /// memory's bus occupancy.
    #[test]
    fn throughput_respects_engine_and_bus_bounds(
        prog in program(),
        engines in 1u32..=6,
        threads in 1u32..=4,
    ) {
        let mut m = Machine::new(P, MachineConfig { engines, threads_per_engine: threads }).unwrap();
        m.load_all(core::slice::from_ref(&prog)).unwrap();
        let r = m.run(Stop::Packets(500));
        prop_assert_eq!(r.packets(), 500);
        // Engine work per packet: compute, issue + swap per reference, loop branch.
        let per_packet: u64 = prog.steps().iter().map(|s| match *s {
            Step::Compute(n) => u64::from(n),
            _ => u64::from(P.reference_issue_cycles + P.context_switch_cycles),
        }).sum::<u64>() + 1;
        prop_assert!(r.cycles * u64::from(engines) >= 500 * per_packet - u64::from(engines) * per_packet);
        for m in Memory::ALL {
            let s = r.memory_stats(m);
            prop_assert!(r.cycles + 64 >= s.busy_cycles, "{m}: {} busy in {}", s.busy_cycles, r.cycles);
        }
        // Each packet takes at least its unloaded latency.
        let floor = prog.unloaded_cycles(&P);
        prop_assert!(r.completions.iter().all(|c| c.service_cycles() >= floor));
    }

    /// A lone thread's packet costs exactly the unloaded sum of its steps.
    #[test]
    fn lone_thread_costs_the_unloaded_sum(prog in program()) {
        let mut m = Machine::new(P, MachineConfig::SERIAL).unwrap();
        m.load(0, vec![prog.clone()]).unwrap();
        let r = m.run(Stop::Packets(3));
        for c in &r.completions {
            prop_assert_eq!(c.service_cycles(), prog.unloaded_cycles(&P));
        }
    }
}

/// The simulation of N packets is deterministic: the same inputs give the same report,
/// packet for packet.
#[test]
fn simulating_n_packets_is_deterministic() {
    let programs = [
        Program::new(vec![
            Step::ReceiveMpacket,
            Step::Compute(75),
            Step::read(Memory::Sram, 1),
            Step::read(Memory::Sram, 4),
            Step::write(Memory::Sdram, 2),
            Step::TransmitMpacket,
        ]),
        Program::new(vec![Step::Compute(30), Step::read(Memory::Scratch, 1)]),
    ];
    let mut m = Machine::new(P, MachineConfig::full(&P)).unwrap();
    m.load_all(&programs).unwrap();
    m.set_arrival_interval(50);
    let a = m.run(Stop::Packets(20_000));
    let b = m.clone().run(Stop::Packets(20_000));
    assert_eq!(a.packets(), 20_000);
    assert_eq!(a, b);
    // And every packet is completed exactly once.
    let mut seen: Vec<u64> = a.completions.iter().map(|c| c.packet).collect();
    seen.sort_unstable();
    assert!(seen.iter().copied().eq(0..20_000));
}
