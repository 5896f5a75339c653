//! The format of delta-encoded transport continuations (paper §5.3, §6.1 "Optimizations").
//! What the client and server predict, the other half, is [`crate::delta::predict`].
//!
//! The client runs the server's own [`cc::plan`](crate::cc::plan) for every request it
//! sends, so it already knows most of each continuation the server will issue. A client
//! that sets [`REQUEST_FLAG_DELTA`](crate::wire::REQUEST_FLAG_DELTA) lets the server send,
//! instead of the 54-byte [`Continuation`], a [`ContinuationDelta`]: the fields the client
//! cannot predict (RTT, timestamp, tag) and any field that differs from the prediction.
//! The tag is still the MAC over the *full* continuation; the client rebuilds it with
//! [`ContinuationDelta::apply`] and presents it in full in its next request, so the
//! server's verification is unchanged.
//!
//! # Wire form
//!
//! ```text
//!  0       2        6              10                                          n−16    n
//! | present | rtt_us | timestamp_ms | the fields whose bit is set, in bit order | tag |
//! ```
//!
//! `present` is a big-endian `u16`; bit `i` set means field `i` follows: 0 `number` (4
//! bytes), 1 `tcp_base` (4), 2 `start_cwnd` (2), 3 `ssthresh` (2), 4 `proof_start` (4),
//! 5 `epoch_start` (1), 6 `rtx` (1), 7 `site` (2), 8 `key_epoch` (1), 9 `conn_nonce` (8).
//! Bits 10–15 are reserved and must be 0. The smallest delta is [`DELTA_MIN_LEN`] (26)
//! bytes, the largest [`DELTA_MAX_LEN`] (55).
//!
//! ```
//! use trickles::wire::continuation::{Continuation, EpochStart};
//! use trickles::wire::delta::ContinuationDelta;
//!
//! let predicted = Continuation {
//!     number: 9, tcp_base: 3, start_cwnd: 3, ssthresh: 8191, proof_start: 1,
//!     rtt_us: 0, timestamp_ms: 0, epoch_start: EpochStart::Open, rtx: 0, site: 0,
//!     key_epoch: 0, flags: 0, conn_nonce: 77, tag: [0; 16],
//! };
//! let actual = Continuation { rtt_us: 20_000, timestamp_ms: 5, key_epoch: 1, tag: [9; 16], ..predicted };
//! let delta = ContinuationDelta::between(&predicted, &actual);
//! assert_eq!(delta.key_epoch, Some(1));
//! let mut buf = [0u8; 64];
//! let n = delta.emit(&mut buf).unwrap();
//! assert_eq!(n, 26 + 1);
//! let (parsed, used) = ContinuationDelta::parse(&buf[..n]).unwrap();
//! assert_eq!((parsed, used), (delta, n));
//! assert_eq!(parsed.apply(&predicted), actual);
//! ```

use super::continuation::{Continuation, EpochStart};
use super::{Reader, WireError, Writer};

/// Length of a delta that carries only the unpredictable fields: bitmap, RTT, timestamp,
/// tag.
pub const DELTA_MIN_LEN: usize = 2 + 4 + 4 + 16;

/// Length of a delta that carries every field.
pub const DELTA_MAX_LEN: usize = DELTA_MIN_LEN + 4 + 4 + 2 + 2 + 4 + 1 + 1 + 2 + 1 + 8;

/// Presence bits, one per optional field, in wire order.
mod bit {
    pub(super) const NUMBER: u16 = 1 << 0;
    pub(super) const TCP_BASE: u16 = 1 << 1;
    pub(super) const START_CWND: u16 = 1 << 2;
    pub(super) const SSTHRESH: u16 = 1 << 3;
    pub(super) const PROOF_START: u16 = 1 << 4;
    pub(super) const EPOCH_START: u16 = 1 << 5;
    pub(super) const RTX: u16 = 1 << 6;
    pub(super) const SITE: u16 = 1 << 7;
    pub(super) const KEY_EPOCH: u16 = 1 << 8;
    pub(super) const CONN_NONCE: u16 = 1 << 9;
    /// Every defined bit.
    pub(super) const ALL: u16 = (1 << 10) - 1;
}

