//! The SNAP packet (paper §VI.A, Fig. 3): a 24-byte header, then code | heap | stack, laid
//! out in that order so the program executes in place.
//!
//! ```text
//!  0       4       8               16              24              31
//! +-------+-------+---------------+-------------------------------+
//! |Version| Flags |   reserved    |          demux port           |
//! +-------+-------+---------------+-------------------------------+
//! |                       source (IPv4)                           |
//! +---------------------------------------------------------------+
//! |                     destination (IPv4)                        |
//! +-------------------------------+-------------------------------+
//! |        resource bound         |    entry point (instruction)  |
//! +-------------------------------+-------------------------------+
//! |      code length (words)      |      heap length (words)      |
//! +-------------------------------+-------------------------------+
//! |      stack length (words)     |           reserved            |
//! +-------------------------------+-------------------------------+
//! |  code words … | heap words … | stack words (bottom first) …   |
//! ```
//!
//! Header fields are big-endian. Flag bit 0 says the body's words are little-endian (the
//! sender's order); a node converts such a body once on arrival (§VI.A). The stack's top is
//! the packet's last word, so pushing appends and popping truncates.
//!
//! # IPv6
//!
//! The paper's header names IPv4 hosts. A SNAP packet that travels in IPv6 (next header
//! 254) sets flag bit 1 ([`FLAG_IPV6`]): its 24-byte header is followed by the IPv6 source
//! and destination, 16 bytes each, and the body starts at byte [`HEADER_LEN_V6`] (56). The
//! header's two IPv4 words are zero on send and ignored on receipt. Everything else —
//! field order, the body, in-place execution — is the same, so a packet's family is a
//! property of its header alone:
//!
//! ```text
//! | 24-byte header (flags 0b0010, IPv4 words 0) | IPv6 source | IPv6 destination | body … |
//! ```
//!
//! A packet never changes family: a child has its parent's (the VM refuses a send to an
//! address of the other family, [`Fault::AddressFamily`](crate::vm::Fault::AddressFamily)).

use core::fmt;
use core::net::IpAddr;

/// Bytes of the SNAP header of an IPv4 packet (and the fixed part of an IPv6 one's).
pub const HEADER_LEN: usize = 24;
/// Bytes of the SNAP header of an IPv6 packet ([`FLAG_IPV6`]): the fixed part, then the
/// IPv6 source and destination.
pub const HEADER_LEN_V6: usize = HEADER_LEN + 32;
/// The SNAP version this crate speaks.
pub const VERSION: u8 = 1;
/// IP protocol number of SNAP packets (RFC 3692 experimental; see DESIGN.md).
pub const IP_PROTOCOL: u8 = 254;
/// Flag: body words are little-endian.
pub const FLAG_LITTLE_ENDIAN: u8 = 0x1;
/// Flag: the addresses are IPv6 (after the fixed header; see the module docs).
pub const FLAG_IPV6: u8 = 0x2;

/// Bytes of the header of a packet whose addresses are IPv6 (`ipv6`) or IPv4.
pub const fn header_len(ipv6: bool) -> usize {
    if ipv6 { HEADER_LEN_V6 } else { HEADER_LEN }
}

mod field {
    use core::ops::Range;
    pub(super) const VER_FLAGS: usize = 0;
    pub(super) const PORT: Range<usize> = 2..4;
    pub(super) const SRC: Range<usize> = 4..8;
    pub(super) const DST: Range<usize> = 8..12;
    pub(super) const RB: Range<usize> = 12..14;
    pub(super) const ENTRY: Range<usize> = 14..16;
    pub(super) const CODE_LEN: Range<usize> = 16..18;
    pub(super) const HEAP_LEN: Range<usize> = 18..20;
    pub(super) const STACK_LEN: Range<usize> = 20..22;
    pub(super) const SRC6: Range<usize> = 24..40;
    pub(super) const DST6: Range<usize> = 40..56;
}

/// Why bytes are not a SNAP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than the header (24 bytes, 56 with IPv6 addresses).
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// A version this crate does not speak.
    Version {
        /// The version field.
        version: u8,
    },
    /// The section lengths do not add up to the packet's length.
    Length {
        /// Bytes the header declares (header and sections).
        declared: usize,
        /// Bytes present.
        actual: usize,
    },
    /// The entry point is not an instruction of the code.
    EntryPoint {
        /// The entry point.
        entry: u16,
        /// Instructions in the code.
        code_len: u16,
    },
    /// A header whose source and destination are of different address families.
    MixedFamilies,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { len } => {
                write!(f, "SNAP packet truncated: {len} bytes, short of its header")
            }
            WireError::Version { version } => {
                write!(f, "SNAP version {version}, expected {VERSION}")
            }
            WireError::Length { declared, actual } => write!(
                f,
                "SNAP sections declare {declared} bytes but the packet has {actual}"
            ),
            WireError::EntryPoint { entry, code_len } => write!(
                f,
                "SNAP entry point {entry} outside the code ({code_len} instructions)"
            ),
            WireError::MixedFamilies => {
                f.write_str("SNAP source and destination of different address families")
            }
        }
    }
}

