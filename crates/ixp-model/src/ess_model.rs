//! The ephemeral state store on the machine (ESP paper §5–§6).
//!
//! The ESS of Fig. 10 is three tables — hash, tag and value — each placeable in SRAM or
//! SDRAM ([`EssPlacement`]; the paper measured all-SRAM, all-SDRAM, and the split with the
//! hash table in SRAM and the rest in SDRAM). Its four calls ([`EssCall`]) become sequences
//! of field accesses ([`EssCall::accesses`]) whose 32-bit words are the counts of Table 1:
//!
//! | call | accesses | what they touch |
//! |---|---|---|
//! | `find` | 5·cl | per entry examined: the link naming it (hash slot, then the previous entry's chain field), its tag (64 bits), expiry and chain |
//! | `find_create` | 5 + 5·cl | the walk, then the new entry's tag, expiry and chain, and the hash slot |
//! | `read` | 2 | the 64-bit value |
//! | `write` | 2 | the 64-bit value |
//!
//! A walk that examines no entry (an empty slot) reads the slot alone: 1 access. Table 1's
//! count of 5 per entry includes re-reading the chain field as the next link, which a
//! tighter implementation would keep in a register; we follow the paper's count.
//! `find_create` also reads the `last` register and bumps `next` in scratch (shared with
//! the cleaner and other threads; §5.2: "must coordinate with the cleaner") — two scratch
//! references that Table 1 does not count as table accesses.
//!
//! Each field access becomes one microengine reference of the field's width (a 64-bit tag
//! or value is one 2-word reference, as `sram[read, $x, addr, 2]` would move it) preceded
//! by [`Params::ess_step_cycles`] of address arithmetic and comparison
//! ([`EssCall::program`]): the thread swaps out on every one. One reference per field is
//! our rule for turning the paper's access counts into references; it is applied to every
//! call alike. Chain lengths are not assumed: [`ChainSample::measure`] fills the real
//! [`ess::Ess`] to a given fraction with a given *h* and records how many entries each
//! `find` examined.
//!
//! The same accesses, one stalling 32-bit load or store each, are what the StrongARM core
//! makes in [`crate::strongarm::call_steps`].

use alloc::vec::Vec;
use core::fmt;

use ess::{Ess, EssConfig, HashKey, HashRatio, Instant, Tag};
use sansio::SplitMix64;

use crate::engine::{Program, Step};
use crate::params::{Memory, Params};

/// One of the three ESS tables of Fig. 10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EssTable {
    /// The hash table: h·2^n links into the tag table.
    Hash,
    /// The tag table: tag, expiry and chain per entry.
    Tag,
    /// The value table: one 64-bit value per entry.
    Value,
}

/// Where each table lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EssPlacement {
    /// Memory of the hash table.
    pub hash: Memory,
    /// Memory of the tag table.
    pub tag: Memory,
    /// Memory of the value table.
    pub value: Memory,
}

impl EssPlacement {
    /// Everything in SRAM (Table 2, first column).
    pub const SRAM: EssPlacement = EssPlacement {
        hash: Memory::Sram,
        tag: Memory::Sram,
        value: Memory::Sram,
    };
    /// Everything in SDRAM (Table 2, second column).
    pub const SDRAM: EssPlacement = EssPlacement {
        hash: Memory::Sdram,
        tag: Memory::Sdram,
        value: Memory::Sdram,
    };
    /// The paper's split (Table 2, third column): "part of the ESS on the SRAM (the hash
    /// table) and the other part on the SDRAM (the tag table)". The paper does not say
    /// where the value table went; we put it beside the tag table it shares an index with,
    /// in SDRAM, whose 64-bit bus moves a value in one transfer.
    pub const SPLIT: EssPlacement = EssPlacement {
        hash: Memory::Sram,
        tag: Memory::Sdram,
        value: Memory::Sdram,
    };

    /// The three placements of Table 2, with their column names.
    pub const TABLE2: [(&'static str, EssPlacement); 3] = [
        ("SRAM", EssPlacement::SRAM),
        ("SDRAM", EssPlacement::SDRAM),
        ("SRAM & SDRAM", EssPlacement::SPLIT),
    ];

    /// The memory holding `table`.
    pub fn memory(&self, table: EssTable) -> Memory {
        match table {
            EssTable::Hash => self.hash,
            EssTable::Tag => self.tag,
            EssTable::Value => self.value,
        }
    }
}

/// One field access of an ESS call: one memory reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// The table touched.
    pub table: EssTable,
    /// 32-bit words of the field: 2 for a tag or value, 1 for a link, expiry or chain.
    pub words: u32,
    /// Whether it writes.
    pub write: bool,
}

