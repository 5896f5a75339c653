//! The disassembler: a program back to text the assembler reads to the same program.
//!
//! Branch targets get labels `L<index>`; heap objects become directives named `h<offset>`;
//! heap words that do not read as an object the directives can rebuild exactly become
//! `.word`s, and instruction words with unknown opcodes `.inst`s, so the round trip holds
//! for every program.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::op::{Imm, Op};
use crate::program::Program;
use crate::value::{Tag, Value, Word};
use crate::vm::payload_words_of;

/// How the heap reads: objects by offset (tag, length), and words that are not objects.
struct Layout {
    objects: BTreeMap<u32, (Tag, u32)>,
}

impl Layout {
    fn of(heap: &[u32]) -> Layout {
        let mut objects = BTreeMap::new();
        let mut off = 0usize;
        while let Some(&h) = heap.get(off) {
            let h = Value(h);
            let len = h.data();
            let fits = |tag| {
                let end = off + 1 + payload_words_of(tag, len) as usize;
                (end <= heap.len()).then(|| heap.get(off + 1..end).unwrap_or(&[]))
            };
            let ok = match h.tag() {
                Some(tag @ (Tag::Addr | Tag::Float)) if len == 1 => fits(tag).is_some_and(|p| {
                    tag == Tag::Addr || p.first().is_some_and(|&b| float_round_trips(b))
                }),
                Some(Tag::Addr) => len == crate::value::ADDR6_WORDS && fits(Tag::Addr).is_some(),
                Some(Tag::Wide) => len == 2 && fits(Tag::Wide).is_some(),
                Some(Tag::Tuple) => fits(Tag::Tuple).is_some(),
                Some(Tag::Bytes) => fits(Tag::Bytes).is_some_and(|p| {
                    // Padding past the length must be zero for `.bytes` to rebuild it.
                    let pad = (4 - len as usize % 4) % 4;
                    p.last()
                        .is_none_or(|&w| pad == 0 || w & ((1u32 << (8 * pad)) - 1) == 0)
                }),
                _ => false,
            };
            match h.tag() {
                Some(tag) if ok => {
                    objects.insert(off as u32, (tag, len));
                    off += 1 + payload_words_of(tag, len) as usize;
                }
                _ => off += 1,
            }
        }
        Layout { objects }
    }

    /// `v` as assembler text.
    fn value(&self, v: Value) -> String {
        match v.tag() {
            Some(Tag::Int) => alloc::format!("{}", v.as_int()),
            Some(tag) if self.objects.get(&v.data()).is_some_and(|o| o.0 == tag) => {
                alloc::format!("@h{}", v.data())
            }
            _ => alloc::format!("word:{:#010x}", v.0),
        }
    }
}

fn float_round_trips(bits: u32) -> bool {
    let text = alloc::format!("{}", f32::from_bits(bits));
    text.parse::<f32>().is_ok_and(|x| x.to_bits() == bits)
}

/// `bytes` as a literal: a string if every byte is printable ASCII, else hex.
pub(crate) fn bytes_literal(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    if bytes.iter().all(|b| (0x20..0x7F).contains(b)) {
        s.push('"');
        for &b in bytes {
            if b == b'"' || b == b'\\' {
                s.push('\\');
            }
            s.push(char::from(b));
        }
        s.push('"');
    } else {
        s.push_str("0x");
        for b in bytes {
            let _ = write!(s, "{b:02x}");
        }
    }
    s
}

fn object_bytes(heap: &[u32], off: u32, len: u32) -> Vec<u8> {
    let start = off as usize + 1;
    let words = heap
        .get(start..start + payload_words_of(Tag::Bytes, len) as usize)
        .unwrap_or(&[]);
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    out.truncate(len as usize);
    out
}

/// One instruction as assembler text, its immediate raw (no labels or names), e.g.
/// `bne 5` or `pushh 0`; unknown opcodes as `.inst 0x…`.
pub fn instruction(word: Word) -> String {
    match Op::from_code(word.opcode()) {
        None => alloc::format!(".inst {:#010x}", word.0),
        Some(op) => match op.info().imm {
            Imm::None if word.uimm() == 0 => String::from(op.info().name),
            Imm::Int | Imm::Branch => alloc::format!("{} {}", op.info().name, word.imm()),
            _ => alloc::format!("{} {}", op.info().name, word.uimm()),
        },
    }
}

/// Disassembles `program` into text that [`assemble`](super::assemble) turns back into
/// the same program.
pub fn disassemble(program: &Program) -> String {
    let layout = Layout::of(&program.heap);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "; SNAP program: {} instructions, {} heap words, {} stack values",
        program.code.len(),
        program.heap.len(),
        program.stack.len()
    );
    let _ = writeln!(
        s,
        ".src {}\n.dst {}",
        program.src_addr(),
        program.dst_addr()
    );
    let _ = writeln!(
        s,
        ".port {}\n.rb {}\n.entry {}",
        program.port, program.rb, program.entry
    );
    heap(&mut s, program, &layout);
    if !program.stack.is_empty() {
        let vals: Vec<String> = program.stack.iter().map(|&v| layout.value(v)).collect();
        let _ = writeln!(s, ".stack {}  ; bottom first", vals.join(" "));
    }
    code(&mut s, program, &layout);
    s
}

