//! Integrated layer processing over the DML regions (§5.1, Clark and Tennenhouse): copy,
//! checksum and decrypt in one pass over the packet.
//!
//! The three manipulations, as separate passes ([`separate`]):
//!
//! 1. **copy** the user data (the [`RegionKind::Data`] region, or the whole payload if the
//!    header names none) into the destination buffer;
//! 2. **checksum** the [`RegionKind::Checksum`] region of the packet as received (RFC 1071
//!    Internet checksum, so over ciphertext, as a transport computes it on the wire);
//! 3. **decrypt** the [`RegionKind::Encrypted`] region, which must lie inside the copied
//!    data, in the destination buffer, by XOR with a [`Keystream`] (AES-128-CTR provided:
//!    byte `j` of the region is XORed with byte `j mod 16` of block `j / 16`).
//!
//! [`integrated`] gives the same result bit for bit (a proptest and a fuzz target check it)
//! while touching each byte once: it walks the packet in segments cut at every region
//! boundary and, within a segment, in batches (256 bytes where it decrypts, 1 KiB where it
//! only copies), and each batch is summed, decrypted and stored while it sits in L1. The
//! one's-complement sum is kept in a `u64` of 32-bit big-endian words and folded once at the
//! end (2^16 ≡ 1 mod 2^16 − 1, so this is RFC 1071's sum), so any batching gives the same
//! checksum. Whether one pass is faster than three depends on whether the packet fits in
//! the cache; on today's machines a packet does (see `BENCHMARKS.md`).
//!
//! The summing kernel is this module's own, not the IP layer's `waist_ip::checksum::Sum`:
//! regions start and end at any byte, so a pass must carry an odd byte from one segment to
//! the next, which `Sum` does not; and [`separate`] sums with the same kernel, so that the
//! `ilp` bench measures one pass against three, not one summing loop against another. The
//! standalone [`checksum`] is the IP layer's.
//!
//! ```
//! use fastpath::dml::{RegionKind, RegionStack};
//! use fastpath::ilp::{AesCtr, integrated, separate};
//!
//! let mut stack = RegionStack::new();
//! stack.push(RegionKind::Checksum, 0, 24).unwrap();
//! stack.push(RegionKind::Data, 4, 20).unwrap();
//! stack.push(RegionKind::Encrypted, 8, 16).unwrap();
//! let header = stack.finish(0);
//! let payload: Vec<u8> = (0u8..24).collect();
//! let ks = AesCtr::new([7; 16], [1; 8]);
//! let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
//! let one = integrated(&header, &payload, &mut a, Some(&ks)).unwrap();
//! let sep = separate(&header, &payload, &mut b, Some(&ks)).unwrap();
//! assert_eq!((one, a), (sep, b));
//! ```

use core::fmt;
use core::ops::Range;

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};

use crate::dml::{DmlHeader, RegionKind};

/// Keystream bytes per block.
pub const BLOCK: usize = 16;

/// A keystream cipher: block `counter` of the stream.
pub trait Keystream {
    /// Keystream block number `counter` (from the start of the encrypted region).
    fn block(&self, counter: u64) -> [u8; BLOCK];

    /// Blocks `first`, `first + 1`, … into `out` (override to pipeline them).
    fn fill(&self, first: u64, out: &mut [[u8; BLOCK]]) {
        for (i, b) in (0u64..).zip(out.iter_mut()) {
            *b = self.block(first.wrapping_add(i));
        }
    }
}

/// Bytes decrypted per step: 16 keystream blocks (AES-NI pipelines 8 at a time).
const BATCH: usize = 256;
/// Bytes copied then summed per step where nothing is decrypted.
const COPY_BATCH: usize = 1024;
/// Keystream blocks covering a batch at any offset within a block.
const BATCH_BLOCKS: usize = BATCH / BLOCK + 1;

/// AES-128 in counter mode: block `i` = AES_k(nonce ‖ i) with `i` big-endian.
#[derive(Clone)]
pub struct AesCtr {
    cipher: Aes128,
    nonce: [u8; 8],
}

impl fmt::Debug for AesCtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesCtr").finish_non_exhaustive()
    }
}

