//! Threaded indices (§4, Fig. 6): a routing table indexed by the label the packet carries.
//!
//! Each router keeps one entry per destination. The entry holds the next hop *and the
//! index of the same destination in the next hop's table*. A packet carries that index in
//! a 32-bit [`Label`] (a shim word, like an MPLS label stack entry); forwarding is
//! "read the index, look up the entry, rewrite the label, send": no key comparison, no
//! hash, no pointer chase. Indices are positions in each router's own table, so they need
//! only be unique per router (unlike Pip's global indices, §4.1).
//!
//! ```text
//!  S ──(label i)──► A: table[i] = {B, j} ──(label j)──► B: table[j] = {D, k} ──► D
//! ```
//!
//! # The label word
//!
//! ```text
//!   31  30        24 23                                   0
//!  +---+------------+--------------------------------------+
//!  | R | hop limit  |                index                 |
//!  +---+------------+--------------------------------------+
//! ```
//!
//! * `R` (1 bit): 0 = threaded index into the receiving router's table; 1 = random
//!   (source-hash) index, used between areas of a hierarchy (§4.1, [`crate::hier`]).
//! * hop limit (7 bits): decremented at every hop; a label arriving with 0 is dropped. The
//!   paper has no loop guard; threaded indices follow the routing tables, which can hold a
//!   transient loop while distance-vector routing reconverges, so we carry one (as MPLS
//!   carries a TTL).
//! * index (24 bits): the table position (threaded) or the sender's source-hash index
//!   (random; at least 16 random bits as §3 asks). Word-aligned, so extracting it is a
//!   load and a mask (§3.5).
//!
//! The word is big-endian on the wire and rides directly after the link header (or after
//! the DML header, [`crate::dml`], when there is one).
//!
//! ```
//! use fastpath::threaded::{Entry, Forward, Label, LabelKind, NextHop, ThreadedTable};
//!
//! let mut table = ThreadedTable::with_len(4);
//! table.set(2, Entry { next_hop: NextHop::Neighbour(7), next_index: 9 }).unwrap();
//!
//! let mut wire = [0u8; 4];
//! Label::threaded(2, 64).emit(&mut wire).unwrap();
//! let label = Label::parse(&wire).unwrap();
//! assert_eq!(label.kind, LabelKind::Threaded);
//! match table.forward(label).unwrap() {
//!     Forward::Send { iface, out_label } => {
//!         assert_eq!(iface, 7);
//!         assert_eq!(out_label, Label::threaded(9, 63));
//!     }
//!     Forward::Deliver => unreachable!(),
//! }
//! ```

use alloc::vec::Vec;
use core::fmt;

/// Bytes of a label on the wire.
pub const LABEL_LEN: usize = 4;
/// The largest index a label can carry (24 bits).
pub const MAX_INDEX: u32 = (1 << 24) - 1;
/// The largest hop limit a label can carry (7 bits).
pub const MAX_HOP_LIMIT: u8 = 0x7f;

const RANDOM_BIT: u32 = 1 << 31;
const HOP_SHIFT: u32 = 24;

/// What the index of a label means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelKind {
    /// An index into the receiving router's threaded table.
    Threaded,
    /// A random source-hash index (traffic leaving the area, §4.1).
    Random,
}

/// A parsed label word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// Threaded or random.
    pub kind: LabelKind,
    /// Hops left (7 bits).
    pub hop_limit: u8,
    /// The index (24 bits).
    pub index: u32,
}

/// Why a label could not be built, parsed or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelError {
    /// Fewer than [`LABEL_LEN`] bytes.
    Truncated,
    /// The index does not fit in 24 bits.
    IndexTooLarge,
    /// The hop limit does not fit in 7 bits.
    HopLimitTooLarge,
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => write!(f, "label shorter than {LABEL_LEN} bytes"),
            Self::IndexTooLarge => write!(f, "index does not fit in 24 bits"),
            Self::HopLimitTooLarge => write!(f, "hop limit does not fit in 7 bits"),
        }
    }
}

impl core::error::Error for LabelError {}

