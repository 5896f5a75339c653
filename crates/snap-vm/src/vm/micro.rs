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
        let mut stack = Vec::new();
        let sink = &mut stack;
        let (end, executed) = self.run_each(scratch, services, now, operands, limits, |n| {
            sink.reserve_exact(n);
            |_, x| sink.push(x)
        });
        MicroOutcome {
            end,
            stack,
            executed,
        }
    }

    /// [`run`](Self::run) keeping only the top of the stack it leaves: the highest
    /// `top.len()` values (or all, if fewer) go to the start of `top`, bottom first, and
    /// nothing is allocated. The end is the same as `run`'s: every value left is still
    /// read.
    pub fn run_top(
        &self,
        scratch: &mut Scratch,
        services: &mut dyn ServiceSet,
        now: u64,
        operands: &[u64],
        limits: Limits,
        top: &mut [i64],
    ) -> MicroTop {
        let mut depth = 0;
        let left = &mut depth;
        let (end, executed) = self.run_each(scratch, services, now, operands, limits, |n| {
            *left = n;
            let skip = n.saturating_sub(top.len());
            move |i: usize, x| {
                if let Some(slot) = i.checked_sub(skip).and_then(|j| top.get_mut(j)) {
                    *slot = x;
                }
            }
        });
        MicroTop {
            end,
            depth,
            executed,
        }
    }

    /// The run behind [`run`](Self::run) and [`run_top`](Self::run_top): how it ended and
    /// the instructions it executed; `visit` is told the depth of the stack left, and the
    /// sink it returns gets each value (index from the bottom, value), bottom first.
    fn run_each<V, S>(
        &self,
        scratch: &mut Scratch,
        services: &mut dyn ServiceSet,
        now: u64,
        operands: &[u64],
        limits: Limits,
        visit: V,
    ) -> (End, u32)
    where
        V: FnOnce(usize) -> S,
        S: FnMut(usize, i64),
    {
        scratch.stack.clear();
        let span = self.code.len().saturating_sub(usize::from(self.entry));
        if span > limits.instructions as usize {
            visit(0);
            return (End::Fault(Fault::ResourceBound), 0);
        }
        let frame_limits = FrameLimits {
            stack: limits.stack as usize,
            extra: limits.heap_words as usize,
            max_len: 0,
        };
        let none = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        let mut frame = Frame::new(&self.code, &self.heap, scratch, frame_limits, 0, none, 0);
        let mut out = Outcome::ended(End::Exit);
        let mut end = match push_operands(&mut frame, operands) {
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
        let mut sink = visit(frame.stack.len());
        for (i, &w) in frame.stack.iter().enumerate() {
            match frame.read_wide(Value(w)) {
                Ok(x) => sink(i, x),
                Err(fault) => {
                    if !matches!(end, End::Fault(_)) {
                        end = End::Fault(fault);
                    }
                    sink(i, i64::from(Value(w).as_int()));
                }
            }
        }
        (end, out.stats.executed)
    }
}

/// What [`MicroProgram::run_top`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MicroTop {
    /// How it ended, as [`MicroOutcome::end`].
    pub end: End,
    /// Values left on the stack (at most `top.len()` of them were kept).
    pub depth: usize,
    /// Instructions executed.
    pub executed: u32,
}

/// Pushes each operand as a wide integer, the first deepest.
fn push_operands(frame: &mut Frame<'_>, operands: &[u64]) -> Result<(), Fault> {
    for &x in operands {
        let v = frame.alloc_wide(x as i64)?;
        frame.push(v)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    // Test harness: panics are the failure reports.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::asm::assemble;
    use crate::vm::Services;

    const ROOMY: Limits = Limits {
        instructions: 64,
        stack: 64,
        heap_words: 256,
    };

    /// `run_top` ends as `run` does and keeps the top of the stack `run` returns.
    #[test]
    fn run_top_keeps_the_top_of_run() {
        let programs = [
            // a b -> a, b, a - b, 7
            "pull 1\npull 1\nwsub\npush 7",
            // Leaves the operands alone.
            "push 0\npop",
            // Pops everything: an empty stack.
            "pop\npop",
            // Faults (a wide subtraction of too few values) with the operands left.
            "pop\nwsub",
            // Exits early under what it leaves.
            "push 3\nexit\npush 4",
        ];
        for text in programs {
            // Unverified: the faulting one runs too.
            let p = MicroProgram::unverified(&assemble(text).unwrap());
            let full = p.run(
                &mut Scratch::new(),
                &mut Services::new(),
                0,
                &[10, 1 << 40],
                ROOMY,
            );
            for k in 0..6 {
                let mut top = [-1i64; 6];
                let mut scratch = Scratch::new();
                let kept = &mut top[..k];
                let got = p.run_top(
                    &mut scratch,
                    &mut Services::new(),
                    0,
                    &[10, 1 << 40],
                    ROOMY,
                    kept,
                );
                assert_eq!(got.end, full.end, "{text:?}");
                assert_eq!(got.executed, full.executed, "{text:?}");
                assert_eq!(got.depth, full.stack.len(), "{text:?}");
                let n = full.stack.len().min(k);
                assert_eq!(
                    top[..n],
                    full.stack[full.stack.len() - n..],
                    "{text:?} k={k}"
                );
                assert!(top[n..].iter().all(|&x| x == -1), "{text:?} k={k}: {top:?}");
            }
        }
    }
}
