//! The Data Manipulation Layer header (§5, Fig. 8).
//!
//! A short header placed directly after the link header that lists *regions* of the
//! packet — offset, length and type — so that an adaptor or a driver can copy, checksum and
//! decrypt without parsing the network and transport headers in between ([`crate::ilp`]
//! does all three in one pass).
//!
//! ```text
//!  link header | DML header | network header | transport header | data ...
//!                           ^ offset 0 of every region
//!
//!  0        1        2                 4
//! +--------+--------+-----------------+
//! | version| count  |      flags      |   then `count` regions of 8 bytes:
//! +--------+--------+-----------------+
//! |     offset      |     length      |   (from the first byte after the DML header)
//! +--------+--------+-----------------+
//! |  kind  |     reserved (0)         |
//! +--------+--------------------------+
//! ```
//!
//! Big-endian. The header is `4 + 8 · count` bytes, `count` ≤ [`MAX_REGIONS`]; regions must
//! lie within the packet. Flags bit 0 ([`FLAG_INTERRUPT`]) is §5's dispatch hint
//! ("interrupt the destination for this packet"); the other bits must be zero.
//!
//! # Accumulated offsets
//!
//! A sender builds the regions with a [`RegionStack`]: each layer pushes its regions with
//! offsets from the start of *its own* header, then hands the stack down; each lower layer
//! first adds its own header length to every region already on the stack
//! ([`RegionStack::add_header`]) and then pushes its own. When the stack reaches the DML
//! layer the offsets count from the network header, as the wire format wants.
//!
//! ```
//! use fastpath::dml::{DmlHeader, RegionKind, RegionStack};
//!
//! let mut stack = RegionStack::new();
//! // Transport: 8-byte header, 32 bytes of data, checksum over both.
//! stack.push(RegionKind::Checksum, 0, 40).unwrap();
//! stack.push(RegionKind::Data, 8, 32).unwrap();
//! // Network layer: a 20-byte header goes in front.
//! stack.add_header(20).unwrap();
//! let header = stack.finish(0);
//! assert_eq!(header.find(RegionKind::Data).unwrap().offset, 28);
//!
//! let mut packet = vec![0u8; header.buffer_len() + 60];
//! header.emit(&mut packet).unwrap();
//! let (parsed, payload) = DmlHeader::parse(&packet).unwrap();
//! assert_eq!(parsed, header);
//! assert_eq!(payload.len(), 60);
//! ```

use core::fmt;

/// Most regions a header carries.
pub const MAX_REGIONS: usize = 16;
/// The only version we speak.
pub const VERSION: u8 = 1;
/// Bytes before the regions.
pub const FIXED_LEN: usize = 4;
/// Bytes per region.
pub const REGION_LEN: usize = 8;
/// Flags bit 0: interrupt the destination for this packet (§5, dispatch).
pub const FLAG_INTERRUPT: u16 = 1;

/// What a region is for (the Fig. 8 regions and §5's encryption pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegionKind {
    /// Bytes covered by the transport's Internet checksum.
    Checksum,
    /// Bytes to decrypt.
    Encrypted,
    /// A field that names the decryption key (e.g. a connection id).
    KeyId,
    /// The user data, to be copied to its destination.
    Data,
    /// A field that names the data's destination in memory.
    MemoryDest,
    /// A field that names the destination's message handler (dispatch).
    Handler,
}

impl TryFrom<u8> for RegionKind {
    type Error = DmlError;
    fn try_from(b: u8) -> Result<Self, DmlError> {
        match b {
            1 => Ok(Self::Checksum),
            2 => Ok(Self::Encrypted),
            3 => Ok(Self::KeyId),
            4 => Ok(Self::Data),
            5 => Ok(Self::MemoryDest),
            6 => Ok(Self::Handler),
            other => Err(DmlError::UnknownKind(other)),
        }
    }
}

