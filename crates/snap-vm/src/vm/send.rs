//! Building child packets (paper §VI.D) and deliveries.
//!
//! A child gets the whole code, the top `s` stack values, the heap objects reachable from
//! them (and from the code's heap immediates), and some resource bound. Four ways, fastest
//! first: `forw`/`forwto` with nothing allocated reuse the buffer (only header fields
//! change); `forw`/`forwto` whose collection would give back the packet heap unchanged
//! ([`heap_unchanged`]) reuse it too, with the child's fresh header; a send with nothing
//! allocated copies the heap and the stack slice as they are; otherwise a copying
//! collection (Cheney) moves the reachable objects into a fresh heap and rewrites every
//! offset, in the stack, the heap and the code. Built children go into the VM's spare
//! buffer (one a packet that stayed at the node left behind), written in packet order.

use alloc::vec::Vec;
use core::net::IpAddr;

use super::frame::{Frame, payload_words};
use super::{Delivered, Fault};
use crate::op::{Imm, Op};
use crate::value::{DATA_BITS, DATA_MASK, Tag, Value, Word};
use crate::wire::HeaderRepr;

/// How deep a delivered tuple may nest (heaps from the network may even hold cycles).
const MAX_NESTING: u32 = 8;

/// Fields of the child's header.
pub(crate) struct ChildHeader {
    pub(crate) src: IpAddr,
    /// Of the source's family (the VM sends to no other).
    pub(crate) dst: IpAddr,
    pub(crate) port: u16,
    pub(crate) rb: u16,
    pub(crate) entry: u16,
}

/// Whether an opcode's immediate is a heap offset (the child's code is relocated there).
const HEAP_IMM: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        if let Some(op) = Op::from_code(b as u8) {
            t[b] = matches!(op.info().imm, Imm::Heap);
        }
        b += 1;
    }
    t
};

/// [`HEAP_IMM`] over the 7-bit opcode field of a word (`word >> DATA_BITS`), so a lookup
/// needs no bounds check.
const HEAP_IMM_7: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = HEAP_IMM[b];
        b += 1;
    }
    t
};

/// Builds a child packet from the top `s` values of `frame`'s stack.
///
/// The child is written into the frame's spare buffer (a buffer an earlier packet left at
/// this node, so a turnaround allocates nothing once the node has seen a packet that size);
/// the copying collection writes the heap in packet order straight into it.
pub(crate) fn child(frame: &mut Frame<'_>, s: u32, h: &ChildHeader) -> Result<Vec<u8>, Fault> {
    let mut out = core::mem::take(frame.spare);
    out.clear();
    let mut forward = core::mem::take(frame.forward);
    let r = build_child(frame, s, h, &mut out, &mut forward);
    *frame.forward = forward;
    r.map(|()| out)
}

fn build_child(
    frame: &Frame<'_>,
    s: u32,
    h: &ChildHeader,
    out: &mut Vec<u8>,
    forward: &mut Vec<u32>,
) -> Result<(), Fault> {
    let depth = frame.stack.len();
    let from = depth.checked_sub(s as usize).ok_or(Fault::StackUnderflow)?;
    let top = frame.stack.get(from..).ok_or(Fault::StackUnderflow)?;
    let code_words = frame.code.len() as u16;
    let mut repr = HeaderRepr {
        src: h.src,
        dst: h.dst,
        port: h.port,
        rb: h.rb,
        entry: h.entry,
        code_len: code_words,
        heap_len: frame.heap.len() as u16,
        stack_len: top.len() as u16,
        little_endian: false,
    };
    let header_len = repr.header_len();
    out.reserve(header_len + 4 * (frame.code.len() + frame.heap.len() + top.len()));
    out.resize(header_len, 0);
    out.extend_from_slice(frame.code.as_flattened());
    if frame.extra.is_empty() {
        // Nothing allocated: heap offsets are unchanged; copy heap and stack slice.
        out.extend_from_slice(frame.heap.as_flattened());
        put_words(out, top);
    } else {
        // Copying collection from the roots: the child's stack and the code's heap
        // immediates, in that order; the new heap goes straight after the code.
        forward.clear();
        forward.resize(frame.heap_len() as usize, u32::MAX);
        let heap_at = out.len();
        let mut gc = Gc {
            frame,
            forward,
            out,
            heap_at,
            words: 0,
        };
        for &v in top {
            gc.relocate(Value(v))?;
        }
        for (i, w) in frame.code.iter().enumerate() {
            let word = Word(u32::from_be_bytes(*w));
            if HEAP_IMM.get(usize::from(word.opcode())) == Some(&true) {
                // A code reference to nothing valid stays invalid in the child.
                let new = gc.relocate_offset(word.uimm()).unwrap_or(DATA_MASK);
                let at = header_len + 4 * i;
                if let Some(slot) = gc.out.get_mut(at..at + 4) {
                    slot.copy_from_slice(&Word::new(word.opcode(), new as i32).0.to_be_bytes());
                }
            }
        }
        gc.scan()?;
        if gc.words > usize::from(u16::MAX) {
            return Err(Fault::BufferLimit);
        }
        repr.heap_len = gc.words as u16;
        // The stack's values again: every object they reach is copied by now, so this
        // only looks up the forwarding table (and maps dangling pointers as before).
        for &v in top {
            let new = gc.relocate(Value(v))?;
            gc.out.extend_from_slice(&new.0.to_be_bytes());
        }
    }
    if out.len() > frame.max_len {
        return Err(Fault::BufferLimit);
    }
    repr.emit(out).map_err(|_| Fault::AddressFamily)?;
    Ok(())
}

