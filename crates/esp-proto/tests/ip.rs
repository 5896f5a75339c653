//! ESP instructions in IP packets: literal packets of each form, a second parser
//! (etherparse) agreeing with what the builders emit, and properties over random packets.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use core::net::IpAddr;

use esp_proto::consts::{HEADER_LEN, MAX_IPV4_OPTION_OPERANDS};
use esp_proto::wire::{
    Form, Header, HeaderRepr, IpError, Loc, addresses, decrement_ttl, dedicated_ipv4_len,
    dedicated_ipv6_len, emit_dedicated_ipv4, emit_dedicated_ipv6, ipv4_checksum_ok, locate,
    piggyback_into, piggybacked_len, reflect,
};
use etherparse::{IpNumber, Ipv4Header, Ipv4HeaderSlice, Ipv4Options, Ipv6Header};
use etherparse::{Ipv6HeaderSlice, Ipv6RawExtHeader, Ipv6RawExtHeaderSlice};
use proptest::prelude::*;

/// An ESP instruction: header (Loc = output, CID 7 unless given) and `operands`.
fn esp(opcode: u8, cid: u32, operands: &[u8]) -> Vec<u8> {
    let repr = HeaderRepr {
        loc: Loc::OUTPUT,
        err: false,
        rb: false,
        opcode,
        cid,
        operand_len: u8::try_from(operands.len()).unwrap(),
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut buf).unwrap();
    buf[HEADER_LEN..].copy_from_slice(operands);
    buf
}

/// `piggyback_into` a fresh vector (the no-alloc path; `piggyback` is checked against it).
fn attach(packet: &[u8], instruction: &[u8]) -> Result<Vec<u8>, IpError> {
    let mut out = vec![0; piggybacked_len(packet, instruction)?];
    let n = piggyback_into(packet, instruction, &mut out)?;
    assert_eq!(n, out.len());
    #[cfg(feature = "alloc")]
    assert_eq!(esp_proto::wire::piggyback(packet, instruction)?, out);
    Ok(out)
}

const ESP: [u8; 10] = [0x14, 0, 1, 2, 0, 0, 0, 7, 0xAB, 0xCD];

const DEDICATED_V4: [u8; 34] = [
    0x45, 0, 0, 34, 0, 0, 0x40, 0, 64, 253, 0x25,
    0xDD, // version, IHL, total length, DF, TTL, 253
    10, 0, 0, 1, 10, 0, 0, 2, // addresses
    0x14, 0, 1, 2, 0, 0, 0, 7, 0xAB, 0xCD, // ESP: Loc = output, opcode 1, CID 7, 2 operands
    b'd', b'a', b't', b'a',
];

const PLAIN_V4: [u8; 24] = [
    0x45, 0, 0, 24, 0x12, 0x34, 0, 0, 64, 17, 0x7C, 0x65, // UDP
    192, 0, 2, 1, 198, 51, 100, 7, //
    b'd', b'a', b't', b'a',
];

const OPTION_V4: [u8; 40] = [
    0x49, 0, 0, 40, 0x12, 0x34, 0, 0, 64, 17, 0x85, 0x6D, // IHL 9
    192, 0, 2, 1, 198, 51, 100, 7, //
    148, 4, 0, 0, // Router Alert
    158, 12, 0x14, 0, 1, 2, 0, 0, 0, 7, 0xAB, 0xCD, // ESP option
    b'd', b'a', b't', b'a',
];

fn v6_fixed(next: u8, payload_len: u8) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, payload_len, next, 64];
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8].repeat(4)); // 2001:db8:2001:db8::…
    p.extend_from_slice(&[0xfe, 0x80, 0, 1].repeat(4));
    p
}

fn hbh_v6() -> Vec<u8> {
    let mut p = v6_fixed(0, 20);
    p.extend_from_slice(&[17, 1, 0x3E, 10]); // next header UDP, 16 bytes; option 0x3E, 10 bytes
    p.extend_from_slice(&ESP);
    p.extend_from_slice(&[1, 0]); // PadN of 2
    p.extend_from_slice(b"data");
    p
}

