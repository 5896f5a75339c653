//! Integrated layer processing equals, bit for bit, the three separate passes (copy, then
//! checksum, then decrypt) for arbitrary region layouts and data.
#![allow(clippy::unwrap_used)] // tests

use fastpath::dml::{DmlHeader, RegionKind, RegionStack};
use fastpath::ilp::{AesCtr, IlpError, Keystream, integrated, separate};
use proptest::prelude::*;

/// A region at a random place of a payload of `len` bytes (possibly empty, possibly the
/// whole payload).
fn region(len: usize) -> impl Strategy<Value = (u16, u16)> {
    (0..=len).prop_flat_map(move |start| {
        (Just(start), 0..=len - start).prop_map(|(s, l)| (s as u16, l as u16))
    })
}

fn layout() -> impl Strategy<Value = (Vec<u8>, Vec<(RegionKind, u16, u16)>)> {
    (0usize..300).prop_flat_map(|len| {
        let kinds = prop_oneof![
            Just(RegionKind::Checksum),
            Just(RegionKind::Encrypted),
            Just(RegionKind::Data),
            Just(RegionKind::KeyId),
        ];
        (
            proptest::collection::vec(any::<u8>(), len),
            proptest::collection::vec((kinds, region(len)).prop_map(|(k, (o, l))| (k, o, l)), 0..5),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn integrated_equals_separate_passes(
        (payload, regions) in layout(),
        key in any::<[u8; 16]>(),
        nonce in any::<[u8; 8]>(),
        decrypt in any::<bool>(),
        slack in 0usize..4,
    ) {
        let mut stack = RegionStack::new();
        for (k, o, l) in &regions {
            stack.push(*k, *o, *l).unwrap();
        }
        let header = stack.finish(0);
        let ks = AesCtr::new(key, nonce);
        let ks: Option<&dyn Keystream> = if decrypt { Some(&ks) } else { None };
        let n = payload.len() + slack;
        let (mut one, mut sep) = (vec![0x5a; n], vec![0x5a; n]);
        let a = integrated(&header, &payload, &mut one, ks);
        let b = separate(&header, &payload, &mut sep, ks);
        prop_assert_eq!(a, b);
        prop_assert_eq!(one, sep);
    }

    #[test]
    fn small_destinations_are_refused_alike(
        (payload, regions) in layout(),
        short in 0usize..300,
    ) {
        let mut stack = RegionStack::new();
        for (k, o, l) in &regions {
            stack.push(*k, *o, *l).unwrap();
        }
        let header = stack.finish(0);
        let n = short.min(payload.len());
        let (mut one, mut sep) = (vec![0; n], vec![0; n]);
        let a = integrated(&header, &payload, &mut one, None);
        let b = separate(&header, &payload, &mut sep, None);
        prop_assert_eq!(a, b);
        if let Err(e) = a {
            prop_assert!(matches!(e, IlpError::DestinationTooSmall | IlpError::DuplicateRegion(_)));
        }
        prop_assert_eq!(one, sep);
    }
}

/// A whole packet through the DML: built by layers, parsed at the receiver, processed in
/// one pass.
#[test]
fn received_packet_processed_from_its_dml_header() {
    let key = [0x42; 16];
    let nonce = [7; 8];
    let data: Vec<u8> = (0..100u8).collect();
    // Transport: 8-byte header, data encrypted.
    let mut ciphertext = data.clone();
    let ks = AesCtr::new(key, nonce);
    for (i, b) in ciphertext.iter_mut().enumerate() {
        *b ^= ks.block((i / 16) as u64)[i % 16];
    }
    let mut transport = vec![0u8; 8];
    transport.extend_from_slice(&ciphertext);
    let mut stack = RegionStack::new();
    stack.push(RegionKind::Checksum, 0, 108).unwrap();
    stack.push(RegionKind::Data, 8, 100).unwrap();
    stack.push(RegionKind::Encrypted, 8, 100).unwrap();
    stack.push(RegionKind::KeyId, 4, 4).unwrap();
    // Network layer: 20-byte header.
    stack.add_header(20).unwrap();
    let header = stack.finish(fastpath::dml::FLAG_INTERRUPT);
    let mut packet = vec![0u8; header.buffer_len()];
    header.emit(&mut packet).unwrap();
    packet.extend_from_slice(&[0x45; 20]);
    packet.extend_from_slice(&transport);

    let (parsed, payload) = DmlHeader::parse(&packet).unwrap();
    let key_id = parsed.find(RegionKind::KeyId).unwrap();
    assert_eq!(key_id.offset, 24);
    assert_eq!(&payload[key_id.range()], &transport[4..8]);
    let mut app = [0u8; 100];
    let out = integrated(&parsed, payload, &mut app, Some(&ks)).unwrap();
    assert_eq!(app.as_slice(), data.as_slice());
    assert_eq!(out.checksum, Some(fastpath::ilp::checksum(&transport)));
}
