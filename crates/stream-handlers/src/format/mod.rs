//! Declared message formats (paper §3.1, "compact binary data format descriptions").
//!
//! A [`Format`] names the fields of a message body: each a [`FieldDecl`] with a byte
//! offset and a [`Type`] (`u8` … `u64`, `i8` … `i64`, `f32`, `f64`, big-endian by default
//! or little-endian). Formats are validated when built ([`FormatError`]) and have a
//! compact text form for configs and command lines, parsed and printed
//! ([`ParseError`]): `seq:u32@0 ts:u64@4 lat:f32le@12`, i.e. `name:type[le|be]@offset`
//! tokens separated by whitespace.
//!
//! A format reads ([`Format::get`]) and writes ([`Format::set`]) typed [`Value`]s by field
//! name, with a [`ReadError`] — never a panic — for a short payload, an unknown name or a
//! value of the wrong kind, and turns a named field into the [`Field`] that handlers'
//! [`Predicate`](crate::Predicate)s compare ([`Format::field`]), refusing with a
//! [`FieldError`] a field those cannot read correctly (wider than 4 bytes, signed, float,
//! little-endian). Two formats ship with deterministic generators ([`shipped`]): the
//! paper's image sequence frame and Delta's flight record.
//!
//! ```
//! use stream_handlers::format::{Format, Value};
//! use stream_handlers::Predicate;
//!
//! let f: Format = "seq:u32@0 ts:u64@4 lat:f32le@12".parse()?;
//! assert_eq!(f.len(), 16);
//! assert_eq!(f.to_string(), "seq:u32@0 ts:u64@4 lat:f32le@12");
//!
//! let mut msg = vec![0u8; f.len()];
//! f.set("seq", Value::U32(7), &mut msg)?;
//! f.set("lat", Value::F32(33.64), &mut msg)?;
//! assert_eq!(f.get("seq", &msg)?, Value::U32(7));
//! assert_eq!(f.get("lat", &msg)?, Value::F32(33.64));
//! assert!(f.get("ts", &msg[..8]).is_err()); // too short for ts: an error, not a panic
//!
//! // A filter on a named field; the little-endian float cannot be one.
//! let keep = Predicate::Lt(f.field("seq")?, 10);
//! assert!(keep.matches(&msg));
//! assert!(f.field("lat").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
pub mod shipped;
mod text;
mod ty;

use alloc::string::String;
use alloc::vec::Vec;

pub use error::{FieldError, FormatError, ReadError, Unsupported};
pub use text::{ParseError, TokenError};
pub use ty::{Endian, Scalar, Type, Value};

use crate::Field;

/// The most fields a format may declare.
pub const MAX_FIELDS: usize = 64;
/// The longest field name, in bytes.
pub const MAX_NAME_LEN: usize = 32;

/// One named field of a format.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldDecl {
    /// Its name: 1 to [`MAX_NAME_LEN`] bytes of ASCII letters, digits, `_`, `-` or `.`.
    pub name: String,
    /// Byte offset from the start of the message body.
    pub offset: u16,
    /// Its type.
    pub ty: Type,
}

impl FieldDecl {
    /// The field `name` of type `ty` at `offset`.
    pub fn new(name: impl Into<String>, offset: u16, ty: Type) -> Self {
        Self {
            name: name.into(),
            offset,
            ty,
        }
    }

    /// One past its last byte (may exceed `u16::MAX` in an invalid declaration).
    pub fn end(&self) -> usize {
        usize::from(self.offset) + usize::from(self.ty.size())
    }
}

/// A validated message format: named, non-overlapping fields (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Format {
    fields: Vec<FieldDecl>,
}

impl Format {
    /// A format of `fields`, in the order given, after checking that there are at most
    /// [`MAX_FIELDS`], every name is valid and unique, every field ends within `u16::MAX`
    /// bytes and no two fields share a byte.
    pub fn new(fields: Vec<FieldDecl>) -> Result<Self, FormatError> {
        if fields.len() > MAX_FIELDS {
            return Err(FormatError::TooManyFields {
                count: fields.len(),
            });
        }
        for (i, d) in fields.iter().enumerate() {
            check(&fields[..i], d, i)?;
        }
        Ok(Self { fields })
    }

