//! The advertisement wire format (Fig. 7: each entry carries an index beside its cost).
//!
//! ```text
//!  0        1        2                 4                                 8
//! +--------+--------+-----------------+---------------------------------+
//! | version|  kind  |   entry count   |        sender router id         |
//! +--------+--------+-----------------+---------------------------------+
//! kinds 1–4: then `count` router entries of 12 bytes:
//! +---------------------------------+-----------------+-----------------+
//! |          destination            |      cost       |  reserved (0)   |
//! +---------------------------------+-----------------+-----------------+
//! |   sender's index of the destination (24 bits; top byte 0)           |
//! +---------------------------------------------------------------------+
//! kinds 5–7: then `count` prefix entries of 24 bytes:
//! +--------+--------+-----------------+---------------------------------+
//! | family | length |      cost       | sender's index (24 bits; top 0) |
//! +--------+--------+-----------------+---------------------------------+
//! |  address, 16 bytes: IPv6 as is; IPv4 in the first 4, then 12 zeros  |
//! +---------------------------------------------------------------------+
//! ```
//!
//! All fields big-endian. `kind` 1 is an update (a distance vector over router ids); `kind`
//! 2 is a request ("send me your table", sent when a link comes up), which has no entries.
//! Kinds 3 and 4 pass between a host and its first router (§4, Fig. 6): 3 is a host's
//! query for the threaded indices of the destinations it lists (cost and index 0), 4 the
//! router's answer (each destination with the router's index and cost; cost
//! [`UNREACHABLE`] and index 0 when it has no route).
//!
//! Kind 5 is a **prefix update**: the distance vector over the IPv4 and IPv6 prefixes
//! routers originate, sent beside kind 1 by the same machinery. `family` is the IANA
//! address family number ([`FAMILY_IPV4`] = 1, [`FAMILY_IPV6`] = 2), `length` the prefix
//! length (at most 32 or 128); an IPv4 address fills the first 4 address bytes and the
//! other 12 are zero (not the `::ffff:0:0/96` mapped form: the family byte already says
//! which it is). Bits past the prefix length must be zero. Kinds 6 and 7 are the prefix
//! counterparts of 3 and 4: 6 is a host's query for the prefix *containing* each listed
//! address (an entry of full length, 32 or 128, with cost and index 0), 7 the router's
//! answer, one entry per query entry and in the same order: the longest prefix the router
//! reaches that contains the address, with its index and cost, or the address itself with
//! cost [`UNREACHABLE`] and index 0.
//!
//! A message must be exactly `8 + 12 · count` (kinds 1–4) or `8 + 24 · count` (kinds 5–7)
//! bytes long. Routers send at most [`MAX_ENTRIES`] router entries or
//! [`MAX_PREFIX_ENTRIES`] prefix entries per message, so that every message they send fits
//! [`MAX_MESSAGE_LEN`]: one 1500-byte datagram less the IPv4 and UDP headers and the
//! one-byte waist shim in front of it. The parser accepts any count the length bears out.
//!
//! ```
//! use fastpath::dv::wire::{Advertisement, AdvEntry, MessageKind, PrefixEntry};
//! use fastpath::lpm::{IpPrefix, Prefix};
//!
//! let entries = [AdvEntry { dest: 7, cost: 3, index: 2 }];
//! let mut bytes = Vec::new();
//! Advertisement::emit(MessageKind::Update, 42, &entries, &mut bytes);
//! let adv = Advertisement::parse(&bytes).unwrap();
//! assert_eq!(adv.sender(), 42);
//! assert_eq!(adv.entries().collect::<Vec<_>>(), entries);
//!
//! let net = IpPrefix::V4(Prefix::new([10, 1, 0, 0], 16).unwrap());
//! let prefixes = [PrefixEntry { prefix: net, cost: 0, index: 5 }];
//! let mut bytes = Vec::new();
//! Advertisement::emit_prefixes(MessageKind::PrefixUpdate, 42, &prefixes, &mut bytes);
//! assert_eq!(bytes.len(), 8 + 24);
//! let adv = Advertisement::parse(&bytes).unwrap();
//! assert_eq!(adv.prefix_entries().collect::<Vec<_>>(), prefixes);
//! ```

mod prefix;

use alloc::vec::Vec;
use core::fmt;

use super::dest::Dest;
use crate::threaded::MAX_INDEX;
pub use prefix::{FAMILY_IPV4, FAMILY_IPV6, PREFIX_ENTRY_LEN, PrefixEntry};

