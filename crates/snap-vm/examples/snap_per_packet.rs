//! Runs `N` packets (or program runs) through one step of the SNAP bench (`benches/snap.rs`),
//! for instruction counts under callgrind, where wall-clock times on a shared machine are
//! too noisy:
//!
//! ```text
//! cargo build --release -p snap-vm --example snap_per_packet
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/snap_per_packet <case> <N>
//! ```
//!
//! `case` is one of
//!
//! * `ipv4_<P>`, `snap_hop_<P>`, `snap_turn_<P>`, `snap_return_<P>` for a payload `P` of
//!   4, 64, 256, 1024 or 1400 bytes: plain IPv4 forwarding of a packet as long as the SNAP
//!   ping, the ping at an intermediate node, the ping at its destination (group
//!   `snap_ping`), the reply back at its source (`demux` delivers the payload);
//! * `snap_<I>`, `rbpf_<I>` for `I` = 202 or 8: one run of the straight-line program of `I`
//!   instructions (group `snap_vs_rbpf`).
//!
//! Setup is the same for any `N`, so instructions per step are
//! `(Ir(2N) - Ir(N)) / N`.
//!
//! `snap_per_packet interleave <ROUNDS> <N>` times every case (`N` steps each, wall clock)
//! once per round, all cases in every round, and prints the median ns per step over rounds
//! and the median (and range) of the within-round ratios SNAP / IPv4 and SNAP / rbpf, so
//! load from other tenants of a shared machine falls on both sides of each ratio.
// bench harness: panics on setup are bugs.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // shared with the criterion bench
#[path = "../benches/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Instant;

use support::{
    Ipv4Step, PAYLOADS, PingStep, StraightStep, Where, check_ebpf, straight_ebpf, straight_len,
};

fn usage() -> ! {
    eprintln!(
        "usage: snap_per_packet <case> <N> | interleave <ROUNDS> <N>\n\
         case: ipv4_P snap_hop_P snap_turn_P snap_return_P (P: 4 64 256 1024 1400), snap_I rbpf_I (I: 202 8)"
    );
    std::process::exit(2)
}

/// Runs `step` `n` times.
fn run<T>(n: u64, mut step: impl FnMut() -> T) {
    for _ in 0..n {
        black_box(step());
    }
}

