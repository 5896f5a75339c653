//! TCP framing, cross-checked with etherparse.

use etherparse::TcpHeader;
use proptest::prelude::*;
use trickles::conn::Addr;
use trickles::wire::{Segment, TCP_HEADER_LEN, WireError, emit_segment, parse_segment};

const V4_CLIENT: [u8; 4] = [192, 0, 2, 1];
const V4_SERVER: [u8; 4] = [198, 51, 100, 7];
const V6_CLIENT: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_SERVER: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99,
];

/// The etherparse checksum of `header` and `payload` between the two addresses.
fn etherparse_checksum(src: &Addr, dst: &Addr, header: &TcpHeader, payload: &[u8]) -> u16 {
    match (src, dst) {
        (Addr::V4(s), Addr::V4(d)) => header.calc_checksum_ipv4_raw(*s, *d, payload).unwrap(),
        (Addr::V6(s), Addr::V6(d)) => header.calc_checksum_ipv6_raw(*s, *d, payload).unwrap(),
        _ => unreachable!("mixed families"),
    }
}

fn cross_check(src: Addr, dst: Addr, seg: Segment<'_>) -> Result<(), TestCaseError> {
    let mut out = vec![0u8; TCP_HEADER_LEN + seg.payload.len()];
    let n = emit_segment(&src, &dst, &seg, &mut out).unwrap();
    prop_assert_eq!(n, out.len());
    let (h, payload) = TcpHeader::from_slice(&out).unwrap();
    prop_assert_eq!(payload, seg.payload);
    prop_assert_eq!(
        (h.source_port, h.destination_port),
        (seg.src_port, seg.dst_port)
    );
    prop_assert_eq!(
        (h.sequence_number, h.acknowledgment_number),
        (seg.seq, seg.ack)
    );
    prop_assert_eq!(h.syn, seg.syn);
    prop_assert_eq!(h.ack, !seg.syn || seg.ack != 0);
    prop_assert!(!(h.fin || h.rst || h.psh || h.urg || h.ece || h.cwr || h.ns));
    prop_assert_eq!(h.data_offset(), 6);
    prop_assert_eq!(h.options.as_slice(), &[253u8, 4, 0x54, 0x72][..]);
    prop_assert_eq!(h.checksum, etherparse_checksum(&src, &dst, &h, payload));
    prop_assert_eq!(parse_segment(&src, &dst, &out), Ok(seg));
    Ok(())
}

