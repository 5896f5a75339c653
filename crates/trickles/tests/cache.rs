//! The socket cache (§5.1): with it on, the server answers every request exactly as without
//! it, only skipping the MACs of continuations it issued itself.
//!
//! Transfers run over simulated links with the cache on; the frames that reached the server
//! are then fed, at their recorded times, to fresh servers with the cache off, on, on with
//! random clears, and compared reply by reply.

// Test code: a failed setup should abort loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use trickles::Instant;
use trickles::client::ClientConfig;
use trickles::crypto::{KeyConfig, ServerKeys};
use trickles::server::{Rejected, Server, ServerConfig};
use trickles::sim::{self, Transfer};
use trickles::wire::{self, Request, SegmentHeader};

/// A recorded frame: arrival time and the IP packet.
type Frame = (u64, Vec<u8>);

fn config(cache_entries: usize) -> ServerConfig {
    ServerConfig {
        cache_entries,
        ..ServerConfig::new(sim::sim_keys())
    }
}

/// What a server did with one frame: the rejection, or the event and every planned
/// response with the segment it emits (with a fixed payload and user continuation).
fn answer(server: &mut Server, now: u64, frame: &[u8]) -> Result<Vec<u8>, Rejected> {
    let (src, dst, tcp) = trickles::ip::unwrap(frame).expect("recorded frames unframe");
    let reply = server.handle_request(Instant::from_micros(now), src, dst, tcp)?;
    let mut out = format!("{:?}", reply.event).into_bytes();
    let payload = [0x5a; 1500];
    let mut buf = [0u8; 2048];
    for r in &reply.responses {
        out.extend_from_slice(format!("{r:?}").as_bytes());
        let n = server
            .emit(&reply.event.tuple, r, b"ucont", &payload, false, &mut buf)
            .expect("responses fit");
        out.extend_from_slice(&buf[..n]);
    }
    Ok(out)
}

/// A transfer with the cache on (checked byte-exact, and identical in every counter to the
/// same transfer without the cache), and the frames its server received.
fn recorded(t: &Transfer, cache_entries: usize) -> Vec<Frame> {
    let (on, frames) = sim::run_recorded(t, config(cache_entries), ClientConfig::default());
    let off = sim::run(t, config(0), ClientConfig::default());
    assert!(on.complete && on.byte_exact, "{on:?}");
    assert_eq!(on.elapsed_us, off.elapsed_us);
    assert_eq!(on.client, off.client);
    assert_eq!(on.server, off.server);
    assert_eq!(frames.len() as u64, on.server.segments);
    frames
}

fn conditions() -> Vec<Transfer> {
    let mut ts = Vec::new();
    ts.push(Transfer::new(300_000, 5_000));
    for (fwd, rev, seed) in [(20_000, 0, 1), (0, 20_000, 2), (50_000, 50_000, 3)] {
        let mut t = Transfer::new(300_000, 5_000);
        t.loss_fwd_ppm = fwd;
        t.loss_rev_ppm = rev;
        t.seed = seed;
        ts.push(t);
    }
    for seed in 4..=5 {
        let mut t = Transfer::new(300_000, 5_000);
        t.link = t.link.jitter(3_000);
        t.loss_fwd_ppm = 20_000;
        t.seed = seed;
        ts.push(t);
    }
    ts
}

/// A small deterministic generator for the clearing points.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

#[test]
fn replies_are_the_same_with_and_without_the_cache() {
    for (i, t) in conditions().iter().enumerate() {
        for entries in [16, 4096] {
            let frames = recorded(t, entries);
            let mut off = Server::new(config(0));
            let mut on = Server::new(config(entries));
            let mut cleared = Server::new(config(entries));
            let mut rng = Lcg(i as u64 + 1);
            let mut accepted = 0;
            for (k, (now, f)) in frames.iter().enumerate() {
                if rng.next().is_multiple_of(7) {
                    cleared.clear_cache();
                }
                let want = answer(&mut off, *now, f);
                accepted += usize::from(want.is_ok());
                assert_eq!(answer(&mut on, *now, f), want, "{t:?} frame {k}");
                assert_eq!(answer(&mut cleared, *now, f), want, "{t:?} frame {k}");
            }
            assert!(accepted > 50, "{t:?}: {accepted}");
            let (s_on, s_cl) = (on.cache_stats(), cleared.cache_stats());
            assert_eq!(off.cache_stats().hits + off.cache_stats().misses, 0);
            // Every continuation is looked up; a hit saves exactly one MAC.
            assert_eq!(on.inbound_macs() + s_on.hits, off.inbound_macs());
            assert_eq!(cleared.inbound_macs() + s_cl.hits, off.inbound_macs());
            assert_eq!(s_on.hits + s_on.misses, s_cl.hits + s_cl.misses);
            assert!(s_on.hits > 0, "{t:?} {entries}: {s_on:?}");
            if entries == 4096 {
                // Room for every continuation in flight: only the SYN's request misses.
                assert!(s_on.hit_rate() > 0.9, "{t:?}: {s_on:?}");
            }
            assert!(s_cl.hits < s_on.hits, "{t:?} {entries}: {s_cl:?} {s_on:?}");
        }
    }
}

