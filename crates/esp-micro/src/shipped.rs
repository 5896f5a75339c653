//! The paper's instructions as microcode, shipped with the crate (its `microcode/`
//! directory; `examples/esp-microcode/` in the repository): SNAP assembly for
//! [`Microcode::assemble`](crate::Microcode::assemble), each proven equal to the built-in
//! instruction by a differential property test (verdicts, aborts, operands and the store
//! left behind).
//!
//! ```
//! use esp_micro::{Microcode, shipped};
//! let count = Microcode::assemble(shipped::COUNT)?;
//! assert_eq!(count.bounds().instructions, 10);
//! # Ok::<(), esp_micro::Error>(())
//! ```

/// COUNT (ESP Fig. 3), operands `[counter, thresh]`: the counter incremented (nil = 0,
/// saturating), forwarded while it is at most `thresh`. Fits inline (87 bytes with its
/// operands).
pub const COUNT: &str = include_str!("../microcode/count.snap");

/// COMPARE (Fig. 3), operands `[value, current, op]`, `op` an index in
/// [`CompareOp::ALL`](esp_proto::instr::CompareOp::ALL). Installed only (too long inline).
pub const COMPARE: &str = include_str!("../microcode/compare.snap");

/// COLLECT (Fig. 6), operands `[value, val, counter, op]`, `op` an index in
/// [`CombineOp::ALL`](esp_proto::instr::CombineOp::ALL); `val` replaced by the folded value
/// when the count reaches 0. Installed only (too long inline).
pub const COLLECT: &str = include_str!("../microcode/collect.snap");

/// MARK (Fig. 1), operands `[tag]`: the node id (`esp.param` 0) bound to the tag.
pub const MARK: &str = include_str!("../microcode/mark.snap");

/// LASTMARK (Fig. 1), operands `[tag, node]`: `node` ← the node id if the tag is bound.
pub const LASTMARK: &str = include_str!("../microcode/lastmark.snap");

/// COUNT written in PLAN (`snap_vm::plan::compile_micro`, entry `count`); its operands
/// come back unchanged.
pub const COUNT_PLAN: &str = include_str!("../microcode/count.plan");
