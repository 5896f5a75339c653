//! Strategies for messages, and sample messages.

use proptest::prelude::*;
use trickles::continuation::{Continuation, EpochStart};
use trickles::delta::ContinuationDelta;
use trickles::wire::{
    ByteRange, MAX_RANGES, MAX_SACK_CHUNKS, RangeList, Request, RequestKind, Response,
    ResponseKind, SACK_CHUNK_LEN,
};

pub(crate) fn epoch_start() -> impl Strategy<Value = EpochStart> {
    prop_oneof![
        Just(EpochStart::Open),
        Just(EpochStart::Recovery),
        Just(EpochStart::Timeout)
    ]
}

prop_compose! {
    pub(crate) fn continuation()(
        (number, tcp_base, start_cwnd, ssthresh, proof_start) in
            (any::<u32>(), any::<u32>(), any::<u16>(), any::<u16>(), any::<u32>()),
        (rtt_us, timestamp_ms, epoch_start, rtx, site, key_epoch) in
            (any::<u32>(), any::<u32>(), epoch_start(), any::<u8>(), any::<u16>(), any::<u8>()),
        conn_nonce in any::<u64>(),
        tag in any::<[u8; 16]>(),
    ) -> Continuation {
        Continuation {
            number, tcp_base, start_cwnd, ssthresh, proof_start, rtt_us, timestamp_ms,
            epoch_start, rtx, site, key_epoch, flags: 0, conn_nonce, tag,
        }
    }
}

prop_compose! {
    /// Any delta: every optional field independently present or not.
    pub(crate) fn delta()(
        (rtt_us, timestamp_ms, tag) in (any::<u32>(), any::<u32>(), any::<[u8; 16]>()),
        (number, tcp_base, start_cwnd, ssthresh, proof_start) in (
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u32>()),
        ),
        (epoch_start, rtx, site, key_epoch, conn_nonce) in (
            proptest::option::of(epoch_start()),
            proptest::option::of(any::<u8>()),
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u8>()),
            proptest::option::of(any::<u64>()),
        ),
    ) -> ContinuationDelta {
        ContinuationDelta {
            rtt_us, timestamp_ms, tag, number, tcp_base, start_cwnd, ssthresh, proof_start,
            epoch_start, rtx, site, key_epoch, conn_nonce,
        }
    }
}

/// What a response carries in the continuation's place.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Carried {
    Nothing,
    Full(Continuation),
    Delta(ContinuationDelta),
}

pub(crate) fn carried() -> impl Strategy<Value = Carried> {
    prop_oneof![
        Just(Carried::Nothing),
        continuation().prop_map(Carried::Full),
        delta().prop_map(Carried::Delta),
    ]
}

pub(crate) fn request_kind() -> impl Strategy<Value = RequestKind> {
    prop_oneof![
        Just(RequestKind::Syn),
        Just(RequestKind::Request),
        Just(RequestKind::Timeout),
        Just(RequestKind::Fin)
    ]
}

pub(crate) fn response_kind() -> impl Strategy<Value = ResponseKind> {
    prop_oneof![
        Just(ResponseKind::Data),
        Just(ResponseKind::Retransmit),
        Just(ResponseKind::Reset)
    ]
}

pub(crate) fn byte_range() -> impl Strategy<Value = ByteRange> {
    (any::<u64>(), any::<u16>()).prop_map(|(start, len)| ByteRange { start, len })
}

/// The owned parts of a request; [`RequestParts::request`] borrows them.
#[derive(Clone, Debug)]
pub(crate) struct RequestParts {
    pub(crate) kind: RequestKind,
    pub(crate) flags: u8,
    pub(crate) retry: u8,
    pub(crate) continuation: Continuation,
    pub(crate) sack: Vec<u8>,
    pub(crate) ranges: Vec<ByteRange>,
    pub(crate) user_continuation: Vec<u8>,
    pub(crate) data_offset: Option<u64>,
    pub(crate) data: Vec<u8>,
}

