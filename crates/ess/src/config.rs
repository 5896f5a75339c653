//! Sizing and timing of a store.

use core::fmt;

use crate::hash::HashKey;

/// The largest supported capacity, 2^28 bindings (8 GiB of tables at h = 2).
pub const MAX_CAPACITY_LOG2: u8 = 28;

/// Expiry times are kept in 32 bits of clock units (the paper's *z*, §5.1): the lifetime in
/// units must stay below 2^31 so a live expiry is never mistaken for a stale one.
pub const MAX_LIFETIME_UNITS: u64 = (1 << 31) - 1;

/// The ratio *h* of hash-table entries to tag-table entries (paper §5.2, Fig. 11), in steps
/// of a quarter from 0.5 to 4.
///
/// ```
/// use ess::HashRatio;
/// assert_eq!(HashRatio::TWO.quarters(), 8);
/// assert_eq!(HashRatio::from_quarters(6).map(|h| h.quarters()), Some(6)); // h = 1.5
/// assert!(HashRatio::from_quarters(1).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HashRatio(u8);

impl HashRatio {
    /// h = 0.5: half as many hash slots as bindings.
    pub const HALF: HashRatio = HashRatio(2);
    /// h = 1.
    pub const ONE: HashRatio = HashRatio(4);
    /// h = 2: the paper's choice, where `find` stays constant even when the store is full.
    pub const TWO: HashRatio = HashRatio(8);
    /// h = 4.
    pub const FOUR: HashRatio = HashRatio(16);

    /// h = `quarters` / 4, for `quarters` in 2..=16; `None` otherwise.
    pub const fn from_quarters(quarters: u8) -> Option<HashRatio> {
        if quarters >= 2 && quarters <= 16 {
            Some(HashRatio(quarters))
        } else {
            None
        }
    }

    /// h in quarters.
    pub const fn quarters(self) -> u8 {
        self.0
    }

    /// Hash-table entries for a tag table of `capacity` entries (at least one).
    pub const fn slots_for(self, capacity: usize) -> usize {
        let slots = capacity.saturating_mul(self.0 as usize) / 4;
        if slots == 0 { 1 } else { slots }
    }
}

impl fmt::Display for HashRatio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = self.0;
        match q % 4 {
            0 => write!(f, "{}", q / 4),
            2 => write!(f, "{}.5", q / 4),
            1 => write!(f, "{}.25", q / 4),
            _ => write!(f, "{}.75", q / 4),
        }
    }
}

/// Everything that fixes a store's size and timing.
///
/// * capacity 2^n bindings (n from 1 to [`MAX_CAPACITY_LOG2`]);
/// * the hash ratio *h* ([`HashRatio`], default 2);
/// * the lifetime τ in ticks, and the clock resolution in ticks (τ a whole number of
///   resolution units, fewer than 2^31 of them);
/// * the secret [`HashKey`] for tags.
///
/// ```
/// use ess::{EssConfig, HashKey, HashRatio};
/// // Ticks are milliseconds: τ = 10 s at a 100 ms clock, 2^16 bindings, h = 1.
/// let config = EssConfig::new(16, 10_000, 100, HashKey::from_seed(0x5eed))?
///     .with_hash_ratio(HashRatio::ONE);
/// assert_eq!(config.capacity(), 65_536);
/// assert_eq!(config.hash_slots(), 65_536);
/// assert_eq!(config.lifetime_units(), 100);
/// # Ok::<(), ess::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EssConfig {
    capacity_log2: u8,
    hash_ratio: HashRatio,
    lifetime_ticks: u64,
    resolution_ticks: u64,
    key: HashKey,
}

impl EssConfig {
    /// A store of 2^`capacity_log2` bindings living `lifetime_ticks` on a clock of
    /// `resolution_ticks`, hashing tags with `key`, with h = 2.
    pub fn new(
        capacity_log2: u8,
        lifetime_ticks: u64,
        resolution_ticks: u64,
        key: HashKey,
    ) -> Result<EssConfig, ConfigError> {
        if capacity_log2 == 0 || capacity_log2 > MAX_CAPACITY_LOG2 {
            return Err(ConfigError::Capacity {
                log2: capacity_log2,
            });
        }
        if resolution_ticks == 0 {
            return Err(ConfigError::ZeroResolution);
        }
        if lifetime_ticks == 0 {
            return Err(ConfigError::ZeroLifetime);
        }
        if !lifetime_ticks.is_multiple_of(resolution_ticks) {
            return Err(ConfigError::LifetimeNotWholeUnits {
                lifetime_ticks,
                resolution_ticks,
            });
        }
        if lifetime_ticks / resolution_ticks > MAX_LIFETIME_UNITS {
            return Err(ConfigError::LifetimeTooLong {
                units: lifetime_ticks / resolution_ticks,
            });
        }
        Ok(EssConfig {
            capacity_log2,
            hash_ratio: HashRatio::TWO,
            lifetime_ticks,
            resolution_ticks,
            key,
        })
    }

