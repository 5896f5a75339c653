//! A stream of segments into one Trickles `Server` with fixed keys.
//!
//! The input is a sequence of chunks, each `op`, `dt`, `len` (two bytes, little-endian,
//! cut to what is left) and `len` bytes of `body`. Before each chunk the clock advances by
//! `dt` ms. Then, by `op % 4`:
//!
//! 0. `body` is the segment, as it is;
//! 1. `body` is the request payload of a segment framed (valid checksum) from the client;
//! 2. a valid request (one a real client sent to a server with the same keys; which one
//!    by `op / 4`) with `body` XORed into its payload as (position `u16`, byte) triples,
//!    re-framed;
//! 3. the same valid request edited as a value, then made to verify again as only a key
//!    holder could: `body` XORs the continuation's 38 MACed bytes, then picks the kind,
//!    the retry byte and up to 8 SACK blocks (left, length), whose range nonces are
//!    recomputed with the nonce key; the continuation is re-MACed. This drives arbitrary
//!    authenticated continuations and proofs into the congestion-control planner. The
//!    proof part models a client that received those packets; the re-MAC models no real
//!    attacker (the server made every continuation it verifies), so a crash found only
//!    through it is a robustness bug, not an attack.
//!
//! Asserts: no panic; `inbound_macs()` grows by at most 1 per segment; an accepted
//! request's responses other than retransmissions have distinct packet numbers; every
//! planned response emits (with its full allowed data and a 16-byte user continuation)
//! into 2048 bytes, and the segment parses back as a response with the planned fields.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use trickles::Instant;
use trickles::client::{Client, ClientConfig};
use trickles::continuation::{CONTINUATION_LEN, Continuation, MAC_FIELDS_LEN};
use trickles::crypto::{NonceKind, ServerKeys};
use trickles::sack::{SACK_BLOCK_LEN, SackBlock};
use trickles::server::Server;
use trickles::wire::{self, Request, RequestKind, Response, ResponseKind};

#[path = "common/trickles.rs"]
mod common;
use common::{CLIENT, SERVER, START, server_config as config, tuple, xor_mutate};

/// Length of the stream the recording server sends.
const STREAM_LEN: u64 = 60_000;
/// Most chunks one input is split into.
const MAX_CHUNKS: usize = 64;

/// Emits every response of `req` (data cut at `STREAM_LEN`) as the application would.
fn answer(server: &mut Server, now: Instant, seg: &[u8]) -> Vec<Vec<u8>> {
    let Ok(reply) = server.handle_request(now, CLIENT, SERVER, seg) else {
        return Vec::new();
    };
    // As much as any response may carry: one without a continuation takes more than the
    // MSS (`payload_limit`).
    let most = trickles::limits::payload_limit(server.config().mss, false);
    let data = vec![0x42u8; usize::from(most)];
    let mut out = Vec::new();
    for r in &reply.responses {
        let start = r.range.map_or(0, |r| r.start);
        let allowed = r.allowed() as u64;
        let len = allowed.min(STREAM_LEN.saturating_sub(start)) as usize;
        let eos = start + allowed >= STREAM_LEN;
        let mut buf = vec![0u8; 2048];
        let n = server
            .emit(&reply.event.tuple, r, &[], &data[..len], eos, &mut buf)
            .expect("a planned response emits");
        buf.truncate(n);
        out.push(buf);
    }
    out
}

/// Every segment a real client sends over one connection: the SYN, normal requests, a
/// retransmit-timeout request (after dropping one round of requests) and the FIN.
fn valid_requests() -> &'static [Vec<u8>] {
    static VALID: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    VALID.get_or_init(|| {
        let mut server = Server::new(config());
        let mut client = Client::new(ClientConfig::default(), tuple(), 7);
        let mut now = START;
        client.connect(now, b"GET /");
        let mut all = Vec::new();
        for round in 0..200 {
            let mut requests = Vec::new();
            while let Some(r) = client.poll_transmit() {
                requests.push(r);
            }
            if requests.is_empty() {
                match client.poll_timeout() {
                    Some(t) => {
                        now = now.max(t);
                        client.handle_timeout(now);
                        continue;
                    }
                    None => break,
                }
            }
            now = now.saturating_add(10_000);
            all.extend(requests.iter().cloned());
            if round == 3 {
                // Lose this round: the client must time out.
                continue;
            }
            for req in &requests {
                for resp in answer(&mut server, now, req) {
                    let _ = client.handle_segment(now.saturating_add(5_000), &resp);
                }
            }
            now = now.saturating_add(5_000);
        }
        let kinds = |k: RequestKind| {
            all.iter()
                .filter(|s| {
                    let seg = wire::parse_segment(&CLIENT, &SERVER, s).expect("valid");
                    Request::parse(seg.payload).expect("valid").kind == k
                })
                .count()
        };
        assert!(kinds(RequestKind::Syn) >= 1);
        assert!(kinds(RequestKind::Request) >= 10);
        assert!(kinds(RequestKind::Timeout) >= 1);
        assert!(kinds(RequestKind::Fin) >= 1);
        all
    })
}

/// Frames `payload` as a segment from the client with a valid checksum.
fn frame(payload: &[u8], seq: u32, syn: bool) -> Option<Vec<u8>> {
    common::frame(payload, seq, syn, true)
}

