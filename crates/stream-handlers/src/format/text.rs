//! The compact text form: `name:type[le|be]@offset` tokens separated by whitespace.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use super::{FieldDecl, Format, FormatError, MAX_FIELDS, Type, check};

/// What is wrong with one token of a format's text form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// No `:` between the name and the type.
    NoType,
    /// No `@` between the type and the offset.
    NoOffset,
    /// Not a type: `u8` … `u64`, `i8` … `i64`, `f32`, `f64`, optionally followed by
    /// `le` or `be`.
    UnknownType(String),
    /// Not a decimal offset from 0 to 65535.
    BadOffset(String),
    /// The field is well-formed but not valid with the fields before it (a duplicate
    /// name, an overlap, …), or is one field too many.
    Invalid(FormatError),
}

/// A format's text form could not be parsed: the offending token and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The token, as written.
    pub token: String,
    /// What is wrong with it.
    pub error: TokenError,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "format field {:?}: ", self.token)?;
        match &self.error {
            TokenError::NoType => f.write_str("expected name:type@offset, no ':'"),
            TokenError::NoOffset => f.write_str("expected name:type@offset, no '@'"),
            TokenError::UnknownType(t) => write!(
                f,
                "unknown type {t:?} (u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, then le or be)"
            ),
            TokenError::BadOffset(o) => write!(f, "bad offset {o:?} (a decimal from 0 to 65535)"),
            TokenError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for ParseError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match &self.error {
            TokenError::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

/// One token, alone: `name:type@offset`.
fn parse_token(token: &str) -> Result<FieldDecl, TokenError> {
    let (name, rest) = token.split_once(':').ok_or(TokenError::NoType)?;
    let (ty, offset) = rest.split_once('@').ok_or(TokenError::NoOffset)?;
    let ty = Type::parse(ty).ok_or_else(|| TokenError::UnknownType(ty.into()))?;
    // `u16::from_str` accepts a leading '+'; the text form does not.
    let offset = match offset.bytes().all(|b| b.is_ascii_digit()) {
        true => offset.parse().ok(),
        false => None,
    }
    .ok_or_else(|| TokenError::BadOffset(offset.into()))?;
    Ok(FieldDecl::new(name, offset, ty))
}

impl FromStr for Format {
    type Err = ParseError;

    /// Parses the text form; an empty string is the empty format.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let mut fields: Vec<FieldDecl> = Vec::new();
        for (i, token) in s.split_whitespace().enumerate() {
            let err = |error| ParseError {
                token: token.to_string(),
                error,
            };
            if i == MAX_FIELDS {
                let count = s.split_whitespace().count();
                return Err(err(TokenError::Invalid(FormatError::TooManyFields {
                    count,
                })));
            }
            let d = parse_token(token).map_err(err)?;
            check(&fields, &d, i).map_err(|e| err(TokenError::Invalid(e)))?;
            fields.push(d);
        }
        Ok(Format { fields })
    }
}

impl fmt::Display for Format {
    /// The text form, one space between tokens; parses back to an equal format.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}:{}@{}", d.name, d.ty, d.offset)?;
        }
        Ok(())
    }
}