/// Whether the copying collection of a child taking the whole stack would give back the
/// packet's heap word for word, so that the child is the packet itself with its new stack
/// and header and may leave in the packet's own buffer (Fig. 1's turnaround: `getsrc`
/// allocated an address that `forwto` popped; only the payload is reachable).
///
/// Checked conservatively, for the common shape: the packet heap is one object that is not
/// a tuple and fills it exactly; every boxed root (a stack value, a code heap immediate)
/// points at that object, and at least one does. Any other heap takes the collection.
pub(crate) fn heap_unchanged(frame: &Frame<'_>) -> bool {
    let Some(first) = frame.heap.first() else {
        return false;
    };
    // The object at offset 0, read straight from the packet heap (that it fills the heap
    // exactly, below, is the bounds check `Frame::object_at` would make).
    let h = Value(u32::from_be_bytes(*first));
    let Some(tag) = h.tag() else {
        return false;
    };
    let len = h.data();
    if tag == Tag::Tuple
        || 1 + payload_words(tag, len) as usize != frame.heap.len()
        || super::frame::header(tag, len) != u32::from_be_bytes(*first)
    {
        return false;
    }
    let mut reached = false;
    for &v in frame.stack.iter() {
        let v = Value(v);
        if v.is_boxed() {
            if v.data() != 0 {
                return false;
            }
            reached = true;
        }
    }
    for w in frame.code {
        // The opcode is the first byte's top 7 bits (`word >> DATA_BITS`).
        if HEAP_IMM_7[usize::from(w[0] >> (DATA_BITS - 24))] {
            if u32::from_be_bytes(*w) & DATA_MASK != 0 {
                return false;
            }
            reached = true;
        }
    }
    reached
}

/// Appends native words in packet (big-endian) order.
fn put_words(out: &mut Vec<u8>, words: &[u32]) {
    let at = out.len();
    out.resize(at + 4 * words.len(), 0);
    if let Some(tail) = out.get_mut(at..) {
        for (dst, w) in tail.as_chunks_mut::<4>().0.iter_mut().zip(words) {
            *dst = w.to_be_bytes();
        }
    }
}

struct Gc<'f, 'a> {
    frame: &'f Frame<'a>,
    /// New offset of each old object start (u32::MAX: not copied yet).
    forward: &'f mut Vec<u32>,
    /// The child being built: its new heap starts at `heap_at`, in packet byte order.
    out: &'f mut Vec<u8>,
    heap_at: usize,
    /// Words in the new heap.
    words: usize,
}

