//! One Table 4 / Table 5 case run N times, for instruction counting with callgrind:
//!
//! ```text
//! cargo build --release -p fastpath --example sh_lookup
//! valgrind --tool=callgrind --toggle-collect='*case_lookup_source_hash*' \
//!     target/release/examples/sh_lookup lookup_source_hash 10000
//! ```
//!
//! Collected Ir divided by N is the instructions per packet of that case, call included.
//! Every case starts from the same packet: an IPv4 header whose first option is the
//! source-hash option ([`fastpath::wire`]) with the 12-byte flow id of the paper's
//! experiments (source, destination, unique id); the hashed cases hash those 12 bytes.
//!
//! * `index_*` (Table 4): compute the table index only — `source_hash` (one aligned load
//!   and a mask), `xor_fold` (16 bits at a time), `crc` (CRC-32, table-driven), `crc8`
//!   (the paper's CRC-8 of both halves), `siphash` (keyed SipHash-1-3).
//! * `lookup_*` (Table 5): reach the forwarding information — index, then compare the
//!   flow id and read the entry: `source_hash`, `xor_fold` and `crc` index the same
//!   [`FlowCache`]; `siphash` and `fxhash` are `hashbrown` maps keyed by the flow id; and
//!   `threaded` is the crate's `ThreadedTable::forward_packet` (read the
//!   label, index the table, rewrite the label); `threaded_plain` is the bare step the
//!   paper counted (a 32-bit index, a `(port, next index)` array, the index rewritten)
//!   without the label's kind bit and hop limit.

// An example binary: a failed setup step should stop it loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::hash::Hasher;
use std::hint::black_box;

use fastpath::hashes::{crc8_halves, crc32, xor_fold16};
use fastpath::threaded::{Entry, Label, NextHop, ThreadedTable};
use fastpath::wire::{SourceHashOption, insert_ipv4_option};
use fastpath::{FlowCache, FlowId, SourceHash};
use siphasher::sip::SipHasher13;

/// Cache and map size: the paper's 65536 entries.
const LOG2: u8 = 16;
const MASK: u32 = (1 << LOG2) - 1;
/// Distinct flows cycled through.
const FLOWS: usize = 256;
/// Where the flow id sits in the packet: after the option's 8 fixed bytes at offset 20.
const FID: std::ops::Range<usize> = 28..40;

type Fx = hashbrown::HashMap<FlowId, u32, rustc_hash::FxBuildHasher>;
type Sip = hashbrown::HashMap<FlowId, u32, std::hash::RandomState>;

fn packets() -> Vec<Vec<u8>> {
    let mut rng = 0x1234_5678_u64;
    let mut used = std::collections::HashSet::new();
    (0..FLOWS)
        .map(|i| {
            // Random indices, redrawn on a slot collision so every lookup below is a hit
            // (a collision would make the measured path a miss).
            loop {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if used.insert((rng >> 32) as u32 & MASK) {
                    break;
                }
            }
            let src = [10, 1, (i >> 8) as u8, i as u8];
            let dst = [10, 2, 0, (i % 7) as u8];
            let mut fid = [0u8; 12];
            fid[..4].copy_from_slice(&src);
            fid[4..8].copy_from_slice(&dst);
            fid[8..].copy_from_slice(&(i as u32).to_be_bytes());
            let b = etherparse::PacketBuilder::ipv4(src, dst, 64).udp(1000, 2000);
            let mut p = Vec::new();
            b.write(&mut p, &[0u8; 32]).expect("build packet");
            let opt = SourceHashOption {
                hash: SourceHash::new((rng >> 32) as u32),
                flow_id: Some(FlowId::new(&fid).expect("12 bytes")),
            };
            insert_ipv4_option(&p, &opt).expect("option fits")
        })
        .collect()
}

#[inline(always)]
fn fid_bytes(p: &[u8]) -> &[u8] {
    &p[FID]
}

#[inline(always)]
fn flow_id(p: &[u8]) -> FlowId {
    let b: &[u8; 12] = p[FID].try_into().unwrap_or(&[0; 12]);
    FlowId::from_array(b).unwrap_or(FlowId::from_u32(0))
}

#[inline(always)]
fn source_hash(p: &[u8]) -> SourceHash {
    let w: [u8; 4] = p[24..28].try_into().unwrap_or([0; 4]);
    SourceHash::new(u32::from_be_bytes(w))
}

#[inline(never)]
fn case_index_source_hash(p: &[u8]) -> u32 {
    source_hash(p).get() & MASK
}

#[inline(never)]
fn case_index_xor_fold(p: &[u8]) -> u32 {
    xor_fold16(fid_bytes(p)) & MASK
}

#[inline(never)]
fn case_index_crc(p: &[u8]) -> u32 {
    crc32(fid_bytes(p)) & MASK
}

#[inline(never)]
fn case_index_crc8(p: &[u8]) -> u32 {
    crc8_halves(fid_bytes(p)) & MASK
}

#[inline(never)]
fn case_index_siphash(k: &SipHasher13, p: &[u8]) -> u32 {
    let mut h = *k;
    h.write(fid_bytes(p));
    (h.finish() as u32) & MASK
}

#[inline(never)]
fn case_lookup_source_hash(c: &FlowCache<u32>, p: &[u8]) -> Option<u32> {
    c.get(source_hash(p), &flow_id(p)).copied()
}