#[test]
fn dedicated_ipv4_literal() {
    let mut out = [0u8; 64];
    let n = emit_dedicated_ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64, &ESP, b"data", &mut out).unwrap();
    assert_eq!(&out[..n], &DEDICATED_V4[..]);
    assert_eq!(n, dedicated_ipv4_len(ESP.len(), 4));
    let found = locate(&DEDICATED_V4).unwrap().unwrap();
    assert_eq!((found.form, found.range), (Form::Dedicated, 20..30));
    assert!(ipv4_checksum_ok(&DEDICATED_V4));
    assert_eq!(
        emit_dedicated_ipv4([0; 4], [0; 4], 1, &ESP, b"data", &mut out[..33]),
        Err(IpError::BufferTooSmall {
            needed: 34,
            len: 33
        })
    );
}

#[test]
fn option_ipv4_literal() {
    assert_eq!(locate(&PLAIN_V4), Ok(None));
    assert_eq!(attach(&PLAIN_V4, &ESP).unwrap(), OPTION_V4);
    let found = locate(&OPTION_V4).unwrap().unwrap();
    assert_eq!((found.form, found.range), (Form::Ipv4Option, 26..36));
    // Without Router Alert (replaced by NOPs) it is still found.
    let mut no_alert = OPTION_V4;
    no_alert[20..24].copy_from_slice(&[1, 1, 1, 1]);
    assert_eq!(locate(&no_alert).unwrap().unwrap().range, 26..36);
    assert_eq!(
        attach(&OPTION_V4, &ESP),
        Err(IpError::AlreadyCarried { offset: 26 })
    );
}

#[test]
fn hop_by_hop_ipv6_literal() {
    let plain = {
        let mut p = v6_fixed(17, 4);
        p.extend_from_slice(b"data");
        p
    };
    assert_eq!(locate(&plain), Ok(None));
    let packet = hbh_v6();
    assert_eq!(attach(&plain, &ESP).unwrap(), packet);
    let found = locate(&packet).unwrap().unwrap();
    assert_eq!((found.form, found.range), (Form::Ipv6HopByHop, 44..54));

    let mut out = [0u8; 64];
    let n = emit_dedicated_ipv6([1; 16], [2; 16], 9, &ESP, &[], &mut out).unwrap();
    assert_eq!(n, dedicated_ipv6_len(ESP.len(), 0));
    assert_eq!(&out[..8], &[0x60, 0, 0, 0, 0, 10, 253, 9]);
    let found = locate(&out[..n]).unwrap().unwrap();
    assert_eq!((found.form, found.range), (Form::Dedicated, 40..50));
}

#[test]
fn router_rewrites_only_the_instruction() {
    for packet in [DEDICATED_V4.to_vec(), OPTION_V4.to_vec(), hbh_v6()] {
        let mut p = packet.clone();
        let found = locate(&p).unwrap().unwrap();
        let mut h = found.header_mut(&mut p).unwrap();
        h.set_err(true);
        h.set_rb(true);
        h.operands_mut().fill(0xEE);
        for (i, (a, b)) in packet.iter().zip(&p).enumerate() {
            assert!(a == b || found.range.contains(&i), "byte {i} changed");
        }
        assert_eq!(locate(&p).unwrap(), Some(found));
    }
}

#[test]
fn malformed_packets_are_errors() {
    let mut bad = DEDICATED_V4;
    bad[3] = 35; // total length past the bytes
    assert_eq!(
        locate(&bad),
        Err(IpError::Ip(waist_ip::IpError::TotalLength {
            declared: 35,
            len: 34
        }))
    );
    let mut longer = DEDICATED_V4;
    longer[23] = 3; // three operands: one payload byte more, still well-formed
    assert_eq!(locate(&longer).unwrap().unwrap().range, 20..31);
    let mut bad = DEDICATED_V4;
    bad[23] = 20; // operands run past the packet
    assert!(matches!(
        locate(&bad),
        Err(IpError::Instruction { offset: 20, .. })
    ));
    let mut bad = OPTION_V4;
    bad[25] = 11; // option length disagrees with the instruction's
    assert!(matches!(
        locate(&bad),
        Err(IpError::Instruction { offset: 26, .. })
    ));
    let mut bad = OPTION_V4;
    bad[25] = 40; // option overruns the options
    assert_eq!(locate(&bad), Err(IpError::OptionLength { offset: 24 }));
    let mut bad = OPTION_V4;
    bad[0] = 0x44;
    assert_eq!(
        locate(&bad),
        Err(IpError::Ip(waist_ip::IpError::HeaderLength { ihl: 4 }))
    );
    let mut bad = hbh_v6();
    bad[41] = 3; // hop-by-hop header of 32 bytes in a 20-byte payload
    assert_eq!(
        locate(&bad),
        Err(IpError::ExtensionLength {
            declared: 32,
            available: 20
        })
    );
    let mut two = hbh_v6();
    two[5] = 26;
    two[40] = 253; // a hop-by-hop option and a dedicated instruction after it
    two.truncate(56);
    two.extend_from_slice(&ESP);
    assert_eq!(locate(&two), Err(IpError::Duplicate { offset: 56 }));
    two[42] = 0x3F; // not ESP's option any more
    assert_eq!(locate(&two).unwrap().unwrap().range, 56..66);
    assert_eq!(
        locate(&[0x55; 40]),
        Err(IpError::Ip(waist_ip::IpError::Version { version: 5 }))
    );
    assert_eq!(
        locate(&[]),
        Err(IpError::Ip(waist_ip::IpError::Truncated {
            len: 0,
            needed: 1
        }))
    );
}

