//! A Trickles `Client` after `connect()`, talking to a real `Server` through a network the
//! fuzzer controls.
//!
//! Every request the client sends goes to a server with fixed keys at once; its responses
//! (a 100,000-byte stream, data cut at the end and marked end-of-stream) wait in flight.
//! The input's first byte picks the client's configuration: bit 0 asks for delta-encoded
//! continuations (`ClientConfig::delta`), so the server answers with deltas the client
//! must rebuild from its predictions. The rest is a sequence of chunks, each `op`, `arg`, `len` (two bytes, little-endian,
//! cut to what is left) and `len` bytes of `body`. By `op % 8`:
//!
//! 0. `body` is a segment to the client, as it is;
//! 1. `body` is a response payload, framed (valid checksum) from the server's address
//!    and port to the client's;
//! 2. deliver the in-flight response number `arg`;
//! 3. deliver it with `body`'s (position `u16`, byte) triples XORed into its payload,
//!    re-framed; a trailing byte cuts the payload;
//! 4. deliver it with its fields edited as a value (`body` XORs packet number, nonce,
//!    offset, kind, end-of-stream and the continuation, or the delta's fields and presence
//!    bits; it can also turn a full continuation into a delta), re-framed;
//! 5. deliver a copy of it and keep it in flight (duplication);
//! 6. drop it;
//! 7. advance the clock by `arg` × `u16(body)` µs (or to the client's deadline if `body`
//!    is empty) and call `handle_timeout`.
//!
//! Asserts: no panic; every segment `poll_transmit` returns parses with `parse_segment`
//! and `Request::parse`, and asks for deltas exactly when the client was configured to;
//! `delivered()` never decreases.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use trickles::Instant;
use trickles::client::{Client, ClientConfig};
use trickles::continuation::{CONTINUATION_LEN, Continuation};
use trickles::delta::ContinuationDelta;
use trickles::server::{Server, ServerConfig};
use trickles::wire::{self, Request, Response, ResponseKind};

#[path = "common/trickles.rs"]
mod common;
use common::{CLIENT, SERVER, START, tuple, xor_mutate};

const STREAM_LEN: u64 = 100_000;
/// Most chunks one input is split into.
const MAX_CHUNKS: usize = 128;
/// Most responses held in flight (the oldest is lost beyond it).
const MAX_IN_FLIGHT: usize = 256;

fn server_config() -> &'static ServerConfig {
    static CFG: OnceLock<ServerConfig> = OnceLock::new();
    CFG.get_or_init(common::server_config)
}

/// Frames `payload` as a segment from the server to the client.
fn frame(payload: &[u8], seq: u32) -> Option<Vec<u8>> {
    common::frame(payload, seq, false, false)
}

fn payload_of(seg: &[u8]) -> Option<&[u8]> {
    Some(wire::parse_segment(&SERVER, &CLIENT, seg).ok()?.payload)
}

/// Case 3: byte-level XOR mutation of a valid response.
fn mutated(valid: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    let mut payload = payload_of(valid)?.to_vec();
    xor_mutate(&mut payload, body)?;
    frame(&payload, 0)
}

/// Case 4: field-level mutation of a valid response.
fn edited(valid: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    let mut resp = Response::parse(payload_of(valid)?).ok()?;
    let mut b = body.iter().copied().chain(core::iter::repeat(0));
    let mut word =
        |n: usize| (0..n).fold(0u64, |acc, _| acc << 8 | u64::from(b.next().unwrap_or(0)));
    resp.packet_number ^= word(4) as u32;
    resp.nonce ^= word(4) as u32;
    resp.offset ^= word(8);
    let flags = word(1);
    if flags & 1 != 0 {
        resp.end_of_stream = !resp.end_of_stream;
    }
    resp.kind = match (flags >> 1) & 3 {
        1 => ResponseKind::Data,
        2 => ResponseKind::Retransmit,
        3 => ResponseKind::Reset,
        _ => resp.kind,
    };
    if flags & 8 != 0 {
        resp.continuation = None;
    }
    if let Some(c) = resp.continuation {
        let mut bytes = [0u8; CONTINUATION_LEN];
        c.emit(&mut bytes);
        for x in bytes.iter_mut() {
            *x ^= word(1) as u8;
        }
        resp.continuation = Some(Continuation::parse(&bytes).unwrap_or(c));
        if flags & 32 != 0 {
            // The same continuation as a delta from nothing: every field present.
            let zero = Continuation::parse(&[0; CONTINUATION_LEN]).ok()?;
            resp.delta = resp
                .continuation
                .take()
                .map(|c| ContinuationDelta::between(&zero, &c));
        }
    }
    if let Some(mut d) = resp.delta {
        d.rtt_us ^= word(4) as u32;
        d.timestamp_ms ^= word(4) as u32;
        for x in d.tag.iter_mut() {
            *x ^= word(1) as u8;
        }
        // Each bit of `bits` adds a field (value from `x`) or removes it.
        let bits = word(2);
        let x = word(8);
        let on = |i: u32| bits >> i & 1 != 0;
        toggle(&mut d.number, on(0), x as u32);
        toggle(&mut d.tcp_base, on(1), (x >> 32) as u32);
        toggle(&mut d.start_cwnd, on(2), x as u16);
        toggle(&mut d.ssthresh, on(3), (x >> 16) as u16);
        toggle(&mut d.proof_start, on(4), (x >> 8) as u32);
        toggle(&mut d.rtx, on(5), x as u8);
        toggle(&mut d.site, on(6), (x >> 24) as u16);
        toggle(&mut d.key_epoch, on(7), (x >> 40) as u8);
        toggle(&mut d.conn_nonce, on(8), x);
        resp.delta = Some(d);
    }
    let cut = word(2) as usize;
    if flags & 16 != 0 {
        resp.data = resp
            .data
            .get(..cut % (resp.data.len() + 1))
            .unwrap_or(resp.data);
    }
    let mut payload = vec![0u8; resp.buffer_len()];
    let n = resp.emit(&mut payload).ok()?;
    frame(&payload[..n], resp.packet_number)
}