fn heap(s: &mut String, program: &Program, layout: &Layout) {
    let mut off = 0usize;
    while let Some(&h) = program.heap.get(off) {
        let Some(&(tag, len)) = layout.objects.get(&(off as u32)) else {
            let _ = writeln!(s, ".word {h:#010x}");
            off += 1;
            continue;
        };
        let payload = |i: usize| program.heap.get(off + 1 + i).copied().unwrap_or(0);
        let _ = match tag {
            Tag::Bytes => {
                let b = object_bytes(&program.heap, off as u32, len);
                writeln!(s, ".bytes h{off} {}", bytes_literal(&b))
            }
            Tag::Addr => {
                let words = [payload(0), payload(1), payload(2), payload(3)];
                let n = if len == crate::value::ADDR6_WORDS {
                    4
                } else {
                    1
                };
                let a = crate::value::addr_of_payload(words.get(..n).unwrap_or_default());
                match a {
                    Some(a) => writeln!(s, ".addr h{off} {a}"),
                    None => writeln!(s, ".word {h:#010x}"),
                }
            }
            Tag::Float => writeln!(s, ".float h{off} {}", f32::from_bits(payload(0))),
            Tag::Wide => writeln!(
                s,
                ".wide h{off} {}",
                ((u64::from(payload(0)) << 32) | u64::from(payload(1))) as i64
            ),
            Tag::Tuple => {
                let vals: Vec<String> = (0..len as usize)
                    .map(|i| layout.value(Value(payload(i))))
                    .collect();
                writeln!(s, ".tuple h{off} ({})", vals.join(", "))
            }
            Tag::Int => Ok(()),
        };
        off += 1 + payload_words_of(tag, len) as usize;
    }
}

/// The first byte array in the heap holding `bytes` (what `calls "…"` resolves to).
fn first_bytes(program: &Program, layout: &Layout, bytes: &[u8]) -> Option<u32> {
    layout
        .objects
        .iter()
        .find(|(off, (tag, len))| {
            *tag == Tag::Bytes && object_bytes(&program.heap, **off, *len) == bytes
        })
        .map(|(off, _)| *off)
}

fn code(s: &mut String, program: &Program, layout: &Layout) {
    let len = program.code.len();
    let target = |pc: usize, w: Word| -> Option<usize> {
        let op = Op::from_code(w.opcode())?;
        let t = pc as i64 + i64::from(w.imm());
        (op.info().imm == Imm::Branch && w.imm() > 0 && t <= len as i64).then_some(t as usize)
    };
    let labels: Vec<usize> = {
        let mut t: Vec<usize> = (0..len)
            .filter_map(|pc| target(pc, *program.code.get(pc)?))
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    for (pc, &w) in program.code.iter().enumerate() {
        if labels.binary_search(&pc).is_ok() {
            let _ = writeln!(s, "L{pc}:");
        }
        let text = match Op::from_code(w.opcode()) {
            Some(op) if op.info().imm == Imm::Branch && target(pc, w).is_some() => {
                alloc::format!("{} L{}", op.info().name, pc as i64 + i64::from(w.imm()))
            }
            Some(op) if op.info().imm == Imm::Heap => {
                let (tag, len) = layout
                    .objects
                    .get(&w.uimm())
                    .copied()
                    .unwrap_or((Tag::Int, 0));
                let by_name = (tag == Tag::Bytes && op == Op::Calls)
                    .then(|| object_bytes(&program.heap, w.uimm(), len))
                    .filter(|b| first_bytes(program, layout, b) == Some(w.uimm()))
                    .filter(|b| b.iter().all(|c| (0x20..0x7F).contains(c)));
                match by_name {
                    Some(b) => alloc::format!("{} {}", op.info().name, bytes_literal(&b)),
                    None if layout.objects.contains_key(&w.uimm()) => {
                        alloc::format!("{} @h{}", op.info().name, w.uimm())
                    }
                    None => instruction(w),
                }
            }
            Some(op) if op.info().imm == Imm::Tag => match Tag::from_code(w.uimm() as u8) {
                Some(t) if w.uimm() < 128 => alloc::format!("{} {}", op.info().name, t.name()),
                _ => instruction(w),
            },
            _ => instruction(w),
        };
        let _ = writeln!(s, "    {text:<24}; {pc}");
    }
    if labels.binary_search(&len).is_ok() {
        let _ = writeln!(s, "L{len}:");
    }
}

/// A one-line summary of a packet: addresses, port, resource bound, entry instruction, sizes
/// and the stack (bottom first, at most its top eight values).
pub fn summary(program: &Program) -> String {
    let layout = Layout::of(&program.heap);
    let entry = program
        .code
        .get(usize::from(program.entry))
        .map_or_else(|| String::from("outside the code"), |&w| instruction(w));
    let skip = program.stack.len().saturating_sub(8);
    let mut stack: Vec<String> = program
        .stack
        .iter()
        .skip(skip)
        .map(|&v| layout.value(v))
        .collect();
    if skip > 0 {
        stack.insert(0, String::from("…"));
    }
    alloc::format!(
        "{} → {} port {} rb {} entry {} ({}), {} instructions, {} heap words, stack [{}]",
        program.src_addr(),
        program.dst_addr(),
        program.port,
        program.rb,
        program.entry,
        entry,
        program.code.len(),
        program.heap.len(),
        stack.join(" ")
    )
}
