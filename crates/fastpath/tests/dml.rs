//! DML header properties: parse never panics and never returns a region outside the
//! packet; emit then parse gives the header back; accumulated offsets through a layered
//! stack point at the same bytes as the layers' own offsets.
#![allow(clippy::unwrap_used)] // tests

use fastpath::dml::{DmlHeader, MAX_REGIONS, RegionKind, RegionStack};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = RegionKind> {
    prop_oneof![
        Just(RegionKind::Checksum),
        Just(RegionKind::Encrypted),
        Just(RegionKind::KeyId),
        Just(RegionKind::Data),
        Just(RegionKind::MemoryDest),
        Just(RegionKind::Handler),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn parse_is_total_and_regions_fit(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok((h, payload)) = DmlHeader::parse(&bytes) {
            prop_assert_eq!(h.buffer_len() + payload.len(), bytes.len());
            for r in h.regions() {
                prop_assert!(r.fits(payload.len()));
            }
            let mut out = vec![0u8; h.buffer_len()];
            h.emit(&mut out).unwrap();
            prop_assert_eq!(&out[..], &bytes[..h.buffer_len()]);
        }
    }

    #[test]
    fn emit_then_parse_round_trips(
        regions in proptest::collection::vec((kind(), 0u16..100, 0u16..100), 0..=MAX_REGIONS),
        interrupt in any::<bool>(),
    ) {
        let mut stack = RegionStack::new();
        for (k, o, l) in &regions {
            stack.push(*k, *o, *l).unwrap();
        }
        let h = stack.finish(u16::from(interrupt));
        let mut packet = vec![0u8; h.buffer_len() + 200];
        h.emit(&mut packet).unwrap();
        let (parsed, payload) = DmlHeader::parse(&packet).unwrap();
        prop_assert_eq!(parsed, h);
        prop_assert_eq!(payload.len(), 200);
    }

    /// Layers of random header lengths each mark a random field of their own header; after
    /// the stack is passed down, every region points at the bytes its layer meant.
    #[test]
    fn accumulated_offsets_find_each_layers_bytes(
        layers in proptest::collection::vec((1u16..40, any::<prop::sample::Index>(), kind()), 1..6),
    ) {
        // Layer 0 is the top (transport); its header is written last-in-front.
        let mut stack = RegionStack::new();
        let mut marks = Vec::new();
        for (i, (len, at, k)) in layers.iter().enumerate() {
            stack.add_header(*len).unwrap();
            let off = at.index(usize::from(*len)) as u16;
            stack.push(*k, off, 1).unwrap();
            marks.push((i, off));
        }
        // Build the packet: lowest layer first. Each layer's header bytes are its number,
        // except the marked byte, which is 0x80 | number.
        let mut payload = Vec::new();
        for (i, (len, _, _)) in layers.iter().enumerate().rev() {
            let mut h = vec![i as u8; usize::from(*len)];
            h[usize::from(marks[i].1)] = 0x80 | i as u8;
            payload.extend_from_slice(&h);
        }
        let h = stack.finish(0);
        let mut packet = vec![0u8; h.buffer_len()];
        h.emit(&mut packet).unwrap();
        packet.extend_from_slice(&payload);
        let (parsed, payload) = DmlHeader::parse(&packet).unwrap();
        for (i, r) in parsed.regions().iter().enumerate() {
            prop_assert_eq!(payload[r.range()].to_vec(), vec![0x80 | i as u8]);
        }
    }
}
