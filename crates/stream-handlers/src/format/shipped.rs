//! The two shipped formats, each with a deterministic generator.
//!
//! * [`ImageFrame`]: one frame of an image sequence (the paper's scientific visualisation:
//!   a client selects image regions by their coordinates): sequence number, timestamp,
//!   frame width and height, the region's x/y, then pixel bytes.
//! * [`FlightRecord`]: one record of Delta's flight data stream (the paper's operational
//!   information system): sequence number, timestamp, flight number, origin and
//!   destination airport codes, altitude, speed, status.
//!
//! Generators are pure functions of `(seq, ts_ns, seed, len)`: no randomness of their
//! own, a small inline PRNG (splitmix64) keyed by the seed and the sequence number. Every
//! field but the timestamp can be used by a handler's predicate ([`Format::field`]).

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use super::{FieldDecl, Format, Scalar, Type};

/// A generator was asked for a message shorter than its format's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenerateError {
    /// Bytes the header needs.
    pub need: usize,
    /// Bytes asked for.
    pub len: usize,
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a message of {} bytes is shorter than its {}-byte header",
            self.len, self.need
        )
    }
}

impl core::error::Error for GenerateError {}

/// splitmix64 (Steele, Lea & Flood): a 64-bit state stepped by the golden gamma.
struct SplitMix(u64);

