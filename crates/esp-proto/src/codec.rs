//! Operand encodings: [`Instruction::parse`] and [`Instruction::emit`].
//!
//! Fields appear in the order of the [instruction table](crate::instr), big-endian: tags and
//! values 8 bytes, operators, parameters, `k` and `w` 1 byte, the robust limit 2 bytes, then
//! the IDmap's `w` words. The robust instructions' length depends on `w`, which sits just
//! before the IDmap.

use ess::{Tag, Value};

use crate::idmap::{IdMap, MAX_K, MAX_WORDS};
use crate::instr::*;

/// Operand bytes of RCHLD before the IDmap.
const RCHLD_FIXED: usize = 20;
/// Operand bytes of RCOLLECT before the IDmap.
const RCOLLECT_FIXED: usize = 45;

/// Reads fixed-size big-endian operands; reads past the end give zeros (lengths are checked
/// before reading).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    #[inline]
    fn take<const N: usize>(&mut self) -> [u8; N] {
        match self.0.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.0 = rest;
                *head
            }
            None => {
                self.0 = &[];
                [0; N]
            }
        }
    }
    #[inline]
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take())
    }
    #[inline]
    fn tag(&mut self) -> Tag {
        Tag(self.u64())
    }
    #[inline]
    fn value(&mut self) -> Value {
        Value(self.u64())
    }
    #[inline]
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.take())
    }
    #[inline]
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    #[inline]
    fn robust(&mut self, k: u8, words: u8) -> Robust {
        let mut idmap = IdMap::empty(words);
        for i in 0..usize::from(words) {
            idmap.set_word(i, self.u64());
        }
        Robust {
            thresh: 0,
            k,
            idmap,
        }
    }
}

/// Writes fixed-size big-endian operands into an exactly-sized field (lengths are checked
/// before writing; a write past the end is dropped).
struct Writer<'a>(&'a mut [u8]);

impl Writer<'_> {
    #[inline]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        let buf = core::mem::take(&mut self.0);
        if buf.len() >= N {
            let (head, rest) = buf.split_at_mut(N);
            head.copy_from_slice(&bytes);
            self.0 = rest;
        }
    }
    #[inline]
    fn u64(&mut self, x: u64) {
        self.put(x.to_be_bytes());
    }
    #[inline]
    fn u8(&mut self, x: u8) {
        self.put([x]);
    }
}

/// Operand bytes of a fixed-size opcode, or of a robust one whose IDmap has `words` words.
#[inline]
const fn len_of(opcode: u8, words: usize) -> Option<usize> {
    Some(match opcode {
        OP_COUNT | OP_GET | OP_PUT | OP_LASTMARK => 16,
        OP_COMPARE | OP_UPDATE | OP_TEST => 17,
        OP_COLLECT => 25,
        OP_RCHLD => RCHLD_FIXED + 8 * words,
        OP_RCOLLECT => RCOLLECT_FIXED + 8 * words,
        OP_MARK | OP_SUBCAST | OP_EXISTS | OP_ABSENT => 8,
        OP_PARAM => 10,
        OP_PUTPARAM => 9,
        OP_CSWAP => 24,
        _ => return None,
    })
}

impl Instruction {
    /// Operand bytes an instruction with `opcode` needs, given its operand field (the robust
    /// instructions announce their IDmap's length inside it).
    ///
    /// # Errors
    ///
    /// [`InstrError::Opcode`] for an unknown opcode; [`InstrError::Length`] if a robust
    /// instruction's field is too short to hold its `w` byte; [`InstrError::IdMap`] for an
    /// out-of-range `w` or `k`.
    #[inline]
    pub fn operand_len_of(opcode: u8, operands: &[u8]) -> Result<usize, InstrError> {
        let fixed = match opcode {
            OP_RCHLD => RCHLD_FIXED,
            OP_RCOLLECT => RCOLLECT_FIXED,
            _ => return len_of(opcode, 0).ok_or(InstrError::Opcode { opcode }),
        };
        let (Some(&k), Some(&words)) = (operands.get(fixed - 2), operands.get(fixed - 1)) else {
            return Err(InstrError::Length {
                opcode,
                expected: fixed + 8,
                actual: operands.len(),
            });
        };
        if words == 0 || usize::from(words) > MAX_WORDS || k > MAX_K {
            return Err(InstrError::IdMap { words, k });
        }
        Ok(fixed + 8 * usize::from(words))
    }

