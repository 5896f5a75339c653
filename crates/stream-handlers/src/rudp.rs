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
//! number `first + i`. A sender numbers the messages of a stream upwards (0, 1, 2, …, no
//! wrap-around).
//!
//! ## What a [`Reassembler`] guarantees
//!
//! * **Never a panic, never a wrong assembly.** Fragments arrive in any order; a bad,
//!   duplicate, inconsistent or out-of-range one is refused with a typed
//!   [`ReassemblyError`] and adds nothing.
//! * **At most once.** No message (stream, id) is ever assembled twice, however late or
//!   often its fragments are repeated. Per stream the reassembler remembers which of the
//!   [`DELIVERY_WINDOW`] ids below the highest one delivered were delivered: a fragment of
//!   one of them is [`AlreadyDelivered`](ReassemblyError::AlreadyDelivered); a fragment
//!   of a message further below is [`Stale`](ReassemblyError::Stale) (too late to tell,
//!   so refused). A message overtaken by more than that many later ones is lost.
//! * **Bounded memory, claimed as it arrives.** At most
//!   [`max_messages`](ReassemblyConfig::max_messages) partial messages at once, holding at
//!   most [`max_bytes`](ReassemblyConfig::max_bytes) together: the fragments' bytes as they
//!   arrive plus their bookkeeping (a bit per declared fragment, two bytes per fragment
//!   held), never the declared length up front. A message that could never fit (longer
//!   than `max_message_len`, or needing more than `max_bytes` whole) is
//!   [`TooLong`](ReassemblyError::TooLong). Besides, each stream that delivered a message
//!   keeps its window (a few dozen bytes; at most 65,536 streams).
//! * **Progress.** A partial message whose latest fragment arrived more than
//!   [`timeout`](ReassemblyConfig::timeout) ago is dead: it is dropped when room is needed,
//!   when its next fragment comes (which then starts it afresh), or by
//!   [`Reassembler::expire`]. When the limits are still reached, the partial message that
//!   has waited longest since its latest fragment is evicted to make room. So lost
//!   fragments never block new messages; every eviction is counted in
//!   [`ReassemblyStats`].
//!
//! Time is the caller's: every call takes `now`, a [`sansio::Instant`] in microseconds.
//!
//! ```
//! use sansio::Instant;
//! use stream_handlers::rudp::{fragment, Reassembler, ReassemblyConfig};
//! let msg: Vec<u8> = (0..200u8).collect();
//! let packets = fragment(3, 42, 1000, &msg, 64).unwrap();
//! assert_eq!(packets.len(), 4);
//! let mut r = Reassembler::new(ReassemblyConfig::default());
//! let mut done = None;
//! for p in packets.iter().rev() {
//!     done = r.handle_fragment(Instant::ZERO, p).unwrap().or(done);
//! }
//! assert_eq!(done.unwrap().payload, msg);
//! assert_eq!(r.stats().assembled, 1);
//! assert_eq!(r.bytes_held(), 0);
//! ```

mod reassembler;
#[cfg(test)]
mod tests;

pub use reassembler::{Assembled, DELIVERY_WINDOW, Reassembler, ReassemblyConfig, ReassemblyStats};

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
    /// [`ReassemblyError::Truncated`], [`ReassemblyError::BadVersion`],
    /// [`ReassemblyError::BadKind`] or [`ReassemblyError::Reserved`] (bytes 22..24 not
    /// zero).
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
        if h.get(22..24) != Some(&[0, 0][..]) {
            return Err(ReassemblyError::Reserved);
        }
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

    /// Appends the header's [`HEADER_LEN`] bytes to `out`.
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
    pub(crate) fn span(&self) -> Option<(usize, usize)> {
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
    /// The reserved bytes 22..24 are not zero.
    Reserved,
    /// An acknowledgement, not a fragment.
    NotData,
    /// Index, count, size and length disagree, or the payload has the wrong length.
    OutOfRange,
    /// A message that could never fit: longer than
    /// [`max_message_len`](ReassemblyConfig::max_message_len), or needing more than
    /// [`max_bytes`](ReassemblyConfig::max_bytes) whole.
    TooLong,
    /// A fragment already received.
    Duplicate,
    /// Disagrees with earlier fragments of the same message.
    Inconsistent,
    /// No message can be in progress at all (a limit of zero messages) and this one needs
    /// more than one fragment.
    Busy,
    /// The message was already delivered.
    AlreadyDelivered,
    /// The message id is more than [`DELIVERY_WINDOW`] below the highest one its stream
    /// delivered: too late to tell whether it was delivered, so refused.
    Stale,
}

impl fmt::Display for ReassemblyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Truncated => "packet shorter than the RUDP header",
            Self::BadVersion => "unknown RUDP version",
            Self::BadKind => "unknown RUDP packet kind",
            Self::Reserved => "reserved RUDP header bytes are not zero",
            Self::NotData => "acknowledgement where a fragment was expected",
            Self::OutOfRange => "fragment index, count, size or length out of range",
            Self::TooLong => "message longer than the reassembly limit",
            Self::Duplicate => "duplicate fragment",
            Self::Inconsistent => "fragment disagrees with earlier fragments of its message",
            Self::Busy => "no room for a message in reassembly",
            Self::AlreadyDelivered => "message already delivered",
            Self::Stale => "message id below the stream's delivery window",
        })
    }
}

impl core::error::Error for ReassemblyError {}
