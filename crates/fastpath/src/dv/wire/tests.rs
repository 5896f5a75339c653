//! The wire format's tests.

use super::*;
use alloc::vec;

const UPDATE: [u8; 20] = [
    1, 1, 0, 1, 0, 0, 0, 9, // v1, update, 1 entry, from router 9
    0, 0, 0, 4, 0, 6, 0, 0, 0, 0, 0, 3, // dest 4, cost 6, index 3
];

#[test]
fn parse_literal_update() {
    let adv = Advertisement::parse(&UPDATE).unwrap();
    assert_eq!(adv.kind(), MessageKind::Update);
    assert_eq!(adv.sender(), 9);
    assert_eq!(adv.len(), 1);
    assert_eq!(
        adv.entries().collect::<Vec<_>>(),
        vec![AdvEntry {
            dest: 4,
            cost: 6,
            index: 3
        }]
    );
    let mut out = Vec::new();
    Advertisement::emit(
        MessageKind::Update,
        9,
        &adv.entries().collect::<Vec<_>>(),
        &mut out,
    );
    assert_eq!(out, UPDATE);
}

#[test]
fn request_round_trip() {
    let mut out = Vec::new();
    Advertisement::emit(MessageKind::Request, 5, &[], &mut out);
    assert_eq!(out, [1, 2, 0, 0, 0, 0, 0, 5]);
    let adv = Advertisement::parse(&out).unwrap();
    assert_eq!(adv.kind(), MessageKind::Request);
    assert!(adv.is_empty());
}

#[test]
fn rejects_bad_input() {
    assert_eq!(
        Advertisement::parse(&UPDATE[..7]).unwrap_err(),
        WireError::Truncated
    );
    assert_eq!(
        Advertisement::parse(&UPDATE[..19]).unwrap_err(),
        WireError::Truncated
    );
    let mut long = UPDATE.to_vec();
    long.push(0);
    assert_eq!(
        Advertisement::parse(&long).unwrap_err(),
        WireError::TrailingBytes
    );
    let mut b = UPDATE;
    b[0] = 2;
    assert_eq!(
        Advertisement::parse(&b).unwrap_err(),
        WireError::BadVersion(2)
    );
    let mut b = UPDATE;
    b[1] = 9;
    assert_eq!(
        Advertisement::parse(&b).unwrap_err(),
        WireError::UnknownKind(9)
    );
    let mut b = UPDATE;
    b[1] = 2;
    assert_eq!(
        Advertisement::parse(&b).unwrap_err(),
        WireError::RequestWithEntries
    );
    let mut b = UPDATE;
    b[15] = 1;
    assert_eq!(
        Advertisement::parse(&b).unwrap_err(),
        WireError::ReservedNotZero
    );
    let mut b = UPDATE;
    b[16] = 1;
    assert_eq!(
        Advertisement::parse(&b).unwrap_err(),
        WireError::IndexTooLarge
    );
}

use crate::lpm::{IpPrefix, Prefix, Prefix6};

#[rustfmt::skip]
const PREFIX_UPDATE: [u8; 56] = [
    1, 5, 0, 2, 0, 0, 0, 9, // v1, prefix update, 2 entries, from router 9
    1, 16, 0, 3, 0, 0, 0, 5, // IPv4 /16, cost 3, index 5
    10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 10.1.0.0, 12 zeros of padding
    2, 32, 1, 2, 0, 0xab, 0xcd, 0xef, // IPv6 /32, cost 258, index 0xabcdef
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 2001:db8::
];

fn prefix_update_entries() -> [PrefixEntry; 2] {
    let v4 = Prefix::new([10, 1, 0, 0], 16).unwrap();
    let mut a6 = [0u8; 16];
    a6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    let v6 = Prefix6::new(a6, 32).unwrap();
    [
        PrefixEntry {
            prefix: IpPrefix::V4(v4),
            cost: 3,
            index: 5,
        },
        PrefixEntry {
            prefix: IpPrefix::V6(v6),
            cost: 258,
            index: 0xab_cdef,
        },
    ]
}

#[test]
fn prefix_update_emit_then_parse() {
    let entries = prefix_update_entries();
    let mut out = Vec::new();
    Advertisement::emit_prefixes(MessageKind::PrefixUpdate, 9, &entries, &mut out);
    assert_eq!(out, PREFIX_UPDATE);
    assert_eq!(out.len(), Advertisement::prefix_buffer_len(2));
    let adv = Advertisement::parse(&PREFIX_UPDATE).unwrap();
    assert_eq!(adv.kind(), MessageKind::PrefixUpdate);
    assert_eq!(adv.sender(), 9);
    assert_eq!(adv.len(), 2);
    assert_eq!(adv.prefix_entries().collect::<Vec<_>>(), entries);
    assert_eq!(
        adv.entries().count(),
        0,
        "no router entries in a prefix update"
    );
    let dests: Vec<DestEntry> = adv.dest_entries().collect();
    assert_eq!(dests[0].dest, Dest::from(entries[0].prefix));
    assert_eq!((dests[1].cost, dests[1].index), (258, 0xab_cdef));
    // And the other way round: router updates have no prefix entries.
    let upd = Advertisement::parse(&UPDATE).unwrap();
    assert_eq!(upd.prefix_entries().count(), 0);
    assert_eq!(
        upd.dest_entries().collect::<Vec<_>>(),
        vec![DestEntry {
            dest: Dest::Router(4),
            cost: 6,
            index: 3
        }]
    );
}

