//! # esp-micro — ESP instructions written in SNAP
//!
//! ESP (Calvert, Griffioen and Wen, SIGCOMM 2002) fixes a small set of instructions in the
//! router; its §8 asks for new ones without new router code. SNAP (Moore, Hicks and
//! Nettles, INFOCOM 2001) is a bytecode whose programs are verified, before they run, to use
//! CPU and memory linear in their length (§IV.A). This crate runs a SNAP program *as* an ESP
//! instruction: [`Microcode`] is a verified program; [`Microcode::run`] executes it against
//! an ESP [`Context`] exactly where a built-in would run ([`esp_proto::exec::execute`]),
//! with the same contract: a [`Verdict`] and updated operands, or an [`Abort`] that leaves
//! the store as it was.
//!
//! # The ABI
//!
//! * **Operands in.** The instruction's operands (ESP's 64-bit tags and values, at most
//!   [`MAX_OPERANDS`]) are pushed as SNAP wide integers, operand 0 deepest.
//! * **The store.** `calls "ess.get"`, `"ess.put"` and `"ess.count"` reach the context's
//!   store — the same [`Ess`](ess::Ess) the built-ins use, with the tags exactly as the
//!   built-ins use them (the context's store is already the packet's CID's: a tag operand
//!   names the same binding whether COUNT or microcode uses it). Tags and values are small
//!   or wide integers read as 64 bits:
//!   * `ess.get`: pops a tag; pushes its value as a wide integer, or the small integer 0 if
//!     the tag is nil (`istag wide` tells them apart);
//!   * `ess.put`: pops a value, then a tag; binds them; pushes 1;
//!   * `ess.count`: pops a tag; increments its value (nil = 0, saturating at 2^64 − 1, as
//!     COUNT does); pushes the new count as a wide integer.
//!
//!   None of them changes a binding's lifetime: a write to an existing binding keeps its
//!   expiry, as the built-ins' `find_create` and `write` do.
//! * **Wide bitwise operators.** SNAP has none on 64-bit integers (nor a wide shift to build
//!   them from), so `calls "wide.and"`, `"wide.or"` and `"wide.xor"` pop `b`, then `a`, and
//!   push `a & b`, `a | b`, `a ^ b` as a wide integer.
//! * **Atomicity.** Writes go to a journal the program's own reads see; when it ends with a
//!   forward or drop verdict the journal is applied, room for every new binding made first
//!   ([`Ess::make_room`](ess::Ess::make_room)) — no room is [`Abort::StoreFull`] with the
//!   store unchanged. Any other end applies nothing.
//! * **Exit.** The program ends (`exit`, or past its last instruction) with the verdict on
//!   top of the stack — [`VERDICT_FORWARD`] 0, [`VERDICT_DROP`] 1, [`VERDICT_MISSING_STATE`]
//!   2 (abort), [`VERDICT_STORE_FULL`] 3 (abort) — and the operands, updated, just below
//!   it, operand 0 deepest; deeper values are ignored. The operands are written back for a
//!   forward or drop verdict only (as `execute` leaves them on an abort).
//! * **Safety.** The program is verified at [`Microcode::new`]
//!   ([`snap_vm::verify::verify_micro`]: forward branches only, no sends or deliveries,
//!   bounded stack and heap) and at most [`MAX_INSTRUCTIONS`] long, so one run executes
//!   at most that many instructions. Every store access is a `calls` instruction, so
//!   accesses count against the same bound (at most one per instruction, each a bounded
//!   lookup), and a program reaches no store but its context's: the services are lent
//!   the context's store alone. A program that faults, leaves too short a stack or a
//!   verdict outside 0..=3 fails ([`Failure`]); [`Microcode::run`] reports that as
//!   [`Abort::Malformed`], the abort a malformed built-in gets.
//!
//! # Shipped microcode
//!
//! The crate's `microcode/` directory (`examples/esp-microcode/` in the repository; the
//! constants of [`shipped`]) holds the paper's instructions in SNAP assembly, each proven
//! equal to the built-in by a differential property test
//! (`tests/count.rs`, `tests/compare.rs`, `tests/collect.rs`, `tests/mark.rs`,
//! `tests/lastmark.rs`: verdicts, aborts, operands and the store left behind):
//!
//! | file | operands | instruction |
//! |---|---|---|
//! | `count.snap` | `[counter, thresh]` | COUNT (Fig. 3) |
//! | `compare.snap` | `[value, current, op]` | COMPARE (Fig. 6); `op` indexes [`CompareOp::ALL`](esp_proto::instr::CompareOp::ALL) |
//! | `collect.snap` | `[value, val, counter, op]` | COLLECT (Fig. 6); `op` indexes [`CombineOp::ALL`](esp_proto::instr::CombineOp::ALL) |
//! | `mark.snap` | `[tag]` | MARK (Fig. 1): `tag` ← the node id (`esp.param` 0) |
//! | `lastmark.snap` | `[tag, node]` | LASTMARK (Fig. 1): `node` ← the node id if `tag` is bound |
//!
//! An `op` outside 0..=5 ends with verdict 4, reported as [`Abort::Malformed`].
//!
//! `#![no_std]` with `alloc`; no I/O, no clock: the caller passes `now`.
//!
//! # Example: COUNT, microcoded
//!
//! ```
//! use esp_micro::Microcode;
//! use esp_proto::exec::{Context, Env, Verdict};
//! use esp_proto::{Ess, EssConfig, HashKey, Instant, Tag};
//!
//! // [counter, thresh] -> [counter, thresh, verdict]; signed compare (see
//! // examples/esp-microcode/count.snap for the full-range one).
//! let count = Microcode::assemble(
//!     r#"
//!         pull 1              ; counter
//!         calls "ess.count"   ; its new count
//!         pull 1              ; thresh
//!         swap
//!         wlt                 ; thresh < count: 1 = drop, else 0 = forward
//!     "#,
//! )?;
//! let mut store = Ess::new(EssConfig::new(6, 1000, 1, HashKey::from_seed(7))?);
//! let env = Env::new(1, HashKey::from_seed(7));
//! let mut ctx = Context::new(&mut store, &env, 42);
//! let now = Instant::from_ticks(0);
//! let mut operands = [7, 2]; // counter tag 7, threshold 2
//! assert_eq!(count.run(&mut ctx, now, &mut operands), Ok(Verdict::Forward));
//! assert_eq!(count.run(&mut ctx, now, &mut operands), Ok(Verdict::Forward));
//! assert_eq!(count.run(&mut ctx, now, &mut operands), Ok(Verdict::Drop));
//! assert_eq!(store.get(now, Tag(7)).map(|v| v.0), Some(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod body;
pub mod endpoint;
mod ext;
mod journal;
pub mod shipped;