#[test]
fn reflect_and_ttl() {
    let mut p = DEDICATED_V4;
    reflect(&mut p).unwrap();
    assert_eq!(&p[12..20], &[10, 0, 0, 2, 10, 0, 0, 1]);
    assert!(ipv4_checksum_ok(&p));
    reflect(&mut p).unwrap();
    assert_eq!(p, DEDICATED_V4);

    let (src, dst) = addresses(&p).unwrap();
    assert_eq!(
        (src, dst),
        (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]))
    );

    p[8] = 1;
    p[10..12].copy_from_slice(&[0, 0]);
    let sum = Ipv4HeaderSlice::from_slice(&p)
        .unwrap()
        .to_header()
        .calc_header_checksum();
    p[10..12].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(decrement_ttl(&mut p), Ok(0));
    assert!(ipv4_checksum_ok(&p));
    let before = p;
    assert_eq!(decrement_ttl(&mut p), Ok(0), "TTL 0 reports 0");
    assert_eq!(p, before, "and leaves the packet alone");

    let mut v6 = hbh_v6();
    v6[7] = 1;
    assert_eq!(decrement_ttl(&mut v6), Ok(0));
    assert_eq!(decrement_ttl(&mut v6), Ok(0));
    assert_eq!(
        decrement_ttl(&mut [0x45; 19]),
        Err(IpError::Ip(waist_ip::IpError::Truncated {
            len: 19,
            needed: 20
        }))
    );
}

#[test]
fn too_large_for_the_ipv4_option_space() {
    let fits = esp(1, 7, &[0; MAX_IPV4_OPTION_OPERANDS]);
    assert_eq!(attach(&PLAIN_V4, &fits).unwrap().len(), 24 + 40);
    let big = esp(1, 7, &[0; MAX_IPV4_OPTION_OPERANDS + 1]);
    assert_eq!(
        attach(&PLAIN_V4, &big),
        Err(IpError::OptionSpace {
            needed: 41,
            available: 40
        })
    );
}

/// An IPv4 packet built by etherparse.
fn etherparse_v4(
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    protocol: u8,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let mut h = Ipv4Header::new(
        u16::try_from(payload.len()).unwrap(),
        ttl,
        IpNumber(protocol),
        src,
        dst,
    )
    .unwrap();
    h.options = Ipv4Options::try_from(options).unwrap();
    h.set_payload_len(payload.len()).unwrap();
    h.header_checksum = h.calc_header_checksum();
    let mut p = h.to_bytes().to_vec();
    p.extend_from_slice(payload);
    p
}

/// Checks `packet` with etherparse: IPv4 header length, total length, checksum, addresses.
fn etherparse_agrees_v4(packet: &[u8]) {
    let h = Ipv4HeaderSlice::from_slice(packet).unwrap();
    assert_eq!(usize::from(h.total_len()), packet.len());
    assert_eq!(h.to_header().calc_header_checksum(), h.header_checksum());
    assert!(ipv4_checksum_ok(packet));
    assert_eq!(
        addresses(packet).unwrap(),
        (h.source_addr().into(), h.destination_addr().into())
    );
}

