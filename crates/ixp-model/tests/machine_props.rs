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

/// A packet program as microengine code has it: at least one reference (every packet
/// program at least reads its packet or its descriptor). A program without one never swaps
/// its thread out and keeps its engine (no preemption), which is not how packet code is
/// written.
fn packet_program() -> impl Strategy<Value = Program> {
    proptest::collection::vec(step(), 1..8).prop_map(|mut steps| {
        if !steps.iter().any(Step::is_reference) {
            steps.push(Step::read(Memory::Scratch, 1));
        }
        Program::new(steps)
    })
}

/// Packets completed by `horizon`, and whether the run was saturated: some engine busy
/// or some memory bus occupied at least 99% of the time.
#[allow(clippy::expect_used)] // a test helper: a panic is how the test reports failure
fn completed(engines: u32, threads: u32, programs: &[Program], horizon: u64) -> (u64, bool) {
    let mut m = Machine::new(
        P,
        MachineConfig {
            engines,
            threads_per_engine: threads,
        },
    )
    .expect("valid config");
    m.load_all(programs).expect("programs fit");
    let r = m.run(Stop::Cycle(horizon));
    let busy = |cycles: u64| cycles * 100 >= horizon * 99;
    let saturated = r.engine_busy.iter().any(|&b| busy(b))
        || Memory::ALL
            .iter()
            .any(|&m| busy(r.memory_stats(m).busy_cycles));
    (r.packets(), saturated)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Adding a thread does not lower throughput, beyond two tolerances.
    ///
    /// Throughput is packets completed by a fixed horizon. (1) At the horizon each of the
    /// `engines × threads` threads may hold one unfinished packet, so runs with the same
    /// steady rate may differ by that many completions. (2) Convoys: round-robin
    /// arbitration with deterministic service times lets an engine's threads fall into
    /// step — they queue for the same bus together, then for the engine together — and a
    /// fourth thread can lock a pipeline of two near-saturated resources into a worse
    /// rhythm than three (see `convoy_costs_a_fourth_thread` below). Exploring 39,000
    /// random packet programs (`examples/threads_explore.rs`, seeds 1-13 × 3,000 cases,
    /// 40,000 cycles) the worst loss from one more thread was 13.4%, and past saturation
    /// as large as below it (11.6%): a convoy does not care which side of saturation it is
    /// on. We allow 20%. The model keeps the effect rather than hide it: the IXP1200's
    /// arbiter is round robin, and its service times are as deterministic as ours.
    #[test]
    fn more_threads_never_lower_throughput_beyond_convoys(
        programs in proptest::collection::vec(packet_program(), 1..3),
        engines in 1u32..=6,
    ) {
        let horizon = 40_000;
        let mut previous = (0u64, false);
        for threads in 1..=P.threads_per_engine {
            let now = completed(engines, threads, &programs, horizon);
            let in_flight = u64::from(engines * threads);
            prop_assert!(
                (now.0 + in_flight) * 100 >= previous.0 * 80,
                "{threads} threads: {} packets, {} threads: {} (saturated: {})",
                now.0, threads - 1, previous.0, previous.1
            );
            previous = now;
        }
    }

    /// Where the engine alone is the bottleneck (compute-heavy programs whose references
    /// are few and short), throughput is monotone in threads with no convoy allowance:
    /// past saturation it stays at the engine's rate.
    #[test]
    fn engine_bound_throughput_is_monotone_in_threads(
        compute in 100u32..400,
        memory in prop_oneof![Just(Memory::Sram), Just(Memory::Sdram), Just(Memory::Scratch)],
        engines in 1u32..=6,
    ) {
        let prog = Program::new(vec![Step::Compute(compute), Step::read(memory, 1)]);
        let horizon = 100_000;
        let mut previous = 0u64;
        for threads in 1..=P.threads_per_engine {
            let (now, _) = completed(engines, threads, core::slice::from_ref(&prog), horizon);
            prop_assert!(now + u64::from(engines * threads) >= previous, "{threads}: {now} < {previous}");
            previous = now;
        }
        // Saturated: every engine busy all the time, at compute + issue + swap + loop per
        // packet (up to one unfinished packet per thread at the horizon).
        let per_packet = u64::from(compute) + 3;
        let in_flight = u64::from(engines * P.threads_per_engine);
        prop_assert!((previous + in_flight) * per_packet >= u64::from(engines) * horizon);
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

    /// Paced arrivals: every offered packet is either completed once or dropped at the
    /// receive FIFO, never both, never lost; none drops when the machine keeps up.
    #[test]
    fn paced_packets_are_completed_or_dropped(
        prog in packet_program(),
        engines in 1u32..=6,
        threads in 1u32..=4,
        interval in 1u64..400,
        bytes in 1u32..1500,
    ) {
        let mut m = Machine::new(P, MachineConfig { engines, threads_per_engine: threads }).unwrap();
        m.load_all(core::slice::from_ref(&prog)).unwrap();
        m.set_arrival_interval(interval);
        m.set_packet_bytes(bytes);
        let r = m.run(Stop::Packets(600));
        prop_assert_eq!(r.packets() + r.dropped, 600);
        let mut seen: Vec<u64> = r.completions.iter().map(|c| c.packet).collect();
        seen.sort_unstable();
        seen.dedup();
        prop_assert_eq!(seen.len() as u64, r.packets());
        prop_assert!(r.completions.iter().all(|c| c.start >= c.arrival && c.end > c.start));
        // Each packet done before the next arrives (one at a time, no contention): no drops.
        if interval > prog.unloaded_cycles(&P) {
            prop_assert_eq!(r.dropped, 0);
        }
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

/// The README's example, kept compiling and meaningful.
#[test]
fn readme_example_runs() -> Result<(), Box<dyn std::error::Error>> {
    let p = Params::IXP1200;
    let mut m = Machine::new(p, MachineConfig::full(&p))?;
    m.load_all(&[Program::new(vec![
        Step::ReceiveMpacket,
        Step::Compute(75),
        Step::read(Memory::Sram, 1),
        Step::TransmitMpacket,
    ])])?;
    let report = m.run(Stop::Packets(10_000));
    assert_eq!(report.packets(), 10_000);
    // Two mpackets per packet cross the IX bus (18 cycles each): it bounds the rate at
    // 232 MHz / 36 ≈ 6.4 Mpps.
    assert_eq!(report.ix_mpackets, 20_000);
    assert!(report.throughput_pps(&p) <= 232e6 / 36.0);
    assert!(
        report.throughput_pps(&p) > 0.9 * 232e6 / 36.0,
        "{}",
        report.throughput_pps(&p)
    );
    Ok(())
}

/// The convoy the property above allows for, pinned down: four engines receiving an
/// mpacket (IX bus, then 16 words into SDRAM), computing 69 cycles and reading 4 SDRAM
/// words. Three threads per engine keep SDRAM 99% busy; a fourth falls into step with the
/// others and the rate drops about 11% in steady state. If the arbitration or the memory
/// model changes, this test says so.
#[test]
fn convoy_costs_a_fourth_thread() {
    let prog = Program::new(vec![
        Step::ReceiveMpacket,
        Step::Compute(69),
        Step::read(Memory::Sdram, 4),
    ]);
    let horizon = 400_000;
    let run = |threads| completed(4, threads, core::slice::from_ref(&prog), horizon);
    let (three, saturated) = run(3);
    let (four, _) = run(4);
    assert!(saturated);
    let loss = 1.0 - four as f64 / three as f64;
    assert!((0.05..0.15).contains(&loss), "{three} → {four}: {loss}");
}
