//! The advertisement wire format (Fig. 7: each entry carries an index beside its cost).
//!
//! ```text
//!  0        1        2                 4                                 8
//! +--------+--------+-----------------+---------------------------------+
//! | version|  kind  |   entry count   |        sender router id         |
//! +--------+--------+-----------------+---------------------------------+
//! then `count` entries of 12 bytes:
//! +---------------------------------+-----------------+-----------------+
//! |          destination            |      cost       |  reserved (0)   |
//! +---------------------------------+-----------------+-----------------+
//! |   sender's index of the destination (24 bits; top byte 0)           |
//! +---------------------------------------------------------------------+
//! ```
//!
//! All fields big-endian. `kind` 1 is an update (a distance vector); `kind` 2 is a request
//! ("send me your table", sent when a link comes up), which has no entries. Kinds 3 and 4
//! pass between a host and its first router (§4, Fig. 6): 3 is a host's query for the
//! threaded indices of the destinations it lists (cost and index 0), 4 the router's answer
//! (each destination with the router's index and cost; cost [`UNREACHABLE`] and index 0
//! when it has no route). The message must be exactly `8 + 12 · count` bytes long.
//!
//! ```
//! use fastpath::dv::wire::{Advertisement, AdvEntry, MessageKind};
//!
//! let entries = [AdvEntry { dest: 7, cost: 3, index: 2 }];
//! let mut bytes = Vec::new();
//! Advertisement::emit(MessageKind::Update, 42, &entries, &mut bytes);
//! let adv = Advertisement::parse(&bytes).unwrap();
//! assert_eq!(adv.sender(), 42);
//! assert_eq!(adv.entries().collect::<Vec<_>>(), entries);
//! ```

use alloc::vec::Vec;
use core::fmt;

use crate::threaded::MAX_INDEX;

/// The only version we speak.
pub const VERSION: u8 = 1;
/// Bytes before the entries.
pub const HEADER_LEN: usize = 8;
/// Bytes per entry.
pub const ENTRY_LEN: usize = 12;
/// The cost an index answer gives a destination its router cannot reach.
pub const UNREACHABLE: u16 = u16::MAX;

mod field {
    use core::ops::Range;
    pub(super) const VERSION: usize = 0;
    pub(super) const KIND: usize = 1;
    pub(super) const COUNT: Range<usize> = 2..4;
    pub(super) const SENDER: Range<usize> = 4..8;
    pub(super) const DEST: Range<usize> = 0..4;
    pub(super) const COST: Range<usize> = 4..6;
    pub(super) const RESERVED: Range<usize> = 6..8;
    pub(super) const INDEX: Range<usize> = 8..12;
}

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// A distance vector: (destination, cost, index) entries.
    Update,
    /// A request for the receiver's whole table.
    Request,
    /// A host asks its first router for the indices of the listed destinations.
    IndexQuery,
    /// The first router's answer to an [`MessageKind::IndexQuery`].
    IndexAnswer,
}

impl TryFrom<u8> for MessageKind {
    type Error = WireError;
    fn try_from(b: u8) -> Result<Self, WireError> {
        match b {
            1 => Ok(Self::Update),
            2 => Ok(Self::Request),
            3 => Ok(Self::IndexQuery),
            4 => Ok(Self::IndexAnswer),
            other => Err(WireError::UnknownKind(other)),
        }
    }
}

impl From<MessageKind> for u8 {
    fn from(k: MessageKind) -> u8 {
        match k {
            MessageKind::Update => 1,
            MessageKind::Request => 2,
            MessageKind::IndexQuery => 3,
            MessageKind::IndexAnswer => 4,
        }
    }
}

/// One advertised route: "I reach `dest` at `cost`, and it sits at `index` in my table".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdvEntry {
    /// The destination router.
    pub dest: u32,
    /// The sender's cost to it (infinity = unreachable).
    pub cost: u16,
    /// The destination's index in the sender's threaded table.
    pub index: u32,
}

/// Why a message was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than the header, or shorter than its entry count says.
    Truncated,
    /// Longer than its entry count says.
    TrailingBytes,
    /// A version other than [`VERSION`].
    BadVersion(u8),
    /// A kind byte we do not know.
    UnknownKind(u8),
    /// A request with entries.
    RequestWithEntries,
    /// An entry's reserved field is not zero.
    ReservedNotZero,
    /// An entry's index does not fit in 24 bits.
    IndexTooLarge,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => write!(f, "advertisement truncated"),
            Self::TrailingBytes => write!(f, "bytes after the last advertised entry"),
            Self::BadVersion(v) => write!(f, "advertisement version {v}, expected {VERSION}"),
            Self::UnknownKind(k) => write!(f, "unknown advertisement kind {k}"),
            Self::RequestWithEntries => write!(f, "a request carries entries"),
            Self::ReservedNotZero => write!(f, "reserved entry field not zero"),
            Self::IndexTooLarge => write!(f, "advertised index does not fit in 24 bits"),
        }
    }
}

impl core::error::Error for WireError {}

/// A checked view of one message: every accessor is infallible once `parse` succeeded.
#[derive(Clone, Copy, Debug)]
pub struct Advertisement<'a> {
    kind: MessageKind,
    sender: u32,
    entries: &'a [u8],
}

fn be16(b: &[u8]) -> u16 {
    let mut w = [0u8; 2];
    w.copy_from_slice(b.get(..2).unwrap_or(&[0, 0]));
    u16::from_be_bytes(w)
}

fn be32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(b.get(..4).unwrap_or(&[0, 0, 0, 0]));
    u32::from_be_bytes(w)
}

