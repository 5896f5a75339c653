//! The operand field of inline microcode ([`OP_MICRO`](esp_proto::instr::OP_MICRO)): a
//! SNAP program's code and heap, then the instruction's operands.
//!
//! ```text
//!  0               1               2               3
//! +---------------+---------------+---------------+---------- … ----------+
//! |  code words c |  heap words h |  entry point  |  code: c 32-bit words  |
//! +---------------+---------------+---------------+---------- … ----------+
//! |  heap: h 32-bit words … | operands: n 64-bit words (n ≤ 8) …          |
//! +------------------------ … -------------------------------------------- +
//! ```
//!
//! Words are big-endian, code and heap exactly as in a SNAP packet body
//! ([`snap_vm::wire`]); the operands are ESP's 64-bit tags and values, as the built-ins'
//! are, and the bytes left after the heap must be a whole number of them. ESP's operand
//! length is one byte, so the whole field is at most 255 bytes: room for a program of
//! about 50 words beside 2 operands (`count.snap` takes 87 bytes with its operands). A
//! longer program is installed at the router under an opcode in
//! [`INSTALLED`](esp_proto::instr::INSTALLED) instead, and packets carry only its operands.

use alloc::vec::Vec;
use core::fmt;

use snap_vm::program::Program;
use snap_vm::value::Word;

use crate::MAX_OPERANDS;

/// Bytes before the code: the code and heap lengths and the entry point.
pub const PREFIX_LEN: usize = 3;
/// Most bytes an operand field holds (ESP's one-byte operand length).
pub const MAX_BODY_LEN: usize = 255;

/// Why an inline microcode field cannot be read or built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// Shorter than its prefix says: `needed` bytes for the prefix, code and heap, `actual`
    /// present.
    Truncated {
        /// Bytes the prefix, code and heap take.
        needed: usize,
        /// Bytes present.
        actual: usize,
    },
    /// The bytes after the heap are not a whole number of 64-bit operands.
    Operands {
        /// The bytes left.
        bytes: usize,
    },
    /// More than [`MAX_OPERANDS`] operands.
    TooManyOperands {
        /// How many.
        operands: usize,
    },
    /// The field would pass [`MAX_BODY_LEN`] bytes (or a section 255 words).
    TooLarge {
        /// Bytes it would take.
        bytes: usize,
    },
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Truncated { needed, actual } => write!(
                f,
                "microcode field of {actual} bytes is shorter than its code and heap ({needed})"
            ),
            BodyError::Operands { bytes } => write!(
                f,
                "{bytes} bytes after the heap are not a whole number of 64-bit operands"
            ),
            BodyError::TooManyOperands { operands } => {
                write!(f, "{operands} operands; at most {MAX_OPERANDS}")
            }
            BodyError::TooLarge { bytes } => write!(
                f,
                "microcode field of {bytes} bytes passes ESP's {MAX_BODY_LEN}-byte operand field; \
                 install the program under an opcode 64-127 instead"
            ),
        }
    }
}

impl core::error::Error for BodyError {}

/// An inline microcode field, read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Body<'a> {
    /// The program's bytes: prefix, code and heap (the cache key of its verification).
    pub program: &'a [u8],
    /// The operands' bytes (8 per operand).
    pub operands: &'a [u8],
}

