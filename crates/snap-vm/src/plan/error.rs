//! Why a PLAN program does not compile.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::asm::AsmError;
use crate::verify::VerifyError;

/// Why a PLAN program does not compile. Source errors carry the line and column (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// Text that does not lex or parse.
    Syntax {
        /// Line.
        line: u32,
        /// Column.
        col: u32,
        /// What was expected or found.
        message: String,
    },
    /// A type error.
    Type {
        /// Line.
        line: u32,
        /// Column.
        col: u32,
        /// What does not fit.
        message: String,
    },
    /// A variable not in scope.
    UnknownVariable {
        /// Line.
        line: u32,
        /// Column.
        col: u32,
        /// The name.
        name: String,
    },
    /// A call to a name that is no PLAN function, primitive or known service.
    UnknownService {
        /// Line.
        line: u32,
        /// Column.
        col: u32,
        /// The name.
        name: String,
    },
    /// Functions that call themselves, directly or through others (PLAN forbids it; SNAP
    /// cannot loop).
    Recursion {
        /// Line of the first function's definition.
        line: u32,
        /// Column.
        col: u32,
        /// The cycle, first function repeated at the end: `["f", "g", "f"]`.
        cycle: Vec<String>,
    },
    /// A list literal longer than the fold bound.
    ListTooLong {
        /// Line.
        line: u32,
        /// Column.
        col: u32,
        /// Its length.
        len: usize,
        /// The bound.
        bound: u32,
    },
    /// Something outside the supported subset (a routing function other than
    /// `defaultRoute`, a function defined twice, an integer SNAP cannot hold).
    Unsupported {
        /// Line.
        line: u32,
        /// Column.
        col: u32,
        /// What.
        message: String,
    },
    /// Nesting too deep or code too long for a packet (inlining and unrolling multiply).
    TooLarge {
        /// Line of the expression being compiled when the limit was hit.
        line: u32,
        /// Column.
        col: u32,
    },
    /// The entry function is not defined.
    NoEntry {
        /// Its name.
        name: String,
    },
    /// The generated assembly did not assemble (a compiler bug, or a program too large).
    Assembly(AsmError),
    /// The assembled program did not verify (a compiler bug).
    Verify(VerifyError),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Syntax { line, col, message } => {
                write!(f, "{line}:{col}: syntax error: {message}")
            }
            PlanError::Type { line, col, message } => {
                write!(f, "{line}:{col}: type error: {message}")
            }
            PlanError::UnknownVariable { line, col, name } => {
                write!(f, "{line}:{col}: unknown variable \"{name}\"")
            }
            PlanError::UnknownService { line, col, name } => write!(
                f,
                "{line}:{col}: \"{name}\" is no PLAN function, primitive or known service"
            ),
            PlanError::Recursion { line, col, cycle } => {
                write!(f, "{line}:{col}: recursion is not allowed: ")?;
                for (i, name) in cycle.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" -> ")?;
                    }
                    f.write_str(name)?;
                }
                Ok(())
            }
            PlanError::ListTooLong {
                line,
                col,
                len,
                bound,
            } => write!(
                f,
                "{line}:{col}: list of {len} elements is longer than the fold bound {bound}"
            ),
            PlanError::Unsupported { line, col, message } => {
                write!(f, "{line}:{col}: not supported: {message}")
            }
            PlanError::TooLarge { line, col } => write!(
                f,
                "{line}:{col}: program too large for a SNAP packet (nesting, inlining or unrolling)"
            ),
            PlanError::NoEntry { name } => write!(f, "no entry function \"{name}\""),
            PlanError::Assembly(e) => write!(f, "generated assembly: {e}"),
            PlanError::Verify(e) => write!(f, "generated program does not verify: {e}"),
        }
    }
}

impl core::error::Error for PlanError {}

impl From<AsmError> for PlanError {
    fn from(e: AsmError) -> PlanError {
        PlanError::Assembly(e)
    }
}

impl From<VerifyError> for PlanError {
    fn from(e: VerifyError) -> PlanError {
        PlanError::Verify(e)
    }
}

pub(crate) fn syntax(pos: super::ast::Pos, message: impl Into<String>) -> PlanError {
    PlanError::Syntax {
        line: pos.line,
        col: pos.col,
        message: message.into(),
    }
}

pub(crate) fn type_err(pos: super::ast::Pos, message: impl Into<String>) -> PlanError {
    PlanError::Type {
        line: pos.line,
        col: pos.col,
        message: message.into(),
    }
}
