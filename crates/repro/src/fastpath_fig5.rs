//! Source hashing paper Fig. 5: hash collisions against table size for source hashing,
//! XOR folding and CRC, on flows between IPv4 addresses clustered in subnets.
//!
//! The paper hashed 12-byte flow ids (source address, destination address, a unique id
//! per generator entry) drawn from a hosts file, and found XOR folding collides more
//! "mainly because the IP addresses that collide at a router are mostly from the same
//! subnet", while source hashing is as random as CRC.
//!
//! **Address sets.** Real assignments are dense inside subnets: we generate a few /16s
//! filled from the bottom (hosts .1 to .250 in consecutive /24s) and a number of /24s with
//! their low addresses in use, seeded by `--seed`. **Flows.** [`FLOWS`] flow ids, each a
//! random source and destination from the set plus the generator's entry number (as in
//! the paper's generators). **Schemes.** Source hash: a random index per flow from
//! [`fastpath::assign::RandomAssigner`]; XOR folding of the flow id 16 bits at a time;
//! CRC-32 of the flow id; the paper's CRC-8 of both halves. **Collisions** for a table of
//! `m` slots: flows minus occupied slots (flows that found their slot taken), beside the
//! expectation for uniformly random indices, `n − m (1 − (1 − 1/m)^n)`.

use std::collections::HashSet;
use std::io::Write;

use fastpath::assign::RandomAssigner;
use fastpath::hashes::{crc8_halves, crc32, xor_fold16};

use crate::common::Options;
use crate::plot::{self, Chart, Series};
use sansio::SplitMix64;

/// Flows hashed into each table.
pub const FLOWS: usize = 2000;

/// Table sizes: 2^8 … 2^16.
pub const LOG2_SIZES: std::ops::RangeInclusive<u8> = 8..=16;

/// Subnet-clustered IPv4 addresses: `n16` dense /16s of `hosts16` hosts and `n24` /24s of
/// `hosts24` hosts each.
pub fn clustered_addresses(
    seed: u64,
    n16: usize,
    hosts16: usize,
    n24: usize,
    hosts24: usize,
) -> Vec<[u8; 4]> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    let mut used = HashSet::new();
    for _ in 0..n16 {
        let (a, b) = loop {
            let r = rng.next_u64();
            let ab = (128 + (r % 64) as u8, (r >> 8) as u8);
            if used.insert((ab.0, ab.1, 0u8)) {
                break ab;
            }
        };
        for h in 0..hosts16 {
            out.push([a, b, (h / 250) as u8, (h % 250 + 1) as u8]);
        }
    }
    for _ in 0..n24 {
        let (a, b, c) = loop {
            let r = rng.next_u64();
            let abc = (192 + (r % 32) as u8, (r >> 8) as u8, (r >> 16) as u8);
            if used.insert(abc) {
                break abc;
            }
        };
        for h in 0..hosts24 {
            out.push([a, b, c, (h + 1) as u8]);
        }
    }
    out
}

/// The 12-byte flow ids: source, destination, entry number.
pub fn flow_ids(seed: u64, addrs: &[[u8; 4]], n: usize) -> Vec<[u8; 12]> {
    let mut rng = SplitMix64::new(seed ^ 0x5eed);
    let len = addrs.len().max(1) as u64;
    (0..n)
        .map(|i| {
            let s = addrs[(rng.next_u64() % len) as usize];
            let d = addrs[(rng.next_u64() % len) as usize];
            let mut f = [0u8; 12];
            f[..4].copy_from_slice(&s);
            f[4..8].copy_from_slice(&d);
            f[8..].copy_from_slice(&(i as u32).to_be_bytes());
            f
        })
        .collect()
}

/// Flows that find their slot already taken, in a table of `2^log2` slots.
pub fn collisions(indices: &[u32], log2: u8) -> usize {
    let mask = (1u32 << log2) - 1;
    let slots: HashSet<u32> = indices.iter().map(|i| i & mask).collect();
    indices.len() - slots.len()
}

/// Expected collisions of `n` uniformly random indices in `m` slots.
pub fn expected(n: usize, m: usize) -> f64 {
    let (n, m) = (n as f64, m as f64);
    n - m * (1.0 - (1.0 - 1.0 / m).powf(n))
}

/// One table size.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Table size (slots).
    pub slots: usize,
    /// Collisions: source hash, XOR folding, CRC-32, CRC-8 halves.
    pub source_hash: usize,
    /// XOR folding.
    pub xor_fold: usize,
    /// CRC-32.
    pub crc32: usize,
    /// CRC-8 of both halves.
    pub crc8: usize,
    /// Expected for uniformly random indices.
    pub expected: f64,
}