pub use ext::{Gate, INLINE_CACHE, InlinePolicy, InstallError, Installed, Micro, MicroStats};

use core::fmt;

use esp_proto::exec::{Abort, Context, Verdict};
use esp_proto::instr::InstrError;
use ess::{Instant, Tables};
use snap_vm::asm::{AsmError, assemble};
use snap_vm::program::Program;
use snap_vm::verify::{Bounds, VerifyError};
use snap_vm::vm::{End, Fault, Limits, MicroProgram, Scratch};

use journal::{Journal, commit};

/// The verdict value that forwards the packet.
pub const VERDICT_FORWARD: i64 = 0;
/// The verdict value that drops the packet.
pub const VERDICT_DROP: i64 = 1;
/// The verdict value that aborts with [`Abort::MissingState`].
pub const VERDICT_MISSING_STATE: i64 = 2;
/// The verdict value that aborts with [`Abort::StoreFull`].
pub const VERDICT_STORE_FULL: i64 = 3;

/// Most operands an instruction has (ESP's operand field holds at most 8 tags or values).
pub const MAX_OPERANDS: usize = 8;

/// Longest program accepted, in instructions from its entry point: the most one run
/// executes (SNAP's branches only go forward).
pub const MAX_INSTRUCTIONS: u32 = 256;

pub use esp_proto::instr::{INSTALLED, OP_MICRO};

/// Why a program was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The assembler refused the text.
    Asm(AsmError),
    /// The verifier refused the program.
    Verify(VerifyError),
    /// The program is longer than [`MAX_INSTRUCTIONS`].
    TooLong {
        /// Its instructions from the entry point.
        instructions: u32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Asm(e) => write!(f, "assembly: {e}"),
            Error::Verify(e) => write!(f, "verification: {e}"),
            Error::TooLong { instructions } => write!(
                f,
                "{instructions} instructions; microcode may have at most {MAX_INSTRUCTIONS}"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// Why a run did not produce a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The program asked for an abort (verdict 2 or 3), or its writes did not fit the store
    /// ([`Abort::StoreFull`]).
    Abort(Abort),
    /// The program broke a SNAP safety rule.
    Fault(Fault),
    /// It ended with fewer values than the operands and a verdict.
    ShortStack,
    /// It ended with a verdict outside 0..=3.
    BadVerdict(i64),
    /// More than [`MAX_OPERANDS`] operands were given.
    TooManyOperands,
}

impl Failure {
    /// The abort a router reports: the program's own, else [`Abort::Malformed`] naming
    /// [`OP_MICRO`] (the opcode of inline microcode).
    pub const fn abort(self) -> Abort {
        match self {
            Failure::Abort(a) => a,
            _ => Abort::Malformed(InstrError::Opcode { opcode: OP_MICRO }),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Abort(a) => write!(f, "aborted: {a}"),
            Failure::Fault(e) => write!(f, "faulted: {e}"),
            Failure::ShortStack => f.write_str("ended without its operands and a verdict"),
            Failure::BadVerdict(v) => write!(f, "verdict {v} is none of 0..=3"),
            Failure::TooManyOperands => write!(f, "more than {MAX_OPERANDS} operands"),
        }
    }
}

impl core::error::Error for Failure {}

/// A verified SNAP program that runs as an ESP instruction (see the [crate] docs for the
/// ABI).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Microcode {
    program: MicroProgram,
    bounds: Bounds,
}

