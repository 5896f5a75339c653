//! Byte ranges of the server's output: which are outstanding, which were lost and must be
//! asked for again, and the next one to ask for.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::Client;
use super::ucont_store::Place;
use crate::wire::ByteRange;

/// A requested byte range not yet received.
#[derive(Clone, Copy, Debug)]
pub(super) struct Outstanding {
    pub(super) len: u16,
    /// The numbered slot carrying it, or for a retransmission the first number its
    /// request was expected to produce after it.
    pub(super) watch: u32,
    pub(super) retransmit: bool,
    /// Later packets resolved while it was missing (retransmissions only).
    pub(super) later: u32,
}

impl Client {
    /// Counts a resolved arrival against outstanding retransmissions.
    pub(super) fn count_later(&mut self, number: u32) {
        let thresh = self.cfg.dup_thresh;
        let mut lost = Vec::new();
        self.retransmitted
            .retain(|start| match self.outstanding.get_mut(start) {
                Some(o) if o.retransmit => {
                    if number >= o.watch {
                        o.later += 1;
                    }
                    if o.later >= thresh {
                        lost.push(*start);
                        return false;
                    }
                    true
                }
                _ => false,
            });
        for start in lost {
            self.range_lost(start);
        }
    }

    /// The range at `start` is lost: it goes back to be requested again, in order.
    pub(super) fn range_lost(&mut self, start: u64) {
        if let Some(o) = self.outstanding.remove(&start) {
            let pos = self.lost_ranges.partition_point(|r| r.start <= start);
            self.lost_ranges
                .insert(pos, ByteRange { start, len: o.len });
            self.lost_settled = None;
        }
    }

    /// The range at `start` was answered with only its first `got` bytes: the rest goes
    /// back to be requested again, in order.
    pub(super) fn range_short(&mut self, start: u64, got: u16) {
        if let Some(o) = self.outstanding.remove(&start) {
            self.retransmitted.retain(|&s| s != start);
            let rest = ByteRange {
                start: start + u64::from(got),
                len: o.len.saturating_sub(got),
            };
            if rest.len > 0 {
                let pos = self.lost_ranges.partition_point(|r| r.start <= rest.start);
                self.lost_ranges.insert(pos, rest);
                self.lost_settled = None;
            }
        }
    }

    /// With output continuations known (§4.3, §5.2), keeps requests inside known objects:
    /// lost ranges are cut to the objects they fall in, dropped where they fall in a SKIP
    /// stretch, and kept waiting where no continuation covers them yet; new requests
    /// start past SKIP stretches and wait where nothing is known.
    pub(super) fn settle(&mut self) {
        if !self.uconts.has_outputs() {
            return;
        }
        // Settled ranges stay settled until a range is added or an output continuation
        // is filed (a transfer with losses has hundreds, and this runs several times per
        // packet).
        let generation = self.uconts.generation();
        if !self.lost_ranges.is_empty() && self.lost_settled != Some(generation) {
            self.settle_lost();
            self.lost_settled = Some(generation);
        }
        while let Place::Skipped(to) = self.uconts.locate(self.next_offset) {
            self.next_offset = to;
        }
    }

    /// [`Client::settle`]'s work on the lost ranges (called often: only when there are
    /// some).
    fn settle_lost(&mut self) {
        let mut kept = VecDeque::with_capacity(self.lost_ranges.len());
        let mut work = core::mem::take(&mut self.lost_ranges);
        while let Some(r) = work.pop_front() {
            let end = r.start + u64::from(r.len);
            let piece = |from: u64, to: u64| ByteRange {
                start: from,
                len: (to - from).min(u64::from(u16::MAX)) as u16,
            };
            match self.uconts.locate(r.start) {
                // Inside an object: keep what lies inside it; the rest is looked at again.
                Place::Inside(_, ve) => {
                    kept.push_back(piece(r.start, ve.min(end)));
                    if end > ve {
                        work.push_front(piece(ve, end));
                    }
                }
                // In a SKIP stretch: nothing will ever come there.
                Place::Skipped(to) => {
                    if end > to {
                        work.push_front(piece(to, end));
                    }
                }
                // Not known yet: wait for its continuation.
                Place::Unknown => kept.push_back(r),
            }
        }
        self.lost_ranges = kept;
    }

    /// Where the next range would start: the first lost range, else new data.
    pub(super) fn peek_range_start(&self) -> Option<u64> {
        if let Some(r) = self.lost_ranges.front() {
            return Some(r.start);
        }
        // With output continuations known, they alone say what is left: the parts of an
        // object that overflowed its region lie past the stream's end in sequence order.
        let end = self.recv.end().filter(|_| !self.uconts.has_outputs());
        if end.is_some_and(|e| self.next_offset >= e) {
            return None;
        }
        if self.uconts.has_outputs() {
            // Only inside a known object (`settle` moved `next_offset` past SKIPs).
            return matches!(self.uconts.locate(self.next_offset), Place::Inside(..))
                .then_some(self.next_offset);
        }
        Some(self.next_offset)
    }

    /// Whether [`Client::next_range`] would give a range now (lost ranges first; with
    /// output continuations known, only inside known objects).
    pub(super) fn range_ready(&self) -> bool {
        match self.lost_ranges.front() {
            Some(r) => {
                !self.uconts.has_outputs()
                    || matches!(self.uconts.locate(r.start), Place::Inside(..))
            }
            None => self.peek_range_start().is_some(),
        }
    }

    /// The next byte range to ask for, at most `size` bytes and ending at most at `limit`
    /// (the end of the output continuation the request carries): lost ranges first (split
    /// if larger), then new data. `None` when the next range starts at or past `limit`.
    pub(super) fn next_range(&mut self, size: u16, limit: Option<u64>) -> Option<ByteRange> {
        let size = match (limit, self.peek_range_start()) {
            (Some(l), Some(start)) if start >= l => return None,
            (Some(l), Some(start)) => size.min((l - start).min(u64::from(u16::MAX)) as u16),
            _ => size,
        };
        if self.uconts.has_outputs()
            && let Some(r) = self.lost_ranges.front()
            && !matches!(self.uconts.locate(r.start), Place::Inside(..))
        {
            // Lost bytes of a region whose continuation has not arrived: wait for it.
            return None;
        }
        if let Some(r) = self.lost_ranges.pop_front() {
            if r.len > size {
                self.lost_ranges.push_front(ByteRange {
                    start: r.start + u64::from(size),
                    len: r.len - size,
                });
                return Some(ByteRange {
                    start: r.start,
                    len: size,
                });
            }
            return Some(r);
        }
        let end = self.recv.end().filter(|_| !self.uconts.has_outputs());
        if end.is_some_and(|e| self.next_offset >= e) {
            return None;
        }
        let mut size = size;
        if self.uconts.has_outputs() {
            let Place::Inside(_, ve) = self.uconts.locate(self.next_offset) else {
                return None;
            };
            size = size.min((ve - self.next_offset).min(u64::from(u16::MAX)) as u16);
        }
        let mut len = size;
        if let Some(e) = end {
            len = len.min((e - self.next_offset).min(u64::from(u16::MAX)) as u16);
        }
        let r = ByteRange {
            start: self.next_offset,
            len,
        };
        self.next_offset += u64::from(len);
        Some(r)
    }
}
