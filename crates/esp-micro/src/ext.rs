//! A router's microcode: the [`Extension`] that runs inline microcode
//! ([`OP_MICRO`]) and the instructions its operator installed ([`INSTALLED`]), under the
//! router's policy, counting every run and every refusal.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use esp_proto::exec::{Abort, Context, Extension, Verdict};
use esp_proto::instr::InstrError;
use ess::{Instant, Tables};
use snap_vm::vm::Scratch;

use crate::body::Body;
use crate::{Failure, INSTALLED, MAX_OPERANDS, Microcode, OP_MICRO};

/// Inline programs whose verification is remembered (by their bytes), most recent kept.
pub const INLINE_CACHE: usize = 16;

/// Where inline microcode may come from (installed instructions always run: the operator
/// chose them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum InlinePolicy {
    /// Inline microcode is refused everywhere.
    Off,
    /// Inline microcode runs whatever interface it arrived on.
    #[default]
    On,
    /// Inline microcode runs only in packets that arrived on these input interfaces
    /// (locally sent packets, with no input interface, are refused).
    Ifaces(Vec<usize>),
}

impl InlinePolicy {
    /// Whether a packet that arrived on `input` (`None`: sent by the router itself) may run
    /// inline microcode.
    pub fn admits(&self, input: Option<usize>) -> bool {
        match self {
            InlinePolicy::Off => false,
            InlinePolicy::On => true,
            InlinePolicy::Ifaces(list) => input.is_some_and(|i| list.contains(&i)),
        }
    }
}

/// An instruction installed under an opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// The operator's name for it.
    pub name: String,
    /// The verified program.
    pub microcode: Microcode,
    /// Runs since it was installed (verdicts and aborts alike).
    pub runs: u64,
}

/// An opcode outside [`INSTALLED`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstallError {
    /// The opcode.
    pub opcode: u8,
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "opcode {} is not installable; installed instructions take {}..={}",
            self.opcode,
            INSTALLED.start(),
            INSTALLED.end()
        )
    }
}

impl core::error::Error for InstallError {}

/// Running totals of a router's microcode; each refusal has its own counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MicroStats {
    /// Inline programs run (to a verdict or an abort).
    pub inline_runs: u64,
    /// Installed instructions run.
    pub installed_runs: u64,
    /// Runs that aborted (the program's MissingState or StoreFull, or no room for its
    /// writes).
    pub aborted: u64,
    /// Runs that broke a rule as they ran (a fault, a short stack, a bad verdict): reported
    /// as [`Abort::Malformed`].
    pub failed: u64,
    /// SNAP instructions executed, all runs together.
    pub instructions: u64,
    /// Inline microcode refused because the router has it switched off.
    pub refused_off: u64,
    /// Inline microcode refused because it arrived on an interface not allowed it.
    pub refused_iface: u64,
    /// Inline microcode whose field did not parse.
    pub refused_malformed: u64,
    /// Inline microcode the verifier refused (or too long).
    pub refused_verify: u64,
    /// Installed-instruction operands that are not whole 64-bit words (or too many).
    pub refused_operands: u64,
    /// Opcodes neither built in, inline nor installed.
    pub unknown_opcode: u64,
    /// Inline programs found verified in the cache.
    pub cache_hits: u64,
}

/// One inline program's verification, remembered.
#[derive(Clone, Debug)]
struct Cached {
    program: Vec<u8>,
    microcode: Option<Microcode>,
}

/// A router's microcode: its policy for inline programs, its installed instructions, and
/// its counters. Hand [`Micro::gate`] to `esp_proto::node::EspNode::ingress_found_with`
/// (esp-proto's `alloc` feature) and friends for each packet.
///
/// ```
/// use esp_micro::{InlinePolicy, Micro, Microcode};
/// use esp_proto::exec::{process_with, Context, Env};
/// use esp_proto::wire::{Header, HeaderRepr, Loc};
/// use esp_proto::{Ess, EssConfig, HashKey, Instant};
///
/// let mut micro = Micro::new(InlinePolicy::Off);
/// let count = Microcode::assemble(esp_micro::shipped::COUNT)?;
/// micro.install(64, "count", count)?;
///
/// // A packet naming opcode 64 carries COUNT's operands only: counter 7, threshold 1.
/// let mut operands = [0u8; 16];
/// operands[..8].copy_from_slice(&7u64.to_be_bytes());
/// operands[8..].copy_from_slice(&1u64.to_be_bytes());
/// let repr = HeaderRepr { loc: Loc::CENTRAL, err: false, rb: false, opcode: 64, cid: 9, operand_len: 16 };
/// let mut bytes = [0u8; 24];
/// repr.emit(&mut bytes)?;
/// bytes[8..].copy_from_slice(&operands);
///
/// let mut store = Ess::new(EssConfig::new(6, 1000, 1, HashKey::from_seed(7))?);
/// let env = Env::new(1, HashKey::from_seed(7));
/// let now = Instant::from_ticks(0);
/// for expect_forward in [true, false] {
///     let mut packet = bytes;
///     let mut header = Header::new_checked(&mut packet[..])?;
///     let done = process_with(&mut Context::new(&mut store, &env, 9), now, &mut header, &mut micro.gate(Some(0)));
///     assert_eq!(done.verdict == esp_proto::exec::Verdict::Forward, expect_forward);
/// }
/// assert_eq!(micro.stats().installed_runs, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct Micro {
    policy: InlinePolicy,
    installed: Vec<Option<Installed>>,
    cache: Vec<Cached>,
    /// The cache slot replaced next once it is full.
    evict: usize,
    scratch: Scratch,
    stats: MicroStats,
}

