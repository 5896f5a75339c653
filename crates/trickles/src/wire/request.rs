//! Requests: client to server.

use core::fmt;

use super::continuation::{CONTINUATION_LEN, Continuation};
use super::{
    BYTE_RANGE_LEN, ByteRange, MAX_RANGES, MAX_SACK_CHUNKS, REQUEST_HEADER_LEN, Reader,
    SACK_CHUNK_LEN, VERSION, WireError, Writer, count_u8, len_u16,
};

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RequestKind {
    /// Open a connection; the only kind without a transport continuation.
    Syn = 1,
    /// An ordinary request made with the continuation of a received response.
    Request = 2,
    /// A request sent after a retransmit timeout.
    Timeout = 3,
    /// Close the connection.
    Fin = 4,
}

impl TryFrom<u8> for RequestKind {
    type Error = WireError;

    /// Returns [`WireError::BadKind`] for an unknown byte.
    fn try_from(value: u8) -> Result<RequestKind, WireError> {
        match value {
            1 => Ok(RequestKind::Syn),
            2 => Ok(RequestKind::Request),
            3 => Ok(RequestKind::Timeout),
            4 => Ok(RequestKind::Fin),
            other => Err(WireError::BadKind(other)),
        }
    }
}

impl From<RequestKind> for u8 {
    fn from(value: RequestKind) -> u8 {
        match value {
            RequestKind::Syn => 1,
            RequestKind::Request => 2,
            RequestKind::Timeout => 3,
            RequestKind::Fin => 4,
        }
    }
}

/// Request flag bit 0: the client sends FIN after this request.
pub const REQUEST_FLAG_FIN: u8 = 0x01;

/// Request flag bit 1: an 8-byte data offset (the position of [`Request::data`] in the
/// client's output stream) follows the user continuation. [`Request::parse`] and
/// [`Request::emit`] derive it from [`Request::data_offset`]; it never appears in
/// [`Request::flags`].
pub const REQUEST_FLAG_DATA_OFFSET: u8 = 0x02;

/// Request flag bit 2: the client accepts delta-encoded transport continuations
/// ([`crate::delta`]) in the responses to this request. A server that supports them answers
/// with [`Response::delta`](super::Response::delta) instead of a full continuation; one
/// that does not ignores the bit.
pub const REQUEST_FLAG_DELTA: u8 = 0x04;

/// Request flag bit 3, meaningful on a SYN: the client does delayed acknowledgments and
/// asks the connection to run with them ([`CcConfig::delayed_ack`](crate::cc::CcConfig)).
/// A server that grants it marks every continuation of the connection
/// ([`CONTINUATION_FLAG_DELAYED_ACK`](super::continuation::CONTINUATION_FLAG_DELAYED_ACK)),
/// and from then on the continuation, not this bit, decides; one that does not leaves the
/// continuations unmarked and the client acknowledges every packet.
pub const REQUEST_FLAG_DELAYED_ACK: u8 = 0x08;

/// The flags [`Request::flags`] may hold.
const REQUEST_FLAGS: u8 = REQUEST_FLAG_FIN | REQUEST_FLAG_DELTA | REQUEST_FLAG_DELAYED_ACK;

/// Up to [`MAX_RANGES`] byte ranges, stored inline (no allocation).
#[derive(Clone, Copy, Default)]
pub struct RangeList {
    ranges: [ByteRange; MAX_RANGES],
    /// Invariant: at most `MAX_RANGES`, and every entry past it is `ByteRange::default()`.
    len: usize,
}

impl RangeList {
    /// An empty list.
    pub const fn new() -> RangeList {
        RangeList {
            ranges: [ByteRange { start: 0, len: 0 }; MAX_RANGES],
            len: 0,
        }
    }

    /// A list holding `ranges`, or [`WireError::TooManyRanges`] if there are more than
    /// [`MAX_RANGES`].
    pub fn from_slice(ranges: &[ByteRange]) -> Result<RangeList, WireError> {
        let mut list = RangeList::new();
        for &r in ranges {
            list.push(r)
                .map_err(|_| WireError::TooManyRanges(count_u8(ranges.len())))?;
        }
        Ok(list)
    }