/// The only version we speak.
pub const VERSION: u8 = 1;
/// Bytes before the entries.
pub const HEADER_LEN: usize = 8;
/// Bytes per router entry (kinds 1–4).
pub const ENTRY_LEN: usize = 12;
/// The cost an index answer gives a destination its router cannot reach.
pub const UNREACHABLE: u16 = u16::MAX;
/// The longest message a router sends: 1500 − 20 (IPv4) − 8 (UDP) − 1 (the waist shim's
/// kind byte).
pub const MAX_MESSAGE_LEN: usize = 1500 - 20 - 8 - 1;
/// Router entries that fit [`MAX_MESSAGE_LEN`] (121).
pub const MAX_ENTRIES: usize = (MAX_MESSAGE_LEN - HEADER_LEN) / ENTRY_LEN;
/// Prefix entries that fit [`MAX_MESSAGE_LEN`] (60).
pub const MAX_PREFIX_ENTRIES: usize = (MAX_MESSAGE_LEN - HEADER_LEN) / PREFIX_ENTRY_LEN;

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
    /// A distance vector over router ids: (destination, cost, index) entries.
    Update,
    /// A request for the receiver's whole table (router ids and prefixes).
    Request,
    /// A host asks its first router for the indices of the listed destinations.
    IndexQuery,
    /// The first router's answer to an [`MessageKind::IndexQuery`].
    IndexAnswer,
    /// A distance vector over prefixes: (prefix, cost, index) entries.
    PrefixUpdate,
    /// A host asks its first router for the prefixes containing the listed addresses.
    AddressQuery,
    /// The first router's answer to an [`MessageKind::AddressQuery`].
    AddressAnswer,
}

impl MessageKind {
    /// Whether the entries are prefix entries ([`PREFIX_ENTRY_LEN`] bytes) rather than
    /// router entries ([`ENTRY_LEN`] bytes).
    pub fn has_prefix_entries(self) -> bool {
        matches!(
            self,
            Self::PrefixUpdate | Self::AddressQuery | Self::AddressAnswer
        )
    }

    /// Whether this kind passes between a host and its first router (3, 4, 6, 7), not
    /// between routers.
    pub fn is_host_message(self) -> bool {
        matches!(
            self,
            Self::IndexQuery | Self::IndexAnswer | Self::AddressQuery | Self::AddressAnswer
        )
    }

    /// Bytes per entry of this kind.
    pub fn entry_len(self) -> usize {
        if self.has_prefix_entries() {
            PREFIX_ENTRY_LEN
        } else {
            ENTRY_LEN
        }
    }
}

impl TryFrom<u8> for MessageKind {
    type Error = WireError;
    fn try_from(b: u8) -> Result<Self, WireError> {
        match b {
            1 => Ok(Self::Update),
            2 => Ok(Self::Request),
            3 => Ok(Self::IndexQuery),
            4 => Ok(Self::IndexAnswer),
            5 => Ok(Self::PrefixUpdate),
            6 => Ok(Self::AddressQuery),
            7 => Ok(Self::AddressAnswer),
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
            MessageKind::PrefixUpdate => 5,
            MessageKind::AddressQuery => 6,
            MessageKind::AddressAnswer => 7,
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

/// An entry of either shape, its destination as a [`Dest`] (what the router keys on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DestEntry {
    /// The destination: a router (kinds 1–4) or a prefix (kinds 5–7).
    pub dest: Dest,
    /// The sender's cost to it.
    pub cost: u16,
    /// Its index in the sender's threaded table.
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
    /// A prefix entry's family byte is neither [`FAMILY_IPV4`] nor [`FAMILY_IPV6`].
    BadFamily(u8),
    /// A prefix length above 32 (IPv4) or 128 (IPv6); carries the length.
    PrefixTooLong(u8),
    /// A prefix entry's address has bits set past its prefix length.
    HostBitsSet,
    /// An IPv4 prefix entry's 12 padding bytes are not zero.
    PaddingNotZero,
    /// An address query entry that is not a full-length (32 or 128) address.
    NotAnAddress,
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
            Self::BadFamily(x) => write!(f, "unknown address family {x} in a prefix entry"),
            Self::PrefixTooLong(n) => write!(f, "prefix length {n} too long for its family"),
            Self::HostBitsSet => write!(f, "prefix entry has address bits set past its length"),
            Self::PaddingNotZero => write!(f, "IPv4 prefix entry padding not zero"),
            Self::NotAnAddress => write!(f, "address query entry is not a full-length address"),
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

fn check_router_entry(chunk: &[u8]) -> Result<(), WireError> {
    if be16(chunk.get(field::RESERVED).unwrap_or(&[])) != 0 {
        return Err(WireError::ReservedNotZero);
    }
    if entry_at(chunk).index > MAX_INDEX {
        return Err(WireError::IndexTooLarge);
    }
    Ok(())
}

fn check_prefix_entry(kind: MessageKind, chunk: &[u8]) -> Result<(), WireError> {
    let e = prefix::decode(chunk)?;
    let full = match e.prefix {
        crate::lpm::IpPrefix::V4(p) => p.len() == 32,
        crate::lpm::IpPrefix::V6(p) => p.len() == 128,
    };
    if kind == MessageKind::AddressQuery && !full {
        return Err(WireError::NotAnAddress);
    }
    Ok(())
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
        let entry_len = kind.entry_len();
        let need = count * entry_len;
        if body.len() < need {
            return Err(WireError::Truncated);
        }
        if body.len() > need {
            return Err(WireError::TrailingBytes);
        }
        for chunk in body.chunks_exact(entry_len) {
            if kind.has_prefix_entries() {
                check_prefix_entry(kind, chunk)?;
            } else {
                check_router_entry(chunk)?;
            }
        }
        Ok(Self {
            kind,
            sender,
            entries: body,
        })
    }

    /// What the message is.
    pub fn kind(&self) -> MessageKind {
        self.kind
    }

    /// The sending router's id (a host's id in a query).
    pub fn sender(&self) -> u32 {
        self.sender
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / self.kind.entry_len()
    }

    /// True if there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The router entries (kinds 1–4), in wire order; none for kinds 5–7.
    pub fn entries(&self) -> impl Iterator<Item = AdvEntry> + 'a {
        let body = if self.kind.has_prefix_entries() {
            &[][..]
        } else {
            self.entries
        };
        body.chunks_exact(ENTRY_LEN).map(entry_at)
    }

    /// The prefix entries (kinds 5–7), in wire order; none for kinds 1–4.
    pub fn prefix_entries(&self) -> impl Iterator<Item = PrefixEntry> + 'a {
        let body = if self.kind.has_prefix_entries() {
            self.entries
        } else {
            &[][..]
        };
        // `parse` checked every entry, so none is dropped here.
        body.chunks_exact(PREFIX_ENTRY_LEN)
            .filter_map(|c| prefix::decode(c).ok())
    }

