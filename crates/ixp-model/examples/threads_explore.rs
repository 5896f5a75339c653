//! Explores random packet programs for the largest throughput loss from one more thread:
//! the evidence behind the convoy allowance of `tests/machine_props.rs`.
//!
//! `cargo run --release -p ixp-model --example threads_explore -- [seed] [cases]`

use ixp_model::{Machine, MachineConfig, Memory, Params, Program, Step, Stop};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut state: u64 = args.next().map_or(Ok(1), |a| a.parse())?;
    let cases: u32 = args.next().map_or(Ok(3000), |a| a.parse())?;
    let mut rnd = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let p = Params::IXP1200;
    let horizon = 40_000u64;
    let (mut worst, mut worst_saturated) = ((0.0f64, String::new()), (0.0f64, String::new()));
    for _ in 0..cases {
        let mut programs = Vec::new();
        for _ in 0..1 + rnd(2) {
            let mut steps = Vec::new();
            for _ in 0..1 + rnd(7) {
                let m = [Memory::Sram, Memory::Sdram, Memory::Scratch][rnd(3) as usize];
                let words = 1 + rnd(8) as u32;
                steps.push(match rnd(4) {
                    0 => Step::Compute(rnd(60) as u32),
                    1 => Step::read(m, words),
                    2 => Step::write(m, words),
                    _ => Step::ReceiveMpacket,
                });
            }
            if !steps.iter().any(Step::is_reference) {
                steps.push(Step::read(Memory::Scratch, 1));
            }
            programs.push(Program::new(steps));
        }
        let engines = 1 + rnd(6) as u32;
        let mut previous: Option<(u64, bool)> = None;
        for threads in 1..=p.threads_per_engine {
            let mut m = Machine::new(
                p,
                MachineConfig {
                    engines,
                    threads_per_engine: threads,
                },
            )?;
            m.load_all(&programs)?;
            let r = m.run(Stop::Cycle(horizon));
            let busy = |c: u64| c * 100 >= horizon * 99;
            let saturated = r.engine_busy.iter().any(|&b| busy(b))
                || Memory::ALL
                    .iter()
                    .any(|&mm| busy(r.memory_stats(mm).busy_cycles));
            let now = r.packets();
            if let Some((before, was_saturated)) = previous {
                let loss =
                    (before as f64 - now as f64 - f64::from(engines * threads)) / before as f64;
                let what =
                    format!("{engines} engines, {threads} threads: {before} → {now}; {programs:?}");
                if loss > worst.0 {
                    worst = (loss, what.clone());
                }
                if was_saturated && loss > worst_saturated.0 {
                    worst_saturated = (loss, what);
                }
            }
            previous = Some((now, saturated));
        }
    }
    println!(
        "worst loss from one more thread: {:.1}% ({})",
        worst.0 * 100.0,
        worst.1
    );
    println!(
        "worst past saturation: {:.1}% ({})",
        worst_saturated.0 * 100.0,
        worst_saturated.1
    );
    Ok(())
}
