//! The assembler proper: a pass over the lines that records instructions, labels, heap
//! objects and header fields, then [`Asm::finish`] lays out the heap and resolves names.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::lex::{
    Atom, Expr, Val, addr, byte_literal, err, expr, in_range, is_ident, number, string,
    strip_comment, value, word,
};
use super::{AsmError, AsmErrorKind as K};
use crate::op::{Imm, Op};
use crate::program::Program;
use crate::value::{DATA_MASK, INT_MAX, INT_MIN, Tag, Value, Word};
use crate::vm::frame_header;

/// Most words in a section (the header's 16-bit lengths).
const MAX_WORDS: usize = u16::MAX as usize;

/// An instruction's immediate.
#[derive(Clone, Debug)]
enum Arg {
    Expr(Expr),
    Object(String),
    Str(Vec<u8>),
}

#[derive(Clone, Debug)]
enum Body {
    Bytes(Vec<u8>),
    Addr(core::net::IpAddr),
    Float(u32),
    Wide(i64),
    Tuple(Vec<Val>),
    Words(Vec<u32>),
}

impl Body {
    fn tag(&self) -> Option<Tag> {
        Some(match self {
            Body::Bytes(_) => Tag::Bytes,
            Body::Addr(_) => Tag::Addr,
            Body::Float(_) => Tag::Float,
            Body::Wide(_) => Tag::Wide,
            Body::Tuple(_) => Tag::Tuple,
            Body::Words(_) => return None,
        })
    }

    fn words(&self) -> usize {
        match self {
            Body::Bytes(b) => 1 + b.len().div_ceil(4),
            Body::Addr(a) => 1 + crate::value::addr_payload(*a).1,
            Body::Float(_) => 2,
            Body::Wide(_) => 3,
            Body::Tuple(v) => 1 + v.len(),
            Body::Words(w) => w.len(),
        }
    }
}

#[derive(Clone, Debug)]
struct Obj {
    line: usize,
    body: Body,
    offset: u32,
}

#[derive(Clone, Debug)]
enum Code {
    Op {
        line: usize,
        op: Op,
        arg: Option<Arg>,
    },
    Raw(u32),
}

/// The assembler's state between lines.
#[derive(Debug, Default)]
pub(super) struct Asm {
    program: Program,
    code: Vec<Code>,
    labels: BTreeMap<String, usize>,
    objs: Vec<Obj>,
    names: BTreeMap<String, usize>,
    heap_words: usize,
    stack: Vec<(usize, Val)>,
    entry: Option<(usize, Expr)>,
    /// `.src` and `.dst`, with their lines (the family is settled at the end).
    src: Option<(usize, core::net::IpAddr)>,
    dst: Option<(usize, core::net::IpAddr)>,
}

impl Asm {
    /// Reads one line.
    pub(super) fn line(&mut self, line: usize, text: &str) -> Result<(), AsmError> {
        let mut rest = strip_comment(text).trim();
        // Leading labels.
        while let Some(i) = rest.find(':') {
            let (name, tail) = rest.split_at(i);
            if !is_ident(name) {
                break;
            }
            if self
                .labels
                .insert(name.to_string(), self.code.len())
                .is_some()
            {
                return err(line, K::DuplicateLabel(name.to_string()));
            }
            rest = tail.get(1..).unwrap_or("").trim_start();
        }
        if rest.is_empty() {
            return Ok(());
        }
        if let Some(d) = rest.strip_prefix('.') {
            let (name, args) = word(d);
            return self.directive(line, name, args);
        }
        let (mnemonic, imm) = word(rest);
        let Some(op) = Op::from_name(mnemonic) else {
            return err(line, K::UnknownMnemonic(mnemonic.to_string()));
        };
        let arg = if imm.is_empty() {
            None
        } else if imm.starts_with('"') && op.info().imm == Imm::Heap {
            Some(Arg::Str(string(line, imm)?))
        } else if let Some(name) = imm.strip_prefix('@') {
            if op.info().imm != Imm::Heap || !is_ident(name) {
                return err(line, K::BadExpression(imm.to_string()));
            }
            Some(Arg::Object(name.to_string()))
        } else if let Some(tag) = Tag::ALL
            .iter()
            .find(|t| op.info().imm == Imm::Tag && t.name() == imm)
        {
            Some(Arg::Expr(Expr::num(*tag as i64)))
        } else {
            Some(Arg::Expr(expr(line, imm)?))
        };
        if self.code.len() >= MAX_WORDS {
            return err(line, K::TooLarge("code"));
        }
        self.code.push(Code::Op { line, op, arg });
        Ok(())
    }