impl Access {
    const fn read(table: EssTable, words: u32) -> Access {
        Access {
            table,
            words,
            write: false,
        }
    }
    const fn write(table: EssTable, words: u32) -> Access {
        Access {
            table,
            words,
            write: true,
        }
    }
}

/// An ESS call with the chain length it walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EssCall {
    /// `find(tag)`, examining `examined` entries (cl; the last one matches on a hit).
    Find {
        /// Entries examined.
        examined: u32,
    },
    /// `find_create(tag)`: the walk over `examined` entries, then a creation if `created`.
    FindCreate {
        /// Entries examined.
        examined: u32,
        /// Whether the tag was unbound and an entry was allocated.
        created: bool,
    },
    /// `read(handle)`.
    Read,
    /// `write(handle, value)`.
    Write,
}

impl EssCall {
    /// The field accesses of the call, in order.
    pub fn accesses(&self) -> Vec<Access> {
        let mut v = Vec::new();
        let walk = |v: &mut Vec<Access>, examined: u32| {
            if examined == 0 {
                v.push(Access::read(EssTable::Hash, 1));
            }
            for i in 0..examined {
                // The link naming this entry: the hash slot, then the previous entry's chain.
                let link = if i == 0 {
                    EssTable::Hash
                } else {
                    EssTable::Tag
                };
                v.push(Access::read(link, 1));
                // Tag (64 bits), expiry, chain.
                v.extend([
                    Access::read(EssTable::Tag, 2),
                    Access::read(EssTable::Tag, 1),
                    Access::read(EssTable::Tag, 1),
                ]);
            }
        };
        match *self {
            EssCall::Find { examined } => walk(&mut v, examined),
            EssCall::FindCreate { examined, created } => {
                walk(&mut v, examined);
                if created {
                    // The new entry's tag, expiry and chain, then its hash slot.
                    v.extend([
                        Access::write(EssTable::Tag, 2),
                        Access::write(EssTable::Tag, 1),
                        Access::write(EssTable::Tag, 1),
                        Access::write(EssTable::Hash, 1),
                    ]);
                }
            }
            EssCall::Read => v.push(Access::read(EssTable::Value, 2)),
            EssCall::Write => v.push(Access::write(EssTable::Value, 2)),
        }
        v
    }

    /// How many 32-bit table accesses the call makes (Table 1's third column).
    pub fn access_count(&self) -> u32 {
        self.accesses().iter().map(|a| a.words).sum()
    }

    /// Table 1's formula for this call: 5·cl, 5 + 5·cl, 2, 2 (cl ≥ 1).
    pub fn table1_formula(&self) -> u32 {
        match *self {
            EssCall::Find { examined } => 5 * examined,
            EssCall::FindCreate { examined, created } => 5 * examined + if created { 5 } else { 0 },
            EssCall::Read | EssCall::Write => 2,
        }
    }

    /// The call as microengine steps with the tables placed by `placement`: each access
    /// one reference of its width after [`Params::ess_step_cycles`] of arithmetic, plus
    /// the scratch references of an allocation.
    pub fn steps(&self, params: &Params, placement: &EssPlacement) -> Vec<Step> {
        let mut steps = Vec::new();
        if let EssCall::FindCreate { created: true, .. } = self {
            // Read `last` (is the store full?) and test-and-increment `next`: scratch.
            steps.extend([
                Step::Compute(params.ess_step_cycles),
                Step::read(Memory::Scratch, 1),
                Step::Compute(params.ess_step_cycles),
                Step::read(Memory::Scratch, 1),
            ]);
        }
        for a in self.accesses() {
            let memory = placement.memory(a.table);
            steps.push(Step::Compute(params.ess_step_cycles));
            steps.push(if a.write {
                Step::write(memory, a.words)
            } else {
                Step::read(memory, a.words)
            });
        }
        steps
    }