impl Label {
    /// A threaded label; the index and hop limit are masked to their field widths.
    pub fn threaded(index: u32, hop_limit: u8) -> Self {
        Self {
            kind: LabelKind::Threaded,
            hop_limit: hop_limit & MAX_HOP_LIMIT,
            index: index & MAX_INDEX,
        }
    }

    /// A random (source-hash) label; fields masked as in [`Label::threaded`].
    pub fn random(index: u32, hop_limit: u8) -> Self {
        Self {
            kind: LabelKind::Random,
            hop_limit: hop_limit & MAX_HOP_LIMIT,
            index: index & MAX_INDEX,
        }
    }

    /// Decodes a label word (every 32-bit value is a valid label).
    #[inline]
    pub fn from_word(word: u32) -> Self {
        Self {
            kind: if word & RANDOM_BIT != 0 {
                LabelKind::Random
            } else {
                LabelKind::Threaded
            },
            // The mask keeps 7 bits, so the cast never truncates.
            hop_limit: ((word >> HOP_SHIFT) & u32::from(MAX_HOP_LIMIT)) as u8,
            index: word & MAX_INDEX,
        }
    }

    /// Encodes the label word.
    ///
    /// # Errors
    ///
    /// If a field is wider than its slot (only possible for hand-built values).
    #[inline]
    pub fn to_word(self) -> Result<u32, LabelError> {
        if self.index > MAX_INDEX {
            return Err(LabelError::IndexTooLarge);
        }
        if self.hop_limit > MAX_HOP_LIMIT {
            return Err(LabelError::HopLimitTooLarge);
        }
        let r = match self.kind {
            LabelKind::Threaded => 0,
            LabelKind::Random => RANDOM_BIT,
        };
        Ok(r | (u32::from(self.hop_limit) << HOP_SHIFT) | self.index)
    }

    /// Parses the first [`LABEL_LEN`] bytes of `bytes`.
    ///
    /// # Errors
    ///
    /// [`LabelError::Truncated`] if there are fewer.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self, LabelError> {
        let word: [u8; LABEL_LEN] = bytes
            .get(..LABEL_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(LabelError::Truncated)?;
        Ok(Self::from_word(u32::from_be_bytes(word)))
    }

    /// Writes the label into the first [`LABEL_LEN`] bytes of `out`.
    ///
    /// # Errors
    ///
    /// If `out` is too short or a field is too wide.
    #[inline]
    pub fn emit(self, out: &mut [u8]) -> Result<(), LabelError> {
        let word = self.to_word()?;
        let slot = out.get_mut(..LABEL_LEN).ok_or(LabelError::Truncated)?;
        slot.copy_from_slice(&word.to_be_bytes());
        Ok(())
    }
}

/// Where an entry sends a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NextHop {
    /// Out of this interface (one neighbour per point-to-point interface).
    Neighbour(u16),
    /// The destination is this router: deliver, no index needed on the last hop.
    Local,
}

/// One routing entry: the next hop and the destination's index in the next hop's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Where to send.
    pub next_hop: NextHop,
    /// The index to put in the outgoing label (ignored for [`NextHop::Local`]).
    pub next_index: u32,
}

/// What to do with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Forward {
    /// Send out of `iface` with `out_label` in place of the incoming label.
    Send {
        /// The outgoing interface.
        iface: u16,
        /// The rewritten label: the next hop's index, hop limit one less.
        out_label: Label,
    },
    /// Deliver locally: this router is the destination.
    Deliver,
}

/// Why a packet could not be forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForwardError {
    /// The label carries a random index; it belongs to the source-hash path.
    NotThreaded,
    /// The index is past the end of the table.
    IndexOutOfRange,
    /// The entry at the index is empty (no route, or unreachable).
    NoRoute,
    /// The hop limit is exhausted.
    HopLimitExceeded,
    /// The packet is too short to hold a label.
    Truncated,
}

impl fmt::Display for ForwardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotThreaded => write!(f, "label carries a random index, not a threaded one"),
            Self::IndexOutOfRange => write!(f, "threaded index past the end of the table"),
            Self::NoRoute => write!(f, "no route at this threaded index"),
            Self::HopLimitExceeded => write!(f, "hop limit exhausted"),
            Self::Truncated => write!(f, "packet too short for a label"),
        }
    }
}

