//! Trickles messages and the TCP segments that carry them.
//!
//! Trickles rides in TCP-format segments (IP protocol 6) so that it passes middleboxes
//! that pass TCP. Each segment carries TCP option kind 253 (RFC 4727 experimental) in its
//! RFC 6994 shared form, `253, 4, 0x54, 0x72` (ExID `"Tr"`), and its payload is one
//! Trickles message: a [`Request`] from client to server or a [`Response`] back.
//!
//! ```text
//!  IP | TCP header (24 bytes, option 253/"Tr") | Request or Response
//!                                               |
//!   Request:  header 8 | continuation 54 (not in a SYN) | SACK 12·m | ranges 10·r | ucont | data
//!   Response: header 24 | continuation 54 or delta 26..55 (if flagged) | ucont | data
//! ```
//!
//! All integers are big-endian. Parsing never panics and accepts only canonical encodings:
//! reserved bits and bytes must be zero, so a message that parses re-emits to the same
//! bytes. SACK blocks stay raw 12-byte chunks here ([`Request::sack_chunks`]); decoding
//! them is the SACK module's job.
//!
//! A request, emitted and parsed back:
//!
//! ```
//! use trickles::wire::continuation::{CONTINUATION_LEN, Continuation, EpochStart};
//! use trickles::wire::{ByteRange, RangeList, Request, RequestKind};
//!
//! let continuation = Continuation {
//!     number: 41, tcp_base: 3, start_cwnd: 3, ssthresh: 8191, proof_start: 40,
//!     rtt_us: 20_000, timestamp_ms: 5, epoch_start: EpochStart::Open, rtx: 0, site: 1,
//!     key_epoch: 0, flags: 0, conn_nonce: 99, tag: [7; 16],
//! };
//! let mut ranges = RangeList::new();
//! ranges.push(ByteRange { start: 4096, len: 1374 }).unwrap();
//! let sack = [0u8; 12]; // one SACK block: left, right, nonce summary
//! let request = Request {
//!     kind: RequestKind::Request,
//!     flags: 0,
//!     retry: 0,
//!     continuation: Some(continuation),
//!     sack: &sack,
//!     ranges,
//!     user_continuation: b"inode 12",
//!     data_offset: None,
//!     data: b"",
//! };
//! let mut buf = [0u8; 200];
//! let n = request.emit(&mut buf).unwrap();
//! assert_eq!(n, 8 + CONTINUATION_LEN + 12 + 10 + 8);
//! assert_eq!(Request::parse(&buf[..n]), Ok(request));
//! ```
//!
//! A response, emitted and parsed back:
//!
//! ```
//! use trickles::wire::{Response, ResponseKind, RESPONSE_HEADER_LEN};
//!
//! let response = Response {
//!     kind: ResponseKind::Data,
//!     end_of_stream: true,
//!     packet_number: 42,
//!     nonce: 0xDEAD_BEEF,
//!     offset: 4096,
//!     continuation: None,
//!     delta: None,
//!     user_continuation: b"",
//!     data: b"hello",
//! };
//! let mut buf = [0u8; 64];
//! let n = response.emit(&mut buf).unwrap();
//! assert_eq!(n, RESPONSE_HEADER_LEN + 5);
//! assert_eq!(Response::parse(&buf[..n]), Ok(response));
//! ```
//!
//! And in a TCP segment (see [`emit_segment`] and [`parse_segment`]).

use core::fmt;

mod checksum;
pub mod continuation;
pub mod delta;
mod request;
mod response;
mod segment;

pub use request::{
    REQUEST_FLAG_DATA_OFFSET, REQUEST_FLAG_DELAYED_ACK, REQUEST_FLAG_DELTA, REQUEST_FLAG_FIN,
    RangeList, Request, RequestKind,
};
pub(crate) use response::Parts;
pub use response::{Response, ResponseKind};
pub use segment::{
    Checksum, Segment, SegmentHeader, emit_segment, finish_segment, parse_segment,
    parse_segment_with,
};

/// Why a Trickles message or segment was rejected (or could not be emitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The bytes end before a field the header says is there.
    Truncated,
    /// The version byte is not [`VERSION`].
    BadVersion(u8),
    /// The kind byte names no [`RequestKind`] or [`ResponseKind`] (or, when emitting, the
    /// kind disagrees with whether a continuation is present).
    BadKind(u8),
    /// A reserved flag bit, or a reserved byte, is nonzero.
    BadFlags(u8),
    /// More SACK blocks than [`MAX_SACK_CHUNKS`].
    TooManyBlocks(u8),
    /// More byte ranges than [`MAX_RANGES`].
    TooManyRanges(u8),
    /// A length is inconsistent: an output buffer too small, a field too long for its
    /// length field, a segment longer than 65 535 bytes, or a Trickles option of the wrong
    /// length.
    BadLength,
    /// The segment has no TCP option 253 carrying [`TRICKLES_EXID`].
    NotTrickles,
    /// The TCP framing is invalid: smoltcp rejected it, the checksum is wrong, a port is
    /// zero, or the two addresses are of different families.
    BadTcp,
    /// A continuation's reserved field is nonzero or its epoch byte is unknown.
    Continuation,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => f.write_str("message truncated"),
            WireError::BadVersion(v) => write!(f, "unknown Trickles version {v}"),
            WireError::BadKind(k) => write!(f, "bad message kind {k}"),
            WireError::BadFlags(b) => write!(f, "reserved flag bits or bytes set: {b:#04x}"),
            WireError::TooManyBlocks(n) => {
                write!(f, "{n} SACK blocks, more than {MAX_SACK_CHUNKS}")
            }
            WireError::TooManyRanges(n) => write!(f, "{n} byte ranges, more than {MAX_RANGES}"),
            WireError::BadLength => f.write_str("inconsistent length"),
            WireError::NotTrickles => f.write_str("no Trickles TCP option"),
            WireError::BadTcp => f.write_str("invalid TCP segment"),
            WireError::Continuation => f.write_str("malformed transport continuation"),
        }
    }
}