    /// [`steps`](Self::steps) as a one-call program.
    pub fn program(&self, params: &Params, placement: &EssPlacement) -> Program {
        Program::new(self.steps(params, placement))
    }
}

impl fmt::Display for EssCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EssCall::Find { examined } => write!(f, "find(cl = {examined})"),
            EssCall::FindCreate { examined, created } => write!(
                f,
                "find_create(cl = {examined}{})",
                if *created { ", new" } else { "" }
            ),
            EssCall::Read => f.write_str("read()"),
            EssCall::Write => f.write_str("write()"),
        }
    }
}

/// The ESS cleaner of §6 as a periodic thread's program: check the entry at `last`
/// (its expiry word, in the tag table) `entries` times, reclaiming each by advancing
/// `last` in scratch, then stop at the first live one (one more expiry read).
pub fn cleaner_program(params: &Params, placement: &EssPlacement, entries: u32) -> Program {
    let mut steps = Vec::new();
    steps.extend([
        Step::Compute(params.ess_step_cycles),
        Step::read(Memory::Scratch, 1),
    ]);
    for _ in 0..=entries {
        steps.push(Step::Compute(params.ess_step_cycles));
        steps.push(Step::read(placement.tag, 1));
    }
    steps.extend([
        Step::Compute(params.ess_step_cycles),
        Step::write(Memory::Scratch, 1),
    ]);
    // The code is one loop however many entries it reclaims.
    Program::new(steps).with_code_words(16)
}

/// How many entries `find` examined over many lookups in a real [`ess::Ess`]: index k of a
/// histogram counts lookups that examined k entries.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ChainSample {
    /// Lookups of bound tags, by entries examined.
    pub hits: Vec<u64>,
    /// Lookups of unbound tags, by entries examined.
    pub misses: Vec<u64>,
}

/// [`ChainSample::measure`] was asked for an impossible store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleError {
    /// The ESS configuration was refused (capacity 2^log2 out of range).
    Config,
    /// The fill fraction is not within 0 ..= 1.
    Fill,
}

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SampleError::Config => "ESS configuration refused",
            SampleError::Fill => "fill fraction must be within 0 and 1",
        })
    }
}

impl core::error::Error for SampleError {}

