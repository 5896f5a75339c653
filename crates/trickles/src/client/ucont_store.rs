//! The client's store of standard user continuations (§4.1–§4.3).
//!
//! The client cannot verify user continuations (the application's key is the server's),
//! but it reads their standard fields to decide which one each request carries:
//!
//! * a request carrying client data goes with the [`Input`](UserContinuation::Input)
//!   continuation that has consumed the most input, and a response whose input
//!   continuation consumed less than the request carried sends the rest again;
//! * a request for output goes with the [`Output`](UserContinuation::Output)
//!   continuation whose `valid_start..valid_end` covers its first range, and its ranges
//!   stay inside that; an output continuation's SKIP stretch (`valid_end..skip_to`, the
//!   unused rest of the object's region, §5.2) is never requested, and the reassembly
//!   passes over it;
//! * an [`Overflow`](UserContinuation::Overflow) notice (§5.2) holds delivery where the
//!   object's region ends and goes back to the server once, as a request of its own in
//!   the client's input stream; the output continuation that answers it (`follows` set)
//!   splices the object's next part in there;
//! * otherwise a request carries the user continuation that arrived with the transport
//!   continuation it spends (opaque application state, or none).

use core::cell::Cell;

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use super::Client;
use crate::app::UserContinuation;

/// Most overflow notices a connection answers (objects × parts beyond the first).
const MAX_NOTICES: usize = 4096;

/// Output continuations by `valid_start`, and the best input continuation.
#[derive(Debug, Default)]
pub(super) struct UcontStore {
    /// `valid_start` → (`valid_end`, `skip_to`, sealed bytes).
    outputs: BTreeMap<u64, (u64, u64, Vec<u8>)>,
    /// (`consumed`, sealed bytes) of the input continuation that consumed the most.
    input: Option<(u64, Vec<u8>)>,
    /// The last whole user-continuation field learned that asked for nothing (no SKIP,
    /// splice, overflow notice or input report): the same bytes again are skipped.
    inert: Option<alloc::boxed::Box<[u8]>>,
    /// The `at` of every overflow notice already sent back.
    notices: BTreeSet<u64>,
    /// The last lookup in `outputs` ([`UcontStore::entry_for`]): cleared whenever an
    /// output continuation is filed. A bulk transfer asks about offsets in one object
    /// several times per packet.
    memo: Cell<Option<Memo>>,
    /// Output continuations filed so far: a change of it means places may have changed.
    generation: u64,
}

/// An entry of [`UcontStore::outputs`] and the offsets it answers for.
#[derive(Clone, Copy, Debug)]
struct Memo {
    /// Its `valid_start`, the key.
    start: u64,
    /// The next entry's key (`u64::MAX` if none): offsets in `start..next` find this one.
    next: u64,
    /// Its `valid_end`.
    end: u64,
    /// Its `skip_to`.
    skip_to: u64,
}

/// What a user continuation tells the client's delivery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Learned {
    /// A SKIP stretch: `valid_end..skip_to`.
    pub(super) skip: Option<(u64, u64)>,
    /// A spliced part: (`follows`, `valid_start`, the end of its region `skip_to`).
    pub(super) splice: Option<(u64, u64, u64)>,
    /// A new overflow notice at this offset: hold there, and send the notice back.
    pub(super) overflow: Option<u64>,
    /// An input continuation's `consumed`.
    pub(super) consumed: Option<u64>,
}

impl Client {
    /// Files a response's user continuation (one, or a bundle) and acts on what the
    /// standard ones say: SKIP stretches, overflow notices (hold, and send the notice back
    /// in the input stream, §5.2), spliced parts, input consumed. Returns the `consumed`
    /// of the first input continuation among them.
    pub(super) fn take_uconts(&mut self, field: &[u8]) -> Option<u64> {
        if field.is_empty() || self.uconts.inert.as_deref() == Some(field) {
            // Nothing, or the same bytes as a field already learned that asked for nothing
            // (a bulk transfer's responses all carry its one output continuation): learning
            // them again would change nothing (outputs are only ever added).
            return None;
        }
        let members = crate::app::unbundle(field).unwrap_or_else(|| alloc::vec![field]);
        let mut first = None;
        let mut inert = true;
        for ucont in members {
            let learned = self.uconts.learn(ucont);
            inert &= learned == Learned::default();
            if let Some((from, to)) = learned.skip {
                self.recv.skip(from, to);
            }
            if let Some(at) = learned.overflow {
                self.recv.hold(at);
                self.out.push_framed(ucont);
            }
            if let Some((at, to, part_end)) = learned.splice {
                self.recv.splice(at, to, part_end);
            }
            if let Some(consumed) = learned.consumed {
                self.out.input_consumed(consumed);
                first = first.or(Some(consumed));
            }
        }
        if inert {
            self.uconts.inert = Some(field.into());
        }
        first
    }
}