impl SplitMix {
    /// The stream of message `seq` under `seed`.
    fn new(seed: u64, seq: u32) -> Self {
        let mut s = SplitMix(seed);
        let base = s.next();
        SplitMix(base ^ u64::from(seq).wrapping_mul(0xD6E8_FEB8_6659_FD93))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n > 0`; the slight bias is irrelevant here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let r = self.next().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

fn decl(name: &str, offset: u16, scalar: Scalar) -> FieldDecl {
    FieldDecl::new(name, offset, Type::be(scalar))
}

/// A header of `len` bytes at the start of a `total`-byte message, the rest from `rng`.
fn message(header: usize, total: usize, rng: &mut SplitMix) -> Result<Vec<u8>, GenerateError> {
    if total < header {
        return Err(GenerateError {
            need: header,
            len: total,
        });
    }
    let mut m = vec![0u8; total];
    rng.fill(&mut m[header..]);
    Ok(m)
}

fn put(m: &mut [u8], offset: usize, bytes: &[u8]) {
    m[offset..offset + bytes.len()].copy_from_slice(bytes);
}

/// One frame of an image sequence: `seq:u32@0 timestamp_ns:u64@4 width:u16@12
/// height:u16@14 region_x:u16@16 region_y:u16@18`, then pixel bytes.
#[derive(Clone, Copy, Debug)]
pub struct ImageFrame;

impl ImageFrame {
    /// Header bytes before the pixels.
    pub const HEADER: usize = 20;

    /// The format.
    pub fn format() -> Format {
        Format {
            fields: vec![
                decl("seq", 0, Scalar::U32),
                decl("timestamp_ns", 4, Scalar::U64),
                decl("width", 12, Scalar::U16),
                decl("height", 14, Scalar::U16),
                decl("region_x", 16, Scalar::U16),
                decl("region_y", 18, Scalar::U16),
            ],
        }
    }

    /// Frame `seq` at `ts_ns`, `len` bytes long. Width and height (one of a few common
    /// sizes) depend on the seed only, so a stream keeps its frame size; the region (inside
    /// the frame) and the pixels depend on the seed and `seq`.
    pub fn generate(seq: u32, ts_ns: u64, seed: u64, len: usize) -> Result<Vec<u8>, GenerateError> {
        const SIZES: [(u16, u16); 4] = [(640, 480), (1024, 768), (1280, 720), (1920, 1080)];
        let (w, h) = SIZES[(SplitMix(seed).next() % 4) as usize];
        let mut rng = SplitMix::new(seed, seq);
        let x = rng.below(u64::from(w)) as u16;
        let y = rng.below(u64::from(h)) as u16;
        let mut m = message(Self::HEADER, len, &mut rng)?;
        put(&mut m, 0, &seq.to_be_bytes());
        put(&mut m, 4, &ts_ns.to_be_bytes());
        put(&mut m, 12, &w.to_be_bytes());
        put(&mut m, 14, &h.to_be_bytes());
        put(&mut m, 16, &x.to_be_bytes());
        put(&mut m, 18, &y.to_be_bytes());
        Ok(m)
    }
}

/// One flight record: `seq:u32@0 timestamp_ns:u64@4 flight:u32@12 origin:u32@16
/// destination:u32@20 altitude_ft:u32@24 speed_kt:u16@28 status:u8@30`, 31 bytes; a longer
/// message carries PRNG bytes after them.
///
/// Airport codes are three ASCII letters in the low bytes of a big-endian `u32`
/// (`ATL` = `0x0041_544C`, see [`FlightRecord::airport`]).
#[derive(Clone, Copy, Debug)]
pub struct FlightRecord;

impl FlightRecord {
    /// Header bytes.
    pub const HEADER: usize = 31;
    /// Delta hubs and focus cities the generator picks origins and destinations from.
    pub const AIRPORTS: [&'static [u8; 3]; 8] = [
        b"ATL", b"DTW", b"MSP", b"SLC", b"JFK", b"LAX", b"SEA", b"BOS",
    ];
    /// Status codes: scheduled, boarding, airborne, landed, cancelled.
    pub const STATUSES: u8 = 5;

    /// The format.
    pub fn format() -> Format {
        Format {
            fields: vec![
                decl("seq", 0, Scalar::U32),
                decl("timestamp_ns", 4, Scalar::U64),
                decl("flight", 12, Scalar::U32),
                decl("origin", 16, Scalar::U32),
                decl("destination", 20, Scalar::U32),
                decl("altitude_ft", 24, Scalar::U32),
                decl("speed_kt", 28, Scalar::U16),
                decl("status", 30, Scalar::U8),
            ],
        }
    }

    /// An airport code as the `origin`/`destination` fields hold it.
    pub const fn airport(code: &[u8; 3]) -> u32 {
        u32::from_be_bytes([0, code[0], code[1], code[2]])
    }

    /// Record `seq` at `ts_ns`, `len` bytes long: flight 1–9999, two different airports,
    /// altitude 0–45 000 ft, speed 0–600 kt, status below [`STATUSES`](Self::STATUSES),
    /// all from the seed and `seq`.
    pub fn generate(seq: u32, ts_ns: u64, seed: u64, len: usize) -> Result<Vec<u8>, GenerateError> {
        let mut rng = SplitMix::new(seed, seq);
        let flight = 1 + rng.below(9999) as u32;
        let o = rng.below(8) as usize;
        let d = (o + 1 + rng.below(7) as usize) % 8;
        let altitude = rng.below(45_001) as u32;
        let speed = rng.below(601) as u16;
        let status = rng.below(u64::from(Self::STATUSES)) as u8;
        let mut m = message(Self::HEADER, len, &mut rng)?;
        put(&mut m, 0, &seq.to_be_bytes());
        put(&mut m, 4, &ts_ns.to_be_bytes());
        put(&mut m, 12, &flight.to_be_bytes());
        put(&mut m, 16, &Self::airport(Self::AIRPORTS[o]).to_be_bytes());
        put(&mut m, 20, &Self::airport(Self::AIRPORTS[d]).to_be_bytes());
        put(&mut m, 24, &altitude.to_be_bytes());
        put(&mut m, 28, &speed.to_be_bytes());
        m[30] = status;
        Ok(m)
    }
}

impl Format {
    /// The image sequence frame format ([`ImageFrame`]).
    pub fn image_frame() -> Format {
        ImageFrame::format()
    }

    /// Delta's flight record format ([`FlightRecord`]).
    pub fn flight_record() -> Format {
        FlightRecord::format()
    }
}