impl ChainSample {
    /// Fills a 2^`log2` store with hash ratio `h` to `fill` (0 ..= 1) with tags drawn from
    /// `seed`, looks every bound tag up and as many unbound ones, and counts the entries
    /// each lookup examined.
    ///
    /// # Errors
    ///
    /// [`SampleError`] for a capacity the store refuses or a fill outside 0 ..= 1.
    pub fn measure(log2: u8, h: HashRatio, fill: f64, seed: u64) -> Result<Self, SampleError> {
        if !(0.0..=1.0).contains(&fill) {
            return Err(SampleError::Fill);
        }
        let config = EssConfig::new(log2, 1 << 20, 1, HashKey::from_seed(seed))
            .map_err(|_| SampleError::Config)?
            .with_hash_ratio(h);
        let mut ess = Ess::new(config);
        let capacity = 1u64 << log2;
        let want = (capacity as f64 * fill) as u64;
        let now = Instant::ZERO;
        let mut rng = SplitMix64::new(seed ^ 0x1A2B_3C4D);
        let mut tags = Vec::new();
        while (tags.len() as u64) < want {
            let t = Tag(rng.next_u64());
            match ess.find_create(now, t) {
                Ok(handle) if handle.is_new() => tags.push(t),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let mut sample = ChainSample::default();
        let bump = |hist: &mut Vec<u64>, k: u32| {
            let k = k as usize;
            if hist.len() <= k {
                hist.resize(k + 1, 0);
            }
            if let Some(c) = hist.get_mut(k) {
                *c += 1;
            }
        };
        for &t in &tags {
            bump(&mut sample.hits, ess.probe(now, t).entries_examined);
        }
        for _ in 0..tags.len().max(1024) {
            let p = ess.probe(now, Tag(rng.next_u64()));
            if p.found.is_none() {
                bump(&mut sample.misses, p.entries_examined);
            }
        }
        Ok(sample)
    }

    /// Mean entries examined by a hit (0 if no hits).
    pub fn mean_hit(&self) -> f64 {
        mean(&self.hits)
    }

    /// Mean entries examined by a miss (0 if no misses).
    pub fn mean_miss(&self) -> f64 {
        mean(&self.misses)
    }
}

fn mean(hist: &[u64]) -> f64 {
    let n: u64 = hist.iter().sum();
    if n == 0 {
        return 0.0;
    }
    let total: u64 = hist.iter().enumerate().map(|(k, c)| k as u64 * c).sum();
    total as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    const P: Params = Params::IXP1200;

    #[test]
    fn access_counts_follow_table1() {
        for cl in 1..8 {
            for call in [
                EssCall::Find { examined: cl },
                EssCall::FindCreate {
                    examined: cl,
                    created: true,
                },
                EssCall::FindCreate {
                    examined: cl,
                    created: false,
                },
            ] {
                assert_eq!(call.access_count(), call.table1_formula(), "{call}");
            }
        }
        assert_eq!(EssCall::Read.access_count(), 2);
        assert_eq!(EssCall::Write.access_count(), 2);
        // An empty slot: one read of the slot.
        assert_eq!(EssCall::Find { examined: 0 }.access_count(), 1);
        assert_eq!(
            EssCall::FindCreate {
                examined: 0,
                created: true
            }
            .access_count(),
            6
        );
    }

    #[test]
    fn placement_routes_tables() {
        let call = EssCall::FindCreate {
            examined: 1,
            created: true,
        };
        let split = call.program(&P, &EssPlacement::SPLIT);
        // Hash slot read and write in SRAM; the entry's 4 + 4 words in SDRAM.
        assert_eq!(split.words_in(Memory::Sram), 2);
        assert_eq!(split.words_in(Memory::Sdram), 8);
        assert_eq!(split.words_in(Memory::Scratch), 2);
        let sram = call.program(&P, &EssPlacement::SRAM);
        assert_eq!(sram.words_in(Memory::Sram), 10);
        // Four field reads, four field writes, two scratch references.
        assert_eq!(sram.references(), 10);
        // Every access and scratch reference is preceded by its arithmetic.
        assert_eq!(sram.steps().len(), 20);
    }

    #[test]
    fn unloaded_times_are_sums_of_parameters() {
        // One SRAM field = step + issue + latency = 4 + 1 + 20, plus a cycle per extra word.
        let per =
            u64::from(P.ess_step_cycles + P.reference_issue_cycles + P.sram_read_latency_cycles);
        let find = EssCall::Find { examined: 1 }.program(&P, &EssPlacement::SRAM);
        assert_eq!(find.unloaded_cycles(&P), 4 * per + 1 + 1);
        // A 64-bit value in SDRAM is one transfer of the 64-bit bus: no extra cycle.
        let read_sdram = EssCall::Read.program(&P, &EssPlacement::SDRAM);
        assert_eq!(read_sdram.unloaded_cycles(&P), 4 + 1 + 40 + 1);
    }

    #[test]
    fn cleaner_reads_expiries_where_the_tag_table_is() {
        let c = cleaner_program(&P, &EssPlacement::SPLIT, 3);
        assert_eq!(c.words_in(Memory::Sdram), 4);
        assert_eq!(c.words_in(Memory::Scratch), 2);
        assert_eq!(c.code_words(), 16);
    }

    #[test]
    fn chain_samples_come_from_the_real_store() {
        let s = ChainSample::measure(10, HashRatio::ONE, 1.0, 7).unwrap();
        assert_eq!(s.hits.iter().sum::<u64>(), 1024);
        // Separate chaining at load 1: a hit examines about 1 + 1/2 entries.
        assert!((s.mean_hit() - 1.5).abs() < 0.1, "{}", s.mean_hit());
        assert!((s.mean_miss() - 1.0).abs() < 0.15, "{}", s.mean_miss());
        let two = ChainSample::measure(10, HashRatio::TWO, 1.0, 7).unwrap();
        assert!(two.mean_hit() < s.mean_hit());
        assert_eq!(
            ChainSample::measure(10, HashRatio::ONE, 1.5, 7),
            Err(SampleError::Fill)
        );
        assert_eq!(
            ChainSample::measure(0, HashRatio::ONE, 0.5, 7),
            Err(SampleError::Config)
        );
        assert!(SampleError::Fill.to_string().contains("fill"));
    }
}
