//! Batched lookups: the memory accesses of many instructions in flight at once.
//!
//! One lookup is two dependent memory accesses into large tables (the hash slot, then the
//! entry it names), and a CPU cannot start the next packet's accesses until it has worked
//! through this one's. A router that reads packets in batches (recvmmsg, a TUN queue) can
//! do better: first touch every tag's hash slot, then every live head entry, and only then
//! run the lookups, which find their lines in cache. The accesses of a batch overlap, and
//! the results are exactly those of the same calls made one at a time.

use core::hint::black_box;

use crate::Instant;
use crate::Tag;
use crate::store::{Ess, Full, Handle};
use crate::tables::Tables;

/// Tags handled per pass; longer slices are taken this many at a time.
pub const BATCH: usize = 32;

impl<T: Tables> Ess<T> {
    /// Loads the hash slots and head entries of `tags` into cache, writing each tag's hash
    /// slot to `buckets`.
    #[inline(always)]
    fn warm_into(&self, tags: &[Tag], buckets: &mut [usize; BATCH]) {
        for (b, t) in buckets.iter_mut().zip(tags) {
            *b = self.bucket(t.0);
            black_box(self.tables.hash().get(*b));
        }
        for &b in buckets.iter().take(tags.len()) {
            if let Some(head) = self.head(b) {
                black_box(self.tables.entries().get(head as usize).map(|e| e.tag));
            }
        }
    }

    /// Brings the lookup of `tag` into cache: reads its hash slot and the live head entry
    /// it names, the lines [`find`](Self::find) and [`find_create`](Self::find_create)
    /// read first. Changes nothing: a hint for callers that gather the lookups of a batch
    /// across stores (a router's batch of packets, each for its own context) before
    /// running them one at a time. Nothing waits on these reads, so a processor runs the
    /// warming of the next tags while they are under way: several tags' misses overlap.
    #[inline]
    pub fn warm_tag(&self, tag: Tag) {
        if let Some(head) = self.head(self.bucket(tag.0)) {
            black_box(self.tables.entries().get(head as usize).map(|e| e.tag));
        }
    }

    /// Brings the lookups of `tags` into cache, [`BATCH`] at a time, as
    /// [`find_batch`](Self::find_batch) does before it answers. Changes nothing.
    pub fn warm(&self, tags: &[Tag]) {
        let mut buckets = [0usize; BATCH];
        for tags in tags.chunks(BATCH) {
            self.warm_into(tags, &mut buckets);
        }
    }

    /// [`find`](Self::find) for every tag of `tags` at `now`, into `out` (pairs up to the
    /// shorter of the two). The same answers as one call per tag, with the memory accesses
    /// of up to [`BATCH`] lookups overlapped.
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] { // `Ess::new` needs the heap
    /// use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};
    /// let mut ess = Ess::new(EssConfig::new(8, 100, 1, HashKey::from_seed(1))?);
    /// let now = Instant::from_ticks(0);
    /// ess.put(now, Tag(2), Value(20))?;
    /// let mut out = [None; 3];
    /// ess.find_batch(now, &[Tag(1), Tag(2), Tag(3)], &mut out);
    /// assert_eq!(out.map(|h| h.map(|h| ess.read(h))), [None, Some(Value(20)), None]);
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn find_batch(&self, now: Instant, tags: &[Tag], out: &mut [Option<Handle>]) {
        let cut = self.cut(self.clock.units_at(now));
        let mut buckets = [0usize; BATCH];
        for (tags, out) in tags.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            self.warm_into(tags, &mut buckets);
            for ((t, o), &b) in tags.iter().zip(out).zip(&buckets) {
                *o = self.walk(cut, t.0, b).found;
            }
        }
    }

    /// [`find_create`](Self::find_create) for every tag of `tags` in order at `now`, into
    /// `out` (pairs up to the shorter of the two): the same answers and the same final state
    /// as one call per tag, with the memory accesses of up to [`BATCH`] lookups overlapped.
    /// A tag that appears twice is created once; the second sees `is_new() == false`.
    pub fn find_create_batch(
        &mut self,
        now: Instant,
        tags: &[Tag],
        out: &mut [Result<Handle, Full>],
    ) {
        let mut buckets = [0usize; BATCH];
        for (tags, out) in tags.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            self.warm_into(tags, &mut buckets);
            for ((t, o), &b) in tags.iter().zip(out).zip(&buckets) {
                *o = self.find_create_in(now, *t, b);
            }
        }
    }
}

#[cfg(test)]
#[cfg(feature = "alloc")]
mod tests {
    use super::*;
    use crate::{EssConfig, HashKey, HashRatio, Value};

    #[test]
    fn batches_answer_exactly_like_single_calls() {
        let config = EssConfig::new(6, 40, 1, HashKey::from_seed(5))
            .unwrap()
            .with_hash_ratio(HashRatio::HALF);
        let (mut one, mut many) = (Ess::new(config), Ess::new(config));
        let mut x = 99u64;
        let mut out = std::vec![Ok(Handle::default_for_tests()); 70];
        let mut found = std::vec![None; 70];
        for now in 0..400u64 {
            let tags: std::vec::Vec<Tag> = (0..70)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    Tag(x >> 57) // 128 tags: repeats within a batch, refusals when full
                })
                .collect();
            let now = Instant::from_ticks(now);
            many.find_batch(now, &tags, &mut found);
            for (t, f) in tags.iter().zip(&found) {
                assert_eq!(*f, one.find(now, *t));
            }
            many.find_create_batch(now, &tags, &mut out);
            for (t, o) in tags.iter().zip(&out) {
                assert_eq!(*o, one.find_create(now, *t));
                if let Ok(h) = o {
                    many.write(*h, Value(t.0));
                    one.write(*h, Value(t.0));
                }
            }
            assert_eq!(one.counters(), many.counters());
        }
        let c = one.counters();
        assert!(c.refused > 1000 && c.created > 500, "{c:?}");
    }
}