impl Microcode {
    /// `program`'s code and heap, verified ([`snap_vm::verify::verify_micro`]).
    ///
    /// # Errors
    ///
    /// [`Error::Verify`] or [`Error::TooLong`].
    pub fn new(program: &Program) -> Result<Microcode, Error> {
        let program = MicroProgram::new(program).map_err(Error::Verify)?;
        let bounds = program.bounds().unwrap_or_default();
        if bounds.instructions > MAX_INSTRUCTIONS {
            return Err(Error::TooLong {
                instructions: bounds.instructions,
            });
        }
        Ok(Microcode { program, bounds })
    }

    /// Assembles `text` ([`snap_vm::asm`]) and verifies it as [`new`](Self::new) does.
    ///
    /// # Errors
    ///
    /// [`Error::Asm`], or as [`new`](Self::new).
    pub fn assemble(text: &str) -> Result<Microcode, Error> {
        Microcode::new(&assemble(text).map_err(Error::Asm)?)
    }

    /// The verifier's bounds on one run, operands not counted (each adds a stack value and
    /// three heap words).
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Runs the program as an instruction in `ctx` at `now`, updating `operands` (see the
    /// [crate] docs).
    ///
    /// # Errors
    ///
    /// The [`Abort`] a router reports ([`Failure::abort`]); the store and the operands are
    /// then unchanged.
    pub fn run<T: Tables>(
        &self,
        ctx: &mut Context<'_, T>,
        now: Instant,
        operands: &mut [u64],
    ) -> Result<Verdict, Abort> {
        self.run_detailed(ctx, now, operands)
            .map_err(Failure::abort)
    }

    /// [`run`](Self::run), telling how a program that produced no verdict failed.
    ///
    /// # Errors
    ///
    /// [`Failure`]; the store and the operands are then unchanged.
    pub fn run_detailed<T: Tables>(
        &self,
        ctx: &mut Context<'_, T>,
        now: Instant,
        operands: &mut [u64],
    ) -> Result<Verdict, Failure> {
        self.run_in(&mut Scratch::new(), ctx, now, operands).result
    }

    /// [`run_detailed`](Self::run_detailed) working in `scratch` (reuse one across runs to
    /// allocate less), also telling how many instructions ran.
    pub fn run_in<T: Tables>(
        &self,
        scratch: &mut Scratch,
        ctx: &mut Context<'_, T>,
        now: Instant,
        operands: &mut [u64],
    ) -> Run {
        let n = operands.len();
        if n > MAX_OPERANDS {
            return Run {
                result: Err(Failure::TooManyOperands),
                executed: 0,
            };
        }
        let mut journal = Journal::new(&*ctx.store, ctx.env, now);
        let limits = Limits::from_bounds(&self.bounds, n);
        // The operands and the verdict: all of the stack a run's result is read from.
        let mut top = [0i64; MAX_OPERANDS + 1];
        let kept = top.get_mut(..=n).unwrap_or_default();
        let out = self
            .program
            .run_top(scratch, &mut journal, now.ticks(), operands, limits, kept);
        let mut writes = journal.into_writes();
        let stack = top.get(..out.depth.min(n + 1)).unwrap_or_default();
        let result = finish(out.end, stack, operands).and_then(|verdict| {
            commit(ctx.store, now, &mut writes).map_err(Failure::Abort)?;
            Ok(verdict)
        });
        if result.is_ok() {
            for (slot, &v) in operands.iter_mut().zip(stack) {
                *slot = v as u64;
            }
        }
        Run {
            result,
            executed: out.executed,
        }
    }
}

/// One run of a [`Microcode`]: its result and the instructions it executed (at most
/// [`Bounds::instructions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The verdict, or how the run failed (the store and operands then unchanged).
    pub result: Result<Verdict, Failure>,
    /// Instructions executed.
    pub executed: u32,
}

/// The verdict of a run that ended as `end` with `stack` on top of its stack (the top
/// `operands.len() + 1` values, or all if fewer), for `operands` operands.
fn finish(end: End, stack: &[i64], operands: &[u64]) -> Result<Verdict, Failure> {
    match end {
        End::Exit => {}
        End::Fault(fault) => return Err(Failure::Fault(fault)),
        // A bare run ends no other way; were it to, it produced no verdict.
        _ => return Err(Failure::Fault(Fault::Network)),
    }
    if stack.len() < operands.len() + 1 {
        return Err(Failure::ShortStack);
    }
    match stack.last().copied() {
        Some(VERDICT_FORWARD) => Ok(Verdict::Forward),
        Some(VERDICT_DROP) => Ok(Verdict::Drop),
        Some(VERDICT_MISSING_STATE) => Err(Failure::Abort(Abort::MissingState)),
        Some(VERDICT_STORE_FULL) => Err(Failure::Abort(Abort::StoreFull)),
        Some(v) => Err(Failure::BadVerdict(v)),
        None => Err(Failure::ShortStack),
    }
}
