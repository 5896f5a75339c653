//! Arbitrary bytes into the control-message parser of `stream-handlers`.
//!
//! Asserts, for any input: parsing never panics; whatever parses emits to as many bytes as
//! it was parsed from (the encoding has one length per opcode) and parses back equal; and,
//! except for messages carrying a predicate (`SetPredicate`, `SetDestPredicate`: a
//! predicate's unused operands — an `All`'s field and value, a non-range's upper bound —
//! are not part of the message), the emitted bytes are the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stream_handlers::control::ControlMessage;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = ControlMessage::parse(data) else {
        return;
    };
    let mut out = Vec::new();
    m.emit(&mut out);
    assert_eq!(out.len(), data.len());
    assert_eq!(ControlMessage::parse(&out), Ok(m));
    if !matches!(
        m,
        ControlMessage::SetPredicate { .. } | ControlMessage::SetDestPredicate { .. }
    ) {
        assert_eq!(out, data);
    }
});