/// Case 4 on a delta field: if `on`, removes it when present, else adds `value`.
fn toggle<T>(field: &mut Option<T>, on: bool, value: T) {
    if on {
        *field = match field.take() {
            Some(_) => None,
            None => Some(value),
        };
    }
}

struct Harness {
    delta: bool,
    server: Server,
    client: Client,
    now: Instant,
    in_flight: Vec<Vec<u8>>,
    delivered: u64,
    data: Vec<u8>,
    sink: Vec<u8>,
}

impl Harness {
    /// Drains the client's requests, checks them, and has the server answer.
    fn pump(&mut self) {
        while let Some(seg) = self.client.poll_transmit() {
            let parsed =
                wire::parse_segment(&CLIENT, &SERVER, &seg).expect("a client segment parses");
            let req = Request::parse(parsed.payload).expect("a client request parses");
            assert_eq!(req.accepts_delta(), self.delta, "delta flag as configured");
            let Ok(reply) = self.server.handle_request(self.now, CLIENT, SERVER, &seg) else {
                continue;
            };
            for r in &reply.responses {
                let start = r.range.map_or(0, |r| r.start);
                let allowed = r.allowed() as u64;
                let len = allowed.min(STREAM_LEN.saturating_sub(start)) as usize;
                let eos = start.saturating_add(allowed) >= STREAM_LEN;
                let mut buf = vec![0u8; 2048];
                let n = self
                    .server
                    .emit(&reply.event.tuple, r, &[], &self.data[..len], eos, &mut buf)
                    .expect("a planned response emits");
                buf.truncate(n);
                if self.in_flight.len() == MAX_IN_FLIGHT {
                    self.in_flight.remove(0);
                }
                self.in_flight.push(buf);
            }
        }
        let delivered = self.client.delivered();
        assert!(
            delivered >= self.delivered,
            "delivered went back from {} to {delivered}",
            self.delivered
        );
        self.delivered = delivered;
        while self.client.read(&mut self.sink) > 0 {}
    }

    fn deliver(&mut self, seg: &[u8]) {
        let _ = self.client.handle_segment(self.now, seg);
    }
}

fuzz_target!(|input: &[u8]| {
    let (delta, input) = match input {
        [first, rest @ ..] => (first & 1 != 0, rest),
        [] => (false, input),
    };
    let cfg = ClientConfig {
        delta,
        ..ClientConfig::default()
    };
    let mut h = Harness {
        delta,
        server: Server::new(*server_config()),
        client: Client::new(cfg, tuple(), 7),
        now: START,
        in_flight: Vec::new(),
        delivered: 0,
        data: vec![0x42; 2048],
        sink: vec![0; 1 << 16],
    };
    h.client.connect(h.now, b"GET /");
    h.pump();
    let mut rest = input;
    for _ in 0..MAX_CHUNKS {
        let [op, arg, l0, l1, tail @ ..] = rest else {
            break;
        };
        let len = usize::from(u16::from_le_bytes([*l0, *l1])).min(tail.len());
        let (body, next) = tail.split_at(len);
        rest = next;
        let pick = (!h.in_flight.is_empty()).then(|| usize::from(*arg) % h.in_flight.len());
        match (op % 8, pick) {
            (0, _) => h.deliver(body),
            (1, _) => {
                if let Some(seg) = frame(body, 1) {
                    h.deliver(&seg);
                }
            }
            (2, Some(i)) => {
                let seg = h.in_flight.remove(i);
                h.deliver(&seg);
            }
            (3, Some(i)) => {
                let seg = h.in_flight.remove(i);
                if let Some(m) = mutated(&seg, body) {
                    h.deliver(&m);
                }
            }
            (4, Some(i)) => {
                let seg = h.in_flight.remove(i);
                if let Some(m) = edited(&seg, body) {
                    h.deliver(&m);
                }
            }
            (5, Some(i)) => {
                let seg = h.in_flight[i].clone();
                h.deliver(&seg);
            }
            (6, Some(i)) => {
                h.in_flight.remove(i);
            }
            (7, _) => {
                h.now = match body {
                    [a, b, ..] => h
                        .now
                        .saturating_add(u64::from(*arg) * u64::from(u16::from_le_bytes([*a, *b]))),
                    _ => h.client.poll_timeout().unwrap_or(h.now).max(h.now),
                };
                h.client.handle_timeout(h.now);
            }
            _ => {}
        }
        h.pump();
    }
});
