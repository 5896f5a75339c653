//! The minisocket event API under arbitrary request sequences.
//!
//! One `Server`, one `EventQueue` (capacity 8) and one real `Client` per input. The input
//! is a sequence of chunks `op`, `len` (one byte) and `len` bytes of `body`; by `op % 6`:
//!
//! 0. the client's pending segments (its SYN first, carrying `body`) go to the queue;
//! 1. `body` goes to the queue as a segment, as it is;
//! 2. the oldest event is answered: `body[0]` picks a response for `set_ucont` with the
//!    rest of `body` as its user continuation, then the output (`body` repeated to 3000
//!    bytes) is sent with `sendv` split at `body[1]`; the segments go to the client;
//! 3. the oldest event is extracted, installed back (it must come back equal) and
//!    requeued; `body` is offered to `install` and to the user-continuation parser and
//!    `UcontKey::open`, which must refuse or accept without panicking;
//! 4. the oldest event is refused (a reset to the client) or dropped, by `body[0]`;
//! 5. the clock advances by `body[0]` ms and the client's timer runs.
//!
//! Asserts: no panic; the queue never holds more than its capacity; a minisocket sends
//! one segment per planned response and never more bytes than its capacity; every segment
//! it emits parses as a response whose data fits its response's range; extract → install
//! is the identity; anything `UcontKey::open` accepts re-seals to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trickles::app::{Binding, EventQueue, MigrationKey, Minisocket, UcontKey, UserContinuation};
use trickles::client::{Client, ClientConfig};
use trickles::server::Server;
use trickles::wire::{self, Response};

#[path = "common/trickles.rs"]
mod common;
use common::{CLIENT, SERVER, START, server_config, tuple};

const CAPACITY: usize = 8;

fuzz_target!(|input: &[u8]| {
    let mut server = Server::new(server_config());
    let mut queue = EventQueue::new(CAPACITY);
    let mut client = Client::new(ClientConfig::default(), tuple(), 99);
    let key = MigrationKey::new(&[7; 16], 10_000_000);
    let ucont_key = UcontKey::new(&[8; 16]);
    let mut now = START;
    let mut connected = false;
    let mut rest = input;
    while let Some((&op, tail)) = rest.split_first() {
        let Some((&len, tail)) = tail.split_first() else {
            break;
        };
        let n = usize::from(len).min(tail.len());
        let (body, tail) = tail.split_at(n);
        rest = tail;
        match op % 6 {
            0 => {
                if !connected {
                    client.connect(now, body);
                    connected = true;
                }
                while let Some(seg) = client.poll_transmit() {
                    let _ = queue.push_segment(&mut server, now, CLIENT, SERVER, &seg);
                }
            }
            1 => {
                let _ = queue.push_segment(&mut server, now, CLIENT, SERVER, body);
            }
            2 => {
                let Some(mut msk) = queue.pop() else { continue };
                if let Some((&pick, u)) = body.split_first() {
                    let _ = msk.set_ucont(usize::from(pick), u);
                }
                let output: Vec<u8> = body.iter().copied().cycle().take(3000).collect();
                let split = body.get(1).map_or(0, |&b| usize::from(b) * 11).min(3000);
                let (a, b) = output.split_at(split);
                let responses = msk.responses().to_vec();
                let capacity = msk.capacity();
                let mut segments = Vec::new();
                let report = msk
                    .sendv(
                        &server,
                        &[a, b],
                        body.first() == Some(&0),
                        &mut |s: &[u8]| segments.push(s.to_vec()),
                    )
                    .expect("every planned response fits a segment");
                assert_eq!(report.segments, responses.len());
                assert!(report.bytes <= capacity, "{} > {capacity}", report.bytes);
                for (seg, planned) in segments.iter().zip(&responses) {
                    let parsed = wire::parse_segment(&SERVER, &CLIENT, seg).expect("parses");
                    let resp = Response::parse(parsed.payload).expect("a response");
                    assert_eq!(resp.packet_number, planned.packet_number);
                    let room = planned.range.map_or(0, |r| usize::from(r.len));
                    assert!(resp.data.len() <= room);
                    let _ = client.handle_segment(now, seg);
                }
            }
            3 => {
                if let Some(msk) = queue.pop() {
                    let bytes = msk.extract(&key, now);
                    let back = Minisocket::install(&key, &bytes, now).expect("own extract");
                    assert_eq!(back, msk);
                    let _ = queue.install(back);
                }
                let _ = Minisocket::install(&key, body, now);
                let _ = UserContinuation::parse(body);
                let conn = Binding {
                    tuple: tuple(),
                    conn_nonce: 5,
                };
                if let Ok(uc) = ucont_key.open(&conn, body) {
                    assert_eq!(ucont_key.seal(&conn, &uc).expect("reseal"), body);
                }
            }
            4 => {
                if let Some(msk) = queue.pop()
                    && body.first().is_some_and(|b| b % 2 == 1)
                {
                    let mut segs = Vec::new();
                    msk.refuse(&server, &mut |s: &[u8]| segs.push(s.to_vec()))
                        .expect("a reset fits");
                    for s in &segs {
                        let _ = client.handle_segment(now, s);
                    }
                }
            }
            _ => {
                now = now.saturating_add(u64::from(body.first().copied().unwrap_or(1)) * 1000);
                client.handle_timeout(now);
            }
        }
        assert!(queue.len() <= CAPACITY);
    }
});
