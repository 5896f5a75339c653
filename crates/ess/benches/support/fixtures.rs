//! Stores filled or driven to a steady state, shared by the bench and the example.

use ess::{
    BATCH, BorrowedTables, Ess, EssConfig, Handle, HashKey, HashRatio, Instant, Tables, Tag, Value,
};

use super::huge::{HugeReport, huge_tables};
use super::{FifoStore, tag_of};

/// An ESS whose tables are in 2 MiB pages (see [`super::huge`]).
pub(crate) type HugeEss = Ess<BorrowedTables<'static>>;

/// Lifetime, in ticks, of bindings in the static fills: nothing expires during a bench.
pub(crate) const STATIC_LIFETIME: u64 = 1 << 30;
/// Churn calls `Ess::clean` every this many ticks ...
pub(crate) const CLEAN_EVERY: u64 = 1 << 15;
/// ... with this budget: twice the entries that expire in between, so it always keeps up.
pub(crate) const CLEAN_BUDGET: usize = 1 << 16;

const KEY_SEED: u64 = 0x5eed;

/// Bindings live in a store of 2^`log2` at `fill` percent.
pub(crate) fn live(log2: u8, fill: u8) -> u64 {
    (1u64 << log2) * u64::from(fill) / 100
}

fn config(log2: u8, lifetime: u64, h: HashRatio) -> EssConfig {
    EssConfig::new(log2, lifetime, 1, HashKey::from_seed(KEY_SEED))
        .expect("valid bench config")
        .with_hash_ratio(h)
}

/// A store of 2^`log2` bindings living `lifetime` ticks (one-tick clock), ratio `h`.
pub(crate) fn ess_store(log2: u8, lifetime: u64, h: HashRatio) -> Ess {
    Ess::new(config(log2, lifetime, h))
}

/// [`ess_store`] with its tables in 2 MiB pages, and where they are, to check that the
/// kernel gave huge pages.
pub(crate) fn huge_store(log2: u8, lifetime: u64, h: HashRatio) -> (HugeEss, HugeReport) {
    let config = config(log2, lifetime, h);
    let (tables, report) = huge_tables(&config).expect("anonymous map");
    let ess = Ess::with_tables(config, tables).expect("tables sized for the config");
    (ess, report)
}

/// An ESS holding tags `tag_of(0..n)`, tag `i` created at tick `i`, `n` = `fill`% of 2^`log2`.
/// Probe it at tick `n`.
pub(crate) fn ess_filled(log2: u8, fill: u8, h: HashRatio) -> Ess {
    fill_ess(ess_store(log2, STATIC_LIFETIME, h), log2, fill)
}

/// [`ess_filled`] with its tables in 2 MiB pages.
pub(crate) fn huge_filled(log2: u8, fill: u8, h: HashRatio) -> (HugeEss, HugeReport) {
    let (ess, report) = huge_store(log2, STATIC_LIFETIME, h);
    (fill_ess(ess, log2, fill), report)
}

fn fill_ess<T: Tables>(mut ess: Ess<T>, log2: u8, fill: u8) -> Ess<T> {
    for i in 0..live(log2, fill) {
        ess.put(Instant::from_ticks(i), Tag(tag_of(i)), Value(i))
            .expect("fill fits");
    }
    ess
}

/// The baseline holding the same bindings as [`ess_filled`].
pub(crate) fn fifo_filled(log2: u8, fill: u8) -> FifoStore {
    let mut store = FifoStore::new(1 << log2, STATIC_LIFETIME);
    for i in 0..live(log2, fill) {
        let (v, _) = store.find_create(i, tag_of(i)).expect("fill fits");
        *v = i;
    }
    store
}

/// An ESS in steady churn: one creation per tick, lifetime = `fill`% of capacity in ticks,
/// so that many bindings are live and every one expires and is reclaimed. Tag `tag_of(t)` is
/// created at tick `t`.
#[derive(Debug)]
pub(crate) struct EssChurn<T: Tables = ess::DefaultTables> {
    /// The store.
    pub(crate) ess: Ess<T>,
    /// The latest tick.
    pub(crate) now: u64,
}

