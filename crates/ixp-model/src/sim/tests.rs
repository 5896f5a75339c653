//! Unit tests of the simulation.

use super::*;
use crate::engine::Step;

const P: Params = Params::IXP1200;

fn machine(engines: u32, threads: u32, programs: &[Program]) -> Machine {
    let mut m = Machine::new(
        P,
        MachineConfig {
            engines,
            threads_per_engine: threads,
        },
    )
    .unwrap();
    m.load_all(programs).unwrap();
    m
}

#[test]
fn one_sram_read_alone_costs_exactly_its_latency() {
    let p = Program::new(vec![Step::read(Memory::Sram, 1)]);
    let r = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(1));
    let c = r.completions[0];
    // Issue (1) + SRAM latency (20) + the loop branch (1).
    assert_eq!(c.service_cycles(), 22);
    assert_eq!(c.service_cycles(), p.unloaded_cycles(&P));
    assert_eq!(r.memory_stats(Memory::Sram).references, 1);
}

#[test]
fn lone_thread_latency_is_the_unloaded_sum() {
    let p = Program::new(vec![
        Step::Compute(7),
        Step::read(Memory::Sram, 2),
        Step::Compute(3),
        Step::write(Memory::Sdram, 4),
        Step::read(Memory::Scratch, 1),
        Step::ReceiveMpacket,
    ]);
    let r = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(3));
    for c in &r.completions {
        assert_eq!(c.service_cycles(), p.unloaded_cycles(&P));
    }
    assert_eq!(r.ix_mpackets, 3);
}

#[test]
fn two_threads_overlap_memory_latency() {
    let p = Program::new(vec![Step::Compute(2), Step::read(Memory::Sram, 1)]);
    let one = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(100));
    let two = machine(1, 2, core::slice::from_ref(&p)).run(Stop::Packets(100));
    // Serial: 100 × (2 + 1 + 20 + 1) cycles. Two threads hide one latency behind the
    // other, so nearly halve it.
    assert_eq!(one.cycles, 100 * p.unloaded_cycles(&P));
    assert!(
        two.cycles * 10 < one.cycles * 6,
        "{} vs {}",
        two.cycles,
        one.cycles
    );
    // Each packet still takes at least its unloaded latency.
    assert!(two.completions.iter().all(|c| c.service_cycles() >= 24));
}

#[test]
fn bus_occupancy_serialises() {
    // 16-word SDRAM reads hold the bus 16 cycles each; 24 threads cannot beat that.
    let p = Program::new(vec![Step::read(Memory::Sdram, 16)]);
    let r = machine(6, 4, &[p]).run(Stop::Packets(2000));
    assert!(r.cycles >= 2000 * 16);
    assert!(r.cycles < 2000 * 16 + 200);
    let s = r.memory_stats(Memory::Sdram);
    assert_eq!(s.busy_cycles, 2000 * 16);
    assert!(s.queued_cycles > 0);
}

#[test]
fn engine_bound_work_gains_nothing_from_threads() {
    let p = Program::new(vec![Step::Compute(100)]);
    let one = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(50));
    let four = machine(1, 4, &[p]).run(Stop::Packets(50));
    assert_eq!(one.cycles, 50 * 101);
    assert_eq!(four.cycles, one.cycles);
    assert_eq!(four.engine_busy, vec![50 * 101]);
}

#[test]
fn arrivals_pace_the_packets() {
    let p = Program::new(vec![Step::Compute(10), Step::read(Memory::Sram, 1)]);
    let mut m = machine(1, 2, core::slice::from_ref(&p));
    m.set_arrival_interval(1000);
    let r = m.run(Stop::Packets(5));
    for (i, c) in r.completions.iter().enumerate() {
        assert_eq!(c.arrival, i as u64 * 1000);
        assert_eq!(c.start, c.arrival);
        assert_eq!(c.service_cycles(), p.unloaded_cycles(&P));
    }
}

