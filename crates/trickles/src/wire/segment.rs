//! TCP framing: the 24-byte header with the Trickles option, written and checked with
//! smoltcp's TCP views.

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    IpAddress, Ipv4Address, Ipv6Address, TcpOption, TcpPacket, TcpRepr, TcpSeqNumber,
};

use super::{MAX_SEGMENT_LEN, TCP_HEADER_LEN, TRICKLES_EXID, TRICKLES_OPTION_KIND, WireError};
use crate::conn::Addr;

/// The option [`emit_segment`] writes: kind 253, length 4, ExID `"Tr"` (RFC 6994).
const OPTION: [u8; 4] = {
    let exid = TRICKLES_EXID.to_be_bytes();
    [TRICKLES_OPTION_KIND, 4, exid[0], exid[1]]
};

/// The receive window [`emit_segment`] advertises. Trickles has no TCP window; a constant
/// keeps middleboxes content.
const WINDOW: u16 = u16::MAX;

/// The TCP fields a Trickles segment uses.
///
/// [`emit_segment`] sets the ACK flag unless this is a SYN with `ack == 0` (a client's
/// opening segment), so a SYN with a nonzero `ack` is a SYN-ACK. [`parse_segment`] reports
/// `ack` as 0 when the ACK flag is clear; so every `Segment` survives emit and parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    /// TCP source port (nonzero).
    pub src_port: u16,
    /// TCP destination port (nonzero).
    pub dst_port: u16,
    /// The SYN flag.
    pub syn: bool,
    /// The sequence number field.
    pub seq: u32,
    /// The acknowledgment number field (0 when the ACK flag is clear).
    pub ack: u32,
    /// The TCP payload: one Trickles message.
    pub payload: &'a [u8],
}

impl Segment<'_> {
    /// The segment's header fields, for [`finish_segment`].
    pub fn header(&self) -> SegmentHeader {
        SegmentHeader {
            src_port: self.src_port,
            dst_port: self.dst_port,
            syn: self.syn,
            seq: self.seq,
            ack: self.ack,
        }
    }
}

/// A [`Segment`] without its payload: what [`finish_segment`] writes around a message
/// already emitted in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    /// TCP source port (nonzero).
    pub src_port: u16,
    /// TCP destination port (nonzero).
    pub dst_port: u16,
    /// The SYN flag.
    pub syn: bool,
    /// The sequence number field.
    pub seq: u32,
    /// The acknowledgment number field; see [`Segment`] for the ACK flag.
    pub ack: u32,
}

/// Writes a TCP header (data offset 6, the Trickles option) and `seg.payload` to the front
/// of `out`, with the checksum over the pseudo-header of `src` and `dst`, and returns the
/// number of bytes written, [`TCP_HEADER_LEN`] plus the payload.
///
/// Returns [`WireError::BadTcp`] if `src` and `dst` are of different families or a port is
/// 0, [`WireError::BadLength`] if `out` is too small or the segment would exceed
/// [`MAX_SEGMENT_LEN`].
///
/// ```
/// use trickles::conn::Addr;
/// use trickles::wire::{Segment, emit_segment, parse_segment};
/// let (client, server) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
/// let seg = Segment { src_port: 4000, dst_port: 80, syn: false, seq: 7, ack: 9, payload: b"msg" };
/// let mut buf = [0u8; 64];
/// let n = emit_segment(&client, &server, &seg, &mut buf).unwrap();
/// assert_eq!(parse_segment(&client, &server, &buf[..n]), Ok(seg));
/// ```
pub fn emit_segment(
    src: &Addr,
    dst: &Addr,
    seg: &Segment<'_>,
    out: &mut [u8],
) -> Result<usize, WireError> {
    let payload_len = seg.payload.len();
    let total = segment_len(payload_len)?;
    out.get_mut(TCP_HEADER_LEN..total)
        .ok_or(WireError::BadLength)?
        .copy_from_slice(seg.payload);
    finish_segment(src, dst, &seg.header(), out, payload_len)
}

