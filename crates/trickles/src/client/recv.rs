//! Receive reassembly: server output bytes, possibly out of order and duplicated, into an
//! ordered byte stream.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

/// An ordered byte stream rebuilt from `(offset, bytes)` pieces.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    /// The in-order frontier: bytes before this offset are in `ready`, already read, or
    /// in a skipped region.
    delivered: u64,
    /// Offsets below the frontier that were skipped (SKIP), not delivered.
    skipped: u64,
    /// Regions the server will never fill (§5.2 SKIP), by start: elided, not delivered.
    skips: BTreeMap<u64, u64>,
    /// Pieces beyond `delivered`, keyed by offset.
    pending: BTreeMap<u64, Vec<u8>>,
    /// In-order bytes not yet read by the application.
    ready: VecDeque<u8>,
    /// Where the stream ends, once the server said so.
    end: Option<u64>,
}

impl Reassembly {
    /// Adds the piece `data` at `offset`; duplicates and overlaps are harmless.
    pub(crate) fn insert(&mut self, offset: u64, data: &[u8]) {
        let end = offset.saturating_add(data.len() as u64);
        if end <= self.delivered || data.is_empty() {
            return;
        }
        let skip = self.delivered.saturating_sub(offset) as usize;
        let (offset, data) = (
            offset.max(self.delivered),
            data.get(skip..).unwrap_or_default(),
        );
        if offset == self.delivered {
            self.ready.extend(data);
            self.delivered = end;
            self.advance();
        } else {
            let keep = self
                .pending
                .get(&offset)
                .is_none_or(|old| old.len() < data.len());
            if keep {
                self.pending.insert(offset, data.to_vec());
            }
        }
    }

    fn drain_pending(&mut self) {
        while let Some((&off, _)) = self.pending.first_key_value() {
            if off > self.delivered {
                break;
            }
            let Some((off, piece)) = self.pending.pop_first() else {
                break;
            };
            let end = off.saturating_add(piece.len() as u64);
            if end > self.delivered {
                let skip = (self.delivered - off) as usize;
                self.ready.extend(piece.get(skip..).unwrap_or_default());
                self.delivered = end;
            }
        }
    }

    /// Records that the stream ends at `end`.
    /// Marks `from..to` as a region the server will never fill: the frontier passes over
    /// it without delivering anything, buffering nothing, and waiting for nothing.
    pub(crate) fn skip(&mut self, from: u64, to: u64) {
        if to <= from || to <= self.delivered {
            return;
        }
        let from = from.max(self.delivered);
        let entry = self.skips.entry(from).or_insert(to);
        *entry = (*entry).max(to);
        self.advance();
    }

    /// Moves the frontier over pending pieces and skipped regions, as far as they reach.
    fn advance(&mut self) {
        loop {
            self.drain_pending();
            let Some((&from, &to)) = self.skips.first_key_value() else {
                break;
            };
            if from > self.delivered {
                break;
            }
            self.skips.pop_first();
            if to > self.delivered {
                self.skipped += to - self.delivered;
                self.delivered = to;
                // Pieces inside the skipped region are dropped.
                while let Some((&off, _)) = self.pending.first_key_value() {
                    if off >= to {
                        break;
                    }
                    if let Some((off, piece)) = self.pending.pop_first() {
                        let end = off.saturating_add(piece.len() as u64);
                        if end > to {
                            let keep = (to - off) as usize;
                            self.pending
                                .insert(to, piece.get(keep..).unwrap_or_default().to_vec());
                        }
                    }
                }
            }
        }
    }

    pub(crate) fn set_end(&mut self, end: u64) {
        self.end = Some(self.end.map_or(end, |e| e.min(end)));
    }

    /// Where the stream ends, if known.
    pub(crate) fn end(&self) -> Option<u64> {
        self.end
    }

    /// Bytes received in order so far.
    /// Bytes delivered in order (skipped regions not counted).
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered - self.skipped
    }

    /// The in-order frontier (offsets, skipped regions included).
    #[cfg(test)]
    pub(crate) fn frontier(&self) -> u64 {
        self.delivered
    }

    /// Whether `[start, start + len)` has fully arrived (in order or pending).
    pub(crate) fn has(&self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        if end <= self.delivered {
            return true;
        }
        // A pending piece covering the range's unread part.
        let from = start.max(self.delivered);
        self.pending
            .range(..=from)
            .next_back()
            .is_some_and(|(&off, p)| off.saturating_add(p.len() as u64) >= end)
    }

    /// Whether every byte up to the known end has arrived.
    pub(crate) fn complete(&self) -> bool {
        self.end.is_some_and(|e| self.delivered >= e)
    }

    /// Moves up to `buf.len()` in-order bytes into `buf`; returns how many.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.ready.len());
        for (slot, b) in buf.iter_mut().zip(self.ready.drain(..n)) {
            *slot = b;
        }
        n
    }

    /// In-order bytes waiting to be read.
    pub(crate) fn readable(&self) -> usize {
        self.ready.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_regions_are_passed_over_and_not_delivered() {
        let mut r = Reassembly::default();
        r.insert(100, b"world");
        r.insert(0, b"hello");
        r.skip(5, 100);
        assert_eq!((r.frontier(), r.delivered()), (105, 10));
        // A piece inside a skip is dropped; one straddling its end is cut.
        r.insert(300, b"!");
        r.insert(195, b"0123456789");
        r.skip(105, 200);
        assert_eq!((r.frontier(), r.delivered()), (205, 15));
        r.skip(205, 300);
        r.set_end(301);
        assert!(r.complete());
        let mut out = [0u8; 64];
        let n = r.read(&mut out);
        assert_eq!(&out[..n], b"helloworld56789!");
    }

    #[test]
    fn out_of_order_duplicates_and_overlaps_rebuild_the_stream() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut r = Reassembly::default();
        r.insert(50, &data[50..80]);
        r.insert(10, &data[10..60]);
        assert_eq!(r.delivered(), 0);
        assert!(r.has(20, 10));
        r.insert(0, &data[0..10]);
        assert_eq!(r.delivered(), 80);
        r.insert(0, &data[0..90]);
        r.insert(85, &data[85..100]);
        r.set_end(100);
        assert!(r.complete());
        let mut out = [0u8; 128];
        assert_eq!(r.read(&mut out), 100);
        assert_eq!(&out[..100], &data[..]);
    }
}