impl core::error::Error for ForwardError {}

/// Why an entry could not be installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetError {
    /// The table position does not fit in a label's 24-bit index.
    IndexTooLarge,
    /// The next hop's index does not fit in 24 bits.
    NextIndexTooLarge,
}

impl fmt::Display for SetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IndexTooLarge => write!(f, "table position does not fit in 24 bits"),
            Self::NextIndexTooLarge => write!(f, "next hop's index does not fit in 24 bits"),
        }
    }
}

impl core::error::Error for SetError {}

/// A routing table indexed by threaded index: position `i` is the destination whose
/// index this router advertises as `i`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadedTable {
    entries: Vec<Option<Entry>>,
}

impl ThreadedTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// A table of `len` empty positions.
    pub fn with_len(len: usize) -> Self {
        Self {
            entries: alloc::vec![None; len],
        }
    }

    /// Number of positions (empty ones included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if the table has no positions.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry at `index`, if any.
    pub fn get(&self, index: u32) -> Option<Entry> {
        self.entries.get(index as usize).copied().flatten()
    }

    /// Installs `entry` at `index`, growing the table if needed.
    ///
    /// # Errors
    ///
    /// If `index` or the entry's next index does not fit in a label.
    pub fn set(&mut self, index: u32, entry: Entry) -> Result<(), SetError> {
        if index > MAX_INDEX {
            return Err(SetError::IndexTooLarge);
        }
        if entry.next_index > MAX_INDEX {
            return Err(SetError::NextIndexTooLarge);
        }
        let i = index as usize;
        if i >= self.entries.len() {
            self.entries.resize(i + 1, None);
        }
        if let Some(slot) = self.entries.get_mut(i) {
            *slot = Some(entry);
        }
        Ok(())
    }

    /// Empties the position `index` (packets arriving with it get [`ForwardError::NoRoute`]).
    pub fn clear(&mut self, index: u32) {
        if let Some(slot) = self.entries.get_mut(index as usize) {
            *slot = None;
        }
    }

    /// Forwards a packet carrying `label`: reads the index, looks up the entry, and returns
    /// the interface and the rewritten label (§4, the "approximately 8 instructions").
    ///
    /// # Errors
    ///
    /// A random label, an index past the end, an empty entry, or an exhausted hop limit.
    #[inline]
    pub fn forward(&self, label: Label) -> Result<Forward, ForwardError> {
        if label.kind != LabelKind::Threaded {
            return Err(ForwardError::NotThreaded);
        }
        let entry = self
            .entries
            .get(label.index as usize)
            .ok_or(ForwardError::IndexOutOfRange)?
            .ok_or(ForwardError::NoRoute)?;
        match entry.next_hop {
            NextHop::Local => Ok(Forward::Deliver),
            NextHop::Neighbour(iface) => {
                let hop_limit = label
                    .hop_limit
                    .checked_sub(1)
                    .ok_or(ForwardError::HopLimitExceeded)?;
                Ok(Forward::Send {
                    iface,
                    out_label: Label {
                        kind: LabelKind::Threaded,
                        hop_limit,
                        index: entry.next_index,
                    },
                })
            }
        }
    }

    /// Forwards a packet whose first [`LABEL_LEN`] bytes are its label, rewriting the label
    /// in place. Returns the outgoing interface, or `None` to deliver locally.
    ///
    /// # Errors
    ///
    /// As [`ThreadedTable::forward`], or [`ForwardError::Truncated`].
    #[inline]
    pub fn forward_packet(&self, packet: &mut [u8]) -> Result<Option<u16>, ForwardError> {
        // The same steps as `forward`, on the word in place: no label value built, no
        // re-check of fields `set` already bounded.
        let slot = packet
            .first_chunk_mut::<LABEL_LEN>()
            .ok_or(ForwardError::Truncated)?;
        let word = u32::from_be_bytes(*slot);
        if word & RANDOM_BIT != 0 {
            return Err(ForwardError::NotThreaded);
        }
        let entry = self
            .entries
            .get((word & MAX_INDEX) as usize)
            .ok_or(ForwardError::IndexOutOfRange)?
            .ok_or(ForwardError::NoRoute)?;
        match entry.next_hop {
            NextHop::Local => Ok(None),
            NextHop::Neighbour(iface) => {
                // The random bit is clear: the hop limit is the top byte.
                let hop_limit = (word >> HOP_SHIFT)
                    .checked_sub(1)
                    .ok_or(ForwardError::HopLimitExceeded)?;
                // `set` keeps every next index within MAX_INDEX.
                *slot = ((hop_limit << HOP_SHIFT) | entry.next_index).to_be_bytes();
                Ok(Some(iface))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_bytes_round_trip() {
        let bytes = [0x80 | 0x3f, 0x01, 0x02, 0x03];
        let label = Label::parse(&bytes).unwrap();
        assert_eq!(label, Label::random(0x01_0203, 0x3f));
        let mut out = [0u8; 4];
        label.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        let threaded = [0x05, 0x00, 0x00, 0x2a];
        assert_eq!(Label::parse(&threaded).unwrap(), Label::threaded(42, 5));
    }

    #[test]
    fn label_errors() {
        assert_eq!(Label::parse(&[1, 2, 3]), Err(LabelError::Truncated));
        let too_wide = Label {
            kind: LabelKind::Threaded,
            hop_limit: 0,
            index: MAX_INDEX + 1,
        };
        assert_eq!(too_wide.to_word(), Err(LabelError::IndexTooLarge));
        let hop = Label {
            kind: LabelKind::Threaded,
            hop_limit: 0x80,
            index: 0,
        };
        assert_eq!(hop.emit(&mut [0; 4]), Err(LabelError::HopLimitTooLarge));
        assert_eq!(
            Label::threaded(1, 1).emit(&mut [0; 3]),
            Err(LabelError::Truncated)
        );
    }

    #[test]
    fn forward_rewrites_and_reports_errors() {
        let mut t = ThreadedTable::new();
        t.set(
            0,
            Entry {
                next_hop: NextHop::Local,
                next_index: 0,
            },
        )
        .unwrap();
        t.set(
            3,
            Entry {
                next_hop: NextHop::Neighbour(2),
                next_index: 11,
            },
        )
        .unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.forward(Label::threaded(0, 9)), Ok(Forward::Deliver));
        assert_eq!(
            t.forward(Label::threaded(3, 9)),
            Ok(Forward::Send {
                iface: 2,
                out_label: Label::threaded(11, 8)
            })
        );
        assert_eq!(t.forward(Label::threaded(1, 9)), Err(ForwardError::NoRoute));
        assert_eq!(
            t.forward(Label::threaded(4, 9)),
            Err(ForwardError::IndexOutOfRange)
        );
        assert_eq!(
            t.forward(Label::random(3, 9)),
            Err(ForwardError::NotThreaded)
        );
        assert_eq!(
            t.forward(Label::threaded(3, 0)),
            Err(ForwardError::HopLimitExceeded)
        );
        t.clear(3);
        assert_eq!(t.forward(Label::threaded(3, 9)), Err(ForwardError::NoRoute));
        assert_eq!(
            t.set(
                MAX_INDEX + 1,
                Entry {
                    next_hop: NextHop::Local,
                    next_index: 0
                }
            ),
            Err(SetError::IndexTooLarge)
        );
    }

    #[test]
    fn forward_packet_rewrites_in_place() {
        let mut t = ThreadedTable::with_len(2);
        t.set(
            1,
            Entry {
                next_hop: NextHop::Neighbour(5),
                next_index: 0x00_0102,
            },
        )
        .unwrap();
        let mut packet = [0x10, 0, 0, 1, 0xaa, 0xbb];
        assert_eq!(t.forward_packet(&mut packet), Ok(Some(5)));
        assert_eq!(packet, [0x0f, 0x00, 0x01, 0x02, 0xaa, 0xbb]);
        assert_eq!(t.forward_packet(&mut [0, 0]), Err(ForwardError::Truncated));
    }
}