#[test]
fn a_kind_gets_only_entries_of_its_shape() {
    let mut out = Vec::new();
    Advertisement::emit(
        MessageKind::PrefixUpdate,
        9,
        &[AdvEntry {
            dest: 1,
            cost: 1,
            index: 1,
        }],
        &mut out,
    );
    assert_eq!(out, [1, 5, 0, 0, 0, 0, 0, 9]);
    let mut out = Vec::new();
    Advertisement::emit_prefixes(MessageKind::Update, 9, &prefix_update_entries(), &mut out);
    assert_eq!(out, [1, 1, 0, 0, 0, 0, 0, 9]);
    assert!(Advertisement::parse(&out).unwrap().is_empty());
}

#[test]
fn full_messages_fit_one_datagram() {
    assert_eq!((MAX_ENTRIES, MAX_PREFIX_ENTRIES), (121, 60));
    assert!(Advertisement::buffer_len(MAX_ENTRIES) <= MAX_MESSAGE_LEN);
    assert!(Advertisement::prefix_buffer_len(MAX_PREFIX_ENTRIES) <= MAX_MESSAGE_LEN);
    assert!(Advertisement::prefix_buffer_len(MAX_PREFIX_ENTRIES + 1) > MAX_MESSAGE_LEN);
    assert_eq!(MAX_MESSAGE_LEN + 1 + 8 + 20, 1500);
}

#[test]
fn rejects_bad_prefix_entries() {
    let parse = |b: &[u8]| Advertisement::parse(b).unwrap_err();
    // Length: one entry short, a byte short, a byte long, router-sized entries.
    assert_eq!(parse(&PREFIX_UPDATE[..32]), WireError::Truncated);
    assert_eq!(parse(&PREFIX_UPDATE[..55]), WireError::Truncated);
    let mut long = PREFIX_UPDATE.to_vec();
    long.push(0);
    assert_eq!(parse(&long), WireError::TrailingBytes);
    assert_eq!(
        parse(&[1, 5, 0, 1, 0, 0, 0, 9, 0, 0, 0, 4, 0, 6, 0, 0, 0, 0, 0, 3]),
        WireError::Truncated
    );
    let mut b = PREFIX_UPDATE;
    b[8] = 3;
    assert_eq!(parse(&b), WireError::BadFamily(3));
    let mut b = PREFIX_UPDATE;
    b[8] = 0;
    assert_eq!(parse(&b), WireError::BadFamily(0));
    let mut b = PREFIX_UPDATE;
    b[9] = 33;
    assert_eq!(parse(&b), WireError::PrefixTooLong(33));
    let mut b = PREFIX_UPDATE;
    b[33] = 129;
    assert_eq!(parse(&b), WireError::PrefixTooLong(129));
    let mut b = PREFIX_UPDATE;
    b[33] = 128; // a /128 is fine (any host bits are prefix bits then)
    assert!(Advertisement::parse(&b).is_ok());
    let mut b = PREFIX_UPDATE;
    b[19] = 1; // 10.1.0.1/16
    assert_eq!(parse(&b), WireError::HostBitsSet);
    let mut b = PREFIX_UPDATE;
    b[55] = 1; // 2001:db8::1/32
    assert_eq!(parse(&b), WireError::HostBitsSet);
    let mut b = PREFIX_UPDATE;
    b[20] = 1; // IPv4 padding
    assert_eq!(parse(&b), WireError::PaddingNotZero);
    let mut b = PREFIX_UPDATE;
    b[12] = 1; // index above 24 bits
    assert_eq!(parse(&b), WireError::IndexTooLarge);
}

#[test]
fn address_queries_name_full_length_addresses() {
    #[rustfmt::skip]
    let query = [
        1, 6, 0, 1, 0, 0, 3, 0xe8, // v1, address query, 1 entry, from host 1000
        1, 32, 0, 0, 0, 0, 0, 0, // IPv4 /32, cost 0, index 0
        10, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 10.1.2.3
    ];
    let adv = Advertisement::parse(&query).unwrap();
    assert_eq!(adv.kind(), MessageKind::AddressQuery);
    assert!(adv.kind().is_host_message());
    let want = IpPrefix::V4(Prefix::new([10, 1, 2, 3], 32).unwrap());
    assert_eq!(adv.prefix_entries().next().map(|e| e.prefix), Some(want));
    let mut b = query;
    b[9] = 24;
    b[19] = 0;
    assert_eq!(
        Advertisement::parse(&b).unwrap_err(),
        WireError::NotAnAddress
    );
    // The same entry is fine in an answer (a router's matching prefix).
    b[1] = 7;
    assert!(Advertisement::parse(&b).is_ok());
}