    /// The fields, in declaration order.
    pub fn fields(&self) -> &[FieldDecl] {
        &self.fields
    }

    /// The field named `name`.
    pub fn decl(&self, name: &str) -> Option<&FieldDecl> {
        self.fields.iter().find(|d| d.name == name)
    }

    /// Bytes a message needs to hold every field: the largest field end (0 with no fields).
    pub fn len(&self) -> usize {
        self.fields.iter().map(FieldDecl::end).max().unwrap_or(0)
    }

    /// Whether the format declares no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    fn lookup(&self, name: &str) -> Result<&FieldDecl, ReadError> {
        self.decl(name)
            .ok_or_else(|| ReadError::UnknownField { name: name.into() })
    }

    /// The value of field `name` in `payload`.
    pub fn get(&self, name: &str, payload: &[u8]) -> Result<Value, ReadError> {
        let d = self.lookup(name)?;
        payload
            .get(usize::from(d.offset)..d.end())
            .and_then(|b| d.ty.decode(b))
            .ok_or_else(|| short(d, payload.len()))
    }

    /// Writes `value` into field `name` of `payload` (for generators). The value must be
    /// of the field's scalar kind; its byte order is the field's.
    pub fn set(&self, name: &str, value: Value, payload: &mut [u8]) -> Result<(), ReadError> {
        let d = self.lookup(name)?;
        if value.scalar() != d.ty.scalar {
            return Err(ReadError::TypeMismatch {
                name: d.name.clone(),
                field: d.ty.scalar,
                value: value.scalar(),
            });
        }
        let len = payload.len();
        let out = payload
            .get_mut(usize::from(d.offset)..d.end())
            .ok_or_else(|| short(d, len))?;
        // The kinds match and `out` is the field's size, so this writes.
        d.ty.encode(value, out);
        Ok(())
    }

    /// The [`Field`] that handlers' predicates read for the field named `name`. Those read
    /// 1, 2 or 4 bytes as a big-endian unsigned number, so any other field (8 bytes,
    /// signed, float, little-endian) is refused rather than silently misread.
    pub fn field(&self, name: &str) -> Result<Field, FieldError> {
        let d = self
            .decl(name)
            .ok_or_else(|| FieldError::UnknownField { name: name.into() })?;
        let why = match d.ty.scalar {
            Scalar::U64 => Some(Unsupported::Wide),
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => Some(Unsupported::Signed),
            Scalar::F32 | Scalar::F64 => Some(Unsupported::Float),
            Scalar::U8 | Scalar::U16 | Scalar::U32 => None,
        };
        let why = why
            .or((d.ty.endian == Endian::Little && d.ty.size() > 1)
                .then_some(Unsupported::LittleEndian));
        match why {
            Some(why) => Err(FieldError::Unsupported {
                name: d.name.clone(),
                ty: d.ty,
                why,
            }),
            // Width is 1, 2 or 4 here, so the cast is exact.
            None => Ok(Field::new(d.offset, d.ty.size() as u8)),
        }
    }
}

/// Checks `d`, at position `index`, against itself and the fields declared before it.
fn check(earlier: &[FieldDecl], d: &FieldDecl, index: usize) -> Result<(), FormatError> {
    if d.name.is_empty() {
        return Err(FormatError::EmptyName { index });
    }
    if !valid_name(&d.name) {
        return Err(FormatError::BadName {
            name: d.name.clone(),
        });
    }
    if d.offset.checked_add(d.ty.size()).is_none() {
        return Err(FormatError::OffsetOverflow {
            name: d.name.clone(),
        });
    }
    for b in earlier {
        if d.name == b.name {
            return Err(FormatError::DuplicateName {
                name: d.name.clone(),
            });
        }
        // Both ends fit in u16: checked above, for `b` when it was checked.
        if d.offset < b.offset + b.ty.size() && b.offset < d.offset + d.ty.size() {
            return Err(FormatError::Overlap {
                first: b.name.clone(),
                second: d.name.clone(),
            });
        }
    }
    Ok(())
}

fn short(d: &FieldDecl, len: usize) -> ReadError {
    ReadError::Short {
        name: d.name.clone(),
        need: d.end(),
        len,
    }
}

/// Whether `name` is a valid field name (non-empty is checked separately).
fn valid_name(name: &str) -> bool {
    name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests;