/// Case 3: `req` edited by `body` and made to verify.
fn resigned(keys: &ServerKeys, req: &Request<'_>, body: &[u8]) -> Option<Vec<u8>> {
    let c = req.continuation?;
    let (xor, rest) = body.split_at(body.len().min(MAC_FIELDS_LEN));
    let mut fields = [0u8; CONTINUATION_LEN];
    c.emit(&mut fields);
    for (f, x) in fields.iter_mut().zip(xor) {
        *f ^= x;
    }
    // An edit that leaves the continuation unparsable goes in as it is (the parser's
    // rejection is tested elsewhere); keep the original then.
    let mut c = Continuation::parse(&fields).unwrap_or(c);
    let t = tuple();
    c.tag = keys.mac(c.key_epoch, &t, &c.mac_fields()).unwrap_or(c.tag);
    let mut r = *req;
    r.continuation = Some(c);
    let mut rest = rest.iter().copied();
    if let Some(k) = rest.next() {
        r.kind = match k % 4 {
            0 => RequestKind::Request,
            1 => RequestKind::Timeout,
            2 => RequestKind::Fin,
            _ => r.kind,
        };
    }
    if let Some(retry) = rest.next() {
        r.retry = retry;
    }
    let mut sack = Vec::new();
    let rest: Vec<u8> = rest.collect();
    if !rest.is_empty() {
        let nonces = keys.nonces(NonceKind::Original);
        for b in rest.chunks_exact(5).take(8) {
            let left = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) % 4096;
            let right = left.saturating_add(u32::from(b[4]));
            let block = SackBlock {
                left,
                right,
                nonce: nonces.range_nonce(c.conn_nonce, left, right),
            };
            let mut out = [0u8; SACK_BLOCK_LEN];
            block.emit(&mut out);
            sack.extend_from_slice(&out);
        }
        r.sack = &sack;
    }
    let mut payload = vec![0u8; r.buffer_len()];
    let n = r.emit(&mut payload).ok()?;
    frame(&payload[..n], c.number, false)
}

/// Case 2: `valid` with `body`'s (position, xor) triples applied to its payload.
fn mutated(valid: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    let seg = wire::parse_segment(&CLIENT, &SERVER, valid).ok()?;
    let mut payload = seg.payload.to_vec();
    xor_mutate(&mut payload, body)?;
    frame(&payload, seg.seq, seg.syn)
}

fn check_reply(server: &mut Server, now: Instant, seg: &[u8]) {
    let before = server.inbound_macs();
    let verdict = server.handle_request(now, CLIENT, SERVER, seg);
    assert!(
        server.inbound_macs() - before <= 1,
        "one segment cost {} MACs",
        server.inbound_macs() - before
    );
    let Ok(reply) = verdict else { return };
    let mut numbers: Vec<u32> = reply
        .responses
        .iter()
        .filter(|r| r.kind != ResponseKind::Retransmit)
        .map(|r| r.packet_number)
        .collect();
    let n = numbers.len();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), n, "duplicate packet numbers: {reply:?}");

    // Enough for any response: one without a continuation carries more than the MSS.
    let most = trickles::limits::payload_limit(server.config().mss, false);
    let data = vec![0x42u8; usize::from(most)];
    let ucont = reply
        .event
        .user_continuation
        .get(..16)
        .unwrap_or(reply.event.user_continuation);
    let t = reply.event.tuple;
    let mut out = [0u8; 2048];
    for r in &reply.responses {
        let len = server
            .emit(&t, r, ucont, &data, false, &mut out)
            .unwrap_or_else(|e| panic!("emit of {r:?} failed: {e}"));
        let seg = wire::parse_segment(&t.server_addr, &t.client_addr, &out[..len])
            .expect("an emitted response segment parses");
        assert_eq!((seg.src_port, seg.dst_port), (t.server_port, t.client_port));
        let resp = Response::parse(seg.payload).expect("an emitted response parses");
        assert_eq!(resp.kind, r.kind);
        assert_eq!(resp.packet_number, r.packet_number);
        assert_eq!(resp.nonce, r.nonce);
        // A request that asked for delta encoding gets the delta in place of the full
        // continuation (whose tag it carries).
        match &r.delta {
            Some(d) => {
                assert_eq!(resp.delta.as_ref(), Some(d));
                assert_eq!(resp.continuation, None);
                assert_eq!(Some(d.tag), r.continuation.map(|c| c.tag));
            }
            None => assert_eq!(resp.continuation, r.continuation),
        }
        assert_eq!(resp.user_continuation, ucont);
        assert_eq!(resp.data.len(), r.allowed());
        assert_eq!(resp.offset, r.range.map_or(0, |r| r.start));
    }
}

fuzz_target!(|input: &[u8]| {
    let valid = valid_requests();
    let keys = ServerKeys::new(&config().keys);
    let mut server = Server::new(config());
    let mut now = START;
    let mut rest = input;
    for _ in 0..MAX_CHUNKS {
        let [op, dt, l0, l1, tail @ ..] = rest else {
            break;
        };
        let len = usize::from(u16::from_le_bytes([*l0, *l1])).min(tail.len());
        let (body, next) = tail.split_at(len);
        rest = next;
        now = now.saturating_add(u64::from(*dt) * 1000);
        let pick = &valid[usize::from(*op / 4) % valid.len()];
        let seg = match op % 4 {
            0 => Some(body.to_vec()),
            1 => frame(body, 1, false),
            2 => mutated(pick, body),
            _ => wire::parse_segment(&CLIENT, &SERVER, pick)
                .ok()
                .and_then(|s| Request::parse(s.payload).ok())
                .and_then(|req| resigned(&keys, &req, body)),
        };
        if let Some(seg) = seg {
            check_reply(&mut server, now, &seg);
        }
    }
});
