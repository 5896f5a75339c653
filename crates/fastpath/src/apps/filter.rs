//! A packet-filter cache in front of a list of BPF-like filters (Table 3, user level;
//! the paper's BSD Packet Filter experiment, §3.3–3.4).
//!
//! **The filter language.** A [`Filter`] is a conjunction of [`FieldMatch`]es — `(packet
//! bytes at offset, 1/2/4 wide, big-endian) & mask == value` — and a [`FilterList`]
//! evaluates its filters in order, as BSD 4.4 does, and returns the set of filters
//! (processes) that accept the packet as a bit mask. A field past the packet's end does
//! not match.
//!
//! **The cache.** The packet's processing information — the accepting set — is cached per
//! flow. Where the paper takes the sender's flow id, we derive it: the flow id is the
//! packet's bytes at every offset any filter reads (the list's *footprint*, at most 16
//! bytes; [`FilterCache::new`] refuses a list that reads more). Two packets with equal
//! footprint bytes get equal answers from every filter, so a hit is always the answer the
//! filter list would give — whatever source hash the sender chose. A packet too short for
//! the footprint bypasses the cache. The sender's source hash (carried in our IPv4 option,
//! [`crate::wire`]) picks the slot.

use alloc::vec::Vec;
use core::fmt;

use crate::cache::{CacheError, FlowCache, Lookup};
use crate::flow::{FlowId, MAX_FLOW_ID_LEN, SourceHash};

/// Why a filter or a filter cache cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterError {
    /// A field is 1, 2 or 4 bytes wide; carries the width given.
    BadWidth(u8),
    /// The value has bits outside the mask, so the match could never succeed.
    ValueOutsideMask,
    /// A list holds at most 32 filters (the accepting set is a `u32`).
    TooManyFilters,
    /// The filters read more than 16 distinct bytes: no flow id can stand for them.
    FootprintTooLarge,
    /// The flow cache could not be built.
    Cache(CacheError),
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterError::BadWidth(w) => write!(f, "field width {w} is not 1, 2 or 4"),
            FilterError::ValueOutsideMask => f.write_str("match value has bits outside its mask"),
            FilterError::TooManyFilters => f.write_str("more than 32 filters"),
            FilterError::FootprintTooLarge => f.write_str("filters read more than 16 bytes"),
            FilterError::Cache(e) => write!(f, "flow cache: {e}"),
        }
    }
}

impl core::error::Error for FilterError {}

/// One field test: `be(packet[offset .. offset + width]) & mask == value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldMatch {
    offset: u16,
    width: u8,
    mask: u32,
    value: u32,
}

impl FieldMatch {
    /// A test of the `width`-byte field at `offset`.
    pub fn new(offset: u16, width: u8, mask: u32, value: u32) -> Result<FieldMatch, FilterError> {
        if !matches!(width, 1 | 2 | 4) {
            return Err(FilterError::BadWidth(width));
        }
        if value & !mask != 0 {
            return Err(FilterError::ValueOutsideMask);
        }
        Ok(FieldMatch {
            offset,
            width,
            mask,
            value,
        })
    }

    /// Whether `packet` passes the test (a field past the end does not).
    #[inline]
    pub fn matches(&self, packet: &[u8]) -> bool {
        let start = usize::from(self.offset);
        let Some(b) = packet.get(start..start + usize::from(self.width)) else {
            return false;
        };
        let v = b.iter().fold(0u32, |acc, &x| (acc << 8) | u32::from(x));
        v & self.mask == self.value
    }
}

/// A filter: every field test must pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    tests: Vec<FieldMatch>,
}

impl Filter {
    /// A filter of these tests (none: accepts everything).
    pub fn new(tests: Vec<FieldMatch>) -> Filter {
        Filter { tests }
    }

    /// Whether `packet` passes every test.
    pub fn accepts(&self, packet: &[u8]) -> bool {
        self.tests.iter().all(|t| t.matches(packet))
    }
}

/// Filters evaluated in order; the result is the set of accepting filters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterList {
    filters: Vec<Filter>,
}

impl FilterList {
    /// A list of at most 32 filters.
    pub fn new(filters: Vec<Filter>) -> Result<FilterList, FilterError> {
        if filters.len() > 32 {
            return Err(FilterError::TooManyFilters);
        }
        Ok(FilterList { filters })
    }

    /// The plain path: runs every filter; bit `i` set when filter `i` accepts.
    pub fn classify(&self, packet: &[u8]) -> u32 {
        let mut set = 0u32;
        for (i, f) in self.filters.iter().enumerate() {
            if f.accepts(packet) {
                set |= 1 << i;
            }
        }
        set
    }