impl Micro {
    /// A router's microcode with `policy` for inline programs and nothing installed.
    pub fn new(policy: InlinePolicy) -> Micro {
        Micro {
            policy,
            ..Micro::default()
        }
    }

    /// The policy for inline programs.
    pub fn policy(&self) -> &InlinePolicy {
        &self.policy
    }

    /// Sets the policy for inline programs (a reload).
    pub fn set_policy(&mut self, policy: InlinePolicy) {
        self.policy = policy;
    }

    /// Installs `microcode` under `opcode` as `name`; returns what it replaced.
    ///
    /// # Errors
    ///
    /// [`InstallError`] if `opcode` is outside [`INSTALLED`].
    pub fn install(
        &mut self,
        opcode: u8,
        name: impl Into<String>,
        microcode: Microcode,
    ) -> Result<Option<Installed>, InstallError> {
        let slot = installed_slot(opcode).ok_or(InstallError { opcode })?;
        if self.installed.len() <= slot {
            self.installed.resize(slot + 1, None);
        }
        let new = Installed {
            name: name.into(),
            microcode,
            runs: 0,
        };
        Ok(self.installed.get_mut(slot).and_then(|s| s.replace(new)))
    }

    /// Takes `policy` and exactly the instructions `installed` (opcode, name, program), as
    /// a reload does: an instruction whose name and program are unchanged keeps its run
    /// count; the counters and the cache of inline programs are kept.
    ///
    /// # Errors
    ///
    /// [`InstallError`] for an opcode outside [`INSTALLED`]; nothing is changed then.
    pub fn configure(
        &mut self,
        policy: InlinePolicy,
        installed: &[(u8, String, Microcode)],
    ) -> Result<(), InstallError> {
        if let Some(&(opcode, _, _)) = installed.iter().find(|(op, _, _)| !INSTALLED.contains(op)) {
            return Err(InstallError { opcode });
        }
        let mut old = core::mem::take(&mut self.installed);
        for (opcode, name, microcode) in installed {
            let runs = installed_slot(*opcode)
                .and_then(|i| old.get_mut(i))
                .and_then(Option::take)
                .filter(|o| o.name == *name && o.microcode == *microcode)
                .map_or(0, |o| o.runs);
            self.install(*opcode, name.clone(), microcode.clone())?;
            if let Some(entry) = installed_slot(*opcode)
                .and_then(|i| self.installed.get_mut(i))
                .and_then(Option::as_mut)
            {
                entry.runs = runs;
            }
        }
        self.policy = policy;
        Ok(())
    }

    /// Removes the instruction under `opcode`.
    pub fn uninstall(&mut self, opcode: u8) -> Option<Installed> {
        installed_slot(opcode)
            .and_then(|i| self.installed.get_mut(i))
            .and_then(Option::take)
    }

    /// The installed instruction under `opcode`.
    pub fn get(&self, opcode: u8) -> Option<&Installed> {
        installed_slot(opcode)
            .and_then(|i| self.installed.get(i))
            .and_then(Option::as_ref)
    }

    /// The installed instructions, by opcode.
    pub fn installed(&self) -> impl Iterator<Item = (u8, &Installed)> {
        self.installed
            .iter()
            .zip(INSTALLED)
            .filter_map(|(s, op)| s.as_ref().map(|i| (op, i)))
    }

    /// Running totals.
    pub fn stats(&self) -> MicroStats {
        self.stats
    }