    /// Operand bytes of this instruction.
    #[inline]
    pub fn operand_len(&self) -> usize {
        let words = match self {
            Instruction::Rchld { robust, .. } | Instruction::Rcollect { robust, .. } => {
                usize::from(robust.idmap.words())
            }
            _ => 0,
        };
        len_of(self.opcode(), words).unwrap_or(0)
    }

    /// The tags an instruction with `opcode` and `operands` looks up first, read straight
    /// from the operand bytes without decoding or checking them: a warming hint
    /// ([`EspNode::warm`](crate::node::EspNode::warm)), where any subset is correct.
    /// SUBCAST is left out (it tests another context's store), PARAM has none.
    #[cfg(feature = "alloc")]
    #[inline]
    pub(crate) fn first_tags(opcode: u8, operands: &[u8]) -> [Option<Tag>; 2] {
        let at = |i: usize| {
            operands
                .get(i..i + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(|b| Tag(u64::from_be_bytes(b)))
        };
        match opcode {
            OP_PARAM | OP_SUBCAST => [None, None],
            // V, then C after the value.
            OP_COLLECT => [at(0), at(16)],
            // T0 and C.
            OP_RCHLD => [at(0), at(8)],
            _ => [at(0), None],
        }
    }

    /// Decodes the operand field of an instruction with `opcode`.
    ///
    /// # Errors
    ///
    /// [`InstrError`] for an unknown opcode, a wrong length, an unknown operator or
    /// parameter, or an IDmap out of range.
    #[inline]
    pub fn parse(opcode: u8, operands: &[u8]) -> Result<Instruction, InstrError> {
        let expected = Self::operand_len_of(opcode, operands)?;
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
                counter: r.tag(),
                thresh: r.u64(),
            },
            OP_COMPARE => Instruction::Compare {
                value: r.tag(),
                current: r.value(),
                op: r.u8().try_into()?,
            },
            OP_COLLECT => Instruction::Collect {
                value: r.tag(),
                val: r.value(),
                counter: r.tag(),
                op: r.u8().try_into()?,
            },
            OP_RCHLD => {
                let (children, counter, thresh) = (r.tag(), r.tag(), r.u16());
                let (k, words) = (r.u8(), r.u8());
                let robust = Robust {
                    thresh,
                    ..r.robust(k, words)
                };
                Instruction::Rchld {
                    children,
                    counter,
                    robust,
                }
            }
            OP_RCOLLECT => {
                let (value, val, heard, children, forwarded) =
                    (r.tag(), r.value(), r.tag(), r.tag(), r.tag());
                let (thresh, op) = (r.u16(), CombineOp::try_from(r.u8())?);
                let (k, words) = (r.u8(), r.u8());
                let robust = Robust {
                    thresh,
                    ..r.robust(k, words)
                };
                Instruction::Rcollect {
                    value,
                    val,
                    heard,
                    children,
                    forwarded,
                    op,
                    robust,
                }
            }
            OP_GET => Instruction::Get {
                tag: r.tag(),
                value: r.value(),
            },
            OP_PUT => Instruction::Put {
                tag: r.tag(),
                value: r.value(),
            },
            OP_UPDATE => Instruction::Update {
                tag: r.tag(),
                value: r.value(),
                op: r.u8().try_into()?,
            },
            OP_MARK => Instruction::Mark { tag: r.tag() },
            OP_LASTMARK => Instruction::LastMark {
                tag: r.tag(),
                node: r.value(),
            },
            OP_SUBCAST => Instruction::Subcast { tag: r.tag() },
            OP_PARAM => Instruction::Param {
                param: r.u8().try_into()?,
                op: r.u8().try_into()?,
                value: r.value(),
            },
            OP_PUTPARAM => Instruction::PutParam {
                tag: r.tag(),
                param: r.u8().try_into()?,
            },
            OP_TEST => Instruction::Test {
                tag: r.tag(),
                value: r.value(),
                op: r.u8().try_into()?,
            },
            OP_EXISTS => Instruction::Exists { tag: r.tag() },
            OP_ABSENT => Instruction::Absent { tag: r.tag() },
            _ => Instruction::Cswap {
                tag: r.tag(),
                expect: r.value(),
                new: r.value(),
            },
        })
    }

    /// Encodes the operands into `out`, which must be exactly
    /// [`operand_len`](Self::operand_len) bytes.
    ///
    /// # Errors
    ///
    /// [`InstrError::Length`] if `out` has the wrong length.
    #[inline]
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
                w.u64(counter.0);
                w.u64(thresh);
            }
            Instruction::Compare { value, current, op } => {
                w.u64(value.0);
                w.u64(current.0);
                w.u8(op.into());
            }
            Instruction::Collect {
                value,
                val,
                counter,
                op,
            } => {
                w.u64(value.0);
                w.u64(val.0);
                w.u64(counter.0);
                w.u8(op.into());
            }
            Instruction::Rchld {
                children,
                counter,
                robust,
            } => {
                w.u64(children.0);
                w.u64(counter.0);
                w.put(robust.thresh.to_be_bytes());
                emit_idmap(&mut w, &robust);
            }
            Instruction::Rcollect {
                value,
                val,
                heard,
                children,
                forwarded,
                op,
                robust,
            } => {
                for x in [value.0, val.0, heard.0, children.0, forwarded.0] {
                    w.u64(x);
                }
                w.put(robust.thresh.to_be_bytes());
                w.u8(op.into());
                emit_idmap(&mut w, &robust);
            }
            Instruction::Get { tag, value }
            | Instruction::Put { tag, value }
            | Instruction::LastMark { tag, node: value } => {
                w.u64(tag.0);
                w.u64(value.0);
            }
            Instruction::Update { tag, value, op } => {
                w.u64(tag.0);
                w.u64(value.0);
                w.u8(op.into());
            }
            Instruction::Mark { tag }
            | Instruction::Subcast { tag }
            | Instruction::Exists { tag }
            | Instruction::Absent { tag } => w.u64(tag.0),
            Instruction::Param { param, op, value } => {
                w.u8(param.into());
                w.u8(op.into());
                w.u64(value.0);
            }
            Instruction::PutParam { tag, param } => {
                w.u64(tag.0);
                w.u8(param.into());
            }
            Instruction::Test { tag, value, op } => {
                w.u64(tag.0);
                w.u64(value.0);
                w.u8(op.into());
            }
            Instruction::Cswap { tag, expect, new } => {
                w.u64(tag.0);
                w.u64(expect.0);
                w.u64(new.0);
            }
        }
        Ok(())
    }
}