fn entry_at(chunk: &[u8]) -> AdvEntry {
    AdvEntry {
        dest: be32(chunk.get(field::DEST).unwrap_or(&[])),
        cost: be16(chunk.get(field::COST).unwrap_or(&[])),
        index: be32(chunk.get(field::INDEX).unwrap_or(&[])),
    }
}

impl<'a> Advertisement<'a> {
    /// Checks every field of `bytes`.
    ///
    /// # Errors
    ///
    /// Any [`WireError`]; nothing in `bytes` can make this panic.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, WireError> {
        let header = bytes.get(..HEADER_LEN).ok_or(WireError::Truncated)?;
        let version = header.get(field::VERSION).copied().unwrap_or(0);
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let kind = MessageKind::try_from(header.get(field::KIND).copied().unwrap_or(0))?;
        let count = usize::from(be16(header.get(field::COUNT).unwrap_or(&[])));
        let sender = be32(header.get(field::SENDER).unwrap_or(&[]));
        if kind == MessageKind::Request && count != 0 {
            return Err(WireError::RequestWithEntries);
        }
        let body = bytes.get(HEADER_LEN..).unwrap_or(&[]);
        let need = count * ENTRY_LEN;
        if body.len() < need {
            return Err(WireError::Truncated);
        }
        if body.len() > need {
            return Err(WireError::TrailingBytes);
        }
        for chunk in body.chunks_exact(ENTRY_LEN) {
            if be16(chunk.get(field::RESERVED).unwrap_or(&[])) != 0 {
                return Err(WireError::ReservedNotZero);
            }
            if entry_at(chunk).index > MAX_INDEX {
                return Err(WireError::IndexTooLarge);
            }
        }
        Ok(Self {
            kind,
            sender,
            entries: body,
        })
    }

    /// Update or request.
    pub fn kind(&self) -> MessageKind {
        self.kind
    }

    /// The sending router's id.
    pub fn sender(&self) -> u32 {
        self.sender
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / ENTRY_LEN
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in wire order.
    pub fn entries(&self) -> impl Iterator<Item = AdvEntry> + 'a {
        self.entries.chunks_exact(ENTRY_LEN).map(entry_at)
    }

    /// Bytes a message of `count` entries takes.
    pub fn buffer_len(count: usize) -> usize {
        HEADER_LEN + count * ENTRY_LEN
    }

    /// Appends a message to `out`. Entries past `u16::MAX` are not written (callers split
    /// long vectors, [`crate::dv::Config::max_entries`]); indices are masked to 24 bits.
    pub fn emit(kind: MessageKind, sender: u32, entries: &[AdvEntry], out: &mut Vec<u8>) {
        let entries = entries.get(..usize::from(u16::MAX)).unwrap_or(entries);
        let count = u16::try_from(entries.len()).unwrap_or(u16::MAX);
        out.reserve(Self::buffer_len(entries.len()));
        out.push(VERSION);
        out.push(kind.into());
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&sender.to_be_bytes());
        for e in entries {
            out.extend_from_slice(&e.dest.to_be_bytes());
            out.extend_from_slice(&e.cost.to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&(e.index & MAX_INDEX).to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const UPDATE: [u8; 20] = [
        1, 1, 0, 1, 0, 0, 0, 9, // v1, update, 1 entry, from router 9
        0, 0, 0, 4, 0, 6, 0, 0, 0, 0, 0, 3, // dest 4, cost 6, index 3
    ];

    #[test]
    fn parse_literal_update() {
        let adv = Advertisement::parse(&UPDATE).unwrap();
        assert_eq!(adv.kind(), MessageKind::Update);
        assert_eq!(adv.sender(), 9);
        assert_eq!(adv.len(), 1);
        assert_eq!(
            adv.entries().collect::<Vec<_>>(),
            vec![AdvEntry {
                dest: 4,
                cost: 6,
                index: 3
            }]
        );
        let mut out = Vec::new();
        Advertisement::emit(
            MessageKind::Update,
            9,
            &adv.entries().collect::<Vec<_>>(),
            &mut out,
        );
        assert_eq!(out, UPDATE);
    }

    #[test]
    fn request_round_trip() {
        let mut out = Vec::new();
        Advertisement::emit(MessageKind::Request, 5, &[], &mut out);
        assert_eq!(out, [1, 2, 0, 0, 0, 0, 0, 5]);
        let adv = Advertisement::parse(&out).unwrap();
        assert_eq!(adv.kind(), MessageKind::Request);
        assert!(adv.is_empty());
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            Advertisement::parse(&UPDATE[..7]).unwrap_err(),
            WireError::Truncated
        );
        assert_eq!(
            Advertisement::parse(&UPDATE[..19]).unwrap_err(),
            WireError::Truncated
        );
        let mut long = UPDATE.to_vec();
        long.push(0);
        assert_eq!(
            Advertisement::parse(&long).unwrap_err(),
            WireError::TrailingBytes
        );
        let mut b = UPDATE;
        b[0] = 2;
        assert_eq!(
            Advertisement::parse(&b).unwrap_err(),
            WireError::BadVersion(2)
        );
        let mut b = UPDATE;
        b[1] = 9;
        assert_eq!(
            Advertisement::parse(&b).unwrap_err(),
            WireError::UnknownKind(9)
        );
        let mut b = UPDATE;
        b[1] = 2;
        assert_eq!(
            Advertisement::parse(&b).unwrap_err(),
            WireError::RequestWithEntries
        );
        let mut b = UPDATE;
        b[15] = 1;
        assert_eq!(
            Advertisement::parse(&b).unwrap_err(),
            WireError::ReservedNotZero
        );
        let mut b = UPDATE;
        b[16] = 1;
        assert_eq!(
            Advertisement::parse(&b).unwrap_err(),
            WireError::IndexTooLarge
        );
    }
}
