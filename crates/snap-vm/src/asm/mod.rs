//! The assembler and disassembler: SNAP programs as text, in the notation of the paper's
//! Figs. 1 and 2, plus directives for the header, heap and stack so a whole packet fits in
//! one file.
//!
//! ```text
//!  text ──assemble──► Program ──to_bytes──► packet
//!   ▲                    │
//!   └───disassemble──────┘      assemble(&disassemble(&p)) == Ok(p)
//! ```
//!
//! # Syntax
//!
//! One instruction per line: a mnemonic ([`Op::from_name`](crate::op::Op::from_name), so `beq` is `bez`) and an
//! optional immediate (0 if absent). `;` starts a comment (outside string literals).
//! `name:` defines a label at the next instruction; it may stand on its own line or before
//! an instruction, and a label after the last instruction names the end of the code (a
//! branch there exits).
//!
//! Immediates are expressions: integers (decimal or `0x` hex, `-` allowed), labels, and `.`
//! (this instruction's index) joined by `+` and `-`. **A label stands for its instruction
//! index**, except that the immediate of `ji`, `bez`/`beq` and `bne` written as a bare label
//! is the forward offset `label − .` (an error unless the label lies strictly ahead).
//!
//! * `push r` pushes `r`'s index. Fig. 2 pushes `r` and `defaultRoute` this way: the child's
//!   entry point is an index, and `paj -1` at index 1 jumps by `s[0] − 1`, landing on
//!   `1 + s[0] − 1 = s[0]`, i.e. on `r` itself. In general `paj -.` (or `paj 0 - .`) turns a
//!   pushed label into an absolute jump, and `push r - . - 1` pushes a relative one.
//! * `pushh @name` and `calls @name` take a heap object's offset; `calls "ess.get"` (or
//!   `pushh "text"`) uses the first byte-array object holding exactly those bytes, appending
//!   one after the declared objects if there is none.
//! * `istag` also takes a tag name: `istag addr`.
//!
//! Directives (all optional; header fields default to 0):
//!
//! | directive | meaning |
//! |---|---|
//! | `.src 10.0.0.1`, `.dst 10.0.0.2` | header addresses (IPv4, or both IPv6: `.src fd00::1`) |
//! | `.port 7`, `.rb 8` | header demux port and resource bound |
//! | `.entry label` | entry point (an expression; default 0) |
//! | `.bytes name "text"` / `.bytes name 0x68690a` | a byte array on the heap |
//! | `.addr name 10.0.0.9` | a boxed address (IPv4 or IPv6: `.addr name fd00::9`) |
//! | `.float name 1.5`, `.wide name -7` | a boxed `f32`, a boxed 64-bit integer |
//! | `.tuple name (v, v, …)` | a tuple of values |
//! | `.word 0x0a000004 …` | raw heap words (what the disassembler prints for words it cannot read as objects) |
//! | `.stack v v …` | stack values, **bottom first**; repeatable, each appends |
//! | `.inst 0x…` | a raw instruction word (for unknown opcodes) |
//!
//! Heap objects are laid out in the order written. A *value* (in `.stack` and `.tuple`) is
//! an expression (a small integer; a label gives its index), `@name` (a pointer to the heap
//! object `name`, tagged as it), or `word:0x…` (a raw word). `.stack` items are separated by
//! spaces or commas, so expressions there are written without spaces (`r-1`).
//! String literals take the escapes `\"`, `\\`, `\n`, `\t`, `\0` and `\xNN`.
//!
//! # Example: Fig. 1, the whole packet
//!
//! ```
//! use snap_vm::asm::{assemble, disassemble};
//!
//! let ping = assemble(
//!     r#"
//!     .src 10.0.0.1
//!     .dst 10.0.0.2
//!     .rb 8
//!     .bytes payload "hello"
//!     .stack @payload 7 0         ; [0 :: port :: payload], 0 on top
//!         forw                    ; move on if not at dest
//!         bne deliver             ; (bne 5) on the way back: deliver
//!         push 1                  ; 1 means "on return trip"
//!         getsrc
//!         forwto                  ; send return packet
//!         pop                     ; pop the 1 for local ping
//!     deliver:
//!         demux                   ; deliver payload
//!     "#,
//! )?;
//! assert_eq!(ping.code[1].imm(), 5);
//! assert_eq!(assemble(&disassemble(&ping))?, ping);
//! # Ok::<(), snap_vm::asm::AsmError>(())
//! ```

mod disasm;
mod lex;
mod parse;

use alloc::string::String;
use core::fmt;

pub(crate) use disasm::bytes_literal;
pub use disasm::{disassemble, instruction, summary};

use crate::program::Program;

/// Why text does not assemble: the line (1-based) and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    /// The offending line, counting from 1.
    pub line: usize,
    /// What is wrong.
    pub kind: AsmErrorKind,
}

