//! The two ends of a stream, sans-IO: a [`Publisher`] that turns generated messages into
//! RUDP fragments, and a [`Subscriber`] that reassembles them and checks each message
//! against what the publisher generated (`waist stream pub` and `waist stream sub` are
//! thin shells around them).
//!
//! ```text
//!  Publisher::next(ts) ─► generate(seq = message id, ts, seed, size) ─► rudp::fragment
//!        ... network, stream handlers ...
//!  Subscriber::handle_fragment(now, packet) ─► rudp::Reassembler ─► Received
//!        (intact? regenerated from the message's own seq and timestamp; latency; gaps)
//! ```
//!
//! Every message starts with `seq: u32` at 0 and `timestamp_ns: u64` at 4 (big-endian):
//! the shipped formats' header ([`ImageFrame`], [`FlightRecord`]), or, without declared
//! fields, that header followed by pseudo-random bytes ([`generate`]). Message `i` of a
//! publisher has message id `i` and `seq` field `i`, so a subscriber that knows the seed
//! and the size regenerates the message from its own `seq` and timestamp and compares:
//!
//! * [`Verify::Content`]: every byte (the timestamp's bytes are the message's own, so a
//!   corrupted timestamp shows only as a wrong latency);
//! * [`Verify::Header`]: the `seq` field is the message id and the length is the size (for
//!   handlers that rewrite bytes past the header in ways the subscriber cannot undo);
//! * [`Verify::Off`]: nothing (`intact` is `None`).
//!
//! Handlers that rewrite messages on the way (`delta`, `byteswap`: [`Transform`]) are
//! undone first, in reverse order, when the subscriber is told of them
//! ([`SubscriberConfig::undo`], [`parse_transforms`]): both are invertible, so a message
//! that passed them is still checked byte for byte.
//!
//! Time is the caller's: the publisher takes the timestamp to write, the subscriber the
//! wall-clock time of arrival (ns since the epoch, the same clock as the publisher's
//! timestamps), which also drives reassembly timeouts.
//!
//! ```
//! use stream_handlers::endpoint::{Publisher, PublisherConfig, Subscriber, SubscriberConfig, Verify};
//! use stream_handlers::spec::Fields;
//! let cfg = PublisherConfig { stream: 7, fields: Some(Fields::Flight), size: 3000, seed: 9, fragment: 1400 };
//! let mut publisher = Publisher::new(cfg)?;
//! let mut sub = Subscriber::new(SubscriberConfig::new(7, Some(Fields::Flight), 3000, 9));
//! for ts in [1_000_000, 2_000_000] {
//!     let fragments = publisher.next(ts)?;
//!     assert_eq!(fragments.len(), 3); // 1400 + 1400 + 200 bytes
//!     for f in fragments.iter().rev() {
//!         if let Some(r) = sub.handle_fragment(ts + 50_000, f)? {
//!             assert_eq!((r.intact, r.latency_ns), (Some(true), 50_000));
//!         }
//!     }
//! }
//! let s = sub.summary();
//! assert_eq!((s.received, s.intact, s.lost), (2, 2, 0));
//! assert_eq!(s.latency.map(|l| l.p99_ns), Some(50_000));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`ImageFrame`]: crate::format::shipped::ImageFrame
//! [`FlightRecord`]: crate::format::shipped::FlightRecord

#[cfg(test)]
mod tests;

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::format::shipped::{FlightRecord, GenerateError, ImageFrame};
use crate::handlers::{ByteSwap, Delta};
use crate::rudp::{self, FragmentError, Reassembler, ReassemblyConfig, ReassemblyError};
use crate::spec::{Fields, HandlerSpec, Spec, SpecError};
use crate::stream::{Message, Predicate, StreamHandler};

/// Bytes of the header every message starts with: `seq: u32`, `timestamp_ns: u64`.
pub const HEADER: usize = 12;