impl core::error::Error for WireError {}

/// The protocol version this module speaks, byte 0 of every message.
pub const VERSION: u8 = 1;

/// TCP option kind that marks a Trickles segment (RFC 4727 experimental).
pub const TRICKLES_OPTION_KIND: u8 = 253;

/// The RFC 6994 experiment id in that option: `"Tr"`.
pub const TRICKLES_EXID: u16 = 0x5472;

/// The most byte ranges one request may ask for.
pub const MAX_RANGES: usize = 16;

/// Length of one SACK block on the wire (left, right, nonce summary: three `u32`s).
pub const SACK_CHUNK_LEN: usize = 12;

/// The most SACK blocks one request may carry.
pub const MAX_SACK_CHUNKS: usize = 64;

/// Length of one [`ByteRange`] on the wire.
pub const BYTE_RANGE_LEN: usize = 10;

/// Length of the fixed request header.
pub const REQUEST_HEADER_LEN: usize = 8;

/// Length of the fixed response header.
pub const RESPONSE_HEADER_LEN: usize = 24;

/// Length of the TCP header [`emit_segment`] writes: 20 bytes plus the 4-byte option.
pub const TCP_HEADER_LEN: usize = 24;

/// Longest segment (TCP header and payload) emitted or accepted: what an IPv4 length
/// field can describe.
pub const MAX_SEGMENT_LEN: usize = u16::MAX as usize;

/// A run of stream bytes a request asks the server for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ByteRange {
    /// Stream offset of the first byte.
    pub start: u64,
    /// Number of bytes.
    pub len: u16,
}

/// Takes fields off the front of a message; every read is bounds-checked. Shared by every
/// parser in the crate (requests, responses, deltas, user continuations, minisockets).
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    /// The next `n` bytes, or [`WireError::Truncated`].
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let (head, rest) = self.rest.split_at_checked(n).ok_or(WireError::Truncated)?;
        self.rest = rest;
        Ok(head)
    }

    /// The next `N` bytes, or zeros if fewer are left (and then nothing is consumed): for a
    /// fixed layout whose length the caller has already checked, read without an error
    /// path (a `Result` per field costs the continuation parser about 45 instructions).
    #[inline(always)]
    pub(crate) fn fixed<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some((head, rest)) = self.rest.split_at_checked(N) {
            out.copy_from_slice(head);
            self.rest = rest;
        }
        out
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        self.take(N)?.try_into().map_err(|_| WireError::Truncated)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(u8::from_be_bytes(self.array()?))
    }

    pub(crate) fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Everything not read yet.
    pub(crate) fn rest(self) -> &'a [u8] {
        self.rest
    }

    /// Everything not read yet, without consuming it.
    pub(crate) fn peek(&self) -> &'a [u8] {
        self.rest
    }

    /// How many bytes are left to read.
    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }
}

/// Appends fields to an output buffer; every write is bounds-checked. Shared by every
/// emitter in the crate.
pub(crate) struct Writer<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(out: &'a mut [u8]) -> Writer<'a> {
        Writer { out, pos: 0 }
    }

    /// Appends `bytes`, or returns [`WireError::BadLength`] if they do not fit.
    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        let end = self
            .pos
            .checked_add(bytes.len())
            .ok_or(WireError::BadLength)?;
        self.out
            .get_mut(self.pos..end)
            .ok_or(WireError::BadLength)?
            .copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }

    /// The continuation's 54 bytes, written in place (no temporary copy).
    fn continuation(
        &mut self,
        c: &crate::wire::continuation::Continuation,
    ) -> Result<(), WireError> {
        const LEN: usize = crate::wire::continuation::CONTINUATION_LEN;
        let end = self.pos.checked_add(LEN).ok_or(WireError::BadLength)?;
        let dst: &mut [u8; LEN] = self
            .out
            .get_mut(self.pos..end)
            .and_then(|d| d.try_into().ok())
            .ok_or(WireError::BadLength)?;
        c.emit(dst);
        self.pos = end;
        Ok(())
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> usize {
        self.pos
    }
}

/// A length as a `u16` field, or [`WireError::BadLength`].
fn len_u16(len: usize) -> Result<u16, WireError> {
    u16::try_from(len).map_err(|_| WireError::BadLength)
}

/// A count for an error report, saturated to a byte.
fn count_u8(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}