/// Computes, prints, writes `fastpath-fig5.csv` and `.png`.
///
/// # Errors
///
/// If the output or the plot cannot be written.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    run_with(opts, FLOWS, out)
}

/// As [`run`] with `flows` flow ids.
///
/// # Errors
///
/// If the output or the plot cannot be written.
pub fn run_with(opts: &Options, flows: usize, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    let addrs = clustered_addresses(opts.seed, 4, 2000, 40, 60);
    let fids = flow_ids(opts.seed, &addrs, flows);
    let mut assigner = RandomAssigner::new(1, opts.seed);
    let sh: Vec<u32> = fids.iter().map(|_| assigner.next_index().get()).collect();
    let xf: Vec<u32> = fids.iter().map(|f| xor_fold16(f)).collect();
    let c32: Vec<u32> = fids.iter().map(|f| crc32(f)).collect();
    let c8: Vec<u32> = fids.iter().map(|f| crc8_halves(f)).collect();
    writeln!(
        out,
        "fastpath-fig5: collisions against table size (source hashing paper, Fig. 5)\n\
         {} addresses (4 dense /16s of 2000 hosts, 40 /24s of 60), {flows} flows of 12-byte \
         flow ids (source, destination, entry number); seed {}\n",
        addrs.len(),
        opts.seed
    )?;
    writeln!(
        out,
        "{:>7} {:>12} {:>12} {:>8} {:>12} {:>10}",
        "slots", "source hash", "XOR folding", "CRC-32", "CRC-8 halves", "random"
    )?;
    let mut rows = Vec::new();
    let mut csv = String::from("slots,source_hash,xor_fold,crc32,crc8_halves,expected_random\n");
    for log2 in LOG2_SIZES {
        let slots = 1usize << log2;
        let r = Row {
            slots,
            source_hash: collisions(&sh, log2),
            xor_fold: collisions(&xf, log2),
            crc32: collisions(&c32, log2),
            crc8: collisions(&c8, log2),
            expected: expected(flows, slots),
        };
        writeln!(
            out,
            "{:>7} {:>12} {:>12} {:>8} {:>12} {:>10.1}",
            r.slots, r.source_hash, r.xor_fold, r.crc32, r.crc8, r.expected
        )?;
        csv += &format!(
            "{},{},{},{},{},{:.2}\n",
            r.slots, r.source_hash, r.xor_fold, r.crc32, r.crc8, r.expected
        );
        rows.push(r);
    }
    writeln!(
        out,
        "\npaper: source hashing as random as CRC, XOR folding collides more (same-subnet \
         addresses fold together)"
    )?;
    std::fs::create_dir_all(&opts.dir)?;
    let csv_path = opts.dir.join("fastpath-fig5.csv");
    std::fs::write(&csv_path, csv)?;
    let series = |label: &str, f: fn(&Row) -> f64, dashed: bool| Series {
        label: label.into(),
        points: rows
            .iter()
            .map(|r| ((r.slots as f64).log2(), f(r)))
            .collect(),
        dashed,
    };
    let png = opts.dir.join("fastpath-fig5.png");
    plot::draw(
        &Chart {
            title: format!("Collisions of {flows} flows (Fig. 5)"),
            x_label: "log2(table size)".into(),
            y_label: "collisions (log scale)".into(),
            log_y: true,
            series: vec![
                series("source hash", |r| r.source_hash as f64, false),
                series("XOR folding", |r| r.xor_fold as f64, false),
                series("CRC-32", |r| r.crc32 as f64, false),
                series("CRC-8 halves", |r| r.crc8 as f64, false),
                series("uniform random (expected)", |r| r.expected, true),
            ],
        },
        &png,
    )?;
    writeln!(out, "wrote {} and {}", csv_path.display(), png.display())?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_clustered_and_distinct() {
        let a = clustered_addresses(1, 2, 300, 3, 10);
        assert_eq!(a.len(), 630);
        let set: HashSet<_> = a.iter().collect();
        assert_eq!(set.len(), a.len());
        assert_eq!(a[250][2..], [1, 1]);
    }

    #[test]
    fn collision_count_and_expectation() {
        assert_eq!(collisions(&[1, 2, 3, 257], 8), 1);
        assert_eq!(collisions(&[1, 2, 3], 8), 0);
        assert!((expected(2, 2) - 0.5).abs() < 1e-12);
    }
}