/// Completes a segment whose payload, `payload_len` bytes, is already in place at
/// `out[TCP_HEADER_LEN..]`: writes the header as [`emit_segment`] does, checksum
/// included, and returns the segment's length, [`TCP_HEADER_LEN`] + `payload_len`.
///
/// Call this after emitting the message into `out[TCP_HEADER_LEN..]`; it saves the copy
/// [`emit_segment`] makes. Errors as for [`emit_segment`].
///
/// ```
/// use trickles::conn::Addr;
/// use trickles::wire::{SegmentHeader, TCP_HEADER_LEN, finish_segment, parse_segment};
/// let (server, client) = (Addr::V6([0xfd; 16]), Addr::V6([0xfe; 16]));
/// let mut buf = [0u8; 64];
/// buf[TCP_HEADER_LEN..TCP_HEADER_LEN + 3].copy_from_slice(b"msg");
/// let header = SegmentHeader { src_port: 80, dst_port: 4000, syn: false, seq: 1, ack: 0 };
/// let n = finish_segment(&server, &client, &header, &mut buf, 3).unwrap();
/// let seg = parse_segment(&server, &client, &buf[..n]).unwrap();
/// assert_eq!((seg.header(), seg.payload), (header, &b"msg"[..]));
/// ```
#[inline]
pub fn finish_segment(
    src: &Addr,
    dst: &Addr,
    header: &SegmentHeader,
    out: &mut [u8],
    payload_len: usize,
) -> Result<usize, WireError> {
    // Refuses mixed families before anything is written.
    ip_pair(src, dst)?;
    if header.src_port == 0 || header.dst_port == 0 {
        return Err(WireError::BadTcp);
    }
    let total = segment_len(payload_len)?;
    let buf = out.get_mut(..total).ok_or(WireError::BadLength)?;
    buf.get_mut(TCP_HEADER_LEN - OPTION.len()..TCP_HEADER_LEN)
        .ok_or(WireError::BadLength)?
        .copy_from_slice(&OPTION);
    // `buf` is at least TCP_HEADER_LEN long and the header length is set before anything
    // that reads it, so none of the accessors below can panic.
    let mut packet = TcpPacket::new_unchecked(buf);
    packet.set_src_port(header.src_port);
    packet.set_dst_port(header.dst_port);
    packet.set_seq_number(seq_number(header.seq));
    packet.set_ack_number(seq_number(header.ack));
    packet.set_header_len(TCP_HEADER_LEN as u8);
    packet.clear_flags();
    packet.set_syn(header.syn);
    packet.set_ack(!header.syn || header.ack != 0);
    packet.set_window_len(WINDOW);
    packet.set_urgent_at(0);
    packet.set_checksum(0);
    let checksum = !super::checksum::sum(src, dst, packet.into_inner());
    let mut packet = TcpPacket::new_unchecked(out.get_mut(..total).ok_or(WireError::BadLength)?);
    packet.set_checksum(checksum);
    Ok(total)
}

/// [`TCP_HEADER_LEN`] + `payload_len`, or [`WireError::BadLength`] past
/// [`MAX_SEGMENT_LEN`].
fn segment_len(payload_len: usize) -> Result<usize, WireError> {
    TCP_HEADER_LEN
        .checked_add(payload_len)
        .filter(|&n| n <= MAX_SEGMENT_LEN)
        .ok_or(WireError::BadLength)
}

/// Parses a TCP segment (the bytes after the IP header) sent from `src` to `dst`: checks
/// it with smoltcp (lengths, nonzero ports, flag combination, options, checksum over the
/// pseudo-header), finds the Trickles option among the options, and returns the fields
/// with the payload, the Trickles message.
///
/// Flags other than SYN and ACK, the window and the urgent pointer are ignored. Returns
/// [`WireError::BadTcp`] for anything smoltcp rejects, a bad checksum, or mixed address
/// families; [`WireError::NotTrickles`] if no option 253 carries [`TRICKLES_EXID`];
/// [`WireError::BadLength`] if ours has a length other than 4 or the segment is longer
/// than [`MAX_SEGMENT_LEN`].
#[inline]
pub fn parse_segment<'a>(src: &Addr, dst: &Addr, tcp: &'a [u8]) -> Result<Segment<'a>, WireError> {
    parse_segment_with(src, dst, tcp, Checksum::Verify)
}

/// Whether [`parse_segment_with`] checks the TCP checksum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checksum {
    /// Check it: a segment whose checksum is wrong is [`WireError::BadTcp`].
    #[default]
    Verify,
    /// Do not: the link below already checked the whole packet (an IP-in-UDP link whose
    /// UDP checksum covers the inner packet, and which the kernel verified on receipt).
    /// Every other check still runs.
    Trusted,
}

