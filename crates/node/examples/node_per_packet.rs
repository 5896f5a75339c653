//! The node's per-packet work, for instruction counts under callgrind:
//!
//! ```text
//! cargo build --release -p waist-node --example node_per_packet
//! valgrind --tool=callgrind target/release/examples/node_per_packet <case> <n>
//! ```
//!
//! Runs `n` frames of `<case>` (`baseline`, `ipv4_lpm`, `esp_count`, `esp_count_installed`,
//! `esp_count_inline`, `snap_ping`, `source_hash_hit`, `threaded_label`); the per-frame
//! count is `(Ir(2n) − Ir(n)) / n`, which cancels set-up.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // measurement driver

#[path = "../benches/support/mod.rs"]
#[allow(dead_code)]
mod support;

use support::{Baseline, Case, PerPacket};

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "ipv4_lpm".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let mut total = 0usize;
    if case == "baseline" {
        let mut b = Baseline::new();
        for _ in 0..n {
            total += usize::from(b.forward().unwrap_or(0));
        }
    } else {
        let c = Case::ALL
            .into_iter()
            .find(|c| c.name() == case)
            .expect("unknown case");
        let mut f = PerPacket::new(c);
        for _ in 0..n {
            total += f.forward();
        }
        f.check(c, n as u64);
    }
    println!("{case} {n} {total}");
}
