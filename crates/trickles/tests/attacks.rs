//! Attacks on the stateless server (§2.2): each test fails loudly if its defence breaks.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use trickles::Instant;
use trickles::client::{Client, ClientConfig};
use trickles::conn::{Addr, FourTuple};
use trickles::continuation::{CONTINUATION_LEN, Continuation};
use trickles::crypto::KeyConfig;
use trickles::sack::{SACK_BLOCK_LEN, SackBlock};
use trickles::server::{Rejected, Server, ServerConfig};
use trickles::wire::{self, Request, RequestKind, SegmentHeader};

const CLIENT: Addr = Addr::V4([10, 0, 0, 1]);
const SERVER: Addr = Addr::V4([10, 0, 0, 2]);

fn keys() -> KeyConfig {
    KeyConfig {
        mac_keys: [[1; 16], [2; 16]],
        current_epoch: 0,
        nonce_key: [3; 16],
        rtx_nonce_key: [4; 16],
    }
}

fn tuple() -> FourTuple {
    FourTuple {
        client_addr: CLIENT,
        client_port: 5555,
        server_addr: SERVER,
        server_port: 80,
    }
}

/// Answers a request the way a trivial application would (1 KB per allowed response).
fn answer(server: &mut Server, now: u64, seg: &[u8]) -> Result<Vec<Vec<u8>>, Rejected> {
    let reply = server.handle_request(Instant::from_micros(now), CLIENT, SERVER, seg)?;
    let mut out = Vec::new();
    for r in &reply.responses {
        let data = vec![7u8; r.allowed()];
        let mut buf = vec![0u8; 2048];
        let n = server
            .emit(&reply.event.tuple, r, &[], &data, false, &mut buf)
            .unwrap();
        buf.truncate(n);
        out.push(buf);
    }
    Ok(out)
}

/// A connection brought to the point where the client holds fresh requests; returns the
/// server, the client and the client's pending request segments.
///
/// The client acknowledges every packet, so the SYN's three answers give three requests
/// (the tests below index them); [`connected_with`] picks the mode, and
/// `attacks_hold_with_delayed_acks` repeats the defences with delayed acknowledgments (the
/// daemons' mode). The server grants them to whoever asks.
fn connected(now: u64) -> (Server, Client, Vec<Vec<u8>>) {
    connected_with(now, false)
}

/// [`connected`] with delayed acknowledgments asked for (and granted) or not.
fn connected_with(now: u64, delayed_ack: bool) -> (Server, Client, Vec<Vec<u8>>) {
    let mut server_cfg = ServerConfig::new(keys());
    server_cfg.cc.delayed_ack = true;
    let mut server = Server::new(server_cfg);
    let mut cfg = ClientConfig::default();
    cfg.cc.delayed_ack = delayed_ack;
    let mut client = Client::new(cfg, tuple(), 99);
    client.connect(Instant::from_micros(now), &[]);
    let syn = client.poll_transmit().unwrap();
    for seg in answer(&mut server, now, &syn).unwrap() {
        client
            .handle_segment(Instant::from_micros(now + 10_000), &seg)
            .unwrap();
    }
    let mut requests = Vec::new();
    while let Some(r) = client.poll_transmit() {
        requests.push(r);
    }
    assert!(!requests.is_empty());
    (server, client, requests)
}

/// Re-frames `req` with a valid TCP checksum (so only the Trickles defences judge it).
fn reframe(req: &Request<'_>, from: &FourTuple) -> Vec<u8> {
    let mut out = vec![0u8; wire::TCP_HEADER_LEN + req.buffer_len()];
    let n = req.emit(&mut out[wire::TCP_HEADER_LEN..]).unwrap();
    let h = SegmentHeader {
        src_port: from.client_port,
        dst_port: from.server_port,
        syn: false,
        seq: 1,
        ack: 0,
    };
    let len = wire::finish_segment(&from.client_addr, &from.server_addr, &h, &mut out, n).unwrap();
    out.truncate(len);
    out
}

