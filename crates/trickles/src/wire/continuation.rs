//! The transport continuation: the part of a TCP control block the server needs to act as
//! TCP would, carried by the client and returned with every request (paper §2.1, Fig. 3).
//!
//! Fixed 54 bytes, big-endian. Bytes `0..38` are the server-owned fields the MAC covers
//! (together with the connection's [`FourTuple`](crate::conn::FourTuple); the exact MAC
//! input is [`ServerKeys::mac_continuation`](crate::crypto::ServerKeys::mac_continuation)'s);
//! bytes `38..54` are the tag. This module only encodes and decodes: computing and checking the tag is the
//! crypto module's job, and the meaning of the fields is the congestion controller's.
//!
//! ```text
//!  0      4        8     10     12       16     20      24 25 26   28 29 30         38     54
//! | number | tcp_base |start|ssthr| proof_  | rtt_ | time- |ep|rt|site|ke|fl| conn_nonce | tag |
//! |        |          |cwnd |esh  | start   | us   | stamp |  |x |    |y |  |            |     |
//! ```
//!
//! ```
//! use trickles::wire::continuation::{CONTINUATION_LEN, Continuation, EpochStart};
//! let c = Continuation {
//!     number: 7,
//!     tcp_base: 3,
//!     start_cwnd: 3,
//!     ssthresh: 8191,
//!     proof_start: 5,
//!     rtt_us: 20_000,
//!     timestamp_ms: 123_456,
//!     epoch_start: EpochStart::Recovery,
//!     rtx: 0,
//!     site: 1,
//!     key_epoch: 2,
//!     flags: 0,
//!     conn_nonce: 0x0123_4567_89ab_cdef,
//!     tag: [0xAA; 16],
//! };
//! let mut bytes = [0u8; CONTINUATION_LEN];
//! c.emit(&mut bytes);
//! assert_eq!(Continuation::parse(&bytes), Ok(c));
//! ```

use super::{Reader, WireError};

/// Length of an encoded continuation, tag included.
pub const CONTINUATION_LEN: usize = 54;

/// Length of the MACed prefix (every field but the tag).
pub const MAC_FIELDS_LEN: usize = 38;

/// [`Continuation::flags`] bit 0: the connection runs with delayed acknowledgments
/// ([`CcConfig::delayed_ack`](crate::cc::CcConfig::delayed_ack)): only every other packet
/// of an epoch carries a continuation. Set by the server at the SYN when the client asked
/// for it ([`REQUEST_FLAG_DELAYED_ACK`](super::REQUEST_FLAG_DELAYED_ACK)) and it grants
/// it, and kept by every continuation of the connection after that; covered by the MAC,
/// so a client cannot switch it.
pub const CONTINUATION_FLAG_DELAYED_ACK: u8 = 0x01;

/// Every [`Continuation::flags`] bit with a meaning; the others are reserved (0).
pub const CONTINUATION_FLAGS: u8 = CONTINUATION_FLAG_DELAYED_ACK;

/// Byte offsets of the fields.
mod field {
    pub(super) const EPOCH_START: usize = 24;
    pub(super) const FLAGS: usize = 29;
}

/// How the current loss-free epoch of the congestion window began.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EpochStart {
    /// The connection opened: slow start from the initial window.
    Open = 0,
    /// Fast recovery after a loss the SACK proof reported.
    Recovery = 1,
    /// A retransmit timeout: slow start from one packet.
    Timeout = 2,
}

impl TryFrom<u8> for EpochStart {
    type Error = WireError;

    /// Returns [`WireError::Continuation`] for any byte but 0, 1 and 2.
    fn try_from(value: u8) -> Result<EpochStart, WireError> {
        match value {
            0 => Ok(EpochStart::Open),
            1 => Ok(EpochStart::Recovery),
            2 => Ok(EpochStart::Timeout),
            _ => Err(WireError::Continuation),
        }
    }
}

impl From<EpochStart> for u8 {
    fn from(value: EpochStart) -> u8 {
        match value {
            EpochStart::Open => 0,
            EpochStart::Recovery => 1,
            EpochStart::Timeout => 2,
        }
    }
}