impl core::error::Error for WireError {}

/// A checked view of a SNAP packet: [`new_checked`](Packet::new_checked) guarantees every
/// accessor is in bounds.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn be16(b: &[u8], r: core::ops::Range<usize>) -> u16 {
    match b.get(r) {
        Some(&[x, y]) => u16::from_be_bytes([x, y]),
        _ => 0,
    }
}

fn be32(b: &[u8], r: core::ops::Range<usize>) -> [u8; 4] {
    match b.get(r) {
        Some(&[a, c, d, e]) => [a, c, d, e],
        _ => [0; 4],
    }
}

fn be128(b: &[u8], r: core::ops::Range<usize>) -> [u8; 16] {
    b.get(r)
        .and_then(|s| s.first_chunk::<16>())
        .copied()
        .unwrap_or([0; 16])
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks the structure (paper §VI.A: the entry point inside the code, the lengths
    /// inside the buffer) and wraps `buffer`.
    ///
    /// # Errors
    ///
    /// [`WireError`] naming the first check that failed.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let ipv6 = b.first().is_some_and(|f| f & FLAG_IPV6 != 0);
        if b.len() < header_len(ipv6) {
            return Err(WireError::Truncated { len: b.len() });
        }
        let p = Packet { buffer };
        let version = p.byte(field::VER_FLAGS) >> 4;
        if version != VERSION {
            return Err(WireError::Version { version });
        }
        let declared = p.header_len()
            + 4 * (usize::from(p.code_len())
                + usize::from(p.heap_len())
                + usize::from(p.stack_len()));
        let actual = p.buffer.as_ref().len();
        if declared != actual {
            return Err(WireError::Length { declared, actual });
        }
        if p.entry() >= p.code_len() {
            return Err(WireError::EntryPoint {
                entry: p.entry(),
                code_len: p.code_len(),
            });
        }
        Ok(p)
    }

    fn byte(&self, i: usize) -> u8 {
        self.buffer.as_ref().get(i).copied().unwrap_or(0)
    }

    /// Wraps a buffer without checks (accessors stay in bounds: they read zeros past the
    /// end and ignore writes there).
    pub(crate) fn wrap(buffer: T) -> Self {
        Packet { buffer }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The flags nibble.
    pub fn flags(&self) -> u8 {
        self.byte(field::VER_FLAGS) & 0x0F
    }

    /// Whether the body's words are little-endian.
    pub fn little_endian(&self) -> bool {
        self.flags() & FLAG_LITTLE_ENDIAN != 0
    }

    /// Whether the addresses are IPv6 ([`FLAG_IPV6`]).
    pub fn is_ipv6(&self) -> bool {
        self.flags() & FLAG_IPV6 != 0
    }

    /// Bytes of the header: [`HEADER_LEN`], or [`HEADER_LEN_V6`] with IPv6 addresses.
    pub fn header_len(&self) -> usize {
        header_len(self.is_ipv6())
    }

    /// The source address, of either family.
    pub fn src_addr(&self) -> IpAddr {
        if self.is_ipv6() {
            be128(self.buffer.as_ref(), field::SRC6).into()
        } else {
            self.src().into()
        }
    }

    /// The destination address, of either family.
    pub fn dst_addr(&self) -> IpAddr {
        if self.is_ipv6() {
            be128(self.buffer.as_ref(), field::DST6).into()
        } else {
            self.dst().into()
        }
    }

    /// The demux port.
    pub fn port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PORT)
    }

    /// The IPv4 source address (zero in an IPv6 packet: see [`src_addr`](Self::src_addr)).
    pub fn src(&self) -> [u8; 4] {
        be32(self.buffer.as_ref(), field::SRC)
    }

    /// The IPv4 destination address (zero in an IPv6 packet: see
    /// [`dst_addr`](Self::dst_addr)).
    pub fn dst(&self) -> [u8; 4] {
        be32(self.buffer.as_ref(), field::DST)
    }

    /// The resource bound.
    pub fn rb(&self) -> u16 {
        be16(self.buffer.as_ref(), field::RB)
    }

    /// The entry point (an instruction index).
    pub fn entry(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ENTRY)
    }

    /// Code length in words.
    pub fn code_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CODE_LEN)
    }

    /// Heap length in words.
    pub fn heap_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::HEAP_LEN)
    }

    /// Stack length in words.
    pub fn stack_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::STACK_LEN)
    }

    /// Byte offset of the heap.
    pub fn heap_offset(&self) -> usize {
        self.header_len() + 4 * usize::from(self.code_len())
    }

    /// Byte offset of the stack.
    pub fn stack_offset(&self) -> usize {
        self.heap_offset() + 4 * usize::from(self.heap_len())
    }

    /// Word `i` of the body (code, then heap, then stack), in the body's byte order.
    pub fn body_word(&self, i: usize) -> u32 {
        let at = self.header_len() + 4 * i;
        let w = be32(self.buffer.as_ref(), at..at + 4);
        if self.little_endian() {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put16(&mut self, r: core::ops::Range<usize>, v: u16) {
        if let Some(s) = self.buffer.as_mut().get_mut(r) {
            s.copy_from_slice(&v.to_be_bytes());
        }
    }

    /// Sets the resource bound.
    pub fn set_rb(&mut self, rb: u16) {
        self.put16(field::RB, rb);
    }

    /// Sets the IPv4 destination.
    pub fn set_dst(&mut self, dst: [u8; 4]) {
        if let Some(s) = self.buffer.as_mut().get_mut(field::DST) {
            s.copy_from_slice(&dst);
        }
    }

    /// Sets the destination, if it is of the packet's family (else nothing changes and
    /// `false` comes back).
    pub fn set_dst_addr(&mut self, dst: IpAddr) -> bool {
        match (dst, self.is_ipv6()) {
            (IpAddr::V4(a), false) => self.set_dst(a.octets()),
            (IpAddr::V6(a), true) => {
                if let Some(s) = self.buffer.as_mut().get_mut(field::DST6) {
                    s.copy_from_slice(&a.octets());
                }
            }
            _ => return false,
        }
        true
    }

    /// Sets the stack length (the caller keeps the buffer's length consistent).
    pub fn set_stack_len(&mut self, words: u16) {
        self.put16(field::STACK_LEN, words);
    }

    /// Rewrites a little-endian body as big-endian in place and clears the flag (one linear
    /// pass on arrival).
    pub fn normalize(&mut self) {
        if !self.little_endian() {
            return;
        }
        let at = self.header_len();
        let body = self.buffer.as_mut().get_mut(at..).unwrap_or(&mut []);
        for w in body.chunks_exact_mut(4) {
            w.reverse();
        }
        if let Some(b) = self.buffer.as_mut().get_mut(field::VER_FLAGS) {
            *b &= !FLAG_LITTLE_ENDIAN;
        }
    }
}

/// The header fields of a SNAP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderRepr {
    /// Source address (IPv4, or IPv6 with [`FLAG_IPV6`]).
    pub src: IpAddr,
    /// Destination address, of the source's family.
    pub dst: IpAddr,
    /// Demux port.
    pub port: u16,
    /// Resource bound.
    pub rb: u16,
    /// Entry point.
    pub entry: u16,
    /// Code length in words.
    pub code_len: u16,
    /// Heap length in words.
    pub heap_len: u16,
    /// Stack length in words.
    pub stack_len: u16,
    /// Body words little-endian.
    pub little_endian: bool,
}