fn payload(seg: &[u8]) -> &[u8] {
    wire::parse_segment(&CLIENT, &SERVER, seg).unwrap().payload
}

/// Every continuation one bit flip away from `c` that still parses, with the bit.
fn flips(c: &Continuation) -> impl Iterator<Item = (usize, Continuation)> {
    let mut bytes = [0u8; CONTINUATION_LEN];
    c.emit(&mut bytes);
    (0..CONTINUATION_LEN * 8).filter_map(move |bit| {
        let mut flipped = bytes;
        flipped[bit / 8] ^= 1 << (bit % 8);
        Continuation::parse(&flipped).ok().map(|bad| (bit, bad))
    })
}

/// The defences with delayed acknowledgments on (as the daemons run): a continuation's
/// delayed-ack flag is under its MAC (switching it either way is a forgery, one MAC, no
/// state), every other bit flip is refused, and replays and stale requests are dropped.
#[test]
fn attacks_hold_with_delayed_acks() {
    let now = 1_000_000;
    for delayed in [true, false] {
        let (mut server, _client, requests) = connected_with(now, delayed);
        let req = Request::parse(payload(&requests[0])).unwrap();
        let c = req.continuation.unwrap();
        assert_eq!(c.delayed_ack(), delayed, "granted as asked");
        // The flag switched: refused by MAC, at the cost of one MAC.
        let switched = Request {
            continuation: Some(Continuation {
                flags: c.flags ^ trickles::continuation::CONTINUATION_FLAG_DELAYED_ACK,
                ..c
            }),
            ..req
        };
        let before = server.inbound_macs();
        let verdict = answer(&mut server, now + 20_000, &reframe(&switched, &tuple()));
        assert_eq!(verdict.err(), Some(Rejected::Mac), "delayed {delayed}");
        assert_eq!(server.inbound_macs() - before, 1);
        for (bit, bad) in flips(&c) {
            let forged = Request {
                continuation: Some(bad),
                ..req
            };
            let verdict = answer(&mut server, now + 20_000, &reframe(&forged, &tuple()));
            assert_eq!(
                verdict.err(),
                Some(Rejected::Mac),
                "delayed {delayed} bit {bit}"
            );
        }
        // The honest request once, then never again; beyond the horizon, stale.
        let fresh = answer(&mut server, now + 20_000, &requests[0]).unwrap();
        assert!(!fresh.is_empty());
        assert_eq!(
            answer(&mut server, now + 30_000, &requests[0]).err(),
            Some(Rejected::Replay)
        );
        assert_eq!(
            answer(&mut server, now + 5_000_000, &requests[0]).err(),
            Some(Rejected::Stale)
        );
    }
}

#[test]
fn every_single_bit_flip_of_a_continuation_is_rejected() {
    let now = 1_000_000;
    let (mut server, _client, requests) = connected(now);
    let req = Request::parse(payload(&requests[0])).unwrap();
    let c = req.continuation.unwrap();
    for (bit, bad) in flips(&c) {
        let forged = Request {
            continuation: Some(bad),
            ..req
        };
        let before = server.inbound_macs();
        let verdict = answer(&mut server, now + 20_000, &reframe(&forged, &tuple()));
        assert_eq!(verdict.err(), Some(Rejected::Mac), "bit {bit} accepted");
        assert_eq!(
            server.inbound_macs() - before,
            1,
            "bit {bit} cost more than one MAC"
        );
    }
    // The tuple is MACed too: the same request from another port or address is refused.
    for other in [
        FourTuple {
            client_port: 5556,
            ..tuple()
        },
        FourTuple {
            client_addr: Addr::V4([10, 0, 0, 3]),
            ..tuple()
        },
        FourTuple {
            server_port: 81,
            ..tuple()
        },
    ] {
        let seg = reframe(&req, &other);
        let verdict = server.handle_request(
            Instant::from_micros(now + 20_000),
            other.client_addr,
            other.server_addr,
            &seg,
        );
        assert_eq!(verdict.err(), Some(Rejected::Mac));
    }
    // The untouched request still works: the forgeries left nothing in the replay filter.
    assert!(answer(&mut server, now + 20_000, &requests[0]).is_ok());
}

