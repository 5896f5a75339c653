//! The DML header parser and integrated layer processing on arbitrary bytes.
//!
//! Asserts: parsing never panics; every parsed region lies within the packet; a parsed
//! header re-emits to the same bytes; one-pass ILP equals the separate passes (copy, then
//! checksum, then decrypt), in its result and in every byte of the destination.
#![no_main]

use fastpath::dml::DmlHeader;
use fastpath::ilp::{AesCtr, Keystream, integrated, separate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First byte: decrypt or not, and how much destination slack (or shortfall) to give.
    let Some((&knob, packet)) = data.split_first() else {
        return;
    };
    let Ok((header, payload)) = DmlHeader::parse(packet) else {
        return;
    };
    assert_eq!(header.buffer_len() + payload.len(), packet.len());
    for r in header.regions() {
        assert!(r.fits(payload.len()));
    }
    let mut out = vec![0u8; header.buffer_len()];
    header.emit(&mut out).expect("a parsed header re-emits");
    assert_eq!(out, packet[..header.buffer_len()]);

    let ks = AesCtr::new([knob; 16], [knob ^ 0x5a; 8]);
    let ks: Option<&dyn Keystream> = if knob & 1 == 1 { Some(&ks) } else { None };
    let len =
        (payload.len() + usize::from(knob >> 5)).saturating_sub(usize::from((knob >> 1) & 0xf));
    let (mut one, mut sep) = (vec![0xa5; len], vec![0xa5; len]);
    let a = integrated(&header, payload, &mut one, ks);
    let b = separate(&header, payload, &mut sep, ks);
    assert_eq!(a, b);
    assert_eq!(one, sep);
});
