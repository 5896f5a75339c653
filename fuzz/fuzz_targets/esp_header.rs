//! The ESP header parser on arbitrary bytes.
//!
//! Asserts: parsing never panics; a header that parses re-emits to the same bytes (bar the
//! reserved flag bits, which a `HeaderRepr` does not carry); the setters change only the
//! Loc, Err and RB bits and the operands, never the length, version, opcode or CID.
#![no_main]

use esp_proto::consts::HEADER_LEN;
use esp_proto::wire::{Header, HeaderRepr, Loc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = Header::new_checked(data) else {
        return;
    };
    let repr = HeaderRepr::parse(&view);
    assert_eq!(repr.buffer_len(), data.len());

    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut out).expect("a parsed header re-emits");
    out[HEADER_LEN..].copy_from_slice(view.operands());
    let mut expected = data.to_vec();
    expected[1] &= 0x80; // reserved flag bits are not part of the Repr
    assert_eq!(out, expected);

    let mut buf = data.to_vec();
    let mut h = Header::new_checked(&mut buf[..]).expect("same bytes parse again");
    let loc = Loc::from_bits(data.first().copied().unwrap_or(0).rotate_left(3));
    h.set_loc(loc);
    h.set_err(!repr.err);
    h.set_rb(!repr.rb);
    if let Some(b) = h.operands_mut().first_mut() {
        *b ^= 0xFF;
    }
    assert_eq!((h.loc(), h.err(), h.rb()), (loc, !repr.err, !repr.rb));
    assert_eq!(
        (h.opcode(), h.cid(), h.operands().len()),
        (repr.opcode, repr.cid, data.len() - HEADER_LEN)
    );
    assert_eq!(buf.len(), data.len());
    assert_eq!(buf[0] >> 4, data[0] >> 4, "version unchanged");
    assert_eq!(buf[1] & 0x7F, data[1] & 0x7F, "reserved bits unchanged");
});
