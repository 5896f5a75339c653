//! Bare runs: a program's code and heap executed on a frame of its own, with no packet
//! around it — SNAP as an instruction set for something else (ESP microcode, issue 36).
//!
//! The caller gives the initial stack as 64-bit operands (each pushed as a wide integer,
//! operand 0 deepest), the services `calls` can reach, the time and [`Limits`]; the run
//! uses the same interpreter loop as a packet's ([`Vm::run`](super::Vm::run)), so every
//! safety rule checked there is checked here. What a bare run cannot do is reach the
//! network: `forw`, `forwto`, `send` and `demux` fault ([`Fault::Network`]), and
//! [`verify_micro`](crate::verify::verify_micro) refuses programs containing them. The
//! registers a packet would give read as zero: `getsrc`, `getdst` and `here` are 0.0.0.0,
//! `getrb`, `getport`, `getifc`, `nifc` and `getlen` are 0.
//!
//! Forward-only branches (checked as the program runs) make every instruction run at most
//! once, so a program with at most [`Limits::instructions`] instructions from its entry
//! point executes at most that many; a longer one is refused before it runs.
//!
//! ```
//! use snap_vm::asm::assemble;
//! use snap_vm::vm::{End, Limits, MicroProgram, Scratch, Services};
//!
//! // a b -> a, b, a - b
//! let p = MicroProgram::new(&assemble("pull 1\npull 1\nwsub")?)?;
//! let limits = Limits::from_bounds(&p.bounds().unwrap_or_default(), 2);
//! let out = p.run(&mut Scratch::new(), &mut Services::new(), 0, &[10, 1 << 40], limits);
//! assert_eq!(out.end, End::Exit);
//! assert_eq!(out.stack, vec![10, 1 << 40, 10 - (1 << 40)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr};

use super::exec::{Exec, Registers};
use super::frame::{Frame, FrameLimits, Scratch};
use super::services::ServiceSet;
use super::{End, Fault, NodeConfig, Outcome};
use crate::program::Program;
use crate::value::Value;
use crate::verify::{Bounds, VerifyError, verify_micro};

/// How much one bare run may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most instructions from the entry point (and so most executed).
    pub instructions: u32,
    /// Most values on the stack, the operands included.
    pub stack: u32,
    /// Most heap words allocated, the operands' boxes (3 words each) included.
    pub heap_words: u32,
}

impl Limits {
    /// Limits that admit exactly what `bounds` (from [`verify_micro`]) allow with
    /// `operands` operands: the verifier's worst case plus the operands' room.
    pub fn from_bounds(bounds: &Bounds, operands: usize) -> Limits {
        let n = u32::try_from(operands).unwrap_or(u32::MAX);
        Limits {
            instructions: bounds.instructions,
            stack: bounds.stack_depth.saturating_add(n),
            heap_words: bounds.heap_words.saturating_add(n.saturating_mul(3)),
        }
    }
}

/// What a bare run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroOutcome {
    /// How it ended: [`End::Exit`] (by `exit` or past the last instruction) or
    /// [`End::Fault`]; a bare run never forwards or delivers.
    pub end: End,
    /// The stack it left, bottom first, each value read as a 64-bit integer: small and wide
    /// integers as themselves, other values as their data field (types are not checked
    /// where safety does not need it). On a fault, the stack at the fault.
    pub stack: Vec<i64>,
    /// Instructions executed.
    pub executed: u32,
}

/// A program prepared for bare runs: its code and heap as the interpreter reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroProgram {
    code: Vec<[u8; 4]>,
    heap: Vec<[u8; 4]>,
    entry: u16,
    bounds: Option<Bounds>,
}

impl MicroProgram {
    /// `program`'s code and heap (its header fields but the entry point, and its stack, are
    /// not used), verified with [`verify_micro`].
    ///
    /// # Errors
    ///
    /// [`VerifyError`] for the first instruction breaking a rule, sends and deliveries
    /// included.
    pub fn new(program: &Program) -> Result<MicroProgram, VerifyError> {
        let bounds = verify_micro(program)?;
        Ok(MicroProgram {
            bounds: Some(bounds),
            ..MicroProgram::unverified(program)
        })
    }

    /// `program` unverified: every rule is still checked as it runs, only the bounds are
    /// unknown in advance (for tests and fuzzing of the run-time checks).
    pub fn unverified(program: &Program) -> MicroProgram {
        MicroProgram {
            code: program.code.iter().map(|w| w.0.to_be_bytes()).collect(),
            heap: program.heap.iter().map(|w| w.to_be_bytes()).collect(),
            entry: program.entry,
            bounds: None,
        }
    }

    /// The verifier's bounds (`None` if built [`unverified`](Self::unverified)); they do
    /// not count the operands ([`Limits::from_bounds`] adds them).
    pub fn bounds(&self) -> Option<Bounds> {
        self.bounds
    }

    /// Runs the program at `now` with `operands` pushed as wide integers (operand 0
    /// deepest), reaching `services` through `calls`, within `limits`, working in `scratch`
    /// (reuse one across runs to allocate nothing once it has grown).
    pub fn run(
        &self,
        scratch: &mut Scratch,
        services: &mut dyn ServiceSet,
        now: u64,
        operands: &[u64],
        limits: Limits,
    ) -> MicroOutcome {
        scratch.stack.clear();
        let span = self.code.len().saturating_sub(usize::from(self.entry));
        if span > limits.instructions as usize {
            return MicroOutcome {
                end: End::Fault(Fault::ResourceBound),
                stack: Vec::new(),
                executed: 0,
            };
        }
        let frame_limits = FrameLimits {
            stack: limits.stack as usize,
            extra: limits.heap_words as usize,
            max_len: 0,
        };
        let none = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        let mut frame = Frame::new(&self.code, &self.heap, scratch, frame_limits, 0, none, 0);
        let mut out = Outcome::ended(End::Exit);
        let end = match push_operands(&mut frame, operands) {
            Err(fault) => End::Fault(fault),
            Ok(()) => {
                let config = NodeConfig {
                    address: [0; 4],
                    ifaces: 0,
                    mtu: 0,
                };
                let at = Registers {
                    iface: 0,
                    rb: 0,
                    entry: self.entry,
                    dst: none,
                    here: none,
                    here6: None,
                };
                match Exec::new(&mut out, &config, services, now, at, true).run(&mut frame, 0) {
                    Ok(super::Stop::End(end)) => end,
                    // Only sends and deliveries stop otherwise, and they fault here.
                    Ok(_) => End::Fault(Fault::Network),
                    Err(fault) => End::Fault(fault),
                }
            }
        };
        let mut stack = Vec::with_capacity(frame.stack.len());
        let mut end = end;
        for &w in frame.stack.iter() {
            match frame.read_wide(Value(w)) {
                Ok(x) => stack.push(x),
                Err(fault) => {
                    if !matches!(end, End::Fault(_)) {
                        end = End::Fault(fault);
                    }
                    stack.push(i64::from(Value(w).as_int()));
                }
            }
        }
        MicroOutcome {
            end,
            stack,
            executed: out.stats.executed,
        }
    }
}

/// Pushes each operand as a wide integer, the first deepest.
fn push_operands(frame: &mut Frame<'_>, operands: &[u64]) -> Result<(), Fault> {
    for &x in operands {
        let v = frame.alloc_wide(x as i64)?;
        frame.push(v)?;
    }
    Ok(())
}