/// `frame` with bit `bit` of its continuation's byte `byte` flipped, re-framed with a
/// valid checksum.
fn flip(frame: &[u8], byte: usize, bit: u8) -> Vec<u8> {
    let (src, dst, tcp) = trickles::ip::unwrap(frame).expect("recorded frames unframe");
    let seg = wire::parse_segment(&src, &dst, tcp).expect("recorded frames parse");
    let req = Request::parse(seg.payload).expect("recorded frames parse");
    let mut c = req.continuation.expect("a request with a continuation");
    let mut bytes = [0u8; trickles::continuation::CONTINUATION_LEN];
    c.emit(&mut bytes);
    bytes[byte] ^= 1 << bit;
    c = trickles::continuation::Continuation::parse(&bytes).expect("still decodes");
    let req = Request {
        continuation: Some(c),
        ..req
    };
    let mut out = vec![0u8; wire::TCP_HEADER_LEN + req.buffer_len()];
    let n = req
        .emit(&mut out[wire::TCP_HEADER_LEN..])
        .expect("re-frames");
    let h = SegmentHeader {
        src_port: seg.src_port,
        dst_port: seg.dst_port,
        syn: false,
        seq: seg.seq,
        ack: 0,
    };
    let len = wire::finish_segment(&src, &dst, &h, &mut out, n).expect("re-frames");
    trickles::ip::wrap(&src, &dst, &out[..len]).expect("re-frames")
}

/// A loss-free transfer's frames, and a cache-on server that has handled the first
/// `half` of them, the next of which carries a continuation it has cached.
fn half_way(entries: usize) -> (Vec<Frame>, Server, usize) {
    let frames = recorded(&Transfer::new(100_000, 5_000), entries);
    let half = frames.len() / 2;
    let mut server = Server::new(config(entries));
    for (now, f) in &frames[..half] {
        answer(&mut server, *now, f).expect("loss-free frames are accepted");
    }
    (frames, server, half)
}

#[test]
fn a_forged_copy_of_a_cached_continuation_misses_and_fails_the_mac() {
    let (frames, mut server, half) = half_way(4096);
    let (now, f) = &frames[half];
    // Bytes 24 (epoch start) and 29 (flags) would not decode; every other byte, tag
    // included, is tried.
    for byte in (0..trickles::continuation::CONTINUATION_LEN).filter(|b| ![24, 29].contains(b)) {
        let bit = (byte % 8) as u8;
        let forged = flip(f, byte, bit);
        let (stats, macs) = (server.cache_stats(), server.inbound_macs());
        let verdict = answer(&mut server, *now, &forged);
        // Flipping the key-epoch byte names a dead epoch: still a MAC failure.
        assert_eq!(verdict, Err(Rejected::Mac), "byte {byte} bit {bit}");
        assert_eq!(server.cache_stats().misses, stats.misses + 1);
        assert_eq!(server.cache_stats().hits, stats.hits);
        assert_eq!(server.inbound_macs(), macs + 1, "the forgery cost its MAC");
    }
    // The genuine continuation is still cached, and accepted once.
    let hits = server.cache_stats().hits;
    assert!(answer(&mut server, *now, f).is_ok());
    assert_eq!(server.cache_stats().hits, hits + 1);
}

#[test]
fn a_replayed_cached_continuation_is_still_refused() {
    let (frames, mut server, half) = half_way(4096);
    let (now, f) = &frames[half];
    assert!(answer(&mut server, *now, f).is_ok());
    let hits = server.cache_stats().hits;
    for later in [0, 1_000, 100_000] {
        assert_eq!(
            answer(&mut server, now + later, f),
            Err(Rejected::Replay),
            "replayed {later} µs later"
        );
    }
    assert_eq!(
        server.cache_stats().hits,
        hits + 3,
        "the replays hit the cache"
    );
}

