//! What one request costs the Trickles server, against smoltcp's TCP socket on one ACK.
//!
//! Group `trickles_server_request`, one element = one incoming segment:
//!
//! * `trickles_valid`: `Server::handle_request` on a valid normal request — segment parse
//!   and checksum, one CMAC verify, freshness and site, SACK proof (range-nonce PRFs),
//!   Bloom check-and-insert, `cc::plan`, then per planned response a packet nonce and a
//!   new continuation's CMAC — followed by `Server::emit` of every planned response with
//!   a 1362-byte payload (message encode, payload copy, TCP checksum) into a reused
//!   2048-byte buffer. The requests come from `support/server_pool.rs`: 200,000 distinct
//!   requests a real client sent on one connection, replayed in order at their recorded
//!   times (12 µs apart; default 1-s horizon and filter, nothing reconfigured). After the
//!   short slow start the window sits at its cap, so a request averages about one
//!   response (the exact ratio is printed). When the pool runs out the server is
//!   replaced by a fresh one outside the timed region.
//! * `trickles_cached`: `trickles_valid` with the socket cache on
//!   (`ServerConfig::cache_entries` = 32,768, four times the largest window): the same
//!   requests, the same work, except that a request whose continuation is cached skips its
//!   CMAC verify (each new continuation is inserted when it is MACed). The hit rate over
//!   the pool is printed.
//! * `trickles_bad_mac`: the same requests with one bit of the continuation's tag
//!   flipped, re-framed with a valid TCP checksum, so each is parsed and costs one CMAC
//!   before `Rejected::Mac` — the price of a forged packet.
//! * `trickles_replay`: the pool's requests again, at their recorded times, to a server
//!   that has already accepted them: parse, CMAC, freshness, SACK proof, Bloom hit,
//!   `Rejected::Replay` — the price of a captured packet replayed, the dearest attack.
//! * `smoltcp_ack_segment`: the baseline. A `smoltcp::socket::tcp::Socket` on an
//!   established IPv4 connection (peer MSS 1362, no window scaling, timestamps or SACK;
//!   `Interface` over an in-memory `Device` with checksums computed and verified, as in
//!   ours) per element: `send_slice` of 1362 bytes into the socket, one pre-built peer ACK
//!   for the previous segment, and `Interface::poll`, which parses and checks the IPv4
//!   and TCP headers, processes the ACK, and dispatches exactly one 1362-byte segment
//!   (built and checksummed into the device's reused 1500-byte buffer). A steady ACK
//!   clock with one segment in flight; no retransmissions.
//!
//! Both sides read their input from a pre-built pool and write into one reused buffer; the
//! smoltcp side also writes the 20-byte IPv4 header, which Trickles leaves to its caller.
//! Neither includes a system call or a NIC.
//!
//! Run: `cargo bench -p trickles --bench server -- --warm-up-time 1 --measurement-time 3`.
//! The AES numbers depend on whether the build has AES-NI compiled in (see the
//! `Performance` section of `trickles::crypto`).

// Bench harness: a failed setup should abort loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// `#[path]` on purpose: Cargo gives bench and example targets no module they can share
// (each is its own crate root; `benches/support/mod.rs` reaches only the benches), and a
// separate support crate for two files would publish test scaffolding. Both targets
// include the same two files.
// Shared with the example, which uses the small-window items this bench does not.
#[allow(dead_code)]
#[path = "support/server_pool.rs"]
mod server_pool;
#[path = "support/smoltcp_peer.rs"]
mod smoltcp_peer;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use server_pool::{CLIENT, Recorded, SERVER, cached_config, forged, serve, server_config};
use smoltcp_peer::{MSS, SmolConn, last_sent};
use trickles::server::ServerConfig;
use trickles::server::{Rejected, Server};

const POOL: usize = 200_000;

/// Checks once, untimed, that a fresh server with `cfg` accepts the whole pool; returns
/// the average number of responses per request and the server.
fn validate(pool: &[Recorded], cfg: ServerConfig) -> (f64, Server) {
    let mut server = Server::new(cfg);
    let mut responses = 0usize;
    for r in pool {
        let reply = server
            .handle_request(
                trickles::Instant::from_micros(r.now_us),
                CLIENT,
                SERVER,
                &r.segment,
            )
            .expect("a fresh server accepts every pool request");
        responses += reply.responses.len();
    }
    (responses as f64 / pool.len() as f64, server)
}

/// Times `serve` over the pool in order, the way `trickles_valid` and `trickles_cached`
/// do: a fresh server from `cfg` whenever the pool runs out, outside the timed region.
fn bench_pool(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    pool: &[Recorded],
    cfg: ServerConfig,
) {
    let payload = vec![0x5au8; MSS];
    let mut out = vec![0u8; 2048];
    let mut server = Server::new(cfg);
    let mut next = 0usize;
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                if next == pool.len() {
                    server = Server::new(cfg);
                    next = 0;
                }
                let chunk = left.min(pool.len() - next);
                let batch = &pool[next..next + chunk];
                let start = Instant::now();
                for r in batch {
                    black_box(serve(&mut server, r.now_us, &r.segment, &payload, &mut out));
                }
                timed += start.elapsed();
                next += chunk;
                left -= chunk;
            }
            timed
        })
    });
}