/// A decoded transport continuation.
///
/// Any value can be emitted; [`Continuation::parse`] accepts exactly the encodings whose
/// `flags` byte has no reserved bit (only [`CONTINUATION_FLAGS`]) and whose `epoch_start`
/// byte names an [`EpochStart`], so an emitted continuation with such `flags` parses back
/// to itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Continuation {
    /// Packet number of the response that carries this continuation; a request using it
    /// is "request number `number`". Bytes 0..4.
    pub number: u32,
    /// `TCPBase`: the request number at which the current epoch of `TCPCwnd` (Fig. 8)
    /// began. Bytes 4..8.
    pub tcp_base: u32,
    /// `startCwnd`: the window at `tcp_base`. Bytes 8..10.
    pub start_cwnd: u16,
    /// `ssthresh`: the slow-start threshold of the epoch. Bytes 10..12.
    pub ssthresh: u16,
    /// Lowest packet number a SACK proof must still describe; losses below it are already
    /// accounted for. Bytes 12..16.
    pub proof_start: u32,
    /// Smoothed round-trip time estimate, microseconds. Bytes 16..20.
    pub rtt_us: u32,
    /// Server time when issued, milliseconds, wrapping. Bytes 20..24.
    pub timestamp_ms: u32,
    /// How the current loss-free epoch began. Byte 24.
    pub epoch_start: EpochStart,
    /// Consecutive retransmit timeouts that led to this continuation. Byte 25.
    pub rtx: u8,
    /// Id of the server site that issued it. Bytes 26..28.
    pub site: u16,
    /// Which MAC key epoch the tag was made with. Byte 28.
    pub key_epoch: u8,
    /// [`CONTINUATION_FLAG_DELAYED_ACK`]; the other bits are reserved, 0
    /// ([`Continuation::parse`] rejects them). Byte 29.
    pub flags: u8,
    /// Per-connection nonce chosen by the server at the SYN. Bytes 30..38.
    pub conn_nonce: u64,
    /// MAC tag over the fields and the connection's four-tuple
    /// ([`ServerKeys::mac_continuation`](crate::crypto::ServerKeys::mac_continuation)).
    /// Bytes 38..54.
    pub tag: [u8; 16],
}

impl Continuation {
    /// Decodes a continuation from exactly [`CONTINUATION_LEN`] bytes.
    ///
    /// Returns [`WireError::Truncated`] if `bytes` is shorter, [`WireError::BadLength`] if
    /// longer (the caller slices it out of the message), and [`WireError::Continuation`] if
    /// a reserved `flags` bit is set or the `epoch_start` byte is unknown. The tag is not
    /// checked here.
    #[inline(always)]
    pub fn parse(bytes: &[u8]) -> Result<Continuation, WireError> {
        let all: &[u8; CONTINUATION_LEN] = match bytes.len() {
            n if n < CONTINUATION_LEN => return Err(WireError::Truncated),
            n if n > CONTINUATION_LEN => return Err(WireError::BadLength),
            _ => bytes.try_into().map_err(|_| WireError::BadLength)?,
        };
        let (mac, tag) = all.split_at(MAC_FIELDS_LEN);
        // The length is checked above: `fixed` reads the layout without an error path.
        let mut r = Reader::new(mac);
        let c = Continuation {
            number: u32::from_be_bytes(r.fixed()),
            tcp_base: u32::from_be_bytes(r.fixed()),
            start_cwnd: u16::from_be_bytes(r.fixed()),
            ssthresh: u16::from_be_bytes(r.fixed()),
            proof_start: u32::from_be_bytes(r.fixed()),
            rtt_us: u32::from_be_bytes(r.fixed()),
            timestamp_ms: u32::from_be_bytes(r.fixed()),
            epoch_start: EpochStart::try_from(u8::from_be_bytes(r.fixed()))?,
            rtx: u8::from_be_bytes(r.fixed()),
            site: u16::from_be_bytes(r.fixed()),
            key_epoch: u8::from_be_bytes(r.fixed()),
            flags: u8::from_be_bytes(r.fixed()),
            conn_nonce: u64::from_be_bytes(r.fixed()),
            tag: tag.try_into().map_err(|_| WireError::BadLength)?,
        };
        if c.flags & !CONTINUATION_FLAGS != 0 {
            return Err(WireError::Continuation);
        }
        Ok(c)
    }

    /// Whether the connection runs with delayed acknowledgments
    /// ([`CONTINUATION_FLAG_DELAYED_ACK`]).
    pub fn delayed_ack(&self) -> bool {
        self.flags & CONTINUATION_FLAG_DELAYED_ACK != 0
    }

    /// Whether `flags` has only defined bits: what [`Continuation::parse`] accepts.
    pub fn flags_valid(&self) -> bool {
        self.flags & !CONTINUATION_FLAGS == 0
    }

    /// Encodes the continuation, tag included, into `out`.
    ///
    /// Writes `flags` as it is; a reserved bit set will not parse back.
    pub fn emit(&self, out: &mut [u8; CONTINUATION_LEN]) {
        let (mac, tag) = out.split_at_mut(MAC_FIELDS_LEN);
        self.write_fields(mac);
        tag.copy_from_slice(&self.tag);
    }

