//! The state of one executing packet: its stack (the tail of the packet buffer, executed in
//! place) and its heap (the packet's heap plus a second heap for allocations, §VI.C).

use alloc::vec::Vec;

use super::Fault;
use crate::value::{DATA_MASK, Tag, Value};

/// Encodes a heap object header: the tag and a length (bytes for byte arrays, elements for
/// tuples, payload words otherwise).
pub(crate) const fn header(tag: Tag, len: u32) -> u32 {
    ((tag as u32) << crate::value::DATA_BITS) | (len & DATA_MASK)
}

/// Payload words of an object with this tag and length.
pub(crate) const fn payload_words(tag: Tag, len: u32) -> u32 {
    match tag {
        Tag::Bytes => len.div_ceil(4),
        _ => len,
    }
}

/// A packet's stack and heap as instructions and services see them. Every access is
/// bounds-checked: a bad offset or an empty stack is a [`Fault`], never a panic.
#[derive(Debug)]
pub struct Frame<'a> {
    /// The packet: header, code, heap, then the stack's words (top last).
    pub(crate) buf: &'a mut Vec<u8>,
    /// Byte offset of the packet heap.
    pub(crate) heap_at: usize,
    /// Words of the packet heap.
    pub(crate) heap_words: u32,
    /// Byte offset of the stack's bottom.
    pub(crate) stack_at: usize,
    /// Allocated objects (offsets continue after the packet heap).
    pub(crate) extra: &'a mut Vec<u32>,
    /// Most bytes the buffer may grow to (4 × MTU, or the packet if larger).
    pub(crate) max_len: usize,
    /// Most extra-heap words still allowed (a service call's allowance).
    pub(crate) alloc_left: u32,
    /// Pushes still allowed (a service call's allowance).
    pub(crate) push_left: u32,
    /// Deepest the stack has been.
    pub(crate) max_depth: u32,
    pub(crate) src: [u8; 4],
    pub(crate) port: u16,
}