#[test]
fn rotation_invalidates_entries_of_dead_epochs() {
    let (frames, mut once, half) = half_way(4096);
    let (now, f) = &frames[half];
    let mut off = Server::new(config(0));
    for (now, f) in &frames[..half] {
        answer(&mut off, *now, f).expect("loss-free frames are accepted");
    }
    // One rotation: the continuation's epoch is still live, its entry still hits.
    once.keys_mut().rotate([0x77; 16]);
    off.keys_mut().rotate([0x77; 16]);
    let hits = once.cache_stats().hits;
    let want = answer(&mut off, *now, f);
    assert!(want.is_ok());
    assert_eq!(answer(&mut once, *now, f), want);
    assert_eq!(once.cache_stats().hits, hits + 1);
    // Two: its epoch is dead; the entry misses and the MAC fails.
    let (_, mut twice, _) = half_way(4096);
    twice.keys_mut().rotate([0x77; 16]);
    twice.keys_mut().rotate([0x78; 16]);
    let (stats, macs) = (twice.cache_stats(), twice.inbound_macs());
    assert_eq!(answer(&mut twice, *now, f), Err(Rejected::Mac));
    assert_eq!(twice.cache_stats().misses, stats.misses + 1);
    assert_eq!(twice.inbound_macs(), macs + 1);
}

#[test]
fn replaced_keys_invalidate_entries_even_in_the_same_epoch() {
    let (frames, mut server, half) = half_way(4096);
    // New MAC keys under the same epoch numbers (as after 256 rotations): the cached tags
    // are no longer valid, so the entries must not vouch for them.
    let keys = KeyConfig {
        mac_keys: [[0x55; 16], [0x66; 16]],
        ..sim::sim_keys()
    };
    *server.keys_mut() = ServerKeys::new(&keys);
    let (now, f) = &frames[half];
    let stats = server.cache_stats();
    assert_eq!(answer(&mut server, *now, f), Err(Rejected::Mac));
    assert_eq!(server.cache_stats().misses, stats.misses + 1);
    assert_eq!(server.cache_stats().hits, stats.hits);
}

/// `handle_request_into` with one reused `Vec` accepts, rejects and plans exactly what
/// `handle_request` does, and leaves the `Vec` empty on a rejection.
#[test]
fn handle_request_into_answers_as_handle_request() {
    let t = &conditions()[1];
    let frames = recorded(t, 16);
    let mut a = Server::new(config(0));
    let mut b = Server::new(config(0));
    let mut responses = vec![trickles::server::PlannedResponse {
        kind: wire::ResponseKind::Data,
        packet_number: 0,
        nonce: 0,
        continuation: None,
        delta: None,
        range: None,
        limit: 0,
    }];
    let (mut accepted, mut rejected) = (0, 0);
    for (k, (now, f)) in frames.iter().enumerate() {
        // Every frame, and every fifth one again with a flipped continuation bit.
        let (src, dst, tcp) = trickles::ip::unwrap(f).unwrap();
        let has_continuation = wire::parse_segment(&src, &dst, tcp)
            .ok()
            .and_then(|seg| Request::parse(seg.payload).ok())
            .is_some_and(|r| r.continuation.is_some());
        let forged = (k % 5 == 0 && has_continuation).then(|| flip(f, 3, 1));
        for frame in std::iter::once(f).chain(forged.as_ref()) {
            let (src, dst, tcp) = trickles::ip::unwrap(frame).unwrap();
            let now = Instant::from_micros(*now);
            let want = a.handle_request(now, src, dst, tcp);
            let got = b.handle_request_into(now, src, dst, tcp, &mut responses);
            match want {
                Ok(reply) => {
                    accepted += 1;
                    assert_eq!(got, Ok(reply.event), "frame {k}");
                    assert_eq!(responses, reply.responses, "frame {k}");
                }
                Err(e) => {
                    rejected += 1;
                    assert_eq!(got, Err(e), "frame {k}");
                    assert!(responses.is_empty(), "frame {k}");
                }
            }
        }
    }
    assert!(accepted > 50 && rejected > 10, "{accepted} {rejected}");
    assert_eq!(a.inbound_macs(), b.inbound_macs());
}