    fn object(&mut self, line: usize, name: &str, body: Body) -> Result<(), AsmError> {
        if !name.is_empty() {
            if !is_ident(name) {
                return err(line, K::Expected("an object name"));
            }
            if self
                .names
                .insert(name.to_string(), self.objs.len())
                .is_some()
            {
                return err(line, K::DuplicateObject(name.to_string()));
            }
        }
        self.push_object(line, body)
    }

    fn push_object(&mut self, line: usize, body: Body) -> Result<(), AsmError> {
        let offset = self.heap_words;
        self.heap_words += body.words();
        if self.heap_words > MAX_WORDS {
            return err(line, K::TooLarge("heap"));
        }
        self.objs.push(Obj {
            line,
            body,
            offset: offset as u32,
        });
        Ok(())
    }

    fn directive(&mut self, line: usize, name: &str, args: &str) -> Result<(), AsmError> {
        let (obj, data) = word(args);
        let int = |lo: i64, hi: i64| in_range(line, number(line, args)?, lo, hi);
        match name {
            "src" => self.src = Some((line, addr(line, args)?)),
            "dst" => self.dst = Some((line, addr(line, args)?)),
            "port" => self.program.port = int(0, 0xFFFF)? as u16,
            "rb" => self.program.rb = int(0, 0xFFFF)? as u16,
            "entry" => self.entry = Some((line, expr(line, args)?)),
            "bytes" => self.object(line, obj, Body::Bytes(byte_literal(line, data)?))?,
            "addr" => self.object(line, obj, Body::Addr(addr(line, data)?))?,
            "float" => match data.parse::<f32>() {
                Ok(x) => self.object(line, obj, Body::Float(x.to_bits()))?,
                Err(_) => return err(line, K::BadNumber(data.to_string())),
            },
            "wide" => self.object(line, obj, Body::Wide(number(line, data)?))?,
            "tuple" => {
                let Some(inner) = data.strip_prefix('(').and_then(|d| d.strip_suffix(')')) else {
                    return err(line, K::Expected("a parenthesised list of values"));
                };
                let items = if inner.trim().is_empty() {
                    Vec::new()
                } else {
                    inner
                        .split(',')
                        .map(|v| value(line, v.trim()))
                        .collect::<Result<Vec<_>, _>>()?
                };
                self.object(line, obj, Body::Tuple(items))?;
            }
            "word" => {
                let words = args
                    .split_whitespace()
                    .map(|w| in_range(line, number(line, w)?, 0, i64::from(u32::MAX)))
                    .map(|w| w.map(|w| w as u32))
                    .collect::<Result<Vec<_>, _>>()?;
                self.push_object(line, Body::Words(words))?;
            }
            "stack" => {
                for item in args.split(|c: char| c == ',' || c.is_whitespace()) {
                    if !item.is_empty() {
                        self.stack.push((line, value(line, item)?));
                    }
                }
                if self.stack.len() > MAX_WORDS {
                    return err(line, K::TooLarge("stack"));
                }
            }
            "inst" => {
                let w = int(0, i64::from(u32::MAX))?;
                if self.code.len() >= MAX_WORDS {
                    return err(line, K::TooLarge("code"));
                }
                self.code.push(Code::Raw(w as u32));
            }
            _ => return err(line, K::UnknownDirective(name.to_string())),
        }
        Ok(())
    }

    fn eval(&self, line: usize, e: &Expr, dot: Option<usize>) -> Result<i64, AsmError> {
        let mut sum = 0i64;
        for (neg, atom) in &e.0 {
            let v = match atom {
                Atom::Num(n) => *n,
                Atom::Label(l) => match self.labels.get(l) {
                    Some(&i) => i as i64,
                    None => return err(line, K::UnknownLabel(l.clone())),
                },
                Atom::Dot => match dot {
                    Some(i) => i as i64,
                    None => return err(line, K::BadExpression(".".to_string())),
                },
            };
            sum = if *neg {
                sum.wrapping_sub(v)
            } else {
                sum.wrapping_add(v)
            };
        }
        Ok(sum)
    }

    fn object_named(&self, line: usize, name: &str) -> Result<&Obj, AsmError> {
        match self.names.get(name).and_then(|&i| self.objs.get(i)) {
            Some(o) => Ok(o),
            None => err(line, K::UnknownObject(name.to_string())),
        }
    }

    fn resolve(&self, line: usize, v: &Val) -> Result<Value, AsmError> {
        match v {
            Val::Raw(w) => Ok(Value(*w)),
            Val::Ptr(name) => {
                let o = self.object_named(line, name)?;
                match o.body.tag() {
                    Some(tag) => Ok(Value::boxed(tag, o.offset)),
                    None => err(line, K::UnknownObject(name.clone())),
                }
            }
            Val::Expr(e) => {
                let n = self.eval(line, e, None)?;
                let n = in_range(line, n, i64::from(INT_MIN), i64::from(INT_MAX))?;
                Ok(Value::int(n as i32))
            }
        }
    }

