//! Control messages: how the host changes stream handlers at run time (paper §3.2: "a set
//! of control messages … to choose between a set of pre-existing handlers on the IXP
//! and/or to dynamically pass new parameter values to selected handlers").
//!
//! Wire format (big-endian): version `1`, an opcode, then the operands of that opcode and
//! nothing more:
//!
//! ```text
//! 1 SetRate      rate: u32 (offered packets per second)
//! 2 SetPredicate handler: u16, predicate
//! 3 SetFanOut    handler: u16, n: u16
//! 4 SetRoute     handler: u16, value: u32, dest: u16
//! 5 Select       stream: u16, handler: u16
//! 6 Terminate    stream: u16
//! 7 SetDestPredicate handler: u16, dest: u16, predicate
//! predicate = kind: u8 (0 all, 1 eq, 2 lt, 3 ge, 4 range), offset: u16, width: u8,
//!             value: u32, hi: u32
//! ```
//!
//! ```
//! use stream_handlers::control::ControlMessage;
//! let m = ControlMessage::SetFanOut { handler: 2, n: 3 };
//! let mut b = Vec::new();
//! m.emit(&mut b);
//! assert_eq!(ControlMessage::parse(&b), Ok(m));
//! ```

use alloc::vec::Vec;
use core::fmt;

use crate::stream::{Destination, Field, Param, Predicate};

/// The control-message version spoken.
pub const VERSION: u8 = 1;

/// A parsed control message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlMessage {
    /// The offered load changed: packets per second on the stream's input port.
    SetRate {
        /// Packets per second.
        rate: u32,
    },
    /// Replace the predicate of a handler (a filter's threshold, a bounding box edge).
    SetPredicate {
        /// The handler's index.
        handler: u16,
        /// The new predicate.
        predicate: Predicate,
    },
    /// Set a mirror's fan-out.
    SetFanOut {
        /// The handler's index.
        handler: u16,
        /// Destinations `0..n`.
        n: u16,
    },
    /// Add or change a content route.
    SetRoute {
        /// The handler's index.
        handler: u16,
        /// Field value.
        value: u32,
        /// Destination for it.
        dest: Destination,
    },
    /// Associate a stream with one of the pre-existing handlers.
    Select {
        /// The stream.
        stream: u16,
        /// The handler's index.
        handler: u16,
    },
    /// Terminate a stream's connection.
    Terminate {
        /// The stream.
        stream: u16,
    },
    /// Replace (or add) the predicate of one destination of a per-destination filter (one
    /// subscriber of a customised multicast), leaving the other destinations' alone.
    SetDestPredicate {
        /// The handler's index.
        handler: u16,
        /// The destination.
        dest: Destination,
        /// Its new predicate.
        predicate: Predicate,
    },
}

/// Why a control message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlError {
    /// Ended before its operands did.
    Truncated,
    /// Not version 1.
    BadVersion(u8),
    /// Unknown opcode.
    UnknownOp(u8),
    /// Unknown predicate kind.
    BadPredicate(u8),
    /// A field width other than 1, 2 or 4.
    BadWidth(u8),
    /// Bytes after the operands.
    TrailingBytes,
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("control message truncated"),
            Self::BadVersion(v) => write!(f, "unknown control message version {v}"),
            Self::UnknownOp(o) => write!(f, "unknown control opcode {o}"),
            Self::BadPredicate(k) => write!(f, "unknown predicate kind {k}"),
            Self::BadWidth(w) => write!(f, "field width {w} is not 1, 2 or 4"),
            Self::TrailingBytes => f.write_str("bytes after the control message"),
        }
    }
}

