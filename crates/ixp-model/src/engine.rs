//! Microengine programs: what a hardware thread runs for each packet.
//!
//! A [`Program`] is a straight sequence of [`Step`]s: compute for some cycles, make a memory
//! reference, move an mpacket between a FIFO and SDRAM. On a microengine every reference
//! swaps the thread out (the IXP1200's context switch on each memory reference); the engine
//! runs another ready thread meanwhile and idles only when all of its threads wait. The
//! simulator ([`crate::sim`]) charges the costs; this module only describes programs and
//! checks that they fit the instruction store.

use alloc::vec::Vec;
use core::fmt;

use crate::params::{Memory, Params};

/// One step of a thread's per-packet program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Run `cycles` instructions of register arithmetic (no memory reference).
    Compute(u32),
    /// Read `words` consecutive 32-bit words from `memory` in one reference and wait.
    Read {
        /// Where.
        memory: Memory,
        /// How many 32-bit words (at least one is moved).
        words: u32,
    },
    /// Write `words` consecutive 32-bit words to `memory` in one reference and wait for its
    /// completion signal.
    Write {
        /// Where.
        memory: Memory,
        /// How many 32-bit words (at least one is moved).
        words: u32,
    },
    /// Move one mpacket from the receive FIFO to SDRAM (IX bus, then an SDRAM write) and
    /// wait.
    ReceiveMpacket,
    /// Move one mpacket from SDRAM to the transmit FIFO (an SDRAM read, then the IX bus)
    /// and wait.
    TransmitMpacket,
}

impl Step {
    /// A one-word SRAM read, the unit of ESP paper Table 1.
    pub const fn read(memory: Memory, words: u32) -> Step {
        Step::Read { memory, words }
    }

    /// A write of `words` words.
    pub const fn write(memory: Memory, words: u32) -> Step {
        Step::Write { memory, words }
    }

    /// Instruction words this step occupies in the instruction store: one per compute
    /// cycle, one per reference (the reference instruction; its swap is the same word).
    pub fn code_words(&self) -> u32 {
        match self {
            Step::Compute(n) => *n,
            _ => 1,
        }
    }

    /// Whether the step is a memory or FIFO reference (and so swaps the thread out).
    pub fn is_reference(&self) -> bool {
        !matches!(self, Step::Compute(_))
    }
}

/// A thread's per-packet program: the steps, and the instruction words it occupies.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Program {
    steps: Vec<Step>,
    code_words: u32,
}

impl Program {
    /// A program of `steps`. Its code size is one word per compute cycle and per reference,
    /// plus one for the loop back to the next packet; use
    /// [`with_code_words`](Self::with_code_words) when the code loops.
    pub fn new(steps: Vec<Step>) -> Self {
        let code_words = steps
            .iter()
            .fold(1u32, |acc, s| acc.saturating_add(s.code_words()));
        Program { steps, code_words }
    }

    /// The same program, declared to occupy `words` instruction words (for code with loops,
    /// whose executed steps outnumber its instructions).
    pub fn with_code_words(mut self, words: u32) -> Self {
        self.code_words = words;
        self
    }

    /// The steps, in order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Instruction words the program occupies.
    pub fn code_words(&self) -> u32 {
        self.code_words
    }

    /// Appends the steps of `other` (code sizes add, less `other`'s loop word).
    pub fn then(mut self, other: &Program) -> Self {
        self.steps.extend_from_slice(&other.steps);
        self.code_words = self
            .code_words
            .saturating_add(other.code_words.saturating_sub(1));
        self
    }

    /// 32-bit words referenced in `memory` (reads and writes; FIFO steps excluded).
    pub fn words_in(&self, memory: Memory) -> u32 {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Read { memory: m, words } | Step::Write { memory: m, words }
                    if *m == memory =>
                {
                    *words
                }
                _ => 0,
            })
            .sum()
    }

    /// Memory references (reads and writes, FIFO steps excluded).
    pub fn references(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Read { .. } | Step::Write { .. }))
            .count()
    }

    /// The cycles one thread alone takes to run the program once on an otherwise idle
    /// machine: compute, plus for each reference its issue and unloaded access time.
    pub fn unloaded_cycles(&self, params: &Params) -> u64 {
        self.steps
            .iter()
            .map(|s| {
                let issue = u64::from(params.reference_issue_cycles);
                match *s {
                    Step::Compute(n) => u64::from(n) * u64::from(params.instruction_cycles),
                    Step::Read { memory, words } => {
                        issue + u64::from(params.access_cycles(memory, words, false))
                    }
                    Step::Write { memory, words } => {
                        issue + u64::from(params.access_cycles(memory, words, true))
                    }
                    Step::ReceiveMpacket | Step::TransmitMpacket => {
                        issue
                            + u64::from(params.ix_bus_mpacket_cycles())
                            + u64::from(params.fifo_transfer_cycles())
                    }
                }
            })
            .sum::<u64>()
            + u64::from(params.instruction_cycles.max(1))
    }
}

