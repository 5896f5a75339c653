//! Programs as values: code, heap and stack to build packets from, and to verify.

use alloc::vec::Vec;
use core::net::IpAddr;

use crate::value::{Tag, Value, Word};
use crate::vm::frame_header;
use crate::wire::{HeaderRepr, Packet, WireError, header_len};

/// The IPv6 source and destination of a program that travels in IPv6.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv6Addrs {
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
}

/// A SNAP program with its packet header fields.
///
/// Its addresses are IPv4 ([`src`](Self::src), [`dst`](Self::dst)) unless
/// [`ipv6`](Self::ipv6) is set; then those are ignored (and read back as zero) and the
/// packet carries IPv6 addresses ([`wire`](crate::wire#ipv6)). [`set_addrs`](Self::set_addrs)
/// sets either from `IpAddr`s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// IPv4 source address.
    pub src: [u8; 4],
    /// IPv4 destination address.
    pub dst: [u8; 4],
    /// IPv6 source and destination, for a packet that travels in IPv6.
    pub ipv6: Option<Ipv6Addrs>,
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
    /// The source address, of either family.
    pub fn src_addr(&self) -> IpAddr {
        match self.ipv6 {
            Some(a) => a.src.into(),
            None => self.src.into(),
        }
    }

    /// The destination address, of either family.
    pub fn dst_addr(&self) -> IpAddr {
        match self.ipv6 {
            Some(a) => a.dst.into(),
            None => self.dst.into(),
        }
    }

    /// Sets source and destination, IPv4 or IPv6 (clearing the other family's).
    ///
    /// # Errors
    ///
    /// [`WireError::MixedFamilies`] (nothing changed) if they differ in family.
    pub fn set_addrs(&mut self, src: IpAddr, dst: IpAddr) -> Result<(), WireError> {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                (self.src, self.dst, self.ipv6) = (s.octets(), d.octets(), None);
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                (self.src, self.dst) = ([0; 4], [0; 4]);
                self.ipv6 = Some(Ipv6Addrs {
                    src: s.octets(),
                    dst: d.octets(),
                });
            }
            _ => return Err(WireError::MixedFamilies),
        }
        Ok(())
    }

    /// The packet's header fields.
    ///
    /// # Errors
    ///
    /// [`TooLarge`] if a section passes 65535 words.
    pub fn header(&self) -> Result<HeaderRepr, TooLarge> {
        let len = |n: usize| u16::try_from(n).map_err(|_| TooLarge);
        Ok(HeaderRepr {
            src: self.src_addr(),
            dst: self.dst_addr(),
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
        out.resize(h.header_len(), 0);
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
        let ipv6 = match (p.src_addr(), p.dst_addr()) {
            (IpAddr::V6(s), IpAddr::V6(d)) => Some(Ipv6Addrs {
                src: s.octets(),
                dst: d.octets(),
            }),
            _ => None,
        };
        Ok(Program {
            src: p.src(),
            dst: p.dst(),
            ipv6,
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
        header_len(self.ipv6.is_some()) + 4 * (self.code.len() + self.heap.len() + self.stack.len())
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

    /// Appends an IPv4 address to the heap; returns a pointer to it.
    pub fn heap_addr(&mut self, addr: [u8; 4]) -> Value {
        self.heap_ip(addr.into())
    }

    /// Appends an address of either family to the heap (one payload word for IPv4, four
    /// for IPv6); returns a pointer to it.
    pub fn heap_ip(&mut self, addr: IpAddr) -> Value {
        let off = self.heap.len() as u32;
        let (words, n) = crate::value::addr_payload(addr);
        self.heap.push(frame_header(Tag::Addr, n as u32));
        self.heap.extend_from_slice(&words[..n]);
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
