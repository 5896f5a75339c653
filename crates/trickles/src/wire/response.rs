//! Responses: server to client.

use super::{RESPONSE_HEADER_LEN, Reader, VERSION, WireError, Writer, len_u16};
use crate::continuation::{CONTINUATION_LEN, Continuation};

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

/// A response message: the TCP payload of a segment from server to client.
///
/// Layout: version, kind, flags (bit 0 = continuation present, bit 1 = end of stream),
/// a reserved zero byte, packet number `u32`, nonce `u32`, stream offset `u64`, user
/// continuation length `u16`, two reserved zero bytes; then the transport continuation
/// if flagged, the user continuation, and the data (the rest of the payload).
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
    /// reserved byte, whose value it reports), [`WireError::Continuation`] and
    /// [`WireError::Truncated`].
    pub fn parse(payload: &'a [u8]) -> Result<Response<'a>, WireError> {
        let mut r = Reader::new(payload);
        let version = r.u8()?;
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let kind = ResponseKind::try_from(r.u8()?)?;
        let flags = r.u8()?;
        if flags & !(FLAG_CONTINUATION | FLAG_END_OF_STREAM) != 0 {
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
        let user_continuation = r.take(usize::from(ucont_len))?;
        Ok(Response {
            kind,
            end_of_stream: flags & FLAG_END_OF_STREAM != 0,
            packet_number,
            nonce,
            offset,
            continuation,
            user_continuation,
            data: r.rest(),
        })
    }

    /// The number of bytes [`Response::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        let continuation = if self.continuation.is_some() {
            CONTINUATION_LEN
        } else {
            0
        };
        RESPONSE_HEADER_LEN
            .saturating_add(continuation)
            .saturating_add(self.user_continuation.len())
            .saturating_add(self.data.len())
    }

    /// Writes the response to the front of `out` and returns its length,
    /// [`Response::buffer_len`].
    ///
    /// Refuses to write what [`Response::parse`] would reject: [`WireError::Continuation`]
    /// for a continuation with nonzero `flags`, [`WireError::BadLength`] for a user
    /// continuation over 65 535 bytes. Returns [`WireError::BadLength`] if `out` is too
    /// small.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        if self.continuation.is_some_and(|c| c.flags != 0) {
            return Err(WireError::Continuation);
        }
        let ucont_len = len_u16(self.user_continuation.len())?;
        if out.len() < self.buffer_len() {
            return Err(WireError::BadLength);
        }
        let mut flags = 0;
        if self.continuation.is_some() {
            flags |= FLAG_CONTINUATION;
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
        if let Some(c) = &self.continuation {
            w.continuation(c)?;
        }
        w.put(self.user_continuation)?;
        w.put(self.data)?;
        Ok(w.written())
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
        assert_eq!(with(2, 0x06), Err(WireError::BadFlags(0x06)));
        assert_eq!(with(3, 1), Err(WireError::BadFlags(1)));
        assert_eq!(with(22, 0x10), Err(WireError::BadFlags(0x10)));
        assert_eq!(with(23, 0x01), Err(WireError::BadFlags(0x01)));
        // Flagging a continuation the bytes do not hold.
        assert_eq!(with(2, 0x01), Err(WireError::Truncated));
        assert_eq!(with(21, 6), Err(WireError::Truncated));
    }
}
