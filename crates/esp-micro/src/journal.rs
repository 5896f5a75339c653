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
    /// Tags written and their latest values, in the order first written.
    writes: Vec<(Tag, Value)>,
}

impl<'s, T: Tables> Journal<'s, T> {
    pub(crate) fn new(store: &'s Ess<T>, env: &'s Env, now: Instant) -> Self {
        Journal {
            store,
            env,
            now,
            writes: Vec::new(),
        }
    }

    /// The value `tag` has as the program sees it: its journaled write, else the store's.
    fn read(&self, tag: Tag) -> Option<Value> {
        match self.writes.iter().find(|(t, _)| *t == tag) {
            Some(&(_, v)) => Some(v),
            None => self.store.get(self.now, tag),
        }
    }

    fn write(&mut self, tag: Tag, value: Value) {
        match self.writes.iter_mut().find(|(t, _)| *t == tag) {
            Some(slot) => slot.1 = value,
            None => self.writes.push((tag, value)),
        }
    }

    /// The writes, to [`commit`].
    pub(crate) fn into_writes(self) -> Vec<(Tag, Value)> {
        self.writes
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
    writes: &[(Tag, Value)],
) -> Result<(), Abort> {
    let fresh: Vec<bool> = writes
        .iter()
        .map(|(t, _)| store.find(now, *t).is_none())
        .collect();
    let need = fresh.iter().filter(|f| **f).count();
    if need > 1 {
        store.reserve(now, need)?;
    }
    let creations = writes.iter().zip(&fresh).filter(|(_, f)| **f);
    let updates = writes.iter().zip(&fresh).filter(|(_, f)| !**f);
    for (&(tag, value), _) in creations.chain(updates) {
        let h = store.find_create(now, tag)?;
        store.write(h, value);
    }
    Ok(())
}