    /// Number of filters.
    pub fn len(&self) -> usize {
        self.filters.len()
    }

    /// Whether the list has no filter.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The distinct byte offsets any filter reads, ascending, if at most 16.
    pub fn footprint(&self) -> Result<Footprint, FilterError> {
        let mut offs: Vec<usize> = Vec::new();
        for t in self.filters.iter().flat_map(|f| &f.tests) {
            for k in 0..usize::from(t.width) {
                offs.push(usize::from(t.offset) + k);
            }
        }
        offs.sort_unstable();
        offs.dedup();
        if offs.len() > MAX_FLOW_ID_LEN {
            return Err(FilterError::FootprintTooLarge);
        }
        let mut fp = Footprint {
            offsets: [0; MAX_FLOW_ID_LEN],
            n: offs.len(),
        };
        for (d, s) in fp.offsets.iter_mut().zip(offs) {
            *d = s;
        }
        Ok(fp)
    }
}

/// The byte offsets a filter list reads: its flow id's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    offsets: [usize; MAX_FLOW_ID_LEN],
    n: usize,
}

impl Footprint {
    /// The packet's footprint bytes as a flow id (a leading tag byte keeps an empty
    /// footprint valid); `None` if the packet is too short to hold them all.
    #[inline]
    pub fn flow_id(&self, packet: &[u8]) -> Option<FlowId> {
        // One length check for all offsets (they ascend, the last is the largest).
        let n = self.n.min(MAX_FLOW_ID_LEN);
        let offsets = self.offsets.get(..n)?;
        let last = offsets.last().map_or(0, |&o| o + 1);
        let bytes = packet.get(..last)?;
        let mut b = [0u8; MAX_FLOW_ID_LEN];
        for (d, &o) in b.iter_mut().zip(offsets) {
            *d = bytes.get(o).copied().unwrap_or(0);
        }
        // Bytes past `n` stay zero; an empty footprint (no tests) makes every packet one
        // flow (a 1-byte zero id).
        Some(FlowId::from_padded(b, n))
    }
}

/// How a [`FilterCache`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// From the cache.
    Hit,
    /// The filter list ran and its answer was cached.
    Miss,
    /// The packet was too short for the footprint: the list ran, nothing was cached.
    Bypass,
}

impl From<Lookup> for Path {
    fn from(l: Lookup) -> Path {
        match l {
            Lookup::Hit => Path::Hit,
            Lookup::Miss => Path::Miss,
        }
    }
}

/// A source-hash cache of accepting sets in front of a [`FilterList`].
#[derive(Clone, Debug)]
pub struct FilterCache {
    list: FilterList,
    footprint: Footprint,
    cache: FlowCache<u32>,
}

impl FilterCache {
    /// A cache of `2^log2` slots over `list` (whose footprint must fit a flow id).
    pub fn new(list: FilterList, log2: u8) -> Result<FilterCache, FilterError> {
        Ok(FilterCache {
            footprint: list.footprint()?,
            cache: FlowCache::new(log2).map_err(FilterError::Cache)?,
            list,
        })
    }

    /// The accepting set of `packet`, whose sender chose index `hash`.
    #[inline]
    pub fn classify(&mut self, hash: SourceHash, packet: &[u8]) -> (u32, Path) {
        let Some(fid) = self.footprint.flow_id(packet) else {
            return (self.list.classify(packet), Path::Bypass);
        };
        let list = &self.list;
        let (set, l) = self
            .cache
            .get_or_insert_with(hash, &fid, |_| list.classify(packet));
        (*set, l.into())
    }

    /// The filter list.
    pub fn list(&self) -> &FilterList {
        &self.list
    }

    /// The flow cache (for its counters).
    pub fn cache(&self) -> &FlowCache<u32> {
        &self.cache
    }
}