impl<'a> Body<'a> {
    /// Reads `field`.
    ///
    /// # Errors
    ///
    /// [`BodyError`] if its lengths do not add up.
    pub fn parse(field: &'a [u8]) -> Result<Body<'a>, BodyError> {
        let (c, h) = match field {
            [c, h, _, ..] => (usize::from(*c), usize::from(*h)),
            _ => {
                return Err(BodyError::Truncated {
                    needed: PREFIX_LEN,
                    actual: field.len(),
                });
            }
        };
        let needed = PREFIX_LEN + 4 * (c + h);
        if field.len() < needed {
            return Err(BodyError::Truncated {
                needed,
                actual: field.len(),
            });
        }
        let (program, operands) = field.split_at(needed);
        if !operands.len().is_multiple_of(8) {
            return Err(BodyError::Operands {
                bytes: operands.len(),
            });
        }
        if operands.len() / 8 > MAX_OPERANDS {
            return Err(BodyError::TooManyOperands {
                operands: operands.len() / 8,
            });
        }
        Ok(Body { program, operands })
    }

    /// Where the operands start in the field.
    pub fn operands_at(&self) -> usize {
        self.program.len()
    }

    /// The program as a [`Program`] (no addresses, empty stack), for verification.
    pub fn to_program(&self) -> Program {
        let (c, entry) = match self.program {
            [c, _, e, ..] => (usize::from(*c), u16::from(*e)),
            _ => (0, 0),
        };
        let words = self.program.get(PREFIX_LEN..).unwrap_or_default();
        let mut words = words
            .chunks_exact(4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
        let code = words.by_ref().take(c).map(Word).collect();
        Program {
            entry,
            code,
            heap: words.collect(),
            ..Program::default()
        }
    }

    /// The operands as 64-bit words.
    pub fn operand_words(&self) -> impl Iterator<Item = u64> + 'a {
        self.operands
            .chunks_exact(8)
            .map(|w| u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
    }
}

/// The inline microcode field carrying `program` (its code, heap and entry point) and
/// `operands`: what a sender puts after an ESP header with opcode
/// [`OP_MICRO`](esp_proto::instr::OP_MICRO).
///
/// ```
/// use esp_micro::body::{Body, encode};
/// let program = snap_vm::asm::assemble("pull 1\ncalls \"ess.count\"\npop\npush 0")?;
/// let field = encode(&program, &[7, 2])?;
/// let body = Body::parse(&field)?;
/// assert_eq!(body.to_program().code, program.code);
/// assert_eq!(body.operand_words().collect::<Vec<_>>(), [7, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`BodyError::TooLarge`] past [`MAX_BODY_LEN`] bytes (or an entry point past 255),
/// [`BodyError::TooManyOperands`] past [`MAX_OPERANDS`].
pub fn encode(program: &Program, operands: &[u64]) -> Result<Vec<u8>, BodyError> {
    if operands.len() > MAX_OPERANDS {
        return Err(BodyError::TooManyOperands {
            operands: operands.len(),
        });
    }
    let bytes = PREFIX_LEN + 4 * (program.code.len() + program.heap.len()) + 8 * operands.len();
    let (Ok(c), Ok(h), Ok(e)) = (
        u8::try_from(program.code.len()),
        u8::try_from(program.heap.len()),
        u8::try_from(program.entry),
    ) else {
        return Err(BodyError::TooLarge { bytes });
    };
    if bytes > MAX_BODY_LEN {
        return Err(BodyError::TooLarge { bytes });
    }
    let mut out = Vec::with_capacity(bytes);
    out.extend_from_slice(&[c, h, e]);
    for w in &program.code {
        out.extend_from_slice(&w.0.to_be_bytes());
    }
    for w in &program.heap {
        out.extend_from_slice(&w.to_be_bytes());
    }
    for o in operands {
        out.extend_from_slice(&o.to_be_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_that_do_not_add_up_are_refused() {
        assert!(matches!(
            Body::parse(&[1, 0]),
            Err(BodyError::Truncated { needed: 3, .. })
        ));
        assert!(matches!(
            Body::parse(&[1, 1, 0, 0, 0, 0, 0]),
            Err(BodyError::Truncated { needed: 11, .. })
        ));
        let mut f = [0u8; 3 + 4 + 7];
        f[0] = 1;
        assert_eq!(Body::parse(&f), Err(BodyError::Operands { bytes: 7 }));
        let mut f = [0u8; 3 + 72];
        f[0] = 0;
        assert_eq!(
            Body::parse(&f),
            Err(BodyError::TooManyOperands { operands: 9 })
        );
    }

    #[test]
    fn shipped_count_fits_inline_and_round_trips() {
        let program = snap_vm::asm::assemble(crate::shipped::COUNT).unwrap();
        let field = encode(&program, &[7, u64::MAX]).unwrap();
        assert!(field.len() <= MAX_BODY_LEN, "{}", field.len());
        let body = Body::parse(&field).unwrap();
        let back = body.to_program();
        assert_eq!((back.code, back.heap), (program.code, program.heap));
        assert_eq!(body.operand_words().collect::<Vec<_>>(), [7, u64::MAX]);
        assert_eq!(body.operands_at(), field.len() - 16);
    }

    #[test]
    fn a_program_too_long_for_the_field_is_refused() {
        let long = "push 1\npop\n".repeat(70);
        let program = snap_vm::asm::assemble(&long).unwrap();
        assert!(matches!(
            encode(&program, &[]),
            Err(BodyError::TooLarge { .. })
        ));
    }
}
