//! The ESP header and its operand field (paper §2.5, Fig. 4).
//!
//! The paper fixes the fields — version, Loc (3 bits), Err, RB, Computation ID, opcode,
//! operands — but not their sizes or order; ours:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-------+-+-+-+-+-+-------------+---------------+---------------+
//! |Version|I|O|C|E|R|Code | rsvd  |    Opcode     |  Operand len  |
//! +-------+-+-+-+-+-+-------------+---------------+---------------+
//! |                    Computation ID (CID)                       |
//! +---------------------------------------------------------------+
//! |                 Operands (Operand len bytes) ...              |
//! ```
//!
//! * Loc is the three bits I (input port), O (output port), C (central): where a router runs
//!   the instruction; any combination, none included.
//! * E (Err) is set by a router whose instruction aborted; R (RB) is the reflector bit.
//! * Code says why it aborted ([`ErrCode`]), so the end system can report the precise error
//!   (§2.6); it is 0 while Err is clear.
//! * The reserved bits are sent as zero and carried unchanged.
//! * The CID is 32 bits: packets of one computation carry the same CID and are run in the
//!   same store context.
//! * Operand len counts the operand bytes exactly; nothing may follow them. An explicit length
//!   lets a router that does not know an opcode still check and skip the instruction.
//! * Opcode 1–17 are the built-in instructions ([`instr`](crate::instr)). Opcode 32
//!   ([`OP_MICRO`](crate::instr::OP_MICRO)) is inline microcode: the operands are a SNAP
//!   program (its words as in a SNAP packet) followed by the instruction's operands,
//!
//!   ```text
//!   [code words c: u8][heap words h: u8][entry: u8][code: 4c bytes][heap: 4h bytes][operands: 8n bytes, n ≤ 8]
//!   ```
//!
//!   at most 255 bytes in all. Opcodes 64–127 ([`INSTALLED`](crate::instr::INSTALLED)) name
//!   instructions a router's operator installed; their operands are n 64-bit words, n ≤ 8.
//!   Both run only where the router has microcode (the `esp-micro` crate). A router
//!   without it, with inline microcode off (or not allowed on the interface the packet came
//!   in by), or with nothing installed under the opcode aborts the instruction as it does
//!   an unknown opcode: Err set, Code 3 (Malformed), Loc cleared, packet forwarded.
//!
//! All multi-byte fields are big-endian. Processing en route may change only the Loc, Err
//! and RB bits and the operands: the view has setters for those alone.

use core::fmt;

use crate::consts::{HEADER_LEN, VERSION};

mod field {
    use core::ops::{Range, RangeFrom};
    pub(super) const VER_LOC_ERR: usize = 0;
    pub(super) const FLAGS: usize = 1;
    pub(super) const OPCODE: usize = 2;
    pub(super) const OPERAND_LEN: usize = 3;
    pub(super) const CID: Range<usize> = 4..8;
    pub(super) const OPERANDS: RangeFrom<usize> = 8..;
}

const ERR_BIT: u8 = 0x01;
const RB_BIT: u8 = 0x80;
const CODE_MASK: u8 = 0x70;
const CODE_SHIFT: u8 = 4;

/// Why a router set Err (the 3-bit Code field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrCode {
    /// No reason recorded (Err clear, or set by an older sender).
    None,
    /// A store had no room for a binding the instruction needed.
    StoreFull,
    /// State the instruction needs did not exist (never set up, or expired).
    MissingState,
    /// The router could not decode the instruction.
    Malformed,
    /// A code this crate does not know.
    Other(u8),
}

impl ErrCode {
    /// The 3-bit field value.
    pub const fn bits(self) -> u8 {
        match self {
            ErrCode::None => 0,
            ErrCode::StoreFull => 1,
            ErrCode::MissingState => 2,
            ErrCode::Malformed => 3,
            ErrCode::Other(b) => b & 0x7,
        }
    }

    /// The code of a 3-bit field value.
    pub const fn from_bits(b: u8) -> ErrCode {
        match b & 0x7 {
            0 => ErrCode::None,
            1 => ErrCode::StoreFull,
            2 => ErrCode::MissingState,
            3 => ErrCode::Malformed,
            b => ErrCode::Other(b),
        }
    }
}

/// Where a router runs an instruction (the 3-bit Loc field).
///
/// ```
/// use esp_proto::wire::Loc;
/// let loc = Loc::INPUT | Loc::CENTRAL;
/// assert!(loc.contains(Loc::INPUT) && !loc.contains(Loc::OUTPUT));
/// assert_eq!(loc.bits(), 0b101);
/// assert!(Loc::NONE.is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Loc(u8);

impl Loc {
    /// Run nowhere.
    pub const NONE: Loc = Loc(0);
    /// Run in the context of the interface the packet arrived on.
    pub const INPUT: Loc = Loc(0b100);
    /// Run in the context of the interface the packet leaves by.
    pub const OUTPUT: Loc = Loc(0b010);
    /// Run in the router's central context.
    pub const CENTRAL: Loc = Loc(0b001);
    /// All three.
    pub const ALL: Loc = Loc(0b111);