/// A 16-filter demultiplexer like the paper's BPF experiment: filter `i` accepts TCP
/// (IPv4 protocol 6) to destination host `10.0.0.(i / 4 + 1)` and destination port
/// `8000 + i`; its footprint is the protocol byte, the destination address and the
/// destination port (7 bytes, for IPv4 headers without options).
pub fn sixteen_filters() -> FilterList {
    let mut filters = Vec::with_capacity(16);
    for i in 0..16u32 {
        let tests = [
            FieldMatch::new(9, 1, 0xff, 6),
            FieldMatch::new(16, 4, u32::MAX, 0x0a00_0000 | (i / 4 + 1)),
            FieldMatch::new(22, 2, 0xffff, 8000 + i),
        ];
        filters.push(Filter::new(tests.into_iter().flatten().collect()));
    }
    FilterList { filters }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::string::ToString;

    /// An IPv4 + TCP header prefix: protocol, addresses, ports.
    pub(crate) fn packet(proto: u8, dst: [u8; 4], dport: u16) -> [u8; 24] {
        let mut p = [0u8; 24];
        p[0] = 0x45;
        p[9] = proto;
        p[12..16].copy_from_slice(&[192, 168, 0, 1]);
        p[16..20].copy_from_slice(&dst);
        p[20..22].copy_from_slice(&1234u16.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn field_matches() {
        let p = packet(6, [10, 0, 0, 1], 8000);
        assert!(FieldMatch::new(9, 1, 0xff, 6).unwrap().matches(&p));
        assert!(
            FieldMatch::new(16, 4, 0xff00_0000, 0x0a00_0000)
                .unwrap()
                .matches(&p)
        );
        assert!(!FieldMatch::new(22, 2, 0xffff, 8001).unwrap().matches(&p));
        assert!(!FieldMatch::new(23, 2, 0, 0).unwrap().matches(&p)); // past the end
        assert_eq!(FieldMatch::new(0, 3, 1, 0), Err(FilterError::BadWidth(3)));
        assert_eq!(
            FieldMatch::new(0, 1, 1, 2),
            Err(FilterError::ValueOutsideMask)
        );
        assert!(FilterError::BadWidth(3).to_string().contains('3'));
    }

    #[test]
    fn sixteen_filters_demultiplex() {
        let l = sixteen_filters();
        assert_eq!(l.len(), 16);
        assert_eq!(l.classify(&packet(6, [10, 0, 0, 4], 8015)), 1 << 15);
        assert_eq!(l.classify(&packet(6, [10, 0, 0, 1], 8000)), 1);
        assert_eq!(l.classify(&packet(17, [10, 0, 0, 1], 8000)), 0);
        assert_eq!(l.classify(&packet(6, [10, 0, 0, 2], 8000)), 0);
        assert_eq!(l.footprint().unwrap().n, 7);
    }

    #[test]
    fn cache_hits_after_the_first_packet() {
        let mut c = FilterCache::new(sixteen_filters(), 8).unwrap();
        let p = packet(6, [10, 0, 0, 3], 8009);
        let h = SourceHash::new(0xabcd);
        assert_eq!(c.classify(h, &p), (1 << 9, Path::Miss));
        assert_eq!(c.classify(h, &p), (1 << 9, Path::Hit));
        // Same slot, different footprint bytes: a miss, the right answer.
        let q = packet(6, [10, 0, 0, 3], 8010);
        assert_eq!(c.classify(h, &q), (1 << 10, Path::Miss));
        assert_eq!(c.classify(h, &p[..20]), (0, Path::Bypass));
    }

    #[test]
    fn wide_footprints_and_long_lists_are_refused() {
        let wide = Filter::new(
            (0..5)
                .map(|i| FieldMatch::new(i * 4, 4, 0, 0).unwrap())
                .collect(),
        );
        let l = FilterList::new(std::vec![wide]).unwrap();
        assert_eq!(
            FilterCache::new(l, 4).unwrap_err(),
            FilterError::FootprintTooLarge
        );
        let many = std::vec![Filter::default(); 33];
        assert_eq!(
            FilterList::new(many).unwrap_err(),
            FilterError::TooManyFilters
        );
        let all = FilterList::new(std::vec![Filter::default()]).unwrap();
        let mut c = FilterCache::new(all, 4).unwrap();
        assert_eq!(c.classify(SourceHash::new(1), &[]).0, 1);
    }

    proptest! {
        /// Cached or not, under any index, the answer is the filter list's.
        #[test]
        fn cache_equals_the_list(
            pkts in proptest::collection::vec(
                (0u8..3, 1u8..6, 7998u16..8018, any::<u32>(), 18usize..25), 1..200),
        ) {
            let list = sixteen_filters();
            let mut c = FilterCache::new(list.clone(), 3).unwrap();
            for (proto, host, port, h, len) in pkts {
                let p = packet([6, 17, 1][usize::from(proto)], [10, 0, 0, host], port);
                let p = &p[..len];
                prop_assert_eq!(c.classify(SourceHash::new(h), p).0, list.classify(p));
            }
        }
    }
}
