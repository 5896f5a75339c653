//! The [`StreamHandler`] trait: an application-level function applied to messages on the
//! data path, with a cost derived from what it does.
//!
//! A handler sees one assembled application message ([`Message`]) and pushes zero or more
//! output messages, each with its [`Destination`]. It runs natively: `handle` transforms real
//! bytes, with no cost model, so the same handler can later run on a router node's links.
//! Separately, [`StreamHandler::work`] says what the handler does to a message of a given
//! length (instructions, 32-bit words read and written in SRAM and SDRAM, output copies):
//! plain counts, which a machine model prices (the `ixp-model` crate turns them into IXP1200
//! microengine cycles and host nanoseconds). Counts are derived from the handler's
//! algorithm, never fitted per figure.
//!
//! Message bodies are described by compact binary formats (paper §3.1): a handler reads a
//! [`Field`] at a known offset and width, as NP code reads header fields.
//!
//! Each handler also says how much of a message it must see ([`Needs`]): a handler that
//! reads only a prefix and changes no byte can decide on a message's first fragment and
//! let the rest follow (cut-through, per packet); one that rewrites or reads the whole
//! message runs once the message is assembled (per message).

use alloc::vec::Vec;
use core::fmt;

/// Where a message goes: an overlay destination (a port/peer index).
pub type Destination = u16;

/// One application-level message on the data path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The destination it is addressed to.
    pub dest: Destination,
    /// The application bytes (the assembled message, no RUDP headers).
    pub payload: Vec<u8>,
}

impl Message {
    /// A message to `dest` carrying `payload`.
    pub fn new(dest: Destination, payload: Vec<u8>) -> Self {
        Self { dest, payload }
    }
}

/// A field of the message body: `width` bytes (1, 2 or 4) big-endian at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Byte offset from the start of the payload.
    pub offset: u16,
    /// Width in bytes: 1, 2 or 4 (anything else reads as 4).
    pub width: u8,
}

impl Field {
    /// The field `width` bytes wide at `offset`.
    pub const fn new(offset: u16, width: u8) -> Self {
        Self { offset, width }
    }

    /// Bytes it occupies: its width, 1 or 2, else 4 (as [`Field::read`] reads it).
    const fn bytes(&self) -> usize {
        match self.width {
            1 => 1,
            2 => 2,
            _ => 4,
        }
    }

    /// Where it ends: the payload bytes it takes to read it (`offset` + 1, 2 or 4).
    pub const fn end(&self) -> usize {
        self.offset as usize + self.bytes()
    }

    /// The field's value in `payload`, or `None` if the payload is too short.
    pub fn read(&self, payload: &[u8]) -> Option<u32> {
        let start = usize::from(self.offset);
        let bytes = payload.get(start..start.checked_add(self.bytes())?)?;
        Some(bytes.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
    }
}

/// A comparison a filter applies to a [`Field`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Predicate {
    /// Keep every message.
    All,
    /// Keep messages whose field equals the value.
    Eq(Field, u32),
    /// Keep messages whose field is below the value.
    Lt(Field, u32),
    /// Keep messages whose field is at least the value.
    Ge(Field, u32),
    /// Keep messages whose field lies in `lo..=hi` (a bounding box edge, a threshold band).
    Range(Field, u32, u32),
}

impl Predicate {
    /// Whether `payload` passes. A payload too short to hold the field does not pass.
    pub fn matches(&self, payload: &[u8]) -> bool {
        match *self {
            Self::All => true,
            Self::Eq(f, v) => f.read(payload) == Some(v),
            Self::Lt(f, v) => f.read(payload).is_some_and(|x| x < v),
            Self::Ge(f, v) => f.read(payload).is_some_and(|x| x >= v),
            Self::Range(f, lo, hi) => f.read(payload).is_some_and(|x| lo <= x && x <= hi),
        }
    }

    /// Payload bytes it needs to decide: its field's end ([`Predicate::All`]: none).
    pub const fn end(&self) -> usize {
        match self {
            Self::All => 0,
            Self::Eq(f, _) | Self::Lt(f, _) | Self::Ge(f, _) | Self::Range(f, ..) => f.end(),
        }
    }

    /// Instructions to evaluate it on a microengine (load, mask/shift, compare, branch).
    pub const fn instructions(&self) -> u64 {
        match self {
            Self::All => 1,
            Self::Eq(..) | Self::Lt(..) | Self::Ge(..) => 6,
            Self::Range(..) => 9,
        }
    }

    /// Payload words it reads (the word holding its field).
    pub const fn words_read(&self) -> u64 {
        match self {
            Self::All => 0,
            _ => 1,
        }
    }
}

/// What a handler does to one message: the inputs of its cost on either machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Instructions executed (microengine instructions; the host runs the same algorithm).
    pub instructions: u64,
    /// 32-bit words read or written in SRAM (tables, queue descriptors).
    pub sram_words: u64,
    /// 32-bit words of the message read or written in SDRAM (where message buffers live).
    pub sdram_words: u64,
    /// Output messages it emits at most (each one a send on the way out).
    pub outputs: u64,
}

impl Work {
    /// The sum of two pieces of work (a composition runs both).
    #[must_use]
    pub const fn plus(self, o: Work) -> Work {
        Work {
            instructions: self.instructions.saturating_add(o.instructions),
            sram_words: self.sram_words.saturating_add(o.sram_words),
            sdram_words: self.sdram_words.saturating_add(o.sdram_words),
            outputs: if o.outputs > self.outputs {
                o.outputs
            } else {
                self.outputs
            },
        }
    }
}