impl AesCtr {
    /// A keystream under `key` for the message numbered `nonce`.
    pub fn new(key: [u8; 16], nonce: [u8; 8]) -> Self {
        Self {
            cipher: Aes128::new(&GenericArray::from(key)),
            nonce,
        }
    }
}

impl Keystream for AesCtr {
    fn block(&self, counter: u64) -> [u8; BLOCK] {
        let mut b = [0u8; BLOCK];
        let (n, c) = b.split_at_mut(8);
        n.copy_from_slice(&self.nonce);
        c.copy_from_slice(&counter.to_be_bytes());
        let mut block = GenericArray::from(b);
        self.cipher.encrypt_block(&mut block);
        block.into()
    }

    fn fill(&self, first: u64, out: &mut [[u8; BLOCK]]) {
        let mut blocks = [aes::Block::default(); BATCH_BLOCKS];
        for (k, chunk) in (0u64..).zip(out.chunks_mut(BATCH_BLOCKS)) {
            let start = first.wrapping_add(k * BATCH_BLOCKS as u64);
            let blocks = blocks.get_mut(..chunk.len()).unwrap_or(&mut []);
            for (i, b) in (0u64..).zip(blocks.iter_mut()) {
                let (n, c) = b.split_at_mut(8);
                n.copy_from_slice(&self.nonce);
                c.copy_from_slice(&start.wrapping_add(i).to_be_bytes());
            }
            self.cipher.encrypt_blocks(blocks);
            for (o, b) in chunk.iter_mut().zip(blocks.iter()) {
                o.copy_from_slice(b);
            }
        }
    }
}

/// What the manipulations produced besides the copied bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IlpOutput {
    /// Bytes written to the destination.
    pub copied: usize,
    /// RFC 1071 checksum of the checksum region (`None` without one). A received segment
    /// whose checksum field is included verifies when this is 0.
    pub checksum: Option<u16>,
    /// Whether the encrypted region was decrypted.
    pub decrypted: bool,
}

/// Why the regions could not be processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IlpError {
    /// Two regions of a kind ILP handles once (checksum, encrypted, data).
    DuplicateRegion(RegionKind),
    /// A region runs past the payload (only for hand-built headers; parsing checks this).
    RegionOutOfBounds,
    /// The destination is shorter than the data.
    DestinationTooSmall,
    /// The encrypted region is not inside the copied data.
    EncryptedOutsideData,
}

impl fmt::Display for IlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateRegion(k) => write!(f, "more than one {k:?} region"),
            Self::RegionOutOfBounds => write!(f, "region runs past the payload"),
            Self::DestinationTooSmall => write!(f, "destination shorter than the data"),
            Self::EncryptedOutsideData => write!(f, "encrypted region outside the data"),
        }
    }
}

impl core::error::Error for IlpError {}

/// The ranges ILP works on, checked once.
struct Plan {
    copy: Range<usize>,
    checksum: Option<Range<usize>>,
    encrypted: Option<Range<usize>>,
}

fn plan(
    header: &DmlHeader,
    payload: &[u8],
    dst_len: usize,
    decrypt: bool,
) -> Result<Plan, IlpError> {
    let one = |kind| -> Result<Option<Range<usize>>, IlpError> {
        let mut found = header.regions().iter().filter(|r| r.kind == kind);
        let first = found.next();
        if found.next().is_some() {
            return Err(IlpError::DuplicateRegion(kind));
        }
        match first {
            Some(r) if !r.fits(payload.len()) => Err(IlpError::RegionOutOfBounds),
            Some(r) => Ok(Some(r.range())),
            None => Ok(None),
        }
    };
    let copy = one(RegionKind::Data)?.unwrap_or(0..payload.len());
    let checksum = one(RegionKind::Checksum)?;
    let encrypted = one(RegionKind::Encrypted)?.filter(|_| decrypt);
    if copy.len() > dst_len {
        return Err(IlpError::DestinationTooSmall);
    }
    if let Some(e) = &encrypted
        && !e.is_empty()
        && (e.start < copy.start || e.end > copy.end)
    {
        return Err(IlpError::EncryptedOutsideData);
    }
    Ok(Plan {
        copy,
        checksum,
        encrypted,
    })
}

