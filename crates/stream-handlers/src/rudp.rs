//! An RUDP-like protocol: application messages fragmented into packets and assembled again
//! (paper §3.1: "an RUDP-like protocol to efficiently implement the reassembly and
//! fragmentation of application-level data in IXP memory").
//!
//! Each packet carries a 24-byte [`Header`] (big-endian):
//!
//! ```text
//!  0 version (1)   1 kind (0 data, 1 ack)   2..4 stream   4..8 message id
//!  8..12 sequence number   12..14 fragment index   14..16 fragment count
//! 16..20 message length    20..22 fragment size    22..24 zero
//! ```
//!
//! Fragment `i` carries bytes `i·size .. min((i+1)·size, len)` of the message and sequence
//! number `first + i`. A [`Reassembler`] accepts fragments in any order, rejects bad,
//! duplicate and out-of-range ones with a typed [`ReassemblyError`], never panics, and
//! bounds its memory: at most `max_messages` in progress of at most `max_message_len`
//! bytes each.
//!
//! ```
//! use stream_handlers::rudp::{fragment, Reassembler, ReassemblyConfig};
//! let msg: Vec<u8> = (0..200u8).collect();
//! let packets = fragment(3, 42, 1000, &msg, 64).unwrap();
//! assert_eq!(packets.len(), 4);
//! let mut r = Reassembler::new(ReassemblyConfig::default());
//! let mut done = None;
//! for p in packets.iter().rev() {
//!     done = r.handle_fragment(p).unwrap().or(done);
//! }
//! assert_eq!(done.unwrap().payload, msg);
//! ```

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

/// Header length, bytes.
pub const HEADER_LEN: usize = 24;
/// The only version spoken.
pub const VERSION: u8 = 1;

/// A packet's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A fragment of a message.
    Data,
    /// A cumulative acknowledgement of sequence numbers below `seq`.
    Ack,
}

/// A parsed RUDP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Data or acknowledgement.
    pub kind: Kind,
    /// The stream (connection) it belongs to.
    pub stream: u16,
    /// The application message it is part of.
    pub message: u32,
    /// Its sequence number.
    pub seq: u32,
    /// Its index among the message's fragments.
    pub index: u16,
    /// How many fragments the message has.
    pub count: u16,
    /// The message's length, bytes.
    pub len: u32,
    /// Bytes per fragment (all but the last are full).
    pub size: u16,
}

impl Header {
    /// Parses the header of `packet`.
    ///
    /// # Errors
    ///
    /// [`ReassemblyError::Truncated`] or [`ReassemblyError::BadVersion`].
    pub fn parse(packet: &[u8]) -> Result<Self, ReassemblyError> {
        let h = packet.get(..HEADER_LEN).ok_or(ReassemblyError::Truncated)?;
        let u16_at = |i: usize| {
            h.get(i..i + 2)
                .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
        };
        let u32_at = |i: usize| {
            h.get(i..i + 4)
                .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        if h.first() != Some(&VERSION) {
            return Err(ReassemblyError::BadVersion);
        }
        let kind = match h.get(1) {
            Some(0) => Kind::Data,
            Some(1) => Kind::Ack,
            _ => return Err(ReassemblyError::BadKind),
        };
        Ok(Self {
            kind,
            stream: u16_at(2),
            message: u32_at(4),
            seq: u32_at(8),
            index: u16_at(12),
            count: u16_at(14),
            len: u32_at(16),
            size: u16_at(20),
        })
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(VERSION);
        out.push(match self.kind {
            Kind::Data => 0,
            Kind::Ack => 1,
        });
        out.extend_from_slice(&self.stream.to_be_bytes());
        out.extend_from_slice(&self.message.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.index.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(&self.len.to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
    }

    /// Where this fragment's bytes go in the message, if the header is self-consistent.
    fn span(&self) -> Option<(usize, usize)> {
        let size = usize::from(self.size);
        let len = usize::try_from(self.len).ok()?;
        if size == 0 || self.count == 0 || self.index >= self.count {
            return None;
        }
        if usize::from(self.count) != len.div_ceil(size).max(1) {
            return None;
        }
        let start = usize::from(self.index).checked_mul(size)?;
        Some((start, start.saturating_add(size).min(len)))
    }
}

/// Why fragmentation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FragmentError {
    /// A fragment size of zero.
    ZeroSize,
    /// More than 65,535 fragments, or a message longer than 4 GiB.
    TooLarge,
}

impl fmt::Display for FragmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroSize => f.write_str("fragment size is zero"),
            Self::TooLarge => f.write_str("message needs more than 65535 fragments"),
        }
    }
}

impl core::error::Error for FragmentError {}

