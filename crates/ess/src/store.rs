//! The store: Fig. 10's tables, the `next`/`last` registers and the cleaner.

use core::fmt;

use crate::Instant;
use crate::config::EssConfig;
use crate::hash::reduce;
#[cfg(feature = "alloc")]
use crate::tables::OwnedTables;
use crate::tables::{Entry, Tables, prepare};
use crate::time::Clock;
use crate::{ConfigError, Tag, Value};

/// Expired entries `find_create` reclaims from the tail before it allocates: more than one,
/// so reclamation keeps ahead of creation without any cleaner call.
const RECLAIM_PER_CREATE: usize = 2;

/// Expiry times are stored as their low 32 bits: an entry whose expiry is this far before
/// the newest one's must be reclaimed before its bits could alias.
const ALIAS_SPAN: u64 = 1 << 32;

/// A reference to one binding's record, returned by [`Ess::find`] and [`Ess::find_create`]
/// and taken by [`Ess::read`] and [`Ess::write`] (paper §5.1).
///
/// A handle is for one instruction. A handle to a binding live at `now` stays valid across
/// further calls at the same `now` (they reclaim only entries expired at `now`); after a
/// call with a later `now`, the binding may have expired and its entry been given to another
/// tag. A stale or foreign handle never panics: it reads or writes
/// whatever record is at its index, or nothing if the index is out of range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    pub(crate) index: u32,
    pub(crate) new: bool,
}

impl Handle {
    /// The index of the record in the tag and value tables (the paper's *n*-bit handle).
    pub const fn index(self) -> u32 {
        self.index
    }

    /// Whether [`Ess::find_create`] made this binding just now. A new binding holds
    /// `Value(0)` until written; the instruction that created it saw *nil*.
    pub const fn is_new(self) -> bool {
        self.new
    }

    #[cfg(test)]
    #[cfg(feature = "alloc")]
    pub(crate) const fn default_for_tests() -> Handle {
        Handle {
            index: 0,
            new: false,
        }
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
    /// Creations refused with [`Full`] (by [`Ess::find_create`], or a whole
    /// [`Ess::reserve`]).
    pub refused: u64,
    /// Expired entries reclaimed (by creations and by the cleaners).
    pub reclaimed: u64,
}

/// What one lookup cost: the result of [`Ess::probe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The binding, if the tag is bound.
    pub found: Option<Handle>,
    /// Entries examined (the paper's chain length *cl*, Table 1).
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
/// * the tag and value tables, 2^n [`Entry`]s of 24 bytes at the same index (interleaved:
///   see [`Entry`]): tag, value, expiry (low 32 bits of clock units), chain index;
/// * the hash table, h × 2^n `u32` indices into the entries.
///
/// Entries are taken at `next` = `last + len` in creation order, which is also expiry order,
/// and reclaimed at `last`. Reclaiming touches nothing but the `last` register: the entry
/// is not unlinked from its chain and its hash slot is not cleared. Lookups cope instead.
/// Hash slots and chain links name an entry by 32 bits of its creation number, which gives
/// its index (creation `c` sits at `c mod 2^n`) and, against the count of creations, its
/// age; a walk follows a reference only to an entry still in the window and older than the
/// one it leaves, and stops at the first expired entry (everything after it is older
/// still). So reclaiming costs no memory access at all, a creation touches one random line
/// (its hash slot) unless its chain really holds live entries, and a binding costs 24 bytes
/// plus 4 per hash slot: 32 bytes at h = 2.
pub struct Ess<T: Tables = DefaultTables> {
    config: EssConfig,
    pub(crate) tables: T,
    pub(crate) mask: u32,
    slots: u64,
    /// Oldest entry (the paper's `last` register).
    pub(crate) last: u32,
    /// Entries from `last` on that are not reclaimed yet; `next` = `last + len`.
    pub(crate) len: u32,
    /// Full expiry time, in clock units, of the newest entry. Every entry in the window
    /// expires less than 2^32 units before it, so 32 stored bits recover the full time.
    horizon: u64,
    lifetime_units: u64,
    pub(crate) clock: Clock,
    pub(crate) counters: Counters,
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
    /// [`EssConfig::capacity`] (entries) and [`EssConfig::hash_slots`] (hash).
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
        self.config.capacity() * core::mem::size_of::<Entry>()
            + self.config.hash_slots() * core::mem::size_of::<u32>()
            + core::mem::size_of::<Self>()
    }