    /// The encoding of bytes `0..38`, the fields the tag authenticates.
    pub fn mac_fields(&self) -> [u8; MAC_FIELDS_LEN] {
        let mut out = [0u8; MAC_FIELDS_LEN];
        self.write_fields(&mut out);
        out
    }

    /// Writes bytes `0..38` straight into `out` (at least that long): each field is one
    /// store at a fixed offset, so a continuation is emitted without a temporary whose
    /// narrow stores a wide copy would have to wait for.
    #[inline(always)]
    fn write_fields(&self, out: &mut [u8]) {
        let mut n = 0;
        let mut put = |bytes: &[u8]| {
            if let Some(dst) = out.get_mut(n..n + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
            n += bytes.len();
        };
        put(&self.number.to_be_bytes());
        put(&self.tcp_base.to_be_bytes());
        put(&self.start_cwnd.to_be_bytes());
        put(&self.ssthresh.to_be_bytes());
        put(&self.proof_start.to_be_bytes());
        put(&self.rtt_us.to_be_bytes());
        put(&self.timestamp_ms.to_be_bytes());
        put(&[u8::from(self.epoch_start)]);
        put(&[self.rtx]);
        put(&self.site.to_be_bytes());
        put(&[self.key_epoch]);
        put(&[self.flags]);
        put(&self.conn_nonce.to_be_bytes());
        debug_assert_eq!(n, MAC_FIELDS_LEN);
        debug_assert_eq!(
            out.get(field::EPOCH_START),
            Some(&u8::from(self.epoch_start))
        );
        debug_assert_eq!(out.get(field::FLAGS), Some(&self.flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; CONTINUATION_LEN] = [
        0, 0, 0, 7, // number
        0, 0, 0, 3, // tcp_base
        0, 3, // start_cwnd
        0x1F, 0xFF, // ssthresh
        0, 0, 0, 5, // proof_start
        0, 0, 0x4E, 0x20, // rtt_us 20 000
        0x00, 0x01, 0xE2, 0x40, // timestamp_ms 123 456
        1,    // epoch_start Recovery
        4,    // rtx
        0, 9, // site
        2, // key_epoch
        0, // flags
        1, 2, 3, 4, 5, 6, 7, 8, // conn_nonce
        0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, // tag
        0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF,
    ];

    fn value() -> Continuation {
        Continuation {
            number: 7,
            tcp_base: 3,
            start_cwnd: 3,
            ssthresh: 8191,
            proof_start: 5,
            rtt_us: 20_000,
            timestamp_ms: 123_456,
            epoch_start: EpochStart::Recovery,
            rtx: 4,
            site: 9,
            key_epoch: 2,
            flags: 0,
            conn_nonce: 0x0102_0304_0506_0708,
            tag: [
                0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD,
                0xAE, 0xAF,
            ],
        }
    }

    #[test]
    fn parse_literal() {
        assert_eq!(Continuation::parse(&BYTES), Ok(value()));
    }

    #[test]
    fn emit_literal() {
        let mut out = [0u8; CONTINUATION_LEN];
        value().emit(&mut out);
        assert_eq!(out, BYTES);
        assert_eq!(value().mac_fields()[..], BYTES[..MAC_FIELDS_LEN]);
        assert_eq!(CONTINUATION_LEN - MAC_FIELDS_LEN, value().tag.len());
    }

    #[test]
    fn rejects_reserved_and_unknown_bytes_and_wrong_lengths() {
        let mut b = BYTES;
        b[field::FLAGS] = 0x80;
        assert_eq!(Continuation::parse(&b), Err(WireError::Continuation));
        let mut b = BYTES;
        b[field::EPOCH_START] = 3;
        assert_eq!(Continuation::parse(&b), Err(WireError::Continuation));
        assert_eq!(Continuation::parse(&BYTES[..53]), Err(WireError::Truncated));
        let mut long = [0u8; CONTINUATION_LEN + 1];
        long[..CONTINUATION_LEN].copy_from_slice(&BYTES);
        assert_eq!(Continuation::parse(&long), Err(WireError::BadLength));
    }

    #[test]
    fn epoch_start_bytes() {
        for e in [EpochStart::Open, EpochStart::Recovery, EpochStart::Timeout] {
            assert_eq!(EpochStart::try_from(u8::from(e)), Ok(e));
            assert_eq!(u8::from(e), e as u8);
        }
    }
}
