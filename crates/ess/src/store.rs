//! The store: Fig. 10's three tables, the `next`/`last` registers and the cleaner.

use core::fmt;

use crate::config::EssConfig;
use crate::hash::reduce;
#[cfg(feature = "alloc")]
use crate::tables::OwnedTables;
use crate::tables::{NIL, Tables, TagSlot, prepare};
use crate::time::{Clock, Instant};
use crate::{ConfigError, Tag, Value};

/// Expired entries `find_create` reclaims from the tail before it allocates: more than one,
/// so reclamation keeps ahead of creation without any cleaner call.
const RECLAIM_PER_CREATE: usize = 2;

/// A reference to one binding's record, returned by [`Ess::find`] and [`Ess::find_create`]
/// and taken by [`Ess::read`] and [`Ess::write`] (paper §5.1).
///
/// A handle is for one instruction: it stays valid until the next call that takes
/// `&mut self` other than [`Ess::write`] (a creation or a cleaner may reclaim the entry and
/// give it to another tag). A stale or foreign handle never panics: it reads or writes
/// whatever record is at its index, or nothing if the index is out of range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    index: u32,
    new: bool,
}

impl Handle {
    /// The index of the record in the value table (the paper's *n*-bit handle).
    pub const fn index(self) -> u32 {
        self.index
    }

    /// Whether [`Ess::find_create`] made this binding just now. A new binding holds
    /// `Value(0)` until written; the instruction that created it saw *nil*.
    pub const fn is_new(self) -> bool {
        self.new
    }
}

/// The store refused to create a binding: every entry holds a live binding, and live
/// bindings are never evicted early (paper §2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Full;

impl fmt::Display for Full {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ephemeral state store is full of live bindings")
    }
}

impl core::error::Error for Full {}

/// Running totals since the store was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Bindings created.
    pub created: u64,
    /// Creations refused with [`Full`].
    pub refused: u64,
    /// Expired entries reclaimed (by creations and by the cleaners).
    pub reclaimed: u64,
}

/// What one lookup cost: the result of [`Ess::probe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The binding, if the tag is bound.
    pub found: Option<Handle>,
    /// Tag-table entries examined (the paper's chain length *cl*, Table 1).
    pub entries_examined: u32,
}

/// An ephemeral state store (paper §2.3, §5): bindings of 64-bit [`Tag`]s to 64-bit
/// [`Value`]s that live exactly one lifetime τ from their creation.
///
/// # Calling order
///
/// Every method that depends on time takes `now`. Per ESP instruction, look the tag up
/// once — [`find`](Self::find) (read-only) or [`find_create`](Self::find_create) — then
/// [`read`](Self::read) and [`write`](Self::write) through the handle. Call
/// [`clean`](Self::clean) with a small budget from a periodic task (every tenth of a lifetime,
/// say, or at [`poll_timeout`](Self::poll_timeout)); creations reclaim on their own as well, so
/// a store that is never cleaned is still correct and still never refuses below its rate.
///
/// # Layout (Fig. 10)
///
/// * tag table, 2^n [`TagSlot`]s of 16 bytes: tag, expiry (low 32 bits of clock units),
///   chain index;
/// * value table, 2^n `u64`s at the same indices;
/// * hash table, h × 2^n `u32` indices into the tag table.
///
/// Entries are taken at `next` = `last + len` in creation order, which is also expiry order,
/// and reclaimed at `last`. A reclaimed entry is not unlinked from the middle of its chain:
/// chains run from newest to oldest, so a walk stops at the first link that does not lead to
/// an older live entry, or at the first expired one (everything after it is older still).
/// Reclaiming only clears the hash slot if the entry is its chain's head, so it costs O(1).
/// That keeps 24 bytes per binding plus 4 per hash slot: 32 bytes at h = 2.
pub struct Ess<T: Tables = DefaultTables> {
    config: EssConfig,
    tables: T,
    mask: u32,
    slots: u64,
    /// Oldest entry (the paper's `last` register).
    last: u32,
    /// Entries from `last` on that are not reclaimed yet; `next` = `last + len`.
    len: u32,
    /// Full expiry time, in clock units, of the newest entry. Every entry in the window
    /// expires within 2^32 units before it, so 32 stored bits recover the full time.
    horizon: u64,
    lifetime_units: u64,
    clock: Clock,
    counters: Counters,
}

/// The tables [`Ess`] uses by default: owned with `alloc`, borrowed without.
#[cfg(feature = "alloc")]
pub type DefaultTables = OwnedTables;
/// The tables [`Ess`] uses by default: owned with `alloc`, borrowed without.
#[cfg(not(feature = "alloc"))]
pub type DefaultTables = crate::tables::BorrowedTables<'static>;