    /// When the oldest unreclaimed entry expires: the next time [`clean`](Self::clean) has
    /// work. `None` if nothing is waiting.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tail = self.tail()?;
        Some(Instant::from_ticks(
            self.clock.units_to_ticks(self.full_expiry(tail.expiry)),
        ))
    }

    // ---- lookups ----------------------------------------------------------------------

    /// Finds the live binding of `tag` at `now`, or `None` (*nil*).
    #[inline]
    pub fn find(&self, now: Instant, tag: Tag) -> Option<Handle> {
        self.walk(
            self.cut(self.clock.units_at(now)),
            tag.0,
            self.bucket(tag.0),
        )
        .found
    }

    /// [`find`](Self::find), also reporting how many entries it examined.
    pub fn probe(&self, now: Instant, tag: Tag) -> Probe {
        let w = self.walk(
            self.cut(self.clock.units_at(now)),
            tag.0,
            self.bucket(tag.0),
        );
        Probe {
            found: w.found,
            entries_examined: w.examined,
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
        self.find_create_in(now, tag, self.bucket(tag.0))
    }

    /// [`find_create`](Self::find_create) with the tag's hash slot already computed.
    #[inline(always)]
    pub(crate) fn find_create_in(
        &mut self,
        now: Instant,
        tag: Tag,
        bucket: usize,
    ) -> Result<Handle, Full> {
        let units = self.clock.advance(now);
        let cut = self.cut(units);
        let tail_live = self.reclaim(cut, RECLAIM_PER_CREATE);
        let walk = self.walk(cut, tag.0, bucket);
        if let Some(found) = walk.found {
            return Ok(found);
        }
        if self.len > self.mask {
            self.counters.refused += 1;
            return Err(Full);
        }
        let expiry = units.saturating_add(self.lifetime_units);
        if !tail_live {
            // Entries 2^32 units older than the new one (left by a store idle that long) are
            // long expired: reclaim them before their stored bits alias. Amortised O(1):
            // each entry is reclaimed once. A live tail is never that old.
            self.reclaim_aliasing(expiry);
        }
        let index = self.last.wrapping_add(self.len) & self.mask;
        // Creation number `created` takes index `created mod 2^n` (`next`); the hash slot
        // refers to it as `created + 1` (see `NONE`).
        let reference = (self.counters.created as u32).wrapping_add(1);
        let (entries, hash) = self.tables.split_mut();
        if let (Some(entry), Some(slot)) = (entries.get_mut(index as usize), hash.get_mut(bucket)) {
            *entry = Entry {
                tag: tag.0,
                value: Value(0),
                expiry: expiry as u32,
                chain: walk.head,
            };
            *slot = reference;
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
            .entries()
            .get(handle.index as usize)
            .map_or(Value(0), |e| e.value)
    }

    /// Binds `value` through `handle`. The binding's lifetime does not change: writes never
    /// extend it.
    #[inline]
    pub fn write(&mut self, handle: Handle, value: Value) {
        if let Some(e) = self.tables.split_mut().0.get_mut(handle.index as usize) {
            e.value = value;
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

    /// Makes sure `n` bindings can be created at `now`, reclaiming up to `n` expired entries
    /// (bounded work). Returns whether there is room: if so, the next `n` calls to
    /// [`find_create`](Self::find_create) at `now` cannot fail. An instruction that creates
    /// several bindings checks this first, so it either creates them all or none.
    pub fn make_room(&mut self, now: Instant, n: usize) -> bool {
        let units = self.clock.advance(now);
        self.reclaim(self.cut(units), n);
        self.capacity() - self.len as usize >= n
    }

    /// [`make_room`](Self::make_room) for `n` creations that stand or fall together (one
    /// instruction's): no room counts once in [`Counters::refused`], as one refused
    /// [`find_create`](Self::find_create) would.
    ///
    /// # Errors
    ///
    /// [`Full`] if the `n` bindings do not fit beside the live ones; nothing is created.
    pub fn reserve(&mut self, now: Instant, n: usize) -> Result<(), Full> {
        if self.make_room(now, n) {
            Ok(())
        } else {
            self.counters.refused += 1;
            Err(Full)
        }
    }

    // ---- the cleaner --------------------------------------------------------------------

    /// Reclaims at most `budget` expired entries, oldest first: bounded work per call.
    /// Returns how many it reclaimed.
    pub fn clean(&mut self, now: Instant, budget: usize) -> usize {
        let units = self.clock.advance(now);
        let before = self.counters.reclaimed;
        self.reclaim(self.cut(units), budget);
        (self.counters.reclaimed - before) as usize
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

    /// How far below the horizon an entry's expiry must be to have passed at clock unit
    /// `now_units`: an entry is expired iff `horizon − expiry ≥ cut`, i.e. its full expiry is
    /// at or before `now_units`.
    #[inline(always)]
    pub(crate) fn cut(&self, now_units: u64) -> u64 {
        self.horizon.saturating_sub(now_units)
    }

    /// How far below the horizon an entry whose low expiry bits are `stored` expires.
    #[inline(always)]
    pub(crate) fn depth(&self, stored: u32) -> u64 {
        u64::from((self.horizon as u32).wrapping_sub(stored))
    }

    /// The full expiry, in units, of an entry in the window whose low bits are `stored`.
    #[inline(always)]
    fn full_expiry(&self, stored: u32) -> u64 {
        self.horizon.saturating_sub(self.depth(stored))
    }

    fn tail(&self) -> Option<Entry> {
        if self.len == 0 {
            None
        } else {
            self.tables.entries().get(self.last as usize).copied()
        }
    }

    /// Reclaims up to `budget` expired entries from the tail. Returns whether it stopped at a
    /// live entry (rather than the budget or an empty store).
    fn reclaim(&mut self, cut: u64, budget: usize) -> bool {
        let entries = self.tables.entries();
        let hz = self.horizon as u32;
        let (mut last, mut len, mut n) = (self.last, self.len, 0usize);
        let mut stopped_live = false;
        while n < budget && len > 0 {
            let Some(e) = entries.get(last as usize) else {
                break;
            };
            if u64::from(hz.wrapping_sub(e.expiry)) < cut {
                stopped_live = true;
                break;
            }
            last = last.wrapping_add(1) & self.mask;
            len -= 1;
            n += 1;
        }
        self.last = last;
        self.len = len;
        self.counters.reclaimed += n as u64;
        stopped_live
    }

    /// Reclaims tail entries whose expiry is 2^32 or more units before `expiry`.
    fn reclaim_aliasing(&mut self, expiry: u64) {
        while let Some(tail) = self.tail() {
            if expiry.saturating_sub(self.full_expiry(tail.expiry)) < ALIAS_SPAN {
                break;
            }
            self.last = self.last.wrapping_add(1) & self.mask;
            self.len -= 1;
            self.counters.reclaimed += 1;
        }
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
#[cfg(feature = "alloc")]
mod tests {
    use super::*;
    use crate::HashKey;

    fn t(x: u64) -> Instant {
        Instant::from_ticks(x)
    }

    #[allow(clippy::unwrap_used)] // a test helper: a bad literal config is a bug
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
    fn end_of_time_keeps_live_bindings() {
        // Found by the fuzzer: expiries saturate at u64::MAX; nothing live may be reclaimed.
        let mut s = store(1, 10, 1);
        let end = t(u64::MAX - 5);
        s.put(end, Tag(1), Value(1)).unwrap();
        s.put(end, Tag(2), Value(2)).unwrap();
        assert_eq!(s.get(end, Tag(1)), Some(Value(1)));
        assert_eq!(s.get(end, Tag(2)), Some(Value(2)));
        assert_eq!(s.put(end, Tag(3), Value(3)), Err(Full));
        assert_eq!(s.get(t(u64::MAX), Tag(1)), None);
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