/// An exact running one's-complement sum; `odd` says the next byte is a low byte.
#[derive(Clone, Copy, Debug, Default)]
struct Sum {
    acc: u64,
    odd: bool,
}

impl Sum {
    // Out of line: one optimised (vectorised) body for every caller, so the one-pass and
    // the separate passes sum with the same code.
    #[inline(never)]
    fn add(&mut self, mut bytes: &[u8]) {
        if self.odd
            && let Some((&b, rest)) = bytes.split_first()
        {
            self.acc += u64::from(b);
            bytes = rest;
            self.odd = false;
        }
        // Big-endian 32-bit words: 2^16 ≡ 1 (mod 2^16 − 1), so their sum folds to the same
        // one's-complement sum as 16-bit words, with half the additions.
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let x = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            self.acc += (x >> 32) + (x & 0xffff_ffff);
        }
        let mut rest = words.remainder();
        if let [a, b, c, d, tail @ ..] = rest {
            self.acc += u64::from(u32::from_be_bytes([*a, *b, *c, *d]));
            rest = tail;
        }
        if let [a, b, tail @ ..] = rest {
            self.acc += u64::from(u16::from_be_bytes([*a, *b]));
            rest = tail;
        }
        if let [b] = rest {
            self.acc += u64::from(*b) << 8;
            self.odd = true;
        }
    }

    /// The checksum. Folded here rather than by handing the accumulator's bytes to
    /// `waist_ip::checksum::checksum` (the same value): that costs 4–5 more instructions
    /// per packet in both `integrated` and `separate` (callgrind, `examples/dml_ilp`).
    fn finish(self) -> u16 {
        let mut s = self.acc;
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        // The loop leaves s ≤ 0xffff.
        !(s as u16)
    }
}

/// RFC 1071 Internet checksum of `bytes`: the IP layer's. [`separate`] does not call it:
/// the three-pass reference sums with this module's own kernel, the one [`integrated`]
/// runs inside its pass, so the `ilp` bench compares one pass with three, not two
/// summing loops.
pub use waist_ip::checksum::checksum;

/// The checksum of one region with this module's kernel.
fn region_checksum(bytes: &[u8]) -> u16 {
    let mut s = Sum::default();
    s.add(bytes);
    s.finish()
}

/// The one-pass step of an encrypted segment: a batch at a time, sum the ciphertext (if
/// `sum`), then `out = src ^ keystream[pos ..]` (`out` and `src` of equal length). Kept out
/// of line so that its loops are optimised (vectorised) on their own.
#[inline(never)]
fn sum_decrypt(
    ks: &dyn Keystream,
    mut pos: usize,
    src: &[u8],
    out: &mut [u8],
    mut sum: Option<&mut Sum>,
) {
    let mut buf = [[0u8; BLOCK]; BATCH_BLOCKS];
    for (s, o) in src.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
        if let Some(sum) = sum.as_deref_mut() {
            sum.add(s);
        }
        let skip = pos % BLOCK;
        let n = (skip + s.len()).div_ceil(BLOCK);
        if let Some(blocks) = buf.get_mut(..n) {
            ks.fill((pos / BLOCK) as u64, blocks);
        }
        let stream = buf.as_flattened().get(skip..).unwrap_or(&[]);
        // Copy, then XOR in place: two-way loops vectorise, a three-way zip does not.
        o.copy_from_slice(s);
        for (o, k) in o.iter_mut().zip(stream) {
            *o ^= k;
        }
        pos += s.len();
    }
}

/// The one-pass step of a plain segment: copy a batch, sum it (if `sum`) from L1.
#[inline(never)]
fn copy_sum(src: &[u8], out: &mut [u8], mut sum: Option<&mut Sum>) {
    for (s, o) in src.chunks(COPY_BATCH).zip(out.chunks_mut(COPY_BATCH)) {
        o.copy_from_slice(s);
        if let Some(sum) = sum.as_deref_mut() {
            sum.add(o);
        }
    }
}

