//! Arbitrary fragments into the RUDP reassembler of `stream-handlers`.
//!
//! The input is small reassembly limits (messages, length, bytes, timeout) and a sequence
//! of packets, each either raw bytes or a header built from fuzzed fields around a fuzzed
//! body (so the reassembler's checks see plausible headers, not only garbage), arriving
//! after a fuzzed delay. Asserts, for any input: no panic; at most `max_messages` messages
//! in progress and at most `max_bytes` held; every completed message is no longer than the
//! limit, has the length its header declared, arrived in as many fragments as that length
//! and the fragment size imply, and was not completed before (at most once).
#![no_main]

use std::collections::HashSet;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sansio::Instant;
use stream_handlers::rudp::{Header, Kind, Reassembler, ReassemblyConfig};

#[derive(Arbitrary, Debug)]
enum Packet {
    Raw(Vec<u8>),
    Built {
        ack: bool,
        stream: u8,
        message: u8,
        seq: u32,
        index: u16,
        count: u16,
        len: u16,
        size: u16,
        body: Vec<u8>,
    },
}

#[derive(Arbitrary, Debug)]
struct Arrival {
    /// Microseconds since the previous packet.
    delay: u8,
    packet: Packet,
}

#[derive(Arbitrary, Debug)]
struct Input {
    max_messages: u8,
    max_len: u16,
    max_bytes: u16,
    timeout: u8,
    packets: Vec<Arrival>,
}

fuzz_target!(|input: Input| {
    let cfg = ReassemblyConfig {
        max_messages: usize::from(input.max_messages % 8),
        max_message_len: u32::from(input.max_len),
        max_bytes: usize::from(input.max_bytes),
        timeout: u64::from(input.timeout),
    };
    let mut r = Reassembler::new(cfg);
    let mut now = 0u64;
    let mut done = HashSet::new();
    for Arrival { delay, packet } in input.packets {
        now += u64::from(delay);
        let bytes = match packet {
            Packet::Raw(b) => b,
            Packet::Built {
                ack,
                stream,
                message,
                seq,
                index,
                count,
                len,
                size,
                body,
            } => {
                let mut b = Vec::new();
                Header {
                    kind: if ack { Kind::Ack } else { Kind::Data },
                    stream: u16::from(stream % 2),
                    message: u32::from(message % 4),
                    seq,
                    index: index % 8,
                    count: count % 8,
                    len: u32::from(len % 512),
                    size: size % 128,
                }
                .emit(&mut b);
                b.extend_from_slice(&body);
                b
            }
        };
        if let Ok(Some(a)) = r.handle_fragment(Instant::from_micros(now), &bytes) {
            let h = Header::parse(&bytes).expect("a completing packet parses");
            assert!(a.payload.len() <= cfg.max_message_len as usize);
            assert_eq!(a.payload.len(), h.len as usize);
            let expect = a.payload.len().div_ceil(usize::from(h.size)).max(1);
            assert_eq!(usize::from(a.fragments), expect);
            assert_eq!((a.stream, a.message), (h.stream, h.message));
            assert!(done.insert((a.stream, a.message)), "assembled twice");
        }
        assert!(r.in_progress() <= cfg.max_messages);
        assert!(r.bytes_held() <= cfg.max_bytes);
    }
});