    /// The smallest store that never refuses a creation while creations stay under
    /// `creations_per_second` (paper §2.3: resources are reclaimed at the rate they are
    /// allocated, so the size is fixed in advance).
    ///
    /// The rate is read as "at most `creations_per_second × lifetime` creations in any
    /// interval one lifetime long", `ticks_per_second` says what a tick is. A binding
    /// created at tick `c` holds its entry until at most `c + lifetime`, so at most that many
    /// are unexpired at once, and a full store always has an expired entry to reclaim.
    ///
    /// ```
    /// use ess::{EssConfig, HashKey};
    /// // 100 000 creations/s, τ = 10 s, ms ticks, 100 ms clock: 10^6 bindings → 2^20.
    /// let c = EssConfig::for_rate(100_000, 1_000, 10_000, 100, HashKey::from_seed(1))?;
    /// assert_eq!(c.capacity(), 1 << 20);
    /// # Ok::<(), ess::ConfigError>(())
    /// ```
    pub fn for_rate(
        creations_per_second: u64,
        ticks_per_second: u64,
        lifetime_ticks: u64,
        resolution_ticks: u64,
        key: HashKey,
    ) -> Result<EssConfig, ConfigError> {
        if ticks_per_second == 0 {
            return Err(ConfigError::ZeroResolution);
        }
        let needed =
            Self::bindings_for_rate(creations_per_second, ticks_per_second, lifetime_ticks);
        let log2 = if needed <= 2 {
            1
        } else {
            128 - (needed - 1).leading_zeros()
        };
        if log2 > u32::from(MAX_CAPACITY_LOG2) {
            return Err(ConfigError::RateTooHigh { bindings: needed });
        }
        // `log2` fits: it is at most MAX_CAPACITY_LOG2.
        EssConfig::new(log2 as u8, lifetime_ticks, resolution_ticks, key)
    }

    /// How many bindings can be unexpired at once at `creations_per_second`: the ceiling of
    /// rate × lifetime.
    pub fn bindings_for_rate(
        creations_per_second: u64,
        ticks_per_second: u64,
        lifetime_ticks: u64,
    ) -> u128 {
        let num = u128::from(creations_per_second) * u128::from(lifetime_ticks);
        num.div_ceil(u128::from(ticks_per_second.max(1)))
    }

    /// The same config with hash ratio `h`.
    pub const fn with_hash_ratio(mut self, h: HashRatio) -> Self {
        self.hash_ratio = h;
        self
    }

    /// The same config with tag-hash key `key`.
    pub const fn with_key(mut self, key: HashKey) -> Self {
        self.key = key;
        self
    }

    /// log2 of the capacity (the paper's *n*).
    pub const fn capacity_log2(&self) -> u8 {
        self.capacity_log2
    }

    /// How many bindings the store holds at once: 2^n.
    pub const fn capacity(&self) -> usize {
        1 << self.capacity_log2
    }

    /// The hash ratio *h*.
    pub const fn hash_ratio(&self) -> HashRatio {
        self.hash_ratio
    }

    /// Hash-table entries: h × capacity.
    pub const fn hash_slots(&self) -> usize {
        self.hash_ratio.slots_for(self.capacity())
    }

    /// The lifetime τ in ticks.
    pub const fn lifetime_ticks(&self) -> u64 {
        self.lifetime_ticks
    }

    /// The clock resolution in ticks.
    pub const fn resolution_ticks(&self) -> u64 {
        self.resolution_ticks
    }

    /// The lifetime in clock units.
    pub const fn lifetime_units(&self) -> u64 {
        self.lifetime_ticks / self.resolution_ticks
    }

    /// The tag-hash key.
    pub const fn key(&self) -> &HashKey {
        &self.key
    }
}

