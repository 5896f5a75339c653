//! A plain reference model of the store's visible behaviour, for tests and fuzzing.
//!
//! [`Oracle`] implements the paper's contract (§2.3) in the most obvious way — an ordered map
//! from tag to (value, expiry) — with none of Fig. 10's machinery. Property tests and the
//! fuzz target run the same operations on an [`Ess`](crate::Ess) and an `Oracle` and demand
//! identical answers. It is public so downstream crates (ESP instructions, SNAP services) can
//! test against it too.

use alloc::collections::BTreeMap;

use crate::Instant;
use crate::config::EssConfig;
use crate::store::Full;
use crate::{Tag, Value};

/// The reference model. Slow (O(n) to count live bindings) and obviously right.
///
/// ```
/// use ess::{EssConfig, HashKey, Instant, Tag, Value, oracle::Oracle};
/// let config = EssConfig::new(1, 10, 5, HashKey::from_seed(0))?;
/// let mut o = Oracle::new(&config);
/// o.put(Instant::from_ticks(7), Tag(1), Value(1))?; // created in unit 1: gone at t15
/// assert_eq!(o.get(Instant::from_ticks(14), Tag(1)), Some(Value(1)));
/// assert_eq!(o.get(Instant::from_ticks(15), Tag(1)), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Oracle {
    capacity: usize,
    lifetime_ticks: u64,
    resolution_ticks: u64,
    /// Latest time given to a mutating call.
    latest: u64,
    /// tag → (value, first clock unit in which the binding is gone).
    bindings: BTreeMap<u64, (Value, u64)>,
}

impl Oracle {
    /// An empty model with `config`'s capacity, lifetime and resolution.
    pub fn new(config: &EssConfig) -> Self {
        Oracle {
            capacity: config.capacity(),
            lifetime_ticks: config.lifetime_ticks(),
            resolution_ticks: config.resolution_ticks(),
            latest: 0,
            bindings: BTreeMap::new(),
        }
    }

    fn effective(&self, now: Instant) -> u64 {
        now.ticks().max(self.latest)
    }

    /// The clock unit of `now` (or of the latest time, if `now` is earlier).
    fn unit(&self, now: Instant) -> u64 {
        self.effective(now) / self.resolution_ticks
    }

    /// Records `now` as a mutating call does (the store's time never runs backwards),
    /// forgets expired bindings, and returns the current clock unit.
    pub fn observe(&mut self, now: Instant) -> u64 {
        self.latest = self.effective(now);
        let u = self.unit(now);
        self.bindings.retain(|_, (_, gone)| *gone > u);
        u
    }

    /// The value bound to `tag` at `now`, or `None` for *nil*.
    pub fn get(&self, now: Instant, tag: Tag) -> Option<Value> {
        let u = self.unit(now);
        self.bindings
            .get(&tag.0)
            .filter(|(_, gone)| *gone > u)
            .map(|(v, _)| *v)
    }

    /// Finds or creates `tag`'s binding; `Ok(true)` if it was created (with value 0).
    ///
    /// # Errors
    ///
    /// [`Full`] if `tag` is unbound and `capacity` bindings are live.
    pub fn find_create(&mut self, now: Instant, tag: Tag) -> Result<bool, Full> {
        let unit = self.observe(now);
        if self.bindings.contains_key(&tag.0) {
            return Ok(false);
        }
        if self.bindings.len() >= self.capacity {
            return Err(Full);
        }
        let gone = unit.saturating_add(self.lifetime_ticks / self.resolution_ticks);
        self.bindings.insert(tag.0, (Value(0), gone));
        Ok(true)
    }

    /// Overwrites the value of `tag`'s binding if it has one (its expiry stays).
    pub fn write(&mut self, tag: Tag, value: Value) {
        if let Some((v, _)) = self.bindings.get_mut(&tag.0) {
            *v = value;
        }
    }

    /// The paper's `put`.
    ///
    /// # Errors
    ///
    /// [`Full`] as for [`find_create`](Self::find_create).
    pub fn put(&mut self, now: Instant, tag: Tag, value: Value) -> Result<(), Full> {
        self.find_create(now, tag)?;
        self.write(tag, value);
        Ok(())
    }

    /// Bindings the model can hold at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Live bindings at `now`.
    pub fn live(&self, now: Instant) -> usize {
        let u = self.unit(now);
        self.bindings.values().filter(|(_, gone)| *gone > u).count()
    }

    /// The first tick at which `tag`'s binding is gone (saturating at the end of time), if
    /// it has one at `now`.
    pub fn expiry(&self, now: Instant, tag: Tag) -> Option<Instant> {
        let u = self.unit(now);
        self.bindings
            .get(&tag.0)
            .filter(|(_, gone)| *gone > u)
            .map(|(_, gone)| Instant::from_ticks(gone.saturating_mul(self.resolution_ticks)))
    }
}