/// Checks `packet` with etherparse: IPv6 payload length, addresses, and the hop-by-hop
/// header's length and next header (returned with the bytes after it).
fn etherparse_agrees_v6(packet: &[u8]) -> (u8, Vec<u8>) {
    let h = Ipv6HeaderSlice::from_slice(packet).unwrap();
    assert_eq!(usize::from(h.payload_length()) + 40, packet.len());
    assert_eq!(
        addresses(packet).unwrap(),
        (h.source_addr().into(), h.destination_addr().into())
    );
    if h.next_header() == IpNumber(0) {
        let ext = Ipv6RawExtHeaderSlice::from_slice(&packet[40..]).unwrap();
        let rest = packet[40 + ext.slice().len()..].to_vec();
        (ext.next_header().0, rest)
    } else {
        (h.next_header().0, packet[40..].to_vec())
    }
}

fn operands(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..=max)
}

/// IPv4 options that are not ESP's: NOPs and generic options of kinds 7, 68, 130, 131.
fn v4_options() -> impl Strategy<Value = Vec<u8>> {
    let option = prop_oneof![
        Just(vec![1u8]),
        Just(vec![148, 4, 0, 0]),
        (prop::sample::select(vec![7u8, 68, 130, 131]), operands(8)).prop_map(|(k, d)| {
            let mut o = vec![k, u8::try_from(d.len() + 2).unwrap()];
            o.extend(d);
            o
        }),
    ];
    prop::collection::vec(option, 0..4).prop_map(|os| {
        let mut o: Vec<u8> = os.concat();
        o.truncate(40);
        // Truncation may cut an option: fall back to NOPs.
        if options_used(&o).is_none() {
            o.fill(1);
        }
        o.resize(o.len().next_multiple_of(4), 0);
        o
    })
}

/// Option bytes before End of Options List, or `None` if an option overruns.
fn options_used(o: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < o.len() {
        match o[at] {
            0 => return Some(at),
            1 => at += 1,
            _ => {
                let len = usize::from(*o.get(at + 1)?);
                if len < 2 || at + len > o.len() {
                    return None;
                }
                at += len;
            }
        }
    }
    Some(at)
}

/// IPv6 hop-by-hop option bytes that are not ESP's: Pad1, PadN and unknown options.
fn hbh_options() -> impl Strategy<Value = Vec<u8>> {
    let option = prop_oneof![
        Just(vec![0u8]),
        operands(6).prop_map(|d| {
            let mut o = vec![1, u8::try_from(d.len()).unwrap()];
            o.extend(std::iter::repeat_n(0, d.len()));
            o
        }),
        (
            prop::sample::select(vec![0x05u8, 0x1E, 0x3F, 0xC2]),
            operands(12)
        )
            .prop_map(|(k, d)| {
                let mut o = vec![k, u8::try_from(d.len()).unwrap()];
                o.extend(d);
                o
            }),
    ];
    prop::collection::vec(option, 0..5).prop_map(|os| {
        let mut o: Vec<u8> = os.concat();
        let pad = (o.len() + 2).next_multiple_of(8) - (o.len() + 2);
        o.extend(std::iter::repeat_n(0, pad)); // Pad1s
        o
    })
}