#[test]
fn a_replay_inside_the_horizon_is_dropped_and_a_stale_request_too() {
    let now = 1_000_000;
    let (mut server, _client, requests) = connected(now);
    assert!(answer(&mut server, now + 20_000, &requests[0]).is_ok());
    assert_eq!(
        answer(&mut server, now + 30_000, &requests[0]).err(),
        Some(Rejected::Replay)
    );
    // Just inside the horizon (1 s) still a replay; beyond it, stale before the filter.
    assert_eq!(
        answer(&mut server, now + 990_000, &requests[0]).err(),
        Some(Rejected::Replay)
    );
    assert_eq!(
        answer(&mut server, now + 1_200_000, &requests[1]).err(),
        Some(Rejected::Stale)
    );
    assert_eq!(
        answer(&mut server, now + 5_000_000, &requests[0]).err(),
        Some(Rejected::Stale)
    );
}

#[test]
fn a_forged_proof_that_hides_a_loss_is_rejected() {
    let now = 1_000_000;
    let (mut server, _client, requests) = connected(now);
    // The client holds packets 1..=3 (the SYN's answers). Pretend packet 2 was lost but
    // claim 1..=3 anyway, guessing the range nonce.
    let req = Request::parse(payload(requests.last().unwrap())).unwrap();
    let k = req.continuation.unwrap().number;
    let honest: Vec<SackBlock> = req.sack_chunks().map(SackBlock::parse).collect();
    assert_eq!(honest.last().unwrap().right, k);
    for guess in [0u32, 1, 0xdead_beef, honest[0].nonce ^ 1] {
        let forged = [SackBlock {
            left: 1,
            right: k,
            nonce: guess,
        }];
        let mut sack = vec![0u8; SACK_BLOCK_LEN];
        forged[0].emit((&mut sack[..]).try_into().unwrap());
        let bad = Request { sack: &sack, ..req };
        let verdict = answer(&mut server, now + 20_000, &reframe(&bad, &tuple()));
        if guess == honest[0].nonce && honest.len() == 1 {
            continue;
        }
        assert!(
            matches!(verdict, Err(Rejected::Proof(_))),
            "guess {guess:#x}: {verdict:?}"
        );
    }
}

#[test]
fn timeout_requests_cannot_buy_bandwidth() {
    let now = 1_000_000;
    let (mut server, _client, requests) = connected(now);
    let req = Request::parse(payload(&requests[0])).unwrap();
    let timeout = Request {
        kind: RequestKind::Timeout,
        ..req
    };
    let seg = reframe(&timeout, &tuple());
    // Hammer the server with the same timeout request for ten horizons, 100 per horizon.
    let mut responses = 0;
    for horizon in 0..10u64 {
        for i in 0..100u64 {
            if let Ok(r) = answer(&mut server, now + horizon * 1_000_000 + i * 5_000, &seg) {
                responses += r.len();
            }
        }
    }
    // The same timeout request (one retry slot) is answered at most once per horizon,
    // worth initialCwnd responses.
    assert!(
        responses <= 10 * 3,
        "{responses} responses from timeout requests"
    );
    assert!(responses >= 3);
    // Cycling the retry field through every value buys TIMEOUTS_PER_HORIZON per horizon.
    let mut responses = 0;
    let start = now + 20_000_000;
    for horizon in 0..10u64 {
        for retry in 0..=255u8 {
            let t = Request { retry, ..timeout };
            let at = start + horizon * 1_000_000 + u64::from(retry) * 1_000;
            if let Ok(r) = answer(&mut server, at, &reframe(&t, &tuple())) {
                responses += r.len();
            }
        }
    }
    let cap = 10 * 3 * usize::from(trickles::server::TIMEOUTS_PER_HORIZON);
    assert!(
        responses <= cap,
        "{responses} responses from timeout requests"
    );
    assert!(responses > 10 * 3);
}

