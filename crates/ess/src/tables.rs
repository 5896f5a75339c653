//! The three tables of Fig. 10, owned or borrowed.

#[cfg(feature = "alloc")]
use alloc::{boxed::Box, vec};

use crate::Value;
use crate::config::{ConfigError, EssConfig};

/// "No entry": the end of a chain, or an empty hash slot.
pub(crate) const NIL: u32 = u32::MAX;

/// One entry of the tag table: a tag, the low 32 bits of its expiry time in clock units, and
/// the index of the next (older) entry on its hash chain (paper §5.1, Fig. 10).
///
/// Opaque: callers only allocate arrays of [`TagSlot::EMPTY`] to lend to a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagSlot {
    pub(crate) tag: u64,
    pub(crate) expiry: u32,
    pub(crate) chain: u32,
}

impl TagSlot {
    /// An unused entry.
    pub const EMPTY: TagSlot = TagSlot {
        tag: 0,
        expiry: 0,
        chain: NIL,
    };
}

impl Default for TagSlot {
    fn default() -> Self {
        TagSlot::EMPTY
    }
}

/// Storage for a store's tag, value and hash tables.
///
/// Implemented by [`OwnedTables`] (allocated once, feature `alloc`) and
/// [`BorrowedTables`] (slices the caller supplies, for targets without an allocator). The
/// store checks the lengths when it is built and never indexes past them, so an
/// implementation cannot make it panic.
pub trait Tables {
    /// The tag table.
    fn tags(&self) -> &[TagSlot];
    /// The value table.
    fn values(&self) -> &[Value];
    /// The hash table: indices into the tag table, or `u32::MAX` for none.
    fn hash(&self) -> &[u32];
    /// All three tables, mutably.
    fn split_mut(&mut self) -> (&mut [TagSlot], &mut [Value], &mut [u32]);
}

/// Tables lent to the store by the caller (no allocator needed).
///
/// ```
/// use ess::{BorrowedTables, Ess, EssConfig, HashKey, Instant, TagSlot, Tag, Value};
/// let config = EssConfig::new(4, 10, 1, HashKey::from_seed(9))?;
/// let mut tags = [TagSlot::EMPTY; 16];
/// let mut values = [Value(0); 16];
/// let mut hash = [0u32; 32]; // h = 2
/// let mut ess = Ess::with_tables(config, BorrowedTables::new(&mut tags, &mut values, &mut hash))?;
/// ess.put(Instant::from_ticks(0), Tag(1), Value(7)).unwrap();
/// assert_eq!(ess.get(Instant::from_ticks(9), Tag(1)), Some(Value(7)));
/// assert_eq!(ess.get(Instant::from_ticks(10), Tag(1)), None);
/// # Ok::<(), ess::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct BorrowedTables<'a> {
    tags: &'a mut [TagSlot],
    values: &'a mut [Value],
    hash: &'a mut [u32],
}

impl<'a> BorrowedTables<'a> {
    /// Lends three tables; their lengths are checked against the config by
    /// [`Ess::with_tables`](crate::Ess::with_tables). Their contents are overwritten.
    pub fn new(tags: &'a mut [TagSlot], values: &'a mut [Value], hash: &'a mut [u32]) -> Self {
        BorrowedTables { tags, values, hash }
    }
}

impl Tables for BorrowedTables<'_> {
    fn tags(&self) -> &[TagSlot] {
        self.tags
    }
    fn values(&self) -> &[Value] {
        self.values
    }
    fn hash(&self) -> &[u32] {
        self.hash
    }
    fn split_mut(&mut self) -> (&mut [TagSlot], &mut [Value], &mut [u32]) {
        (self.tags, self.values, self.hash)
    }
}

/// Tables allocated once on the heap for a config.
#[cfg(feature = "alloc")]
#[derive(Debug)]
pub struct OwnedTables {
    tags: Box<[TagSlot]>,
    values: Box<[Value]>,
    hash: Box<[u32]>,
}

#[cfg(feature = "alloc")]
impl OwnedTables {
    /// Allocates the tables `config` needs.
    pub fn new(config: &EssConfig) -> Self {
        OwnedTables {
            tags: vec![TagSlot::EMPTY; config.capacity()].into_boxed_slice(),
            values: vec![Value(0); config.capacity()].into_boxed_slice(),
            hash: vec![NIL; config.hash_slots()].into_boxed_slice(),
        }
    }
}

#[cfg(feature = "alloc")]
impl Tables for OwnedTables {
    fn tags(&self) -> &[TagSlot] {
        &self.tags
    }
    fn values(&self) -> &[Value] {
        &self.values
    }
    fn hash(&self) -> &[u32] {
        &self.hash
    }
    fn split_mut(&mut self) -> (&mut [TagSlot], &mut [Value], &mut [u32]) {
        (&mut self.tags, &mut self.values, &mut self.hash)
    }
}

/// Checks the table lengths against `config` and resets their contents.
pub(crate) fn prepare<T: Tables>(config: &EssConfig, tables: &mut T) -> Result<(), ConfigError> {
    let (tags, values, hash) = tables.split_mut();
    let check = |table, expected, actual| {
        if expected == actual {
            Ok(())
        } else {
            Err(ConfigError::TableLength {
                table,
                expected,
                actual,
            })
        }
    };
    check("tag", config.capacity(), tags.len())?;
    check("value", config.capacity(), values.len())?;
    check("hash", config.hash_slots(), hash.len())?;
    tags.fill(TagSlot::EMPTY);
    values.fill(Value(0));
    hash.fill(NIL);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashKey;

    #[test]
    fn tag_slot_is_sixteen_bytes() {
        assert_eq!(core::mem::size_of::<TagSlot>(), 16);
    }

    #[test]
    fn prepare_checks_every_length() {
        let config = EssConfig::new(2, 4, 1, HashKey::from_seed(0)).unwrap();
        let (mut t, mut v, mut h) = ([TagSlot::EMPTY; 4], [Value(0); 4], [0u32; 8]);
        assert_eq!(
            prepare(&config, &mut BorrowedTables::new(&mut t, &mut v, &mut h)),
            Ok(())
        );
        assert!(h.iter().all(|&x| x == NIL));
        let mut short = [0u32; 7];
        assert_eq!(
            prepare(
                &config,
                &mut BorrowedTables::new(&mut t, &mut v, &mut short)
            ),
            Err(ConfigError::TableLength {
                table: "hash",
                expected: 8,
                actual: 7
            })
        );
        let mut v3 = [Value(0); 3];
        assert_eq!(
            prepare(&config, &mut BorrowedTables::new(&mut t, &mut v3, &mut h)),
            Err(ConfigError::TableLength {
                table: "value",
                expected: 4,
                actual: 3
            })
        );
    }
}