/// Message `seq` at `ts_ns`, `len` bytes: the declared fields' generator, or without
/// fields the 12-byte header (`seq`, `timestamp_ns`, big-endian) and pseudo-random bytes
/// keyed by the seed and `seq` (splitmix64).
///
/// # Errors
///
/// [`GenerateError`] if `len` is shorter than the format's header.
pub fn generate(
    fields: Option<Fields>,
    seq: u32,
    ts_ns: u64,
    seed: u64,
    len: usize,
) -> Result<Vec<u8>, GenerateError> {
    match fields {
        Some(Fields::Image) => ImageFrame::generate(seq, ts_ns, seed, len),
        Some(Fields::Flight) => FlightRecord::generate(seq, ts_ns, seed, len),
        None => {
            if len < HEADER {
                return Err(GenerateError { need: HEADER, len });
            }
            let mut m = vec![0u8; len];
            let mut state = seed ^ u64::from(seq).wrapping_mul(0xD6E8_FEB8_6659_FD93);
            for chunk in m[HEADER..].chunks_mut(8) {
                let r = splitmix(&mut state).to_le_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
            m[..4].copy_from_slice(&seq.to_be_bytes());
            m[4..HEADER].copy_from_slice(&ts_ns.to_be_bytes());
            Ok(m)
        }
    }
}

/// splitmix64 (Steele, Lea & Flood).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A predicate as the spec grammar writes it (`status==2`, `u16@12 in 10..20`, `all`),
/// field names those of `fields`: what `waist stream set --predicate` sends.
///
/// # Errors
///
/// The [`SpecError`] the spec parser gives for it.
pub fn parse_predicate(fields: Option<Fields>, text: &str) -> Result<Predicate, SpecError> {
    let mut spec = alloc::string::String::from("to 0.0.0.0:1");
    if let Some(f) = fields {
        spec.push_str(match f {
            Fields::Image => " | fields image",
            Fields::Flight => " | fields flight",
        });
    }
    spec.push_str(" | filter ");
    spec.push_str(text);
    let parsed: Spec = spec.parse()?;
    match parsed.handlers.as_slice() {
        [HandlerSpec::Filter(p)] => Ok(*p),
        _ => Err(SpecError {
            token: text.into(),
            why: "not one predicate",
        }),
    }
}

/// A handler that rewrites a message on the way, as a subscriber undoes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// `delta PERCENT STEP`: `step` added to each byte of the message's first `percent` %.
    Delta {
        /// Percent of the message rewritten.
        percent: u8,
        /// Added to each byte.
        step: u8,
    },
    /// `byteswap`: every 32-bit word's byte order reversed.
    ByteSwap,
}

impl Transform {
    /// Undoes the transform on `payload` (delta subtracts its step again; a byte swap is
    /// its own inverse).
    pub fn undo(self, payload: Vec<u8>) -> Vec<u8> {
        let msg = Message::new(0, payload);
        let mut out = Vec::with_capacity(1);
        match self {
            Self::Delta { percent, step } => Delta {
                offset: 0,
                percent,
                step: step.wrapping_neg(),
            }
            .handle(msg, &mut out),
            Self::ByteSwap => ByteSwap.handle(msg, &mut out),
        }
        out.pop().map(|m| m.payload).unwrap_or_default()
    }
}

/// The transforms of spec clauses (`delta 20 1 | byteswap`), in order.
///
/// # Errors
///
/// The [`SpecError`] of a clause that does not parse, or that is another handler than
/// `delta` or `byteswap`.
pub fn parse_transforms(text: &str) -> Result<Vec<Transform>, SpecError> {
    let mut spec = alloc::string::String::from("to 0.0.0.0:1 | ");
    spec.push_str(text);
    let parsed: Spec = spec.parse()?;
    if parsed.fields.is_some() || parsed.size.is_some() {
        return Err(SpecError {
            token: text.into(),
            why: "only delta and byteswap clauses rewrite messages",
        });
    }
    parsed
        .handlers
        .iter()
        .map(|h| match *h {
            HandlerSpec::Delta { percent, step } => Ok(Transform::Delta { percent, step }),
            HandlerSpec::ByteSwap => Ok(Transform::ByteSwap),
            _ => Err(SpecError {
                token: alloc::string::ToString::to_string(h),
                why: "not a handler that rewrites messages (delta, byteswap)",
            }),
        })
        .collect()
}

/// Why a publisher cannot make its next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublishError {
    /// The size is shorter than the format's header.
    Generate(GenerateError),
    /// The fragment size is zero, or the message needs more than 65,535 fragments.
    Fragment(FragmentError),
    /// Every message id (2³² of them) was used.
    Exhausted,
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Generate(e) => write!(f, "generating a message: {e}"),
            Self::Fragment(e) => write!(f, "fragmenting a message: {e}"),
            Self::Exhausted => f.write_str("every message id of the stream was used"),
        }
    }
}