/// Why a config, or the tables offered for it, cannot make a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Capacity 2^`log2` is outside 2^1 ..= 2^[`MAX_CAPACITY_LOG2`].
    Capacity {
        /// The requested log2 of the capacity.
        log2: u8,
    },
    /// The clock resolution (or ticks per second) is zero.
    ZeroResolution,
    /// The lifetime is zero.
    ZeroLifetime,
    /// The lifetime is not a whole number of clock units.
    LifetimeNotWholeUnits {
        /// Requested lifetime.
        lifetime_ticks: u64,
        /// Requested resolution.
        resolution_ticks: u64,
    },
    /// The lifetime is 2^31 clock units or more.
    LifetimeTooLong {
        /// The lifetime in clock units.
        units: u64,
    },
    /// The rate needs more than 2^[`MAX_CAPACITY_LOG2`] bindings.
    RateTooHigh {
        /// Bindings that would be unexpired at once.
        bindings: u128,
    },
    /// A caller-supplied table has the wrong length.
    TableLength {
        /// Which table: `"entry"` or `"hash"`.
        table: &'static str,
        /// The length the config needs.
        expected: usize,
        /// The length supplied.
        actual: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Capacity { log2 } => {
                write!(
                    f,
                    "capacity 2^{log2} is outside 2^1..=2^{MAX_CAPACITY_LOG2}"
                )
            }
            ConfigError::ZeroResolution => {
                f.write_str("clock resolution must be at least one tick")
            }
            ConfigError::ZeroLifetime => f.write_str("lifetime must be at least one tick"),
            ConfigError::LifetimeNotWholeUnits {
                lifetime_ticks,
                resolution_ticks,
            } => write!(
                f,
                "lifetime of {lifetime_ticks} ticks is not a whole number of {resolution_ticks}-tick clock units"
            ),
            ConfigError::LifetimeTooLong { units } => {
                write!(
                    f,
                    "lifetime of {units} clock units exceeds {MAX_LIFETIME_UNITS}"
                )
            }
            ConfigError::RateTooHigh { bindings } => {
                write!(
                    f,
                    "rate needs {bindings} bindings, more than 2^{MAX_CAPACITY_LOG2}"
                )
            }
            ConfigError::TableLength {
                table,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "{table} table has {actual} entries, config needs {expected}"
                )
            }
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> HashKey {
        HashKey::from_seed(0)
    }

    #[test]
    fn rejects_bad_configs() {
        assert_eq!(
            EssConfig::new(0, 10, 1, key()),
            Err(ConfigError::Capacity { log2: 0 })
        );
        assert_eq!(
            EssConfig::new(29, 10, 1, key()),
            Err(ConfigError::Capacity { log2: 29 })
        );
        assert_eq!(
            EssConfig::new(4, 10, 0, key()),
            Err(ConfigError::ZeroResolution)
        );
        assert_eq!(
            EssConfig::new(4, 0, 1, key()),
            Err(ConfigError::ZeroLifetime)
        );
        assert!(matches!(
            EssConfig::new(4, 10, 3, key()),
            Err(ConfigError::LifetimeNotWholeUnits { .. })
        ));
        assert!(matches!(
            EssConfig::new(4, 1 << 31, 1, key()),
            Err(ConfigError::LifetimeTooLong { .. })
        ));
        assert!(EssConfig::new(4, (1 << 31) - 1, 1, key()).is_ok());
    }

    #[test]
    fn for_rate_rounds_up_to_a_power_of_two() {
        let c = EssConfig::for_rate(1000, 1000, 10_000, 10, key()).unwrap();
        assert_eq!(c.capacity(), 16_384); // 10 000 needed
        let c = EssConfig::for_rate(1024, 1, 16, 1, key()).unwrap();
        assert_eq!(c.capacity(), 16_384); // exactly 2^14
        let c = EssConfig::for_rate(0, 1, 16, 1, key()).unwrap();
        assert_eq!(c.capacity(), 2);
        assert!(matches!(
            EssConfig::for_rate(u64::MAX, 1, 1000, 1, key()),
            Err(ConfigError::RateTooHigh { .. })
        ));
    }

    #[test]
    fn hash_ratio_slots_and_display() {
        assert_eq!(HashRatio::HALF.slots_for(1024), 512);
        assert_eq!(HashRatio::FOUR.slots_for(1024), 4096);
        assert_eq!(HashRatio::HALF.slots_for(1), 1);
        assert_eq!(std::format!("{}", HashRatio::HALF), "0.5");
        assert_eq!(std::format!("{}", HashRatio::TWO), "2");
        assert_eq!(
            std::format!("{}", HashRatio::from_quarters(7).unwrap()),
            "1.75"
        );
        assert!(HashRatio::from_quarters(17).is_none());
    }
}
