//! Flow identifiers and source-hash indices (§3 of the paper).
//!
//! A sender names each flow twice in the packet header:
//!
//! * a [`FlowId`] — up to 16 bytes that identify the flow exactly (for example the
//!   IPv4 source and destination addresses and ports, or a caller id), compared in full
//!   on every cache hit, and
//! * a [`SourceHash`] — a word of at least 16 random bits that the sender chose for the
//!   flow (§3.1), used directly as the index of a [`FlowCache`](crate::cache::FlowCache)
//!   slot with no hashing at the router.
//!
//! The flow id is what makes the scheme safe: the source hash only says *where to look*;
//! whether the slot answers for this packet is decided by comparing flow ids, so a sender
//! that picks bad indices only slows itself down (see `apps` and the crate README).

use core::fmt;

/// The longest flow identifier a header can carry, in bytes.
pub const MAX_FLOW_ID_LEN: usize = 16;

/// A flow identifier of 1 to 16 bytes.
///
/// Bytes past `len` are always zero, so the derived `Eq` and `Hash` compare exactly the
/// identifier's bytes and its length (`[1]` and `[1, 0]` are different flows).
///
/// Laid out as 16 bytes then the length, 8-byte aligned, so a comparison is two word
/// compares and a byte compare.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(C, align(8))]
pub struct FlowId {
    bytes: [u8; MAX_FLOW_ID_LEN],
    len: u8,
}

/// Why bytes cannot be a [`FlowId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowIdError {
    /// A flow id has at least one byte.
    Empty,
    /// More than [`MAX_FLOW_ID_LEN`] bytes; carries the length given.
    TooLong(usize),
}

impl fmt::Display for FlowIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowIdError::Empty => f.write_str("flow id is empty"),
            FlowIdError::TooLong(n) => {
                write!(f, "flow id of {n} bytes exceeds {MAX_FLOW_ID_LEN}")
            }
        }
    }
}

impl core::error::Error for FlowIdError {}

impl FlowId {
    /// Makes a flow id from 1 to 16 bytes.
    #[inline]
    pub fn new(bytes: &[u8]) -> Result<FlowId, FlowIdError> {
        if bytes.is_empty() {
            return Err(FlowIdError::Empty);
        }
        let mut out = [0u8; MAX_FLOW_ID_LEN];
        let dst = out
            .get_mut(..bytes.len())
            .ok_or(FlowIdError::TooLong(bytes.len()))?;
        dst.copy_from_slice(bytes);
        Ok(FlowId {
            // At most 16 here, so the cast is exact.
            len: bytes.len() as u8,
            bytes: out,
        })
    }

    /// A flow id from a fixed-size array of 1 to 16 bytes. The length is known at compile
    /// time, so the copy is a few moves (no `memcpy` call): use it on fast paths.
    #[inline]
    pub fn from_array<const N: usize>(bytes: &[u8; N]) -> Result<FlowId, FlowIdError> {
        if N == 0 {
            return Err(FlowIdError::Empty);
        }
        let mut out = [0u8; MAX_FLOW_ID_LEN];
        let (head, _) = out
            .split_first_chunk_mut::<N>()
            .ok_or(FlowIdError::TooLong(N))?;
        *head = *bytes;
        Ok(FlowId {
            // At most 16 here, so the cast is exact.
            len: N as u8,
            bytes: out,
        })
    }

    /// A flow id of the first `len` bytes of a 16-byte buffer whose bytes past `len` are
    /// zero (the caller's promise; a bad `len` is clamped to 1 ..= 16).
    #[inline]
    pub(crate) fn from_padded(bytes: [u8; MAX_FLOW_ID_LEN], len: usize) -> FlowId {
        FlowId {
            bytes,
            // Clamped to 1 ..= 16, so the cast is exact.
            len: len.clamp(1, MAX_FLOW_ID_LEN) as u8,
        }
    }

