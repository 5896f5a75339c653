//! Reserved and unknown bytes are rejected with the named error, and emit refuses what
//! parse would reject.

use proptest::prelude::*;
use trickles::continuation::{CONTINUATION_LEN, Continuation};
use trickles::wire::{
    ByteRange, MAX_RANGES, MAX_SACK_CHUNKS, REQUEST_HEADER_LEN, RESPONSE_HEADER_LEN, RangeList,
    Request, RequestKind, Response, ResponseKind, SACK_CHUNK_LEN, WireError,
};

use crate::strategies::{emit_response, sample_request_bytes, sample_response_bytes};

/// Offsets inside a non-SYN request.
const REQ_FLAGS: usize = 2;
const REQ_NBLOCKS: usize = 4;
const REQ_NRANGES: usize = 5;
const CONT_EPOCH: usize = 24;
const CONT_FLAGS: usize = 29;

proptest! {
    #[test]
    fn request_rejects_reserved_and_unknown_bytes(v in any::<u8>()) {
        let good = sample_request_bytes();
        let with = |i: usize, v: u8| {
            let mut b = good.clone();
            b[i] = v;
            Request::parse(&b).map(|_| ())
        };
        if v != 1 {
            prop_assert_eq!(with(0, v), Err(WireError::BadVersion(v)));
        }
        if !(1..=4).contains(&v) {
            prop_assert_eq!(with(1, v), Err(WireError::BadKind(v)));
        }
        // Bits 0..=3 are FIN, data offset, delta and delayed ack; every other bit stays
        // reserved.
        if v & !0x0f != 0 {
            prop_assert_eq!(with(REQ_FLAGS, v), Err(WireError::BadFlags(v)));
        }
        if usize::from(v) > MAX_SACK_CHUNKS {
            prop_assert_eq!(with(REQ_NBLOCKS, v), Err(WireError::TooManyBlocks(v)));
        }
        if usize::from(v) > MAX_RANGES {
            prop_assert_eq!(with(REQ_NRANGES, v), Err(WireError::TooManyRanges(v)));
        }
        // Bit 0 is the delayed-ack flag; every other bit stays reserved.
        if v & !1 != 0 {
            let at = REQUEST_HEADER_LEN + CONT_FLAGS;
            prop_assert_eq!(with(at, v), Err(WireError::Continuation));
        }
        if v > 2 {
            let at = REQUEST_HEADER_LEN + CONT_EPOCH;
            prop_assert_eq!(with(at, v), Err(WireError::Continuation));
        }
    }

    #[test]
    fn response_rejects_reserved_and_unknown_bytes(v in any::<u8>()) {
        let good = sample_response_bytes();
        let with = |i: usize, v: u8| {
            let mut b = good.clone();
            b[i] = v;
            Response::parse(&b).map(|_| ())
        };
        if v != 1 {
            prop_assert_eq!(with(0, v), Err(WireError::BadVersion(v)));
        }
        if !(1..=3).contains(&v) {
            prop_assert_eq!(with(1, v), Err(WireError::BadKind(v)));
        }
        // Bit 0 (continuation) and bit 2 (delta) exclude each other; bits 3..=7 are
        // reserved.
        if v & !7 != 0 || v & 5 == 5 {
            prop_assert_eq!(with(2, v), Err(WireError::BadFlags(v)));
        }
        if v != 0 {
            for at in [3, 22, 23] {
                prop_assert_eq!(with(at, v), Err(WireError::BadFlags(v)));
            }
        }
    }
}

#[test]
fn continuation_in_a_response_is_checked_too() {
    let mut c = Continuation::parse(&sample_request_bytes()[8..8 + CONTINUATION_LEN]).unwrap();
    let resp = Response {
        kind: ResponseKind::Data,
        end_of_stream: false,
        packet_number: 0,
        nonce: 0,
        offset: 0,
        continuation: Some(c),
        delta: None,
        user_continuation: &[],
        data: &[],
    };
    let mut bytes = emit_response(&resp);
    bytes[RESPONSE_HEADER_LEN + CONT_FLAGS] = 0x40;
    assert_eq!(Response::parse(&bytes), Err(WireError::Continuation));
    // And emit refuses to write what parse would reject.
    c.flags = 2;
    let resp = Response {
        continuation: Some(c),
        ..resp
    };
    assert_eq!(resp.emit(&mut [0; 200]), Err(WireError::Continuation));
}

#[test]
fn emit_refuses_what_parse_would_reject() {
    let good = sample_request_bytes();
    let req = Request::parse(&good).unwrap();
    let mut out = [0u8; 2048];
    let syn_with = Request {
        kind: RequestKind::Syn,
        ..req
    };
    assert_eq!(syn_with.emit(&mut out), Err(WireError::BadKind(1)));
    let fin_without = Request {
        kind: RequestKind::Fin,
        continuation: None,
        ..req
    };
    assert_eq!(fin_without.emit(&mut out), Err(WireError::BadKind(4)));
    let flags = Request { flags: 0x80, ..req };
    assert_eq!(flags.emit(&mut out), Err(WireError::BadFlags(0x80)));
    let ragged = Request {
        sack: &[0; 13],
        ..req
    };
    assert_eq!(ragged.emit(&mut out), Err(WireError::BadLength));
    let many = [0u8; (MAX_SACK_CHUNKS + 1) * SACK_CHUNK_LEN];
    let too_many = Request { sack: &many, ..req };
    assert_eq!(too_many.emit(&mut out), Err(WireError::TooManyBlocks(65)));
    let long = vec![0u8; 65_536];
    let ucont = Request {
        user_continuation: &long,
        ..req
    };
    assert_eq!(ucont.emit(&mut vec![0; 70_000]), Err(WireError::BadLength));
    let mut bad_cont = req.continuation.unwrap();
    bad_cont.flags = 2;
    let cont = Request {
        continuation: Some(bad_cont),
        ..req
    };
    assert_eq!(cont.emit(&mut out), Err(WireError::Continuation));
    assert_eq!(
        RangeList::from_slice(&[ByteRange::default(); MAX_RANGES + 1]),
        Err(WireError::TooManyRanges(17))
    );
}

#[test]
fn errors_display() {
    let all = [
        WireError::Truncated,
        WireError::BadVersion(9),
        WireError::BadKind(9),
        WireError::BadFlags(9),
        WireError::TooManyBlocks(99),
        WireError::TooManyRanges(99),
        WireError::BadLength,
        WireError::NotTrickles,
        WireError::BadTcp,
        WireError::Continuation,
    ];
    let texts: Vec<String> = all.iter().map(|e| e.to_string()).collect();
    for (i, t) in texts.iter().enumerate() {
        assert!(!t.is_empty());
        assert!(!texts[..i].contains(t), "{t} twice");
    }
}