    /// The [`Extension`] for one packet, which arrived on `input` (`None`: the router sent
    /// it itself).
    pub fn gate(&mut self, input: Option<usize>) -> Gate<'_> {
        Gate { micro: self, input }
    }

    /// The verified inline program whose bytes are `program`, from the cache or verified
    /// now (and remembered either way).
    fn inline(&mut self, program: &[u8], body: &Body<'_>) -> Option<usize> {
        if let Some(i) = self.cache.iter().position(|c| c.program == program) {
            self.stats.cache_hits += 1;
            return self
                .cache
                .get(i)
                .and_then(|c| c.microcode.as_ref())
                .map(|_| i);
        }
        let cached = Cached {
            program: program.to_vec(),
            microcode: Microcode::new(&body.to_program()).ok(),
        };
        let ok = cached.microcode.is_some();
        let i = if self.cache.len() < INLINE_CACHE {
            self.cache.push(cached);
            self.cache.len() - 1
        } else {
            let i = self.evict % INLINE_CACHE;
            self.evict = self.evict.wrapping_add(1);
            if let Some(slot) = self.cache.get_mut(i) {
                *slot = cached;
            }
            i
        };
        ok.then_some(i)
    }
}

/// The slot of an installable opcode.
fn installed_slot(opcode: u8) -> Option<usize> {
    INSTALLED
        .contains(&opcode)
        .then(|| usize::from(opcode - INSTALLED.start()))
}

/// A router's [`Micro`] lent to one packet ([`Micro::gate`]): the [`Extension`] esp-proto
/// calls for opcodes that are not built in.
#[derive(Debug)]
pub struct Gate<'a> {
    micro: &'a mut Micro,
    input: Option<usize>,
}

/// The abort every refusal of inline microcode reports.
const REFUSED: Abort = Abort::Malformed(InstrError::Opcode { opcode: OP_MICRO });

impl<T: Tables> Extension<T> for Gate<'_> {
    fn execute(
        &mut self,
        ctx: &mut Context<'_, T>,
        now: Instant,
        opcode: u8,
        operands: &mut [u8],
    ) -> Option<Result<Verdict, Abort>> {
        let micro = &mut *self.micro;
        if opcode == OP_MICRO {
            if !micro.policy.admits(self.input) {
                if micro.policy == InlinePolicy::Off {
                    micro.stats.refused_off += 1;
                } else {
                    micro.stats.refused_iface += 1;
                }
                return Some(Err(REFUSED));
            }
            let Ok(body) = Body::parse(operands) else {
                micro.stats.refused_malformed += 1;
                return Some(Err(REFUSED));
            };
            let Some(i) = micro.inline(body.program, &body) else {
                micro.stats.refused_verify += 1;
                return Some(Err(REFUSED));
            };
            let at = body.operands_at();
            micro.stats.inline_runs += 1;
            let Micro {
                cache,
                scratch,
                stats,
                ..
            } = micro;
            let code = cache.get(i).and_then(|c| c.microcode.as_ref())?;
            let words = operands.get_mut(at..)?;
            return Some(run(code, scratch, stats, ctx, now, words, opcode));
        }
        let Some(slot) = installed_slot(opcode) else {
            micro.stats.unknown_opcode += 1;
            return None;
        };
        let Micro {
            installed,
            scratch,
            stats,
            ..
        } = micro;
        let Some(entry) = installed.get_mut(slot).and_then(Option::as_mut) else {
            stats.unknown_opcode += 1;
            return None;
        };
        if !operands.len().is_multiple_of(8) || operands.len() / 8 > MAX_OPERANDS {
            stats.refused_operands += 1;
            return Some(Err(Abort::Malformed(InstrError::Length {
                opcode,
                expected: operands.len() / 8 * 8,
                actual: operands.len(),
            })));
        }
        stats.installed_runs += 1;
        entry.runs += 1;
        Some(run(
            &entry.microcode,
            scratch,
            stats,
            ctx,
            now,
            operands,
            opcode,
        ))
    }
}

/// Runs `code` on the 64-bit operands in `bytes`, writing them back on a verdict.
fn run<T: Tables>(
    code: &Microcode,
    scratch: &mut Scratch,
    stats: &mut MicroStats,
    ctx: &mut Context<'_, T>,
    now: Instant,
    bytes: &mut [u8],
    opcode: u8,
) -> Result<Verdict, Abort> {
    let mut words = [0u64; MAX_OPERANDS];
    let n = bytes.len() / 8;
    for (w, b) in words.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    }
    let operands = words.get_mut(..n).unwrap_or_default();
    let ran = code.run_in(scratch, ctx, now, operands);
    stats.instructions += u64::from(ran.executed);
    match ran.result {
        Ok(verdict) => {
            for (b, w) in bytes.chunks_exact_mut(8).zip(operands.iter()) {
                b.copy_from_slice(&w.to_be_bytes());
            }
            Ok(verdict)
        }
        Err(Failure::Abort(a)) => {
            stats.aborted += 1;
            Err(a)
        }
        Err(_) => {
            stats.failed += 1;
            Err(Abort::Malformed(InstrError::Opcode { opcode }))
        }
    }
}