impl HeaderRepr {
    /// Reads the fields of a checked packet.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> HeaderRepr {
        HeaderRepr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            port: p.port(),
            rb: p.rb(),
            entry: p.entry(),
            code_len: p.code_len(),
            heap_len: p.heap_len(),
            stack_len: p.stack_len(),
            little_endian: p.little_endian(),
        }
    }

    /// Whether the addresses are IPv6.
    pub const fn is_ipv6(&self) -> bool {
        self.src.is_ipv6()
    }

    /// Bytes of the header: [`HEADER_LEN`], or [`HEADER_LEN_V6`] for IPv6 addresses.
    pub const fn header_len(&self) -> usize {
        header_len(self.is_ipv6())
    }

    /// Bytes of the whole packet this header describes.
    pub const fn packet_len(&self) -> usize {
        self.header_len()
            + 4 * (self.code_len as usize + self.heap_len as usize + self.stack_len as usize)
    }

    /// Writes the header into the first [`header_len`](Self::header_len) bytes of `buf`.
    ///
    /// # Errors
    ///
    /// [`WireError::Truncated`] if `buf` is shorter than the header;
    /// [`WireError::MixedFamilies`] if source and destination differ in family.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let (src4, dst4, v6) = match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => (s.octets(), d.octets(), None),
            (IpAddr::V6(s), IpAddr::V6(d)) => ([0; 4], [0; 4], Some((s.octets(), d.octets()))),
            _ => return Err(WireError::MixedFamilies),
        };
        let len = buf.len();
        let Some(h) = buf.get_mut(..self.header_len()) else {
            return Err(WireError::Truncated { len });
        };
        let mut flags = if self.little_endian {
            FLAG_LITTLE_ENDIAN
        } else {
            0
        };
        if let (Some((s, d)), Some(tail)) = (v6, h.get_mut(HEADER_LEN..)) {
            flags |= FLAG_IPV6;
            tail[..16].copy_from_slice(&s);
            tail[16..].copy_from_slice(&d);
        }
        h[0] = (VERSION << 4) | flags;
        h[1] = 0;
        h[2..4].copy_from_slice(&self.port.to_be_bytes());
        h[4..8].copy_from_slice(&src4);
        h[8..12].copy_from_slice(&dst4);
        h[12..14].copy_from_slice(&self.rb.to_be_bytes());
        h[14..16].copy_from_slice(&self.entry.to_be_bytes());
        h[16..18].copy_from_slice(&self.code_len.to_be_bytes());
        h[18..20].copy_from_slice(&self.heap_len.to_be_bytes());
        h[20..22].copy_from_slice(&self.stack_len.to_be_bytes());
        h[22..24].copy_from_slice(&[0, 0]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ping of Fig. 1 as literal bytes: 7 instructions, a 2-word heap (4-byte payload),
    /// a 3-word stack.
    const PING: [u8; 24 + 4 * 12] = [
        0x10, 0, 0x1F, 0x90, 10, 0, 0, 1, 10, 0, 0, 2, 0, 8, 0, 0, 0, 7, 0, 2, 0, 3, 0, 0,
        // code
        0x10, 0, 0, 0, 0x0A, 0, 0, 5, 0x18, 0, 0, 1, 0x2A, 0, 0, 0, 0x12, 0, 0, 0, 0x1C, 0, 0, 0,
        0x16, 0, 0, 0, // heap: bytes header (tag 5, len 4), "ping"
        0x0A, 0, 0, 4, b'p', b'i', b'n', b'g',
        // stack bottom first: payload pointer, port 7, 0
        0x0A, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0,
    ];

    #[test]
    fn literal_ping_parses_and_round_trips() {
        let p = Packet::new_checked(&PING[..]).unwrap();
        let r = HeaderRepr::parse(&p);
        assert_eq!(
            r,
            HeaderRepr {
                src: [10, 0, 0, 1].into(),
                dst: [10, 0, 0, 2].into(),
                port: 8080,
                rb: 8,
                entry: 0,
                code_len: 7,
                heap_len: 2,
                stack_len: 3,
                little_endian: false,
            }
        );
        assert_eq!(r.packet_len(), PING.len());
        let mut out = [0u8; 24];
        r.emit(&mut out).unwrap();
        assert_eq!(out[..], PING[..24]);
        assert_eq!(p.body_word(0), 0x1000_0000);
        assert_eq!((p.heap_offset(), p.stack_offset()), (52, 60));
    }

    #[test]
    fn structural_checks() {
        assert_eq!(
            Packet::new_checked(&PING[..10]).unwrap_err(),
            WireError::Truncated { len: 10 }
        );
        let mut bad = PING;
        bad[0] = 0x20;
        assert_eq!(
            Packet::new_checked(&bad[..]).unwrap_err(),
            WireError::Version { version: 2 }
        );
        assert!(matches!(
            Packet::new_checked(&PING[..PING.len() - 1]).unwrap_err(),
            WireError::Length { .. }
        ));
        let mut bad = PING;
        bad[15] = 7;
        assert_eq!(
            Packet::new_checked(&bad[..]).unwrap_err(),
            WireError::EntryPoint {
                entry: 7,
                code_len: 7
            }
        );
    }

    #[test]
    fn little_endian_bodies_are_normalized_once() {
        let mut le = PING;
        le[0] |= FLAG_LITTLE_ENDIAN;
        for w in le[24..].chunks_exact_mut(4) {
            w.reverse();
        }
        let mut p = Packet::new_checked(&mut le[..]).unwrap();
        assert_eq!(p.body_word(0), 0x1000_0000);
        p.normalize();
        assert!(!p.little_endian());
        assert_eq!(le[..], PING[..]);
    }
}