proptest! {
    #[test]
    fn garbage_costs_at_most_one_mac_and_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut server = Server::new(ServerConfig::new(keys()));
        let _ = server.handle_request(Instant::from_micros(1_000), CLIENT, SERVER, &bytes);
        prop_assert!(server.inbound_macs() <= 1);
    }

    #[test]
    fn well_framed_garbage_costs_at_most_one_mac(body in proptest::collection::vec(any::<u8>(), 0..300), syn in any::<bool>()) {
        let mut server = Server::new(ServerConfig::new(keys()));
        let mut seg = vec![0u8; wire::TCP_HEADER_LEN + body.len()];
        seg[wire::TCP_HEADER_LEN..].copy_from_slice(&body);
        let h = SegmentHeader { src_port: 5555, dst_port: 80, syn, seq: 1, ack: 0 };
        let n = wire::finish_segment(&CLIENT, &SERVER, &h, &mut seg, body.len()).unwrap();
        let _ = server.handle_request(Instant::from_micros(1_000), CLIENT, SERVER, &seg[..n]);
        prop_assert!(server.inbound_macs() <= 1);
    }
}

#[test]
fn retried_requests_buy_no_trickles_and_shrinking_data() {
    let now = 1_000_000;
    let (mut server, _client, requests) = connected(now);
    let req = Request::parse(payload(&requests[0])).unwrap();
    let honest = server
        .handle_request(
            Instant::from_micros(now + 20_000),
            CLIENT,
            SERVER,
            &requests[0],
        )
        .unwrap();
    let honest_continuations = honest
        .responses
        .iter()
        .filter(|r| r.continuation.is_some())
        .count();
    assert!(honest_continuations >= 1);
    let mut extra_bytes = 0;
    for retry in 1..=255u8 {
        let again = Request { retry, ..req };
        match server.handle_request(
            Instant::from_micros(now + 30_000),
            CLIENT,
            SERVER,
            &reframe(&again, &tuple()),
        ) {
            Ok(reply) => {
                assert!(
                    reply.responses.iter().all(|r| r.continuation.is_none()),
                    "retry {retry} bought a continuation"
                );
                extra_bytes += reply.responses.iter().map(|r| r.allowed()).sum::<usize>();
            }
            Err(e) => assert!(retry > trickles::server::MAX_RETRY, "retry {retry}: {e}"),
        }
    }
    // Halving per retry: all retries together carry less than the original's data.
    let original: usize = honest.responses.iter().map(|r| r.allowed()).sum();
    assert!(
        extra_bytes < original,
        "{extra_bytes} extra bytes against {original}"
    );
}

#[test]
fn a_client_refuses_data_it_never_asked_for() {
    let now = 1_000_000;
    let (_server, mut client, _requests) = connected(now);
    let before = client.delivered();
    let spoof = wire::Response {
        kind: wire::ResponseKind::Data,
        end_of_stream: false,
        packet_number: 1_000,
        nonce: 0,
        offset: 1 << 40,
        continuation: None,
        delta: None,
        user_continuation: &[],
        data: &[0xAA; 1000],
    };
    let mut seg = vec![0u8; wire::TCP_HEADER_LEN + spoof.buffer_len()];
    let n = spoof.emit(&mut seg[wire::TCP_HEADER_LEN..]).unwrap();
    let h = SegmentHeader {
        src_port: 80,
        dst_port: 5555,
        syn: false,
        seq: 1_000,
        ack: 0,
    };
    let len = wire::finish_segment(&SERVER, &CLIENT, &h, &mut seg, n).unwrap();
    assert_eq!(
        client.handle_segment(Instant::from_micros(now + 20_000), &seg[..len]),
        Err(trickles::client::ClientError::Unrequested)
    );
    assert_eq!(client.delivered(), before);
}