impl core::error::Error for ControlError {}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], ControlError> {
        let (head, rest) = self.0.split_at_checked(N).ok_or(ControlError::Truncated)?;
        self.0 = rest;
        let mut out = [0u8; N];
        out.copy_from_slice(head);
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, ControlError> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, ControlError> {
        Ok(u16::from_be_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, ControlError> {
        Ok(u32::from_be_bytes(self.take()?))
    }
    fn predicate(&mut self) -> Result<Predicate, ControlError> {
        let kind = self.u8()?;
        let offset = self.u16()?;
        let width = self.u8()?;
        let value = self.u32()?;
        let hi = self.u32()?;
        if !matches!(width, 1 | 2 | 4) {
            return Err(ControlError::BadWidth(width));
        }
        let f = Field::new(offset, width);
        Ok(match kind {
            0 => Predicate::All,
            1 => Predicate::Eq(f, value),
            2 => Predicate::Lt(f, value),
            3 => Predicate::Ge(f, value),
            4 => Predicate::Range(f, value, hi),
            k => return Err(ControlError::BadPredicate(k)),
        })
    }
}

fn emit_predicate(p: &Predicate, out: &mut Vec<u8>) {
    let (kind, f, v, hi) = match *p {
        Predicate::All => (0u8, Field::new(0, 4), 0, 0),
        Predicate::Eq(f, v) => (1, f, v, 0),
        Predicate::Lt(f, v) => (2, f, v, 0),
        Predicate::Ge(f, v) => (3, f, v, 0),
        Predicate::Range(f, lo, hi) => (4, f, lo, hi),
    };
    out.push(kind);
    out.extend_from_slice(&f.offset.to_be_bytes());
    out.push(f.width);
    out.extend_from_slice(&v.to_be_bytes());
    out.extend_from_slice(&hi.to_be_bytes());
}

impl ControlMessage {
    /// Parses one control message occupying all of `bytes`.
    ///
    /// # Errors
    ///
    /// A [`ControlError`] naming what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<Self, ControlError> {
        let mut r = Reader(bytes);
        let v = r.u8()?;
        if v != VERSION {
            return Err(ControlError::BadVersion(v));
        }
        let m = match r.u8()? {
            1 => Self::SetRate { rate: r.u32()? },
            2 => Self::SetPredicate {
                handler: r.u16()?,
                predicate: r.predicate()?,
            },
            3 => Self::SetFanOut {
                handler: r.u16()?,
                n: r.u16()?,
            },
            4 => Self::SetRoute {
                handler: r.u16()?,
                value: r.u32()?,
                dest: r.u16()?,
            },
            5 => Self::Select {
                stream: r.u16()?,
                handler: r.u16()?,
            },
            6 => Self::Terminate { stream: r.u16()? },
            7 => Self::SetDestPredicate {
                handler: r.u16()?,
                dest: r.u16()?,
                predicate: r.predicate()?,
            },
            op => return Err(ControlError::UnknownOp(op)),
        };
        if !r.0.is_empty() {
            return Err(ControlError::TrailingBytes);
        }
        Ok(m)
    }

    /// Appends the message's encoding to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(VERSION);
        match *self {
            Self::SetRate { rate } => {
                out.push(1);
                out.extend_from_slice(&rate.to_be_bytes());
            }
            Self::SetPredicate { handler, predicate } => {
                out.push(2);
                out.extend_from_slice(&handler.to_be_bytes());
                emit_predicate(&predicate, out);
            }
            Self::SetFanOut { handler, n } => {
                out.push(3);
                out.extend_from_slice(&handler.to_be_bytes());
                out.extend_from_slice(&n.to_be_bytes());
            }
            Self::SetRoute {
                handler,
                value,
                dest,
            } => {
                out.push(4);
                out.extend_from_slice(&handler.to_be_bytes());
                out.extend_from_slice(&value.to_be_bytes());
                out.extend_from_slice(&dest.to_be_bytes());
            }
            Self::Select { stream, handler } => {
                out.push(5);
                out.extend_from_slice(&stream.to_be_bytes());
                out.extend_from_slice(&handler.to_be_bytes());
            }
            Self::Terminate { stream } => {
                out.push(6);
                out.extend_from_slice(&stream.to_be_bytes());
            }
            Self::SetDestPredicate {
                handler,
                dest,
                predicate,
            } => {
                out.push(7);
                out.extend_from_slice(&handler.to_be_bytes());
                out.extend_from_slice(&dest.to_be_bytes());
                emit_predicate(&predicate, out);
            }
        }
    }