/// How much of a message a handler must see to decide what to do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// The first `n` payload bytes, and it changes no byte: it can run on the first
    /// fragment alone, and the rest follow its decision (cut-through).
    Prefix(usize),
    /// The whole message (it rewrites bytes, or reads all of them).
    Whole,
}

impl Needs {
    /// What a composition of `self` then `other` needs: the whole message if either does,
    /// else the longer prefix.
    #[must_use]
    pub const fn then(self, other: Needs) -> Needs {
        match (self, other) {
            (Self::Prefix(a), Self::Prefix(b)) => Self::Prefix(if a > b { a } else { b }),
            _ => Self::Whole,
        }
    }
}

/// A handler parameter a control message may change at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Replace a filter's predicate (a per-destination filter's: every destination's).
    Predicate(Predicate),
    /// Set one destination's predicate in a per-destination filter (a customised
    /// multicast's Tx side), adding it if that destination has none; the others keep
    /// theirs.
    DestPredicate(Destination, Predicate),
    /// Set a mirror's fan-out to destinations `0..n`.
    FanOut(u16),
    /// Set a content route: field value → destination.
    Route(u32, Destination),
}

/// Why a handler refused a message or a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerError {
    /// The parameter does not apply to this handler.
    UnsupportedParam,
    /// The route table is full.
    TableFull,
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedParam => f.write_str("parameter does not apply to this handler"),
            Self::TableFull => f.write_str("handler table is full"),
        }
    }
}

impl core::error::Error for HandlerError {}

/// A stream handler: lightweight, composable, parameterisable (paper §3.1).
pub trait StreamHandler {
    /// A short name (the paper's vocabulary: "route", "mirror", "filter", …).
    fn name(&self) -> &'static str;

    /// Applies the handler to `msg`, pushing its outputs onto `out` (none: dropped).
    fn handle(&mut self, msg: Message, out: &mut Vec<Message>);

    /// What handling one message of `len` payload bytes costs (an upper bound: every
    /// output counted as sent).
    fn work(&self, len: u64) -> Work;

    /// How much of a message it must see to decide ([`Needs::Prefix`]: it changes no byte
    /// and its outputs, destinations and order, are the same on the message cut to that
    /// prefix as on the whole message).
    fn needs(&self) -> Needs;

    /// Changes a parameter at run time (a control message's effect).
    ///
    /// # Errors
    ///
    /// [`HandlerError::UnsupportedParam`] if the handler has no such parameter, or
    /// [`HandlerError::TableFull`] if a table cannot take it.
    fn configure(&mut self, param: Param) -> Result<(), HandlerError>;
}

/// Words of a `len`-byte payload (rounded up).
pub const fn words(len: u64) -> u64 {
    len.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn fields_read_big_endian_and_refuse_short_payloads() {
        let p = [0x12, 0x34, 0x56, 0x78, 0x9a];
        assert_eq!(Field::new(0, 1).read(&p), Some(0x12));
        assert_eq!(Field::new(1, 2).read(&p), Some(0x3456));
        assert_eq!(Field::new(1, 4).read(&p), Some(0x3456_789a));
        assert_eq!(Field::new(2, 4).read(&p), None);
        assert_eq!(Field::new(u16::MAX, 4).read(&p), None);
    }

    #[test]
    fn predicates_compare_and_drop_short_messages() {
        let f = Field::new(0, 2);
        let m = vec![0, 7, 1];
        assert!(Predicate::Eq(f, 7).matches(&m));
        assert!(!Predicate::Eq(f, 8).matches(&m));
        assert!(Predicate::Lt(f, 8).matches(&m));
        assert!(Predicate::Ge(f, 7).matches(&m));
        assert!(Predicate::Range(f, 5, 7).matches(&m));
        assert!(!Predicate::Range(f, 8, 9).matches(&m));
        assert!(!Predicate::Ge(f, 0).matches(&[1]));
        assert!(Predicate::All.matches(&[]));
    }

    #[test]
    fn ends_and_needs_compose() {
        assert_eq!(Field::new(3, 1).end(), 4);
        assert_eq!(Field::new(3, 2).end(), 5);
        assert_eq!(Field::new(3, 4).end(), 7);
        assert_eq!(Field::new(u16::MAX, 3).end(), 65_539);
        assert_eq!(Predicate::All.end(), 0);
        assert_eq!(Predicate::Range(Field::new(8, 2), 0, 1).end(), 10);
        assert_eq!(Needs::Prefix(3).then(Needs::Prefix(9)), Needs::Prefix(9));
        assert_eq!(Needs::Prefix(9).then(Needs::Prefix(3)), Needs::Prefix(9));
        assert_eq!(Needs::Prefix(9).then(Needs::Whole), Needs::Whole);
        assert_eq!(Needs::Whole.then(Needs::Prefix(0)), Needs::Whole);
    }

    #[test]
    fn work_adds_counts_and_keeps_the_larger_fan_out() {
        let w = Work {
            instructions: 10,
            sram_words: 2,
            sdram_words: 3,
            outputs: 1,
        };
        let both = w.plus(Work { outputs: 3, ..w });
        assert_eq!(both.instructions, 20);
        assert_eq!(both.sram_words, 4);
        assert_eq!(both.sdram_words, 6);
        assert_eq!(both.outputs, 3);
        let max = Work {
            instructions: u64::MAX,
            ..w
        };
        assert_eq!(max.plus(w).instructions, u64::MAX);
        assert_eq!(words(5), 2);
        assert_eq!(words(0), 0);
    }
}
