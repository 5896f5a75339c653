//! The control channel's datagrams: what a host (or `waist stream deploy/set`) sends to a
//! node's control port, and the node's answer.
//!
//! A control message ([`ControlMessage`], the paper's vocabulary) says *what* changes; the
//! envelope says for which stream, carries a request id the reply echoes, and adds the one
//! request the paper leaves to configuration: deploying a handler composition, written as a
//! [`Spec`](crate::spec::Spec)'s text. Big-endian:
//!
//! ```text
//!  0..2  magic 0x53 0x48 ("SH")      2  version 1      3  kind
//!  4..6  stream                      6..10 request id
//! 10..   kind 0 control: a ControlMessage (its own version byte, opcode, operands)
//!        kind 1 deploy:  the spec, UTF-8 text (at most 4096 bytes)
//!        kind 2 reply:   status (0 on the node, 1 on the host, 2 applied, 3 refused),
//!                        then a UTF-8 detail (at most 1024 bytes)
//! ```
//!
//! ```
//! use stream_handlers::envelope::{Envelope, Request, Status};
//! let e = Envelope { stream: 7, id: 1, request: Request::Deploy("to 10.0.0.2:7400 | mirror".into()) };
//! let mut b = Vec::new();
//! e.emit(&mut b);
//! assert_eq!(Envelope::parse(&b), Ok(e));
//! let r = Envelope { stream: 7, id: 1, request: Request::Reply(Status::Refused, "no headroom".into()) };
//! r.emit(&mut b);
//! # Ok::<(), stream_handlers::envelope::EnvelopeError>(())
//! ```

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::control::{ControlError, ControlMessage};

/// The first two bytes of every envelope.
pub const MAGIC: [u8; 2] = *b"SH";
/// The envelope version spoken.
pub const VERSION: u8 = 1;
/// Bytes before the body.
pub const HEADER_LEN: usize = 10;
/// Longest spec a deploy request carries.
pub const MAX_SPEC: usize = 4096;
/// Longest detail a reply carries (longer ones are cut at a character boundary).
pub const MAX_DETAIL: usize = 1024;

/// How a request ended, as a reply says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Deployed on the node (admitted: the node has the headroom).
    OnNode,
    /// Deployed on the host (the node lacks headroom, or the request asked for it).
    OnHost,
    /// A control message applied.
    Applied,
    /// Refused; the detail says why.
    Refused,
}

impl Status {
    const fn code(self) -> u8 {
        match self {
            Self::OnNode => 0,
            Self::OnHost => 1,
            Self::Applied => 2,
            Self::Refused => 3,
        }
    }

    /// A short name ("on-node", "on-host", "applied", "refused").
    pub const fn name(self) -> &'static str {
        match self {
            Self::OnNode => "on-node",
            Self::OnHost => "on-host",
            Self::Applied => "applied",
            Self::Refused => "refused",
        }
    }
}

/// What an envelope carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A control message for the stream.
    Control(ControlMessage),
    /// Deploy this spec (text) for the stream, replacing what it had.
    Deploy(String),
    /// The answer to the request with the same id.
    Reply(Status, String),
}

/// One control-channel datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The stream it is about.
    pub stream: u16,
    /// The request id (a reply carries its request's).
    pub id: u32,
    /// The body.
    pub request: Request,
}

/// Why a datagram is not an envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvelopeError {
    /// Shorter than the header, or a reply without its status.
    Truncated,
    /// Not "SH".
    BadMagic,
    /// Not version 1.
    BadVersion(u8),
    /// Kind not 0, 1 or 2.
    BadKind(u8),
    /// A reply status not 0–3.
    BadStatus(u8),
    /// Text that is not UTF-8, or longer than allowed.
    BadText,
    /// The control message inside is malformed.
    Control(ControlError),
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("control datagram truncated"),
            Self::BadMagic => f.write_str("not a stream control datagram (magic is not \"SH\")"),
            Self::BadVersion(v) => write!(f, "unknown control envelope version {v}"),
            Self::BadKind(k) => write!(f, "unknown control envelope kind {k}"),
            Self::BadStatus(s) => write!(f, "unknown reply status {s}"),
            Self::BadText => f.write_str("spec or detail is not UTF-8 or too long"),
            Self::Control(e) => write!(f, "control message: {e}"),
        }
    }
}

impl core::error::Error for EnvelopeError {}

fn text(bytes: &[u8], max: usize) -> Result<String, EnvelopeError> {
    if bytes.len() > max {
        return Err(EnvelopeError::BadText);
    }
    core::str::from_utf8(bytes)
        .map(String::from)
        .map_err(|_| EnvelopeError::BadText)
}

