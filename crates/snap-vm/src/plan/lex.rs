//! The lexer: PLAN text to tokens with positions. ML comments `(* … *)` nest.

use alloc::string::String;
use alloc::vec::Vec;

use super::ast::Pos;
use super::error::{PlanError, syntax};

/// A token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An integer literal (unsigned; `~` negates).
    Int(i64),
    /// A string literal.
    Str(Vec<u8>),
    /// A host literal, a dotted quad like `10.0.0.3`.
    Host([u8; 4]),
    /// A name or keyword (letters, digits, `_`, `'` and `.` for service names like
    /// `ess.get`).
    Ident(String),
    /// Punctuation: `( ) [ ] , ; : = <> < <= > >= + - * :: | ~ #`.
    Punct(&'static str),
    /// The end of the text.
    Eof,
}

const PUNCT: [&str; 20] = [
    "::", "<>", "<=", ">=", "(", ")", "[", "]", ",", ";", ":", "=", "<", ">", "+", "-", "*", "|",
    "~", "#",
];

/// Splits `src` into tokens, ending with [`Tok::Eof`].
pub(crate) fn lex(src: &str) -> Result<Vec<(Tok, Pos)>, PlanError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let at = |i: usize| chars.get(i).copied();
    // Advances over `n` characters, keeping line and column.
    let step = |i: &mut usize, line: &mut u32, col: &mut u32, n: usize| {
        for _ in 0..n {
            if chars.get(*i) == Some(&'\n') {
                *line = line.saturating_add(1);
                *col = 1;
            } else {
                *col = col.saturating_add(1);
            }
            *i += 1;
        }
    };
    while let Some(c) = at(i) {
        let pos = Pos { line, col };
        if c.is_whitespace() {
            step(&mut i, &mut line, &mut col, 1);
        } else if c == '(' && at(i + 1) == Some('*') {
            let mut nest = 0u32;
            loop {
                match (at(i), at(i + 1)) {
                    (Some('('), Some('*')) => {
                        nest += 1;
                        step(&mut i, &mut line, &mut col, 2);
                    }
                    (Some('*'), Some(')')) => {
                        nest -= 1;
                        step(&mut i, &mut line, &mut col, 2);
                        if nest == 0 {
                            break;
                        }
                    }
                    (Some(_), _) => step(&mut i, &mut line, &mut col, 1),
                    (None, _) => return Err(syntax(pos, "unterminated comment")),
                }
            }
        } else if c.is_ascii_digit() {
            let mut n: i64 = 0;
            while let Some(d) = at(i).and_then(|c| c.to_digit(10)) {
                n = n
                    .checked_mul(10)
                    .and_then(|n| n.checked_add(i64::from(d)))
                    .ok_or_else(|| syntax(pos, "integer literal too large"))?;
                step(&mut i, &mut line, &mut col, 1);
            }
            if at(i) == Some('.') && at(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                // A dotted quad: four parts of at most 255.
                let first = u8::try_from(n).map_err(|_| syntax(pos, "host part above 255"))?;
                let mut quad = [first, 0, 0, 0];
                let mut parts = 1;
                while at(i) == Some('.') && at(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                    step(&mut i, &mut line, &mut col, 1);
                    let mut part: u32 = 0;
                    while let Some(d) = at(i).and_then(|c| c.to_digit(10)) {
                        part = part.saturating_mul(10).saturating_add(d);
                        step(&mut i, &mut line, &mut col, 1);
                    }
                    let slot = quad
                        .get_mut(parts)
                        .ok_or_else(|| syntax(pos, "a host literal has four parts"))?;
                    *slot = u8::try_from(part).map_err(|_| syntax(pos, "host part above 255"))?;
                    parts += 1;
                }
                if parts != 4 {
                    return Err(syntax(pos, "a host literal has four parts"));
                }
                out.push((Tok::Host(quad), pos));
                continue;
            }
            out.push((Tok::Int(n), pos));
        } else if c.is_alphabetic() || c == '_' {
            let mut s = String::new();
            while let Some(c) =
                at(i).filter(|c| c.is_alphanumeric() || matches!(c, '_' | '\'' | '.'))
            {
                s.push(c);
                step(&mut i, &mut line, &mut col, 1);
            }
            out.push((Tok::Ident(s), pos));
        } else if c == '"' {
            step(&mut i, &mut line, &mut col, 1);
            let mut s = Vec::new();
            loop {
                let Some(c) = at(i) else {
                    return Err(syntax(pos, "unterminated string"));
                };
                step(&mut i, &mut line, &mut col, 1);
                match c {
                    '"' => break,
                    '\\' => {
                        let e = at(i).ok_or_else(|| syntax(pos, "unterminated string"))?;
                        step(&mut i, &mut line, &mut col, 1);
                        s.push(match e {
                            'n' => b'\n',
                            't' => b'\t',
                            '0' => 0,
                            '"' => b'"',
                            '\\' => b'\\',
                            _ => return Err(syntax(pos, "unknown escape in string")),
                        });
                    }
                    c => {
                        let mut buf = [0u8; 4];
                        s.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
            out.push((Tok::Str(s), pos));
        } else {
            let rest = |p: &str| p.chars().enumerate().all(|(k, pc)| at(i + k) == Some(pc));
            let Some(p) = PUNCT.iter().find(|p| rest(p)) else {
                return Err(syntax(pos, alloc::format!("unexpected character '{c}'")));
            };
            step(&mut i, &mut line, &mut col, p.len());
            out.push((Tok::Punct(p), pos));
        }
    }
    out.push((Tok::Eof, Pos { line, col }));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_positions_and_comments_nest() {
        let t = lex("fun f(x:int) =\n  (* a (* b *) *) x::[] <> 12").unwrap();
        let kinds: Vec<&Tok> = t.iter().map(|(t, _)| t).collect();
        assert_eq!(kinds[0], &Tok::Ident("fun".into()));
        assert_eq!(kinds[3], &Tok::Ident("x".into()));
        let (x, pos) = &t[8];
        assert_eq!(x, &Tok::Ident("x".into()));
        assert_eq!(*pos, Pos { line: 2, col: 19 });
        assert_eq!(t[9].0, Tok::Punct("::"));
        assert_eq!(t[12].0, Tok::Punct("<>"));
        assert_eq!(t[13].0, Tok::Int(12));
        let t = lex("f(10.0.0.3)").unwrap();
        assert_eq!(t[2].0, Tok::Host([10, 0, 0, 3]));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for s in [
            "\"abc",
            "(* x",
            "@",
            "99999999999999999999999",
            "\"\\q\"",
            "1.2",
            "1.2.3.4.5",
            "1.2.3.256",
            "300.1.1.1",
            "1.2.3.99999999999999",
        ] {
            assert!(matches!(lex(s), Err(PlanError::Syntax { .. })), "{s}");
        }
    }
}