impl From<RegionKind> for u8 {
    fn from(k: RegionKind) -> u8 {
        match k {
            RegionKind::Checksum => 1,
            RegionKind::Encrypted => 2,
            RegionKind::KeyId => 3,
            RegionKind::Data => 4,
            RegionKind::MemoryDest => 5,
            RegionKind::Handler => 6,
        }
    }
}

/// One region: `length` bytes from `offset` (counted from the end of the DML header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// What the bytes are for.
    pub kind: RegionKind,
    /// First byte.
    pub offset: u16,
    /// Number of bytes.
    pub length: u16,
}

impl Region {
    /// The byte range, as `usize`.
    pub fn range(&self) -> core::ops::Range<usize> {
        let start = usize::from(self.offset);
        start..start + usize::from(self.length)
    }

    /// True if the region lies within `len` bytes.
    pub fn fits(&self, len: usize) -> bool {
        self.range().end <= len
    }
}

const EMPTY: Region = Region {
    kind: RegionKind::Data,
    offset: 0,
    length: 0,
};

/// Why a DML header was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmlError {
    /// Shorter than the header says.
    Truncated,
    /// A version other than [`VERSION`].
    BadVersion(u8),
    /// More than [`MAX_REGIONS`] regions.
    TooManyRegions(u8),
    /// A region kind we do not know.
    UnknownKind(u8),
    /// Reserved bits set (flags or a region's reserved bytes).
    ReservedNotZero,
    /// Region number `.0` runs past the end of the packet.
    RegionOutOfBounds(u8),
}

impl fmt::Display for DmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => write!(f, "DML header truncated"),
            Self::BadVersion(v) => write!(f, "DML version {v}, expected {VERSION}"),
            Self::TooManyRegions(n) => write!(f, "{n} regions, at most {MAX_REGIONS}"),
            Self::UnknownKind(k) => write!(f, "unknown region kind {k}"),
            Self::ReservedNotZero => write!(f, "reserved DML bits set"),
            Self::RegionOutOfBounds(i) => write!(f, "region {i} runs past the packet"),
        }
    }
}

impl core::error::Error for DmlError {}

/// Why a region could not be pushed, shifted or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// Already [`MAX_REGIONS`] regions.
    Full,
    /// An offset or end would pass 65,535.
    Overflow,
    /// The output buffer is shorter than [`DmlHeader::buffer_len`].
    BufferTooSmall,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => write!(f, "already {MAX_REGIONS} regions"),
            Self::Overflow => write!(f, "region offset or end past 65535"),
            Self::BufferTooSmall => write!(f, "buffer too small for the DML header"),
        }
    }
}

impl core::error::Error for PushError {}

/// A parsed (or built) DML header: flags and up to [`MAX_REGIONS`] regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmlHeader {
    flags: u16,
    count: u8,
    regions: [Region; MAX_REGIONS],
}

fn be16(b: &[u8], at: usize) -> Result<u16, DmlError> {
    let w = b.get(at..at + 2).ok_or(DmlError::Truncated)?;
    Ok(u16::from_be_bytes([
        w.first().copied().unwrap_or(0),
        w.get(1).copied().unwrap_or(0),
    ]))
}

impl DmlHeader {
    /// The flags word.
    pub fn flags(&self) -> u16 {
        self.flags
    }

    /// The regions, in wire order.
    pub fn regions(&self) -> &[Region] {
        self.regions.get(..usize::from(self.count)).unwrap_or(&[])
    }

    /// The first region of `kind`.
    pub fn find(&self, kind: RegionKind) -> Option<Region> {
        self.regions().iter().copied().find(|r| r.kind == kind)
    }

    /// Header bytes on the wire.
    pub fn buffer_len(&self) -> usize {
        FIXED_LEN + REGION_LEN * usize::from(self.count)
    }