/// Wall-clock ns per step of `n` steps.
fn ns_per_step<T>(n: u64, step: impl FnMut() -> T) -> f64 {
    let start = Instant::now();
    run(n, step);
    start.elapsed().as_nanos() as f64 / n.max(1) as f64
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The interleaved runs: every case once per round.
fn interleave(rounds: usize, n: u64) {
    let mut ping: Vec<(usize, Ipv4Step, PingStep, PingStep, PingStep)> = PAYLOADS
        .iter()
        .map(|&p| {
            let hop = PingStep::new(Where::Hop, p);
            (
                p,
                Ipv4Step::new(hop.len()),
                hop,
                PingStep::new(Where::Turn, p),
                PingStep::new(Where::Return, p),
            )
        })
        .collect();
    let mut straight: Vec<(usize, StraightStep, Vec<u8>)> = [200, 6]
        .iter()
        .map(|&ops| {
            let prog = straight_ebpf(ops);
            check_ebpf(&prog);
            (straight_len(ops), StraightStep::new(ops), prog)
        })
        .collect();
    // ns[case][round]
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); 4 * ping.len() + 2 * straight.len()];
    for _ in 0..rounds {
        let mut i = 0;
        for (_, ip, hop, turn, back) in &mut ping {
            ns[i].push(ns_per_step(n, || ip.step()));
            ns[i + 1].push(ns_per_step(n, || hop.step()));
            ns[i + 2].push(ns_per_step(n / 4, || turn.step()));
            ns[i + 3].push(ns_per_step(n / 4, || back.step()));
            i += 4;
        }
        for (_, snap, prog) in &mut straight {
            let vm = rbpf::EbpfVmNoData::new(Some(prog)).unwrap();
            ns[i].push(ns_per_step(n / 4, || snap.step()));
            ns[i + 1].push(ns_per_step(n / 4, || vm.execute_program().unwrap()));
            i += 2;
        }
    }
    let ratio = |a: &[f64], b: &[f64]| {
        let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(0.0, f64::max);
        format!("{:.2} ({lo:.2}–{hi:.2})", median(r))
    };
    println!(
        "{rounds} rounds × {n} steps (turnaround, return and programs: {} steps)",
        n / 4
    );
    println!(
        "{:>8} {:>9} {:>9} {:>9} {:>9} {:>22} {:>22} {:>22}",
        "payload",
        "ipv4 ns",
        "hop ns",
        "turn ns",
        "ret ns",
        "hop / ipv4",
        "turn / ipv4",
        "ret / ipv4"
    );
    for (k, (p, ..)) in ping.iter().enumerate() {
        let [ip, hop, turn, back] = [&ns[4 * k], &ns[4 * k + 1], &ns[4 * k + 2], &ns[4 * k + 3]];
        println!(
            "{p:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>22} {:>22} {:>22}",
            median(ip.clone()),
            median(hop.clone()),
            median(turn.clone()),
            median(back.clone()),
            ratio(hop, ip),
            ratio(turn, ip),
            ratio(back, ip)
        );
    }
    println!(
        "{:>8} {:>12} {:>12} {:>14} {:>14} {:>22}",
        "instrs", "snap ns", "rbpf ns", "snap ns/instr", "rbpf ns/instr", "rbpf / snap"
    );
    let base = 4 * ping.len();
    for (k, (len, ..)) in straight.iter().enumerate() {
        let [snap, rbpf] = [&ns[base + 2 * k], &ns[base + 2 * k + 1]];
        let (s, r) = (median(snap.clone()), median(rbpf.clone()));
        println!(
            "{len:>8} {s:>12.1} {r:>12.1} {:>14.2} {:>14.2} {:>22}",
            s / *len as f64,
            r / *len as f64,
            ratio(rbpf, snap)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [first, rounds, n] = args.as_slice()
        && first == "interleave"
    {
        let rounds = rounds.parse().unwrap_or_else(|_| usage());
        let n = n.parse().unwrap_or_else(|_| usage());
        interleave(rounds, n);
        return;
    }
    let [case, n] = args.as_slice() else { usage() };
    let n: u64 = n.parse().unwrap_or_else(|_| usage());
    let (kind, size) = case.rsplit_once('_').unwrap_or_else(|| usage());
    let size: usize = size.parse().unwrap_or_else(|_| usage());

    let start = Instant::now();
    match kind {
        "ipv4" | "snap_hop" | "snap_turn" | "snap_return" => {
            if !PAYLOADS.contains(&size) {
                usage();
            }
            let len = PingStep::new(Where::Hop, size).len();
            if kind == "ipv4" {
                let mut s = Ipv4Step::new(len);
                run(n, || s.step());
            } else {
                let at = match kind {
                    "snap_hop" => Where::Hop,
                    "snap_turn" => Where::Turn,
                    _ => Where::Return,
                };
                let mut s = PingStep::new(at, size);
                run(n, || s.step());
            }
            println!("{case}: packet {len} bytes");
        }
        "snap" | "rbpf" => {
            let ops = match size {
                202 | 8 => size - 2,
                _ => usage(),
            };
            assert_eq!(straight_len(ops), size);
            if kind == "snap" {
                let mut s = StraightStep::new(ops);
                run(n, || s.step());
            } else {
                let prog = straight_ebpf(ops);
                check_ebpf(&prog);
                let vm = rbpf::EbpfVmNoData::new(Some(&prog)).unwrap();
                run(n, || vm.execute_program().unwrap());
            }
        }
        _ => usage(),
    }
    let elapsed = start.elapsed();
    println!(
        "{case}: {n} steps, {:.1} ns/step (wall, setup included)",
        elapsed.as_nanos() as f64 / n.max(1) as f64
    );
}