#[cfg(feature = "alloc")]
impl Ess<OwnedTables> {
    /// A store with its tables allocated once, now, for `config`.
    pub fn new(config: EssConfig) -> Self {
        let tables = OwnedTables::new(&config);
        Self::build(config, tables)
    }
}

impl<T: Tables> Ess<T> {
    /// A store over tables the caller supplies; their lengths must match
    /// [`EssConfig::capacity`] (tag and value) and [`EssConfig::hash_slots`] (hash).
    pub fn with_tables(config: EssConfig, mut tables: T) -> Result<Self, ConfigError> {
        prepare(&config, &mut tables)?;
        Ok(Self::build(config, tables))
    }

    fn build(config: EssConfig, tables: T) -> Self {
        Ess {
            mask: (config.capacity() - 1) as u32,
            slots: config.hash_slots() as u64,
            last: 0,
            len: 0,
            horizon: 0,
            lifetime_units: config.lifetime_units(),
            clock: Clock::new(config.resolution_ticks()),
            counters: Counters::default(),
            config,
            tables,
        }
    }

    // ---- getters ----------------------------------------------------------------------

    /// The config the store was built with.
    pub fn config(&self) -> &EssConfig {
        &self.config
    }

    /// Bindings the store can hold at once.
    pub fn capacity(&self) -> usize {
        self.config.capacity()
    }

    /// Entries not yet reclaimed: live bindings plus expired ones the cleaner has not
    /// reached. Expired ones are invisible whether reclaimed or not.
    pub fn occupied(&self) -> usize {
        self.len as usize
    }

    /// Running totals of creations, refusals and reclamations.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Bytes of memory the store uses: its tables plus its registers.
    pub fn memory_bytes(&self) -> usize {
        let c = self.config.capacity();
        c * core::mem::size_of::<TagSlot>()
            + c * core::mem::size_of::<Value>()
            + self.config.hash_slots() * core::mem::size_of::<u32>()
            + core::mem::size_of::<Self>()
    }