    /// Parses the DML header at the start of `bytes` (everything after the link header)
    /// and returns it with the rest of the packet, which every region lies within.
    ///
    /// # Errors
    ///
    /// Any [`DmlError`]; no input makes this panic.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), DmlError> {
        let version = *bytes.first().ok_or(DmlError::Truncated)?;
        if version != VERSION {
            return Err(DmlError::BadVersion(version));
        }
        let count = *bytes.get(1).ok_or(DmlError::Truncated)?;
        let flags = be16(bytes, 2)?;
        if usize::from(count) > MAX_REGIONS {
            return Err(DmlError::TooManyRegions(count));
        }
        if flags & !FLAG_INTERRUPT != 0 {
            return Err(DmlError::ReservedNotZero);
        }
        let len = FIXED_LEN + REGION_LEN * usize::from(count);
        let (head, payload) = bytes.split_at_checked(len).ok_or(DmlError::Truncated)?;
        let mut regions = [EMPTY; MAX_REGIONS];
        let body = head.get(FIXED_LEN..).unwrap_or(&[]);
        for ((i, chunk), slot) in (0u8..).zip(body.chunks_exact(REGION_LEN)).zip(&mut regions) {
            let kind = RegionKind::try_from(chunk.get(4).copied().unwrap_or(0))?;
            if chunk.get(5..8).is_none_or(|r| r.iter().any(|&b| b != 0)) {
                return Err(DmlError::ReservedNotZero);
            }
            let region = Region {
                kind,
                offset: be16(chunk, 0)?,
                length: be16(chunk, 2)?,
            };
            if !region.fits(payload.len()) {
                return Err(DmlError::RegionOutOfBounds(i));
            }
            *slot = region;
        }
        Ok((
            Self {
                flags,
                count,
                regions,
            },
            payload,
        ))
    }

    /// Writes the header at the start of `out`; returns the bytes written.
    ///
    /// # Errors
    ///
    /// [`PushError::BufferTooSmall`].
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, PushError> {
        let len = self.buffer_len();
        let out = out.get_mut(..len).ok_or(PushError::BufferTooSmall)?;
        let (fixed, body) = out.split_at_mut(FIXED_LEN);
        fixed.copy_from_slice(&[
            VERSION,
            self.count,
            self.flags.to_be_bytes()[0],
            self.flags.to_be_bytes()[1],
        ]);
        for (chunk, r) in body.chunks_exact_mut(REGION_LEN).zip(self.regions()) {
            let [o0, o1] = r.offset.to_be_bytes();
            let [l0, l1] = r.length.to_be_bytes();
            chunk.copy_from_slice(&[o0, o1, l0, l1, r.kind.into(), 0, 0, 0]);
        }
        Ok(len)
    }
}

/// Regions on their way down the stack (accumulated offsets, §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionStack {
    header: DmlHeader,
}

impl Default for RegionStack {
    fn default() -> Self {
        Self::new()
    }
}

impl RegionStack {
    /// No regions yet.
    pub fn new() -> Self {
        Self {
            header: DmlHeader {
                flags: 0,
                count: 0,
                regions: [EMPTY; MAX_REGIONS],
            },
        }
    }

    /// Adds a region whose offset counts from the start of the calling layer's header.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`], or [`PushError::Overflow`] if the region would end past 65,535.
    pub fn push(&mut self, kind: RegionKind, offset: u16, length: u16) -> Result<(), PushError> {
        if offset.checked_add(length).is_none() {
            return Err(PushError::Overflow);
        }
        let h = &mut self.header;
        let slot = h
            .regions
            .get_mut(usize::from(h.count))
            .ok_or(PushError::Full)?;
        *slot = Region {
            kind,
            offset,
            length,
        };
        h.count += 1;
        Ok(())
    }

    /// A lower layer puts a `len`-byte header in front: every region so far moves by `len`.
    ///
    /// # Errors
    ///
    /// [`PushError::Overflow`] if a region would end past 65,535 (nothing is changed then).
    pub fn add_header(&mut self, len: u16) -> Result<(), PushError> {
        let count = usize::from(self.header.count);
        let regions = self.header.regions.get_mut(..count).unwrap_or(&mut []);
        if regions.iter().any(|r| {
            r.offset
                .checked_add(len)
                .and_then(|o| o.checked_add(r.length))
                .is_none()
        }) {
            return Err(PushError::Overflow);
        }
        for r in regions {
            r.offset += len;
        }
        Ok(())
    }

