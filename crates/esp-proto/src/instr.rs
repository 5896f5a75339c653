//! Instructions: opcodes and operand encodings (paper §2.4, §3).
//!
//! Every operand is fixed-size and big-endian; an instruction's operand field has exactly
//! [`Instruction::operand_len`] bytes. This module holds the paper's first three
//! instructions; the others join it as the protocol grows.

use core::fmt;

use ess::{Tag, Value};

/// Opcode of COUNT.
pub const OP_COUNT: u8 = 1;
/// Opcode of COMPARE.
pub const OP_COMPARE: u8 = 2;
/// Opcode of COLLECT.
pub const OP_COLLECT: u8 = 3;

/// COMPARE's relation between the stored value α and the packet's value (Fig. 3:
/// `α <op> p.current`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// α < current (keeps the maximum: the packet passes only with a new maximum).
    Lt,
    /// α ≤ current.
    Le,
    /// α > current (keeps the minimum).
    Gt,
    /// α ≥ current.
    Ge,
    /// α = current.
    Eq,
    /// α ≠ current.
    Ne,
}

impl CompareOp {
    /// Whether `stored <op> current` holds.
    pub const fn holds(self, stored: u64, current: u64) -> bool {
        match self {
            CompareOp::Lt => stored < current,
            CompareOp::Le => stored <= current,
            CompareOp::Gt => stored > current,
            CompareOp::Ge => stored >= current,
            CompareOp::Eq => stored == current,
            CompareOp::Ne => stored != current,
        }
    }
}

impl TryFrom<u8> for CompareOp {
    type Error = InstrError;
    fn try_from(b: u8) -> Result<Self, InstrError> {
        Ok(match b {
            0 => CompareOp::Lt,
            1 => CompareOp::Le,
            2 => CompareOp::Gt,
            3 => CompareOp::Ge,
            4 => CompareOp::Eq,
            5 => CompareOp::Ne,
            _ => return Err(InstrError::Operator { byte: b }),
        })
    }
}

impl From<CompareOp> for u8 {
    fn from(op: CompareOp) -> u8 {
        match op {
            CompareOp::Lt => 0,
            CompareOp::Le => 1,
            CompareOp::Gt => 2,
            CompareOp::Ge => 3,
            CompareOp::Eq => 4,
            CompareOp::Ne => 5,
        }
    }
}

/// COLLECT's associative, commutative operator ∘ (§3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CombineOp {
    /// Wrapping addition.
    Add,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
}

impl CombineOp {
    /// `a ∘ b`.
    pub const fn apply(self, a: u64, b: u64) -> u64 {
        match self {
            CombineOp::Add => a.wrapping_add(b),
            CombineOp::Min => {
                if a < b {
                    a
                } else {
                    b
                }
            }
            CombineOp::Max => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            CombineOp::And => a & b,
            CombineOp::Or => a | b,
            CombineOp::Xor => a ^ b,
        }
    }
}

impl TryFrom<u8> for CombineOp {
    type Error = InstrError;
    fn try_from(b: u8) -> Result<Self, InstrError> {
        Ok(match b {
            0 => CombineOp::Add,
            1 => CombineOp::Min,
            2 => CombineOp::Max,
            3 => CombineOp::And,
            4 => CombineOp::Or,
            5 => CombineOp::Xor,
            _ => return Err(InstrError::Operator { byte: b }),
        })
    }
}

impl From<CombineOp> for u8 {
    fn from(op: CombineOp) -> u8 {
        match op {
            CombineOp::Add => 0,
            CombineOp::Min => 1,
            CombineOp::Max => 2,
            CombineOp::And => 3,
            CombineOp::Or => 4,
            CombineOp::Xor => 5,
        }
    }
}

