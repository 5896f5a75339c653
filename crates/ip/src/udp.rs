//! UDP datagrams whole (IP header, UDP header, data), for tools that need an ordinary packet
//! to carry something else, such as a piggybacked ESP instruction.
//!
//! ```
//! use waist_ip::{IpHeader, udp};
//!
//! let mut out = [0u8; 64];
//! let n = udp::emit_datagram([10, 1, 0, 1].into(), [10, 0, 0, 2].into(), 64, 4000, 9, b"hi", &mut out)?;
//! let h = IpHeader::parse(&out[..n])?;
//! assert_eq!((h.protocol, n), (udp::PROTOCOL_UDP, 20 + 8 + 2));
//! // A datagram whose checksum is right sums to zero with its pseudo-header.
//! let sum = waist_ip::checksum::pseudo_header(h.src, h.dst, 17, 10).with(&out[20..n]);
//! assert_eq!(sum.finish(), 0);
//! # Ok::<(), waist_ip::IpError>(())
//! ```

use core::net::IpAddr;

use crate::checksum::pseudo_header;
use crate::header::{IpError, emit_header, header_len_for};

/// The IP protocol number of UDP.
pub const PROTOCOL_UDP: u8 = 17;
/// Bytes of the UDP header.
pub const UDP_HEADER_LEN: usize = 8;

/// Writes a UDP datagram from `src:sport` to `dst:dport` carrying `data`, with TTL (hop
/// limit) `ttl`, into `out`: IP header as [`emit_header`] writes it, UDP length and
/// checksum filled (a zero sum is sent as 0xFFFF, RFC 768). Returns the bytes written.
///
/// # Errors
///
/// [`IpError::MixedFamilies`], [`IpError::TooLong`] past a length field,
/// [`IpError::Truncated`] if `out` is too short.
pub fn emit_datagram(
    src: IpAddr,
    dst: IpAddr,
    ttl: u8,
    sport: u16,
    dport: u16,
    data: &[u8],
    out: &mut [u8],
) -> Result<usize, IpError> {
    let ip_len = header_len_for(src);
    if ip_len != header_len_for(dst) {
        return Err(IpError::MixedFamilies);
    }
    let udp_len = UDP_HEADER_LEN + data.len();
    let udp16 = u16::try_from(udp_len).map_err(|_| IpError::TooLong {
        len: ip_len + udp_len,
    })?;
    let n = ip_len + udp_len;
    let len = out.len();
    let out = out
        .get_mut(..n)
        .ok_or(IpError::Truncated { len, needed: n })?;
    emit_header(out, src, dst, PROTOCOL_UDP, ttl, udp_len)?;
    let (_, udp) = out.split_at_mut(ip_len);
    let (head, body) = udp.split_at_mut(UDP_HEADER_LEN);
    let [s0, s1] = sport.to_be_bytes();
    let [d0, d1] = dport.to_be_bytes();
    let [l0, l1] = udp16.to_be_bytes();
    head.copy_from_slice(&[s0, s1, d0, d1, l0, l1, 0, 0]);
    body.copy_from_slice(data);
    let sum = match pseudo_header(src, dst, PROTOCOL_UDP, u32::from(udp16))
        .with(udp)
        .finish()
    {
        0 => 0xFFFF,
        s => s,
    };
    if let Some(c) = udp.get_mut(6..8) {
        c.copy_from_slice(&sum.to_be_bytes());
    }
    Ok(n)
}

/// A UDP datagram read from an IP packet: addresses, ports and the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// The IP source.
    pub src: IpAddr,
    /// The IP destination.
    pub dst: IpAddr,
    /// The UDP source port.
    pub sport: u16,
    /// The UDP destination port.
    pub dport: u16,
    /// The UDP payload.
    pub data: &'a [u8],
}