    /// A 4-byte flow id from a `u32` (big-endian), e.g. an RPC caller id.
    pub const fn from_u32(v: u32) -> FlowId {
        let b = v.to_be_bytes();
        let mut bytes = [0u8; MAX_FLOW_ID_LEN];
        bytes[0] = b[0];
        bytes[1] = b[1];
        bytes[2] = b[2];
        bytes[3] = b[3];
        FlowId { len: 4, bytes }
    }

    /// An 8-byte flow id from a `u64` (big-endian).
    pub const fn from_u64(v: u64) -> FlowId {
        let b = v.to_be_bytes();
        let mut bytes = [0u8; MAX_FLOW_ID_LEN];
        let mut i = 0;
        while i < 8 {
            bytes[i] = b[i];
            i += 1;
        }
        FlowId { len: 8, bytes }
    }

    /// The flow id's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // `len` is at most 16 by construction; `get` keeps this panic-free regardless.
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// The flow id's length in bytes (1 to 16).
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Always `false`: a flow id has at least one byte. (Present for API symmetry.)
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FlowId(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

impl TryFrom<&[u8]> for FlowId {
    type Error = FlowIdError;
    fn try_from(bytes: &[u8]) -> Result<FlowId, FlowIdError> {
        FlowId::new(bytes)
    }
}

/// The sender-chosen source-hash index of a flow (§3): at least 16 random bits in a
/// 32-bit word. A router uses its low `k` bits as the slot of a `2^k`-entry cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SourceHash(u32);

impl SourceHash {
    /// Wraps a 32-bit index.
    pub const fn new(v: u32) -> SourceHash {
        SourceHash(v)
    }

    /// The 32-bit index.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The low `bits` bits (all 32 when `bits >= 32`): the slot in a `2^bits` table.
    pub const fn low_bits(self, bits: u8) -> u32 {
        if bits >= 32 {
            self.0
        } else {
            self.0 & ((1u32 << bits) - 1)
        }
    }
}

impl From<u32> for SourceHash {
    fn from(v: u32) -> SourceHash {
        SourceHash(v)
    }
}

impl From<SourceHash> for u32 {
    fn from(h: SourceHash) -> u32 {
        h.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn flow_id_round_trips_and_rejects_bad_lengths() {
        let id = FlowId::new(&[10, 0, 0, 1, 10, 0, 0, 2]).unwrap();
        assert_eq!(id.as_bytes(), &[10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!(id.len(), 8);
        assert!(!id.is_empty());
        assert_eq!(FlowId::new(&[]), Err(FlowIdError::Empty));
        assert_eq!(FlowId::new(&[0; 17]), Err(FlowIdError::TooLong(17)));
        assert_eq!(FlowId::new(&[7; 16]).unwrap().as_bytes(), &[7; 16]);
        assert_eq!(
            FlowId::from_array(&[10, 0, 0, 1]),
            FlowId::new(&[10, 0, 0, 1])
        );
        assert_eq!(FlowId::from_array(&[]), Err(FlowIdError::Empty));
        assert_eq!(FlowId::from_array(&[0; 17]), Err(FlowIdError::TooLong(17)));
    }

    #[test]
    fn length_is_part_of_identity() {
        assert_ne!(FlowId::new(&[1]).unwrap(), FlowId::new(&[1, 0]).unwrap());
        assert_eq!(FlowId::from_u32(0x0a00_0001).as_bytes(), &[10, 0, 0, 1]);
        assert_eq!(
            FlowId::from_u64(0x0102_0304_0506_0708).as_bytes(),
            &[1, 2, 3, 4, 5, 6, 7, 8]
        );
    }

    #[test]
    fn low_bits_masks() {
        let h = SourceHash::new(0xdead_beef);
        assert_eq!(h.low_bits(0), 0);
        assert_eq!(h.low_bits(8), 0xef);
        assert_eq!(h.low_bits(16), 0xbeef);
        assert_eq!(h.low_bits(32), 0xdead_beef);
        assert_eq!(h.low_bits(40), 0xdead_beef);
        assert_eq!(u32::from(h), h.get());
    }

    #[test]
    fn errors_display() {
        assert_eq!(FlowIdError::Empty.to_string(), "flow id is empty");
        assert!(FlowIdError::TooLong(20).to_string().contains("20"));
    }
}