/// One ESP instruction with its operands.
///
/// ```
/// use esp_proto::instr::{CompareOp, Instruction};
/// use ess::{Tag, Value};
/// let i = Instruction::Compare { value: Tag(0xF00D), current: Value(42), op: CompareOp::Lt };
/// let mut buf = [0u8; 17];
/// i.emit(&mut buf)?;
/// assert_eq!(Instruction::parse(i.opcode(), &buf)?, i);
/// # Ok::<(), esp_proto::instr::InstrError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// COUNT (Fig. 3): count packets under tag `counter`; pass while the count ≤ `thresh`.
    Count {
        /// Tag C of the counter.
        counter: Tag,
        /// Forwarding threshold.
        thresh: u64,
    },
    /// COMPARE (Fig. 3): pass, and store `current`, when there is no stored value or
    /// `stored <op> current`.
    Compare {
        /// Tag V of the stored value.
        value: Tag,
        /// The packet's value.
        current: Value,
        /// The relation.
        op: CompareOp,
    },
    /// COLLECT (Fig. 6): fold `val` into the value under `value`, count down the children
    /// under `counter`, and pass the result on when the last child has reported.
    Collect {
        /// Tag V of the running result.
        value: Tag,
        /// The packet's value (replaced by the result when forwarded).
        val: Value,
        /// Tag C of the child count set up by COUNT.
        counter: Tag,
        /// The operator ∘.
        op: CombineOp,
    },
}

/// Why an operand field is not a valid instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstrError {
    /// No instruction has this opcode.
    Opcode {
        /// The opcode.
        opcode: u8,
    },
    /// The operand field has the wrong length for the opcode.
    Length {
        /// The opcode.
        opcode: u8,
        /// Bytes the opcode needs.
        expected: usize,
        /// Bytes present.
        actual: usize,
    },
    /// An operator byte names no operator.
    Operator {
        /// The byte.
        byte: u8,
    },
}

impl fmt::Display for InstrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstrError::Opcode { opcode } => write!(f, "unknown ESP opcode {opcode}"),
            InstrError::Length {
                opcode,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "ESP opcode {opcode} takes {expected} operand bytes, got {actual}"
                )
            }
            InstrError::Operator { byte } => write!(f, "unknown ESP operator {byte}"),
        }
    }
}

impl core::error::Error for InstrError {}

/// Reads fixed-size big-endian operands from an exactly-sized field.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u64(&mut self) -> u64 {
        let (head, rest) = self.0.split_at(8.min(self.0.len()));
        self.0 = rest;
        let mut b = [0u8; 8];
        b[..head.len()].copy_from_slice(head);
        u64::from_be_bytes(b)
    }

    fn u8(&mut self) -> u8 {
        let (head, rest) = self.0.split_at(1.min(self.0.len()));
        self.0 = rest;
        head.first().copied().unwrap_or(0)
    }
}

/// Writes fixed-size big-endian operands into an exactly-sized field.
struct Writer<'a>(&'a mut [u8]);

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let buf = core::mem::take(&mut self.0);
        let (head, rest) = buf.split_at_mut(bytes.len().min(buf.len()));
        head.copy_from_slice(&bytes[..head.len()]);
        self.0 = rest;
    }
}

impl Instruction {
    /// The opcode.
    pub const fn opcode(&self) -> u8 {
        match self {
            Instruction::Count { .. } => OP_COUNT,
            Instruction::Compare { .. } => OP_COMPARE,
            Instruction::Collect { .. } => OP_COLLECT,
        }
    }

    /// Operand bytes of `opcode`, if it is known.
    pub const fn operand_len_of(opcode: u8) -> Option<usize> {
        match opcode {
            OP_COUNT => Some(16),
            OP_COMPARE => Some(17),
            OP_COLLECT => Some(25),
            _ => None,
        }
    }

    /// Operand bytes of this instruction.
    pub const fn operand_len(&self) -> usize {
        match Self::operand_len_of(self.opcode()) {
            Some(n) => n,
            None => 0,
        }
    }

    /// Whether it fits a piggybacked IPv4 option (see
    /// [`MAX_IPV4_OPTION_OPERANDS`](crate::consts::MAX_IPV4_OPTION_OPERANDS)).
    pub const fn fits_ipv4_option(&self) -> bool {
        self.operand_len() <= crate::consts::MAX_IPV4_OPTION_OPERANDS
    }