#[test]
fn a_full_receive_fifo_drops_arrivals() {
    let p = Program::new(vec![Step::Compute(199)]);
    // Offered every 100 cycles, served every 200: half must drop once the FIFO is full.
    let mut m = machine(1, 1, core::slice::from_ref(&p));
    m.set_arrival_interval(100);
    let r = m.run(Stop::Packets(1000));
    assert_eq!(r.packets() + r.dropped, 1000);
    assert!((480..=520).contains(&r.dropped), "{}", r.dropped);
    // Every admitted packet waited at most a full FIFO's worth of service.
    assert!(
        r.completions
            .iter()
            .all(|c| c.start - c.arrival <= 17 * 200)
    );
    // 1000-byte packets take 16 mpackets each: the FIFO holds one, so more drop.
    m.set_packet_bytes(1000);
    let big = m.run(Stop::Packets(1000));
    assert!(big.dropped > r.dropped, "{} vs {}", big.dropped, r.dropped);
    // Offered below capacity: nothing drops and nothing waits.
    m.set_arrival_interval(250);
    let light = m.run(Stop::Packets(1000));
    assert_eq!(light.dropped, 0);
    assert!(light.completions.iter().all(|c| c.start == c.arrival));
}

#[test]
fn programs_alternate_and_periodic_thread_runs() {
    // Threads are not preempted: a packet thread must swap out (here on a scratch
    // reference) for the periodic thread to get the engine.
    let a = Program::new(vec![Step::Compute(5), Step::read(Memory::Scratch, 1)]);
    let b = Program::new(vec![Step::Compute(9), Step::read(Memory::Scratch, 1)]);
    let mut m = machine(1, 2, &[a, b]);
    m.set_periodic(
        0,
        1,
        Program::new(vec![Step::read(Memory::Scratch, 1)]),
        100,
    )
    .unwrap();
    let r = m.run(Stop::Cycle(1000));
    // Packets alternate 5 and 9 compute cycles; each waits at least its scratch read.
    assert!(r.completions.len() > 20);
    assert!(
        r.completions
            .iter()
            .all(|c| c.service_cycles() >= 5 + 4 * (c.packet % 2) + 14)
    );
    assert!((9..=11).contains(&r.periodic_runs), "{}", r.periodic_runs);
    assert_eq!(r.cycles, 1000);
}

#[test]
fn runs_are_deterministic() {
    let ps = [
        Program::new(vec![
            Step::Compute(3),
            Step::read(Memory::Sram, 1),
            Step::write(Memory::Sdram, 2),
        ]),
        Program::new(vec![
            Step::read(Memory::Sdram, 4),
            Step::Compute(11),
            Step::TransmitMpacket,
        ]),
    ];
    let m = machine(6, 4, &ps);
    assert_eq!(m.run(Stop::Packets(5000)), m.run(Stop::Packets(5000)));
}

#[test]
fn bad_configs_and_loads_are_errors() {
    let bad = MachineConfig {
        engines: 7,
        threads_per_engine: 1,
    };
    assert_eq!(
        Machine::new(P, bad).err(),
        Some(ConfigError::Engines { asked: 7, have: 6 })
    );
    let bad = MachineConfig {
        engines: 1,
        threads_per_engine: 0,
    };
    assert!(matches!(
        Machine::new(P, bad),
        Err(ConfigError::Threads { .. })
    ));
    let mut zero = P;
    zero.core_mhz = 0;
    assert!(matches!(
        Machine::new(zero, MachineConfig::SERIAL),
        Err(ConfigError::Params(_))
    ));
    let mut m = Machine::new(P, MachineConfig::SERIAL).unwrap();
    assert_eq!(
        m.load(1, vec![Program::new(vec![Step::Compute(1)])]),
        Err(LoadError::NoSuchEngine(1))
    );
    assert!(matches!(
        m.load(0, vec![Program::new(vec![Step::Compute(3000)])]),
        Err(LoadError::InstructionStoreOverflow { .. })
    ));
    // Nothing loaded: a run completes nothing and terminates.
    assert_eq!(m.run(Stop::Packets(10)).packets(), 0);
}
