//! Source hashing paper Table 5: instructions to reach a packet's forwarding information —
//! compute the index, check the flow id, read the entry — for source hashing, XOR
//! folding, CRC, keyed hash maps, and threaded indices; counted with callgrind as in
//! [`crate::fastpath_table4`].
//!
//! The paper: XOR hash index 33, source hash index 20, threaded indices 8 (gcc 2.6.3 on
//! SPARC, single-stepped with `adb`). Ours, on x86-64 (see
//! `crates/fastpath/examples/sh_lookup.rs`): source hash, XOR folding and CRC-32 index the
//! same `FlowCache` of 2^16 slots and compare the 12-byte flow id; SipHash and FxHash are
//! `hashbrown` maps keyed by the flow id (the keyed-hash baseline a Rust router would
//! reach for); `threaded` is `fastpath::threaded::ThreadedTable::forward_packet` (label
//! kind bit, hop limit, bounds and empty-entry checks, label rewritten), and
//! `threaded, bare` the paper's step alone (index → (port, next index), index rewritten).

use std::io::Write;

use crate::common::Options;
use crate::fastpath_table4::{self, Row, measure};

/// The cases of Table 5: (scheme, case, paper's count).
pub const CASES: [(&str, &str, Option<u32>); 7] = [
    (
        "source hash + flow id check",
        "lookup_source_hash",
        Some(20),
    ),
    ("XOR folding + flow id check", "lookup_xor_fold", Some(33)),
    ("CRC-32 + flow id check", "lookup_crc", None),
    ("hashbrown, SipHash-1-3 (std)", "lookup_siphash", None),
    ("hashbrown, FxHash", "lookup_fxhash", None),
    ("threaded index (ThreadedTable)", "lookup_threaded", Some(8)),
    (
        "threaded index, bare step",
        "lookup_threaded_plain",
        Some(8),
    ),
];

/// Runs Table 5 and prints the goal ratio (source hash ≤ 0.5 × the keyed-hash lookup).
///
/// # Errors
///
/// As [`measure`].
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Option<Vec<Row>>> {
    let rows = measure(
        "fastpath-table5: instructions to reach the forwarding information \
         (source hashing paper, Table 5)",
        &CASES,
        opts,
        "fastpath-table5.csv",
        out,
    )?;
    if let Some(rows) = &rows {
        let get = |c: &str| fastpath_table4::ours(rows, c);
        let sh = get("lookup_source_hash");
        writeln!(
            out,
            "source hash / XOR: {:.2} (paper {:.2}); source hash / SipHash map: {:.3} \
             (goal ≤ 0.5); source hash / FxHash map: {:.2}; threaded bare / source hash: \
             {:.2} (paper {:.2})",
            sh / get("lookup_xor_fold"),
            20.0 / 33.0,
            sh / get("lookup_siphash"),
            sh / get("lookup_fxhash"),
            get("lookup_threaded_plain") / sh,
            8.0 / 20.0,
        )?;
    }
    Ok(rows)
}
