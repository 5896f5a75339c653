//! One integrated-layer-processing case run N times, for instruction counts with
//! callgrind (the `ilp` bench's layout: a 20-byte network header, an 8-byte transport
//! header, the data; checksum over transport header and data; the data encrypted):
//!
//! ```text
//! cargo build --release -p fastpath --example dml_ilp
//! for c in integrated separate integrated_aes separate_aes; do
//!   for n in 2000 4000; do
//!     valgrind --tool=callgrind --callgrind-out-file=/tmp/ilp.$c.$n \
//!         target/release/examples/dml_ilp $c 1452 $n
//!   done
//! done
//! ```
//!
//! Instructions per packet = (Ir(2N) − Ir(N)) / N. The DML header is parsed from the
//! packet on every run, as a receiver would.

// An example binary: bad arguments should stop it loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::hint::black_box;

use fastpath::dml::{DmlHeader, RegionKind, RegionStack};
use fastpath::ilp::{AesCtr, Keystream, integrated, separate};

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args
        .next()
        .expect("case: integrated|separate|integrated_aes|separate_aes");
    let data: u16 = args.next().expect("data bytes").parse().expect("a number");
    let n: usize = args.next().expect("N").parse().expect("a number");
    let mut s = RegionStack::new();
    s.push(RegionKind::Checksum, 0, 8 + data).unwrap();
    s.push(RegionKind::Data, 8, data).unwrap();
    s.push(RegionKind::Encrypted, 8, data).unwrap();
    s.add_header(20).unwrap();
    let header = s.finish(0);
    let mut packet = vec![0u8; header.buffer_len()];
    header.emit(&mut packet).unwrap();
    packet.extend((0..usize::from(data) + 28).map(|i| i as u8));
    let ks = AesCtr::new([0x2b; 16], [1; 8]);
    type Pass = for<'a, 'b, 'c, 'd> fn(
        &'a DmlHeader,
        &'b [u8],
        &'c mut [u8],
        Option<&'d dyn Keystream>,
    )
        -> Result<fastpath::ilp::IlpOutput, fastpath::ilp::IlpError>;
    let (pass, key): (Pass, Option<&dyn Keystream>) = match case.as_str() {
        "integrated" => (integrated, None),
        "separate" => (separate, None),
        "integrated_aes" => (integrated, Some(&ks)),
        "separate_aes" => (separate, Some(&ks)),
        other => panic!("unknown case {other}"),
    };
    let mut dst = vec![0u8; usize::from(data)];
    let mut acc = 0u64;
    for _ in 0..n {
        let (h, payload) = DmlHeader::parse(black_box(&packet)).unwrap();
        let out = pass(&h, payload, &mut dst, key).unwrap();
        acc = acc.wrapping_add(u64::from(out.checksum.unwrap_or(0)) + u64::from(dst[0]));
    }
    println!("{case} {data} {n} {acc}");
}