/// Splits `payload` into data packets of at most `size` payload bytes: message `message` of
/// `stream`, sequence numbers from `first_seq` (wrapping).
///
/// # Errors
///
/// [`FragmentError`] if `size` is zero or the message needs too many fragments.
pub fn fragment(
    stream: u16,
    message: u32,
    first_seq: u32,
    payload: &[u8],
    size: u16,
) -> Result<Vec<Vec<u8>>, FragmentError> {
    if size == 0 {
        return Err(FragmentError::ZeroSize);
    }
    let len = u32::try_from(payload.len()).map_err(|_| FragmentError::TooLarge)?;
    let count = payload.len().div_ceil(usize::from(size)).max(1);
    let count16 = u16::try_from(count).map_err(|_| FragmentError::TooLarge)?;
    let mut chunks: Vec<&[u8]> = payload.chunks(usize::from(size)).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    let mut out = Vec::with_capacity(count);
    for (i, chunk) in (0u16..).zip(chunks) {
        let mut p = Vec::with_capacity(HEADER_LEN + chunk.len());
        Header {
            kind: Kind::Data,
            stream,
            message,
            seq: first_seq.wrapping_add(u32::from(i)),
            index: i,
            count: count16,
            len,
            size,
        }
        .emit(&mut p);
        p.extend_from_slice(chunk);
        out.push(p);
    }
    Ok(out)
}

/// Why a fragment was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReassemblyError {
    /// Shorter than a header.
    Truncated,
    /// Not version 1.
    BadVersion,
    /// Neither data nor acknowledgement.
    BadKind,
    /// An acknowledgement, not a fragment.
    NotData,
    /// Index, count, size and length disagree, or the payload has the wrong length.
    OutOfRange,
    /// Longer than the configured maximum message.
    TooLong,
    /// A fragment already received.
    Duplicate,
    /// Disagrees with earlier fragments of the same message.
    Inconsistent,
    /// Too many messages in progress.
    Busy,
    /// The message was already delivered.
    AlreadyDelivered,
}

impl fmt::Display for ReassemblyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Truncated => "packet shorter than the RUDP header",
            Self::BadVersion => "unknown RUDP version",
            Self::BadKind => "unknown RUDP packet kind",
            Self::NotData => "acknowledgement where a fragment was expected",
            Self::OutOfRange => "fragment index, count, size or length out of range",
            Self::TooLong => "message longer than the reassembly limit",
            Self::Duplicate => "duplicate fragment",
            Self::Inconsistent => "fragment disagrees with earlier fragments of its message",
            Self::Busy => "too many messages in reassembly",
            Self::AlreadyDelivered => "message already delivered",
        })
    }
}

impl core::error::Error for ReassemblyError {}

/// Limits of a [`Reassembler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReassemblyConfig {
    /// Messages in progress at once.
    pub max_messages: usize,
    /// Longest message accepted, bytes.
    pub max_message_len: u32,
}

impl Default for ReassemblyConfig {
    /// 16 messages of up to 1 MiB.
    fn default() -> Self {
        Self {
            max_messages: 16,
            max_message_len: 1 << 20,
        }
    }
}

/// A message assembled from all its fragments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assembled {
    /// Its stream.
    pub stream: u16,
    /// Its message id.
    pub message: u32,
    /// Sequence number of its first fragment.
    pub first_seq: u32,
    /// Fragments it arrived in.
    pub fragments: u16,
    /// Its bytes.
    pub payload: Vec<u8>,
}

#[derive(Debug)]
struct Partial {
    head: Header,
    first_seq: u32,
    have: Vec<bool>,
    missing: usize,
    bytes: Vec<u8>,
}

/// Assembles messages from fragments arriving in any order.
#[derive(Debug)]
pub struct Reassembler {
    cfg: ReassemblyConfig,
    partial: Vec<Partial>,
    delivered: Vec<(u16, u32)>,
    next_delivered: usize,
}

impl Reassembler {
    /// An empty reassembler with limits `cfg`.
    pub fn new(cfg: ReassemblyConfig) -> Self {
        Self {
            cfg,
            partial: Vec::new(),
            delivered: Vec::new(),
            next_delivered: 0,
        }
    }

    /// Messages in progress.
    pub fn in_progress(&self) -> usize {
        self.partial.len()
    }