    /// The handler parameter it carries and the handler it is for, if it carries one.
    pub fn param(&self) -> Option<(u16, Param)> {
        match *self {
            Self::SetPredicate { handler, predicate } => {
                Some((handler, Param::Predicate(predicate)))
            }
            Self::SetFanOut { handler, n } => Some((handler, Param::FanOut(n))),
            Self::SetRoute {
                handler,
                value,
                dest,
            } => Some((handler, Param::Route(value, dest))),
            Self::SetDestPredicate {
                handler,
                dest,
                predicate,
            } => Some((handler, Param::DestPredicate(dest, predicate))),
            Self::SetRate { .. } | Self::Select { .. } | Self::Terminate { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn every_message_round_trips_and_every_prefix_is_truncated() {
        let f = Field::new(3, 2);
        let all = [
            ControlMessage::SetRate { rate: 148_809 },
            ControlMessage::SetPredicate {
                handler: 1,
                predicate: Predicate::Range(f, 5, 9),
            },
            ControlMessage::SetPredicate {
                handler: 1,
                predicate: Predicate::All,
            },
            ControlMessage::SetFanOut { handler: 0, n: 4 },
            ControlMessage::SetRoute {
                handler: 2,
                value: 7,
                dest: 3,
            },
            ControlMessage::Select {
                stream: 9,
                handler: 2,
            },
            ControlMessage::Terminate { stream: 9 },
            ControlMessage::SetDestPredicate {
                handler: 1,
                dest: 3,
                predicate: Predicate::Ge(f, 40),
            },
        ];
        for m in all {
            let mut b = Vec::new();
            m.emit(&mut b);
            assert_eq!(ControlMessage::parse(&b), Ok(m));
            for cut in 0..b.len() {
                assert_eq!(
                    ControlMessage::parse(&b[..cut]),
                    Err(ControlError::Truncated)
                );
            }
            b.push(0);
            assert_eq!(ControlMessage::parse(&b), Err(ControlError::TrailingBytes));
        }
    }

    #[test]
    fn bad_fields_are_named() {
        assert_eq!(
            ControlMessage::parse(&[2, 1]),
            Err(ControlError::BadVersion(2))
        );
        assert_eq!(
            ControlMessage::parse(&[1, 9]),
            Err(ControlError::UnknownOp(9))
        );
        let mut b = vec![1, 2, 0, 0, 7, 0, 0, 2];
        b.extend_from_slice(&[0; 8]);
        assert_eq!(
            ControlMessage::parse(&b),
            Err(ControlError::BadPredicate(7))
        );
        b[4] = 1;
        b[7] = 3;
        assert_eq!(ControlMessage::parse(&b), Err(ControlError::BadWidth(3)));
    }

    #[test]
    fn a_dest_predicate_is_on_the_wire_and_carries_its_param() {
        let p = Predicate::Range(Field::new(2, 2), 10, 20);
        let m = ControlMessage::SetDestPredicate {
            handler: 0x0102,
            dest: 0x0304,
            predicate: p,
        };
        let mut b = Vec::new();
        m.emit(&mut b);
        assert_eq!(
            b,
            vec![1, 7, 1, 2, 3, 4, 4, 0, 2, 2, 0, 0, 0, 10, 0, 0, 0, 20]
        );
        assert_eq!(m.param(), Some((0x0102, Param::DestPredicate(0x0304, p))));
        assert_eq!(ControlMessage::SetRate { rate: 1 }.param(), None);
    }
}