proptest! {
    #[test]
    fn dedicated_round_trips(
        src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(), ttl in any::<u8>(),
        ops in operands(200), payload in operands(100), v6 in any::<bool>(),
    ) {
        let instruction = esp(2, 0xC1D, &ops);
        let mut out = vec![0; 400];
        let (n, start) = if v6 {
            (emit_dedicated_ipv6(src, dst, ttl, &instruction, &payload, &mut out).unwrap(), 40)
        } else {
            let (s, d) = (src[..4].try_into().unwrap(), dst[..4].try_into().unwrap());
            (emit_dedicated_ipv4(s, d, ttl, &instruction, &payload, &mut out).unwrap(), 20)
        };
        let packet = &out[..n];
        let found = locate(packet).unwrap().unwrap();
        prop_assert_eq!(found.form, Form::Dedicated);
        prop_assert_eq!(found.range.clone(), start..start + instruction.len());
        prop_assert_eq!(&packet[found.range], &instruction[..]);
        prop_assert_eq!(&packet[start + instruction.len()..], &payload[..]);
        if v6 {
            let (next, rest) = etherparse_agrees_v6(packet);
            prop_assert_eq!(next, 253);
            prop_assert_eq!(rest.len(), instruction.len() + payload.len());
            let (h, _) = Ipv6Header::from_slice(packet).unwrap();
            prop_assert_eq!((h.hop_limit, h.source, h.destination), (ttl, src, dst));
        } else {
            etherparse_agrees_v4(packet);
            prop_assert_eq!(Ipv4HeaderSlice::from_slice(packet).unwrap().protocol(), IpNumber(253));
        }
    }

    #[test]
    fn piggyback_ipv4_then_locate(
        src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), ttl in 1u8..,
        protocol in any::<u8>().prop_filter("not ESP", |p| *p != 253),
        options in v4_options(), ops in operands(MAX_IPV4_OPTION_OPERANDS + 12),
        payload in operands(64),
    ) {
        let packet = etherparse_v4(src, dst, ttl, protocol, &options, &payload);
        prop_assert_eq!(locate(&packet), Ok(None));
        let instruction = esp(3, 99, &ops);
        let used = options_used(&options).unwrap();
        let alert = if has_router_alert(&options[..used]) { 0 } else { 4 };
        let needed = alert + 2 + instruction.len();
        match attach(&packet, &instruction) {
            Ok(p) => {
                prop_assert!(needed <= 40 - used);
                let found = locate(&p).unwrap().unwrap();
                prop_assert_eq!(found.form, Form::Ipv4Option);
                prop_assert_eq!(&p[found.range], &instruction[..]);
                etherparse_agrees_v4(&p);
                let h = Ipv4HeaderSlice::from_slice(&p).unwrap();
                prop_assert_eq!(&p[usize::from(h.ihl()) * 4..], &payload[..]);
                prop_assert_eq!(&h.options()[..used], &options[..used]);
                prop_assert!(has_router_alert(h.options()));
                prop_assert_eq!((h.ttl(), h.protocol().0, h.source(), h.destination()), (ttl, protocol, src, dst));
                // The TTL decrement keeps the checksum right.
                let mut q = p.clone();
                prop_assert_eq!(decrement_ttl(&mut q), Ok(ttl - 1));
                etherparse_agrees_v4(&q);
            }
            Err(e) => {
                prop_assert_eq!(e, IpError::OptionSpace { needed, available: 40 - used });
                prop_assert!(used > 0 || ops.len() > MAX_IPV4_OPTION_OPERANDS);
            }
        }
    }

    #[test]
    fn piggyback_ipv6_then_locate(
        src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(),
        next in any::<u8>().prop_filter("not HBH or ESP", |n| *n != 0 && *n != 253),
        existing in prop::option::of(hbh_options()), ops in operands(247), payload in operands(64),
    ) {
        let mut packet = Ipv6Header {
            traffic_class: 0, flow_label: Default::default(), payload_length: 0,
            next_header: IpNumber(next), hop_limit: 64, source: src, destination: dst,
        };
        let mut body = Vec::new();
        if let Some(options) = &existing {
            let ext = Ipv6RawExtHeader::new_raw(IpNumber(next), options).unwrap();
            body.extend_from_slice(&ext.to_bytes());
            packet.next_header = IpNumber(0);
        }
        body.extend_from_slice(&payload);
        packet.set_payload_length(body.len()).unwrap();
        let mut packet = packet.to_bytes().to_vec();
        packet.extend_from_slice(&body);
        prop_assert_eq!(locate(&packet), Ok(None));

        let instruction = esp(3, 99, &ops);
        let p = attach(&packet, &instruction).unwrap();
        let found = locate(&p).unwrap().unwrap();
        prop_assert_eq!(found.form, Form::Ipv6HopByHop);
        prop_assert_eq!(&p[found.range], &instruction[..]);
        let (chain, rest) = etherparse_agrees_v6(&p);
        prop_assert_eq!((chain, &rest[..]), (next, &payload[..]));
        let mut q = p.clone();
        prop_assert_eq!(decrement_ttl(&mut q), Ok(63));
    }

    #[test]
    fn oversized_instruction_is_refused(ops in prop::collection::vec(any::<u8>(), 27..=247)) {
        let instruction = esp(1, 1, &ops);
        prop_assert_eq!(
            attach(&PLAIN_V4, &instruction),
            Err(IpError::OptionSpace { needed: 6 + instruction.len(), available: 40 })
        );
    }

    #[test]
    fn reflect_twice_is_identity(packet in prop_oneof![
        Just(DEDICATED_V4.to_vec()), Just(OPTION_V4.to_vec()), Just(hbh_v6()),
    ], src in any::<[u8; 16]>(), dst in any::<[u8; 16]>()) {
        let mut p = packet.clone();
        let (a, b) = if p[0] >> 4 == 4 { (12..16, 16..20) } else { (8..24, 24..40) };
        p[a.clone()].copy_from_slice(&src[..a.len()]);
        p[b.clone()].copy_from_slice(&dst[..b.len()]);
        let original = p.clone();
        reflect(&mut p).unwrap();
        prop_assert_eq!(&p[a.clone()], &original[b.clone()]);
        prop_assert_eq!(&p[b], &original[a]);
        if p[0] >> 4 == 4 {
            etherparse_agrees_v4(&p);
        }
        reflect(&mut p).unwrap();
        if p[0] >> 4 == 4 {
            prop_assert!(ipv4_checksum_ok(&p));
            // The checksum was recomputed: compare the rest.
            prop_assert_eq!(&p[..10], &original[..10]);
            prop_assert_eq!(&p[12..], &original[12..]);
        } else {
            prop_assert_eq!(p, original);
        }
    }

    #[test]
    fn ttl_decrement_matches_a_full_recompute(
        ttl in any::<u8>(), options in v4_options(), id in any::<u16>(),
        src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), protocol in any::<u8>(),
    ) {
        let mut p = etherparse_v4(src, dst, ttl, protocol, &options, &[]);
        p[4..6].copy_from_slice(&id.to_be_bytes());
        let mut h = Ipv4HeaderSlice::from_slice(&p).unwrap().to_header();
        p[10..12].copy_from_slice(&h.calc_header_checksum().to_be_bytes());
        prop_assert_eq!(decrement_ttl(&mut p), Ok(ttl.saturating_sub(1)));
        h.time_to_live = ttl.saturating_sub(1);
        let expected = h.calc_header_checksum();
        prop_assert_eq!(u16::from_be_bytes([p[10], p[11]]), expected);
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
        check_locate(&bytes);
    }

    #[test]
    fn corrupted_packets_never_panic(
        base in prop_oneof![
            Just(DEDICATED_V4.to_vec()), Just(OPTION_V4.to_vec()), Just(hbh_v6()),
            Just(PLAIN_V4.to_vec()),
        ],
        flips in prop::collection::vec((0usize..64, any::<u8>()), 1..3),
        cut in prop::option::weighted(0.2, any::<prop::sample::Index>()),
        trailer in operands(3),
    ) {
        let mut p = base;
        for (at, b) in flips {
            if let Some(byte) = p.get_mut(at) {
                *byte = b;
            }
        }
        if let Some(cut) = cut {
            p.truncate(cut.index(p.len() + 1));
        }
        p.extend(trailer);
        check_locate(&p);
    }
}

fn has_router_alert(options: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&kind) = options.get(at) {
        match kind {
            0 => return false,
            1 => at += 1,
            148 => return true,
            _ => at += usize::from(options.get(at + 1).copied().unwrap_or(1).max(1)),
        }
    }
    false
}

/// `locate` on any bytes: a range it returns is in bounds and holds one instruction; the
/// builders and other helpers agree with it about well-formedness.
fn check_locate(bytes: &[u8]) {
    match locate(bytes) {
        Ok(Some(found)) => {
            assert!(found.range.end <= bytes.len());
            Header::new_checked(&bytes[found.range.clone()]).unwrap();
            assert!(matches!(
                attach(bytes, &ESP),
                Err(IpError::AlreadyCarried { offset }) if offset == found.range.start
            ));
        }
        Ok(None) => {
            if let Ok(p) = attach(bytes, &ESP) {
                assert_eq!(&p[locate(&p).unwrap().unwrap().range], &ESP[..]);
            }
        }
        Err(_) => {}
    }
    if locate(bytes).is_ok() {
        addresses(bytes).unwrap();
        let mut p = bytes.to_vec();
        reflect(&mut p).unwrap();
    }
}
