//! ESS tables in 2 MiB pages, without `unsafe`: anonymous maps (`memmap2`) advised
//! `MADV_HUGEPAGE` before they are touched, viewed as `[Entry]` / `[u32]` through waist-ess's
//! `bytemuck` feature and lent to the store as `BorrowedTables`.
//!
//! With THP in `madvise` mode (the default on many distributions) only advised memory gets
//! huge pages, so a `Vec` (the store's `OwnedTables`, or hashbrown's table) stays on 4 KiB
//! pages.

use memmap2::{Advice, MmapMut};

use ess::{BorrowedTables, Entry, EssConfig};

/// The huge page size THP uses on x86-64.
pub(crate) const HUGE: usize = 2 << 20;

/// A byte range of an anonymous map that starts on a 2 MiB boundary.
#[derive(Debug)]
pub(crate) struct HugeMap {
    map: MmapMut,
    offset: usize,
    len: usize,
}

impl HugeMap {
    /// `len` zeroed bytes, 2 MiB-aligned, advised `MADV_HUGEPAGE` (nothing touched yet).
    pub(crate) fn new(len: usize) -> std::io::Result<Self> {
        let map = MmapMut::map_anon(len + HUGE)?;
        let addr = map.as_ptr() as usize;
        let offset = addr.next_multiple_of(HUGE) - addr;
        map.advise(Advice::HugePage)?;
        Ok(HugeMap { map, offset, len })
    }

    /// The bytes, writable.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.offset..self.offset + self.len]
    }
}

/// An ESS's entry and hash tables, each in its own 2 MiB-aligned map advised for huge
/// pages, lent to the store for the rest of the process (the maps are leaked: a bench's
/// store lives until exit), with the maps kept to read their huge-page counts.
pub(crate) fn huge_tables(
    config: &EssConfig,
) -> std::io::Result<(BorrowedTables<'static>, HugeReport)> {
    let entries: &'static mut HugeMap = Box::leak(Box::new(HugeMap::new(
        config.capacity() * size_of::<Entry>(),
    )?));
    let hash: &'static mut HugeMap = Box::leak(Box::new(HugeMap::new(
        config.hash_slots() * size_of::<u32>(),
    )?));
    let report = HugeReport {
        entries_start: entries.map.as_ptr() as usize,
        hash_start: hash.map.as_ptr() as usize,
        bytes: entries.len + hash.len,
    };
    let tables = BorrowedTables::new(
        bytemuck::cast_slice_mut(entries.bytes_mut()),
        bytemuck::cast_slice_mut(hash.bytes_mut()),
    );
    Ok((tables, report))
}

/// Where [`huge_tables`]' maps start, to look them up in `/proc/self/smaps`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HugeReport {
    entries_start: usize,
    hash_start: usize,
    bytes: usize,
}

impl HugeReport {
    /// KiB of the tables' mappings in huge pages, as the kernel reports them
    /// (`AnonHugePages`, summed over the one or two mappings that hold them), and the
    /// tables' size in KiB. The kernel merges adjacent anonymous maps, so in a process
    /// with several stores the count can include a neighbouring store's maps.
    pub(crate) fn huge_kib(&self) -> Option<(u64, u64)> {
        let (lo_e, kib_e) = anon_huge_kib(self.entries_start)?;
        let (lo_h, kib_h) = anon_huge_kib(self.hash_start)?;
        let kib = if lo_e == lo_h { kib_e } else { kib_e + kib_h };
        Some((kib, self.bytes as u64 / 1024))
    }
}

/// The start of the mapping that contains `addr` and its `AnonHugePages` in KiB, from
/// `/proc/self/smaps`.
pub(crate) fn anon_huge_kib(addr: usize) -> Option<(usize, u64)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = None;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ')
            && let Some((lo, hi)) = range.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            inside = (lo..hi).contains(&addr).then_some(lo);
            continue;
        }
        if let Some(lo) = inside
            && let Some(v) = line.strip_prefix("AnonHugePages:")
        {
            return Some((lo, v.trim().trim_end_matches("kB").trim().parse().ok()?));
        }
    }
    None
}