/// `data ^= keystream[pos ..]` in place, a batch at a time.
fn xor_in_place(ks: &dyn Keystream, mut pos: usize, data: &mut [u8]) {
    let mut buf = [[0u8; BLOCK]; BATCH_BLOCKS];
    for d in data.chunks_mut(BATCH) {
        let skip = pos % BLOCK;
        let n = (skip + d.len()).div_ceil(BLOCK);
        if let Some(blocks) = buf.get_mut(..n) {
            ks.fill((pos / BLOCK) as u64, blocks);
        }
        let stream = buf.as_flattened().get(skip..).unwrap_or(&[]);
        for (d, k) in d.iter_mut().zip(stream) {
            *d ^= k;
        }
        pos += d.len();
    }
}

/// The three manipulations as three passes: copy, then checksum, then decrypt (the
/// reference [`integrated`] must equal).
///
/// # Errors
///
/// Any [`IlpError`]; `dst` is untouched then.
pub fn separate(
    header: &DmlHeader,
    payload: &[u8],
    dst: &mut [u8],
    ks: Option<&dyn Keystream>,
) -> Result<IlpOutput, IlpError> {
    let p = plan(header, payload, dst.len(), ks.is_some())?;
    let n = p.copy.len();
    let (src, out) = (payload.get(p.copy.clone()), dst.get_mut(..n));
    let (Some(src), Some(out)) = (src, out) else {
        return Err(IlpError::RegionOutOfBounds);
    };
    out.copy_from_slice(src);
    let sum = p
        .checksum
        .as_ref()
        .and_then(|c| payload.get(c.clone()))
        .map(region_checksum);
    let mut decrypted = false;
    if let (Some(e), Some(ks)) = (&p.encrypted, ks) {
        decrypted = true;
        // `plan` put a non-empty encrypted region inside the copied data.
        let region = e
            .start
            .checked_sub(p.copy.start)
            .and_then(|s| out.get_mut(s..s + e.len()));
        if let Some(region) = region.filter(|_| !e.is_empty()) {
            xor_in_place(ks, 0, region);
        }
    }
    Ok(IlpOutput {
        copied: n,
        checksum: sum,
        decrypted,
    })
}

