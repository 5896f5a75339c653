//! The services microcode calls. `ess.get`, `ess.put` and `ess.count` read an ESP
//! context's store and buffer their writes in a journal, applied only when the program ends
//! without aborting — so, like a built-in instruction, a microcoded one either changes the
//! store as a whole or not at all. `esp.param` reads the context's node parameters;
//! `wide.and`, `wide.or` and `wide.xor` are the 64-bit bitwise operators SNAP lacks.

use alloc::vec::Vec;

use ess::{Ess, Instant, Tables, Tag, Value};
use snap_vm::value::Value as SnapValue;
use snap_vm::vm::{Fault, Frame, ServiceSet};

use esp_proto::exec::{Abort, Env};
use esp_proto::instr::Param;

/// The services of one run over `store`, at `now`, with the writes it made so far.
pub(crate) struct Journal<'s, T: Tables> {
    store: &'s Ess<T>,
    env: &'s Env,
    now: Instant,
    writes: Writes,
}

impl<'s, T: Tables> Journal<'s, T> {
    pub(crate) fn new(store: &'s Ess<T>, env: &'s Env, now: Instant) -> Self {
        Journal {
            store,
            env,
            now,
            writes: Writes::new(),
        }
    }

    /// The value `tag` has as the program sees it: its journaled write, else the store's.
    fn read(&self, tag: Tag) -> Option<Value> {
        match self.writes.get(tag) {
            Some(v) => Some(v),
            None => self.store.get(self.now, tag),
        }
    }

    fn write(&mut self, tag: Tag, value: Value) {
        self.writes.set(tag, value);
    }

    /// The writes, to [`commit`].
    pub(crate) fn into_writes(self) -> Writes {
        self.writes
    }
}

/// Writes kept in place before any goes to the heap: the paper's instructions write one
/// or two tags, so a run allocates nothing for its journal.
const INLINE: usize = 4;

/// One journaled write.
#[derive(Clone, Copy, Debug)]
struct Entry {
    tag: Tag,
    value: Value,
    /// Whether the tag was unbound when the journal was committed.
    fresh: bool,
}

/// Tags written and their latest values, in the order first written: the first
/// [`INLINE`] in place, the rest on the heap.
pub(crate) struct Writes {
    inline: [Entry; INLINE],
    len: usize,
    spill: Vec<Entry>,
}

impl Writes {
    fn new() -> Writes {
        let empty = Entry {
            tag: Tag(0),
            value: Value(0),
            fresh: false,
        };
        Writes {
            inline: [empty; INLINE],
            len: 0,
            spill: Vec::new(),
        }
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        let here = self.inline.get(..self.len).unwrap_or_default();
        here.iter().chain(self.spill.iter())
    }

    fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        let here = self.inline.get_mut(..self.len).unwrap_or_default();
        here.iter_mut().chain(self.spill.iter_mut())
    }

    fn get(&self, tag: Tag) -> Option<Value> {
        self.entries().find(|e| e.tag == tag).map(|e| e.value)
    }

    fn set(&mut self, tag: Tag, value: Value) {
        if let Some(e) = self.entries_mut().find(|e| e.tag == tag) {
            e.value = value;
            return;
        }
        let e = Entry {
            tag,
            value,
            fresh: false,
        };
        match self.inline.get_mut(self.len) {
            Some(slot) => {
                *slot = e;
                self.len += 1;
            }
            None => self.spill.push(e),
        }
    }
}

/// A tag or value popped as a 64-bit word (small or wide integer).
fn pop_word(frame: &mut Frame<'_>) -> Result<u64, Fault> {
    Ok(frame.pop_wide()? as u64)
}