fn trickles(c: &mut Criterion) {
    let t0 = Instant::now();
    let pool = server_pool::generate(POOL);
    let (per_request, _) = validate(&pool, server_config());
    let (_, cached) = validate(&pool, cached_config());
    let stats = cached.cache_stats();
    eprintln!(
        "trickles pool: {} requests in {:.1?}, {per_request:.4} responses per request, {}..{} bytes",
        pool.len(),
        t0.elapsed(),
        pool.iter().map(|r| r.segment.len()).min().unwrap(),
        pool.iter().map(|r| r.segment.len()).max().unwrap(),
    );
    eprintln!(
        "trickles_cached: {} of {} requests hit the cache ({:.2}%), {} entries",
        stats.hits,
        stats.hits + stats.misses,
        100.0 * stats.hit_rate(),
        cached.cache_capacity()
    );
    let forged = forged(&pool);
    let payload = vec![0x5au8; MSS];
    let mut out = vec![0u8; 2048];

    let mut g = c.benchmark_group("trickles_server_request");
    g.throughput(Throughput::Elements(1));

    bench_pool(&mut g, "trickles_valid", &pool, server_config());
    bench_pool(&mut g, "trickles_cached", &pool, cached_config());

    // Garbage leaves the server unchanged, so one server and a cycling index do.
    let mut server = Server::new(server_config());
    let mut i = 0usize;
    let now = pool[0].now_us;
    g.bench_function("trickles_bad_mac", |b| {
        b.iter(|| {
            let seg = &forged[i];
            i = if i + 1 == forged.len() { 0 } else { i + 1 };
            let verdict = server.handle_request(
                trickles::Instant::from_micros(now),
                CLIENT,
                SERVER,
                black_box(seg),
            );
            black_box(verdict.map(|r| r.responses.len()))
        })
    });
    assert_eq!(
        server
            .handle_request(
                trickles::Instant::from_micros(now),
                CLIENT,
                SERVER,
                &forged[0]
            )
            .err(),
        Some(Rejected::Mac)
    );

    // Replays: a server that has accepted the whole pool, fed it again at the pool's last
    // time. Its filter remembers one to two horizons back and a continuation is fresh for
    // one, so the requests of the last 0.8 s (their continuations at most ~0.1 s older)
    // are all true replays; cycle over those.
    let mut server = Server::new(server_config());
    for r in &pool {
        serve(&mut server, r.now_us, &r.segment, &payload, &mut out);
    }
    let horizon = server.config().replay.horizon_us;
    let last = pool.last().unwrap().now_us;
    let tail_start = pool.partition_point(|r| r.now_us + horizon * 8 / 10 < last);
    let tail = &pool[tail_start..];
    assert!(tail.len() > 10_000, "replay tail too short: {}", tail.len());
    for r in tail {
        assert_eq!(
            server
                .handle_request(
                    trickles::Instant::from_micros(last),
                    CLIENT,
                    SERVER,
                    &r.segment
                )
                .err(),
            Some(Rejected::Replay)
        );
    }
    let mut i = 0usize;
    g.bench_function("trickles_replay", |b| {
        b.iter(|| {
            let seg = &tail[i].segment;
            i = if i + 1 == tail.len() { 0 } else { i + 1 };
            let verdict = server.handle_request(
                trickles::Instant::from_micros(last),
                CLIENT,
                SERVER,
                black_box(seg),
            );
            black_box(verdict.map(|r| r.responses.len()))
        })
    });

    smoltcp_baseline(&mut g);
    g.finish();
}

fn smoltcp_baseline(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let payload = [0x5au8; MSS];
    // Check, untimed, that every step sends exactly one full segment with the expected
    // sequence number.
    let mut conn = SmolConn::new(POOL);
    for _ in 0..10_000 {
        let (seq, sent) = (conn.next_seq, conn.dev.sent);
        conn.step(&payload);
        assert_eq!(conn.dev.sent, sent + 1);
        assert_eq!(last_sent(&conn.dev), (seq, MSS));
    }

    let mut conn = SmolConn::new(POOL);
    g.bench_function("smoltcp_ack_segment", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                if conn.acks_left() == 0 {
                    conn.refill();
                }
                let chunk = left.min(conn.acks_left());
                let start = Instant::now();
                for _ in 0..chunk {
                    conn.step(&payload);
                }
                timed += start.elapsed();
                left -= chunk;
            }
            timed
        })
    });
    let sent = conn.dev.sent;
    conn.step(&payload);
    assert_eq!(conn.dev.sent, sent + 1, "the connection is still clocking");
}

criterion_group!(benches, trickles);
criterion_main!(benches);
