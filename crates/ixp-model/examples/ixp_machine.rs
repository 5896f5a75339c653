//! The README's smallest use: 24 threads receive, classify, touch SRAM and transmit 10,000
//! packets on the modelled IXP1200; prints the throughput.
use ixp_model::{Machine, MachineConfig, Memory, Params, Program, Step, Stop};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let p = Params::IXP1200;
    let mut m = Machine::new(p, MachineConfig::full(&p))?; // 6 engines × 4 threads
    m.load_all(&[Program::new(vec![
        Step::ReceiveMpacket,        // RFIFO → SDRAM over the IX bus
        Step::Compute(75),           // classification
        Step::read(Memory::Sram, 1), // swaps the thread out
        Step::TransmitMpacket,
    ])])?;
    let report = m.run(Stop::Packets(10_000));
    println!("{:.0} pps", report.throughput_pps(&p));
    Ok(())
}