impl core::error::Error for PublishError {}

/// What a [`Publisher`] sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublisherConfig {
    /// The stream id of every fragment.
    pub stream: u16,
    /// The declared fields (`None`: the 12-byte header and pseudo-random bytes).
    pub fields: Option<Fields>,
    /// Bytes per message.
    pub size: u32,
    /// The generators' seed.
    pub seed: u64,
    /// Payload bytes per fragment (all but a message's last are full).
    pub fragment: u16,
}

/// A stream's sender: message ids 0, 1, 2, …, each message's `seq` field its id, the
/// fragments' sequence numbers continuing from message to message.
#[derive(Clone, Debug)]
pub struct Publisher {
    cfg: PublisherConfig,
    next_id: Option<u32>,
    next_seq: u32,
}

impl Publisher {
    /// A publisher; its configuration is checked by generating and fragmenting message 0.
    ///
    /// # Errors
    ///
    /// [`PublishError::Generate`] for a size below the format's header,
    /// [`PublishError::Fragment`] for a zero fragment size or too many fragments.
    pub fn new(cfg: PublisherConfig) -> Result<Self, PublishError> {
        let probe = generate(cfg.fields, 0, 0, cfg.seed, cfg.size as usize)
            .map_err(PublishError::Generate)?;
        rudp::fragment(cfg.stream, 0, 0, &probe, cfg.fragment).map_err(PublishError::Fragment)?;
        Ok(Self {
            cfg,
            next_id: Some(0),
            next_seq: 0,
        })
    }

    /// Its configuration.
    pub fn config(&self) -> PublisherConfig {
        self.cfg
    }

    /// Messages made so far.
    pub fn messages(&self) -> u64 {
        self.next_id.map_or(1 << 32, u64::from)
    }

    /// The next message, stamped `ts_ns`, as its RUDP fragments (UDP payloads).
    ///
    /// # Errors
    ///
    /// [`PublishError::Exhausted`] after 2³² messages.
    pub fn next(&mut self, ts_ns: u64) -> Result<Vec<Vec<u8>>, PublishError> {
        let id = self.next_id.ok_or(PublishError::Exhausted)?;
        let c = self.cfg;
        let m = generate(c.fields, id, ts_ns, c.seed, c.size as usize)
            .map_err(PublishError::Generate)?;
        let frags = rudp::fragment(c.stream, id, self.next_seq, &m, c.fragment)
            .map_err(PublishError::Fragment)?;
        self.next_seq = self.next_seq.wrapping_add(frags.len() as u32);
        self.next_id = id.checked_add(1);
        Ok(frags)
    }
}

/// What a subscriber checks of each message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Every byte equals what the publisher generated.
    #[default]
    Content,
    /// The `seq` field is the message id and the length is the size.
    Header,
    /// Nothing: `intact` is `None`.
    Off,
}

/// Why a subscriber refused a fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscribeError {
    /// It is of another stream than the subscriber's.
    OtherStream(u16),
    /// Reassembly refused it (a duplicate, a malformed or inconsistent fragment, …).
    Fragment(ReassemblyError),
}

impl fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherStream(s) => write!(f, "a fragment of stream {s}, not ours"),
            Self::Fragment(e) => write!(f, "fragment refused: {e}"),
        }
    }
}

impl core::error::Error for SubscribeError {}

/// What a [`Subscriber`] expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberConfig {
    /// The stream it takes (fragments of others are ignored, counted).
    pub stream: u16,
    /// The publisher's declared fields.
    pub fields: Option<Fields>,
    /// The publisher's message size.
    pub size: u32,
    /// The publisher's seed.
    pub seed: u64,
    /// What is checked.
    pub verify: Verify,
    /// The handlers that rewrote each message on the way, in order: undone (last first)
    /// before it is read and checked.
    pub undo: Vec<Transform>,
    /// Reassembly limits.
    pub reassembly: ReassemblyConfig,
    /// The filter between the publisher and this subscriber, if any: only the messages
    /// whose generated bytes pass it are expected (the others count as filtered, not
    /// lost), and one that arrives without passing it is counted `unexpected`.
    pub expect: Option<Predicate>,
}

impl SubscriberConfig {
    /// Content verification, default reassembly limits.
    pub fn new(stream: u16, fields: Option<Fields>, size: u32, seed: u64) -> Self {
        Self {
            stream,
            fields,
            size,
            seed,
            verify: Verify::Content,
            undo: Vec::new(),
            reassembly: ReassemblyConfig::default(),
            expect: None,
        }
    }
}