    /// Appends a range, or returns [`WireError::TooManyRanges`] if the list is full.
    pub fn push(&mut self, range: ByteRange) -> Result<(), WireError> {
        let slot = self
            .ranges
            .get_mut(self.len)
            .ok_or(WireError::TooManyRanges(count_u8(MAX_RANGES + 1)))?;
        *slot = range;
        self.len += 1;
        Ok(())
    }

    /// The ranges, in order.
    pub fn as_slice(&self) -> &[ByteRange] {
        self.ranges.get(..self.len).unwrap_or(&[])
    }

    /// How many ranges the list holds.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PartialEq for RangeList {
    fn eq(&self, other: &RangeList) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for RangeList {}

impl fmt::Debug for RangeList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// A request message: the TCP payload of a segment from client to server.
///
/// Layout: version, kind, flags (bit 0 = [`REQUEST_FLAG_FIN`], bit 1 =
/// [`REQUEST_FLAG_DATA_OFFSET`], bit 2 = [`REQUEST_FLAG_DELTA`], bit 3 =
/// [`REQUEST_FLAG_DELAYED_ACK`]; the rest reserved), retry, number of SACK blocks, number of ranges, user
/// continuation length (`u16`); then the transport continuation (absent iff the kind is
/// [`RequestKind::Syn`]), the SACK blocks (12 bytes each), the ranges (start `u64`, length
/// `u16`), the user continuation, the data offset (`u64`, iff flag bit 1), and the data
/// (the rest of the payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// What the request asks for.
    pub kind: RequestKind,
    /// Flag bits: [`REQUEST_FLAG_FIN`], [`REQUEST_FLAG_DELTA`] and
    /// [`REQUEST_FLAG_DELAYED_ACK`]; the others must be 0.
    pub flags: u8,
    /// How many times the client has retransmitted this request.
    pub retry: u8,
    /// The transport continuation being spent; `None` exactly for a SYN.
    pub continuation: Option<Continuation>,
    /// SACK proof: `12 * m` raw bytes, `m` at most [`MAX_SACK_CHUNKS`].
    pub sack: &'a [u8],
    /// Byte ranges the client asks for.
    pub ranges: RangeList,
    /// The server application's user continuation, opaque here.
    pub user_continuation: &'a [u8],
    /// Where `data` starts in the client's output stream, when the client numbers it (so
    /// the application can put retransmitted data in place).
    pub data_offset: Option<u64>,
    /// Client-to-server data.
    pub data: &'a [u8],
}