/// A transport continuation as the difference from the client's prediction.
///
/// The unpredictable fields are always present; every other field is `Some` exactly when
/// it differs from the prediction (as [`ContinuationDelta::between`] builds it), or
/// wherever a parsed delta carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContinuationDelta {
    /// The new smoothed RTT estimate, microseconds.
    pub rtt_us: u32,
    /// Server time when issued, milliseconds.
    pub timestamp_ms: u32,
    /// The MAC over the full continuation (not over the delta).
    pub tag: [u8; 16],
    /// Packet number, if not the predicted one.
    pub number: Option<u32>,
    /// Epoch base, if not predicted.
    pub tcp_base: Option<u32>,
    /// Epoch start window, if not predicted.
    pub start_cwnd: Option<u16>,
    /// Slow-start threshold, if not predicted.
    pub ssthresh: Option<u16>,
    /// Lowest packet number later proofs must describe, if not predicted.
    pub proof_start: Option<u32>,
    /// How the epoch began, if not predicted.
    pub epoch_start: Option<EpochStart>,
    /// Consecutive timeouts, if not predicted.
    pub rtx: Option<u8>,
    /// Issuing site, if not the request continuation's.
    pub site: Option<u16>,
    /// MAC key epoch, if not the request continuation's (a key rotation).
    pub key_epoch: Option<u8>,
    /// Connection nonce, if not the request continuation's (a SYN's responses).
    pub conn_nonce: Option<u64>,
}

/// `Some(actual)` if it differs from `predicted`.
fn differs<T: PartialEq>(predicted: T, actual: T) -> Option<T> {
    (predicted != actual).then_some(actual)
}

impl ContinuationDelta {
    /// The delta that turns `predicted` into `actual`: the unpredictable fields of
    /// `actual`, and every other field of `actual` that differs from `predicted`.
    /// `flags` is not carried: the prediction's must already be `actual`'s (a connection's
    /// flags never change after the SYN; [`ContinuationDelta::reproduces`] checks it).
    pub fn between(predicted: &Continuation, actual: &Continuation) -> ContinuationDelta {
        ContinuationDelta {
            rtt_us: actual.rtt_us,
            timestamp_ms: actual.timestamp_ms,
            tag: actual.tag,
            number: differs(predicted.number, actual.number),
            tcp_base: differs(predicted.tcp_base, actual.tcp_base),
            start_cwnd: differs(predicted.start_cwnd, actual.start_cwnd),
            ssthresh: differs(predicted.ssthresh, actual.ssthresh),
            proof_start: differs(predicted.proof_start, actual.proof_start),
            epoch_start: differs(predicted.epoch_start, actual.epoch_start),
            rtx: differs(predicted.rtx, actual.rtx),
            site: differs(predicted.site, actual.site),
            key_epoch: differs(predicted.key_epoch, actual.key_epoch),
            conn_nonce: differs(predicted.conn_nonce, actual.conn_nonce),
        }
    }

    /// Whether [`apply`](ContinuationDelta::apply) of the delta of `actual` from
    /// `predicted` gives `actual` back: always, except when their `flags` differ (a delta
    /// does not carry them). A server sends the full continuation then.
    pub fn reproduces(predicted: &Continuation, actual: &Continuation) -> bool {
        predicted.flags == actual.flags
    }

    /// The full continuation: `predicted` with this delta's fields put in (`flags` are
    /// `predicted`'s). Call it with the prediction for the response's packet number.
    pub fn apply(&self, predicted: &Continuation) -> Continuation {
        Continuation {
            number: self.number.unwrap_or(predicted.number),
            tcp_base: self.tcp_base.unwrap_or(predicted.tcp_base),
            start_cwnd: self.start_cwnd.unwrap_or(predicted.start_cwnd),
            ssthresh: self.ssthresh.unwrap_or(predicted.ssthresh),
            proof_start: self.proof_start.unwrap_or(predicted.proof_start),
            rtt_us: self.rtt_us,
            timestamp_ms: self.timestamp_ms,
            epoch_start: self.epoch_start.unwrap_or(predicted.epoch_start),
            rtx: self.rtx.unwrap_or(predicted.rtx),
            site: self.site.unwrap_or(predicted.site),
            key_epoch: self.key_epoch.unwrap_or(predicted.key_epoch),
            flags: predicted.flags,
            conn_nonce: self.conn_nonce.unwrap_or(predicted.conn_nonce),
            tag: self.tag,
        }
    }

    /// The presence bitmap: bit `i` set for each optional field carried.
    pub fn present(&self) -> u16 {
        let bits = [
            (self.number.is_some(), bit::NUMBER),
            (self.tcp_base.is_some(), bit::TCP_BASE),
            (self.start_cwnd.is_some(), bit::START_CWND),
            (self.ssthresh.is_some(), bit::SSTHRESH),
            (self.proof_start.is_some(), bit::PROOF_START),
            (self.epoch_start.is_some(), bit::EPOCH_START),
            (self.rtx.is_some(), bit::RTX),
            (self.site.is_some(), bit::SITE),
            (self.key_epoch.is_some(), bit::KEY_EPOCH),
            (self.conn_nonce.is_some(), bit::CONN_NONCE),
        ];
        bits.iter()
            .filter(|(on, _)| *on)
            .fold(0, |acc, (_, b)| acc | b)
    }