/// One message received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// Its message id.
    pub message: u32,
    /// Its `seq` field (0 if it is shorter than that), transforms undone.
    pub seq: u32,
    /// Its length, bytes.
    pub len: usize,
    /// Arrival time minus its `timestamp_ns` field, saturating at 0 (0 if it is shorter
    /// than the header).
    pub latency_ns: u64,
    /// Whether it is what the publisher sent, as [`Verify`] checks (`None`: not checked).
    pub intact: Option<bool>,
    /// It arrived after a message with a higher id.
    pub reordered: bool,
    /// Its bytes, as received.
    pub payload: Vec<u8>,
}

/// Latencies of the messages received, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    /// Smallest.
    pub min_ns: u64,
    /// Mean (rounded down).
    pub avg_ns: u64,
    /// Median (nearest rank).
    pub p50_ns: u64,
    /// 99th percentile (nearest rank).
    pub p99_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

/// What a subscriber saw, so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Messages received (each at most once).
    pub received: u64,
    /// Of those, intact.
    pub intact: u64,
    /// Of those, checked and found not intact.
    pub corrupt: u64,
    /// Message ids below the highest received (ids start at 0) that never arrived.
    pub lost: u64,
    /// Fragments that repeated one received (of a message in progress or delivered).
    pub duplicates: u64,
    /// Messages that arrived after one with a higher id.
    pub reordered: u64,
    /// Fragments of other streams.
    pub other_streams: u64,
    /// Fragments refused otherwise (malformed, inconsistent, stale, too long).
    pub refused: u64,
    /// Messages received that the expected filter ([`SubscriberConfig::expect`]) does not
    /// pass: a filter on the way let through what it should not have.
    pub unexpected: u64,
    /// The highest message id received.
    pub highest: Option<u32>,
    /// Latency statistics, if anything arrived.
    pub latency: Option<Latency>,
}

impl Summary {
    /// Messages of ids `0..expected` (or up to the highest received, if more) that never
    /// arrived: what is lost once a publisher of `expected` messages is done.
    pub fn lost_of(&self, expected: u64) -> u64 {
        let seen = self.highest.map_or(0, |h| u64::from(h) + 1);
        seen.max(expected).saturating_sub(self.received)
    }
}

/// A stream's receiver. See the [module docs](self).
#[derive(Debug)]
pub struct Subscriber {
    cfg: SubscriberConfig,
    reassembler: Reassembler,
    summary: Summary,
    latencies: Vec<u64>,
    /// Ids received (for the filtered count).
    got: alloc::collections::BTreeSet<u32>,
}

/// What a filtered subscriber should have seen of the publisher's first `sent` messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// Messages the filter passes.
    pub expected: u64,
    /// Of those, not received.
    pub lost: u64,
    /// Messages the filter keeps back (not received, rightly).
    pub filtered: u64,
}