impl RequestParts {
    pub(crate) fn request(&self) -> Request<'_> {
        Request {
            kind: self.kind,
            flags: self.flags,
            retry: self.retry,
            continuation: (self.kind != RequestKind::Syn).then_some(self.continuation),
            sack: &self.sack,
            ranges: RangeList::from_slice(&self.ranges).unwrap(),
            user_continuation: &self.user_continuation,
            data_offset: self.data_offset,
            data: &self.data,
        }
    }
}

prop_compose! {
    pub(crate) fn request_parts(max_data: usize)(
        kind in request_kind(),
        flags in prop_oneof![Just(0u8), Just(1), Just(4), Just(5)],
        retry in any::<u8>(),
        continuation in continuation(),
        sack in (0..=MAX_SACK_CHUNKS)
            .prop_flat_map(|m| proptest::collection::vec(any::<u8>(), m * SACK_CHUNK_LEN)),
        ranges in proptest::collection::vec(byte_range(), 0..=MAX_RANGES),
        user_continuation in proptest::collection::vec(any::<u8>(), 0..64),
        data_offset in proptest::option::of(any::<u64>()),
        data in proptest::collection::vec(any::<u8>(), 0..=max_data),
    ) -> RequestParts {
        RequestParts { kind, flags, retry, continuation, sack, ranges, user_continuation, data_offset, data }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct ResponseParts {
    pub(crate) kind: ResponseKind,
    pub(crate) end_of_stream: bool,
    pub(crate) packet_number: u32,
    pub(crate) nonce: u32,
    pub(crate) offset: u64,
    pub(crate) carried: Carried,
    pub(crate) user_continuation: Vec<u8>,
    pub(crate) data: Vec<u8>,
}

impl ResponseParts {
    pub(crate) fn response(&self) -> Response<'_> {
        Response {
            kind: self.kind,
            end_of_stream: self.end_of_stream,
            packet_number: self.packet_number,
            nonce: self.nonce,
            offset: self.offset,
            continuation: match self.carried {
                Carried::Full(c) => Some(c),
                _ => None,
            },
            delta: match self.carried {
                Carried::Delta(d) => Some(d),
                _ => None,
            },
            user_continuation: &self.user_continuation,
            data: &self.data,
        }
    }
}

prop_compose! {
    pub(crate) fn response_parts(max_data: usize)(
        kind in response_kind(),
        end_of_stream in any::<bool>(),
        packet_number in any::<u32>(),
        nonce in any::<u32>(),
        offset in any::<u64>(),
        carried in carried(),
        user_continuation in proptest::collection::vec(any::<u8>(), 0..64),
        data in proptest::collection::vec(any::<u8>(), 0..=max_data),
    ) -> ResponseParts {
        ResponseParts {
            kind, end_of_stream, packet_number, nonce, offset, carried, user_continuation, data,
        }
    }
}

pub(crate) fn emit_request(r: &Request<'_>) -> Vec<u8> {
    let mut out = vec![0u8; r.buffer_len()];
    assert_eq!(r.emit(&mut out), Ok(out.len()));
    out
}

pub(crate) fn emit_response(r: &Response<'_>) -> Vec<u8> {
    let mut out = vec![0u8; r.buffer_len()];
    assert_eq!(r.emit(&mut out), Ok(out.len()));
    out
}

pub(crate) fn sample_request_bytes() -> Vec<u8> {
    let c = Continuation {
        number: 1,
        tcp_base: 0,
        start_cwnd: 3,
        ssthresh: 64,
        proof_start: 0,
        rtt_us: 1000,
        timestamp_ms: 0,
        epoch_start: EpochStart::Open,
        rtx: 0,
        site: 0,
        key_epoch: 0,
        flags: 0,
        conn_nonce: 5,
        tag: [1; 16],
    };
    emit_request(&Request {
        kind: RequestKind::Request,
        flags: 0,
        retry: 0,
        continuation: Some(c),
        sack: &[2; 12],
        ranges: RangeList::new(),
        user_continuation: &[],
        data_offset: None,
        data: &[],
    })
}

pub(crate) fn sample_response_bytes() -> Vec<u8> {
    emit_response(&Response {
        kind: ResponseKind::Data,
        end_of_stream: false,
        packet_number: 3,
        nonce: 4,
        offset: 5,
        continuation: None,
        delta: None,
        user_continuation: b"u",
        data: b"d",
    })
}
