//! Building child packets (paper §VI.D) and deliveries.
//!
//! A child gets the whole code, the top `s` stack values, the heap objects reachable from
//! them (and from the code's heap immediates), and some resource bound. Three ways, fastest
//! first: `forw`/`forwto` with nothing allocated reuse the buffer (only header fields
//! change); a send with nothing allocated copies the heap and the stack slice as they are;
//! otherwise a copying collection (Cheney) moves the reachable objects into a fresh heap
//! and rewrites every offset, in the stack, the heap and the code.

use alloc::vec;
use alloc::vec::Vec;

use super::frame::{Frame, payload_words};
use super::{Delivered, Fault};
use crate::op::{Imm, Op};
use crate::value::{DATA_MASK, Tag, Value, Word};
use crate::wire::{HEADER_LEN, HeaderRepr};

/// How deep a delivered tuple may nest (heaps from the network may even hold cycles).
const MAX_NESTING: u32 = 8;

/// Fields of the child's header.
pub(crate) struct ChildHeader {
    pub(crate) src: [u8; 4],
    pub(crate) dst: [u8; 4],
    pub(crate) port: u16,
    pub(crate) rb: u16,
    pub(crate) entry: u16,
}

/// Builds a child packet from the top `s` values of `frame`'s stack.
pub(crate) fn child(
    frame: &Frame<'_>,
    code_words: u16,
    s: u32,
    h: &ChildHeader,
) -> Result<Vec<u8>, Fault> {
    if s > frame.depth() {
        return Err(Fault::StackUnderflow);
    }
    let code_at = HEADER_LEN;
    let code_end = frame.heap_at;
    let stack_end = frame.buf.len();
    let stack_from = stack_end - 4 * s as usize;
    if frame.extra.is_empty() {
        // Nothing allocated: heap offsets are unchanged; copy heap and stack slice.
        let heap = frame
            .buf
            .get(frame.heap_at..frame.stack_at)
            .ok_or(Fault::HeapBounds)?;
        let stack = frame
            .buf
            .get(stack_from..stack_end)
            .ok_or(Fault::StackUnderflow)?;
        let code = frame.buf.get(code_at..code_end).ok_or(Fault::HeapBounds)?;
        return assemble(
            h,
            code_words,
            code,
            heap,
            stack,
            frame.heap_words as u16,
            s as u16,
        );
    }
    // Copying collection from the roots: the child's stack and the code's heap immediates.
    let total = frame.heap_len() as usize;
    let mut gc = Gc {
        frame,
        forward: vec![u32::MAX; total],
        heap: Vec::new(),
    };
    let mut stack = Vec::with_capacity(4 * s as usize);
    for i in (0..s).rev() {
        let v = gc.relocate(frame.peek(i)?)?;
        stack.extend_from_slice(&v.0.to_be_bytes());
    }
    let mut code = frame
        .buf
        .get(code_at..code_end)
        .ok_or(Fault::HeapBounds)?
        .to_vec();
    for w in code.chunks_exact_mut(4) {
        let word = Word(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
        let Some(op) = Op::from_code(word.opcode()) else {
            continue;
        };
        if op.info().imm == Imm::Heap {
            // A code reference to nothing valid stays invalid in the child.
            let new = gc.relocate_offset(word.uimm()).unwrap_or(DATA_MASK);
            w.copy_from_slice(&Word::new(word.opcode(), new as i32).0.to_be_bytes());
        }
    }
    gc.scan()?;
    if gc.heap.len() > usize::from(u16::MAX) {
        return Err(Fault::BufferLimit);
    }
    let heap: Vec<u8> = gc.heap.iter().flat_map(|w| w.to_be_bytes()).collect();
    let heap_words = gc.heap.len() as u16;
    assemble(h, code_words, &code, &heap, &stack, heap_words, s as u16)
}

fn assemble(
    h: &ChildHeader,
    code_words: u16,
    code: &[u8],
    heap: &[u8],
    stack: &[u8],
    heap_words: u16,
    stack_words: u16,
) -> Result<Vec<u8>, Fault> {
    let repr = HeaderRepr {
        src: h.src,
        dst: h.dst,
        port: h.port,
        rb: h.rb,
        entry: h.entry,
        code_len: code_words,
        heap_len: heap_words,
        stack_len: stack_words,
        little_endian: false,
    };
    let mut out = Vec::with_capacity(repr.packet_len());
    out.resize(HEADER_LEN, 0);
    repr.emit(&mut out).map_err(|_| Fault::BufferLimit)?;
    out.extend_from_slice(code);
    out.extend_from_slice(heap);
    out.extend_from_slice(stack);
    Ok(out)
}

struct Gc<'f, 'a> {
    frame: &'f Frame<'a>,
    /// New offset of each old object start (u32::MAX: not copied yet).
    forward: Vec<u32>,
    heap: Vec<u32>,
}

impl Gc<'_, '_> {
    fn relocate(&mut self, v: Value) -> Result<Value, Fault> {
        match v.tag() {
            Some(t) if t.boxed() => Ok(Value::boxed(t, self.relocate_offset(v.data())?)),
            _ => Ok(v),
        }
    }

    fn relocate_offset(&mut self, off: u32) -> Result<u32, Fault> {
        let slot = self
            .forward
            .get(off as usize)
            .copied()
            .ok_or(Fault::HeapBounds)?;
        if slot != u32::MAX {
            return Ok(slot);
        }
        let (tag, len, payload) = self.frame.object_at(off)?;
        let new = self.heap.len() as u32;
        if let Some(f) = self.forward.get_mut(off as usize) {
            *f = new;
        }
        self.heap.push(super::frame::header(tag, len));
        for i in 0..payload_words(tag, len) {
            self.heap.push(self.frame.heap_word(payload + i)?);
        }
        Ok(new)
    }

    /// Relocates the values inside copied tuples, breadth first.
    fn scan(&mut self) -> Result<(), Fault> {
        let mut i = 0;
        while let Some(&h) = self.heap.get(i) {
            let hv = Value(h);
            let tag = hv.tag().ok_or(Fault::BadObject)?;
            let words = payload_words(tag, hv.data()) as usize;
            if tag == Tag::Tuple {
                for j in i + 1..=i + words {
                    let old = Value(self.heap.get(j).copied().ok_or(Fault::HeapBounds)?);
                    let new = self.relocate(old)?;
                    if let Some(slot) = self.heap.get_mut(j) {
                        *slot = new.0;
                    }
                }
            }
            i += 1 + words;
        }
        Ok(())
    }
}

/// The value `v` as delivered to an application.
pub(crate) fn deliver(frame: &Frame<'_>, v: Value, nesting: u32) -> Result<Delivered, Fault> {
    if nesting > MAX_NESTING {
        return Err(Fault::BadObject);
    }
    Ok(match v.tag() {
        Some(Tag::Int) | None => Delivered::Int(v.as_int()),
        Some(Tag::Addr) => Delivered::Addr(frame.word_of(v, Tag::Addr)?.to_be_bytes()),
        Some(Tag::Float) => Delivered::Float(f32::from_bits(frame.word_of(v, Tag::Float)?)),
        Some(Tag::Wide) => Delivered::Wide(frame.read_wide(v)?),
        Some(Tag::Bytes) => {
            let (_, len, p) = frame.object(v)?;
            let mut out = Vec::with_capacity(len as usize);
            for i in 0..payload_words(Tag::Bytes, len) {
                out.extend_from_slice(&frame.heap_word(p + i)?.to_be_bytes());
            }
            out.truncate(len as usize);
            Delivered::Bytes(out)
        }
        Some(Tag::Tuple) => {
            let (_, len, p) = frame.object(v)?;
            let mut out = Vec::with_capacity(len as usize);
            for i in 0..len {
                out.push(deliver(frame, Value(frame.heap_word(p + i)?), nesting + 1)?);
            }
            Delivered::Tuple(out)
        }
    })
}
