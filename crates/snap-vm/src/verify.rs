//! Linear-resource verification (paper §IV.A): one pass over the code that rejects what can
//! never run safely and computes worst-case bounds on what a packet can use at one node.
//!
//! The bounds follow the paper's arguments: every branch goes forward, so each instruction
//! from the entry point on runs at most once; each pushes at most one value; each allocates
//! a constant number of heap words (`mktup n`, amortised over the `n − 1` instructions that
//! must follow it; an address of an IPv6 packet's family takes four payload words where
//! IPv4's takes one, [`Op::alloc_words_in`]); a packet sends at most as many packets as the node has interfaces; and
//! its resource bound times its length bounds the bandwidth it and its descendants use.
//! The interpreter does not need the verifier — it enforces the same rules as it runs — but
//! the bounds let a node decide before running, and a property test checks the interpreter
//! never exceeds them.

use core::fmt;

use crate::op::{Imm, Op};
use crate::program::Program;
use crate::value::{Tag, Value};
use crate::vm::NodeConfig;

/// Worst-case use of one execution at one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds {
    /// Instructions executed.
    pub instructions: u32,
    /// Stack depth (values).
    pub stack_depth: u32,
    /// Heap words allocated.
    pub heap_words: u32,
    /// Packets sent (forw, forwto, send).
    pub sends: u32,
    /// Whether it may deliver (demux).
    pub delivers: bool,
    /// Bytes the packet and all its descendants can put on links: |p| × resource bound.
    pub bandwidth: u64,
}

/// Which rule an instruction breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The opcode is unknown.
    UnknownOpcode(u8),
    /// An immediate branch does not go forward.
    BackwardBranch(i32),
    /// An immediate branch lands past the end of the code.
    BranchPastEnd(i32),
    /// `mktup` within the `n − 1` positions after an earlier `mktup n`.
    MktupSpacing,
    /// `mktup n` without `n − 1` instructions after it.
    MktupAtEnd,
    /// An instruction without an immediate has a non-zero one.
    StrayImmediate,
    /// `pushh` or `calls` names no object in the packet heap (or `calls` a non-byte-array).
    BadHeapReference,
    /// `istag` names no tag.
    BadTag,
    /// The entry point is outside the code.
    EntryPoint,
    /// The program has no code.
    Empty,
    /// A send or a delivery (`forw`, `forwto`, `send`, `demux`) in a program for bare runs
    /// ([`verify_micro`]).
    Network,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::UnknownOpcode(b) => write!(f, "unknown opcode {b}"),
            Rule::BackwardBranch(o) => write!(f, "branch offset {o} must be positive (branches only go forward)"),
            Rule::BranchPastEnd(o) => write!(f, "branch offset {o} lands past the end of the code"),
            Rule::MktupSpacing => f.write_str("mktup inside the span of an earlier mktup n (it must be followed by n - 1 other instructions)"),
            Rule::MktupAtEnd => f.write_str("mktup n needs n - 1 instructions after it"),
            Rule::StrayImmediate => f.write_str("this instruction takes no immediate"),
            Rule::BadHeapReference => f.write_str("heap offset names no suitable object in the packet heap"),
            Rule::BadTag => f.write_str("no such tag"),
            Rule::EntryPoint => f.write_str("entry point outside the code"),
            Rule::Empty => f.write_str("no code"),
            Rule::Network => f.write_str("microcode may not send or deliver"),
        }
    }
}

/// A program the verifier rejects: which instruction, which rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The instruction's index.
    pub pc: usize,
    /// Its opcode, if known.
    pub op: Option<Op>,
    /// The rule it breaks.
    pub rule: Rule,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Some(op) => write!(
                f,
                "instruction {} (`{}`): {}",
                self.pc,
                op.info().name,
                self.rule
            ),
            None => write!(f, "instruction {}: {}", self.pc, self.rule),
        }
    }
}

impl core::error::Error for VerifyError {}

/// Whether the packet heap has an object at `off` (and, if `want` is given, of that tag).
fn object_ok(heap: &[u32], off: u32, want: Option<Tag>) -> bool {
    let Some(&h) = heap.get(off as usize) else {
        return false;
    };
    let h = Value(h);
    let Some(tag) = h.tag() else {
        return false;
    };
    let words = crate::vm::payload_words_of(tag, h.data());
    (off as usize + 1 + words as usize) <= heap.len() && want.is_none_or(|w| w == tag)
}