    /// The Loc with these three bits (higher bits ignored).
    pub const fn from_bits(bits: u8) -> Loc {
        Loc(bits & 0b111)
    }

    /// The three bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every context in `other` is in `self`.
    pub const fn contains(self, other: Loc) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no context is selected.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl core::ops::BitOr for Loc {
    type Output = Loc;
    fn bitor(self, rhs: Loc) -> Loc {
        Loc(self.0 | rhs.0)
    }
}

/// Why bytes are not a valid ESP header and operand field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the fixed header.
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// A version this crate does not speak.
    Version {
        /// The version field.
        version: u8,
    },
    /// The operand length field disagrees with the bytes present.
    OperandLength {
        /// What the header declares.
        declared: usize,
        /// What follows the header.
        actual: usize,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { len } => {
                write!(f, "ESP header truncated: {len} of {HEADER_LEN} bytes")
            }
            WireError::Version { version } => {
                write!(f, "ESP version {version}, expected {VERSION}")
            }
            WireError::OperandLength { declared, actual } => {
                write!(
                    f,
                    "ESP operand length {declared} but {actual} bytes follow the header"
                )
            }
        }
    }
}

impl core::error::Error for WireError {}

/// A checked view of an ESP header and its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wraps `buffer` after checking that it holds exactly one header of this version and
    /// the operands its length field declares; no accessor can panic afterwards.
    ///
    /// # Errors
    ///
    /// [`WireError`] says which check failed.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let (Some(&first), Some(&declared)) =
            (b.get(field::VER_LOC_ERR), b.get(field::OPERAND_LEN))
        else {
            return Err(WireError::Truncated { len: b.len() });
        };
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated { len: b.len() });
        }
        if first >> 4 != VERSION {
            return Err(WireError::Version {
                version: first >> 4,
            });
        }
        let actual = b.len() - HEADER_LEN;
        if usize::from(declared) != actual {
            return Err(WireError::OperandLength {
                declared: usize::from(declared),
                actual,
            });
        }
        Ok(Header { buffer })
    }

    /// The underlying bytes.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    fn byte(&self, i: usize) -> u8 {
        self.buffer.as_ref().get(i).copied().unwrap_or(0)
    }

    /// The Loc field.
    #[inline]
    pub fn loc(&self) -> Loc {
        Loc::from_bits(self.byte(field::VER_LOC_ERR) >> 1)
    }

    /// The Err bit.
    #[inline]
    pub fn err(&self) -> bool {
        self.byte(field::VER_LOC_ERR) & ERR_BIT != 0
    }

    /// The reflector bit.
    #[inline]
    pub fn rb(&self) -> bool {
        self.byte(field::FLAGS) & RB_BIT != 0
    }

    /// Why Err was set.
    #[inline]
    pub fn err_code(&self) -> ErrCode {
        ErrCode::from_bits((self.byte(field::FLAGS) & CODE_MASK) >> CODE_SHIFT)
    }

    /// The opcode.
    #[inline]
    pub fn opcode(&self) -> u8 {
        self.byte(field::OPCODE)
    }

    /// The Computation ID.
    #[inline]
    pub fn cid(&self) -> u32 {
        let b = self.buffer.as_ref().get(field::CID).unwrap_or(&[0; 4]);
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The operand bytes.
    #[inline]
    pub fn operands(&self) -> &[u8] {
        self.buffer.as_ref().get(field::OPERANDS).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    #[inline]
    fn update(&mut self, i: usize, f: impl FnOnce(u8) -> u8) {
        if let Some(b) = self.buffer.as_mut().get_mut(i) {
            *b = f(*b);
        }
    }

    /// Sets the Loc field.
    #[inline]
    pub fn set_loc(&mut self, loc: Loc) {
        self.update(field::VER_LOC_ERR, |b| (b & !0b1110) | (loc.bits() << 1));
    }

    /// Sets or clears the Err bit.
    #[inline]
    pub fn set_err(&mut self, err: bool) {
        self.update(field::VER_LOC_ERR, |b| {
            if err { b | ERR_BIT } else { b & !ERR_BIT }
        });
    }

    /// Sets the Code field (why Err was set).
    #[inline]
    pub fn set_err_code(&mut self, code: ErrCode) {
        self.update(field::FLAGS, |b| {
            (b & !CODE_MASK) | ((code.bits() << CODE_SHIFT) & CODE_MASK)
        });
    }

    /// Sets or clears the reflector bit.
    #[inline]
    pub fn set_rb(&mut self, rb: bool) {
        self.update(field::FLAGS, |b| if rb { b | RB_BIT } else { b & !RB_BIT });
    }

    /// The operand bytes, to rewrite in place (their length cannot change).
    #[inline]
    pub fn operands_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(field::OPERANDS)
            .unwrap_or(&mut [])
    }
}