#[inline(never)]
fn case_lookup_xor_fold(c: &FlowCache<u32>, p: &[u8]) -> Option<u32> {
    c.get(SourceHash::new(xor_fold16(fid_bytes(p))), &flow_id(p))
        .copied()
}

#[inline(never)]
fn case_lookup_crc(c: &FlowCache<u32>, p: &[u8]) -> Option<u32> {
    c.get(SourceHash::new(crc32(fid_bytes(p))), &flow_id(p))
        .copied()
}

#[inline(never)]
fn case_lookup_siphash(m: &Sip, p: &[u8]) -> Option<u32> {
    m.get(&flow_id(p)).copied()
}

#[inline(never)]
fn case_lookup_fxhash(m: &Fx, p: &[u8]) -> Option<u32> {
    m.get(&flow_id(p)).copied()
}

/// The bare threaded-index step the paper counts (8 instructions): read the index,
/// index the table (port, next index), write the next index into the packet.
#[inline(never)]
fn case_lookup_threaded_plain(t: &[(u16, u32)], p: &mut [u8]) -> Option<u16> {
    let w: [u8; 4] = p.get(..4)?.try_into().ok()?;
    let &(port, next) = t.get(u32::from_be_bytes(w) as usize)?;
    p.get_mut(..4)?.copy_from_slice(&next.to_be_bytes());
    Some(port)
}

#[inline(never)]
fn case_lookup_threaded(t: &ThreadedTable, p: &mut [u8]) -> Option<u16> {
    t.forward_packet(p).ok().flatten()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "lookup_source_hash".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let pkts = packets();
    let sip_key = SipHasher13::new_with_keys(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);

    // Every table holds every flow: source hash and the maps always hit; XOR folding and
    // CRC index the same cache and may miss where two flows collide (a miss compares the
    // flow id just as a hit does).
    let fill = |f: &dyn Fn(&[u8]) -> u32| {
        let mut c = FlowCache::new(LOG2).expect("2^16 slots");
        for (i, p) in pkts.iter().enumerate() {
            c.insert(SourceHash::new(f(p)), flow_id(p), i as u32);
        }
        c
    };
    let sh = fill(&|p| source_hash(p).get());
    let xf = fill(&|p| xor_fold16(fid_bytes(p)));
    let cr = fill(&|p| crc32(fid_bytes(p)));
    let sip: Sip = pkts
        .iter()
        .enumerate()
        .map(|(i, p)| (flow_id(p), i as u32))
        .collect();
    let fx: Fx = pkts
        .iter()
        .enumerate()
        .map(|(i, p)| (flow_id(p), i as u32))
        .collect();
    // Threaded: a label word in front of each packet, one entry per flow.
    let mut table = ThreadedTable::with_len(FLOWS);
    for i in 0..FLOWS {
        let e = Entry {
            next_hop: NextHop::Neighbour((i % 16) as u16),
            next_index: (i as u32 * 7) % FLOWS as u32,
        };
        table.set(i as u32, e).expect("index in range");
    }
    let plain: Vec<(u16, u32)> = (0..FLOWS)
        .map(|i| ((i % 16) as u16, (i as u32 * 7) % FLOWS as u32))
        .collect();
    let mut labelled: Vec<Vec<u8>> = (0..FLOWS)
        .map(|i| {
            let mut p = vec![0u8; 4];
            Label::threaded(i as u32, 255).emit(&mut p).expect("label");
            p
        })
        .collect();

    let mut acc = 0u64;
    for i in 0..n {
        let p = &pkts[i % FLOWS];
        let p = black_box(p.as_slice());
        let v = match case.as_str() {
            "index_source_hash" => u64::from(case_index_source_hash(p)),
            "index_xor_fold" => u64::from(case_index_xor_fold(p)),
            "index_crc" => u64::from(case_index_crc(p)),
            "index_crc8" => u64::from(case_index_crc8(p)),
            "index_siphash" => u64::from(case_index_siphash(&sip_key, p)),
            "lookup_source_hash" => u64::from(case_lookup_source_hash(&sh, p).expect("hit")),
            "lookup_xor_fold" => u64::from(case_lookup_xor_fold(&xf, p).unwrap_or(u32::MAX)),
            "lookup_crc" => u64::from(case_lookup_crc(&cr, p).unwrap_or(u32::MAX)),
            "lookup_siphash" => u64::from(case_lookup_siphash(&sip, p).expect("hit")),
            "lookup_fxhash" => u64::from(case_lookup_fxhash(&fx, p).expect("hit")),
            "lookup_threaded" => {
                let l = &mut labelled[i % FLOWS];
                // Keep the hop limit from running out: reset the label each time.
                Label::threaded((i % FLOWS) as u32, 255)
                    .emit(l)
                    .expect("label");
                u64::from(case_lookup_threaded(&table, black_box(l)).expect("forwarded"))
            }
            "lookup_threaded_plain" => {
                let l = &mut labelled[i % FLOWS];
                l.copy_from_slice(&((i % FLOWS) as u32).to_be_bytes());
                u64::from(case_lookup_threaded_plain(&plain, black_box(l)).expect("in range"))
            }
            other => {
                eprintln!("unknown case {other}");
                std::process::exit(2);
            }
        };
        acc = acc.wrapping_add(v);
    }
    println!("{case} {n} {acc}");
}
