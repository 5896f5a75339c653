//! Instructions per request, for callgrind: runs the first `N` elements of one of the
//! server bench's cases (see `benches/server.rs` for exactly what each element is).
//!
//! ```text
//! cargo build --release -p trickles --example server_per_request
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/t1.out \
//!     target/release/examples/server_per_request trickles 10000
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/t2.out \
//!     target/release/examples/server_per_request trickles 20000
//! callgrind_annotate /tmp/t1.out | head; callgrind_annotate /tmp/t2.out | head
//! ```
//!
//! Ir per element = (Ir(2N) − Ir(N)) / N: everything else (building the fixed pool of
//! `POOL` requests or ACKs, setup) is the same in both runs and cancels. Cases:
//! `trickles` (valid request + emit of its responses), `trickles_into` (the same through
//! `Server::handle_request_into`, one `Vec` of responses reused), `trickles_cached` (the same with
//! the socket cache on, 32,768 entries: a cached continuation skips its MAC verify; the
//! hit count is printed), `trickles_ss` (as `trickles` on a connection still in slow start,
//! window capped at 65,535: each request is answered with four responses, two carrying a
//! continuation, where the steady state of `trickles` answers with two, one carrying a
//! continuation), `bad_mac` (a forged request), `smoltcp` (one ACK in, one
//! 1362-byte segment out). `N` is at most `POOL`; with the
//! default window cap the window stops growing after about 8,200 requests, so
//! `N` ≥ 10,000 measures the steady state.
//!
//! `server_per_request interleave ROUNDS` instead times the four cases in turn, ROUNDS
//! times over (each round: 100,000 valid requests to a fresh server, the same 100,000 to a
//! fresh server with the cache on, as many forged ones, as many smoltcp steps), and prints
//! each round's ns per element and the medians: on a shared machine the ratio within a
//! round is steadier than two separate runs.
//!
//! `server_per_request slowstart ROUNDS` times the slow-start case (`trickles_ss`: requests
//! 10,000 to 30,000 of a fresh server) and the steady-state one (`trickles`) in turn,
//! ROUNDS times, and prints ns per request and the medians.

// Example harness: bad arguments or a failed setup should abort loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// `#[path]` on purpose: Cargo gives bench and example targets no module they can share
// (each is its own crate root; `benches/support/mod.rs` reaches only the benches), and a
// separate support crate for two files would publish test scaffolding. Both targets
// include the same two files.
// Shared with the bench, which uses the items this example does not.
#[allow(dead_code)]
#[path = "../benches/support/server_pool.rs"]
mod server_pool;
#[allow(dead_code)]
#[path = "../benches/support/smoltcp_peer.rs"]
mod smoltcp_peer;

use std::hint::black_box;
use std::time::Instant;

use server_pool::{
    CLIENT, SERVER, cached_config, forged, generate, generate_with, serve, server_config,
    slow_start_config, small_window_config,
};
use smoltcp_peer::{MSS, SmolConn};
use trickles::server::Server;

/// Requests (or ACKs) built up front, whatever `N` is.
const POOL: usize = 20_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: server_per_request \
                 <trickles|trickles_into|trickles_cached|trickles_ss|small_plain|small_cached|bad_mac|smoltcp> N \
                 | small ROUNDS \
                 | slowstart ROUNDS \
                 | interleave ROUNDS";
    let mode = args.next().expect(usage);
    let n: usize = args.next().expect(usage).parse().expect(usage);
    if mode == "interleave" {
        interleave(n);
        return;
    }
    if mode == "small" {
        small_window(n);
        return;
    }
    if mode == "slowstart" {
        slow_start(n);
        return;
    }
    assert!(n <= POOL, "N is at most {POOL}");
    let payload = [0x5au8; MSS];
    let mut out = [0u8; 2048];
    match mode.as_str() {
        "trickles" | "trickles_cached" | "trickles_ss" | "small_plain" | "small_cached" => {
            let (pool, cfg) = match mode.as_str() {
                "trickles" => (generate(POOL), server_config()),
                "trickles_cached" => (generate(POOL), cached_config()),
                "trickles_ss" => (
                    generate_with(POOL, slow_start_config()),
                    slow_start_config(),
                ),
                "small_plain" => (
                    generate_with(POOL, small_window_config(false)),
                    small_window_config(false),
                ),
                _ => (
                    generate_with(POOL, small_window_config(false)),
                    small_window_config(true),
                ),
            };
            let mut server = Server::new(cfg);
            let mut bytes = 0;
            for r in &pool[..n] {
                bytes += serve(&mut server, r.now_us, &r.segment, &payload, &mut out);
            }
            assert!(bytes >= n * MSS, "every request was served");
            let s = server.cache_stats();
            println!("cache hits {} misses {}", s.hits, s.misses);
        }
        "trickles_into" => {
            // As `trickles`, through `Server::handle_request_into` with one `Vec` kept
            // across requests (no allocation per request).
            let pool = generate(POOL);
            let mut server = Server::new(server_config());
            let mut responses = Vec::new();
            let mut bytes = 0;
            for r in &pool[..n] {
                bytes += serve_into(&mut server, r, &payload, &mut out, &mut responses);
            }
            assert!(bytes >= n * MSS, "every request was served");
        }
        "bad_mac" => {
            let pool = generate(POOL);
            let forged = forged(&pool);
            let mut server = Server::new(server_config());
            let now = pool[0].now_us;
            for seg in &forged[..n] {
                black_box(
                    server
                        .handle_request(
                            trickles::Instant::from_micros(now),
                            CLIENT,
                            SERVER,
                            black_box(seg),
                        )
                        .is_err(),
                );
            }
        }
        "smoltcp" => {
            let mut conn = SmolConn::new(POOL);
            for _ in 0..n {
                conn.step(&payload);
            }
        }
        _ => panic!("{usage}"),
    }
}