impl EssChurn {
    /// A store of 2^`log2` at ratio `h`, driven for two lifetimes so it is in steady state.
    pub(crate) fn new(log2: u8, fill: u8, h: HashRatio) -> Self {
        EssChurn::steady(ess_store(log2, live(log2, fill), h), log2, fill)
    }
}

impl EssChurn<BorrowedTables<'static>> {
    /// [`EssChurn::new`] with the tables in 2 MiB pages.
    pub(crate) fn new_huge(log2: u8, fill: u8, h: HashRatio) -> (Self, HugeReport) {
        let (ess, report) = huge_store(log2, live(log2, fill), h);
        (EssChurn::steady(ess, log2, fill), report)
    }
}

impl<T: Tables> EssChurn<T> {
    fn steady(ess: Ess<T>, log2: u8, fill: u8) -> Self {
        let mut s = EssChurn { ess, now: 0 };
        for _ in 0..2 * live(log2, fill) {
            s.churn();
        }
        s
    }

    /// `find_create` of a fresh tag at the next tick (the store reclaims up to two expired
    /// entries itself).
    #[inline]
    pub(crate) fn create(&mut self) -> Handle {
        self.now += 1;
        let now = Instant::from_ticks(self.now);
        self.ess
            .find_create(now, Tag(tag_of(self.now)))
            .expect("steady churn never fills the store")
    }

    /// One router operation: `find_create` + `write` of a fresh tag, and every
    /// [`CLEAN_EVERY`] ticks a `clean` with budget [`CLEAN_BUDGET`].
    #[inline]
    pub(crate) fn churn(&mut self) {
        let h = self.create();
        self.ess.write(h, Value(self.now));
        if self.now.is_multiple_of(CLEAN_EVERY) {
            self.ess.clean(Instant::from_ticks(self.now), CLEAN_BUDGET);
        }
    }
}

impl<T: Tables> EssChurn<T> {
    /// [`BATCH`] router operations at once, as a router that reads packets in batches
    /// does: `find_create_batch` of the next [`BATCH`] fresh tags at the batch's last tick,
    /// a `write` to each, and the cleaner when its tick comes round.
    #[inline]
    pub(crate) fn churn_batch(&mut self) {
        let first = self.now + 1;
        self.now += BATCH as u64;
        let now = Instant::from_ticks(self.now);
        let tags: [Tag; BATCH] = core::array::from_fn(|i| Tag(tag_of(first + i as u64)));
        let mut out = [Err(ess::Full); BATCH];
        self.ess.find_create_batch(now, &tags, &mut out);
        for (i, r) in out.iter().enumerate() {
            let h = r.expect("steady churn never fills the store");
            self.ess.write(h, Value(first + i as u64));
        }
        if self.now % CLEAN_EVERY < BATCH as u64 {
            self.ess.clean(now, CLEAN_BUDGET);
        }
    }
}

/// The baseline in the same steady churn as [`EssChurn`].
#[derive(Debug)]
pub(crate) struct FifoChurn {
    /// The store.
    pub(crate) store: FifoStore,
    /// The latest tick.
    pub(crate) now: u64,
}

impl FifoChurn {
    /// A store for 2^`log2`, driven for two lifetimes so it is in steady state.
    pub(crate) fn new(log2: u8, fill: u8) -> Self {
        let lifetime = live(log2, fill);
        let mut s = FifoChurn {
            store: FifoStore::new(1 << log2, lifetime),
            now: 0,
        };
        for _ in 0..2 * lifetime {
            s.churn();
        }
        s
    }

    /// `find_create` of a fresh tag at the next tick (pops the expired FIFO front first).
    #[inline]
    pub(crate) fn create(&mut self) -> bool {
        self.now += 1;
        let (_, new) = self
            .store
            .find_create(self.now, tag_of(self.now))
            .expect("steady churn never fills the store");
        new
    }

    /// One router operation: `find_create` + write of a fresh tag.
    #[inline]
    pub(crate) fn churn(&mut self) {
        self.now += 1;
        let (v, _) = self
            .store
            .find_create(self.now, tag_of(self.now))
            .expect("steady churn never fills the store");
        *v = self.now;
    }
}
