//! The state of one executing packet: its stack (the tail of the packet buffer, executed in
//! place) and its heap (the packet's heap plus a second heap for allocations, §VI.C).

use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr};

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
///
/// The packet itself is only read while it runs: code and heap in place, words decoded as
/// they are used. The stack is worked on in a native scratch stack (loaded from the packet
/// on arrival — a few words — and written back only if a packet leaving with it changed it),
/// and allocations go to a second heap whose offsets continue after the packet's (§VI.C).
#[derive(Debug)]
pub struct Frame<'a> {
    /// The packet's code words.
    pub(crate) code: &'a [[u8; 4]],
    /// The packet's heap words.
    pub(crate) heap: &'a [[u8; 4]],
    /// The working stack, bottom first.
    pub(crate) stack: &'a mut Vec<u32>,
    /// Most values the stack may hold.
    pub(crate) stack_limit: usize,
    /// Whether the stack differs from the packet's.
    pub(crate) dirty: bool,
    /// Allocated objects (offsets continue after the packet heap).
    pub(crate) extra: &'a mut Vec<u32>,
    /// Most allocated words allowed.
    pub(crate) extra_limit: usize,
    /// Deepest the stack has been.
    pub(crate) max_depth: u32,
    /// Bytes of the packet as it arrived.
    pub(crate) packet_len: usize,
    /// Most bytes a packet it sends may have: 4 × MTU, or its own length if larger.
    pub(crate) max_len: usize,
    /// The packet's source (its family is the packet's).
    pub(crate) src: IpAddr,
    pub(crate) port: u16,
    /// A buffer to build the next child in (the node's, reused across packets).
    pub(crate) spare: &'a mut Vec<u8>,
    /// The copying collection's forwarding table (the node's, reused across packets).
    pub(crate) forward: &'a mut Vec<u32>,
}

/// A VM's reusable working space: the scratch stack, the allocation heap, a spare buffer
/// for building children in and the copying collection's forwarding table. A node keeps one
/// across executions so the common paths allocate nothing.
#[derive(Debug, Default)]
pub struct Scratch {
    /// The working stack, bottom first.
    pub(crate) stack: Vec<u32>,
    /// Allocated objects.
    pub(crate) extra: Vec<u32>,
    /// A buffer a packet left here, for the next child.
    pub(crate) spare: Vec<u8>,
    /// The copying collection's forwarding table.
    pub(crate) forward: Vec<u32>,
}

impl Scratch {
    /// Empty working space (allocates nothing until used).
    pub fn new() -> Scratch {
        Scratch::default()
    }
}

/// How large one execution's stack and heap may grow, and the buffer it may send.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameLimits {
    /// Most values the stack may hold.
    pub(crate) stack: usize,
    /// Most words it may allocate.
    pub(crate) extra: usize,
    /// Most bytes a packet it sends may have.
    pub(crate) max_len: usize,
}

impl<'a> Frame<'a> {
    /// A frame over `code` and `heap` working in `scratch`, whose stack already holds the
    /// initial values (the allocation heap is cleared). `packet_len` is what `getlen` reads;
    /// `src` and `port` name the computation.
    pub(crate) fn new(
        code: &'a [[u8; 4]],
        heap: &'a [[u8; 4]],
        scratch: &'a mut Scratch,
        limits: FrameLimits,
        packet_len: usize,
        src: IpAddr,
        port: u16,
    ) -> Frame<'a> {
        scratch.extra.clear();
        let Scratch {
            stack,
            extra,
            spare,
            forward,
        } = scratch;
        Frame {
            code,
            heap,
            stack_limit: limits.stack,
            dirty: false,
            extra_limit: limits.extra,
            max_len: limits.max_len,
            max_depth: stack.len() as u32,
            packet_len,
            stack,
            extra,
            src,
            port,
            spare,
            forward,
        }
    }
}

