//! What can be wrong with a format, an access to a field, or a field used by a predicate.

use alloc::string::String;
use core::fmt;

use super::{MAX_FIELDS, MAX_NAME_LEN, Scalar, Type};

/// Why a list of fields is not a valid [`Format`](super::Format).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// More than [`MAX_FIELDS`] fields.
    TooManyFields {
        /// How many were given.
        count: usize,
    },
    /// The field at this position has an empty name.
    EmptyName {
        /// Its position in the list.
        index: usize,
    },
    /// A name longer than [`MAX_NAME_LEN`] or with a byte other than an ASCII letter,
    /// digit, `_`, `-` or `.`.
    BadName {
        /// The name.
        name: String,
    },
    /// Two fields share this name.
    DuplicateName {
        /// The name.
        name: String,
    },
    /// The field's offset plus its size passes `u16::MAX`.
    OffsetOverflow {
        /// The field.
        name: String,
    },
    /// Two fields share at least one byte.
    Overlap {
        /// The one declared first.
        first: String,
        /// The one declared second.
        second: String,
    },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyFields { count } => {
                write!(f, "{count} fields, at most {MAX_FIELDS} allowed")
            }
            Self::EmptyName { index } => write!(f, "field {index} has an empty name"),
            Self::BadName { name } => write!(
                f,
                "field name {name:?}: at most {MAX_NAME_LEN} ASCII letters, digits, '_', '-' or '.'"
            ),
            Self::DuplicateName { name } => write!(f, "field {name:?} declared twice"),
            Self::OffsetOverflow { name } => {
                write!(f, "field {name:?} ends past byte {}", u16::MAX)
            }
            Self::Overlap { first, second } => write!(f, "fields {first:?} and {second:?} overlap"),
        }
    }
}

impl core::error::Error for FormatError {}

/// Why [`Format::get`](super::Format::get) or [`Format::set`](super::Format::set) failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The format has no field of this name.
    UnknownField {
        /// The name asked for.
        name: String,
    },
    /// The payload ends before the field does.
    Short {
        /// The field.
        name: String,
        /// Bytes the field needs (its end).
        need: usize,
        /// Bytes the payload has.
        len: usize,
    },
    /// [`Format::set`](super::Format::set) was given a value of another kind than the
    /// field's.
    TypeMismatch {
        /// The field.
        name: String,
        /// The field's kind.
        field: Scalar,
        /// The value's kind.
        value: Scalar,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownField { name } => write!(f, "no field {name:?} in the format"),
            Self::Short { name, need, len } => {
                write!(
                    f,
                    "field {name:?} needs {need} bytes, the payload has {len}"
                )
            }
            Self::TypeMismatch { name, field, value } => write!(
                f,
                "field {name:?} is {}, the value is {}",
                field.name(),
                value.name()
            ),
        }
    }
}

impl core::error::Error for ReadError {}

/// Why a field cannot be read by a handler's [`Field`](crate::Field), which reads 1, 2
/// or 4 bytes as a big-endian unsigned number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// 8 bytes wide.
    Wide,
    /// Signed.
    Signed,
    /// A float.
    Float,
    /// Little-endian and wider than a byte.
    LittleEndian,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Wide => "wider than 4 bytes",
            Self::Signed => "signed",
            Self::Float => "a float",
            Self::LittleEndian => "little-endian",
        })
    }
}

/// Why [`Format::field`](super::Format::field) gave no predicate field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldError {
    /// The format has no field of this name.
    UnknownField {
        /// The name asked for.
        name: String,
    },
    /// Predicates cannot read this field correctly.
    Unsupported {
        /// The field.
        name: String,
        /// Its type.
        ty: Type,
        /// Why not.
        why: Unsupported,
    },
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownField { name } => write!(f, "no field {name:?} in the format"),
            Self::Unsupported { name, ty, why } => write!(
                f,
                "field {name:?} ({ty}) is {why}: predicates read 1, 2 or 4-byte big-endian unsigned fields"
            ),
        }
    }
}

impl core::error::Error for FieldError {}