/// Where an offset of the server's output stands, by the output continuations known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Inside a known object: `valid_start..valid_end`.
    Inside(u64, u64),
    /// In a known SKIP stretch (the unused rest of an object's region), ending here.
    Skipped(u64),
    /// Not covered by any output continuation the client has.
    Unknown,
}

impl UcontStore {
    /// Files `ucont` (from any response) by its standard fields; others are ignored.
    pub(super) fn learn(&mut self, ucont: &[u8]) -> Learned {
        let mut learned = Learned::default();
        match UserContinuation::parse(ucont) {
            Ok((UserContinuation::Input { consumed, .. }, _)) => {
                if self.input.as_ref().is_none_or(|(c, _)| consumed > *c) {
                    self.input = Some((consumed, ucont.to_vec()));
                }
                learned.consumed = Some(consumed);
            }
            Ok((
                UserContinuation::Output {
                    valid_start,
                    valid_end,
                    skip_to,
                    follows,
                    ..
                },
                _,
            )) => {
                self.memo.set(None);
                self.generation += 1;
                self.outputs
                    .insert(valid_start, (valid_end, skip_to, ucont.to_vec()));
                learned.skip = (skip_to > valid_end).then_some((valid_end, skip_to));
                learned.splice = follows.map(|at| (at, valid_start, skip_to));
            }
            // At most MAX_NOTICES: each one queues a request (responses carry no MAC the
            // client can check, so a forger must not grow the send queue without bound).
            Ok((UserContinuation::Overflow { at, .. }, _)) if self.notices.len() < MAX_NOTICES => {
                learned.overflow = self.notices.insert(at).then_some(at);
            }
            _ => {}
        }
        learned
    }

    /// The input continuation to send data with.
    pub(super) fn input(&self) -> Option<&[u8]> {
        self.input.as_ref().map(|(_, u)| u.as_slice())
    }

    /// The output continuation covering byte `offset`, with its `valid_end`.
    pub(super) fn output_for(&self, offset: u64) -> Option<(u64, &[u8])> {
        let m = self.entry_for(offset).filter(|m| offset < m.end)?;
        self.outputs
            .get(&m.start)
            .map(|(end, _, u)| (*end, u.as_slice()))
    }

    /// The entry of `outputs` with the greatest key at or below `offset`, remembered.
    fn entry_for(&self, offset: u64) -> Option<Memo> {
        if let Some(m) = self.memo.get()
            && m.start <= offset
            && offset < m.next
        {
            return Some(m);
        }
        let (&start, &(end, skip_to, _)) = self.outputs.range(..=offset).next_back()?;
        let next = start
            .checked_add(1)
            .and_then(|after| self.outputs.range(after..).next())
            .map_or(u64::MAX, |(&k, _)| k);
        let m = Memo {
            start,
            next,
            end,
            skip_to,
        };
        self.memo.set(Some(m));
        Some(m)
    }

    /// Whether any output continuation is known: from then on the client asks only for
    /// bytes inside known output regions.
    pub(super) fn has_outputs(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// How many output continuations were filed so far (see `Client::settle`).
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// Where `offset` stands.
    pub(super) fn locate(&self, offset: u64) -> Place {
        match self.entry_for(offset) {
            Some(m) if offset < m.end => Place::Inside(m.start, m.end),
            Some(m) if offset < m.skip_to => Place::Skipped(m.skip_to),
            _ => Place::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `locate` answered before it remembered its last lookup.
    fn naive(store: &UcontStore, offset: u64) -> Place {
        match store.outputs.range(..=offset).next_back() {
            Some((&start, &(end, _, _))) if offset < end => Place::Inside(start, end),
            Some((_, &(_, skip_to, _))) if offset < skip_to => Place::Skipped(skip_to),
            _ => Place::Unknown,
        }
    }

    /// Remembered lookups answer as fresh ones, through entries filed in any order
    /// between queries (each filing forgets the memo, as `learn` does).
    #[test]
    fn remembered_lookups_match_fresh_ones() {
        let mut rng = sansio::SplitMix64::new(7);
        let mut store = UcontStore::default();
        for round in 0..2000 {
            if round % 50 == 0 {
                let start = rng.next_u64() % 100_000;
                let end = start + rng.next_u64() % 5_000;
                let skip_to = end + rng.next_u64() % 3_000;
                store.memo.set(None);
                store.outputs.insert(start, (end, skip_to, Vec::new()));
            }
            let offset = match rng.next_u64() % 4 {
                0 => u64::MAX - rng.next_u64() % 3,
                _ => rng.next_u64() % 110_000,
            };
            assert_eq!(
                store.locate(offset),
                naive(&store, offset),
                "offset {offset}"
            );
            let fresh = store
                .outputs
                .range(..=offset)
                .next_back()
                .filter(|(_, (end, _, _))| offset < *end)
                .map(|(_, (end, _, _))| *end);
            assert_eq!(store.output_for(offset).map(|(e, _)| e), fresh);
        }
    }
}
