//! Hash chains: how a lookup walks from a hash slot through the entries of its chain.
//!
//! Nothing here is ever unlinked. Hash slots and chain links name an entry by a
//! *reference* (32 bits of its creation number + 1, see `tables::NONE`), and a walk judges
//! each reference against the store's count of creations: it follows one only to an entry
//! still in the window and older than the entry it leaves, and it stops after the first
//! expired entry.

use crate::Instant;
use crate::store::{Ess, Handle};
use crate::tables::{Entry, NONE, Tables};

/// The outcome of one chain walk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Walk {
    pub(crate) found: Option<Handle>,
    pub(crate) examined: u32,
    /// A reference to the slot's head entry if it is live, so a new entry may link to
    /// it; else `NONE`.
    pub(crate) head: u32,
}

impl<T: Tables> Ess<T> {
    /// How many creations ago the entry `reference` names was made (1 for the newest), if
    /// it is still in the window; 0 if its entry has been reclaimed (and perhaps reused)
    /// since.
    ///
    /// Only 32 bits of the creation number are kept, so a reference left untouched for a
    /// multiple of 2^32 creations can pass as live again — an empty slot or end-of-chain
    /// link (`NONE`, 0) too, since 0 is also the reference of creation 2^32·k − 1. That
    /// costs a walk some entries of another chain (whose tags cannot match, and ages still
    /// strictly grow, so the walk ends) but never a wrong answer.
    #[inline(always)]
    fn age_of(&self, reference: u32) -> u32 {
        let d = (self.counters.created as u32)
            .wrapping_add(1)
            .wrapping_sub(reference);
        if d > self.len { 0 } else { d }
    }

    /// The index of the live head entry of `bucket`'s chain, if there is one.
    #[inline(always)]
    pub(crate) fn head(&self, bucket: usize) -> Option<u32> {
        let reference = self.tables.hash().get(bucket).copied().unwrap_or(NONE);
        (self.age_of(reference) != 0).then(|| reference.wrapping_sub(1) & self.mask)
    }

    /// The entries a lookup in `bucket` examines, newest first.
    #[inline(always)]
    fn chain(&self, bucket: usize, cut: u64) -> Chain<'_, T> {
        Chain {
            ess: self,
            entries: self.tables.entries(),
            cur: self.tables.hash().get(bucket).copied().unwrap_or(NONE),
            prev_age: 0,
            cut,
        }
    }

    /// Walks `bucket`'s chain for `tag`.
    #[inline(always)]
    pub(crate) fn walk(&self, cut: u64, tag: u64, bucket: usize) -> Walk {
        let chain = self.chain(bucket, cut);
        let head = chain.cur;
        let mut walk = Walk {
            found: None,
            examined: 0,
            head: NONE,
        };
        for link in chain {
            walk.examined += 1;
            if link.expired {
                break;
            }
            walk.head = head;
            if link.tag == tag {
                walk.found = Some(Handle {
                    index: link.index,
                    new: false,
                });
                break;
            }
        }
        walk
    }

    /// Visits every hash slot's chain as `find` would see it at `now`: calls
    /// `f(bucket, visible, stale)` with the number of visible entries and whether the walk
    /// ended on an entry it had to examine but could not use (expired, or another slot's).
    pub(crate) fn for_each_chain(&self, now: Instant, mut f: impl FnMut(usize, u32, bool)) {
        let cut = self.cut(self.clock.units_at(now));
        for bucket in 0..self.tables.hash().len() {
            let (mut visible, mut stale) = (0u32, false);
            for link in self.chain(bucket, cut) {
                // A stale reference that passes as live can lead into another slot's chain:
                // count only this slot's own entries (they all come before any foreign one).
                if link.expired || self.bucket(link.tag) != bucket {
                    stale = true;
                    break;
                }
                visible += 1;
            }
            f(bucket, visible, stale);
        }
    }
}

/// One entry a chain walk examines.
#[derive(Clone, Copy, Debug)]
struct Link {
    index: u32,
    tag: u64,
    expired: bool,
}

/// A walk down one hash chain, newest entry first.
///
/// A link is followed only to an entry still in the window and *older* than the one it
/// leaves (see [`Ess::age_of`]): anything else was reclaimed, and perhaps reused by another
/// chain, after the link was made. The walk ends after the first expired entry, since
/// everything further down is older and so expired too. Ages strictly grow, so a walk takes
/// at most `len` steps whatever the tables hold.
struct Chain<'a, T: Tables> {
    ess: &'a Ess<T>,
    entries: &'a [Entry],
    /// Reference to the next entry to examine.
    cur: u32,
    /// Age of the entry examined last (0 before the head).
    prev_age: u32,
    cut: u64,
}

