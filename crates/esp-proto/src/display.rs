//! How instructions, operators, Loc and error codes print: the paper's names and operands,
//! one line, for tools and logs. Tags print in hex (they are random names), values in
//! decimal.
//!
//! ```
//! use esp_proto::instr::{CompareOp, Instruction};
//! use esp_proto::wire::{ErrCode, Loc};
//! use esp_proto::{Tag, Value};
//!
//! let i = Instruction::Compare { value: Tag(0xF00D), current: Value(42), op: CompareOp::Lt };
//! assert_eq!(i.to_string(), "COMPARE value=0xf00d current=42 op=lt");
//! assert_eq!((Loc::INPUT | Loc::OUTPUT).to_string(), "input,output");
//! assert_eq!(ErrCode::MissingState.to_string(), "missing-state");
//! ```

use core::fmt;

use crate::instr::{CombineOp, CompareOp, Instruction, Param, Robust};
use crate::wire::{ErrCode, Loc};

impl fmt::Display for CompareOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
        })
    }
}

impl fmt::Display for CombineOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CombineOp::Add => "add",
            CombineOp::Min => "min",
            CombineOp::Max => "max",
            CombineOp::And => "and",
            CombineOp::Or => "or",
            CombineOp::Xor => "xor",
        })
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Param::NodeId => "node-id",
            Param::Iface => "iface",
            Param::IfaceLoad => "iface-load",
            Param::QueueLen => "queue-len",
            Param::Timestamp => "timestamp",
        })
    }
}

impl fmt::Display for Loc {
    /// The contexts, comma-separated in the order input, central, output; `none` if empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let mut sep = "";
        for (bit, name) in [
            (Loc::INPUT, "input"),
            (Loc::CENTRAL, "central"),
            (Loc::OUTPUT, "output"),
        ] {
            if self.contains(bit) {
                write!(f, "{sep}{name}")?;
                sep = ",";
            }
        }
        Ok(())
    }
}

impl fmt::Display for ErrCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrCode::None => f.write_str("none"),
            ErrCode::StoreFull => f.write_str("store-full"),
            ErrCode::MissingState => f.write_str("missing-state"),
            ErrCode::Malformed => f.write_str("malformed"),
            ErrCode::Other(b) => write!(f, "code-{b}"),
        }
    }
}

fn robust(f: &mut fmt::Formatter<'_>, r: &Robust) -> fmt::Result {
    write!(f, " thresh={} k={} w={}", r.thresh, r.k, r.idmap.words())
}

impl fmt::Display for Instruction {
    /// The name, then each operand as `name=value` (the IDmap by its word count only).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            Instruction::Count { counter, thresh } => {
                write!(f, " counter={:#x} thresh={thresh}", counter.0)
            }
            Instruction::Compare { value, current, op } => {
                write!(f, " value={:#x} current={} op={op}", value.0, current.0)
            }
            Instruction::Collect {
                value,
                val,
                counter,
                op,
            } => write!(
                f,
                " value={:#x} val={} counter={:#x} op={op}",
                value.0, val.0, counter.0
            ),
            Instruction::Rchld {
                children,
                counter,
                robust: r,
            } => {
                write!(f, " children={:#x} counter={:#x}", children.0, counter.0)?;
                robust(f, r)
            }
            Instruction::Rcollect {
                value,
                val,
                heard,
                children,
                forwarded,
                op,
                robust: r,
            } => {
                write!(
                    f,
                    " value={:#x} val={} heard={:#x} children={:#x} forwarded={:#x} op={op}",
                    value.0, val.0, heard.0, children.0, forwarded.0
                )?;
                robust(f, r)
            }
            Instruction::Get { tag, value }
            | Instruction::Put { tag, value }
            | Instruction::Test { tag, value, .. } => {
                write!(f, " tag={:#x} value={}", tag.0, value.0)?;
                match self {
                    Instruction::Test { op, .. } => write!(f, " op={op}"),
                    _ => Ok(()),
                }
            }
            Instruction::Update { tag, value, op } => {
                write!(f, " tag={:#x} value={} op={op}", tag.0, value.0)
            }
            Instruction::Mark { tag }
            | Instruction::Subcast { tag }
            | Instruction::Exists { tag }
            | Instruction::Absent { tag } => write!(f, " tag={:#x}", tag.0),
            Instruction::LastMark { tag, node } => {
                write!(f, " tag={:#x} node={}", tag.0, node.0)
            }
            Instruction::Param { param, op, value } => {
                write!(f, " param={param} op={op} value={}", value.0)
            }
            Instruction::PutParam { tag, param } => write!(f, " tag={:#x} param={param}", tag.0),
            Instruction::Cswap { tag, expect, new } => {
                write!(f, " tag={:#x} expect={} new={}", tag.0, expect.0, new.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::string::ToString;

    use ess::{Tag, Value};

    use super::*;

    #[test]
    fn literal_lines() {
        let cases = [
            (
                Instruction::Count {
                    counter: Tag(5),
                    thresh: 10,
                },
                "COUNT counter=0x5 thresh=10",
            ),
            (
                Instruction::Collect {
                    value: Tag(1),
                    val: Value(3),
                    counter: Tag(2),
                    op: CombineOp::Max,
                },
                "COLLECT value=0x1 val=3 counter=0x2 op=max",
            ),
            (
                Instruction::LastMark {
                    tag: Tag(0xff),
                    node: Value(167_772_161),
                },
                "LASTMARK tag=0xff node=167772161",
            ),
            (
                Instruction::Test {
                    tag: Tag(1),
                    value: Value(2),
                    op: CompareOp::Ne,
                },
                "TEST tag=0x1 value=2 op=ne",
            ),
            (Instruction::Mark { tag: Tag(0) }, "MARK tag=0x0"),
        ];
        for (i, want) in cases {
            assert_eq!(i.to_string(), want);
        }
        assert_eq!(Loc::ALL.to_string(), "input,central,output");
        assert_eq!(Loc::NONE.to_string(), "none");
        assert_eq!(ErrCode::Other(6).to_string(), "code-6");
    }
}
