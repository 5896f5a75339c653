//! Where the flow id and source hash ride: an IPv4 option, and the IPv6 flow label.
//!
//! **IPv4: the source-hash option.** Option type 94 — RFC 4727's experimental value
//! (copy 0, class 2, number 30; not 158, which is in use) — laid out so that the source
//! hash is word-aligned when the option is the first one (IPv4 options start at header
//! byte 20), as §3.5 asks, so a router reads it with one aligned load:
//!
//! ```text
//!  0        1        2        3
//! +--------+--------+--------+--------+
//! | 94     | length | reserved (0)    |   length = 8 + flow id bytes (8 ..= 24)
//! +--------+--------+--------+--------+
//! | source hash (32 bits, big-endian) |   header byte 24: aligned
//! +--------+--------+--------+--------+
//! | flow id (0 ..= 16 bytes)        ...
//! ```
//!
//! The flow id is optional: applications that derive their flow id from header fields the
//! decision depends on (the route and filter caches of [`crate::apps`]) send none and save
//! the bytes. [`insert_ipv4_option`] adds the option to a packet (padding the header to a
//! word with end-of-list bytes, fixing IHL, total length and the header checksum);
//! [`find_ipv4_option`] walks a header's options and returns ours.
//!
//! **IPv6: the flow label.** RFC 6437 makes the 20-bit flow label a sender-chosen,
//! uniformly distributed value that stays the same for a flow — a source hash with 20
//! random bits, no new field needed. [`ipv6_flow_label`] reads it, [`set_ipv6_flow_label`]
//! writes it; the flow id is then taken from the header (the 16-byte destination address
//! for a route cache).
//!
//! ```
//! use fastpath::wire::SourceHashOption;
//! use fastpath::{FlowId, SourceHash};
//!
//! let opt = SourceHashOption {
//!     hash: SourceHash::new(0xdead_beef),
//!     flow_id: Some(FlowId::new(&[10, 0, 0, 1, 0, 0, 0, 7])?),
//! };
//! let mut buf = [0u8; 24];
//! let n = opt.emit(&mut buf)?;
//! assert_eq!(n, opt.buffer_len());
//! assert_eq!(SourceHashOption::parse(&buf[..n])?, opt);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

use alloc::vec::Vec;
use core::fmt;

use crate::flow::{FlowId, MAX_FLOW_ID_LEN, SourceHash};

/// The option type: RFC 4727's experimental IPv4 option value 94.
pub const OPTION_TYPE: u8 = 94;

/// Bytes before the flow id: type, length, reserved, source hash.
pub const FIXED_LEN: usize = 8;

/// Why bytes are not a valid option or packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the header or option needs.
    Truncated,
    /// Not option type 94; carries the type found.
    WrongType(u8),
    /// Option length outside 8 ..= 24, or past the header; carries the length.
    BadLength(u8),
    /// The reserved bytes are not zero.
    ReservedNotZero,
    /// Not an IPv4 (or, for the flow label, IPv6) packet.
    WrongVersion(u8),
    /// IHL below 5, or the header longer than the packet.
    BadHeaderLength,
    /// Adding the option would make the header exceed 60 bytes.
    NoRoom,
    /// The packet already carries a source-hash option.
    Duplicate,
    /// A buffer given to `emit` is too small.
    BufferTooSmall,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => f.write_str("truncated"),
            WireError::WrongType(t) => write!(f, "option type {t} is not {OPTION_TYPE}"),
            WireError::BadLength(l) => write!(f, "bad option length {l}"),
            WireError::ReservedNotZero => f.write_str("reserved bytes are not zero"),
            WireError::WrongVersion(v) => write!(f, "unexpected IP version {v}"),
            WireError::BadHeaderLength => f.write_str("bad IPv4 header length"),
            WireError::NoRoom => f.write_str("no room for the option in a 60-byte header"),
            WireError::Duplicate => f.write_str("packet already has a source-hash option"),
            WireError::BufferTooSmall => f.write_str("output buffer too small"),
        }
    }
}

impl core::error::Error for WireError {}

/// The source-hash option's contents (a `Repr`: only valid values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceHashOption {
    /// The sender's index.
    pub hash: SourceHash,
    /// The flow id, if the sender carries one.
    pub flow_id: Option<FlowId>,
}