impl Frame<'_> {
    /// Values on the stack.
    #[inline]
    pub fn depth(&self) -> u32 {
        self.stack.len() as u32
    }

    /// The computation the packet belongs to: its (source, demux port).
    pub fn computation(&self) -> (IpAddr, u16) {
        (self.src, self.port)
    }

    /// Pushes `v`.
    ///
    /// # Errors
    ///
    /// [`Fault::BufferLimit`] past the stack's limit.
    #[inline]
    pub fn push(&mut self, v: Value) -> Result<(), Fault> {
        if self.stack.len() >= self.stack_limit {
            return Err(Fault::BufferLimit);
        }
        self.stack.push(v.0);
        self.dirty = true;
        self.max_depth = self.max_depth.max(self.stack.len() as u32);
        Ok(())
    }

    /// Pops the top value.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] on an empty stack.
    #[inline]
    pub fn pop(&mut self) -> Result<Value, Fault> {
        self.dirty = true;
        self.stack.pop().map(Value).ok_or(Fault::StackUnderflow)
    }

    /// `s[n]`.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] if the stack is not that deep.
    #[inline]
    pub fn peek(&self, n: u32) -> Result<Value, Fault> {
        let i = self
            .stack
            .len()
            .checked_sub(n as usize + 1)
            .ok_or(Fault::StackUnderflow)?;
        self.stack
            .get(i)
            .copied()
            .map(Value)
            .ok_or(Fault::StackUnderflow)
    }

    /// Sets `s[n]`.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] if the stack is not that deep.
    pub fn set(&mut self, n: u32, v: Value) -> Result<(), Fault> {
        let i = self
            .stack
            .len()
            .checked_sub(n as usize + 1)
            .ok_or(Fault::StackUnderflow)?;
        let slot = self.stack.get_mut(i).ok_or(Fault::StackUnderflow)?;
        *slot = v.0;
        self.dirty = true;
        Ok(())
    }

    /// Pops `n` values.
    ///
    /// # Errors
    ///
    /// [`Fault::StackUnderflow`] if there are fewer.
    pub fn drop_n(&mut self, n: u32) -> Result<(), Fault> {
        let keep = self
            .stack
            .len()
            .checked_sub(n as usize)
            .ok_or(Fault::StackUnderflow)?;
        self.stack.truncate(keep);
        self.dirty = true;
        Ok(())
    }

    /// The packet heap's length in words.
    #[inline]
    pub(crate) fn heap_words(&self) -> u32 {
        self.heap.len() as u32
    }

    /// Heap word `off` (packet heap, then allocated).
    #[inline]
    pub(crate) fn heap_word(&self, off: u32) -> Result<u32, Fault> {
        match self.heap.get(off as usize) {
            Some(w) => Ok(u32::from_be_bytes(*w)),
            None => self
                .extra
                .get((off as usize).wrapping_sub(self.heap.len()))
                .copied()
                .ok_or(Fault::HeapBounds),
        }
    }

    /// Words in the whole heap.
    pub(crate) fn heap_len(&self) -> u32 {
        self.heap_words() + self.extra.len() as u32
    }

    /// The object `v` points to: its header's tag and length and the offset of its payload,
    /// checked to lie inside the heap. The tag is the header's, whatever `v` claims.
    ///
    /// # Errors
    ///
    /// [`Fault::HeapBounds`] or [`Fault::BadObject`].
    pub(crate) fn object(&self, v: Value) -> Result<(Tag, u32, u32), Fault> {
        // A small value is no pointer, even if its bits would land on an object: `nth` on
        // the empty list (0) must fault, not read the heap's first object.
        if !v.is_boxed() {
            return Err(Fault::BadObject);
        }
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
    /// [`Fault::BufferLimit`] past the limits.
    pub(crate) fn alloc(&mut self, tag: Tag, len: u32, payload: &[u32]) -> Result<Value, Fault> {
        let words = 1 + payload.len();
        let off = self.heap_len();
        if self.extra.len() + words > self.extra_limit || off as usize + words > DATA_MASK as usize
        {
            return Err(Fault::BufferLimit);
        }
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
    #[inline]
    pub(crate) fn read_wide(&self, v: Value) -> Result<i64, Fault> {
        match v.tag() {
            Some(Tag::Wide) => match self.wide_words(v.data()) {
                Some(x) => Ok(x),
                None => self.read_wide_checked(v),
            },
            _ => Ok(i64::from(v.as_int())),
        }
    }

    /// The common case of [`read_wide`](Self::read_wide), with one bounds check: the
    /// header and both payload words in one part of the heap (the packet's or the
    /// allocated), the header a valid one of at most two payload words — then every check
    /// of the general path passes and it reads the same words. `None` otherwise.
    #[inline]
    fn wide_words(&self, off: u32) -> Option<i64> {
        let off = off as usize;
        let (h, hi, lo) = match self.heap.get(off..off.wrapping_add(3)) {
            Some(&[h, hi, lo]) => (
                u32::from_be_bytes(h),
                u32::from_be_bytes(hi),
                u32::from_be_bytes(lo),
            ),
            _ => match self
                .extra
                .get(off.checked_sub(self.heap.len())?..off.wrapping_add(3) - self.heap.len())
            {
                Some(&[h, hi, lo]) => (h, hi, lo),
                _ => return None,
            },
        };
        let h = Value(h);
        let tag = h.tag()?;
        (payload_words(tag, h.data()) <= 2)
            .then_some(((u64::from(hi) << 32) | u64::from(lo)) as i64)
    }

    /// [`read_wide`](Self::read_wide) of a wide value, every check made on its own.
    #[cold]
    #[inline(never)]
    fn read_wide_checked(&self, v: Value) -> Result<i64, Fault> {
        let (_, _, p) = self.object(v)?;
        let hi = self.heap_word(p)?;
        let lo = self.heap_word(p + 1)?;
        Ok(((u64::from(hi) << 32) | u64::from(lo)) as i64)
    }

    /// Boxes a 64-bit integer.
    ///
    /// # Errors
    ///
    /// [`Fault::BufferLimit`] past the buffer's limit, [`Fault::ServiceAlloc`] past a
    /// service's allowance.
    pub fn alloc_wide(&mut self, x: i64) -> Result<Value, Fault> {
        let x = x as u64;
        self.alloc(Tag::Wide, 2, &[(x >> 32) as u32, x as u32])
    }

    /// The address a boxed address holds: IPv6 if its object has four payload words, else
    /// IPv4 from the first (0.0.0.0 for a value that is no address: types are not checked
    /// where safety does not need it).
    #[inline]
    pub(crate) fn addr_of(&self, v: Value) -> Result<IpAddr, Fault> {
        if v.tag() != Some(Tag::Addr) {
            return Ok(Ipv4Addr::UNSPECIFIED.into());
        }
        let (_, len, p) = self.object(v)?;
        if len == crate::value::ADDR6_WORDS {
            return self.addr6_at(p);
        }
        Ok(Ipv4Addr::from(self.heap_word(p)?).into())
    }

    /// The IPv6 address of the four payload words at heap word `p` (kept out of line: the
    /// IPv4 case is the interpreter's common one).
    #[inline(never)]
    fn addr6_at(&self, p: u32) -> Result<IpAddr, Fault> {
        let mut w = [0u32; 4];
        for (i, slot) in (0u32..).zip(w.iter_mut()) {
            *slot = self.heap_word(p + i)?;
        }
        Ok(crate::value::addr_of_payload(&w).unwrap_or(Ipv4Addr::UNSPECIFIED.into()))
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

#[cfg(test)]
mod tests {
    // Test harness: panics are the failure reports.
    #![allow(clippy::unwrap_used)]

    use core::net::Ipv4Addr;

    use super::*;

    /// `read_wide`'s one-check path reads what the path checking each step reads, and
    /// faults where it faults, at every offset of packet and allocated heaps holding wide
    /// integers, other objects, headers claiming more words than there are, words that are
    /// no header, and objects straddling the two heaps.
    #[test]
    fn wide_reads_agree_with_the_checked_path() {
        let header = |tag: Tag, len: u32| Value::boxed(tag, len).0;
        let words: [u32; 13] = [
            header(Tag::Wide, 2),
            0x8000_0000,
            7,
            header(Tag::Wide, 5),
            1,
            2,
            header(Tag::Bytes, 8),
            0xdead_beef,
            u32::MAX,
            header(Tag::Tuple, 1),
            header(Tag::Wide, 9),
            3,
            4,
        ];
        for split in 0..=words.len() {
            let heap: Vec<[u8; 4]> = words[..split].iter().map(|w| w.to_be_bytes()).collect();
            let mut scratch = Scratch::new();
            let limits = FrameLimits {
                stack: 8,
                extra: 64,
                max_len: 1500,
            };
            let frame = Frame::new(
                &[],
                &heap,
                &mut scratch,
                limits,
                0,
                Ipv4Addr::UNSPECIFIED.into(),
                0,
            );
            frame.extra.extend_from_slice(&words[split..]);
            for off in 0..words.len() as u32 + 2 {
                let v = Value::boxed(Tag::Wide, off);
                assert_eq!(
                    frame.read_wide(v),
                    frame.read_wide_checked(v),
                    "split {split}, offset {off}"
                );
            }
            assert_eq!(
                frame.read_wide(Value::boxed(Tag::Wide, 0)),
                Ok(i64::MIN + 7)
            );
        }
    }
}