/// [`parse_segment`], checking the TCP checksum or not (`checksum`).
#[inline]
pub fn parse_segment_with<'a>(
    src: &Addr,
    dst: &Addr,
    tcp: &'a [u8],
    checksum: Checksum,
) -> Result<Segment<'a>, WireError> {
    let (src_ip, dst_ip) = ip_pair(src, dst)?;
    if tcp.len() > MAX_SEGMENT_LEN {
        return Err(WireError::BadLength);
    }
    let packet = TcpPacket::new_checked(tcp).map_err(|_| WireError::BadTcp)?;
    // Our checksum (eight bytes per addition) instead of smoltcp's; like smoltcp's, it is
    // skipped in fuzzing builds so fuzzers can reach past it.
    if !cfg!(fuzzing)
        && checksum == Checksum::Verify
        && super::checksum::sum(src, dst, tcp) != 0xffff
    {
        return Err(WireError::BadTcp);
    }
    if !is_own_shape(&packet) {
        TcpRepr::parse(&packet, &src_ip, &dst_ip, &ChecksumCapabilities::ignored())
            .map_err(|_| WireError::BadTcp)?;
        find_option(packet.options())?;
    }
    Ok(Segment {
        src_port: packet.src_port(),
        dst_port: packet.dst_port(),
        syn: packet.syn(),
        seq: seq_value(packet.seq_number()),
        ack: if packet.ack() {
            seq_value(packet.ack_number())
        } else {
            0
        },
        payload: packet.payload(),
    })
}

/// Whether `packet` has exactly the shape Trickles sends (a 24-byte header whose only
/// option is ours, nonzero ports, at most one of SYN, FIN and RST): a segment smoltcp's
/// `TcpRepr::parse` accepts and [`find_option`] finds the option in at once, so both are
/// skipped for it (about 300 instructions per request). Anything else takes the full
/// checks, so what is accepted and rejected is unchanged.
fn is_own_shape(packet: &TcpPacket<&[u8]>) -> bool {
    let controls = u8::from(packet.syn()) + u8::from(packet.fin()) + u8::from(packet.rst());
    usize::from(packet.header_len()) == TCP_HEADER_LEN
        && packet.options() == OPTION
        && packet.src_port() != 0
        && packet.dst_port() != 0
        && controls <= 1
}

/// Succeeds if the options hold kind 253 with our ExID and length 4; options of kind 253
/// with other ExIDs belong to other experiments and are skipped.
fn find_option(mut options: &[u8]) -> Result<(), WireError> {
    let exid = TRICKLES_EXID.to_be_bytes();
    while !options.is_empty() {
        let (rest, option) = TcpOption::parse(options).map_err(|_| WireError::BadTcp)?;
        match option {
            TcpOption::EndOfList => break,
            TcpOption::Unknown {
                kind: TRICKLES_OPTION_KIND,
                data,
            } if data.get(..2) == Some(&exid) => {
                return if data.len() == 2 {
                    Ok(())
                } else {
                    Err(WireError::BadLength)
                };
            }
            _ => {}
        }
        options = rest;
    }
    Err(WireError::NotTrickles)
}

/// The two addresses as smoltcp sees them, or [`WireError::BadTcp`] if their families
/// differ (smoltcp's checksum would panic).
fn ip_pair(src: &Addr, dst: &Addr) -> Result<(IpAddress, IpAddress), WireError> {
    match (*src, *dst) {
        (Addr::V4(s), Addr::V4(d)) => Ok((
            IpAddress::Ipv4(Ipv4Address::from(s)),
            IpAddress::Ipv4(Ipv4Address::from(d)),
        )),
        (Addr::V6(s), Addr::V6(d)) => Ok((
            IpAddress::Ipv6(Ipv6Address::from(s)),
            IpAddress::Ipv6(Ipv6Address::from(d)),
        )),
        _ => Err(WireError::BadTcp),
    }
}

/// A 32-bit sequence field as smoltcp's signed wrapper, bit for bit.
fn seq_number(value: u32) -> TcpSeqNumber {
    TcpSeqNumber(i32::from_be_bytes(value.to_be_bytes()))
}