    /// When the oldest unreclaimed entry expires: the next time [`clean`](Self::clean) has
    /// work. `None` if nothing is waiting.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let slot = self.tail()?;
        Some(Instant::from_ticks(
            self.clock.units_to_ticks(self.full_expiry(slot.expiry)),
        ))
    }

    // ---- lookups ----------------------------------------------------------------------

    /// Finds the live binding of `tag` at `now`, or `None` (*nil*).
    #[inline]
    pub fn find(&self, now: Instant, tag: Tag) -> Option<Handle> {
        self.walk(self.clock.effective_ticks(now), tag.0, self.bucket(tag.0))
            .0
    }

    /// [`find`](Self::find), also reporting how many tag-table entries it examined.
    pub fn probe(&self, now: Instant, tag: Tag) -> Probe {
        let (found, entries_examined) =
            self.walk(self.clock.effective_ticks(now), tag.0, self.bucket(tag.0));
        Probe {
            found,
            entries_examined,
        }
    }

    /// Finds the live binding of `tag`, creating it (value 0, lifetime τ from `now`) if there
    /// is none: one atomic lookup per instruction (paper §5.1).
    ///
    /// Before allocating, reclaims up to two expired entries at `last`, so a store sized by
    /// [`EssConfig::for_rate`] never refuses below its rate even if no cleaner runs.
    ///
    /// # Errors
    ///
    /// [`Full`] if `tag` is unbound and every entry holds a live binding. Nothing is evicted.
    pub fn find_create(&mut self, now: Instant, tag: Tag) -> Result<Handle, Full> {
        let units = self.clock.advance(now);
        let now_ticks = self.clock.effective_ticks(now);
        for _ in 0..RECLAIM_PER_CREATE {
            if !self.reclaim_tail_if_expired(now_ticks) {
                break;
            }
        }
        let bucket = self.bucket(tag.0);
        if let (Some(found), _) = self.walk(now_ticks, tag.0, bucket) {
            return Ok(found);
        }
        if self.len > self.mask {
            self.counters.refused += 1;
            return Err(Full);
        }
        let expiry = units.saturating_add(self.lifetime_units);
        // Expiries are kept in 32 bits relative to the newest. Entries 2^32 units older than
        // the new one (left by a store idle that long) are long expired: reclaim them before
        // their stored bits become ambiguous. Amortised O(1): each entry is reclaimed once.
        while let Some(tail) = self.tail() {
            if self.full_expiry(tail.expiry).saturating_add(1 << 32) > expiry {
                break;
            }
            self.reclaim_tail();
        }
        let index = self.last.wrapping_add(self.len) & self.mask;
        let (tags, values, hash) = self.tables.split_mut();
        let head = hash.get(bucket).copied().unwrap_or(NIL);
        if let (Some(slot), Some(value), Some(h)) = (
            tags.get_mut(index as usize),
            values.get_mut(index as usize),
            hash.get_mut(bucket),
        ) {
            *slot = TagSlot {
                tag: tag.0,
                expiry: expiry as u32,
                chain: head,
            };
            *value = Value(0);
            *h = index;
        }
        self.horizon = expiry;
        self.len += 1;
        self.counters.created += 1;
        Ok(Handle { index, new: true })
    }

    /// The value bound through `handle`. See [`Handle`] for how long a handle is valid.
    #[inline]
    pub fn read(&self, handle: Handle) -> Value {
        self.tables
            .values()
            .get(handle.index as usize)
            .copied()
            .unwrap_or(Value(0))
    }

    /// Binds `value` through `handle`. The binding's lifetime does not change: writes never
    /// extend it.
    #[inline]
    pub fn write(&mut self, handle: Handle, value: Value) {
        if let Some(v) = self.tables.split_mut().1.get_mut(handle.index as usize) {
            *v = value;
        }
    }

    /// The paper's `get(tag)`: the value bound to `tag` at `now`, or `None` for *nil*.
    #[inline]
    pub fn get(&self, now: Instant, tag: Tag) -> Option<Value> {
        self.find(now, tag).map(|h| self.read(h))
    }

    /// The paper's `put(tag, value)`: binds `value` to `tag`, creating the binding if there
    /// is none. An existing binding keeps its expiry.
    ///
    /// # Errors
    ///
    /// [`Full`] as for [`find_create`](Self::find_create).
    #[inline]
    pub fn put(&mut self, now: Instant, tag: Tag, value: Value) -> Result<(), Full> {
        let h = self.find_create(now, tag)?;
        self.write(h, value);
        Ok(())
    }

    // ---- the cleaner --------------------------------------------------------------------

    /// Reclaims at most `budget` expired entries, oldest first: bounded work per call.
    /// Returns how many it reclaimed.
    pub fn clean(&mut self, now: Instant, budget: usize) -> usize {
        self.clock.advance(now);
        let now_ticks = self.clock.effective_ticks(now);
        let mut n = 0;
        while n < budget && self.reclaim_tail_if_expired(now_ticks) {
            n += 1;
        }
        n
    }

    /// Reclaims every expired entry. Returns how many it reclaimed.
    pub fn clean_all(&mut self, now: Instant) -> usize {
        self.clean(now, usize::MAX)
    }

    // ---- internals ----------------------------------------------------------------------

    #[inline(always)]
    pub(crate) fn bucket(&self, tag: u64) -> usize {
        reduce(self.config.key().hash(tag), self.slots) as usize
    }

    /// The full expiry, in units, of an entry in the window whose low bits are `stored`.
    #[inline(always)]
    fn full_expiry(&self, stored: u32) -> u64 {
        self.horizon
            .saturating_sub(u64::from((self.horizon as u32).wrapping_sub(stored)))
    }

    #[inline(always)]
    fn is_expired(&self, stored: u32, now_ticks: u64) -> bool {
        self.clock.units_to_ticks(self.full_expiry(stored)) <= now_ticks
    }

    /// The entries a lookup in `bucket` examines at `now_ticks`, newest first.
    #[inline(always)]
    fn chain(&self, bucket: usize, now_ticks: u64) -> Chain<'_, T> {
        Chain {
            ess: self,
            tags: self.tables.tags(),
            newest: self.last.wrapping_add(self.len).wrapping_sub(1),
            cur: self.tables.hash().get(bucket).copied().unwrap_or(NIL),
            min_age: 0,
            now_ticks,
        }
    }

    /// Walks `bucket`'s chain for `tag`; returns the handle and the entries examined.
    #[inline(always)]
    pub(crate) fn walk(&self, now_ticks: u64, tag: u64, bucket: usize) -> (Option<Handle>, u32) {
        let mut examined = 0u32;
        for link in self.chain(bucket, now_ticks) {
            examined += 1;
            if link.expired {
                break;
            }
            if link.tag == tag {
                return (
                    Some(Handle {
                        index: link.index,
                        new: false,
                    }),
                    examined,
                );
            }
        }
        (None, examined)
    }

    fn tail(&self) -> Option<TagSlot> {
        if self.len == 0 {
            None
        } else {
            self.tables.tags().get(self.last as usize).copied()
        }
    }

    fn reclaim_tail_if_expired(&mut self, now_ticks: u64) -> bool {
        match self.tail() {
            Some(slot) if self.is_expired(slot.expiry, now_ticks) => {
                self.reclaim_tail();
                true
            }
            _ => false,
        }
    }

    /// Reclaims the entry at `last`. It is the oldest entry, so the last live one on its
    /// chain: only the hash slot can still point at it as a head.
    fn reclaim_tail(&mut self) {
        let Some(slot) = self.tail() else { return };
        let bucket = self.bucket(slot.tag);
        let index = self.last;
        if let Some(h) = self.tables.split_mut().2.get_mut(bucket)
            && *h == index
        {
            *h = NIL;
        }
        self.last = index.wrapping_add(1) & self.mask;
        self.len -= 1;
        self.counters.reclaimed += 1;
    }

    /// Visits every bucket's chain as `find` would see it at `now`: calls `f(bucket, chain)`
    /// with the number of visible entries and whether the walk ended on an expired entry.
    pub(crate) fn for_each_chain(&self, now: Instant, mut f: impl FnMut(usize, u32, bool)) {
        let now_ticks = self.clock.effective_ticks(now);
        for bucket in 0..self.tables.hash().len() {
            let (mut visible, mut stale) = (0u32, false);
            for link in self.chain(bucket, now_ticks) {
                if link.expired {
                    stale = true;
                } else {
                    visible += 1;
                }
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
/// Age 0 is the newest entry in the window. A link is followed only to an *older* entry
/// *inside* the window: anything else was reclaimed (and maybe reused by another chain)
/// after the link was made. The walk ends after the first expired entry, since everything
/// further down is older and so expired too. Ages strictly grow, so a walk takes at most
/// `len` steps whatever the tables hold.
struct Chain<'a, T: Tables> {
    ess: &'a Ess<T>,
    tags: &'a [TagSlot],
    newest: u32,
    cur: u32,
    min_age: u32,
    now_ticks: u64,
}

impl<T: Tables> Iterator for Chain<'_, T> {
    type Item = Link;

    #[inline(always)]
    fn next(&mut self) -> Option<Link> {
        if self.cur == NIL {
            return None;
        }
        let age = self.newest.wrapping_sub(self.cur) & self.ess.mask;
        if age < self.min_age || age >= self.ess.len {
            return None;
        }
        let slot = self.tags.get(self.cur as usize)?;
        let link = Link {
            index: self.cur,
            tag: slot.tag,
            expired: self.ess.is_expired(slot.expiry, self.now_ticks),
        };
        self.cur = if link.expired { NIL } else { slot.chain };
        self.min_age = age + 1;
        Some(link)
    }
}

impl<T: Tables> fmt::Debug for Ess<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ess")
            .field("config", &self.config)
            .field("last", &self.last)
            .field("occupied", &self.len)
            .field("horizon", &self.horizon)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashKey;

    fn t(x: u64) -> Instant {
        Instant::from_ticks(x)
    }

    fn store(log2: u8, lifetime: u64, res: u64) -> Ess {
        Ess::new(EssConfig::new(log2, lifetime, res, HashKey::from_seed(42)).unwrap())
    }

    #[test]
    fn get_put_and_nil() {
        let mut s = store(4, 100, 1);
        assert_eq!(s.get(t(0), Tag(5)), None);
        s.put(t(0), Tag(5), Value(0)).unwrap();
        assert_eq!(
            s.get(t(0), Tag(5)),
            Some(Value(0)),
            "a bound zero is not nil"
        );
        s.put(t(3), Tag(5), Value(u64::MAX)).unwrap();
        assert_eq!(s.get(t(4), Tag(5)), Some(Value(u64::MAX)));
    }

    #[test]
    fn lifetime_is_fixed_from_creation_and_writes_do_not_extend_it() {
        let mut s = store(4, 100, 10);
        s.put(t(25), Tag(1), Value(1)).unwrap(); // created in unit 2, expires at unit 12 = t120
        for now in [30, 60, 119] {
            s.put(t(now), Tag(1), Value(now)).unwrap();
            assert!(!s.find_create(t(now), Tag(1)).unwrap().is_new());
        }
        assert_eq!(s.get(t(119), Tag(1)), Some(Value(119)));
        assert_eq!(s.get(t(120), Tag(1)), None);
        // Invisible at once, although nothing reclaimed it.
        assert_eq!(s.occupied(), 1);
        assert_eq!(s.poll_timeout(), Some(t(120)));
        assert_eq!(s.clean_all(t(120)), 1);
        assert_eq!(s.poll_timeout(), None);
    }

    #[test]
    fn find_create_reports_new_bindings() {
        let mut s = store(4, 100, 1);
        let h = s.find_create(t(0), Tag(9)).unwrap();
        assert!(h.is_new());
        assert_eq!(s.read(h), Value(0));
        s.write(h, Value(3));
        let h2 = s.find_create(t(1), Tag(9)).unwrap();
        assert_eq!((h2.is_new(), h2.index()), (false, h.index()));
        assert_eq!(s.read(h2), Value(3));
    }

    #[test]
    fn full_store_refuses_and_never_evicts() {
        let mut s = store(3, 100, 1);
        for i in 0..8 {
            s.put(t(i), Tag(i), Value(i)).unwrap();
        }
        assert_eq!(s.put(t(50), Tag(100), Value(0)), Err(Full));
        assert_eq!(s.counters().refused, 1);
        for i in 0..8 {
            assert_eq!(s.get(t(50), Tag(i)), Some(Value(i)));
            s.put(t(50), Tag(i), Value(i + 1)).unwrap(); // existing tags still writable
        }
        // Tag 0 expires at t100: its entry is reused at once.
        s.put(t(100), Tag(100), Value(7)).unwrap();
        assert_eq!(s.get(t(100), Tag(0)), None);
        assert_eq!(s.get(t(100), Tag(100)), Some(Value(7)));
        assert_eq!(s.get(t(100), Tag(1)), Some(Value(2)));
    }

    #[test]
    fn reused_entries_do_not_confuse_old_chains() {
        // A tiny hash table (h = 0.5) so chains merge and entries are reused while older
        // chains still point at them.
        let config = EssConfig::new(2, 4, 1, HashKey::from_seed(1))
            .unwrap()
            .with_hash_ratio(crate::HashRatio::HALF);
        let mut s = Ess::new(config);
        let mut now = 0;
        for round in 0..50u64 {
            for i in 0..4 {
                let tag = Tag(round * 4 + i);
                s.put(t(now), tag, Value(tag.0)).unwrap();
                assert_eq!(s.get(t(now), tag), Some(Value(tag.0)));
                now += 1;
            }
            for i in 0..4 {
                let tag = Tag(round * 4 + i);
                let expect = if now < tag.0 + 4 {
                    Some(Value(tag.0))
                } else {
                    None
                };
                // Created at tick `tag` (one per tick), visible for 4 ticks.
                assert_eq!(s.get(t(now), tag), expect);
            }
        }
    }

    #[test]
    fn idle_for_2_pow_32_units_does_not_resurrect() {
        let mut s = store(4, 10, 1);
        s.put(t(0), Tag(1), Value(1)).unwrap();
        s.put(t(5), Tag(2), Value(2)).unwrap();
        let later = (1u64 << 32) + 3;
        assert_eq!(s.get(t(later), Tag(1)), None);
        s.put(t(later), Tag(3), Value(3)).unwrap();
        assert_eq!(s.get(t(later), Tag(1)), None);
        assert_eq!(s.get(t(later), Tag(2)), None);
        assert_eq!(s.get(t(later), Tag(3)), Some(Value(3)));
        assert_eq!(s.occupied(), 1);
    }

    #[test]
    fn time_stepping_back_is_ignored() {
        let mut s = store(4, 10, 1);
        s.put(t(100), Tag(1), Value(1)).unwrap();
        s.put(t(200), Tag(2), Value(2)).unwrap(); // tag 1 expired at 110
        assert_eq!(
            s.get(t(105), Tag(1)),
            None,
            "the store's time is the latest seen"
        );
        s.put(t(50), Tag(3), Value(3)).unwrap(); // created at 200
        assert_eq!(s.get(t(209), Tag(3)), Some(Value(3)));
        assert_eq!(s.get(t(210), Tag(3)), None);
    }

    #[test]
    fn foreign_handles_do_not_panic() {
        let mut big = store(8, 10, 1);
        let h = big.find_create(t(0), Tag(1)).unwrap();
        let mut small = store(1, 10, 1);
        let bogus = Handle {
            index: 200,
            new: false,
        };
        assert_eq!(small.read(bogus), Value(0));
        small.write(bogus, Value(1));
        let _ = small.read(h);
    }

    #[test]
    fn memory_is_at_most_32_bytes_per_binding_at_h2() {
        let s = store(20, 10, 1);
        let per = s.memory_bytes() as f64 / s.capacity() as f64;
        assert!(per <= 32.001, "{per} bytes per binding");
    }
}