    /// The regions so far.
    pub fn regions(&self) -> &[Region] {
        self.header.regions()
    }

    /// The DML header for these regions, with `flags` (unknown bits cleared).
    pub fn finish(self, flags: u16) -> DmlHeader {
        DmlHeader {
            flags: flags & FLAG_INTERRUPT,
            ..self.header
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version 1, 2 regions, interrupt flag; checksum 0+12, data 4+8; then 12 bytes.
    const PACKET: [u8; 32] = [
        1, 2, 0, 1, //
        0, 0, 0, 12, 1, 0, 0, 0, //
        0, 4, 0, 8, 4, 0, 0, 0, //
        0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4, 5, 6, 7, 8,
    ];

    #[test]
    fn parse_literal_and_emit_back() {
        let (h, payload) = DmlHeader::parse(&PACKET).unwrap();
        assert_eq!(h.flags(), FLAG_INTERRUPT);
        assert_eq!(h.buffer_len(), 20);
        assert_eq!(payload, &PACKET[20..]);
        let data = h.find(RegionKind::Data).unwrap();
        assert_eq!(&payload[data.range()], &[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut out = [0u8; 20];
        assert_eq!(h.emit(&mut out), Ok(20));
        assert_eq!(out, PACKET[..20]);
        assert_eq!(h.emit(&mut [0u8; 19]), Err(PushError::BufferTooSmall));
    }

    #[test]
    fn lying_headers_are_errors() {
        assert_eq!(DmlHeader::parse(&[]), Err(DmlError::Truncated));
        assert_eq!(DmlHeader::parse(&PACKET[..19]), Err(DmlError::Truncated));
        let mut p = PACKET;
        p[0] = 7;
        assert_eq!(DmlHeader::parse(&p), Err(DmlError::BadVersion(7)));
        let mut p = PACKET;
        p[1] = 17;
        assert_eq!(DmlHeader::parse(&p), Err(DmlError::TooManyRegions(17)));
        let mut p = PACKET;
        p[3] = 2;
        assert_eq!(DmlHeader::parse(&p), Err(DmlError::ReservedNotZero));
        let mut p = PACKET;
        p[8] = 9;
        assert_eq!(DmlHeader::parse(&p), Err(DmlError::UnknownKind(9)));
        let mut p = PACKET;
        p[18] = 1;
        assert_eq!(DmlHeader::parse(&p), Err(DmlError::ReservedNotZero));
        let mut p = PACKET;
        p[15] = 9; // data region 4 + 9 > 12
        assert_eq!(DmlHeader::parse(&p), Err(DmlError::RegionOutOfBounds(1)));
        let mut p = PACKET;
        p[12] = 0xff; // offset 0xff04
        assert_eq!(DmlHeader::parse(&p), Err(DmlError::RegionOutOfBounds(1)));
    }

    #[test]
    fn stack_accumulates_offsets_and_refuses_overflow() {
        let mut s = RegionStack::new();
        s.push(RegionKind::Checksum, 0, 100).unwrap();
        s.add_header(20).unwrap();
        s.push(RegionKind::Handler, 2, 2).unwrap();
        s.add_header(8).unwrap();
        let offsets: alloc::vec::Vec<u16> = s.regions().iter().map(|r| r.offset).collect();
        assert_eq!(offsets, [28, 10]);
        assert_eq!(s.add_header(u16::MAX - 100), Err(PushError::Overflow));
        assert_eq!(s.regions()[0].offset, 28, "unchanged after a refused shift");
        assert_eq!(
            s.push(RegionKind::Data, u16::MAX, 1),
            Err(PushError::Overflow)
        );
        for _ in 2..MAX_REGIONS {
            s.push(RegionKind::Data, 0, 0).unwrap();
        }
        assert_eq!(s.push(RegionKind::Data, 0, 0), Err(PushError::Full));
        assert_eq!(s.finish(0xffff).flags(), FLAG_INTERRUPT);
    }
}