/// Why a program could not be loaded onto a microengine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The programs of one engine need more instruction words than its store holds.
    InstructionStoreOverflow {
        /// Words needed.
        words: u32,
        /// Words the store holds ([`Params::instruction_store_words`]).
        limit: u32,
    },
    /// A program with no steps would complete packets in no time.
    EmptyProgram,
    /// There is no such microengine in this machine.
    NoSuchEngine(u32),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::InstructionStoreOverflow { words, limit } => write!(
                f,
                "program needs {words} instruction words; the store holds {limit}"
            ),
            LoadError::EmptyProgram => f.write_str("program has no steps"),
            LoadError::NoSuchEngine(e) => write!(f, "no microengine {e}"),
        }
    }
}

impl core::error::Error for LoadError {}

/// Checks that `programs`, loaded together on one engine, fit its instruction store.
///
/// # Errors
///
/// [`LoadError::EmptyProgram`] or [`LoadError::InstructionStoreOverflow`].
pub fn check_fits(params: &Params, programs: &[Program]) -> Result<(), LoadError> {
    if programs.is_empty() || programs.iter().any(|p| p.steps.is_empty()) {
        return Err(LoadError::EmptyProgram);
    }
    let words = programs
        .iter()
        .fold(0u32, |acc, p| acc.saturating_add(p.code_words));
    if words > params.instruction_store_words {
        return Err(LoadError::InstructionStoreOverflow {
            words,
            limit: params.instruction_store_words,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    const P: Params = Params::IXP1200;

    #[test]
    fn code_words_and_store_limit() {
        let p = Program::new(vec![Step::Compute(10), Step::read(Memory::Sram, 2)]);
        assert_eq!(p.code_words(), 12);
        assert_eq!(check_fits(&P, core::slice::from_ref(&p)), Ok(()));
        let big = Program::new(vec![Step::Compute(2047)]);
        assert_eq!(big.code_words(), 2048);
        assert_eq!(check_fits(&P, core::slice::from_ref(&big)), Ok(()));
        assert_eq!(
            check_fits(&P, &[big, p]),
            Err(LoadError::InstructionStoreOverflow {
                words: 2060,
                limit: 2048
            })
        );
        assert_eq!(
            check_fits(&P, &[Program::new(vec![])]),
            Err(LoadError::EmptyProgram)
        );
        let looped = Program::new(vec![Step::Compute(5000)]).with_code_words(40);
        assert_eq!(check_fits(&P, &[looped]), Ok(()));
    }

    #[test]
    fn counts_and_unloaded_cycles() {
        let p = Program::new(vec![
            Step::Compute(4),
            Step::read(Memory::Sram, 1),
            Step::write(Memory::Sdram, 2),
            Step::read(Memory::Sram, 4),
        ]);
        assert_eq!(p.words_in(Memory::Sram), 5);
        assert_eq!(p.words_in(Memory::Sdram), 2);
        assert_eq!(p.references(), 3);
        // 4 compute + (1+20) + (1+40) + (1+23) + 1 loop branch.
        assert_eq!(p.unloaded_cycles(&P), 4 + 21 + 41 + 24 + 1);
        let q = p.clone().then(&Program::new(vec![Step::Compute(3)]));
        assert_eq!(q.steps().len(), 5);
        assert_eq!(q.code_words(), p.code_words() + 3);
    }

    #[test]
    fn errors_display() {
        assert_eq!(LoadError::NoSuchEngine(7).to_string(), "no microengine 7");
        assert!(
            LoadError::InstructionStoreOverflow { words: 3, limit: 2 }
                .to_string()
                .contains("store holds 2")
        );
    }
}
