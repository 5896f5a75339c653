//! Valid Trickles requests recorded from a loss-free client, for the server benches.
//!
//! Shared by `benches/server.rs` and `examples/server_per_request.rs` (each includes it
//! with `#[path]`). A continuation is good for one request (the replay filter refuses it
//! after that), so a bench cannot repeat one request: it needs a pool of distinct ones.
//!
//! [`generate`] runs a real [`Client`] against a recording [`Server`] with the same keys
//! and configuration as the bench server. One virtual clock advances [`STEP_US`] per
//! request the recorder receives; each response reaches the client at once, and the
//! client's requests queue in FIFO order. The pool keeps every normal request
//! ([`RequestKind::Request`]) the recorder accepted, with the time it arrived. Replayed in
//! order at those times, a fresh server with [`server_config`] accepts every one of them:
//! the timestamps are within the default 1-s horizon of the continuations they carry (the
//! FIFO holds about one window, at most 8191 × 12 µs ≈ 98 ms), the filter rotates at the
//! same instants, and it holds a subset of the recorder's entries, so it cannot report a
//! replay the recorder did not.

use std::collections::VecDeque;
use std::hint::black_box;

use trickles::Instant;
use trickles::client::{Client, ClientConfig};
use trickles::conn::{Addr, FourTuple};
use trickles::crypto::KeyConfig;
use trickles::server::{DEFAULT_MSS, Server, ServerConfig};
use trickles::wire::{self, Request, RequestKind, SegmentHeader};

/// The client's address.
pub(crate) const CLIENT: Addr = Addr::V4([192, 0, 2, 1]);
/// The server's address.
pub(crate) const SERVER: Addr = Addr::V4([198, 51, 100, 7]);
/// Virtual time between two requests: 12 µs, about 83,000 requests/s, the load the
/// default replay filter is sized for (1 Gb/s of 1500-byte packets).
pub(crate) const STEP_US: u64 = 12;
/// Virtual time of the first request.
pub(crate) const START_US: u64 = 1_000_000;

/// The bench server's keys (any fixed keys do).
pub(crate) fn keys() -> KeyConfig {
    KeyConfig {
        mac_keys: [[0x11; 16], [0x22; 16]],
        current_epoch: 1,
        nonce_key: [0x33; 16],
        rtx_nonce_key: [0x44; 16],
    }
}

/// The paper's defaults: 1-s horizon, two 2^21-bit Bloom filters, k = 6, MSS 1362.
pub(crate) fn server_config() -> ServerConfig {
    ServerConfig::new(keys())
}

/// Socket-cache entries of the `trickles_cached` cases: four times the largest window
/// (8191 continuations in flight), so a continuation almost always outlives the 8191
/// insertions made while it is in flight.
pub(crate) const CACHE_ENTRIES: usize = 32_768;

/// [`server_config`] with the socket cache on ([`CACHE_ENTRIES`] entries).
pub(crate) fn cached_config() -> ServerConfig {
    ServerConfig {
        cache_entries: CACHE_ENTRIES,
        ..server_config()
    }
}

/// Window cap of the small-window cases: 64 packets in flight, so the socket cache's live
/// entries (one per continuation in flight) fit in a few KB.
pub(crate) const SMALL_WINDOW: u16 = 64;

/// [`server_config`] with the window capped at [`SMALL_WINDOW`]; with `cache`, the socket
/// cache on with 256 entries (four times the window).
pub(crate) fn small_window_config(cache: bool) -> ServerConfig {
    let mut cfg = server_config();
    cfg.cc.max_cwnd = SMALL_WINDOW;
    cfg.cache_entries = if cache { 256 } else { 0 };
    cfg
}

/// Window cap and initial slow-start threshold of the slow-start cases: 65,535 packets, so
/// a loss-free connection stays in slow start for its first ~32,700 requests. With delayed
/// acknowledgments each of those requests acknowledges two packets and is answered with
/// four, two of them carrying a continuation (in the steady state of [`server_config`] a
/// request is answered with two, one carrying a continuation). The FIFO of requests in
/// flight stays below the 1-s horizon (65,535 × 12 µs ≈ 0.79 s).
pub(crate) const SLOW_START_WINDOW: u16 = u16::MAX;

/// [`server_config`] with the window cap and initial threshold at [`SLOW_START_WINDOW`].
pub(crate) fn slow_start_config() -> ServerConfig {
    let mut cfg = server_config();
    cfg.cc.max_cwnd = SLOW_START_WINDOW;
    cfg.cc.initial_ssthresh = SLOW_START_WINDOW;
    cfg
}