    /// Every entry of either shape, its destination as a [`Dest`], in wire order.
    pub fn dest_entries(&self) -> impl Iterator<Item = DestEntry> + 'a {
        let routers = self.entries().map(|e| DestEntry {
            dest: Dest::Router(e.dest),
            cost: e.cost,
            index: e.index,
        });
        let prefixes = self.prefix_entries().map(|e| DestEntry {
            dest: e.prefix.into(),
            cost: e.cost,
            index: e.index,
        });
        routers.chain(prefixes)
    }

    /// Bytes a message of `count` router entries takes.
    pub fn buffer_len(count: usize) -> usize {
        HEADER_LEN + count * ENTRY_LEN
    }

    /// Bytes a message of `count` prefix entries takes.
    pub fn prefix_buffer_len(count: usize) -> usize {
        HEADER_LEN + count * PREFIX_ENTRY_LEN
    }

    /// Appends a message of router entries to `out`. Entries past `u16::MAX` are not
    /// written (callers split long vectors, [`crate::dv::Config::max_entries`]); indices
    /// are masked to 24 bits. A `kind` with prefix entries (5–7) gets no entries (use
    /// [`Advertisement::emit_prefixes`]).
    pub fn emit(kind: MessageKind, sender: u32, entries: &[AdvEntry], out: &mut Vec<u8>) {
        let entries = if kind.has_prefix_entries() {
            &[]
        } else {
            entries.get(..usize::from(u16::MAX)).unwrap_or(entries)
        };
        out.reserve(Self::buffer_len(entries.len()));
        emit_header(kind, sender, entries.len(), out);
        for e in entries {
            out.extend_from_slice(&e.dest.to_be_bytes());
            out.extend_from_slice(&e.cost.to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&(e.index & MAX_INDEX).to_be_bytes());
        }
    }

    /// Appends a message of prefix entries (kinds 5–7) to `out`. Entries past `u16::MAX`
    /// are not written (routers send at most [`MAX_PREFIX_ENTRIES`]); indices are masked
    /// to 24 bits. A `kind` with router entries (1–4) gets no entries (use
    /// [`Advertisement::emit`]).
    pub fn emit_prefixes(
        kind: MessageKind,
        sender: u32,
        entries: &[PrefixEntry],
        out: &mut Vec<u8>,
    ) {
        let entries = if kind.has_prefix_entries() {
            entries.get(..usize::from(u16::MAX)).unwrap_or(entries)
        } else {
            &[]
        };
        out.reserve(Self::prefix_buffer_len(entries.len()));
        emit_header(kind, sender, entries.len(), out);
        for e in entries {
            prefix::encode(e, out);
        }
    }
}

/// `count` is at most `u16::MAX` (the callers cut their entries).
fn emit_header(kind: MessageKind, sender: u32, count: usize, out: &mut Vec<u8>) {
    let count = u16::try_from(count).unwrap_or(u16::MAX);
    out.push(VERSION);
    out.push(kind.into());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&sender.to_be_bytes());
}

#[cfg(test)]
mod tests;