/// Verifies `program` for a node configured as `node`, in one pass.
///
/// # Errors
///
/// [`VerifyError`] for the first instruction that breaks a rule.
pub fn verify(program: &Program, node: &NodeConfig) -> Result<Bounds, VerifyError> {
    let len = program.code.len();
    let err = |pc, op, rule| VerifyError { pc, op, rule };
    if len == 0 {
        return Err(err(0, None, Rule::Empty));
    }
    let entry = usize::from(program.entry);
    if entry >= len {
        return Err(err(entry, None, Rule::EntryPoint));
    }
    let mut b = Bounds {
        stack_depth: program.stack.len() as u32,
        ..Bounds::default()
    };
    let mut mktup_until = 0usize;
    let mut net = 0u32;
    for (pc, w) in program.code.iter().enumerate() {
        let op = Op::from_code(w.opcode()).ok_or(err(pc, None, Rule::UnknownOpcode(w.opcode())))?;
        let info = op.info();
        match info.imm {
            Imm::None if w.uimm() != 0 => return Err(err(pc, Some(op), Rule::StrayImmediate)),
            Imm::Branch => {
                let off = w.imm();
                if off <= 0 {
                    return Err(err(pc, Some(op), Rule::BackwardBranch(off)));
                }
                if pc + off as usize > len {
                    return Err(err(pc, Some(op), Rule::BranchPastEnd(off)));
                }
            }
            Imm::Heap => {
                let want = (op == Op::Calls).then_some(Tag::Bytes);
                if !object_ok(&program.heap, w.uimm(), want) {
                    return Err(err(pc, Some(op), Rule::BadHeapReference));
                }
            }
            Imm::Tag if Tag::from_code(w.uimm() as u8).is_none() || w.uimm() > 127 => {
                return Err(err(pc, Some(op), Rule::BadTag));
            }
            _ => {}
        }
        if op == Op::Mktup {
            if pc < mktup_until {
                return Err(err(pc, Some(op), Rule::MktupSpacing));
            }
            let n = w.uimm() as usize;
            if pc + n.max(1) > len {
                return Err(err(pc, Some(op), Rule::MktupAtEnd));
            }
            mktup_until = pc + n;
        }
        if pc < entry {
            continue; // dead here, though a child sent with another entry point may run it
        }
        b.instructions += 1;
        // Instructions pop before they push, so the net growth bounds the peak.
        let pops = match info.pops {
            crate::op::Pops::N(k) => u32::from(k),
            crate::op::Pops::Imm => w.uimm(),
        };
        b.stack_depth += u32::from(info.pushes).saturating_sub(pops);
        let ipv6 = program.ipv6.is_some();
        b.heap_words = b
            .heap_words
            .saturating_add(op.alloc_words_in(w.uimm(), ipv6));
        match op {
            Op::Forw | Op::Forwto | Op::Send => net += 1,
            Op::Demux => b.delivers = true,
            _ => {}
        }
    }
    b.sends = net.min(node.ifaces);
    b.bandwidth = program.packet_len() as u64 * u64::from(program.rb);
    Ok(b)
}

/// Verifies `program` for bare runs ([`MicroProgram`](crate::vm::MicroProgram)): its code
/// and heap as [`verify`] does (its stack is not used: a bare run starts with the caller's
/// operands), and no `forw`, `forwto`, `send` or `demux` anywhere in the code. The bounds do
/// not count the operands: each adds one stack value and three heap words
/// ([`Limits::from_bounds`](crate::vm::Limits::from_bounds)).
///
/// # Errors
///
/// [`VerifyError`] for the first instruction that breaks a rule ([`Rule::Network`] for a
/// send or delivery, after [`verify`]'s rules).
pub fn verify_micro(program: &Program) -> Result<Bounds, VerifyError> {
    let bare = Program {
        code: program.code.clone(),
        heap: program.heap.clone(),
        entry: program.entry,
        ..Program::default()
    };
    let node = NodeConfig {
        address: [0; 4],
        ifaces: 0,
        mtu: 0,
    };
    let bounds = verify(&bare, &node)?;
    for (pc, w) in program.code.iter().enumerate() {
        if let Some(op @ (Op::Forw | Op::Forwto | Op::Send | Op::Demux)) = Op::from_code(w.opcode())
        {
            return Err(VerifyError {
                pc,
                op: Some(op),
                rule: Rule::Network,
            });
        }
    }
    Ok(Bounds {
        bandwidth: 0,
        ..bounds
    })
}
