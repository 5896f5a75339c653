//! The tables of Fig. 10, owned or borrowed.

#[cfg(feature = "alloc")]
use alloc::{boxed::Box, vec};

use crate::Value;
use crate::config::{ConfigError, EssConfig};

/// The reference in an empty hash slot or at the end of a chain.
///
/// Links (an entry's `chain`) and hash slots name an entry by a *reference*: the low 32 bits
/// of its creation number + 1. The entry made by creation `c` sits at index `c mod 2^n`, so
/// a reference gives the index, and, against the store's count of creations, the entry's
/// age: a reference whose creation has left the window (reclaimed, its entry perhaps reused
/// since) is recognised without reading the entry.
pub(crate) const NONE: u32 = 0;

/// One row of the tag table and the value table (paper §5.1, Fig. 10): a tag, its value, the
/// low 32 bits of its expiry time in clock units, and a reference to the next (older) entry
/// on its hash chain.
///
/// Fig. 10 keeps values in their own table at the same index as the tags, so the two can sit
/// in different memories (SRAM, SDRAM). On a cached CPU the line, not the word, is the unit
/// of transfer, so we interleave them: the `read` and `write` that follow a `find` touch the
/// line the `find` already brought in. 24 bytes per entry.
///
/// Opaque: callers only allocate arrays of [`Entry::EMPTY`] to lend to a store. With the
/// `bytemuck` feature it is `bytemuck::Pod`, so a caller can also view memory it mapped
/// itself (huge pages, say) as entries: all-zero bytes are [`Entry::EMPTY`], and any bytes
/// are a valid entry (a store checks whatever its tables hold).
///
/// `#[repr(C)]`: 8 + 8 + 4 + 4 bytes, no padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "bytemuck", derive(bytemuck::Pod, bytemuck::Zeroable))]
#[repr(C)]
pub struct Entry {
    pub(crate) tag: u64,
    pub(crate) value: Value,
    pub(crate) expiry: u32,
    pub(crate) chain: u32,
}

impl Entry {
    /// An unused entry.
    pub const EMPTY: Entry = Entry {
        tag: 0,
        value: Value(0),
        expiry: 0,
        chain: NONE,
    };
}

impl Default for Entry {
    fn default() -> Self {
        Entry::EMPTY
    }
}

/// Storage for a store's entry table (tags and values) and hash table.
///
/// Implemented by [`OwnedTables`] (allocated once, feature `alloc`) and
/// [`BorrowedTables`] (slices the caller supplies, for targets without an allocator, or to
/// place the tables in memory of the caller's choosing, such as huge pages). The store
/// checks the lengths when it is built and never indexes past them, so an implementation
/// cannot make it panic.
pub trait Tables {
    /// The entry table: 2^n [`Entry`]s.
    fn entries(&self) -> &[Entry];
    /// The hash table: each slot refers to the newest entry of its chain, or is 0 (empty).
    fn hash(&self) -> &[u32];
    /// Both tables, mutably.
    fn split_mut(&mut self) -> (&mut [Entry], &mut [u32]);
}

/// Tables lent to the store by the caller (no allocator needed).
///
/// With the `bytemuck` feature, the slices may be views of memory the caller mapped
/// itself, e.g. in 2 MiB pages (`bytemuck::cast_slice_mut` on a page-aligned byte buffer);
/// see `benches/support/huge.rs` for anonymous memory advised with `MADV_HUGEPAGE`.
///
/// ```
/// use ess::{BorrowedTables, Entry, Ess, EssConfig, HashKey, Instant, Tag, Value};
/// let config = EssConfig::new(4, 10, 1, HashKey::from_seed(9))?;
/// let mut entries = [Entry::EMPTY; 16];
/// let mut hash = [0u32; 32]; // h = 2
/// let mut ess = Ess::with_tables(config, BorrowedTables::new(&mut entries, &mut hash))?;
/// ess.put(Instant::from_ticks(0), Tag(1), Value(7)).unwrap();
/// assert_eq!(ess.get(Instant::from_ticks(9), Tag(1)), Some(Value(7)));
/// assert_eq!(ess.get(Instant::from_ticks(10), Tag(1)), None);
/// # Ok::<(), ess::ConfigError>(())
/// ```
pub struct BorrowedTables<'a> {
    entries: &'a mut [Entry],
    hash: &'a mut [u32],
}

impl<'a> BorrowedTables<'a> {
    /// Lends the two tables; their lengths are checked against the config by
    /// [`Ess::with_tables`](crate::Ess::with_tables). Their contents are overwritten.
    pub fn new(entries: &'a mut [Entry], hash: &'a mut [u32]) -> Self {
        BorrowedTables { entries, hash }
    }
}