    /// Takes one packet; returns the message it completes, if any.
    ///
    /// # Errors
    ///
    /// A [`ReassemblyError`] saying why the packet was dropped; state is unchanged then.
    pub fn handle_fragment(&mut self, packet: &[u8]) -> Result<Option<Assembled>, ReassemblyError> {
        let h = Header::parse(packet)?;
        if h.kind != Kind::Data {
            return Err(ReassemblyError::NotData);
        }
        if h.len > self.cfg.max_message_len {
            return Err(ReassemblyError::TooLong);
        }
        let (start, end) = h.span().ok_or(ReassemblyError::OutOfRange)?;
        let body = packet.get(HEADER_LEN..).unwrap_or(&[]);
        if body.len() != end - start {
            return Err(ReassemblyError::OutOfRange);
        }
        let key = (h.stream, h.message);
        if self.delivered.contains(&key) {
            return Err(ReassemblyError::AlreadyDelivered);
        }
        let first_seq = h.seq.wrapping_sub(u32::from(h.index));
        let pos = match self
            .partial
            .iter()
            .position(|p| (p.head.stream, p.head.message) == key)
        {
            Some(i) => i,
            None => {
                if self.partial.len() >= self.cfg.max_messages {
                    return Err(ReassemblyError::Busy);
                }
                let count = usize::from(h.count);
                self.partial.push(Partial {
                    head: h,
                    first_seq,
                    have: vec![false; count],
                    missing: count,
                    bytes: vec![0; end.max(usize::try_from(h.len).unwrap_or(end))],
                });
                self.partial.len() - 1
            }
        };
        let p = self
            .partial
            .get_mut(pos)
            .ok_or(ReassemblyError::Inconsistent)?;
        if (p.head.count, p.head.len, p.head.size) != (h.count, h.len, h.size)
            || p.first_seq != first_seq
        {
            return Err(ReassemblyError::Inconsistent);
        }
        let seen = p
            .have
            .get_mut(usize::from(h.index))
            .ok_or(ReassemblyError::OutOfRange)?;
        if *seen {
            return Err(ReassemblyError::Duplicate);
        }
        let dst = p
            .bytes
            .get_mut(start..end)
            .ok_or(ReassemblyError::OutOfRange)?;
        dst.copy_from_slice(body);
        *seen = true;
        p.missing -= 1;
        if p.missing > 0 {
            return Ok(None);
        }
        let done = self.partial.swap_remove(pos);
        self.remember(key);
        Ok(Some(Assembled {
            stream: done.head.stream,
            message: done.head.message,
            first_seq: done.first_seq,
            fragments: done.head.count,
            payload: done.bytes,
        }))
    }

    fn remember(&mut self, key: (u16, u32)) {
        let cap = self.cfg.max_messages.max(1);
        if self.delivered.len() < cap {
            self.delivered.push(key);
        } else if let Some(slot) = self.delivered.get_mut(self.next_delivered % cap) {
            *slot = key;
        }
        self.next_delivered = (self.next_delivered + 1) % cap;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = Header {
            kind: Kind::Ack,
            stream: 7,
            message: 9,
            seq: 11,
            index: 1,
            count: 3,
            len: 100,
            size: 40,
        };
        let mut b = Vec::new();
        h.emit(&mut b);
        assert_eq!(b.len(), HEADER_LEN);
        assert_eq!(Header::parse(&b), Ok(h));
        assert_eq!(Header::parse(&b[..5]), Err(ReassemblyError::Truncated));
        b[0] = 2;
        assert_eq!(Header::parse(&b), Err(ReassemblyError::BadVersion));
    }

    #[test]
    fn empty_message_is_one_fragment() {
        let p = fragment(1, 1, 0, &[], 64).unwrap();
        assert_eq!(p.len(), 1);
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let m = r.handle_fragment(&p[0]).unwrap().unwrap();
        assert!(m.payload.is_empty());
        assert_eq!(
            r.handle_fragment(&p[0]),
            Err(ReassemblyError::AlreadyDelivered)
        );
    }

    #[test]
    fn bad_fragments_are_refused_with_their_reason() {
        let msg = [5u8; 100];
        let p = fragment(1, 2, 0, &msg, 40).unwrap();
        let mut r = Reassembler::new(ReassemblyConfig {
            max_messages: 1,
            max_message_len: 100,
        });
        assert_eq!(r.handle_fragment(&p[0]), Ok(None));
        assert_eq!(r.handle_fragment(&p[0]), Err(ReassemblyError::Duplicate));
        let mut short = p[1].clone();
        short.pop();
        assert_eq!(r.handle_fragment(&short), Err(ReassemblyError::OutOfRange));
        let other = fragment(1, 3, 0, &msg, 40).unwrap();
        assert_eq!(r.handle_fragment(&other[0]), Err(ReassemblyError::Busy));
        let mut shifted = p[1].clone();
        shifted[11] ^= 1;
        assert_eq!(
            r.handle_fragment(&shifted),
            Err(ReassemblyError::Inconsistent)
        );
        let long = fragment(1, 4, 0, &[0; 101], 40).unwrap();
        assert_eq!(r.handle_fragment(&long[0]), Err(ReassemblyError::TooLong));
        let mut bad_index = p[2].clone();
        bad_index[13] = 9;
        assert_eq!(
            r.handle_fragment(&bad_index),
            Err(ReassemblyError::OutOfRange)
        );
        assert_eq!(r.handle_fragment(&p[2]), Ok(None));
        let done = r.handle_fragment(&p[1]).unwrap().unwrap();
        assert_eq!(done.payload, msg);
        assert_eq!(done.fragments, 3);
        assert_eq!(r.in_progress(), 0);
        assert_eq!(fragment(0, 0, 0, &msg, 0), Err(FragmentError::ZeroSize));
    }
}
