//! Arbitrary bytes as a Trickles TCP segment, request, response and transport continuation.
//!
//! The input is tried three ways: as it is, by every parser; as the payload of a segment
//! `emit_segment` frames; and as "options and payload" of a TCP header built around it
//! (the first byte picks how many 4-byte option words), so the option walk sees
//! arbitrary options without the fuzzer having to find a whole valid header first.
//!
//! Asserts, for any input: no parser panics; whatever parses re-emits into exactly
//! `buffer_len()` bytes and parses back to an equal value; a request, response or
//! continuation re-emits to the very bytes it was parsed from (the encodings are
//! canonical); a parsed segment re-emitted with `emit_segment` parses back to the same
//! fields and payload; `parse_segment` finds the Trickles option exactly when a simple
//! reference walk of the options does. (Under `cfg(fuzzing)` smoltcp skips TCP checksum
//! verification, so the built headers carry no checksum.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use trickles::conn::Addr;
use trickles::continuation::{CONTINUATION_LEN, Continuation};
use trickles::wire::{
    Request, Response, Segment, TCP_HEADER_LEN, WireError, emit_segment, parse_segment,
};

const SRC: Addr = Addr::V4([10, 0, 0, 1]);
const DST: Addr = Addr::V4([10, 0, 0, 2]);

fn check_request(bytes: &[u8]) {
    let Ok(req) = Request::parse(bytes) else {
        return;
    };
    let mut out = vec![0u8; req.buffer_len()];
    let n = req.emit(&mut out).expect("a parsed request re-emits");
    assert_eq!(n, out.len());
    assert_eq!(out, bytes, "request encoding is canonical");
    assert_eq!(Request::parse(&out), Ok(req));
    assert_eq!(req.sack_chunks().count() * 12, req.sack.len());
}

fn check_response(bytes: &[u8]) {
    let Ok(resp) = Response::parse(bytes) else {
        return;
    };
    let mut out = vec![0u8; resp.buffer_len()];
    let n = resp.emit(&mut out).expect("a parsed response re-emits");
    assert_eq!(n, out.len());
    assert_eq!(out, bytes, "response encoding is canonical");
    assert_eq!(Response::parse(&out), Ok(resp));
}

fn check_continuation(bytes: &[u8]) {
    let Ok(c) = Continuation::parse(bytes) else {
        return;
    };
    let mut out = [0u8; CONTINUATION_LEN];
    c.emit(&mut out);
    assert_eq!(&out[..], bytes, "continuation encoding is canonical");
    assert_eq!(Continuation::parse(&out), Ok(c));
}

fn check_messages(bytes: &[u8]) {
    check_request(bytes);
    check_response(bytes);
    check_continuation(bytes);
    if let Some(c) = bytes.get(..CONTINUATION_LEN) {
        check_continuation(c);
    }
}

/// Parses `tcp`; if it parses, re-emits it and checks the round trip and the payload.
fn check_segment(tcp: &[u8]) -> Result<Segment<'_>, WireError> {
    let seg = parse_segment(&SRC, &DST, tcp)?;
    assert!(tcp.ends_with(seg.payload));
    let mut out = vec![0u8; TCP_HEADER_LEN + seg.payload.len()];
    let n = emit_segment(&SRC, &DST, &seg, &mut out).expect("a parsed segment re-emits");
    assert_eq!(n, out.len());
    assert_eq!(parse_segment(&SRC, &DST, &out), Ok(seg));
    check_messages(seg.payload);
    Ok(seg)
}

/// Whether a plain walk of `options` (stopping at end-of-list or at a malformed length)
/// meets kind 253 with ExID "Tr" and length 4.
fn reference_has_option(options: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&kind) = options.get(i) {
        match kind {
            0 => return false,
            1 => i += 1,
            _ => {
                let Some(&len) = options.get(i + 1) else {
                    return false;
                };
                let len = usize::from(len);
                if len < 2 || i + len > options.len() {
                    return false;
                }
                if kind == 253 && len >= 4 && options.get(i + 2..i + 4) == Some(b"Tr") {
                    return len == 4;
                }
                i += len;
            }
        }
    }
    false
}

fuzz_target!(|data: &[u8]| {
    check_messages(data);
    let _ = check_segment(data);

    // The input as the payload of a segment we frame.
    let mut framed = vec![0u8; TCP_HEADER_LEN + data.len()];
    let seg = Segment {
        src_port: 1000,
        dst_port: 2000,
        syn: false,
        seq: 5,
        ack: 6,
        payload: data,
    };
    if let Ok(n) = emit_segment(&SRC, &DST, &seg, &mut framed) {
        assert_eq!(check_segment(&framed[..n]), Ok(seg));
    }

    // The input as options (first byte: how many words, 0..=10) and payload.
    let Some((&words, rest)) = data.split_first() else {
        return;
    };
    let option_len = usize::from(words % 11) * 4;
    let Some((options, payload)) = rest.split_at_checked(option_len) else {
        return;
    };
    let mut tcp = vec![
        0x03,
        0xE8,
        0x07,
        0xD0, // ports 1000, 2000
        0,
        0,
        0,
        5, // seq
        0,
        0,
        0,
        6, // ack
        0x50 + (option_len as u8) * 4,
        0x10,
        0xFF,
        0xFF, // data offset, ACK, window
        0,
        0,
        0,
        0, // checksum (not verified under cfg(fuzzing)), urgent
    ];
    tcp.extend_from_slice(options);
    tcp.extend_from_slice(payload);
    match check_segment(&tcp) {
        Ok(seg) => {
            assert!(
                reference_has_option(options),
                "found an option the reference walk misses"
            );
            assert_eq!(
                (seg.src_port, seg.dst_port, seg.seq, seg.ack),
                (1000, 2000, 5, 6)
            );
            assert_eq!(seg.payload, payload);
        }
        Err(WireError::NotTrickles) => {
            assert!(!reference_has_option(options), "missed the Trickles option");
        }
        Err(_) => {}
    }
});
