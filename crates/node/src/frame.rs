//! The link frame: what one datagram of a UDP link (or one read of a TUN device) carries.
//!
//! ```text
//!  first nibble 4 or 6   a plain IP packet, whole
//!  0xF1                  threaded label: [0xF1][label, 4 bytes, big-endian][IP packet]
//!  0xF2                  routing message: [0xF2][distance-vector message (fastpath::dv::wire)]
//! ```
//!
//! No IP version uses 0xF, so one nibble tells a plain packet from a waist *shim*; the shim's
//! first byte is its kind. A TUN device carries plain IP packets only; a UDP link carries
//! any frame, one per datagram. The label is `fastpath`'s 32-bit threaded label (random
//! bit, 7-bit hop limit, 24-bit index).
//!
//! ```
//! use waist_node::frame::{Frame, emit_label_frame};
//! use fastpath::threaded::Label;
//!
//! let ip = [0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
//! let mut out = [0u8; 25];
//! let n = emit_label_frame(Label::threaded(7, 30), &ip, &mut out)?;
//! match Frame::parse(&out[..n])? {
//!     Frame::Labelled { label, packet } => {
//!         assert_eq!((label.index, label.hop_limit), (7, 30));
//!         assert_eq!(packet, &ip[..]);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), waist_node::frame::FrameError>(())
//! ```

use core::fmt;

use fastpath::threaded::{LABEL_LEN, Label};

/// The kind byte of a threaded-label shim.
pub const KIND_LABEL: u8 = 0xF1;
/// The kind byte of a routing-message shim.
pub const KIND_ROUTING: u8 = 0xF2;
/// Bytes a label shim puts in front of its packet.
pub const LABEL_SHIM_LEN: usize = 1 + LABEL_LEN;

/// One frame of a link, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A plain IP packet (first nibble 4 or 6; not yet checked further).
    Ip(&'a [u8]),
    /// A packet behind a threaded label.
    Labelled {
        /// The label.
        label: Label,
        /// The IP packet after it (not yet checked).
        packet: &'a [u8],
    },
    /// A distance-vector message (not yet checked).
    Routing(&'a [u8]),
}

/// Why bytes are not a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// No bytes at all.
    Empty,
    /// The first nibble is neither 4, 6 nor 0xF.
    Version(u8),
    /// A shim kind we do not know.
    UnknownKind(u8),
    /// A label shim too short for its label.
    Truncated,
    /// The output buffer is too small.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        len: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Empty => f.write_str("empty frame"),
            FrameError::Version(v) => write!(f, "first nibble {v:#x}: neither IP nor a shim"),
            FrameError::UnknownKind(k) => write!(f, "unknown shim kind {k:#04x}"),
            FrameError::Truncated => f.write_str("label shim shorter than its label"),
            FrameError::BufferTooSmall { needed, len } => {
                write!(f, "output buffer of {len} bytes, {needed} needed")
            }
        }
    }
}

impl core::error::Error for FrameError {}

impl<'a> Frame<'a> {
    /// Reads the frame in `bytes`.
    ///
    /// # Errors
    ///
    /// [`FrameError`] for an empty frame, an unknown first nibble or shim kind, or a label
    /// shim with fewer than 4 label bytes.
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        let &first = bytes.first().ok_or(FrameError::Empty)?;
        match first >> 4 {
            4 | 6 => Ok(Frame::Ip(bytes)),
            0xF => {
                let rest = bytes.get(1..).unwrap_or_default();
                match first {
                    KIND_LABEL => {
                        let label = Label::parse(rest).map_err(|_| FrameError::Truncated)?;
                        Ok(Frame::Labelled {
                            label,
                            packet: rest.get(LABEL_LEN..).unwrap_or_default(),
                        })
                    }
                    KIND_ROUTING => Ok(Frame::Routing(rest)),
                    kind => Err(FrameError::UnknownKind(kind)),
                }
            }
            v => Err(FrameError::Version(v)),
        }
    }
}

/// Writes a label shim and `packet` into `out`; returns the frame's length.
///
/// # Errors
///
/// [`FrameError::BufferTooSmall`]; [`FrameError::Truncated`] if the label's fields do not
/// fit its word.
pub fn emit_label_frame(label: Label, packet: &[u8], out: &mut [u8]) -> Result<usize, FrameError> {
    let n = LABEL_SHIM_LEN + packet.len();
    let len = out.len();
    let out = out
        .get_mut(..n)
        .ok_or(FrameError::BufferTooSmall { needed: n, len })?;
    let (shim, body) = out.split_at_mut(LABEL_SHIM_LEN);
    let (kind, word) = shim.split_at_mut(1);
    kind.fill(KIND_LABEL);
    label.emit(word).map_err(|_| FrameError::Truncated)?;
    body.copy_from_slice(packet);
    Ok(n)
}

/// Writes a routing shim around `message` into `out`; returns the frame's length.
///
/// # Errors
///
/// [`FrameError::BufferTooSmall`].
pub fn emit_routing_frame(message: &[u8], out: &mut [u8]) -> Result<usize, FrameError> {
    let n = 1 + message.len();
    let len = out.len();
    let out = out
        .get_mut(..n)
        .ok_or(FrameError::BufferTooSmall { needed: n, len })?;
    let (kind, body) = out.split_at_mut(1);
    kind.fill(KIND_ROUTING);
    body.copy_from_slice(message);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_frames() {
        assert_eq!(Frame::parse(&[0x45, 1, 2]), Ok(Frame::Ip(&[0x45, 1, 2])));
        assert_eq!(Frame::parse(&[0x60]), Ok(Frame::Ip(&[0x60])));
        assert_eq!(Frame::parse(&[0xF2, 9, 9]), Ok(Frame::Routing(&[9, 9])));
        assert_eq!(
            Frame::parse(&[0xF1, 0x1E, 0, 0, 7, 0x45]),
            Ok(Frame::Labelled {
                label: Label::threaded(7, 30),
                packet: &[0x45]
            })
        );
        assert_eq!(Frame::parse(&[]), Err(FrameError::Empty));
        assert_eq!(Frame::parse(&[0x55]), Err(FrameError::Version(5)));
        assert_eq!(Frame::parse(&[0xF7]), Err(FrameError::UnknownKind(0xF7)));
        assert_eq!(Frame::parse(&[0xF1, 0, 0]), Err(FrameError::Truncated));
    }

    #[test]
    fn emit_then_parse() {
        let mut out = [0u8; 8];
        assert_eq!(emit_routing_frame(&[1, 2, 3], &mut out), Ok(4));
        assert_eq!(out[..4], [0xF2, 1, 2, 3]);
        assert_eq!(
            emit_label_frame(Label::random(1, 2), &[0x45; 4], &mut out),
            Err(FrameError::BufferTooSmall { needed: 9, len: 8 })
        );
    }
}