impl<T: Tables> Iterator for Chain<'_, T> {
    type Item = Link;

    #[inline(always)]
    fn next(&mut self) -> Option<Link> {
        let age = self.ess.age_of(self.cur);
        if age <= self.prev_age {
            return None;
        }
        let index = self.cur.wrapping_sub(1) & self.ess.mask;
        let entry = self.entries.get(index as usize)?;
        let expired = self.ess.depth(entry.expiry) >= self.cut;
        self.cur = entry.chain;
        // After an expired entry everything is older, so expired too: stop there.
        self.prev_age = if expired { u32::MAX } else { age };
        Some(Link {
            index,
            tag: entry.tag,
            expired,
        })
    }
}

#[cfg(test)]
#[cfg(feature = "alloc")]
mod tests {
    use super::*;
    use crate::{EssConfig, HashKey, Tag, Value};

    fn t(x: u64) -> Instant {
        Instant::from_ticks(x)
    }

    #[test]
    fn reused_heads_do_not_lengthen_lookups() {
        // Reclaiming never clears hash slots, so heads go stale and their entries are
        // reused by other slots' tags. A lookup must read such a slot as empty (one entry
        // examined) and never walk into the other slot's chain.
        let config = EssConfig::new(6, 32, 1, HashKey::from_seed(8))
            .unwrap()
            .with_hash_ratio(crate::HashRatio::HALF);
        let mut s = Ess::new(config);
        let mut x = 1u64;
        let mut rand = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for now in 0..3_000u64 {
            s.put(t(now), Tag(rand()), Value(now)).unwrap();
            let cut = s.cut(s.clock.units_at(t(now)));
            for _ in 0..4 {
                let tag = rand();
                let bucket = s.bucket(tag);
                // The live entries whose tags belong to this slot: all a miss may examine,
                // plus one it cannot use (an expired entry or a foreign head).
                let own = (0..s.len)
                    .map(|i| s.tables.entries()[(s.last.wrapping_add(i) & s.mask) as usize])
                    .filter(|e| s.depth(e.expiry) < cut && s.bucket(e.tag) == bucket)
                    .count() as u32;
                let p = s.probe(t(now), Tag(tag));
                assert!(p.found.is_none());
                assert!(
                    p.entries_examined <= own + 1,
                    "examined {} with {own} own entries",
                    p.entries_examined
                );
            }
        }
    }

    /// Drives `s` and the model through `ticks` creations of tags from a small set,
    /// checking every answer; `poke` may tamper with the store before each step.
    fn churn_against_model(
        s: &mut Ess,
        ticks: core::ops::Range<u64>,
        mut poke: impl FnMut(&mut Ess, u64),
    ) {
        let mut o = crate::oracle::Oracle::new(s.config());
        let mut x = 7u64;
        for now in ticks {
            poke(s, now);
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let tag = Tag(x >> 58); // 64 tags: re-created after expiry, often live
            assert_eq!(
                s.put(t(now), tag, Value(now)),
                o.put(t(now), tag, Value(now))
            );
            let probe = Tag((x >> 52) & 63);
            assert_eq!(s.get(t(now), probe), o.get(t(now), probe), "t{now}");
            assert_eq!(s.chain_stats(t(now)).visible as usize, o.live(t(now)));
        }
    }

    #[allow(clippy::unwrap_used)] // a test helper: a bad literal config is a bug
    fn small_chained_store() -> Ess {
        Ess::new(
            EssConfig::new(5, 16, 1, HashKey::from_seed(3))
                .unwrap()
                .with_hash_ratio(crate::HashRatio::HALF),
        )
    }

    #[test]
    fn creation_numbers_wrap_at_2_pow_32() {
        // References keep 32 bits of the creation number: cross the wrap.
        let mut s = small_chained_store();
        s.counters.created = (1 << 32) - 1_000;
        s.last = (s.counters.created as u32) & s.mask; // next = created mod 2^n
        churn_against_model(&mut s, 0..3_000, |_, _| {});
        assert!(s.counters.created > 1 << 32);
    }

    #[test]
    fn stale_heads_that_pass_as_live_cost_probes_never_answers() {
        // A slot whose chain has no live entry may, after 2^32 creations, name another
        // chain's live entry. Simulate it: point every such slot at a random live entry.
        let mut s = small_chained_store();
        let mut x = 11u64;
        churn_against_model(&mut s, 0..5_000, |s, now| {
            let cut = s.cut(s.clock.units_at(t(now)));
            for bucket in 0..s.tables.hash().len() {
                let own = s
                    .chain(bucket, cut)
                    .take_while(|l| !l.expired)
                    .any(|l| s.bucket(l.tag) == bucket);
                if !own && s.len > 0 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let age = (x >> 33) as u32 % s.len + 1;
                    let reference = (s.counters.created as u32)
                        .wrapping_add(1)
                        .wrapping_sub(age);
                    s.tables.split_mut().1[bucket] = reference;
                }
            }
        });
    }
}