/// Reads the UDP datagram `packet` carries (an IP packet whose header checks, protocol
/// 17), its UDP length within the IP payload and its checksum right (an IPv4 datagram
/// may carry none: zero). `None` for anything else, a later fragment included.
pub fn parse_datagram(packet: &[u8]) -> Option<Datagram<'_>> {
    let h = crate::IpHeader::parse(packet).ok()?;
    if h.protocol != PROTOCOL_UDP || h.later_fragment || h.more_fragments {
        return None;
    }
    let udp = packet.get(h.header_len..h.total_len)?;
    let head = udp.get(..UDP_HEADER_LEN)?;
    let len = usize::from(u16::from_be_bytes([head[4], head[5]]));
    let udp = udp.get(..len)?;
    let data = udp.get(UDP_HEADER_LEN..)?;
    let sum = u16::from_be_bytes([head[6], head[7]]);
    let checked = sum == 0 && h.src.is_ipv4()
        || pseudo_header(h.src, h.dst, PROTOCOL_UDP, len as u32)
            .with(udp)
            .finish()
            == 0;
    checked.then_some(Datagram {
        src: h.src,
        dst: h.dst,
        sport: u16::from_be_bytes([head[0], head[1]]),
        dport: u16::from_be_bytes([head[2], head[3]]),
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_back_what_emit_wrote_and_refuses_a_bad_sum() {
        for (src, dst) in [
            (IpAddr::from([10, 1, 0, 1]), IpAddr::from([10, 0, 0, 2])),
            (
                IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 1]),
                IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 2]),
            ),
        ] {
            let mut out = [0u8; 80];
            let n = emit_datagram(src, dst, 64, 7400, 7401, b"hello", &mut out).unwrap_or(0);
            let d = parse_datagram(&out[..n]);
            assert_eq!(
                d,
                Some(Datagram {
                    src,
                    dst,
                    sport: 7400,
                    dport: 7401,
                    data: b"hello"
                })
            );
            out[n - 1] ^= 1;
            assert_eq!(parse_datagram(&out[..n]), None);
            assert_eq!(parse_datagram(&out[..n - 1]), None);
        }
    }

    #[test]
    fn literal_ipv4_datagram() {
        let mut out = [0u8; 40];
        let n = emit_datagram(
            [10, 0, 0, 1].into(),
            [10, 0, 0, 2].into(),
            64,
            0x1234,
            7,
            &[0xAB, 0xCD],
            &mut out,
        );
        assert_eq!(n, Ok(30));
        // UDP header: ports, length 10, checksum by hand:
        // 0a00 + 0001 + 0a00 + 0002 + 0011 + 000a (pseudo) + 1234 + 0007 + 000a + abcd
        // = 0xD230 → complement 0x2DCF.
        assert_eq!(
            out[20..30],
            [0x12, 0x34, 0, 7, 0, 10, 0x2D, 0xCF, 0xAB, 0xCD]
        );
        assert_eq!(out[9], 17);
    }

    #[test]
    fn checked_by_etherparse_ipv6_and_errors() {
        let mut out = [0u8; 64];
        let src: IpAddr = "fd00::1".parse().unwrap_or(IpAddr::from([0u8; 16]));
        let dst: IpAddr = "fd00::2".parse().unwrap_or(IpAddr::from([0u8; 16]));
        let n = emit_datagram(src, dst, 9, 1, 2, b"abc", &mut out).unwrap_or(0);
        assert_eq!(n, 40 + 8 + 3);
        let p = etherparse::SlicedPacket::from_ip(&out[..n]);
        let Ok(etherparse::SlicedPacket {
            transport: Some(etherparse::TransportSlice::Udp(u)),
            net: Some(etherparse::NetSlice::Ipv6(ip)),
            ..
        }) = p
        else {
            panic!("{p:?}")
        };
        let expect = u
            .to_header()
            .calc_checksum_ipv6(&ip.header().to_header(), u.payload());
        assert_eq!(Ok(u.checksum()), expect);

        let mut out2 = [0u8; 64];
        assert_eq!(
            emit_datagram(src, [10, 0, 0, 2].into(), 9, 1, 2, b"", &mut out2),
            Err(IpError::MixedFamilies)
        );
        assert_eq!(
            emit_datagram(dst, src, 9, 1, 2, &[0; 30], &mut out2),
            Err(IpError::Truncated {
                len: 64,
                needed: 78
            })
        );
    }
}