impl Subscriber {
    /// A subscriber that has received nothing.
    pub fn new(cfg: SubscriberConfig) -> Self {
        Self {
            reassembler: Reassembler::new(cfg.reassembly),
            cfg,
            summary: Summary::default(),
            latencies: Vec::new(),
            got: alloc::collections::BTreeSet::new(),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &SubscriberConfig {
        &self.cfg
    }

    /// Takes one UDP payload arriving at `now_ns` (wall clock, ns since the epoch); the
    /// message it completes, if any, checked.
    ///
    /// # Errors
    ///
    /// A [`SubscribeError`] for a fragment refused (counted in the [`Summary`]).
    pub fn handle_fragment(
        &mut self,
        now_ns: u64,
        packet: &[u8],
    ) -> Result<Option<Received>, SubscribeError> {
        let s = &mut self.summary;
        let refused = |s: &mut Summary, e: ReassemblyError| {
            match e {
                ReassemblyError::Duplicate | ReassemblyError::AlreadyDelivered => s.duplicates += 1,
                _ => s.refused += 1,
            }
            SubscribeError::Fragment(e)
        };
        let h = rudp::Header::parse(packet).map_err(|e| refused(s, e))?;
        if h.stream != self.cfg.stream {
            s.other_streams += 1;
            return Err(SubscribeError::OtherStream(h.stream));
        }
        let now = sansio::Instant::from_micros(now_ns / 1000);
        let Some(a) = self
            .reassembler
            .handle_fragment(now, packet)
            .map_err(|e| refused(s, e))?
        else {
            return Ok(None);
        };
        let r = self.check(now_ns, a.message, a.payload);
        let s = &mut self.summary;
        s.received += 1;
        match r.intact {
            Some(true) => s.intact += 1,
            Some(false) => s.corrupt += 1,
            None => {}
        }
        s.reordered += u64::from(r.reordered);
        s.highest = s.highest.max(Some(r.message));
        self.latencies.push(r.latency_ns);
        self.got.insert(r.message);
        if !self.passes(r.message) {
            self.summary.unexpected += 1;
        }
        Ok(Some(r))
    }

    /// Whether message `id`, as the publisher generates it, passes the expected filter
    /// (true without one). Fields other than the timestamp do not depend on the time, so
    /// the message is generated at time 0.
    pub fn passes(&self, id: u32) -> bool {
        let Some(p) = self.cfg.expect else {
            return true;
        };
        let c = &self.cfg;
        generate(c.fields, id, 0, c.seed, c.size as usize).is_ok_and(|m| p.matches(&m))
    }

    /// Of the publisher's messages `0..sent` (or up to the highest received, if more):
    /// how many the filter passes, how many of those never arrived, how many it keeps.
    pub fn expected(&self, sent: u64) -> Expected {
        let seen = self.summary.highest.map_or(0, |h| u64::from(h) + 1);
        let n = u32::try_from(seen.max(sent)).unwrap_or(u32::MAX);
        let mut e = Expected::default();
        for id in 0..n {
            match (self.passes(id), self.got.contains(&id)) {
                (true, got) => {
                    e.expected += 1;
                    e.lost += u64::from(!got);
                }
                (false, false) => e.filtered += 1,
                (false, true) => {}
            }
        }
        e
    }

    fn check(&self, now_ns: u64, message: u32, payload: Vec<u8>) -> Received {
        let c = &self.cfg;
        let undone;
        let restored: &[u8] = if c.undo.is_empty() {
            &payload
        } else {
            undone = c.undo.iter().rev().fold(payload.clone(), |p, t| t.undo(p));
            &undone
        };
        let u32_at = |p: &[u8]| {
            p.get(..4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let ts = restored
            .get(4..HEADER)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes);
        let seq = u32_at(restored);
        let right_len = restored.len() == c.size as usize;
        let intact = match c.verify {
            Verify::Off => None,
            Verify::Header => Some(seq == Some(message) && right_len),
            Verify::Content => Some(
                right_len
                    && ts.is_some_and(|ts| {
                        generate(c.fields, message, ts, c.seed, restored.len())
                            .is_ok_and(|want| want.as_slice() == restored)
                    }),
            ),
        };
        Received {
            message,
            seq: seq.unwrap_or(0),
            len: payload.len(),
            latency_ns: ts.map_or(0, |ts| now_ns.saturating_sub(ts)),
            intact,
            reordered: self.summary.highest.is_some_and(|h| h > message),
            payload,
        }
    }

    /// Drops partial messages whose next fragment is overdue at `now_ns`.
    pub fn expire(&mut self, now_ns: u64) {
        self.reassembler
            .expire(sansio::Instant::from_micros(now_ns / 1000));
    }

    /// What it saw so far; `lost` counts the gaps below the highest id received (with an
    /// expected filter, only the ids it passes).
    pub fn summary(&self) -> Summary {
        let mut s = self.summary;
        s.lost = match self.cfg.expect {
            Some(_) => self.expected(0).lost,
            None => s.lost_of(0),
        };
        s.latency = latency(&self.latencies);
        s
    }
}

/// Min, mean, nearest-rank median and 99th percentile, max; `None` for no samples.
fn latency(samples: &[u64]) -> Option<Latency> {
    let mut v = samples.to_vec();
    v.sort_unstable();
    let (&min_ns, &max_ns) = (v.first()?, v.last()?);
    let n = v.len();
    let rank = |p: usize| v[(n * p).div_ceil(100).clamp(1, n) - 1];
    let sum: u128 = v.iter().map(|&x| u128::from(x)).sum();
    Some(Latency {
        min_ns,
        avg_ns: u64::try_from(sum / n as u128).unwrap_or(u64::MAX),
        p50_ns: rank(50),
        p99_ns: rank(99),
        max_ns,
    })
}
