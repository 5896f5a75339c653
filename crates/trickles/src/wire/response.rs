//! Responses: server to client.

use super::continuation::{CONTINUATION_LEN, Continuation};
use super::delta::ContinuationDelta;
use super::{RESPONSE_HEADER_LEN, Reader, VERSION, WireError, Writer, len_u16};

/// What a response carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ResponseKind {
    /// New stream data.
    Data = 1,
    /// Data sent again in answer to a lost packet.
    Retransmit = 2,
    /// The server refuses the connection.
    Reset = 3,
}

impl TryFrom<u8> for ResponseKind {
    type Error = WireError;

    /// Returns [`WireError::BadKind`] for an unknown byte.
    fn try_from(value: u8) -> Result<ResponseKind, WireError> {
        match value {
            1 => Ok(ResponseKind::Data),
            2 => Ok(ResponseKind::Retransmit),
            3 => Ok(ResponseKind::Reset),
            other => Err(WireError::BadKind(other)),
        }
    }
}

impl From<ResponseKind> for u8 {
    fn from(value: ResponseKind) -> u8 {
        match value {
            ResponseKind::Data => 1,
            ResponseKind::Retransmit => 2,
            ResponseKind::Reset => 3,
        }
    }
}

/// Response flag bit 0: a transport continuation follows the header.
const FLAG_CONTINUATION: u8 = 0x01;
/// Response flag bit 1: the data ends the stream.
const FLAG_END_OF_STREAM: u8 = 0x02;
/// Response flag bit 2: a delta-encoded transport continuation follows the header (never
/// together with bit 0).
const FLAG_DELTA: u8 = 0x04;

/// A response message: the TCP payload of a segment from server to client.
///
/// Layout: version, kind, flags (bit 0 = continuation present, bit 1 = end of stream,
/// bit 2 = delta continuation present; bits 0 and 2 never both), a reserved zero byte,
/// packet number `u32`, nonce `u32`, stream offset `u64`, user continuation length `u16`,
/// two reserved zero bytes; then the transport continuation (54 bytes) or its delta
/// (26 to 55 bytes, see [`crate::wire::delta`]) if flagged, the user continuation, and the data
/// (the rest of the payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response<'a> {
    /// What the response carries.
    pub kind: ResponseKind,
    /// Whether `data` ends the stream.
    pub end_of_stream: bool,
    /// This packet's number, which the client acknowledges in its SACK proof.
    pub packet_number: u32,
    /// The packet's nonce, whose sums make the SACK proof unforgeable.
    pub nonce: u32,
    /// Stream offset of the first byte of `data`.
    pub offset: u64,
    /// A new transport continuation for the client to spend.
    pub continuation: Option<Continuation>,
    /// A new transport continuation as a delta from the client's prediction (for a client
    /// that asked for [`crate::wire::REQUEST_FLAG_DELTA`]). At most one of `continuation`
    /// and `delta` is present.
    pub delta: Option<ContinuationDelta>,
    /// The server application's user continuation, opaque here.
    pub user_continuation: &'a [u8],
    /// Server-to-client data.
    pub data: &'a [u8],
}

impl<'a> Response<'a> {
    /// Parses a response from a segment's payload.
    ///
    /// Accepts only canonical encodings: errors are [`WireError::BadVersion`],
    /// [`WireError::BadKind`], [`WireError::BadFlags`] (a reserved flag bit or a nonzero
    /// reserved byte, whose value it reports, or both continuation bits),
    /// [`WireError::Continuation`] and [`WireError::Truncated`].
    pub fn parse(payload: &'a [u8]) -> Result<Response<'a>, WireError> {
        let mut r = Reader::new(payload);
        let version = r.u8()?;
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let kind = ResponseKind::try_from(r.u8()?)?;
        let flags = r.u8()?;
        if flags & !(FLAG_CONTINUATION | FLAG_END_OF_STREAM | FLAG_DELTA) != 0
            || flags & (FLAG_CONTINUATION | FLAG_DELTA) == FLAG_CONTINUATION | FLAG_DELTA
        {
            return Err(WireError::BadFlags(flags));
        }
        reserved(r.u8()?)?;
        let packet_number = r.u32()?;
        let nonce = r.u32()?;
        let offset = r.u64()?;
        let ucont_len = r.u16()?;
        for b in r.array::<2>()? {
            reserved(b)?;
        }
        let continuation = if flags & FLAG_CONTINUATION != 0 {
            Some(Continuation::parse(r.take(CONTINUATION_LEN)?)?)
        } else {
            None
        };
        let delta = if flags & FLAG_DELTA != 0 {
            let (delta, used) = ContinuationDelta::parse(r.rest)?;
            r.take(used)?;
            Some(delta)
        } else {
            None
        };
        let user_continuation = r.take(usize::from(ucont_len))?;
        Ok(Response {
            kind,
            end_of_stream: flags & FLAG_END_OF_STREAM != 0,
            packet_number,
            nonce,
            offset,
            continuation,
            delta,
            user_continuation,
            data: r.rest(),
        })
    }

    /// The number of bytes [`Response::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        self.parts().buffer_len()
    }