#[inline]
fn emit_idmap(w: &mut Writer<'_>, robust: &Robust) {
    w.u8(robust.k);
    w.u8(robust.idmap.words());
    for word in robust.idmap.as_words() {
        w.u64(*word);
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
        assert_eq!((b[7], b[15], b[23], b[24]), (1, 2, 3, 2));
        assert_eq!(Instruction::parse(OP_COLLECT, &b), Ok(i));
        assert!(i.fits_ipv4_option(), "25 ≤ 26 operand bytes");
    }

    #[test]
    fn rchld_bytes() {
        let idmap = IdMap::from_words(&[0xAA, 0xBB]).unwrap();
        let i = Instruction::Rchld {
            children: Tag(1),
            counter: Tag(2),
            robust: Robust {
                thresh: 0x0102,
                k: 11,
                idmap,
            },
        };
        assert_eq!(i.operand_len(), 36);
        let mut b = [0u8; 36];
        i.emit(&mut b).unwrap();
        assert_eq!(&b[16..20], &[1, 2, 11, 2]);
        assert_eq!((b[27], b[35]), (0xAA, 0xBB));
        assert_eq!(Instruction::parse(OP_RCHLD, &b), Ok(i));
        assert!(!i.fits_ipv4_option());
        // A `w` of 3 announces 44 bytes.
        b[19] = 3;
        assert!(matches!(
            Instruction::parse(OP_RCHLD, &b),
            Err(InstrError::Length { expected: 44, .. })
        ));
        b[19] = 9;
        assert_eq!(
            Instruction::parse(OP_RCHLD, &b),
            Err(InstrError::IdMap { words: 9, k: 11 })
        );
        assert!(matches!(
            Instruction::parse(OP_RCHLD, &b[..10]),
            Err(InstrError::Length { .. })
        ));
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
        assert_eq!(
            Instruction::parse(OP_PARAM, &[5, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(InstrError::Operator { byte: 5 })
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
        for b in 0..5u8 {
            assert_eq!(u8::from(Param::try_from(b).unwrap()), b);
        }
    }

    #[test]
    fn every_opcode_has_a_length_and_a_name() {
        for op in OPCODES {
            let ops = [0u8; 64];
            let len = match op {
                OP_RCHLD | OP_RCOLLECT => continue,
                _ => Instruction::operand_len_of(op, &[]).unwrap(),
            };
            let i = Instruction::parse(op, &ops[..len]).unwrap();
            assert_eq!((i.opcode(), i.operand_len()), (op, len));
            assert!(!i.name().is_empty());
            assert_eq!(i.fits_ipv4_option(), len <= 26);
        }
    }
}
