//! Round trips, truncations, arbitrary bytes and sizes of the messages.

use proptest::prelude::*;
use trickles::conn::Addr;
use trickles::continuation::{CONTINUATION_LEN, Continuation, MAC_FIELDS_LEN};
use trickles::delta::{ContinuationDelta, DELTA_MAX_LEN, DELTA_MIN_LEN};
use trickles::wire::{
    BYTE_RANGE_LEN, ByteRange, MAX_SACK_CHUNKS, REQUEST_HEADER_LEN, Request, Response,
    SACK_CHUNK_LEN, WireError, parse_segment,
};

use crate::strategies::{
    continuation, delta, emit_request, emit_response, request_parts, response_parts,
    sample_request_bytes,
};

proptest! {
    /// A delta re-emits to its bytes, every cut of it is [`WireError::Truncated`], and
    /// applying it to any prediction gives back its own fields.
    #[test]
    fn delta_round_trips_and_truncations(d in delta(), predicted in continuation()) {
        let mut bytes = vec![0u8; d.buffer_len() + 3];
        prop_assert_eq!(d.emit(&mut bytes), Ok(d.buffer_len()));
        prop_assert!((DELTA_MIN_LEN..=DELTA_MAX_LEN).contains(&d.buffer_len()));
        // Trailing bytes are the rest of the message: parse reports what it used.
        prop_assert_eq!(ContinuationDelta::parse(&bytes), Ok((d, d.buffer_len())));
        for n in 0..d.buffer_len() {
            prop_assert_eq!(ContinuationDelta::parse(&bytes[..n]), Err(WireError::Truncated));
        }
        prop_assert_eq!(d.emit(&mut bytes[..d.buffer_len() - 1]), Err(WireError::BadLength));
        let full = d.apply(&predicted);
        prop_assert_eq!((full.rtt_us, full.timestamp_ms, full.tag), (d.rtt_us, d.timestamp_ms, d.tag));
        prop_assert_eq!(full.number, d.number.unwrap_or(predicted.number));
        prop_assert_eq!(full.conn_nonce, d.conn_nonce.unwrap_or(predicted.conn_nonce));
        prop_assert_eq!(full.flags, 0);
    }

    /// The delta between any two continuations rebuilds the second from the first, and
    /// carries exactly the fields that differ.
    #[test]
    fn delta_between_rebuilds(predicted in continuation(), actual in continuation()) {
        let d = ContinuationDelta::between(&predicted, &actual);
        prop_assert_eq!(d.apply(&predicted), actual);
        prop_assert_eq!(d.site.is_some(), predicted.site != actual.site);
        prop_assert_eq!(d.tcp_base.is_some(), predicted.tcp_base != actual.tcp_base);
        let same = ContinuationDelta::between(&actual, &actual);
        prop_assert_eq!(same.present(), 0);
        prop_assert_eq!(same.buffer_len(), DELTA_MIN_LEN);
    }

    #[test]
    fn continuation_round_trips(c in continuation()) {
        let mut bytes = [0u8; CONTINUATION_LEN];
        c.emit(&mut bytes);
        prop_assert_eq!(Continuation::parse(&bytes), Ok(c));
        prop_assert_eq!(&bytes[..MAC_FIELDS_LEN], &c.mac_fields()[..]);
        prop_assert_eq!(&bytes[MAC_FIELDS_LEN..], &c.tag[..]);
        for n in 0..CONTINUATION_LEN {
            prop_assert_eq!(Continuation::parse(&bytes[..n]), Err(WireError::Truncated));
        }
    }

    #[test]
    fn request_round_trips(parts in request_parts(1500)) {
        let req = parts.request();
        let bytes = emit_request(&req);
        prop_assert_eq!(Request::parse(&bytes), Ok(req));
        let parsed = Request::parse(&bytes).unwrap();
        prop_assert_eq!(parsed.sack_chunks().count(), parts.sack.len() / SACK_CHUNK_LEN);
        prop_assert_eq!(parsed.sack_chunks().flatten().copied().collect::<Vec<u8>>(), parts.sack.clone());
        prop_assert_eq!(parsed.fin_after(), parts.flags & 1 == 1);
        prop_assert_eq!(parsed.accepts_delta(), parts.flags & 4 == 4);
        let mut short = vec![0u8; bytes.len() - 1];
        prop_assert_eq!(req.emit(&mut short), Err(WireError::BadLength));
    }

    #[test]
    fn response_round_trips(parts in response_parts(1500)) {
        let resp = parts.response();
        let bytes = emit_response(&resp);
        prop_assert_eq!(Response::parse(&bytes), Ok(resp));
        let mut short = vec![0u8; bytes.len() - 1];
        prop_assert_eq!(resp.emit(&mut short), Err(WireError::BadLength));
    }

    /// Cutting a request anywhere before its data is an error; cutting into the data
    /// leaves a shorter but valid request (the data is "the rest").
    #[test]
    fn request_truncations(parts in request_parts(8)) {
        let req = parts.request();
        let bytes = emit_request(&req);
        let data_start = bytes.len() - parts.data.len();
        for n in 0..bytes.len() {
            let got = Request::parse(&bytes[..n]);
            if n < data_start {
                prop_assert!(got.is_err(), "prefix {} of {} parsed: {:?}", n, bytes.len(), got);
            } else {
                prop_assert_eq!(got.map(|r| r.data), Ok(&parts.data[..n - data_start]));
            }
        }
    }

    #[test]
    fn response_truncations(parts in response_parts(8)) {
        let resp = parts.response();
        let bytes = emit_response(&resp);
        let data_start = bytes.len() - parts.data.len();
        for n in 0..bytes.len() {
            let got = Response::parse(&bytes[..n]);
            if n < data_start {
                prop_assert!(got.is_err(), "prefix {} of {} parsed: {:?}", n, bytes.len(), got);
            } else {
                prop_assert_eq!(got.map(|r| r.data), Ok(&parts.data[..n - data_start]));
            }
        }
    }

    /// Arbitrary bytes never panic, and what parses re-emits to the same bytes.
    #[test]
    fn arbitrary_bytes_parse_canonically(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(r) = Request::parse(&bytes) {
            prop_assert_eq!(emit_request(&r), bytes.clone());
        }
        if let Ok(r) = Response::parse(&bytes) {
            prop_assert_eq!(emit_response(&r), bytes.clone());
        }
        let _ = Continuation::parse(&bytes);
        let v4 = Addr::V4([1, 2, 3, 4]);
        let _ = parse_segment(&v4, &v4, &bytes);
    }
}

/// A request reporting one SACK block, with no ranges, user continuation or data, is
/// 8 + 54 + 12 = 74 bytes. The paper's transport continuation with its loss report is
/// 75 + 12m bytes (§2.1, Fig. 3): 87 for m = 1. Ours is 62 + 12m, 13 bytes less for every
/// m. Neither count includes the TCP header (ours is 24 bytes with the Trickles option).
#[test]
fn one_block_request_is_74_bytes() {
    let bytes = sample_request_bytes();
    assert_eq!(bytes.len(), 74);
    assert_eq!(REQUEST_HEADER_LEN + CONTINUATION_LEN + SACK_CHUNK_LEN, 74);
    for m in 0..=MAX_SACK_CHUNKS {
        let ours = REQUEST_HEADER_LEN + CONTINUATION_LEN + SACK_CHUNK_LEN * m;
        let paper = 75 + 12 * m;
        assert_eq!(paper - ours, 13);
    }
    // Each requested range adds 10 bytes.
    let mut req = Request::parse(&bytes).unwrap();
    req.ranges.push(ByteRange { start: 0, len: 1 }).unwrap();
    assert_eq!(req.buffer_len(), 74 + BYTE_RANGE_LEN);
}