    /// The number of bytes [`ContinuationDelta::emit`] writes: [`DELTA_MIN_LEN`] plus
    /// each carried field.
    pub fn buffer_len(&self) -> usize {
        let opt = |on: bool, n: usize| if on { n } else { 0 };
        DELTA_MIN_LEN
            + opt(self.number.is_some(), 4)
            + opt(self.tcp_base.is_some(), 4)
            + opt(self.start_cwnd.is_some(), 2)
            + opt(self.ssthresh.is_some(), 2)
            + opt(self.proof_start.is_some(), 4)
            + opt(self.epoch_start.is_some(), 1)
            + opt(self.rtx.is_some(), 1)
            + opt(self.site.is_some(), 2)
            + opt(self.key_epoch.is_some(), 1)
            + opt(self.conn_nonce.is_some(), 8)
    }

    /// Writes the delta to the front of `out` and returns its length,
    /// [`ContinuationDelta::buffer_len`], or [`WireError::BadLength`] if `out` is too
    /// small.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        let mut w = Writer::new(out);
        w.put(&self.present().to_be_bytes())?;
        w.put(&self.rtt_us.to_be_bytes())?;
        w.put(&self.timestamp_ms.to_be_bytes())?;
        if let Some(v) = self.number {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.tcp_base {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.start_cwnd {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.ssthresh {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.proof_start {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.epoch_start {
            w.put(&[u8::from(v)])?;
        }
        if let Some(v) = self.rtx {
            w.put(&[v])?;
        }
        if let Some(v) = self.site {
            w.put(&v.to_be_bytes())?;
        }
        if let Some(v) = self.key_epoch {
            w.put(&[v])?;
        }
        if let Some(v) = self.conn_nonce {
            w.put(&v.to_be_bytes())?;
        }
        w.put(&self.tag)?;
        Ok(w.written())
    }

    /// Parses a delta from the front of `bytes`; returns it and how many bytes it took
    /// (the rest of the message follows it).
    ///
    /// Errors: [`WireError::Truncated`] if `bytes` ends inside it,
    /// [`WireError::Continuation`] for a reserved presence bit or an unknown
    /// `epoch_start` byte.
    pub fn parse(bytes: &[u8]) -> Result<(ContinuationDelta, usize), WireError> {
        let mut r = Reader::new(bytes);
        let present = u16::from_be_bytes(r.array()?);
        if present & !bit::ALL != 0 {
            return Err(WireError::Continuation);
        }
        let on = |b: u16| present & b != 0;
        let rtt_us = u32::from_be_bytes(r.array()?);
        let timestamp_ms = u32::from_be_bytes(r.array()?);
        let number = opt(&mut r, on(bit::NUMBER), u32::from_be_bytes)?;
        let tcp_base = opt(&mut r, on(bit::TCP_BASE), u32::from_be_bytes)?;
        let start_cwnd = opt(&mut r, on(bit::START_CWND), u16::from_be_bytes)?;
        let ssthresh = opt(&mut r, on(bit::SSTHRESH), u16::from_be_bytes)?;
        let proof_start = opt(&mut r, on(bit::PROOF_START), u32::from_be_bytes)?;
        let epoch_start = match opt(&mut r, on(bit::EPOCH_START), u8::from_be_bytes)? {
            Some(b) => Some(EpochStart::try_from(b)?),
            None => None,
        };
        let rtx = opt(&mut r, on(bit::RTX), u8::from_be_bytes)?;
        let site = opt(&mut r, on(bit::SITE), u16::from_be_bytes)?;
        let key_epoch = opt(&mut r, on(bit::KEY_EPOCH), u8::from_be_bytes)?;
        let conn_nonce = opt(&mut r, on(bit::CONN_NONCE), u64::from_be_bytes)?;
        let tag = r.array()?;
        let delta = ContinuationDelta {
            rtt_us,
            timestamp_ms,
            tag,
            number,
            tcp_base,
            start_cwnd,
            ssthresh,
            proof_start,
            epoch_start,
            rtx,
            site,
            key_epoch,
            conn_nonce,
        };
        Ok((delta, bytes.len() - r.remaining()))
    }
}

/// The next field, decoded with `from`, if `on`.
fn opt<const N: usize, T>(
    r: &mut Reader<'_>,
    on: bool,
    from: fn([u8; N]) -> T,
) -> Result<Option<T>, WireError> {
    if on {
        Ok(Some(from(r.array()?)))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Continuation {
        Continuation {
            number: 7,
            tcp_base: 3,
            start_cwnd: 3,
            ssthresh: 8191,
            proof_start: 5,
            rtt_us: 0,
            timestamp_ms: 0,
            epoch_start: EpochStart::Open,
            rtx: 0,
            site: 9,
            key_epoch: 2,
            flags: 0,
            conn_nonce: 0x0102_0304_0506_0708,
            tag: [0; 16],
        }
    }

    /// Only the unpredictable fields, then the same with `site` and `key_epoch`.
    const MIN: [u8; DELTA_MIN_LEN] = [
        0, 0, // present: nothing
        0, 0, 0x4E, 0x20, // rtt_us 20 000
        0x00, 0x01, 0xE2, 0x40, // timestamp_ms 123 456
        0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, // tag
        0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF,
    ];
    const SITE_KEY: [u8; DELTA_MIN_LEN + 3] = [
        0x01, 0x80, // present: site, key_epoch
        0, 0, 0x4E, 0x20, // rtt_us
        0x00, 0x01, 0xE2, 0x40, // timestamp_ms
        0x00, 0x0A, // site 10
        3,    // key_epoch 3
        0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, // tag
        0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF,
    ];

    fn actual() -> Continuation {
        Continuation {
            rtt_us: 20_000,
            timestamp_ms: 123_456,
            tag: [
                0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD,
                0xAE, 0xAF,
            ],
            ..base()
        }
    }

    #[test]
    fn literal_minimal_delta() {
        let d = ContinuationDelta::between(&base(), &actual());
        assert_eq!(d.present(), 0);
        let mut out = [0u8; DELTA_MAX_LEN];
        assert_eq!(d.emit(&mut out), Ok(DELTA_MIN_LEN));
        assert_eq!(out[..DELTA_MIN_LEN], MIN);
        assert_eq!(ContinuationDelta::parse(&MIN), Ok((d, DELTA_MIN_LEN)));
        assert_eq!(d.apply(&base()), actual());
    }

    #[test]
    fn literal_site_and_key_epoch() {
        let a = Continuation {
            site: 10,
            key_epoch: 3,
            ..actual()
        };
        let d = ContinuationDelta::between(&base(), &a);
        assert_eq!((d.site, d.key_epoch, d.number), (Some(10), Some(3), None));
        let mut out = [0u8; DELTA_MAX_LEN];
        assert_eq!(d.emit(&mut out), Ok(SITE_KEY.len()));
        assert_eq!(out[..SITE_KEY.len()], SITE_KEY);
        assert_eq!(ContinuationDelta::parse(&SITE_KEY), Ok((d, SITE_KEY.len())));
        assert_eq!(d.apply(&base()), a);
    }

    #[test]
    fn every_field_differs() {
        let a = Continuation {
            number: 70,
            tcp_base: 30,
            start_cwnd: 4,
            ssthresh: 5,
            proof_start: 6,
            epoch_start: EpochStart::Timeout,
            rtx: 1,
            site: 2,
            key_epoch: 3,
            conn_nonce: 4,
            ..actual()
        };
        let d = ContinuationDelta::between(&base(), &a);
        assert_eq!(d.present(), bit::ALL);
        assert_eq!(d.buffer_len(), DELTA_MAX_LEN);
        let mut out = [0u8; DELTA_MAX_LEN + 3];
        assert_eq!(d.emit(&mut out), Ok(DELTA_MAX_LEN));
        assert_eq!(ContinuationDelta::parse(&out), Ok((d, DELTA_MAX_LEN)));
        assert_eq!(d.apply(&base()), a);
        assert_eq!(
            d.emit(&mut out[..DELTA_MAX_LEN - 1]),
            Err(WireError::BadLength)
        );
    }

    #[test]
    fn rejects_reserved_bits_bad_epoch_and_truncation() {
        let mut b = MIN;
        b[0] = 0x04;
        assert_eq!(ContinuationDelta::parse(&b), Err(WireError::Continuation));
        let mut b = [0u8; DELTA_MIN_LEN + 1];
        b[1] = 0x20; // epoch_start present
        b[10] = 3; // unknown epoch byte
        assert_eq!(ContinuationDelta::parse(&b), Err(WireError::Continuation));
        for n in 0..MIN.len() {
            assert_eq!(
                ContinuationDelta::parse(&MIN[..n]),
                Err(WireError::Truncated)
            );
        }
    }
}