impl Frame<'_> {
    /// Values on the stack.
    pub fn depth(&self) -> u32 {
        ((self.buf.len() - self.stack_at) / 4) as u32
    }

    /// The computation the packet belongs to: its (source, demux port).
    pub fn computation(&self) -> ([u8; 4], u16) {
        (self.src, self.port)
    }

    /// Pushes `v`.
    ///
    /// # Errors
    ///
    /// [`Fault::BufferLimit`] past the buffer's limit; [`Fault::ServicePush`] past a
    /// service's allowance.
    #[inline]
    pub fn push(&mut self, v: Value) -> Result<(), Fault> {
        if self.push_left == 0 {
            return Err(Fault::ServicePush);
        }
        if self.buf.len() + 4 > self.max_len {
            return Err(Fault::BufferLimit);
        }
        self.buf.extend_from_slice(&v.0.to_be_bytes());
        self.max_depth = self.max_depth.max(self.depth());
        Ok(())
    }

    /// Pops the top value.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] on an empty stack.
    #[inline]
    pub fn pop(&mut self) -> Result<Value, Fault> {
        let v = self.peek(0)?;
        self.buf.truncate(self.buf.len() - 4);
        Ok(v)
    }

    /// `s[n]`.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] if the stack is not that deep.
    #[inline]
    pub fn peek(&self, n: u32) -> Result<Value, Fault> {
        if n >= self.depth() {
            return Err(Fault::StackUnderflow);
        }
        let at = self.buf.len() - 4 * (n as usize + 1);
        match self.buf.get(at..at + 4) {
            Some(&[a, b, c, d]) => Ok(Value(u32::from_be_bytes([a, b, c, d]))),
            _ => Err(Fault::StackUnderflow),
        }
    }

    /// Sets `s[n]`.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] if the stack is not that deep.
    pub fn set(&mut self, n: u32, v: Value) -> Result<(), Fault> {
        if n >= self.depth() {
            return Err(Fault::StackUnderflow);
        }
        let at = self.buf.len() - 4 * (n as usize + 1);
        match self.buf.get_mut(at..at + 4) {
            Some(s) => {
                s.copy_from_slice(&v.0.to_be_bytes());
                Ok(())
            }
            None => Err(Fault::StackUnderflow),
        }
    }

    /// Pops `n` values.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] if there are fewer.
    pub fn drop_n(&mut self, n: u32) -> Result<(), Fault> {
        if n > self.depth() {
            return Err(Fault::StackUnderflow);
        }
        self.buf.truncate(self.buf.len() - 4 * n as usize);
        Ok(())
    }

    /// Heap word `off` (packet heap, then allocated).
    #[inline]
    pub(crate) fn heap_word(&self, off: u32) -> Result<u32, Fault> {
        if off < self.heap_words {
            let at = self.heap_at + 4 * off as usize;
            match self.buf.get(at..at + 4) {
                Some(&[a, b, c, d]) => Ok(u32::from_be_bytes([a, b, c, d])),
                _ => Err(Fault::HeapBounds),
            }
        } else {
            self.extra
                .get((off - self.heap_words) as usize)
                .copied()
                .ok_or(Fault::HeapBounds)
        }
    }

    /// Words in the whole heap.
    pub(crate) fn heap_len(&self) -> u32 {
        self.heap_words + self.extra.len() as u32
    }

    /// The object `v` points to: its header's tag and length and the offset of its payload,
    /// checked to lie inside the heap. The tag is the header's, whatever `v` claims.
    ///
    /// # Errors
    ///
    /// [`Fault::HeapBounds`] or [`Fault::BadObject`].
    pub(crate) fn object(&self, v: Value) -> Result<(Tag, u32, u32), Fault> {
        self.object_at(v.data())
    }

    pub(crate) fn object_at(&self, off: u32) -> Result<(Tag, u32, u32), Fault> {
        let h = Value(self.heap_word(off)?);
        let tag = h.tag().ok_or(Fault::BadObject)?;
        let len = h.data();
        let words = payload_words(tag, len);
        if u64::from(off) + 1 + u64::from(words) > u64::from(self.heap_len()) {
            return Err(Fault::HeapBounds);
        }
        Ok((tag, len, off + 1))
    }

    /// Allocates an object with `tag`, `len` and `payload` words; returns a pointer to it.
    ///
    /// # Errors
    ///
    /// [`Fault::BufferLimit`] or [`Fault::ServiceAlloc`] past the limits.
    pub(crate) fn alloc(&mut self, tag: Tag, len: u32, payload: &[u32]) -> Result<Value, Fault> {
        let words = 1 + payload.len() as u32;
        if words > self.alloc_left {
            return Err(Fault::ServiceAlloc);
        }
        let off = self.heap_len();
        if off + words > DATA_MASK {
            return Err(Fault::BufferLimit);
        }
        if self.buf.len() + 4 * (self.extra.len() + words as usize) > self.max_len {
            return Err(Fault::BufferLimit);
        }
        self.alloc_left -= words;
        self.extra.push(header(tag, len));
        self.extra.extend_from_slice(payload);
        Ok(Value::boxed(tag, off))
    }

    /// Pops a value read as a 64-bit integer (a small or a wide integer; other tags read
    /// their data field).
    ///
    /// # Errors
    ///
    /// As [`pop`](Self::pop), or a bad heap reference.
    pub fn pop_wide(&mut self) -> Result<i64, Fault> {
        let v = self.pop()?;
        self.read_wide(v)
    }

    /// `v` as a 64-bit integer.
    pub(crate) fn read_wide(&self, v: Value) -> Result<i64, Fault> {
        match v.tag() {
            Some(Tag::Wide) => {
                let (_, _, p) = self.object(v)?;
                let hi = self.heap_word(p)?;
                let lo = self.heap_word(p + 1)?;
                Ok(((u64::from(hi) << 32) | u64::from(lo)) as i64)
            }
            _ => Ok(i64::from(v.as_int())),
        }
    }

    /// Boxes a 64-bit integer.
    ///
    /// # Errors
    ///
    /// As [`alloc`](Self::alloc).
    pub fn alloc_wide(&mut self, x: i64) -> Result<Value, Fault> {
        let x = x as u64;
        self.alloc(Tag::Wide, 2, &[(x >> 32) as u32, x as u32])
    }

    /// The one-word payload of a boxed address or float (0 for anything else).
    pub(crate) fn word_of(&self, v: Value, want: Tag) -> Result<u32, Fault> {
        if v.tag() != Some(want) {
            return Ok(0);
        }
        let (_, _, p) = self.object(v)?;
        self.heap_word(p)
    }
}
