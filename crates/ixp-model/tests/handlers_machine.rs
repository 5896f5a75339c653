//! The stream-handler runtime's costs are the machine model's: the Rx, Tx and RUDP
//! programs run on the discrete-event `Machine` take exactly the cycles `HandlerCosts`
//! charges, and more receive threads never lower the receive rate.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use ixp_model::MachineConfig;
use ixp_model::costs::HandlerCosts;
use ixp_model::esp::{latency_cycles, saturated_run};
use proptest::prelude::*;

#[test]
fn runtime_programs_cost_on_the_machine_what_handler_costs_says() {
    let c = HandlerCosts::IXP1200;
    let p = c.params;
    assert_eq!(
        latency_cycles(&p, &c.rx_mpacket_program()).unwrap(),
        c.rx_mpacket_cycles()
    );
    assert_eq!(
        latency_cycles(&p, &c.tx_mpacket_program()).unwrap(),
        c.tx_mpacket_cycles()
    );
    assert_eq!(
        latency_cycles(&p, &c.rudp_packet_program()).unwrap(),
        c.rudp_packet_cycles()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn more_receive_threads_never_lower_the_receive_rate(
        instructions in 0u64..200,
        threads in 1u32..4,
    ) {
        let c = HandlerCosts { rx_mpacket_instructions: instructions, ..HandlerCosts::IXP1200 };
        let p = c.params;
        let prog = c.rx_mpacket_program();
        let rate = |t: u32| {
            let cfg = MachineConfig { engines: 1, threads_per_engine: t };
            saturated_run(&p, cfg, core::slice::from_ref(&prog), 400)
                .unwrap()
                .throughput_pps(&p)
        };
        let (fewer, more) = (rate(threads), rate(threads + 1));
        // Tolerance: one unfinished mpacket per thread at the horizon.
        prop_assert!(more >= fewer * (1.0 - f64::from(threads + 1) / 400.0), "{fewer} {more}");
        // A lone thread runs at exactly one mpacket per rx_mpacket_cycles.
        let one = rate(1);
        let expect = p.core_hz() as f64 / c.rx_mpacket_cycles() as f64;
        prop_assert!((one - expect).abs() / expect < 0.01, "{one} {expect}");
    }
}