impl<T: Tables> ServiceSet for Journal<'_, T> {
    fn call(&mut self, name: &[u8], _now: u64, frame: &mut Frame<'_>) -> Result<(), Fault> {
        match name {
            b"ess.get" => {
                let tag = Tag(pop_word(frame)?);
                match self.read(tag) {
                    Some(v) => {
                        let w = frame.alloc_wide(v.0 as i64)?;
                        frame.push(w)
                    }
                    None => frame.push(SnapValue::int(0)),
                }
            }
            b"ess.put" => {
                let value = Value(pop_word(frame)?);
                let tag = Tag(pop_word(frame)?);
                self.write(tag, value);
                frame.push(SnapValue::int(1))
            }
            b"ess.count" => {
                let tag = Tag(pop_word(frame)?);
                let n = self.read(tag).map_or(0, |v| v.0).saturating_add(1);
                self.write(tag, Value(n));
                let w = frame.alloc_wide(n as i64)?;
                frame.push(w)
            }
            b"esp.param" => {
                let index = frame.pop_wide()?;
                let param = usize::try_from(index)
                    .ok()
                    .and_then(|i| Param::ALL.get(i))
                    .ok_or(Fault::Service)?;
                let w = frame.alloc_wide(self.env.param(*param) as i64)?;
                frame.push(w)
            }
            b"wide.and" | b"wide.or" | b"wide.xor" => {
                // SNAP has no bitwise instructions on wide integers (and no wide shift to
                // build them from), yet ESP's COLLECT folds with and/or/xor on 64 bits.
                let b = frame.pop_wide()?;
                let a = frame.pop_wide()?;
                let r = match name {
                    b"wide.and" => a & b,
                    b"wide.or" => a | b,
                    _ => a ^ b,
                };
                let w = frame.alloc_wide(r)?;
                frame.push(w)
            }
            _ => Err(Fault::NoService),
        }
    }
}

/// Applies `writes` to `store` at `now`, all or nothing, with the store calls a built-in
/// makes: each binding is reached with [`Ess::find_create`]. A single creation is its own
/// room check, as in COUNT or COMPARE (a refusal counted once); several are checked first
/// with [`Ess::reserve`], as RCHLD does. Creations come before the other writes, so a
/// refusal leaves the store unchanged.
///
/// # Errors
///
/// [`Abort::StoreFull`] if there is no room; the store is unchanged.
pub(crate) fn commit<T: Tables>(
    store: &mut Ess<T>,
    now: Instant,
    writes: &mut Writes,
) -> Result<(), Abort> {
    let here = writes.inline.get(..writes.len).unwrap_or_default();
    if let ([one], []) = (here, writes.spill.as_slice()) {
        // One binding: its own room check, nothing to order.
        let h = store.find_create(now, one.tag)?;
        store.write(h, one.value);
        return Ok(());
    }
    let mut need = 0;
    for e in writes.entries_mut() {
        e.fresh = store.find(now, e.tag).is_none();
        need += usize::from(e.fresh);
    }
    if need > 1 {
        store.reserve(now, need)?;
    }
    let creations = writes.entries().filter(|e| e.fresh);
    let updates = writes.entries().filter(|e| !e.fresh);
    for e in creations.chain(updates) {
        let h = store.find_create(now, e.tag)?;
        store.write(h, e.value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    // Test harness: panics are the failure reports.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    extern crate std;

    use alloc::format;
    use alloc::string::String;

    use ess::{EssConfig, HashKey};

    use crate::Microcode;
    use esp_proto::exec::{Context, Verdict};

    use super::*;

    /// More writes than fit in place: the ones on the heap are read back, rewritten and
    /// committed like the others, in one piece.
    #[test]
    fn writes_beyond_the_inline_ones_spill_and_commit() {
        let n = INLINE as u64 + 3;
        // Bind tags 1..=n to 10 × tag, then rewrite the last one to its own read + 1
        // and the first to the last's new value; forward.
        let mut text = String::new();
        for t in 1..=n {
            text += &format!("push {t}\npush {}\ncalls \"ess.put\"\npop\n", 10 * t);
        }
        text += &format!(
            "push {n}\npush {n}\ncalls \"ess.get\"\npush 1\nwadd\ncalls \"ess.put\"\npop\n"
        );
        text += &format!("push 1\npush {n}\ncalls \"ess.get\"\ncalls \"ess.put\"\npop\n");
        text += "push 0\n";
        let code = Microcode::assemble(&text).unwrap();
        let mut store = Ess::new(EssConfig::new(5, 100, 1, HashKey::from_seed(3)).unwrap());
        let env = Env::new(1, HashKey::from_seed(9));
        let now = Instant::from_ticks(1);
        let verdict = code.run(&mut Context::new(&mut store, &env, 1), now, &mut []);
        assert_eq!(verdict, Ok(Verdict::Forward));
        let last = 10 * n + 1;
        assert_eq!(store.get(now, Tag(1)), Some(Value(last)));
        for t in 2..n {
            assert_eq!(store.get(now, Tag(t)), Some(Value(10 * t)), "tag {t}");
        }
        assert_eq!(store.get(now, Tag(n)), Some(Value(last)));
        assert_eq!(store.counters().created, n);
    }
}