impl SourceHashOption {
    /// Parses exactly one option (all of `bytes`).
    pub fn parse(bytes: &[u8]) -> Result<SourceHashOption, WireError> {
        let [t, len, r0, r1, h0, h1, h2, h3, fid @ ..] = bytes else {
            return Err(WireError::Truncated);
        };
        if *t != OPTION_TYPE {
            return Err(WireError::WrongType(*t));
        }
        let n = usize::from(*len);
        if !(FIXED_LEN..=FIXED_LEN + MAX_FLOW_ID_LEN).contains(&n) || n != bytes.len() {
            return Err(WireError::BadLength(*len));
        }
        if (*r0, *r1) != (0, 0) {
            return Err(WireError::ReservedNotZero);
        }
        let flow_id = if fid.is_empty() {
            None
        } else {
            Some(FlowId::new(fid).map_err(|_| WireError::BadLength(*len))?)
        };
        Ok(SourceHashOption {
            hash: SourceHash::new(u32::from_be_bytes([*h0, *h1, *h2, *h3])),
            flow_id,
        })
    }

    /// The option's length in bytes.
    pub fn buffer_len(&self) -> usize {
        FIXED_LEN + self.flow_id.map_or(0, |f| f.len())
    }

    /// Writes the option at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let n = self.buffer_len();
        let out = buf.get_mut(..n).ok_or(WireError::BufferTooSmall)?;
        let h = self.hash.get().to_be_bytes();
        // `n` is at most 24, so the cast is exact.
        let head = [OPTION_TYPE, n as u8, 0, 0, h[0], h[1], h[2], h[3]];
        let (fixed, fid) = out.split_at_mut(FIXED_LEN);
        fixed.copy_from_slice(&head);
        if let Some(f) = self.flow_id {
            fid.copy_from_slice(f.as_bytes());
        }
        Ok(n)
    }
}