/// What is wrong with a line of assembly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsmErrorKind {
    /// No instruction has this mnemonic.
    UnknownMnemonic(String),
    /// No such directive.
    UnknownDirective(String),
    /// A label used but never defined.
    UnknownLabel(String),
    /// `@name` names no heap object.
    UnknownObject(String),
    /// A label defined twice.
    DuplicateLabel(String),
    /// A heap object name used twice.
    DuplicateObject(String),
    /// A branch to a label that is not strictly ahead of it.
    NotForward {
        /// The label.
        label: String,
        /// The offset it would need.
        offset: i64,
    },
    /// A number that does not parse.
    BadNumber(String),
    /// A value outside what its field holds.
    OutOfRange {
        /// The value.
        value: i64,
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// An IP address that does not parse.
    BadAddress(String),
    /// `.src` and `.dst` of different address families.
    MixedFamilies,
    /// A string or hex byte literal that does not parse.
    BadString(String),
    /// An immediate or value that does not parse.
    BadExpression(String),
    /// Something required is missing.
    Expected(&'static str),
    /// Text left over after a complete line.
    Unexpected(String),
    /// A section passes the packet format's 65535 words.
    TooLarge(&'static str),
}

impl fmt::Display for AsmErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AsmErrorKind::UnknownMnemonic(m) => write!(f, "unknown mnemonic \"{m}\""),
            AsmErrorKind::UnknownDirective(d) => write!(f, "unknown directive \".{d}\""),
            AsmErrorKind::UnknownLabel(l) => write!(f, "unknown label \"{l}\""),
            AsmErrorKind::UnknownObject(n) => write!(f, "no heap object named \"{n}\""),
            AsmErrorKind::DuplicateLabel(l) => write!(f, "label \"{l}\" defined twice"),
            AsmErrorKind::DuplicateObject(n) => write!(f, "heap object \"{n}\" defined twice"),
            AsmErrorKind::NotForward { label, offset } => write!(
                f,
                "branch to label \"{label}\" does not go forward (offset {offset}); branches only go forward"
            ),
            AsmErrorKind::BadNumber(s) => write!(f, "bad number \"{s}\""),
            AsmErrorKind::OutOfRange { value, min, max } => {
                write!(f, "{value} is outside {min}..={max}")
            }
            AsmErrorKind::BadAddress(s) => write!(f, "bad IP address \"{s}\""),
            AsmErrorKind::MixedFamilies => {
                f.write_str(".src and .dst of different address families")
            }
            AsmErrorKind::BadString(s) => write!(f, "bad string or byte literal {s}"),
            AsmErrorKind::BadExpression(s) => write!(f, "bad immediate or value \"{s}\""),
            AsmErrorKind::Expected(what) => write!(f, "expected {what}"),
            AsmErrorKind::Unexpected(s) => write!(f, "unexpected \"{s}\""),
            AsmErrorKind::TooLarge(section) => write!(f, "the {section} passes 65535 words"),
        }
    }
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.kind)
    }
}

impl core::error::Error for AsmError {}

/// Assembles `text` into a program.
///
/// # Errors
///
/// [`AsmError`] for the first line that does not assemble (a label used before its
/// definition is resolved at the end, so an unknown label is reported at its use).
pub fn assemble(text: &str) -> Result<Program, AsmError> {
    let mut asm = parse::Asm::default();
    for (i, line) in text.lines().enumerate() {
        asm.line(i + 1, line)?;
    }
    asm.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;
    use crate::value::{Tag, Value, Word};
    use alloc::string::ToString;
    use alloc::vec;

    fn w(op: Op, imm: i32) -> Word {
        Word::new(op as u8, imm)
    }

    #[test]
    fn fig1_with_a_numeric_offset_and_a_label_agree() {
        let a = assemble("forw\nbne 5\npush 1\ngetsrc\nforwto\npop\ndemux\n").unwrap();
        let b = assemble("forw\nbne d\npush 1\ngetsrc\nforwto\npop\nd: demux").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.code[1], w(Op::Bne, 5));
        assert_eq!(a.code[1].0, 0x0A00_0005);
    }

    #[test]
    fn labels_in_push_are_indices_and_dot_is_here() {
        let p = assemble("a: nop\nb: push b\npush a - . + 7\npaj -.\nend:").unwrap();
        assert_eq!(
            p.code,
            vec![
                w(Op::Nop, 0),
                w(Op::Push, 1),
                w(Op::Push, 5),
                w(Op::Paj, -3)
            ]
        );
    }

    #[test]
    fn data_directives_lay_out_the_heap_in_order() {
        let p = assemble(
            ".bytes s \"hi\"\n.addr a 10.0.0.9\n.tuple t (@a, 3, word:0x5)\n.stack @t 1\npushh @a\ncalls \"hi\"\ncalls \"x\"",
        )
        .unwrap();
        assert_eq!(
            p.heap,
            vec![
                0x0A00_0002,
                0x6869_0000,
                0x0200_0001,
                0x0A00_0009,
                0x0800_0003,
                0x0200_0002,
                3,
                5,
                0x0A00_0001,
                0x7800_0000
            ]
        );
        assert_eq!(p.stack, vec![Value::boxed(Tag::Tuple, 4), Value::int(1)]);
        assert_eq!(
            p.code,
            vec![w(Op::Pushh, 2), w(Op::Calls, 0), w(Op::Calls, 8)]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = assemble("nop\n\n  frob 3").unwrap_err();
        assert_eq!(e.to_string(), "line 3: unknown mnemonic \"frob\"");
        let e = assemble("top: nop\nji top").unwrap_err();
        assert_eq!(
            e,
            AsmError {
                line: 2,
                kind: AsmErrorKind::NotForward {
                    label: "top".into(),
                    offset: -1
                }
            }
        );
    }
}