impl<'a> Request<'a> {
    /// Parses a request from a segment's payload.
    ///
    /// Accepts only canonical encodings: errors are [`WireError::BadVersion`],
    /// [`WireError::BadKind`], [`WireError::BadFlags`] (a reserved flag bit),
    /// [`WireError::TooManyBlocks`], [`WireError::TooManyRanges`],
    /// [`WireError::Continuation`] and [`WireError::Truncated`]. The SACK bytes and the
    /// continuation's tag are not checked here.
    #[inline]
    pub fn parse(payload: &'a [u8]) -> Result<Request<'a>, WireError> {
        let mut r = Reader::new(payload);
        let version = r.u8()?;
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let kind = RequestKind::try_from(r.u8()?)?;
        let flags = r.u8()?;
        if flags & !(REQUEST_FLAGS | REQUEST_FLAG_DATA_OFFSET) != 0 {
            return Err(WireError::BadFlags(flags));
        }
        let retry = r.u8()?;
        let nblocks = r.u8()?;
        if usize::from(nblocks) > MAX_SACK_CHUNKS {
            return Err(WireError::TooManyBlocks(nblocks));
        }
        let nranges = r.u8()?;
        if usize::from(nranges) > MAX_RANGES {
            return Err(WireError::TooManyRanges(nranges));
        }
        let ucont_len = r.u16()?;
        let continuation = match kind {
            RequestKind::Syn => None,
            _ => Some(Continuation::parse(r.take(CONTINUATION_LEN)?)?),
        };
        let sack = r.take(usize::from(nblocks) * SACK_CHUNK_LEN)?;
        let mut ranges = RangeList::new();
        for _ in 0..nranges {
            let start = r.u64()?;
            let len = r.u16()?;
            ranges.push(ByteRange { start, len })?;
        }
        let user_continuation = r.take(usize::from(ucont_len))?;
        let data_offset = if flags & REQUEST_FLAG_DATA_OFFSET != 0 {
            Some(r.u64()?)
        } else {
            None
        };
        Ok(Request {
            kind,
            flags: flags & REQUEST_FLAGS,
            retry,
            continuation,
            sack,
            ranges,
            user_continuation,
            data_offset,
            data: r.rest(),
        })
    }

    /// The number of bytes [`Request::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        let continuation = if self.continuation.is_some() {
            CONTINUATION_LEN
        } else {
            0
        };
        REQUEST_HEADER_LEN
            .saturating_add(continuation)
            .saturating_add(self.sack.len())
            .saturating_add(self.ranges.len() * BYTE_RANGE_LEN)
            .saturating_add(self.user_continuation.len())
            .saturating_add(if self.data_offset.is_some() { 8 } else { 0 })
            .saturating_add(self.data.len())
    }

    /// Writes the request to the front of `out` and returns its length,
    /// [`Request::buffer_len`].
    ///
    /// Refuses to write what [`Request::parse`] would reject: [`WireError::BadFlags`] for a
    /// reserved flag bit, [`WireError::BadKind`] if a continuation is present in a SYN or
    /// missing from another kind, [`WireError::Continuation`] for a continuation with a
    /// reserved `flags` bit, [`WireError::BadLength`] if the SACK bytes are not whole blocks or
    /// the user continuation exceeds 65 535 bytes, [`WireError::TooManyBlocks`]. Returns
    /// [`WireError::BadLength`] if `out` is too small.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        if self.flags & !REQUEST_FLAGS != 0 {
            return Err(WireError::BadFlags(self.flags));
        }
        match (self.kind, &self.continuation) {
            (RequestKind::Syn, None) => {}
            (RequestKind::Syn, Some(_)) | (_, None) => {
                return Err(WireError::BadKind(self.kind.into()));
            }
            (_, Some(c)) if !c.flags_valid() => return Err(WireError::Continuation),
            (_, Some(_)) => {}
        }
        if !self.sack.len().is_multiple_of(SACK_CHUNK_LEN) {
            return Err(WireError::BadLength);
        }
        let nblocks = self.sack.len() / SACK_CHUNK_LEN;
        if nblocks > MAX_SACK_CHUNKS {
            return Err(WireError::TooManyBlocks(count_u8(nblocks)));
        }
        let ucont_len = len_u16(self.user_continuation.len())?;
        if out.len() < self.buffer_len() {
            return Err(WireError::BadLength);
        }
        let mut w = Writer::new(out);
        w.put(&[
            VERSION,
            self.kind.into(),
            self.flags
                | if self.data_offset.is_some() {
                    REQUEST_FLAG_DATA_OFFSET
                } else {
                    0
                },
            self.retry,
            count_u8(nblocks),
            count_u8(self.ranges.len()),
        ])?;
        w.put(&ucont_len.to_be_bytes())?;
        if let Some(c) = &self.continuation {
            w.continuation(c)?;
        }
        w.put(self.sack)?;
        for range in self.ranges.as_slice() {
            w.put(&range.start.to_be_bytes())?;
            w.put(&range.len.to_be_bytes())?;
        }
        w.put(self.user_continuation)?;
        if let Some(offset) = self.data_offset {
            w.put(&offset.to_be_bytes())?;
        }
        w.put(self.data)?;
        Ok(w.written())
    }

    /// The SACK proof as raw 12-byte blocks, in order (a trailing partial block, which
    /// [`Request::parse`] never produces, is skipped).
    pub fn sack_chunks(&self) -> impl Iterator<Item = &'a [u8; SACK_CHUNK_LEN]> + use<'a> {
        self.sack
            .chunks_exact(SACK_CHUNK_LEN)
            .filter_map(|c| <&[u8; SACK_CHUNK_LEN]>::try_from(c).ok())
    }

    /// Whether the client sends FIN after this request ([`REQUEST_FLAG_FIN`]).
    pub fn fin_after(&self) -> bool {
        self.flags & REQUEST_FLAG_FIN != 0
    }

    /// Whether the client asks for delayed acknowledgments ([`REQUEST_FLAG_DELAYED_ACK`]).
    pub fn asks_delayed_ack(&self) -> bool {
        self.flags & REQUEST_FLAG_DELAYED_ACK != 0
    }

    /// Whether the client accepts delta-encoded continuations ([`REQUEST_FLAG_DELTA`]).
    pub fn accepts_delta(&self) -> bool {
        self.flags & REQUEST_FLAG_DELTA != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SYN: no continuation, one range, two bytes of user continuation, one data byte.
    const SYN: [u8; 8 + 10 + 2 + 1] = [
        1, 1, 0x01, 2, 0, 1, 0,
        2, // version, Syn, FIN flag, retry 2, 0 blocks, 1 range, ucont 2
        0, 0, 0, 0, 0, 0, 0x10, 0x00, 0x05, 0x5E, // range 4096 + 1374
        b'u', b'c', // user continuation
        b'd', // data
    ];

    fn syn() -> Request<'static> {
        Request {
            kind: RequestKind::Syn,
            flags: REQUEST_FLAG_FIN,
            retry: 2,
            continuation: None,
            sack: &[],
            ranges: RangeList::from_slice(&[ByteRange {
                start: 4096,
                len: 1374,
            }])
            .unwrap_or_default(),
            user_continuation: b"uc",
            data_offset: None,
            data: b"d",
        }
    }

    #[test]
    fn parse_literal() {
        assert_eq!(Request::parse(&SYN), Ok(syn()));
        assert!(syn().fin_after());
    }

    #[test]
    fn emit_literal() {
        let mut out = [0u8; SYN.len()];
        assert_eq!(syn().buffer_len(), SYN.len());
        assert_eq!(syn().emit(&mut out), Ok(SYN.len()));
        assert_eq!(out, SYN);
        assert_eq!(
            syn().emit(&mut out[..SYN.len() - 1]),
            Err(WireError::BadLength)
        );
    }

    #[test]
    fn named_rejections() {
        let with = |i: usize, v: u8| {
            let mut b = SYN;
            b[i] = v;
            Request::parse(&b).map(|_| ())
        };
        assert_eq!(with(0, 2), Err(WireError::BadVersion(2)));
        assert_eq!(with(1, 5), Err(WireError::BadKind(5)));
        assert_eq!(with(2, 0x10), Err(WireError::BadFlags(0x10)));
        assert_eq!(with(2, 0x80), Err(WireError::BadFlags(0x80)));
        assert_eq!(
            Request::parse(&{
                let mut b = SYN;
                b[2] = 0x08;
                b
            })
            .map(|r| (r.asks_delayed_ack(), r.accepts_delta())),
            Ok((true, false))
        );
        assert_eq!(
            Request::parse(&{
                let mut b = SYN;
                b[2] = 0x05;
                b
            })
            .map(|r| r.accepts_delta()),
            Ok(true)
        );
        // The data-offset flag needs 8 bytes the message does not hold.
        assert_eq!(with(2, 0x02), Err(WireError::Truncated));
        assert_eq!(with(4, 65), Err(WireError::TooManyBlocks(65)));
        assert_eq!(with(5, 17), Err(WireError::TooManyRanges(17)));
        // A non-SYN kind needs a continuation the bytes do not hold.
        assert_eq!(with(1, 2), Err(WireError::Truncated));
    }

    #[test]
    fn range_list_bounds() {
        let mut l = RangeList::new();
        for i in 0..MAX_RANGES as u64 {
            assert_eq!(l.push(ByteRange { start: i, len: 1 }), Ok(()));
        }
        assert!(l.push(ByteRange::default()).is_err());
        assert_eq!(l.len(), MAX_RANGES);
        assert!(RangeList::from_slice(&[ByteRange::default(); MAX_RANGES + 1]).is_err());
    }
}