/// Copy, checksum and decrypt in one pass over the packet: each byte is read once.
///
/// # Errors
///
/// Any [`IlpError`]; `dst` is untouched then.
pub fn integrated(
    header: &DmlHeader,
    payload: &[u8],
    dst: &mut [u8],
    ks: Option<&dyn Keystream>,
) -> Result<IlpOutput, IlpError> {
    let p = plan(header, payload, dst.len(), ks.is_some())?;
    let cs = p.checksum.clone().unwrap_or(0..0);
    let enc = p
        .encrypted
        .clone()
        .filter(|e| !e.is_empty())
        .unwrap_or(0..0);
    // Everything any manipulation reads, cut at every boundary.
    let lo = p
        .copy
        .start
        .min(if cs.is_empty() { usize::MAX } else { cs.start });
    let hi = p.copy.end.max(cs.end);
    let cuts = [
        p.copy.start,
        p.copy.end,
        cs.start,
        cs.end,
        enc.start,
        enc.end,
    ];
    let mut sum = Sum::default();
    let mut a = lo;
    while a < hi {
        // The segment runs to the next region boundary.
        let b = cuts
            .iter()
            .fold(hi, |b, &c| if c > a && c < b { c } else { b });
        let in_cs = cs.start <= a && b <= cs.end;
        let in_copy = p.copy.start <= a && b <= p.copy.end;
        let in_enc = !enc.is_empty() && enc.start <= a && b <= enc.end;
        let src = payload.get(a..b).ok_or(IlpError::RegionOutOfBounds)?;
        if !in_copy {
            if in_cs {
                sum.add(src);
            }
            a = b;
            continue;
        }
        let out = dst
            .get_mut(a - p.copy.start..b - p.copy.start)
            .ok_or(IlpError::DestinationTooSmall)?;
        match (in_enc, ks) {
            (true, Some(ks)) => {
                let sum = in_cs.then_some(&mut sum);
                sum_decrypt(ks, a - enc.start, src, out, sum);
            }
            _ => copy_sum(src, out, in_cs.then_some(&mut sum)),
        }
        a = b;
    }
    Ok(IlpOutput {
        copied: p.copy.len(),
        checksum: p.checksum.map(|_| sum.finish()),
        decrypted: p.encrypted.is_some() && ks.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dml::RegionStack;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2, checksum 220d; the module's
        // kernel and the IP layer's agree.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        for c in [checksum, region_checksum] {
            assert_eq!(c(&bytes), 0x220d);
            assert_eq!(c(&[0xff]), 0x00ff);
            assert_eq!(c(&[]), 0xffff);
            assert_eq!(c(&[0xff; 6]), 0);
        }
        // Pieces at odd offsets: the kernel carries the odd byte over.
        let mut s = Sum::default();
        for piece in bytes.chunks(3) {
            s.add(piece);
        }
        assert_eq!(s.finish(), 0x220d);
    }

    #[test]
    fn aes_ctr_matches_fips197() {
        // FIPS-197 C.1 (AES-128): key 000102…0f, plaintext 00112233…ff.
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let ks = AesCtr::new(key, [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77]);
        let ct = ks.block(0x8899_aabb_ccdd_eeff);
        assert_eq!(
            ct,
            [
                0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
                0xc5, 0x5a
            ]
        );
    }

    #[test]
    fn aes_fill_equals_block_by_block() {
        struct Plain<'a>(&'a AesCtr);
        impl Keystream for Plain<'_> {
            fn block(&self, counter: u64) -> [u8; BLOCK] {
                self.0.block(counter)
            }
        }
        let ks = AesCtr::new([5; 16], [6; 8]);
        let (mut fast, mut slow) = ([[0u8; BLOCK]; 13], [[0u8; BLOCK]; 13]);
        ks.fill(u64::MAX - 3, &mut fast);
        Plain(&ks).fill(u64::MAX - 3, &mut slow);
        assert_eq!(fast, slow);
        assert_ne!(fast[0], fast[1]);
    }

    #[test]
    fn decrypts_what_was_encrypted_and_verifies_checksum() {
        let ks = AesCtr::new([3; 16], [9; 8]);
        let plain: alloc::vec::Vec<u8> = (0..40).collect();
        let mut payload = alloc::vec![0u8; 8];
        let mut ct = plain.clone();
        xor_in_place(&ks, 0, &mut ct);
        payload.extend_from_slice(&ct);
        // A checksum field at bytes 0..2 set so the region sums to zero.
        let c = checksum(&payload);
        payload[0..2].copy_from_slice(&c.to_be_bytes());
        let mut s = RegionStack::new();
        s.push(RegionKind::Checksum, 0, 48).unwrap();
        s.push(RegionKind::Data, 8, 40).unwrap();
        s.push(RegionKind::Encrypted, 8, 40).unwrap();
        let h = s.finish(0);
        let mut out = [0u8; 40];
        let r = integrated(&h, &payload, &mut out, Some(&ks)).unwrap();
        assert_eq!(out.as_slice(), plain.as_slice());
        assert_eq!(r.checksum, Some(0));
        assert!(r.decrypted);
    }

    #[test]
    fn bad_layouts_are_errors() {
        let payload = [0u8; 16];
        let mut s = RegionStack::new();
        s.push(RegionKind::Data, 0, 8).unwrap();
        s.push(RegionKind::Encrypted, 4, 8).unwrap();
        let ks = AesCtr::new([0; 16], [0; 8]);
        let h = s.finish(0);
        assert_eq!(
            integrated(&h, &payload, &mut [0; 8], Some(&ks)),
            Err(IlpError::EncryptedOutsideData)
        );
        // Without a keystream there is nothing to decrypt: fine.
        assert!(integrated(&h, &payload, &mut [0; 8], None).is_ok());
        assert_eq!(
            integrated(&h, &payload, &mut [0; 7], None),
            Err(IlpError::DestinationTooSmall)
        );
        let mut s2 = s;
        s2.push(RegionKind::Data, 0, 1).unwrap();
        assert_eq!(
            separate(&s2.finish(0), &payload, &mut [0; 16], None),
            Err(IlpError::DuplicateRegion(RegionKind::Data))
        );
        let mut s3 = RegionStack::new();
        s3.push(RegionKind::Checksum, 10, 10).unwrap();
        assert_eq!(
            integrated(&s3.finish(0), &payload, &mut [0; 16], None),
            Err(IlpError::RegionOutOfBounds)
        );
    }
}
