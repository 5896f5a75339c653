//! The compiled IPv4 LPM on a large table: its size, its compile time, and random-address
//! lookups against the binary trie it was compiled from.
//!
//! ```text
//! cargo run --release -p fastpath --example lpm_large -- 500000
//! ```
//!
//! Builds `n` distinct synthetic routes (default 500,000) with a full-table-like mix of
//! lengths: 60% /24, 30% /16–/23, 8% /8–/15, 2% /25–/32, inside 223 × 200 /16s. Prints
//! the compiled table's nodes (1 KiB each) and the time `LpmTable::compile` took, checks
//! both tables agree on 100,000 addresses, then times 2^20 random lookups in each, three
//! rounds alternating (ns per lookup; the addresses fall in the same /16s, so most hit a
//! route and neither table fits in cache).
// An example binary: a failed setup step should stop it loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Instant;

use fastpath::lpm::{LpmTable, Prefix};
use sansio::SplitMix64;

/// An address in one of the 223 × 200 /16s, low 16 bits from `r`.
fn addr(r: u64) -> u32 {
    let first = 1 + (r >> 16) % 223;
    let second = (r >> 24) % 200;
    ((first << 24) | (second << 16)) as u32 | (r as u32 & 0xffff)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("n is a number"))
        .unwrap_or(500_000);
    let mut rng = SplitMix64::new(42);
    let mut table = LpmTable::new();
    while table.len() < n {
        let r = rng.next_u64();
        let spread = (r >> 8) as u8 % 8;
        let len = match r % 100 {
            0..=59 => 24,
            60..=89 => 16 + spread,
            90..=97 => 8 + spread,
            _ => 25 + spread,
        };
        let mask = u32::MAX << (32 - u32::from(len));
        let prefix = Prefix::new((addr(r >> 16) & mask).to_be_bytes(), len).unwrap();
        table.insert(prefix, (r >> 40) as u16);
    }
    let t0 = Instant::now();
    let compiled = table.compile();
    let took = t0.elapsed();
    println!(
        "routes {}, nodes {} ({:.1} MiB), compile {:.1} ms",
        compiled.len(),
        compiled.nodes(),
        compiled.nodes() as f64 / 1024.0,
        took.as_secs_f64() * 1e3
    );
    let addrs: Vec<[u8; 4]> = (0..1 << 20)
        .map(|_| addr(rng.next_u64()).to_be_bytes())
        .collect();
    for &a in addrs.iter().take(100_000) {
        assert_eq!(compiled.lookup(a), table.lookup(a), "at {a:?}");
    }
    for round in 0..3 {
        let time = |f: &dyn Fn([u8; 4]) -> u64| {
            let t0 = Instant::now();
            let sum: u64 = addrs.iter().map(|&a| f(black_box(a))).sum();
            (t0.elapsed().as_nanos() as f64 / addrs.len() as f64, sum)
        };
        let (trie, s1) = time(&|a| table.lookup(a).map_or(0, |(_, &v)| u64::from(v)));
        let (comp, s2) = time(&|a| compiled.lookup(a).map_or(0, |(_, &v)| u64::from(v)));
        assert_eq!(s1, s2);
        println!(
            "round {round}: trie {trie:.1} ns, compiled {comp:.1} ns, trie / compiled {:.1}",
            trie / comp
        );
    }
}
