//! Words: stack values and instructions (paper §VI.B).
//!
//! Every instruction and every stack value is one 32-bit word: a 7-bit tag or opcode in the
//! high bits and a 25-bit data or immediate field below. Small integers live in the data
//! field (25-bit two's complement); addresses, floats, wide integers, tuples and byte arrays
//! live in the heap, and the stack value holds their offset (in words, from the heap base).

/// Bits of the data / immediate field.
pub const DATA_BITS: u32 = 25;
/// Mask of the data field.
pub const DATA_MASK: u32 = (1 << DATA_BITS) - 1;
/// Largest small integer.
pub const INT_MAX: i32 = (1 << (DATA_BITS - 1)) - 1;
/// Smallest small integer.
pub const INT_MIN: i32 = -(1 << (DATA_BITS - 1));

/// What a stack value is, or what a heap object holds (the 7-bit tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Tag {
    /// A 25-bit integer in the data field.
    Int = 0,
    /// An address, boxed: one payload word for IPv4, four (most significant first) for
    /// IPv6.
    Addr = 1,
    /// An `f32`, boxed (one payload word).
    Float = 2,
    /// A 64-bit integer, boxed (two payload words, high first).
    Wide = 3,
    /// A tuple of small values, boxed (one word each).
    Tuple = 4,
    /// A byte array, boxed (length in bytes; payload padded to whole words).
    Bytes = 5,
}

impl Tag {
    /// Every tag, in encoding order.
    pub const ALL: [Tag; 6] = [
        Tag::Int,
        Tag::Addr,
        Tag::Float,
        Tag::Wide,
        Tag::Tuple,
        Tag::Bytes,
    ];

    /// The tag with code `b`, if any.
    pub const fn from_code(b: u8) -> Option<Tag> {
        match b {
            0 => Some(Tag::Int),
            1 => Some(Tag::Addr),
            2 => Some(Tag::Float),
            3 => Some(Tag::Wide),
            4 => Some(Tag::Tuple),
            5 => Some(Tag::Bytes),
            _ => None,
        }
    }

    /// Whether values of this tag point into the heap.
    pub const fn boxed(self) -> bool {
        !matches!(self, Tag::Int)
    }

    /// The assembler's name.
    pub const fn name(self) -> &'static str {
        match self {
            Tag::Int => "int",
            Tag::Addr => "addr",
            Tag::Float => "float",
            Tag::Wide => "wide",
            Tag::Tuple => "tuple",
            Tag::Bytes => "bytes",
        }
    }
}

/// Payload words of a boxed address of IPv6.
pub const ADDR6_WORDS: u32 = 4;

/// The payload of a boxed address: its words, and how many of them count (one for IPv4,
/// [`ADDR6_WORDS`] for IPv6).
pub fn addr_payload(addr: core::net::IpAddr) -> ([u32; 4], usize) {
    match addr {
        core::net::IpAddr::V4(a) => ([u32::from(a), 0, 0, 0], 1),
        core::net::IpAddr::V6(a) => {
            let x = u128::from(a);
            let w = |i: u32| (x >> (96 - 32 * i)) as u32;
            ([w(0), w(1), w(2), w(3)], ADDR6_WORDS as usize)
        }
    }
}

/// The address a boxed address's payload holds: `words` of it, one (IPv4) or
/// [`ADDR6_WORDS`] (IPv6); `None` for another length.
pub fn addr_of_payload(words: &[u32]) -> Option<core::net::IpAddr> {
    match *words {
        [a] => Some(core::net::Ipv4Addr::from(a).into()),
        [a, b, c, d] => {
            let x = (u128::from(a) << 96) | (u128::from(b) << 64) | (u128::from(c) << 32);
            Some(core::net::Ipv6Addr::from(x | u128::from(d)).into())
        }
        _ => None,
    }
}

/// One stack value: tag and data in a word.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Value(pub u32);

impl core::fmt::Debug for Value {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.tag() {
            Some(Tag::Int) => write!(f, "{}", self.as_int()),
            Some(t) => write!(f, "{}@{}", t.name(), self.data()),
            None => write!(f, "?{:#x}", self.0),
        }
    }
}

impl Value {
    /// The small integer `i`, wrapped to 25 bits.
    pub const fn int(i: i32) -> Value {
        Value(i as u32 & DATA_MASK)
    }

    /// A pointer to the heap object at word offset `offset` holding a `tag`.
    pub const fn boxed(tag: Tag, offset: u32) -> Value {
        Value(((tag as u32) << DATA_BITS) | (offset & DATA_MASK))
    }

    /// The tag, if it is a known one.
    pub const fn tag(self) -> Option<Tag> {
        Tag::from_code((self.0 >> DATA_BITS) as u8)
    }

    /// The raw 7-bit tag code.
    pub const fn tag_code(self) -> u8 {
        (self.0 >> DATA_BITS) as u8
    }

    /// The data field, unsigned (a heap offset for boxed values).
    pub const fn data(self) -> u32 {
        self.0 & DATA_MASK
    }

    /// The data field as a sign-extended 25-bit integer (whatever the tag: SNAP does not
    /// check types where safety does not need it, §VI.E).
    pub const fn as_int(self) -> i32 {
        ((self.0 << (32 - DATA_BITS)) as i32) >> (32 - DATA_BITS)
    }

    /// Whether it is a heap pointer.
    pub const fn is_boxed(self) -> bool {
        match self.tag() {
            Some(t) => t.boxed(),
            None => false,
        }
    }
}

/// An instruction word: opcode and immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Word(pub u32);

impl Word {
    /// `opcode` with immediate `imm` (wrapped to 25 bits).
    pub const fn new(opcode: u8, imm: i32) -> Word {
        Word(((opcode as u32 & 0x7F) << DATA_BITS) | (imm as u32 & DATA_MASK))
    }

    /// The opcode byte.
    pub const fn opcode(self) -> u8 {
        (self.0 >> DATA_BITS) as u8
    }

    /// The immediate, sign-extended.
    pub const fn imm(self) -> i32 {
        ((self.0 << (32 - DATA_BITS)) as i32) >> (32 - DATA_BITS)
    }

    /// The immediate, unsigned.
    pub const fn uimm(self) -> u32 {
        self.0 & DATA_MASK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_wrap_to_25_bits_and_sign_extend() {
        assert_eq!(Value::int(5).as_int(), 5);
        assert_eq!(Value::int(-1).as_int(), -1);
        assert_eq!(Value::int(-1).0, DATA_MASK);
        assert_eq!(Value::int(INT_MAX + 1).as_int(), INT_MIN);
        assert_eq!(Value::int(7).tag(), Some(Tag::Int));
    }

    #[test]
    fn boxed_values_and_words() {
        let v = Value::boxed(Tag::Tuple, 12);
        assert_eq!(
            (v.tag(), v.data(), v.is_boxed()),
            (Some(Tag::Tuple), 12, true)
        );
        let w = Word::new(0x45, -3);
        assert_eq!((w.opcode(), w.imm()), (0x45, -3));
        assert_eq!(Word::new(1, 5).0, (1 << 25) | 5);
        for t in Tag::ALL {
            assert_eq!(Tag::from_code(t as u8), Some(t));
        }
        assert_eq!(Tag::from_code(6), None);
    }
}