    /// Writes the response to the front of `out` and returns its length,
    /// [`Response::buffer_len`].
    ///
    /// Refuses to write what [`Response::parse`] would reject: [`WireError::Continuation`]
    /// for a continuation with a reserved `flags` bit, [`WireError::BadFlags`] for both a
    /// continuation and a delta, [`WireError::BadLength`] for a user continuation over
    /// 65 535 bytes. Returns [`WireError::BadLength`] if `out` is too small.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        self.parts().emit(out)
    }

    /// The response's fields, continuation and delta borrowed.
    fn parts(&self) -> Parts<'_> {
        Parts {
            kind: self.kind,
            end_of_stream: self.end_of_stream,
            packet_number: self.packet_number,
            nonce: self.nonce,
            offset: self.offset,
            continuation: self.continuation.as_ref(),
            delta: self.delta.as_ref(),
            user_continuation: self.user_continuation,
            data: self.data,
        }
    }
}

/// A reserved byte must be zero; otherwise [`WireError::BadFlags`] with its value.
fn reserved(b: u8) -> Result<(), WireError> {
    if b == 0 {
        Ok(())
    } else {
        Err(WireError::BadFlags(b))
    }
}

/// A response to write, its continuation and delta borrowed: what [`Response::emit`]
/// writes, and what the server writes from a planned response without first copying its
/// continuation into a [`Response`] (a copy whose wide loads would wait on the narrow
/// stores that built it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Parts<'r> {
    pub(crate) kind: ResponseKind,
    pub(crate) end_of_stream: bool,
    pub(crate) packet_number: u32,
    pub(crate) nonce: u32,
    pub(crate) offset: u64,
    pub(crate) continuation: Option<&'r Continuation>,
    pub(crate) delta: Option<&'r ContinuationDelta>,
    pub(crate) user_continuation: &'r [u8],
    pub(crate) data: &'r [u8],
}