/// The valid values of an ESP header (the operands themselves are the instruction's).
///
/// ```
/// use esp_proto::wire::{Header, HeaderRepr, Loc};
/// let repr = HeaderRepr { loc: Loc::OUTPUT, err: false, rb: false, opcode: 1, cid: 0xC1D, operand_len: 2 };
/// let mut buf = [0u8; 10];
/// repr.emit(&mut buf)?;
/// buf[8..].copy_from_slice(&[0xAB, 0xCD]);
/// let view = Header::new_checked(&buf[..])?;
/// assert_eq!(HeaderRepr::parse(&view), repr);
/// assert_eq!(view.operands(), &[0xAB, 0xCD]);
/// # Ok::<(), esp_proto::wire::WireError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderRepr {
    /// Where routers run the instruction.
    pub loc: Loc,
    /// Err bit.
    pub err: bool,
    /// Reflector bit.
    pub rb: bool,
    /// The instruction.
    pub opcode: u8,
    /// Computation ID.
    pub cid: u32,
    /// Operand bytes that follow the header.
    pub operand_len: u8,
}

impl HeaderRepr {
    /// Reads the header fields from a checked view.
    pub fn parse<T: AsRef<[u8]>>(view: &Header<T>) -> HeaderRepr {
        HeaderRepr {
            loc: view.loc(),
            err: view.err(),
            rb: view.rb(),
            opcode: view.opcode(),
            cid: view.cid(),
            operand_len: view.operands().len() as u8,
        }
    }

    /// Bytes of header and operands together.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.operand_len as usize
    }

    /// Writes the header into the first [`HEADER_LEN`](crate::consts::HEADER_LEN) bytes of
    /// `buf`, which must be exactly [`buffer_len`](Self::buffer_len) long; the operand bytes
    /// are left for the instruction to fill.
    ///
    /// # Errors
    ///
    /// [`WireError::OperandLength`] if `buf` has the wrong length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        if buf.len() != self.buffer_len() {
            return Err(WireError::OperandLength {
                declared: usize::from(self.operand_len),
                actual: buf.len().saturating_sub(HEADER_LEN),
            });
        }
        let [b0, b1, b2, b3, c0, c1, c2, c3, ..] = buf else {
            return Err(WireError::Truncated { len: buf.len() });
        };
        *b0 = (VERSION << 4) | (self.loc.bits() << 1) | u8::from(self.err);
        *b1 = if self.rb { RB_BIT } else { 0 };
        *b2 = self.opcode;
        *b3 = self.operand_len;
        [*c0, *c1, *c2, *c3] = self.cid.to_be_bytes();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 11] = [
        0x1B, // version 1, Loc = input | central (101), Err = 1
        0x80, // RB
        0x03, // opcode
        0x03, // three operand bytes
        0xDE, 0xAD, 0xBE, 0xEF, // CID
        1, 2, 3,
    ];

    #[test]
    fn parses_literal_bytes() {
        let h = Header::new_checked(&BYTES[..]).unwrap();
        assert_eq!(
            HeaderRepr::parse(&h),
            HeaderRepr {
                loc: Loc::INPUT | Loc::CENTRAL,
                err: true,
                rb: true,
                opcode: 3,
                cid: 0xDEAD_BEEF,
                operand_len: 3
            }
        );
        assert_eq!(h.operands(), &[1, 2, 3]);
    }

    #[test]
    fn emits_the_same_bytes() {
        let repr = HeaderRepr::parse(&Header::new_checked(&BYTES[..]).unwrap());
        let mut buf = [0u8; 11];
        repr.emit(&mut buf).unwrap();
        buf[8..].copy_from_slice(&[1, 2, 3]);
        assert_eq!(buf, BYTES);
        assert!(repr.emit(&mut [0u8; 10]).is_err());
    }

    #[test]
    fn setters_touch_only_their_bits() {
        let mut buf = BYTES;
        let mut h = Header::new_checked(&mut buf[..]).unwrap();
        h.set_loc(Loc::NONE);
        h.set_err(false);
        h.set_rb(false);
        h.operands_mut()[0] = 9;
        assert_eq!(
            (h.loc(), h.err(), h.rb(), h.opcode(), h.cid()),
            (Loc::NONE, false, false, 3, 0xDEAD_BEEF)
        );
        assert_eq!(buf, [0x10, 0x00, 3, 3, 0xDE, 0xAD, 0xBE, 0xEF, 9, 2, 3]);
    }

    #[test]
    fn rejects_bad_bytes() {
        assert_eq!(
            Header::new_checked(&BYTES[..7]),
            Err(WireError::Truncated { len: 7 })
        );
        assert_eq!(
            Header::new_checked(&[][..]),
            Err(WireError::Truncated { len: 0 })
        );
        let mut v2 = BYTES;
        v2[0] = 0x2B;
        assert_eq!(
            Header::new_checked(&v2[..]),
            Err(WireError::Version { version: 2 })
        );
        assert_eq!(
            Header::new_checked(&BYTES[..10]),
            Err(WireError::OperandLength {
                declared: 3,
                actual: 2
            })
        );
        let mut long = [0u8; 12];
        long[..11].copy_from_slice(&BYTES);
        assert_eq!(
            Header::new_checked(&long[..]),
            Err(WireError::OperandLength {
                declared: 3,
                actual: 4
            })
        );
    }
}