impl Tables for BorrowedTables<'_> {
    fn entries(&self) -> &[Entry] {
        self.entries
    }
    fn hash(&self) -> &[u32] {
        self.hash
    }
    fn split_mut(&mut self) -> (&mut [Entry], &mut [u32]) {
        (self.entries, self.hash)
    }
}

/// Tables allocated once on the heap for a config.
#[cfg(feature = "alloc")]
pub struct OwnedTables {
    entries: Box<[Entry]>,
    hash: Box<[u32]>,
}

#[cfg(feature = "alloc")]
impl OwnedTables {
    /// Allocates the tables `config` needs.
    pub fn new(config: &EssConfig) -> Self {
        OwnedTables {
            entries: vec![Entry::EMPTY; config.capacity()].into_boxed_slice(),
            hash: vec![NONE; config.hash_slots()].into_boxed_slice(),
        }
    }
}

#[cfg(feature = "alloc")]
impl Tables for OwnedTables {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }
    fn hash(&self) -> &[u32] {
        &self.hash
    }
    fn split_mut(&mut self) -> (&mut [Entry], &mut [u32]) {
        (&mut self.entries, &mut self.hash)
    }
}

/// Tables print their sizes, not their (possibly millions of) entries.
fn debug_tables(
    name: &str,
    t: &impl Tables,
    f: &mut core::fmt::Formatter<'_>,
) -> core::fmt::Result {
    f.debug_struct(name)
        .field("entries", &t.entries().len())
        .field("hash_slots", &t.hash().len())
        .finish()
}

impl core::fmt::Debug for BorrowedTables<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_tables("BorrowedTables", self, f)
    }
}

#[cfg(feature = "alloc")]
impl core::fmt::Debug for OwnedTables {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_tables("OwnedTables", self, f)
    }
}

/// Checks the table lengths against `config` and resets their contents.
pub(crate) fn prepare<T: Tables>(config: &EssConfig, tables: &mut T) -> Result<(), ConfigError> {
    let (entries, hash) = tables.split_mut();
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
    check("entry", config.capacity(), entries.len())?;
    check("hash", config.hash_slots(), hash.len())?;
    entries.fill(Entry::EMPTY);
    hash.fill(NONE);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashKey;

    #[test]
    fn tables_print_their_sizes() {
        let (mut e, mut h) = ([Entry::EMPTY; 4], [0u32; 8]);
        let t = BorrowedTables::new(&mut e, &mut h);
        assert_eq!(
            std::format!("{t:?}"),
            "BorrowedTables { entries: 4, hash_slots: 8 }"
        );
    }

    #[test]
    fn an_entry_is_twenty_four_bytes() {
        assert_eq!(core::mem::size_of::<Entry>(), 24);
    }

    #[cfg(feature = "bytemuck")]
    #[test]
    fn zeroed_bytes_are_empty_entries() {
        // Memory a caller maps is zeroed: it must read as empty tables.
        let mut bytes = [0u64; 3 * 4]; // 8-aligned, 4 entries
        let entries: &mut [Entry] = bytemuck::cast_slice_mut(&mut bytes[..]);
        assert_eq!(entries.len(), 4);
        assert!(entries.iter().all(|e| *e == Entry::EMPTY));
        entries[1].tag = 5;
        entries[1].chain = 7;
        assert_eq!(bytes[3], 5, "tag is the first word of entry 1");
        assert_eq!(bytes[5] >> 32, 7, "chain is the high half of its last word");
    }

    #[test]
    fn prepare_checks_every_length() {
        let config = EssConfig::new(2, 4, 1, HashKey::from_seed(0)).unwrap();
        let (mut e, mut h) = ([Entry::EMPTY; 4], [7u32; 8]);
        assert_eq!(
            prepare(&config, &mut BorrowedTables::new(&mut e, &mut h)),
            Ok(())
        );
        assert!(h.iter().all(|&x| x == NONE));
        let mut short = [0u32; 7];
        assert_eq!(
            prepare(&config, &mut BorrowedTables::new(&mut e, &mut short)),
            Err(ConfigError::TableLength {
                table: "hash",
                expected: 8,
                actual: 7
            })
        );
        let mut e3 = [Entry::EMPTY; 3];
        assert_eq!(
            prepare(&config, &mut BorrowedTables::new(&mut e3, &mut h)),
            Err(ConfigError::TableLength {
                table: "entry",
                expected: 4,
                actual: 3
            })
        );
    }
}