impl Envelope {
    /// Parses one datagram.
    ///
    /// # Errors
    ///
    /// An [`EnvelopeError`] naming what is wrong.
    pub fn parse(b: &[u8]) -> Result<Self, EnvelopeError> {
        let (h, body) = b
            .split_at_checked(HEADER_LEN)
            .ok_or(EnvelopeError::Truncated)?;
        if h[..2] != MAGIC {
            return Err(EnvelopeError::BadMagic);
        }
        if h[2] != VERSION {
            return Err(EnvelopeError::BadVersion(h[2]));
        }
        let stream = u16::from_be_bytes([h[4], h[5]]);
        let id = u32::from_be_bytes([h[6], h[7], h[8], h[9]]);
        let request = match h[3] {
            0 => Request::Control(ControlMessage::parse(body).map_err(EnvelopeError::Control)?),
            1 => Request::Deploy(text(body, MAX_SPEC)?),
            2 => {
                let (&s, detail) = body.split_first().ok_or(EnvelopeError::Truncated)?;
                let status = match s {
                    0 => Status::OnNode,
                    1 => Status::OnHost,
                    2 => Status::Applied,
                    3 => Status::Refused,
                    s => return Err(EnvelopeError::BadStatus(s)),
                };
                Request::Reply(status, text(detail, MAX_DETAIL)?)
            }
            k => return Err(EnvelopeError::BadKind(k)),
        };
        Ok(Self {
            stream,
            id,
            request,
        })
    }

    /// Writes the datagram into `out` (cleared first). A detail past [`MAX_DETAIL`] bytes
    /// is cut at a character boundary.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(match self.request {
            Request::Control(_) => 0,
            Request::Deploy(_) => 1,
            Request::Reply(..) => 2,
        });
        out.extend_from_slice(&self.stream.to_be_bytes());
        out.extend_from_slice(&self.id.to_be_bytes());
        match &self.request {
            Request::Control(m) => m.emit(out),
            Request::Deploy(s) => out.extend_from_slice(s.as_bytes()),
            Request::Reply(status, detail) => {
                out.push(status.code());
                let mut end = detail.len().min(MAX_DETAIL);
                while !detail.is_char_boundary(end) {
                    end -= 1;
                }
                out.extend_from_slice(detail.as_bytes().get(..end).unwrap_or_default());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{Field, Predicate};
    use alloc::string::ToString;

    #[test]
    fn every_kind_round_trips_and_short_ones_are_truncated() {
        let all = [
            Request::Control(ControlMessage::SetPredicate {
                handler: 1,
                predicate: Predicate::Lt(Field::new(0, 4), 9),
            }),
            Request::Deploy("to 10.0.0.2:7400 | mirror".into()),
            Request::Reply(Status::OnHost, "cost 812 ns > headroom 400 ns".into()),
            Request::Reply(Status::Refused, String::new()),
        ];
        for request in all {
            let e = Envelope {
                stream: 3,
                id: 0xdead_beef,
                request,
            };
            let mut b = Vec::new();
            e.emit(&mut b);
            assert_eq!(Envelope::parse(&b), Ok(e));
            for cut in 0..HEADER_LEN {
                assert_eq!(Envelope::parse(&b[..cut]), Err(EnvelopeError::Truncated));
            }
        }
    }

    #[test]
    fn bad_headers_are_named_and_long_details_cut_on_a_character() {
        let mut b = Vec::new();
        Envelope {
            stream: 1,
            id: 2,
            request: Request::Reply(Status::Applied, "é".repeat(600)),
        }
        .emit(&mut b);
        let Ok(Envelope {
            request: Request::Reply(_, d),
            ..
        }) = Envelope::parse(&b)
        else {
            panic!("a cut detail still parses");
        };
        assert_eq!(d.len(), MAX_DETAIL);
        b[3] = 9;
        assert_eq!(Envelope::parse(&b), Err(EnvelopeError::BadKind(9)));
        b[2] = 2;
        assert_eq!(Envelope::parse(&b), Err(EnvelopeError::BadVersion(2)));
        b[0] = b'X';
        assert_eq!(Envelope::parse(&b), Err(EnvelopeError::BadMagic));
        let mut d = b"SH\x01\x01\x00\x01\x00\x00\x00\x01".to_vec();
        d.push(0xff);
        assert_eq!(Envelope::parse(&d), Err(EnvelopeError::BadText));
        d[3] = 2;
        d[10] = 7;
        assert_eq!(Envelope::parse(&d), Err(EnvelopeError::BadStatus(7)));
        assert_eq!(
            Envelope::parse(b"SH\x01\x02\x00\x01\x00\x00\x00\x01"),
            Err(EnvelopeError::Truncated)
        );
        assert!(EnvelopeError::BadKind(9).to_string().contains('9'));
    }
}