/// Times the cases in turn, `rounds` times; prints ns per element.
fn interleave(rounds: usize) {
    const PER_ROUND: usize = 100_000;
    let payload = [0x5au8; MSS];
    let mut out = [0u8; 2048];
    // Requests from PER_ROUND on: past the slow start, as in the bench's steady state.
    let pool = generate(2 * PER_ROUND);
    let forged = forged(&pool);
    let mut rows = Vec::new();
    println!(
        "round  trickles_valid  trickles_cached  trickles_bad_mac  smoltcp_ack_segment  \
         trickles_into  (ns per element)"
    );
    let mut hit_rate = 0.0;
    for round in 0..rounds {
        let valid = warm_then_time(
            server_config(),
            &pool[..PER_ROUND],
            &pool[PER_ROUND..],
            &payload,
            &mut out,
        );

        // The same requests through `handle_request_into`, one `Vec` kept across them.
        let mut into = Server::new(server_config());
        let mut responses = Vec::new();
        for r in &pool[..PER_ROUND] {
            serve_into(&mut into, r, &payload, &mut out, &mut responses);
        }
        let start = Instant::now();
        for r in &pool[PER_ROUND..] {
            black_box(serve_into(&mut into, r, &payload, &mut out, &mut responses));
        }
        let valid_into = start.elapsed().as_nanos() as f64 / PER_ROUND as f64;

        let mut cached = Server::new(cached_config());
        for r in &pool[..PER_ROUND] {
            serve(&mut cached, r.now_us, &r.segment, &payload, &mut out);
        }
        let before = cached.cache_stats();
        let start = Instant::now();
        for r in &pool[PER_ROUND..] {
            black_box(serve(&mut cached, r.now_us, &r.segment, &payload, &mut out));
        }
        let with_cache = start.elapsed().as_nanos() as f64 / PER_ROUND as f64;
        let after = cached.cache_stats();
        hit_rate = (after.hits - before.hits) as f64
            / ((after.hits + after.misses) - (before.hits + before.misses)) as f64;

        // Forged continuations fail at the MAC, before anything a warm server holds.
        let mut server = Server::new(server_config());
        let now = pool[0].now_us;
        let start = Instant::now();
        for seg in &forged[PER_ROUND..] {
            black_box(
                server
                    .handle_request(
                        trickles::Instant::from_micros(now),
                        CLIENT,
                        SERVER,
                        black_box(seg),
                    )
                    .is_err(),
            );
        }
        let bad = start.elapsed().as_nanos() as f64 / PER_ROUND as f64;

        let mut conn = SmolConn::new(PER_ROUND);
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            conn.step(&payload);
        }
        let smol = start.elapsed().as_nanos() as f64 / PER_ROUND as f64;
        println!(
            "{round:5}  {valid:14.1}  {with_cache:15.1}  {bad:16.1}  {smol:19.1}  {valid_into:13.1}"
        );
        rows.push([valid, bad, smol, with_cache, valid_into]);
    }
    let median = |i: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ratios: Vec<f64> = {
        let mut v: Vec<f64> = rows.iter().map(|r| r[0] / r[2]).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let cached_ratios: Vec<f64> = {
        let mut v: Vec<f64> = rows.iter().map(|r| r[3] / r[0]).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let into_ratios: Vec<f64> = {
        let mut v: Vec<f64> = rows.iter().map(|r| r[4] / r[2]).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    println!(
        "median {:14.1}  {:15.1}  {:16.1}  {:19.1}  {:13.1}   valid/smoltcp median ratio {:.2} (rounds {:.2}..{:.2})",
        median(0),
        median(3),
        median(1),
        median(2),
        median(4),
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
    println!(
        "into/smoltcp median ratio {:.2} (rounds {:.2}..{:.2})",
        into_ratios[into_ratios.len() / 2],
        into_ratios[0],
        into_ratios[into_ratios.len() - 1]
    );
    println!(
        "cached/valid median ratio {:.3} (rounds {:.3}..{:.3}); cache hit rate {:.2}%",
        cached_ratios[cached_ratios.len() / 2],
        cached_ratios[0],
        cached_ratios[cached_ratios.len() - 1],
        100.0 * hit_rate
    );
}

/// `small ROUNDS`: the socket cache's hit path where its live entries fit in cache: a pool
/// recorded with the window capped at 64 packets, timed on a server without and with a
/// 256-entry cache, in turn, ROUNDS times.
fn small_window(rounds: usize) {
    const PER_ROUND: usize = 100_000;
    let payload = [0x5au8; MSS];
    let mut out = [0u8; 2048];
    let pool = generate_with(2 * PER_ROUND, small_window_config(false));
    println!("round  no_cache  cache  (ns per request, window 64)");
    let mut rows = Vec::new();
    let mut hit_rate = 0.0;
    for round in 0..rounds {
        let mut times = [0.0; 2];
        for (i, cache) in [false, true].into_iter().enumerate() {
            let mut server = Server::new(small_window_config(cache));
            for r in &pool[..PER_ROUND] {
                serve(&mut server, r.now_us, &r.segment, &payload, &mut out);
            }
            let before = server.cache_stats();
            let start = Instant::now();
            for r in &pool[PER_ROUND..] {
                black_box(serve(&mut server, r.now_us, &r.segment, &payload, &mut out));
            }
            times[i] = start.elapsed().as_nanos() as f64 / PER_ROUND as f64;
            let after = server.cache_stats();
            if cache {
                hit_rate = (after.hits - before.hits) as f64
                    / ((after.hits + after.misses) - (before.hits + before.misses)).max(1) as f64;
            }
        }
        println!("{round:5}  {:8.1}  {:5.1}", times[0], times[1]);
        rows.push(times);
    }
    let mut ratios: Vec<f64> = rows.iter().map(|r| r[1] / r[0]).collect();
    ratios.sort_by(f64::total_cmp);
    let median = |i: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "median {:8.1}  {:5.1}   cache/no-cache median ratio {:.3} (rounds {:.3}..{:.3}); hit rate {:.2}%",
        median(0),
        median(1),
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
        100.0 * hit_rate
    );
}

/// `slowstart ROUNDS`: ns per request in slow start (requests 10,000..30,000 of a
/// connection whose window is capped at 65,535, four responses and two continuations per
/// request) and in the steady state (as `interleave`'s valid case), in turn.
fn slow_start(rounds: usize) {
    const WARM: usize = 10_000;
    const TIMED: usize = 20_000;
    const PER_ROUND: usize = 100_000;
    let payload = [0x5au8; MSS];
    let mut out = [0u8; 2048];
    let ss_pool = generate_with(WARM + TIMED, slow_start_config());
    let pool = generate(2 * PER_ROUND);
    println!("round  slow_start  steady  (ns per request)");
    let mut rows = Vec::new();
    for round in 0..rounds {
        let ss = warm_then_time(
            slow_start_config(),
            &ss_pool[..WARM],
            &ss_pool[WARM..],
            &payload,
            &mut out,
        );
        let steady = warm_then_time(
            server_config(),
            &pool[..PER_ROUND],
            &pool[PER_ROUND..],
            &payload,
            &mut out,
        );
        println!("{round:5}  {ss:10.1}  {steady:6.1}");
        rows.push([ss, steady]);
    }
    let median = |i: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("median {:10.1}  {:6.1}", median(0), median(1));
}

/// Serves `warm` (untimed), then `timed`, on a fresh server with `cfg`: ns per timed
/// request.
fn warm_then_time(
    cfg: trickles::server::ServerConfig,
    warm: &[server_pool::Recorded],
    timed: &[server_pool::Recorded],
    payload: &[u8],
    out: &mut [u8],
) -> f64 {
    let mut server = Server::new(cfg);
    for r in warm {
        serve(&mut server, r.now_us, &r.segment, payload, out);
    }
    let start = Instant::now();
    for r in timed {
        black_box(serve(&mut server, r.now_us, &r.segment, payload, out));
    }
    start.elapsed().as_nanos() as f64 / timed.len().max(1) as f64
}

/// `serve` through `Server::handle_request_into`, with `responses` kept across calls.
fn serve_into(
    server: &mut Server,
    r: &server_pool::Recorded,
    payload: &[u8],
    out: &mut [u8],
    responses: &mut Vec<trickles::server::PlannedResponse>,
) -> usize {
    let Ok(event) = server.handle_request_into(
        trickles::Instant::from_micros(r.now_us),
        CLIENT,
        SERVER,
        black_box(&r.segment),
        responses,
    ) else {
        return 0;
    };
    let mut bytes = 0;
    for resp in responses.iter() {
        bytes += server
            .emit(&event.tuple, resp, &[], payload, false, out)
            .unwrap_or(0);
        black_box(&mut *out);
    }
    bytes
}