fn segment_fields() -> impl Strategy<Value = (u16, u16, bool, u32, u32, Vec<u8>)> {
    (
        1..=u16::MAX,
        1..=u16::MAX,
        any::<bool>(),
        any::<u32>(),
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
}

proptest! {
    #[test]
    fn emit_segment_agrees_with_etherparse_ipv4(
        (src_port, dst_port, syn, seq, ack, payload) in segment_fields()
    ) {
        let seg = Segment { src_port, dst_port, syn, seq, ack, payload: &payload };
        cross_check(Addr::V4(V4_CLIENT), Addr::V4(V4_SERVER), seg)?;
    }

    #[test]
    fn emit_segment_agrees_with_etherparse_ipv6(
        (src_port, dst_port, syn, seq, ack, payload) in segment_fields()
    ) {
        let seg = Segment { src_port, dst_port, syn, seq, ack, payload: &payload };
        cross_check(Addr::V6(V6_SERVER), Addr::V6(V6_CLIENT), seg)?;
    }

    /// Any single-bit flip in the emitted segment, header or payload, is caught (by the
    /// checksum if by nothing else).
    #[test]
    fn bit_flips_are_caught(bit in 0usize..(TCP_HEADER_LEN + 4) * 8) {
        let (src, dst) = (Addr::V4(V4_CLIENT), Addr::V4(V4_SERVER));
        let seg = Segment { src_port: 9, dst_port: 10, syn: false, seq: 1, ack: 2, payload: b"abcd" };
        let mut out = [0u8; TCP_HEADER_LEN + 4];
        emit_segment(&src, &dst, &seg, &mut out).unwrap();
        out[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(parse_segment(&src, &dst, &out).is_err());
    }
}

/// A segment built by etherparse, with the given options and a correct checksum.
fn foreign_segment(src: &Addr, dst: &Addr, options: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut h = TcpHeader::new(4000, 80, 17, 1024);
    h.ack = true;
    h.acknowledgment_number = 23;
    h.set_options_raw(options).unwrap();
    h.checksum = etherparse_checksum(src, dst, &h, payload);
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

#[test]
fn parse_segment_requires_our_option() {
    for (src, dst) in [
        (Addr::V4(V4_CLIENT), Addr::V4(V4_SERVER)),
        (Addr::V6(V6_CLIENT), Addr::V6(V6_SERVER)),
    ] {
        let expected = Segment {
            src_port: 4000,
            dst_port: 80,
            syn: false,
            seq: 17,
            ack: 23,
            payload: b"msg",
        };
        let parse = |options: &[u8]| {
            let bytes = foreign_segment(&src, &dst, options, b"msg");
            parse_segment(&src, &dst, &bytes)
                .map(|s| (s.src_port, s.dst_port, s.seq, s.ack, s.payload.to_vec()))
        };
        let ok = Ok((
            expected.src_port,
            expected.dst_port,
            expected.seq,
            expected.ack,
            b"msg".to_vec(),
        ));
        // Etherparse's framing of our option parses like ours.
        assert_eq!(parse(&[253, 4, 0x54, 0x72]), ok);
        // Among other options, after another experiment's 253, before padding.
        assert_eq!(
            parse(&[2, 4, 5, 0xB4, 1, 1, 253, 4, 0x12, 0x34, 253, 4, 0x54, 0x72]),
            ok
        );
        // No options; only MSS; another ExID; ours after the end-of-list option.
        assert_eq!(parse(&[]), Err(WireError::NotTrickles));
        assert_eq!(parse(&[2, 4, 5, 0xB4]), Err(WireError::NotTrickles));
        assert_eq!(parse(&[253, 4, 0x54, 0x73]), Err(WireError::NotTrickles));
        assert_eq!(parse(&[254, 4, 0x54, 0x72]), Err(WireError::NotTrickles));
        assert_eq!(
            parse(&[0, 0, 0, 0, 253, 4, 0x54, 0x72]),
            Err(WireError::NotTrickles)
        );
        // Our ExID with the wrong length; an option running off the header.
        assert_eq!(
            parse(&[253, 6, 0x54, 0x72, 0, 0, 0, 0]),
            Err(WireError::BadLength)
        );
        assert_eq!(parse(&[253, 9, 0x54, 0x72]), Err(WireError::BadTcp));

        // A corrupted checksum.
        let mut bytes = foreign_segment(&src, &dst, &[253, 4, 0x54, 0x72], b"msg");
        bytes[16] ^= 0x01;
        assert_eq!(parse_segment(&src, &dst, &bytes), Err(WireError::BadTcp));
        // A corrupted payload.
        let mut bytes = foreign_segment(&src, &dst, &[253, 4, 0x54, 0x72], b"msg");
        bytes[TCP_HEADER_LEN] ^= 0x20;
        assert_eq!(parse_segment(&src, &dst, &bytes), Err(WireError::BadTcp));
    }
}

#[test]
fn mixed_families_and_zero_ports_are_refused() {
    let (v4, v6) = (Addr::V4(V4_CLIENT), Addr::V6(V6_SERVER));
    let seg = Segment {
        src_port: 1,
        dst_port: 2,
        syn: true,
        seq: 0,
        ack: 0,
        payload: &[],
    };
    let mut out = [0u8; 64];
    assert_eq!(
        emit_segment(&v4, &v6, &seg, &mut out),
        Err(WireError::BadTcp)
    );
    assert_eq!(
        emit_segment(&v6, &v4, &seg, &mut out),
        Err(WireError::BadTcp)
    );
    let n = emit_segment(&v4, &v4, &seg, &mut out).unwrap();
    assert_eq!(parse_segment(&v4, &v6, &out[..n]), Err(WireError::BadTcp));
    assert_eq!(parse_segment(&v6, &v4, &out[..n]), Err(WireError::BadTcp));
    let zero = Segment { src_port: 0, ..seg };
    assert_eq!(
        emit_segment(&v4, &v4, &zero, &mut out),
        Err(WireError::BadTcp)
    );
    assert_eq!(
        emit_segment(&v4, &v4, &seg, &mut out[..TCP_HEADER_LEN - 1]),
        Err(WireError::BadLength)
    );
    for n in 0..TCP_HEADER_LEN {
        assert!(parse_segment(&v4, &v4, &out[..n]).is_err());
    }
}
