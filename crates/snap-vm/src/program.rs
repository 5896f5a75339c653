//! Programs as values: code, heap and stack to build packets from, and to verify.

use alloc::vec::Vec;

use crate::value::{Tag, Value, Word};
use crate::vm::frame_header;
use crate::wire::{HEADER_LEN, HeaderRepr, Packet, WireError};

/// A SNAP program with its packet header fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Demux port.
    pub port: u16,
    /// Resource bound.
    pub rb: u16,
    /// Entry point.
    pub entry: u16,
    /// Instructions.
    pub code: Vec<Word>,
    /// Heap words (objects with one-word headers).
    pub heap: Vec<u32>,
    /// Stack, bottom first.
    pub stack: Vec<Value>,
}

/// A program too large for the packet format's 16-bit section lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge;

impl core::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("program sections exceed 65535 words")
    }
}

impl core::error::Error for TooLarge {}

impl Program {
    /// The packet's header fields.
    ///
    /// # Errors
    ///
    /// [`TooLarge`] if a section passes 65535 words.
    pub fn header(&self) -> Result<HeaderRepr, TooLarge> {
        let len = |n: usize| u16::try_from(n).map_err(|_| TooLarge);
        Ok(HeaderRepr {
            src: self.src,
            dst: self.dst,
            port: self.port,
            rb: self.rb,
            entry: self.entry,
            code_len: len(self.code.len())?,
            heap_len: len(self.heap.len())?,
            stack_len: len(self.stack.len())?,
            little_endian: false,
        })
    }

    /// The packet bytes (big-endian body).
    ///
    /// # Errors
    ///
    /// [`TooLarge`] if a section passes 65535 words.
    pub fn to_bytes(&self) -> Result<Vec<u8>, TooLarge> {
        let h = self.header()?;
        let mut out = Vec::with_capacity(h.packet_len());
        out.resize(HEADER_LEN, 0);
        h.emit(&mut out).map_err(|_| TooLarge)?;
        for w in &self.code {
            out.extend_from_slice(&w.0.to_be_bytes());
        }
        for w in &self.heap {
            out.extend_from_slice(&w.to_be_bytes());
        }
        for v in &self.stack {
            out.extend_from_slice(&v.0.to_be_bytes());
        }
        Ok(out)
    }

    /// Reads a packet (either byte order).
    ///
    /// # Errors
    ///
    /// [`WireError`] if its structure is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Program, WireError> {
        let p = Packet::new_checked(bytes)?;
        let (c, h, s) = (
            usize::from(p.code_len()),
            usize::from(p.heap_len()),
            usize::from(p.stack_len()),
        );
        Ok(Program {
            src: p.src(),
            dst: p.dst(),
            port: p.port(),
            rb: p.rb(),
            entry: p.entry(),
            code: (0..c).map(|i| Word(p.body_word(i))).collect(),
            heap: (c..c + h).map(|i| p.body_word(i)).collect(),
            stack: (c + h..c + h + s).map(|i| Value(p.body_word(i))).collect(),
        })
    }

    /// Bytes of the packet.
    pub fn packet_len(&self) -> usize {
        HEADER_LEN + 4 * (self.code.len() + self.heap.len() + self.stack.len())
    }

    /// Appends a byte array to the heap; returns a pointer to it.
    pub fn heap_bytes(&mut self, bytes: &[u8]) -> Value {
        let off = self.heap.len() as u32;
        self.heap.push(frame_header(Tag::Bytes, bytes.len() as u32));
        for chunk in bytes.chunks(4) {
            let mut w = [0u8; 4];
            w[..chunk.len()].copy_from_slice(chunk);
            self.heap.push(u32::from_be_bytes(w));
        }
        Value::boxed(Tag::Bytes, off)
    }

    /// Appends an address to the heap; returns a pointer to it.
    pub fn heap_addr(&mut self, addr: [u8; 4]) -> Value {
        let off = self.heap.len() as u32;
        self.heap.push(frame_header(Tag::Addr, 1));
        self.heap.push(u32::from_be_bytes(addr));
        Value::boxed(Tag::Addr, off)
    }

    /// Appends a tuple of `values` to the heap; returns a pointer to it.
    pub fn heap_tuple(&mut self, values: &[Value]) -> Value {
        let off = self.heap.len() as u32;
        self.heap
            .push(frame_header(Tag::Tuple, values.len() as u32));
        self.heap.extend(values.iter().map(|v| v.0));
        Value::boxed(Tag::Tuple, off)
    }

    /// Appends a wide integer to the heap; returns a pointer to it.
    pub fn heap_wide(&mut self, x: i64) -> Value {
        let off = self.heap.len() as u32;
        let x = x as u64;
        self.heap.push(frame_header(Tag::Wide, 2));
        self.heap.push((x >> 32) as u32);
        self.heap.push(x as u32);
        Value::boxed(Tag::Wide, off)
    }
}
