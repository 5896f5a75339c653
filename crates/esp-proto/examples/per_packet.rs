//! Runs `N` packets through one step of the per-packet bench (`benches/esp.rs`), for
//! instruction counts under callgrind, where wall-clock times on a shared machine are too
//! noisy:
//!
//! ```text
//! cargo build --release -p esp-proto --features alloc --example per_packet
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/per_packet <which> <N>
//! ```
//!
//! `which` is one of
//!
//! * `baseline` or `etherparse`: the IPv4 forwarding baselines;
//! * a case, `count`, `compare`, `collect`, `rcollect1_dup`, `rcollect1_new`,
//!   `rcollect8_dup` or `rcollect8_new`: `process` on a bare ESP header;
//! * `full_<case>`: the baseline's work, then `locate` and `process` on a dedicated IPv4
//!   packet;
//! * `reset_<case>`: only the put-back of the new-child RCOLLECT state, which the other two
//!   include.
//!
//! Setup (filling the store, checking the path) is the same for any `N`, so instructions per
//! packet are `(Ir(N2) - Ir(N1)) / (N2 - N1)`.
// bench harness: panics on setup are bugs.
#![allow(clippy::expect_used)]

#[allow(dead_code)] // shared with the criterion bench
#[path = "../benches/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Instant as Wall;

use support::{Baseline, Case, PerPacket};

fn usage() -> ! {
    eprintln!(
        "usage: per_packet <baseline|etherparse|CASE|full_CASE|reset_CASE> <N>\n\
         CASE: count compare collect rcollect1_dup rcollect1_new rcollect8_dup rcollect8_new"
    );
    std::process::exit(2)
}

/// Runs `step` `n` times, returning how many packets it forwarded.
fn run<T>(n: u64, mut step: impl FnMut() -> T, forwards: impl Fn(&T) -> bool) -> u64 {
    let mut fwd = 0;
    for _ in 0..n {
        let out = black_box(step());
        fwd += u64::from(forwards(&out));
    }
    fwd
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [which, n] = args.as_slice() else { usage() };
    let n: u64 = n.parse().unwrap_or_else(|_| usage());
    let forwarded = |p: &esp_proto::exec::Processed| p.verdict == esp_proto::exec::Verdict::Forward;

    let start = Wall::now();
    let fwd = match which.as_str() {
        "baseline" => {
            let mut b = Baseline::new();
            run(n, || b.ours(), Option::is_some)
        }
        "etherparse" => {
            let mut b = Baseline::new();
            run(n, || b.etherparse(), Option::is_some)
        }
        other => {
            let (mode, name) = match other.split_once('_') {
                Some((m @ ("full" | "reset"), rest)) => (m, rest),
                _ => ("header", other),
            };
            let case = Case::from_name(name).unwrap_or_else(|| usage());
            let mut f = PerPacket::new(case);
            let (header, packet) = f.sizes();
            println!(
                "{}: ESP header {header} bytes, dedicated packet {packet} bytes",
                case.name()
            );
            match mode {
                "full" => run(n, || f.full_packet(), forwarded),
                "reset" => run(n, || f.reset(), |_| false),
                _ => run(n, || f.header_only(), forwarded),
            }
        }
    };
    let elapsed = start.elapsed();
    println!(
        "{which}: {n} packets, {fwd} forwarded, {:.1} ns/packet (wall, setup included)",
        elapsed.as_nanos() as f64 / n.max(1) as f64
    );
}