    /// The offset of the first byte array holding `bytes`, appending one if none does.
    fn literal(&mut self, line: usize, bytes: &[u8]) -> Result<u32, AsmError> {
        let found = self.objs.iter().find_map(|o| match &o.body {
            Body::Bytes(b) if b == bytes => Some(o.offset),
            _ => None,
        });
        match found {
            Some(off) => Ok(off),
            None => {
                let off = self.heap_words as u32;
                self.push_object(line, Body::Bytes(bytes.to_vec()))?;
                Ok(off)
            }
        }
    }

    fn immediate(&mut self, pc: usize, line: usize, op: Op, arg: &Arg) -> Result<i64, AsmError> {
        let info = op.info();
        match arg {
            Arg::Str(bytes) => Ok(i64::from(self.literal(line, bytes)?)),
            Arg::Object(name) => Ok(i64::from(self.object_named(line, name)?.offset)),
            Arg::Expr(e) => match (info.imm, e.bare_label()) {
                (Imm::Branch, Some(label)) => {
                    let offset = self.eval(line, e, Some(pc))? - pc as i64;
                    if offset <= 0 {
                        return err(
                            line,
                            K::NotForward {
                                label: label.to_string(),
                                offset,
                            },
                        );
                    }
                    Ok(offset)
                }
                (Imm::Int | Imm::Branch, _) => in_range(
                    line,
                    self.eval(line, e, Some(pc))?,
                    i64::from(INT_MIN),
                    i64::from(INT_MAX),
                ),
                _ => in_range(line, self.eval(line, e, Some(pc))?, 0, i64::from(DATA_MASK)),
            },
        }
    }

    /// Lays out the heap, resolves every name and returns the program.
    pub(super) fn finish(mut self) -> Result<Program, AsmError> {
        let code = core::mem::take(&mut self.code);
        let mut words = Vec::with_capacity(code.len());
        for (pc, c) in code.iter().enumerate() {
            words.push(match c {
                Code::Raw(w) => Word(*w),
                Code::Op { line, op, arg } => {
                    let imm = match arg {
                        Some(a) => self.immediate(pc, *line, *op, a)?,
                        None => 0,
                    };
                    Word::new(*op as u8, imm as i32)
                }
            });
        }
        let mut heap = Vec::with_capacity(self.heap_words);
        for o in &self.objs {
            match &o.body {
                Body::Bytes(b) => {
                    heap.push(frame_header(Tag::Bytes, b.len() as u32));
                    for chunk in b.chunks(4) {
                        let mut w = [0u8; 4];
                        w.iter_mut().zip(chunk).for_each(|(d, s)| *d = *s);
                        heap.push(u32::from_be_bytes(w));
                    }
                }
                Body::Addr(a) => {
                    let (words, n) = crate::value::addr_payload(*a);
                    heap.push(frame_header(Tag::Addr, n as u32));
                    heap.extend_from_slice(words.get(..n).unwrap_or_default());
                }
                Body::Float(bits) => heap.extend([frame_header(Tag::Float, 1), *bits]),
                Body::Wide(x) => {
                    let x = *x as u64;
                    heap.extend([frame_header(Tag::Wide, 2), (x >> 32) as u32, x as u32]);
                }
                Body::Tuple(vals) => {
                    heap.push(frame_header(Tag::Tuple, vals.len() as u32));
                    for v in vals {
                        heap.push(self.resolve(o.line, v)?.0);
                    }
                }
                Body::Words(ws) => heap.extend_from_slice(ws),
            }
        }
        let mut stack = Vec::with_capacity(self.stack.len());
        for (line, v) in &self.stack {
            stack.push(self.resolve(*line, v)?);
        }
        let entry = match &self.entry {
            Some((line, e)) => in_range(*line, self.eval(*line, e, None)?, 0, 0xFFFF)? as u16,
            None => 0,
        };
        let mut program = Program {
            entry,
            code: words,
            heap,
            stack,
            ..self.program
        };
        // One address given: the other is the unspecified address of its family.
        let unspecified = |a: core::net::IpAddr| match a {
            core::net::IpAddr::V4(_) => core::net::Ipv4Addr::UNSPECIFIED.into(),
            core::net::IpAddr::V6(_) => core::net::Ipv6Addr::UNSPECIFIED.into(),
        };
        let (src, dst) = match (self.src, self.dst) {
            (Some((_, s)), Some((_, d))) => (s, d),
            (Some((_, s)), None) => (s, unspecified(s)),
            (None, Some((_, d))) => (unspecified(d), d),
            (None, None) => (program.src_addr(), program.dst_addr()),
        };
        if program.set_addrs(src, dst).is_err() {
            let line = self.src.map_or(0, |s| s.0).max(self.dst.map_or(0, |d| d.0));
            return err(line, K::MixedFamilies);
        }
        Ok(program)
    }
}