impl Gc<'_, '_> {
    fn relocate(&mut self, v: Value) -> Result<Value, Fault> {
        match v.tag() {
            Some(t) if t.boxed() => match self.relocate_offset(v.data()) {
                Ok(new) => Ok(Value::boxed(t, new)),
                // A value pointing at nothing stays pointing at nothing (as it would had
                // nothing been allocated and the heap been copied as it is).
                Err(Fault::HeapBounds | Fault::BadObject) => Ok(Value::boxed(t, DATA_MASK)),
                Err(e) => Err(e),
            },
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
        let (p, w) = (payload as usize, payload_words(tag, len) as usize);
        // Objects a hostile heap overlaps would be copied once per start offset: the child's
        // heap may not grow past twice the parent's, which bounds the copy linearly (§IV.A).
        if self.words + 1 + w > 2 * self.forward.len() {
            return Err(Fault::BufferLimit);
        }
        let new = self.words as u32;
        if let Some(f) = self.forward.get_mut(off as usize) {
            *f = new;
        }
        self.out
            .extend_from_slice(&super::frame::header(tag, len).to_be_bytes());
        match self.frame.heap.get(p..p + w) {
            Some(words) => self.out.extend_from_slice(words.as_flattened()),
            None => {
                for i in 0..w as u32 {
                    let x = self.frame.heap_word(payload + i)?;
                    self.out.extend_from_slice(&x.to_be_bytes());
                }
            }
        }
        self.words += 1 + w;
        Ok(new)
    }

    /// Word `i` of the new heap.
    fn word(&self, i: usize) -> Option<u32> {
        let at = self.heap_at + 4 * i;
        self.out
            .get(at..at + 4)
            .and_then(|b| b.first_chunk::<4>())
            .map(|b| u32::from_be_bytes(*b))
    }

    /// Relocates the values inside copied tuples, breadth first.
    fn scan(&mut self) -> Result<(), Fault> {
        let mut i = 0;
        while let Some(h) = self.word(i) {
            let hv = Value(h);
            let tag = hv.tag().ok_or(Fault::BadObject)?;
            let words = payload_words(tag, hv.data()) as usize;
            if tag == Tag::Tuple {
                for j in i + 1..=i + words {
                    let old = Value(self.word(j).ok_or(Fault::HeapBounds)?);
                    let new = self.relocate(old)?;
                    let at = self.heap_at + 4 * j;
                    if let Some(slot) = self.out.get_mut(at..at + 4) {
                        slot.copy_from_slice(&new.0.to_be_bytes());
                    }
                }
            }
            i += 1 + words;
        }
        Ok(())
    }
}

/// The value `v` as delivered to an application. `budget` counts down the values it may
/// still produce: a heap that shares a tuple along many paths would otherwise deliver
/// exponentially many; the caller gives a budget linear in the heap.
pub(crate) fn deliver(
    frame: &Frame<'_>,
    v: Value,
    nesting: u32,
    budget: &mut u32,
) -> Result<Delivered, Fault> {
    if nesting > MAX_NESTING || *budget == 0 {
        return Err(Fault::BadObject);
    }
    *budget -= 1;
    Ok(match v.tag() {
        Some(Tag::Int) | None => Delivered::Int(v.as_int()),
        Some(Tag::Addr) => match frame.addr_of(v)? {
            IpAddr::V4(a) => Delivered::Addr(a.octets()),
            IpAddr::V6(a) => Delivered::Addr6(a.octets()),
        },
        Some(Tag::Float) => Delivered::Float(f32::from_bits(frame.word_of(v, Tag::Float)?)),
        Some(Tag::Wide) => Delivered::Wide(frame.read_wide(v)?),
        Some(Tag::Bytes) => {
            let (_, len, p) = frame.object(v)?;
            let words = payload_words(Tag::Bytes, len) as usize;
            let mut out = Vec::with_capacity(4 * words);
            match frame.heap.get(p as usize..p as usize + words) {
                Some(ws) => out.extend_from_slice(ws.as_flattened()),
                None => {
                    for i in 0..words as u32 {
                        out.extend_from_slice(&frame.heap_word(p + i)?.to_be_bytes());
                    }
                }
            }
            out.truncate(len as usize);
            Delivered::Bytes(out)
        }
        Some(Tag::Tuple) => {
            let (_, len, p) = frame.object(v)?;
            let mut out = Vec::with_capacity(len as usize);
            for i in 0..len {
                out.push(deliver(
                    frame,
                    Value(frame.heap_word(p + i)?),
                    nesting + 1,
                    budget,
                )?);
            }
            Delivered::Tuple(out)
        }
    })
}
