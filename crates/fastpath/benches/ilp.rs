//! Integrated layer processing (§5.1) against the same manipulations as separate passes,
//! in one group per packet size: copy the data to the destination buffer, Internet
//! checksum of the checksum region, and (the `_aes` cases) AES-128-CTR decryption of the
//! encrypted region. The layout is a transport segment after a 20-byte network header:
//! checksum over the 8-byte transport header and the data, data and encrypted region =
//! the data.
//!
//! `cargo bench -p fastpath --bench ilp -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)] // bench harness

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fastpath::dml::{DmlHeader, RegionKind, RegionStack};
use fastpath::ilp::{AesCtr, Keystream, integrated, separate};

fn layout(data: u16) -> DmlHeader {
    let mut s = RegionStack::new();
    s.push(RegionKind::Checksum, 0, 8 + data).unwrap();
    s.push(RegionKind::Data, 8, data).unwrap();
    s.push(RegionKind::Encrypted, 8, data).unwrap();
    s.add_header(20).unwrap();
    s.finish(0)
}

fn ilp(c: &mut Criterion) {
    let ks = AesCtr::new([0x2b; 16], [1; 8]);
    for data in [64u16, 1452, 65_000] {
        let header = layout(data);
        let payload: Vec<u8> = (0..usize::from(data) + 28).map(|i| i as u8).collect();
        let mut dst = vec![0u8; usize::from(data)];
        let mut g = c.benchmark_group(format!("ilp_{data}B"));
        g.throughput(Throughput::Bytes(u64::from(data)));
        for (name, key) in [("", None), ("_aes", Some(&ks as &dyn Keystream))] {
            g.bench_function(format!("integrated{name}"), |b| {
                b.iter(|| black_box(integrated(&header, black_box(&payload), &mut dst, key)))
            });
            g.bench_function(format!("separate{name}"), |b| {
                b.iter(|| black_box(separate(&header, black_box(&payload), &mut dst, key)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, ilp);
criterion_main!(benches);