/// The inverse of [`seq_number`].
fn seq_value(value: TcpSeqNumber) -> u32 {
    u32::from_be_bytes(value.0.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    proptest! {
        /// The shortcut is taken only for headers the full checks accept: any 24-byte
        /// header with our option, whatever its ports, flags and other fields.
        #[test]
        fn own_shape_implies_full_checks_pass(
            mut header in any::<[u8; 20]>(),
            option_ours in any::<bool>(),
            other_option in any::<[u8; 4]>(),
            payload in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            header[12] = (6 << 4) | (header[12] & 0x0f);
            let mut seg = header.to_vec();
            seg.extend_from_slice(if option_ours { &OPTION } else { &other_option });
            seg.extend_from_slice(&payload);
            let packet = TcpPacket::new_checked(&seg[..]).unwrap();
            let (s, d) = ip_pair(&CLIENT, &SERVER).unwrap();
            let full = TcpRepr::parse(&packet, &s, &d, &ChecksumCapabilities::ignored())
                .is_ok()
                && find_option(packet.options()).is_ok();
            if is_own_shape(&packet) {
                prop_assert!(full);
            }
            // And every segment of that shape with acceptable ports and flags takes it.
            let flags = seg[13];
            let controls = (flags & 0x02 != 0) as u8 + (flags & 0x01 != 0) as u8
                + (flags & 0x04 != 0) as u8;
            let ports = seg[0..2] != [0, 0] && seg[2..4] != [0, 0];
            prop_assert_eq!(is_own_shape(&packet), option_ours && ports && controls <= 1);
        }
    }

    const CLIENT: Addr = Addr::V4([10, 0, 0, 1]);
    const SERVER: Addr = Addr::V4([10, 0, 0, 2]);

    /// A SYN from 10.0.0.1:4000 to 10.0.0.2:80, seq 1, payload "hi". The checksum was
    /// worked by hand: pseudo-header 0x0a00+0x0001+0x0a00+0x0002+0x0006+0x001a, header and
    /// payload words, folded and complemented.
    const SYN: [u8; 26] = [
        0x0F, 0xA0, 0x00, 0x50, // ports 4000, 80
        0, 0, 0, 1, // seq
        0, 0, 0, 0, // ack
        0x60, 0x02, 0xFF, 0xFF, // data offset 6, SYN; window
        0xC2, 0x08, 0x00, 0x00, // checksum, urgent
        253, 4, 0x54, 0x72, // the Trickles option
        b'h', b'i',
    ];

    fn opening() -> Segment<'static> {
        Segment {
            src_port: 4000,
            dst_port: 80,
            syn: true,
            seq: 1,
            ack: 0,
            payload: b"hi",
        }
    }

    #[test]
    fn emit_literal() {
        let mut out = [0u8; 26];
        assert_eq!(emit_segment(&CLIENT, &SERVER, &opening(), &mut out), Ok(26));
        assert_eq!(out, SYN);
        assert_eq!(
            emit_segment(&CLIENT, &SERVER, &opening(), &mut out[..25]),
            Err(WireError::BadLength)
        );
    }

    #[test]
    fn parse_literal() {
        assert_eq!(parse_segment(&CLIENT, &SERVER, &SYN), Ok(opening()));
        // The checksum covers the addresses (though not their order: the sum commutes).
        assert_eq!(
            parse_segment(&CLIENT, &Addr::V4([10, 0, 0, 3]), &SYN),
            Err(WireError::BadTcp)
        );
        assert_eq!(
            parse_segment(&CLIENT, &Addr::V6([0; 16]), &SYN),
            Err(WireError::BadTcp)
        );
    }

    #[test]
    fn ack_flag_follows_syn_and_ack() {
        for (syn, ack) in [(false, 0), (false, 5), (true, 0), (true, 5)] {
            let seg = Segment {
                syn,
                ack,
                ..opening()
            };
            let mut out = [0u8; 64];
            let n = emit_segment(&CLIENT, &SERVER, &seg, &mut out).unwrap_or(0);
            let flags = out[13];
            assert_eq!(flags & 0x10 != 0, !syn || ack != 0, "{syn} {ack}");
            assert_eq!(parse_segment(&CLIENT, &SERVER, &out[..n]), Ok(seg));
        }
    }
}