/// The IPv4 header's options bytes, after checking version and IHL.
fn ipv4_options(packet: &[u8]) -> Result<&[u8], WireError> {
    let first = *packet.first().ok_or(WireError::Truncated)?;
    if first >> 4 != 4 {
        return Err(WireError::WrongVersion(first >> 4));
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 {
        return Err(WireError::BadHeaderLength);
    }
    packet.get(20..ihl).ok_or(WireError::BadHeaderLength)
}

/// Finds the source-hash option among an IPv4 header's options (`Ok(None)`: absent).
/// Rejects malformed option lists.
pub fn find_ipv4_option(packet: &[u8]) -> Result<Option<SourceHashOption>, WireError> {
    let mut opts = ipv4_options(packet)?;
    let mut found = None;
    while let [t, rest @ ..] = opts {
        match *t {
            0 => break,
            1 => opts = rest,
            _ => {
                let len = *rest.first().ok_or(WireError::Truncated)?;
                let n = usize::from(len);
                if n < 2 {
                    return Err(WireError::BadLength(len));
                }
                let (this, tail) = opts.split_at_checked(n).ok_or(WireError::BadLength(len))?;
                if *t == OPTION_TYPE {
                    if found.is_some() {
                        return Err(WireError::Duplicate);
                    }
                    found = Some(SourceHashOption::parse(this)?);
                }
                opts = tail;
            }
        }
    }
    Ok(found)
}

/// A copy of the IPv4 `packet` with `opt` as its first option (existing options follow,
/// the header padded to a word with end-of-list bytes), with IHL, total length and the
/// header checksum updated (the checksum by the IP layer,
/// [`waist_ip::rewrite::fill_ipv4_checksum`]). Bytes past the packet's total length (link
/// padding) are not part of it and are not copied.
///
/// # Errors
///
/// [`WireError::Duplicate`] if it carries one already, [`WireError::NoRoom`] past a 60-byte
/// header or a 65,535-byte packet; a malformed header or option list as
/// [`find_ipv4_option`] reports it; [`WireError::Truncated`] if the total length exceeds
/// the bytes present, [`WireError::BadHeaderLength`] if it is below the header length.
pub fn insert_ipv4_option(packet: &[u8], opt: &SourceHashOption) -> Result<Vec<u8>, WireError> {
    if find_ipv4_option(packet)?.is_some() {
        return Err(WireError::Duplicate);
    }
    let old_opts = ipv4_options(packet)?;
    // Existing options up to (not including) an end-of-list byte and its padding.
    let mut used = 0;
    let mut rest = old_opts;
    while let [t, tail @ ..] = rest {
        match *t {
            0 => break,
            1 => {
                used += 1;
                rest = tail;
            }
            _ => {
                let len = *tail.first().ok_or(WireError::Truncated)?;
                let n = usize::from(len);
                if n < 2 {
                    return Err(WireError::BadLength(len));
                }
                used += n;
                rest = rest.get(n..).ok_or(WireError::Truncated)?;
            }
        }
    }
    let opts_len = (opt.buffer_len() + used).next_multiple_of(4);
    let header_len = 20 + opts_len;
    if header_len > 60 {
        return Err(WireError::NoRoom);
    }
    let old_header_len = 20 + old_opts.len();
    let old_total = match packet.get(2..4) {
        Some(&[a, b]) => usize::from(u16::from_be_bytes([a, b])),
        _ => return Err(WireError::Truncated),
    };
    if old_total < old_header_len {
        return Err(WireError::BadHeaderLength);
    }
    let payload = packet
        .get(old_header_len..old_total)
        .ok_or(WireError::Truncated)?;
    let total = header_len + payload.len();
    let total16 = u16::try_from(total).map_err(|_| WireError::NoRoom)?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(packet.get(..20).ok_or(WireError::Truncated)?);
    let mut opt_bytes = [0u8; FIXED_LEN + MAX_FLOW_ID_LEN];
    let n = opt.emit(&mut opt_bytes)?;
    out.extend_from_slice(opt_bytes.get(..n).ok_or(WireError::BufferTooSmall)?);
    out.extend_from_slice(old_opts.get(..used).ok_or(WireError::Truncated)?);
    out.resize(header_len, 0);
    out.extend_from_slice(payload);
    let Some([version_ihl, _, t0, t1]) = out.get_mut(..4) else {
        return Err(WireError::Truncated);
    };
    // `header_len` is at most 60, so the IHL fits its nibble.
    *version_ihl = 0x40 | (header_len / 4) as u8;
    [*t0, *t1] = total16.to_be_bytes();
    waist_ip::rewrite::fill_ipv4_checksum(&mut out);
    Ok(out)
}

/// The source hash of an IPv6 packet: its 20-bit flow label (RFC 6437).
pub fn ipv6_flow_label(packet: &[u8]) -> Result<SourceHash, WireError> {
    let [v, b1, b2, b3, ..] = packet else {
        return Err(WireError::Truncated);
    };
    if v >> 4 != 6 {
        return Err(WireError::WrongVersion(v >> 4));
    }
    if packet.len() < 40 {
        return Err(WireError::Truncated);
    }
    Ok(SourceHash::new(u32::from_be_bytes([
        0,
        *b1 & 0x0f,
        *b2,
        *b3,
    ])))
}

/// Writes the low 20 bits of `hash` as an IPv6 packet's flow label.
pub fn set_ipv6_flow_label(packet: &mut [u8], hash: SourceHash) -> Result<(), WireError> {
    ipv6_flow_label(packet)?;
    let [_, b1, b2, b3] = (hash.get() & 0x000f_ffff).to_be_bytes();
    if let Some([_, x1, x2, x3]) = packet.first_chunk_mut::<4>() {
        *x1 = (*x1 & 0xf0) | b1;
        *x2 = b2;
        *x3 = b3;
    }
    Ok(())
}

/// The 16-byte destination address of an IPv6 packet as a flow id (for a route cache
/// fed by the flow label).
pub fn ipv6_destination_flow_id(packet: &[u8]) -> Result<FlowId, WireError> {
    ipv6_flow_label(packet)?;
    let dst = packet.get(24..40).ok_or(WireError::Truncated)?;
    FlowId::new(dst).map_err(|_| WireError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::string::ToString;
    use std::vec;

    fn ipv4(payload: &[u8]) -> Vec<u8> {
        let b = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(1000, 2000);
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn option_bytes_are_as_documented() {
        let opt = SourceHashOption {
            hash: SourceHash::new(0x0102_0304),
            flow_id: Some(FlowId::new(&[9, 9]).unwrap()),
        };
        let mut buf = [0u8; 10];
        assert_eq!(opt.emit(&mut buf), Ok(10));
        assert_eq!(buf, [94, 10, 0, 0, 1, 2, 3, 4, 9, 9]);
        assert_eq!(SourceHashOption::parse(&buf), Ok(opt));
        assert_eq!(opt.emit(&mut [0u8; 9]), Err(WireError::BufferTooSmall));
    }

    #[test]
    fn bad_options_are_rejected() {
        assert_eq!(
            SourceHashOption::parse(&[94, 8, 0, 0]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            SourceHashOption::parse(&[95, 8, 0, 0, 0, 0, 0, 0]),
            Err(WireError::WrongType(95))
        );
        assert_eq!(
            SourceHashOption::parse(&[94, 9, 0, 0, 0, 0, 0, 0]),
            Err(WireError::BadLength(9))
        );
        assert_eq!(
            SourceHashOption::parse(&[94, 8, 1, 0, 0, 0, 0, 0]),
            Err(WireError::ReservedNotZero)
        );
        let long = [&[94u8, 25, 0, 0, 0, 0, 0, 0][..], &[1; 17]].concat();
        assert_eq!(
            SourceHashOption::parse(&long),
            Err(WireError::BadLength(25))
        );
        assert!(WireError::BadLength(25).to_string().contains("25"));
    }

    #[test]
    fn inserted_option_is_word_aligned_and_etherparse_agrees() {
        let pkt = ipv4(b"hello");
        let opt = SourceHashOption {
            hash: SourceHash::new(0xcafe_f00d),
            flow_id: Some(FlowId::new(&[1, 2, 3]).unwrap()),
        };
        let out = insert_ipv4_option(&pkt, &opt).unwrap();
        assert_eq!(out[24..28], 0xcafe_f00du32.to_be_bytes());
        assert_eq!(find_ipv4_option(&out), Ok(Some(opt)));
        assert_eq!(find_ipv4_option(&pkt), Ok(None));
        let (h, rest) = etherparse::Ipv4Header::from_slice(&out).unwrap();
        assert_eq!(h.options.as_slice(), &out[20..32]);
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        assert_eq!(usize::from(h.total_len), out.len());
        // The UDP datagram behind the header is untouched.
        assert_eq!(rest, &pkt[20..]);
        assert_eq!(insert_ipv4_option(&out, &opt), Err(WireError::Duplicate));
    }

    #[test]
    fn link_padding_is_not_payload_and_lying_lengths_are_errors() {
        // A 29-byte UDP packet padded to 46 bytes, as an Ethernet frame would carry it.
        let pkt = ipv4(b"x");
        let mut padded = pkt.clone();
        padded.resize(46, 0xEE);
        let opt = SourceHashOption {
            hash: SourceHash::new(7),
            flow_id: None,
        };
        let out = insert_ipv4_option(&padded, &opt).unwrap();
        assert_eq!(out, insert_ipv4_option(&pkt, &opt).unwrap());
        assert_eq!(out.len(), pkt.len() + 8);
        let (h, rest) = etherparse::Ipv4Header::from_slice(&out).unwrap();
        assert_eq!(usize::from(h.total_len), out.len());
        assert_eq!(rest, &pkt[20..]);
        // A total length beyond the bytes, or below the header.
        let mut long = pkt.clone();
        long[3] += 1;
        assert_eq!(insert_ipv4_option(&long, &opt), Err(WireError::Truncated));
        let mut short = pkt;
        short[2..4].copy_from_slice(&[0, 19]);
        assert_eq!(
            insert_ipv4_option(&short, &opt),
            Err(WireError::BadHeaderLength)
        );
    }

    #[test]
    fn existing_options_are_kept_and_room_is_checked() {
        let mut pkt = ipv4(b"x");
        // Add a NOP + 3-byte option (type 7 "record route" shape) by hand: IHL 6.
        pkt.splice(20..20, [1, 7, 3, 4]);
        pkt[0] = 0x46;
        let total = pkt.len() as u16;
        pkt[2..4].copy_from_slice(&total.to_be_bytes());
        let opt = SourceHashOption {
            hash: SourceHash::new(1),
            flow_id: None,
        };
        let out = insert_ipv4_option(&pkt, &opt).unwrap();
        assert_eq!(&out[20..32], &[94, 8, 0, 0, 0, 0, 0, 1, 1, 7, 3, 4]);
        assert!(etherparse::Ipv4Header::from_slice(&out).is_ok());
        let big = SourceHashOption {
            hash: SourceHash::new(1),
            flow_id: Some(FlowId::new(&[0; 16]).unwrap()),
        };
        let with_big = insert_ipv4_option(&ipv4(b""), &big).unwrap();
        assert_eq!(with_big.len(), 20 + 24 + 8);
        let mut crowded = ipv4(b"");
        crowded.splice(20..20, [1u8; 20]);
        crowded[0] = 0x4a;
        assert_eq!(insert_ipv4_option(&crowded, &big), Err(WireError::NoRoom));
    }

    #[test]
    fn malformed_headers_are_errors() {
        assert_eq!(find_ipv4_option(&[]), Err(WireError::Truncated));
        assert_eq!(
            find_ipv4_option(&[0x60; 40]),
            Err(WireError::WrongVersion(6))
        );
        assert_eq!(
            find_ipv4_option(&[0x44; 20]),
            Err(WireError::BadHeaderLength)
        );
        assert_eq!(
            find_ipv4_option(&[0x46; 20]),
            Err(WireError::BadHeaderLength)
        );
        let mut p = vec![0u8; 24];
        p[0] = 0x46;
        p[20..24].copy_from_slice(&[7, 1, 0, 0]);
        assert_eq!(find_ipv4_option(&p), Err(WireError::BadLength(1)));
        p[20..24].copy_from_slice(&[7, 9, 0, 0]);
        assert_eq!(find_ipv4_option(&p), Err(WireError::BadLength(9)));
    }

    #[test]
    fn ipv6_flow_label_round_trips_with_etherparse() {
        let b = etherparse::PacketBuilder::ipv6([1; 16], [2; 16], 64).udp(1, 2);
        let mut pkt = Vec::new();
        b.write(&mut pkt, b"abc").unwrap();
        set_ipv6_flow_label(&mut pkt, SourceHash::new(0xfff1_2345)).unwrap();
        assert_eq!(ipv6_flow_label(&pkt), Ok(SourceHash::new(0x1_2345)));
        let (h, _) = etherparse::Ipv6Header::from_slice(&pkt).unwrap();
        assert_eq!(h.flow_label.value(), 0x1_2345);
        assert_eq!(h.traffic_class, 0);
        assert_eq!(ipv6_destination_flow_id(&pkt).unwrap().as_bytes(), &[2; 16]);
        assert_eq!(ipv6_flow_label(&pkt[..39]), Err(WireError::Truncated));
        assert_eq!(ipv6_flow_label(&ipv4(b"")), Err(WireError::WrongVersion(4)));
    }

    proptest! {
        #[test]
        fn option_round_trips(hash in any::<u32>(), fid in proptest::collection::vec(any::<u8>(), 0..=16)) {
            let opt = SourceHashOption {
                hash: SourceHash::new(hash),
                flow_id: FlowId::new(&fid).ok(),
            };
            let mut buf = [0u8; 24];
            let n = opt.emit(&mut buf).unwrap();
            prop_assert_eq!(SourceHashOption::parse(&buf[..n]), Ok(opt));
            let pkt = insert_ipv4_option(&ipv4(&fid), &opt).unwrap();
            prop_assert_eq!(find_ipv4_option(&pkt), Ok(Some(opt)));
            let (h, _) = etherparse::Ipv4Header::from_slice(&pkt).unwrap();
            prop_assert_eq!(h.header_checksum, h.calc_header_checksum());
        }

        /// Inserting the option into an IPv4 header that already has options (NOPs and
        /// one record-route-shaped option), followed by link padding, leaves IHL, total
        /// length and the header checksum right by etherparse's own computation, and the
        /// payload untouched.
        #[test]
        fn insertion_keeps_the_header_right(
            ttl in any::<u8>(),
            nops in 0usize..4,
            other in proptest::collection::vec(any::<u8>(), 0..=10),
            fid in proptest::collection::vec(any::<u8>(), 0..=16),
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            padding in 0usize..20,
        ) {
            let mut pkt = ipv4(&payload);
            pkt[8] = ttl;
            let mut options = vec![1u8; nops];
            if !other.is_empty() {
                options.extend_from_slice(&[7, other.len() as u8 + 2]);
                options.extend_from_slice(&other);
            }
            options.resize(options.len().next_multiple_of(4), 0);
            let hl = 20 + options.len();
            pkt.splice(20..20, options.iter().copied());
            pkt[0] = 0x40 | (hl / 4) as u8;
            let total = pkt.len() as u16;
            pkt[2..4].copy_from_slice(&total.to_be_bytes());
            waist_ip::rewrite::fill_ipv4_checksum(&mut pkt);
            let opt = SourceHashOption {
                hash: SourceHash::new(u32::from(ttl) * 0x0101_0101),
                flow_id: FlowId::new(&fid).ok(),
            };
            // Link padding after the datagram is not part of it.
            let mut padded = pkt.clone();
            padded.resize(pkt.len() + padding, 0xEE);
            match insert_ipv4_option(&padded, &opt) {
                Ok(out) => {
                    let (h, rest) = etherparse::Ipv4Header::from_slice(&out).unwrap();
                    prop_assert_eq!(h.header_checksum, h.calc_header_checksum());
                    prop_assert_eq!(usize::from(h.total_len), out.len());
                    prop_assert_eq!(h.header_len(), 20 + h.options.len());
                    prop_assert_eq!(h.time_to_live, ttl);
                    prop_assert_eq!(rest, &pkt[hl..]);
                    prop_assert_eq!(find_ipv4_option(&out), Ok(Some(opt)));
                }
                Err(e) => prop_assert_eq!(e, WireError::NoRoom),
            }
        }

        #[test]
        fn parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = SourceHashOption::parse(&bytes);
            let _ = find_ipv4_option(&bytes);
            let _ = ipv6_flow_label(&bytes);
        }
    }
}
