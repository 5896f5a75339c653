//! Field types and values: ten scalar kinds, each big- or little-endian.

use core::fmt;

/// The kind of number a field holds (its width follows from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// Unsigned, 1 byte.
    U8,
    /// Unsigned, 2 bytes.
    U16,
    /// Unsigned, 4 bytes.
    U32,
    /// Unsigned, 8 bytes.
    U64,
    /// Two's-complement signed, 1 byte.
    I8,
    /// Two's-complement signed, 2 bytes.
    I16,
    /// Two's-complement signed, 4 bytes.
    I32,
    /// Two's-complement signed, 8 bytes.
    I64,
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
}

impl Scalar {
    /// Every scalar kind, in declaration order.
    pub const ALL: [Scalar; 10] = [
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::F32,
        Scalar::F64,
    ];

    /// Width in bytes.
    pub const fn size(self) -> u16 {
        match self {
            Scalar::U8 | Scalar::I8 => 1,
            Scalar::U16 | Scalar::I16 => 2,
            Scalar::U32 | Scalar::I32 | Scalar::F32 => 4,
            Scalar::U64 | Scalar::I64 | Scalar::F64 => 8,
        }
    }

    /// The name used in the text form (`u32`, `f64`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    /// The kind named `name` in the text form, if any.
    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Byte order of a multi-byte field. Big-endian (network order) is the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Most significant byte first.
    #[default]
    Big,
    /// Least significant byte first.
    Little,
}

/// A field's type: a scalar kind and a byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// The kind of number.
    pub scalar: Scalar,
    /// Its byte order (irrelevant, but kept and printed, for 1-byte kinds).
    pub endian: Endian,
}

impl Type {
    /// `scalar`, big-endian.
    pub const fn be(scalar: Scalar) -> Self {
        Self {
            scalar,
            endian: Endian::Big,
        }
    }

    /// `scalar`, little-endian.
    pub const fn le(scalar: Scalar) -> Self {
        Self {
            scalar,
            endian: Endian::Little,
        }
    }

    /// Width in bytes.
    pub const fn size(self) -> u16 {
        self.scalar.size()
    }

    /// The type named `s` in the text form: `u32`, `u32be` (both big-endian) or `u32le`.
    pub fn parse(s: &str) -> Option<Type> {
        let (name, endian) = if let Some(n) = s.strip_suffix("le") {
            (n, Endian::Little)
        } else {
            (s.strip_suffix("be").unwrap_or(s), Endian::Big)
        };
        Some(Type {
            scalar: Scalar::from_name(name)?,
            endian,
        })
    }

    /// Decodes `bytes`, which must be exactly [`size`](Self::size) long (else `None`).
    pub fn decode(self, bytes: &[u8]) -> Option<Value> {
        let le = self.endian == Endian::Little;
        macro_rules! num {
            ($t:ty, $v:ident) => {{
                let a: [u8; size_of::<$t>()] = bytes.try_into().ok()?;
                Value::$v(if le {
                    <$t>::from_le_bytes(a)
                } else {
                    <$t>::from_be_bytes(a)
                })
            }};
        }
        Some(match self.scalar {
            Scalar::U8 => num!(u8, U8),
            Scalar::U16 => num!(u16, U16),
            Scalar::U32 => num!(u32, U32),
            Scalar::U64 => num!(u64, U64),
            Scalar::I8 => num!(i8, I8),
            Scalar::I16 => num!(i16, I16),
            Scalar::I32 => num!(i32, I32),
            Scalar::I64 => num!(i64, I64),
            Scalar::F32 => num!(f32, F32),
            Scalar::F64 => num!(f64, F64),
        })
    }

    /// Encodes `value` into `out`, which must be exactly [`size`](Self::size) long and
    /// `value` of this type's scalar kind (else `false`, and `out` is untouched).
    pub fn encode(self, value: Value, out: &mut [u8]) -> bool {
        let le = self.endian == Endian::Little;
        macro_rules! put {
            ($x:expr) => {{
                let b = if le {
                    $x.to_le_bytes()
                } else {
                    $x.to_be_bytes()
                };
                if out.len() != b.len() {
                    return false;
                }
                out.copy_from_slice(&b);
                true
            }};
        }
        match (self.scalar, value) {
            (Scalar::U8, Value::U8(x)) => put!(x),
            (Scalar::U16, Value::U16(x)) => put!(x),
            (Scalar::U32, Value::U32(x)) => put!(x),
            (Scalar::U64, Value::U64(x)) => put!(x),
            (Scalar::I8, Value::I8(x)) => put!(x),
            (Scalar::I16, Value::I16(x)) => put!(x),
            (Scalar::I32, Value::I32(x)) => put!(x),
            (Scalar::I64, Value::I64(x)) => put!(x),
            (Scalar::F32, Value::F32(x)) => put!(x),
            (Scalar::F64, Value::F64(x)) => put!(x),
            _ => false,
        }
    }
}

impl fmt::Display for Type {
    /// `u32` (big-endian, the default) or `u32le`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.scalar.name())?;
        if self.endian == Endian::Little {
            f.write_str("le")?;
        }
        Ok(())
    }
}

/// A value read from or written to a field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A `u8`.
    U8(u8),
    /// A `u16`.
    U16(u16),
    /// A `u32`.
    U32(u32),
    /// A `u64`.
    U64(u64),
    /// An `i8`.
    I8(i8),
    /// An `i16`.
    I16(i16),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
}

impl Value {
    /// The scalar kind of this value.
    pub const fn scalar(self) -> Scalar {
        match self {
            Value::U8(_) => Scalar::U8,
            Value::U16(_) => Scalar::U16,
            Value::U32(_) => Scalar::U32,
            Value::U64(_) => Scalar::U64,
            Value::I8(_) => Scalar::I8,
            Value::I16(_) => Scalar::I16,
            Value::I32(_) => Scalar::I32,
            Value::I64(_) => Scalar::I64,
            Value::F32(_) => Scalar::F32,
            Value::F64(_) => Scalar::F64,
        }
    }

    /// The value as an unsigned integer, if it is one (any width).
    pub const fn as_u64(self) -> Option<u64> {
        match self {
            Value::U8(x) => Some(x as u64),
            Value::U16(x) => Some(x as u64),
            Value::U32(x) => Some(x as u64),
            Value::U64(x) => Some(x),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U8(x) => write!(f, "{x}"),
            Value::U16(x) => write!(f, "{x}"),
            Value::U32(x) => write!(f, "{x}"),
            Value::U64(x) => write!(f, "{x}"),
            Value::I8(x) => write!(f, "{x}"),
            Value::I16(x) => write!(f, "{x}"),
            Value::I32(x) => write!(f, "{x}"),
            Value::I64(x) => write!(f, "{x}"),
            Value::F32(x) => write!(f, "{x}"),
            Value::F64(x) => write!(f, "{x}"),
        }
    }
}
