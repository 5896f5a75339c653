//! Costs of Trickles' per-packet cryptography and replay defence.
//!
//! * `trickles_mac`: our AES-128-CMAC over a continuation (54 bytes of fields after a
//!   13-byte IPv4 tuple) against HMAC-MD5 over the same 67 bytes (the original Linux
//!   module's MAC), and the full `ServerKeys::verify`; the continuation MACs of one
//!   request's responses (1, 2 and 4 IPv4 continuations), one `mac_continuation` after
//!   another against one `mac_continuations` call that runs their CMAC chains side by side.
//! * `trickles_nonce`: the nonce PRF, one packet nonce, one range nonce, and SACK proofs
//!   of 1 and 4 blocks.
//! * `trickles_replay`: `ReplayFilter::check_and_insert` with the paper's parameters
//!   against inserting into a `std` `HashSet<u64>` (cleared every 2^20 inserts).
//!
//! Run: `cargo bench -p trickles --bench primitives`. The AES numbers depend on whether the
//! build has AES-NI compiled in (see the `Performance` section of `trickles::crypto`).

// Bench harness: a failed setup should abort loudly.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use sansio::SplitMix64;
use trickles::conn::{Addr, FOUR_TUPLE_MAX_LEN, FourTuple};
use trickles::crypto::{KeyConfig, MacKey, NonceKind, ServerKeys};
use trickles::replay::{ReplayConfig, ReplayFilter};
use trickles::sack::{ProofBuilder, verify_proof};
use trickles::wire::continuation::{Continuation, EpochStart};

const FIELDS_LEN: usize = 54;

fn keys() -> ServerKeys {
    ServerKeys::new(&KeyConfig {
        mac_keys: [[0x11; 16], [0x22; 16]],
        current_epoch: 1,
        nonce_key: [0x33; 16],
        rtx_nonce_key: [0x44; 16],
    })
}

fn tuple() -> FourTuple {
    FourTuple {
        client_addr: Addr::V4([192, 0, 2, 1]),
        client_port: 40_000,
        server_addr: Addr::V4([198, 51, 100, 7]),
        server_port: 80,
    }
}

fn fields() -> [u8; FIELDS_LEN] {
    core::array::from_fn(|i| (i as u8).wrapping_mul(37))
}

fn mac(c: &mut Criterion) {
    let keys = keys();
    let tuple = tuple();
    let fields = fields();
    let mut enc = [0u8; FOUR_TUPLE_MAX_LEN];
    let n = tuple.encode(&mut enc);
    let enc = &enc[..n];
    let cmac = MacKey::new(&[0x11; 16]);
    let hmac = <Hmac<Md5> as KeyInit>::new_from_slice(&[0x11; 16]).unwrap();
    let tag = keys.mac(1, &tuple, &fields).unwrap();

    let mut g = c.benchmark_group("trickles_mac");
    g.bench_function("aes_cmac_67B", |b| {
        b.iter(|| cmac.tag(&[black_box(enc), black_box(&fields)]))
    });
    g.bench_function("hmac_md5_67B", |b| {
        b.iter(|| {
            let mut m = hmac.clone();
            m.update(black_box(enc));
            m.update(black_box(&fields));
            m.finalize().into_bytes()
        })
    });
    g.bench_function("server_keys_verify", |b| {
        b.iter(|| keys.verify(black_box(1), black_box(&tuple), black_box(&fields), &tag))
    });
    for n in [1usize, 2, 4] {
        let mut cs: Vec<Continuation> = (0..n as u32).map(continuation).collect();
        g.bench_function(format!("continuations_{n}_one_by_one"), |b| {
            b.iter(|| {
                for c in black_box(&mut cs).iter_mut() {
                    c.tag = keys.mac_continuation(&tuple, c).unwrap();
                }
            })
        });
        g.bench_function(format!("continuations_{n}_batched"), |b| {
            b.iter(|| keys.mac_continuations(&tuple, black_box(&mut cs).iter_mut()))
        });
    }
    g.finish();
}

/// A continuation as the server issues them (IPv4 bench tuple, key epoch 1), packet `i`.
fn continuation(i: u32) -> Continuation {
    Continuation {
        number: 1000 + 2 * i,
        tcp_base: 3,
        start_cwnd: 3,
        ssthresh: 8191,
        proof_start: 990,
        rtt_us: 20_000,
        timestamp_ms: 123_456,
        epoch_start: EpochStart::Open,
        rtx: 0,
        site: 0,
        key_epoch: 1,
        flags: 1,
        conn_nonce: 0x0123_4567_89ab_cdef,
        tag: [0; 16],
    }
}

fn nonce(c: &mut Criterion) {
    let keys = keys();
    let prf = keys.nonces(NonceKind::Original);
    let conn = 0x0123_4567_89ab_cdef;
    let proof = |runs: &[(u32, u32)]| {
        let mut builder = ProofBuilder::new();
        for &(first, last) in runs {
            for i in first..=last {
                builder.push(i, prf.packet_nonce(conn, i));
            }
        }
        builder.blocks().to_vec()
    };
    let one = proof(&[(100, 163)]);
    let four = proof(&[(100, 110), (112, 130), (140, 141), (150, 163)]);
    assert!(verify_proof(prf, conn, &one).is_ok());
    assert!(verify_proof(prf, conn, &four).is_ok());

    let mut g = c.benchmark_group("trickles_nonce");
    g.bench_function("r", |b| b.iter(|| prf.r(black_box(conn), black_box(101))));
    g.bench_function("packet_nonce", |b| {
        b.iter(|| prf.packet_nonce(black_box(conn), black_box(101)))
    });
    g.bench_function("range_nonce", |b| {
        b.iter(|| prf.range_nonce(black_box(conn), black_box(100), black_box(163)))
    });
    g.bench_function("verify_proof_1_block", |b| {
        b.iter(|| verify_proof(prf, black_box(conn), black_box(&one)))
    });
    g.bench_function("verify_proof_4_blocks", |b| {
        b.iter(|| verify_proof(prf, black_box(conn), black_box(&four)))
    });
    g.finish();
}

fn replay(c: &mut Criterion) {
    let mut g = c.benchmark_group("trickles_replay");
    g.bench_function("bloom_check_and_insert", |b| {
        let mut filter = ReplayFilter::new(ReplayConfig::default());
        // SplitMix64 on both sides of the comparison, so the generator cost cancels.
        let (mut rng, mut now_us) = (SplitMix64::new(1), 0u64);
        b.iter(|| {
            // 12 µs apart: about the paper's 83,333 requests per 1 s interval, so the
            // filters rotate (and clear 256 KiB) as they would at 1 Gb/s.
            now_us += 12;
            filter.check_and_insert(now_us, rng.next_u64())
        })
    });
    g.bench_function("hashset_insert", |b| {
        let mut set = HashSet::<u64>::with_capacity(1 << 20);
        let mut rng = SplitMix64::new(1);
        b.iter(|| {
            if set.len() == 1 << 20 {
                set.clear();
            }
            set.insert(rng.next_u64())
        })
    });
    g.finish();
}

criterion_group!(benches, mac, nonce, replay);
criterion_main!(benches);
