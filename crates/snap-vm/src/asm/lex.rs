//! Lexing for the assembler: comments, numbers, expressions, addresses, string literals
//! and values, each returning an [`AsmError`] that names the line.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::{AsmError, AsmErrorKind as K};

/// One term of an expression.
#[derive(Clone, Debug)]
pub(super) enum Atom {
    Num(i64),
    Label(String),
    /// `.`: the current instruction's index.
    Dot,
}

/// `±atom ± atom …`.
#[derive(Clone, Debug)]
pub(super) struct Expr(pub(super) Vec<(bool, Atom)>);

impl Expr {
    pub(super) fn num(n: i64) -> Expr {
        Expr(alloc::vec![(false, Atom::Num(n))])
    }

    /// The label, if the expression is just one (a branch target).
    pub(super) fn bare_label(&self) -> Option<&str> {
        match self.0.as_slice() {
            [(false, Atom::Label(l))] => Some(l),
            _ => None,
        }
    }
}

/// A stack or tuple value.
#[derive(Clone, Debug)]
pub(super) enum Val {
    Expr(Expr),
    Ptr(String),
    Raw(u32),
}

pub(super) fn err<T>(line: usize, kind: K) -> Result<T, AsmError> {
    Err(AsmError { line, kind })
}

/// The line without its comment (a `;` outside a string literal).
pub(super) fn strip_comment(line: &str) -> &str {
    let (mut in_str, mut escaped) = (false, false);
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_str => escaped = true,
            '"' => in_str = !in_str,
            ';' if !in_str => return line.get(..i).unwrap_or(line),
            _ => {}
        }
    }
    line
}

pub(super) fn is_ident(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits off the first whitespace-delimited word.
pub(super) fn word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (s.get(..i).unwrap_or(s), s.get(i..).unwrap_or("").trim()),
        None => (s, ""),
    }
}

pub(super) fn number(line: usize, s: &str) -> Result<i64, AsmError> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16)
            .ok()
            .map(|v| v as i64)
            .filter(|_| !hex.starts_with('+')),
        None => digits
            .parse::<i64>()
            .ok()
            .filter(|_| digits.starts_with(|c: char| c.is_ascii_digit())),
    };
    match v {
        Some(v) if neg => Ok(v.wrapping_neg()),
        Some(v) => Ok(v),
        None => err(line, K::BadNumber(s.to_string())),
    }
}

pub(super) fn in_range(line: usize, value: i64, min: i64, max: i64) -> Result<i64, AsmError> {
    if value < min || value > max {
        return err(line, K::OutOfRange { value, min, max });
    }
    Ok(value)
}

pub(super) fn addr(line: usize, s: &str) -> Result<core::net::IpAddr, AsmError> {
    match s.parse::<core::net::IpAddr>() {
        Ok(a) => Ok(a),
        Err(_) => err(line, K::BadAddress(s.to_string())),
    }
}

pub(super) fn expr(line: usize, s: &str) -> Result<Expr, AsmError> {
    let bad = || err(line, K::BadExpression(s.trim().to_string()));
    let mut terms = Vec::new();
    let mut rest = s.trim();
    let mut neg = false;
    if let Some(r) = rest.strip_prefix('-') {
        (neg, rest) = (true, r.trim_start());
    } else if let Some(r) = rest.strip_prefix('+') {
        rest = r.trim_start();
    }
    loop {
        let end = rest
            .find(|c: char| c == '+' || c == '-' || c.is_whitespace())
            .unwrap_or(rest.len());
        let (tok, tail) = rest.split_at(end);
        let atom = if tok == "." {
            Atom::Dot
        } else if tok.starts_with(|c: char| c.is_ascii_digit()) {
            Atom::Num(number(line, tok)?)
        } else if is_ident(tok) {
            Atom::Label(tok.to_string())
        } else {
            return bad();
        };
        terms.push((neg, atom));
        let tail = tail.trim_start();
        if tail.is_empty() {
            return Ok(Expr(terms));
        }
        let Some(sign) = tail.chars().next() else {
            return bad();
        };
        neg = match sign {
            '-' => true,
            '+' => false,
            _ => return bad(),
        };
        rest = tail.get(1..).unwrap_or("").trim_start();
    }
}

/// Parses a string literal (the whole of `s`).
pub(super) fn string(line: usize, s: &str) -> Result<Vec<u8>, AsmError> {
    let bad = || err(line, K::BadString(s.to_string()));
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return bad();
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return bad(),
            '\\' => match chars.next() {
                Some('"') => out.push(b'"'),
                Some('\\') => out.push(b'\\'),
                Some('n') => out.push(b'\n'),
                Some('t') => out.push(b'\t'),
                Some('0') => out.push(0),
                Some('x') => {
                    let hex: String = chars.by_ref().take(2).collect();
                    match u8::from_str_radix(&hex, 16) {
                        Ok(b) if hex.len() == 2 => out.push(b),
                        _ => return bad(),
                    }
                }
                _ => return bad(),
            },
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    Ok(out)
}

/// A string literal or `0x` hex bytes.
pub(super) fn byte_literal(line: usize, s: &str) -> Result<Vec<u8>, AsmError> {
    if s.starts_with('"') {
        return string(line, s);
    }
    let bad = || err(line, K::BadString(s.to_string()));
    let Some(hex) = s.strip_prefix("0x") else {
        return bad();
    };
    if hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return bad();
    }
    let bytes: Option<Vec<u8>> = (0..hex.len() / 2)
        .map(|i| {
            hex.get(2 * i..2 * i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect();
    bytes.map_or_else(bad, Ok)
}

pub(super) fn value(line: usize, s: &str) -> Result<Val, AsmError> {
    if let Some(name) = s.strip_prefix('@') {
        if !is_ident(name) {
            return err(line, K::Expected("an object name after @"));
        }
        return Ok(Val::Ptr(name.to_string()));
    }
    if let Some(raw) = s.strip_prefix("word:") {
        let w = in_range(line, number(line, raw)?, 0, i64::from(u32::MAX))?;
        return Ok(Val::Raw(w as u32));
    }
    Ok(Val::Expr(expr(line, s)?))
}