impl Parts<'_> {
    /// The number of bytes [`Parts::emit`] writes.
    pub(crate) fn buffer_len(&self) -> usize {
        let continuation = if self.continuation.is_some() {
            CONTINUATION_LEN
        } else {
            0
        };
        let delta = self.delta.map_or(0, |d| d.buffer_len());
        RESPONSE_HEADER_LEN
            .saturating_add(delta)
            .saturating_add(continuation)
            .saturating_add(self.user_continuation.len())
            .saturating_add(self.data.len())
    }

    /// Writes the response to the front of `out` and returns its length,
    /// [`Parts::buffer_len`] ([`Response::emit`] documents the refusals).
    ///
    /// Refuses to write what [`Response::parse`] would reject: [`WireError::Continuation`]
    /// for a continuation with a reserved `flags` bit, [`WireError::BadFlags`] for both a
    /// continuation and a delta, [`WireError::BadLength`] for a user continuation over
    /// 65 535 bytes. Returns [`WireError::BadLength`] if `out` is too small.
    pub(crate) fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        if self.continuation.is_some_and(|c| !c.flags_valid()) {
            return Err(WireError::Continuation);
        }
        if self.continuation.is_some() && self.delta.is_some() {
            return Err(WireError::BadFlags(FLAG_CONTINUATION | FLAG_DELTA));
        }
        let ucont_len = len_u16(self.user_continuation.len())?;
        if out.len() < self.buffer_len() {
            return Err(WireError::BadLength);
        }
        let mut flags = 0;
        if self.continuation.is_some() {
            flags |= FLAG_CONTINUATION;
        }
        if self.delta.is_some() {
            flags |= FLAG_DELTA;
        }
        if self.end_of_stream {
            flags |= FLAG_END_OF_STREAM;
        }
        let mut w = Writer::new(out);
        w.put(&[VERSION, self.kind.into(), flags, 0])?;
        w.put(&self.packet_number.to_be_bytes())?;
        w.put(&self.nonce.to_be_bytes())?;
        w.put(&self.offset.to_be_bytes())?;
        w.put(&ucont_len.to_be_bytes())?;
        w.put(&[0, 0])?;
        if let Some(c) = self.continuation {
            w.continuation(c)?;
        }
        if let Some(d) = self.delta {
            let mut bytes = [0u8; super::delta::DELTA_MAX_LEN];
            let n = d.emit(&mut bytes)?;
            w.put(bytes.get(..n).ok_or(WireError::BadLength)?)?;
        }
        w.put(self.user_continuation)?;
        w.put(self.data)?;
        Ok(w.written())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: [u8; RESPONSE_HEADER_LEN + 3 + 2] = [
        1, 2, 0x02, 0, // version, Retransmit, end of stream, reserved
        0, 0, 0, 42, // packet number
        0xDE, 0xAD, 0xBE, 0xEF, // nonce
        0, 0, 0, 0, 0, 0, 0x10, 0x00, // offset 4096
        0, 3, 0, 0, // ucont length 3, reserved
        b'a', b'b', b'c', // user continuation
        b'h', b'i', // data
    ];

    fn value() -> Response<'static> {
        Response {
            kind: ResponseKind::Retransmit,
            end_of_stream: true,
            packet_number: 42,
            nonce: 0xDEAD_BEEF,
            offset: 4096,
            continuation: None,
            delta: None,
            user_continuation: b"abc",
            data: b"hi",
        }
    }

    #[test]
    fn parse_literal() {
        assert_eq!(Response::parse(&DATA), Ok(value()));
    }

    #[test]
    fn emit_literal() {
        let mut out = [0u8; DATA.len()];
        assert_eq!(value().buffer_len(), DATA.len());
        assert_eq!(value().emit(&mut out), Ok(DATA.len()));
        assert_eq!(out, DATA);
        assert_eq!(
            value().emit(&mut out[..DATA.len() - 1]),
            Err(WireError::BadLength)
        );
    }

    #[test]
    fn named_rejections() {
        let with = |i: usize, v: u8| {
            let mut b = DATA;
            b[i] = v;
            Response::parse(&b).map(|_| ())
        };
        assert_eq!(with(0, 0), Err(WireError::BadVersion(0)));
        assert_eq!(with(1, 4), Err(WireError::BadKind(4)));
        assert_eq!(with(2, 0x0A), Err(WireError::BadFlags(0x0A)));
        assert_eq!(with(2, 0x05), Err(WireError::BadFlags(0x05)));
        assert_eq!(with(3, 1), Err(WireError::BadFlags(1)));
        assert_eq!(with(22, 0x10), Err(WireError::BadFlags(0x10)));
        assert_eq!(with(23, 0x01), Err(WireError::BadFlags(0x01)));
        // Flagging a continuation the bytes do not hold.
        assert_eq!(with(2, 0x01), Err(WireError::Truncated));
        assert_eq!(with(21, 6), Err(WireError::Truncated));
        // Flagging a delta: "ab" read as its presence bitmap sets reserved bits.
        assert_eq!(with(2, 0x04), Err(WireError::Continuation));
    }

    #[test]
    fn delta_literal_and_refusals() {
        let delta = ContinuationDelta {
            rtt_us: 1,
            timestamp_ms: 2,
            tag: [0xEE; 16],
            number: None,
            tcp_base: None,
            start_cwnd: None,
            ssthresh: None,
            proof_start: None,
            epoch_start: None,
            rtx: None,
            site: None,
            key_epoch: Some(1),
            conn_nonce: None,
        };
        let resp = Response {
            delta: Some(delta),
            ..value()
        };
        let mut out = [0u8; 128];
        let n = resp.emit(&mut out).unwrap_or_default();
        assert_eq!(n, DATA.len() + 27);
        assert_eq!(out[2], 0x06); // end of stream, delta
        assert_eq!(out[24..27], [0x01, 0x00, 0]); // bitmap: key_epoch; rtt starts
        assert_eq!(out[27 + 7], 1); // key_epoch after bitmap, rtt, timestamp
        assert_eq!(Response::parse(&out[..n]), Ok(resp));
        for cut in 0..RESPONSE_HEADER_LEN + 27 {
            assert!(Response::parse(&out[..cut]).is_err(), "cut {cut}");
        }
        let both = Response {
            continuation: Continuation::parse(&[0; CONTINUATION_LEN]).ok(),
            ..resp
        };
        assert!(both.continuation.is_some());
        assert_eq!(both.emit(&mut out), Err(WireError::BadFlags(0x05)));
    }
}