    /// Decodes the operand field of an instruction with `opcode`.
    ///
    /// # Errors
    ///
    /// [`InstrError`] for an unknown opcode, a wrong length or an unknown operator.
    pub fn parse(opcode: u8, operands: &[u8]) -> Result<Instruction, InstrError> {
        let expected = Self::operand_len_of(opcode).ok_or(InstrError::Opcode { opcode })?;
        if operands.len() != expected {
            return Err(InstrError::Length {
                opcode,
                expected,
                actual: operands.len(),
            });
        }
        let mut r = Reader(operands);
        Ok(match opcode {
            OP_COUNT => Instruction::Count {
                counter: Tag(r.u64()),
                thresh: r.u64(),
            },
            OP_COMPARE => Instruction::Compare {
                value: Tag(r.u64()),
                current: Value(r.u64()),
                op: r.u8().try_into()?,
            },
            _ => Instruction::Collect {
                value: Tag(r.u64()),
                val: Value(r.u64()),
                counter: Tag(r.u64()),
                op: r.u8().try_into()?,
            },
        })
    }

    /// Encodes the operands into `out`, which must be exactly
    /// [`operand_len`](Self::operand_len) bytes.
    ///
    /// # Errors
    ///
    /// [`InstrError::Length`] if `out` has the wrong length.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), InstrError> {
        let expected = self.operand_len();
        if out.len() != expected {
            return Err(InstrError::Length {
                opcode: self.opcode(),
                expected,
                actual: out.len(),
            });
        }
        let mut w = Writer(out);
        match *self {
            Instruction::Count { counter, thresh } => {
                w.put(&counter.0.to_be_bytes());
                w.put(&thresh.to_be_bytes());
            }
            Instruction::Compare { value, current, op } => {
                w.put(&value.0.to_be_bytes());
                w.put(&current.0.to_be_bytes());
                w.put(&[u8::from(op)]);
            }
            Instruction::Collect {
                value,
                val,
                counter,
                op,
            } => {
                w.put(&value.0.to_be_bytes());
                w.put(&val.0.to_be_bytes());
                w.put(&counter.0.to_be_bytes());
                w.put(&[u8::from(op)]);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_bytes() {
        let i = Instruction::Count {
            counter: Tag(0x0102_0304_0506_0708),
            thresh: 3,
        };
        let mut b = [0u8; 16];
        i.emit(&mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(Instruction::parse(OP_COUNT, &b), Ok(i));
    }

    #[test]
    fn collect_bytes_and_fit() {
        let i = Instruction::Collect {
            value: Tag(1),
            val: Value(2),
            counter: Tag(3),
            op: CombineOp::Max,
        };
        let mut b = [0u8; 25];
        i.emit(&mut b).unwrap();
        assert_eq!(b[7], 1);
        assert_eq!(b[15], 2);
        assert_eq!(b[23], 3);
        assert_eq!(b[24], 2);
        assert_eq!(Instruction::parse(OP_COLLECT, &b), Ok(i));
        assert!(i.fits_ipv4_option(), "25 ≤ 26 operand bytes");
    }

    #[test]
    fn rejects_bad_fields() {
        assert_eq!(
            Instruction::parse(0, &[]),
            Err(InstrError::Opcode { opcode: 0 })
        );
        assert_eq!(
            Instruction::parse(OP_COMPARE, &[0; 16]),
            Err(InstrError::Length {
                opcode: OP_COMPARE,
                expected: 17,
                actual: 16
            })
        );
        let mut b = [0u8; 17];
        b[16] = 6;
        assert_eq!(
            Instruction::parse(OP_COMPARE, &b),
            Err(InstrError::Operator { byte: 6 })
        );
        let i = Instruction::Count {
            counter: Tag(1),
            thresh: 1,
        };
        assert!(i.emit(&mut [0u8; 15]).is_err());
    }

    #[test]
    fn operators() {
        assert!(CompareOp::Lt.holds(1, 2) && !CompareOp::Lt.holds(2, 2));
        assert!(CompareOp::Ge.holds(2, 2) && CompareOp::Ne.holds(1, 2));
        assert_eq!(CombineOp::Add.apply(u64::MAX, 2), 1);
        assert_eq!(
            (CombineOp::Min.apply(3, 5), CombineOp::Max.apply(3, 5)),
            (3, 5)
        );
        for b in 0..6u8 {
            assert_eq!(u8::from(CompareOp::try_from(b).unwrap()), b);
            assert_eq!(u8::from(CombineOp::try_from(b).unwrap()), b);
        }
    }
}