/// The one connection the requests belong to.
pub(crate) fn tuple() -> FourTuple {
    FourTuple {
        client_addr: CLIENT,
        client_port: 40_000,
        server_addr: SERVER,
        server_port: 80,
    }
}

/// One recorded request: when it reached the server and its TCP segment.
pub(crate) struct Recorded {
    /// Arrival time at the recorder, µs.
    pub(crate) now_us: u64,
    /// The segment (TCP header and Trickles request).
    pub(crate) segment: Vec<u8>,
}

/// `n` distinct valid normal requests, in the order a server must see them.
pub(crate) fn generate(n: usize) -> Vec<Recorded> {
    generate_with(n, server_config())
}

/// [`generate`] against a server configured as `cfg` (the client simulates the same
/// congestion control).
pub(crate) fn generate_with(n: usize, cfg: ServerConfig) -> Vec<Recorded> {
    let mut recorder = Server::new(cfg);
    let client_cfg = ClientConfig {
        cc: cfg.cc,
        ..ClientConfig::default()
    };
    let mut client = Client::new(client_cfg, tuple(), 0x5eed);
    let payload = [0x5a; DEFAULT_MSS as usize];
    let mut out = vec![0u8; 2048];
    let mut sink = vec![0u8; 1 << 16];
    let mut queue = VecDeque::new();
    let mut now = Instant::from_micros(START_US);
    let mut pool = Vec::with_capacity(n);
    client.connect(now, b"GET /stream");
    while pool.len() < n {
        while let Some(seg) = client.poll_transmit() {
            queue.push_back(seg);
        }
        let Some(seg) = queue.pop_front() else {
            // Stalled (a Bloom false positive ate a request's answers): let the client
            // time out.
            now = client
                .poll_timeout()
                .expect("a stalled client has a timer")
                .max(now);
            client.handle_timeout(now);
            continue;
        };
        now = now.saturating_add(STEP_US);
        let Ok(reply) = recorder.handle_request(now, CLIENT, SERVER, &seg) else {
            continue;
        };
        let tuple = reply.event.tuple;
        let mut answers = Vec::with_capacity(reply.responses.len());
        for r in &reply.responses {
            let len = recorder
                .emit(&tuple, r, &[], &payload, false, &mut out)
                .expect("a response fits 2048 bytes");
            answers.push(out[..len].to_vec());
        }
        let parsed = wire::parse_segment(&CLIENT, &SERVER, &seg).expect("client segments parse");
        let req = Request::parse(parsed.payload).expect("client requests parse");
        if req.kind == RequestKind::Request {
            pool.push(Recorded {
                now_us: now.micros(),
                segment: seg,
            });
        }
        for a in answers {
            client
                .handle_segment(now, &a)
                .expect("the client takes the server's responses");
        }
        while client.read(&mut sink) > 0 {}
    }
    pool
}

/// Handles one request and emits every planned response; returns the responses' bytes.
#[inline(always)]
pub(crate) fn serve(
    server: &mut Server,
    now_us: u64,
    seg: &[u8],
    payload: &[u8],
    out: &mut [u8],
) -> usize {
    match server.handle_request(Instant::from_micros(now_us), CLIENT, SERVER, seg) {
        Ok(reply) => {
            let mut bytes = 0;
            for r in &reply.responses {
                bytes += server
                    .emit(&reply.event.tuple, r, &[], payload, false, out)
                    .unwrap_or(0);
                black_box(&mut *out);
            }
            bytes
        }
        Err(e) => {
            black_box(e);
            0
        }
    }
}

/// The pool's requests with one tag bit flipped, re-framed with a valid checksum.
pub(crate) fn forged(pool: &[Recorded]) -> Vec<Vec<u8>> {
    pool.iter()
        .enumerate()
        .map(|(i, r)| {
            let seg =
                wire::parse_segment(&CLIENT, &SERVER, &r.segment).expect("pool requests re-frame");
            let mut req = Request::parse(seg.payload).expect("pool requests re-frame");
            let mut c = req.continuation.expect("pool requests re-frame");
            c.tag[i % 16] ^= 1 << (i % 8);
            req.continuation = Some(c);
            let mut out = vec![0u8; wire::TCP_HEADER_LEN + req.buffer_len()];
            let n = req
                .emit(&mut out[wire::TCP_HEADER_LEN..])
                .expect("pool requests re-frame");
            let h = SegmentHeader {
                src_port: seg.src_port,
                dst_port: seg.dst_port,
                syn: false,
                seq: seg.seq,
                ack: 0,
            };
            let len = wire::finish_segment(&CLIENT, &SERVER, &h, &mut out, n)
                .expect("pool requests re-frame");
            out.truncate(len);
            out
        })
        .collect()
}
