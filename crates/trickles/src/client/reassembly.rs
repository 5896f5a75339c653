//! Receive reassembly: server output bytes, possibly out of order and duplicated, into the
//! byte stream the application reads.
//!
//! Delivery normally follows sequence order. Two things bend it (§5.2):
//!
//! * **SKIP**: a stretch the server will never fill (the unused rest of an object's
//!   region) is elided: marked done, never buffered, never waited for;
//! * **splices**: an object longer than its region goes on in a fresh region further up
//!   the sequence space. At the end of the full region delivery **holds** until the
//!   client learns where the next part lies, then **jumps** there, delivers the chain of
//!   parts, and **returns** to where it left off. When sequence order later reaches a part
//!   already delivered, it passes over it.
//!
//! The state for that is a set of done ranges (delivered or elided, merged) and a few
//! one-shot links keyed by the offset where they apply.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

/// What delivery does on reaching an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// An object goes on elsewhere, not known yet: stop here.
    Wait,
    /// An object goes on at this offset.
    To(u64),
    /// The last part of a spliced object ended here: go back to where the chain began.
    Return,
}

/// An ordered byte stream rebuilt from `(offset, bytes)` pieces.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    /// The next offset to deliver.
    cursor: u64,
    /// Inside a chain of spliced parts: the offset to return to when it ends.
    ret: Option<u64>,
    /// `cursor` was reached by a jump, not by delivery: links there do not apply.
    landed: bool,
    /// Offsets delivered or elided: disjoint, merged ranges `start → end`.
    done: BTreeMap<u64, u64>,
    /// One-shot links by the offset where they apply.
    links: BTreeMap<u64, Link>,
    /// Offsets whose splice target is known (a repeated notice must not hold there again).
    spliced: BTreeSet<u64>,
    /// Pieces not yet delivered, keyed by offset.
    pending: BTreeMap<u64, Vec<u8>>,
    /// The longest piece ever inserted (bounds the search for the one covering `cursor`).
    longest: u64,
    /// In-order bytes not yet read by the application: `ready[read_at..]`.
    ready: Vec<u8>,
    /// How much of `ready` the application has read.
    read_at: usize,
    /// Where the stream ends, once the server said so.
    end: Option<u64>,
    /// Bytes delivered (elided ones not counted).
    delivered: u64,
}

impl Reassembly {
    /// Adds the piece `data` at `offset`; duplicates and overlaps are harmless.
    pub(crate) fn insert(&mut self, offset: u64, data: &[u8]) {
        let end = offset.saturating_add(data.len() as u64);
        if data.is_empty() || self.done_until(offset) >= end {
            return;
        }
        if offset == self.cursor && !self.landed && self.delivers_now() {
            // In order (the common case): straight to the reader, never buffered as a
            // pending piece. What delivery may not pass yet (a link, a done range, the
            // end) is cut off and filed as a piece like any other.
            let stop = self.stop_after(end);
            let n = (stop - offset) as usize;
            Self::push_ready(
                &mut self.ready,
                &mut self.read_at,
                data.get(..n).unwrap_or_default(),
            );
            self.delivered += stop - offset;
            self.mark_done(offset, stop);
            self.cursor = stop;
            if stop < end {
                self.file(stop, data.get(n..).unwrap_or_default());
            }
        } else {
            self.file(offset, data);
        }
        self.advance();
    }

    /// Whether delivery stands at `cursor` with nothing to do there first: no end, no
    /// link and no done range at the cursor itself.
    fn delivers_now(&self) -> bool {
        self.end != Some(self.cursor)
            && !self.links.contains_key(&self.cursor)
            && self.done_until(self.cursor) == self.cursor
    }

    /// Files `data` at `offset` as a pending piece (a longer one at the same offset wins).
    fn file(&mut self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.longest = self.longest.max(data.len() as u64);
        let keep = self
            .pending
            .get(&offset)
            .is_none_or(|old| old.len() < data.len());
        if keep {
            self.pending.insert(offset, data.to_vec());
        }
    }

    /// Marks `from..to` as a stretch the server will never fill: delivery passes over it
    /// without delivering, buffering or waiting for anything.
    pub(crate) fn skip(&mut self, from: u64, to: u64) {
        if to > from {
            self.mark_done(from, to);
            self.advance();
        }
    }

    /// The object whose region ends at `at` goes on elsewhere: hold delivery at `at` until
    /// [`Reassembly::splice`] says where.
    pub(crate) fn hold(&mut self, at: u64) {
        if !self.spliced.contains(&at) {
            self.links.insert(at, Link::Wait);
        }
    }

    /// The object whose region ends at `at` goes on at `to`, in a part whose region ends
    /// at `part_end` (where the chain returns, unless that part goes on too).
    pub(crate) fn splice(&mut self, at: u64, to: u64, part_end: u64) {
        if self.spliced.insert(at) {
            self.links.insert(at, Link::To(to));
        }
        if !self.spliced.contains(&part_end) {
            self.links.entry(part_end).or_insert(Link::Return);
        }
        self.advance();
    }

    /// The end of the done range holding `offset`, or `offset` if none does.
    fn done_until(&self, offset: u64) -> u64 {
        match self.done.range(..=offset).next_back() {
            Some((_, &end)) if end > offset => end,
            _ => offset,
        }
    }

    /// Adds `from..to` to the done ranges, merging neighbours.
    fn mark_done(&mut self, from: u64, to: u64) {
        let (mut from, mut to) = (from, to);
        if let Some((&s, &e)) = self.done.range(..=from).next_back()
            && e >= from
        {
            from = s;
            to = to.max(e);
        }
        while let Some((&s, &e)) = self.done.range(from..=to).next() {
            self.done.remove(&s);
            to = to.max(e);
        }
        self.done.insert(from, to);
    }

    /// How far delivery may run from `cursor` without crossing a link, a done range or
    /// the end of the stream.
    fn stop_after(&self, limit: u64) -> u64 {
        let after = self.cursor.saturating_add(1);
        let mut stop = limit;
        if let Some((&k, _)) = self.links.range(after..).next() {
            stop = stop.min(k);
        }
        if let Some((&s, _)) = self.done.range(after..).next() {
            stop = stop.min(s);
        }
        if let Some(e) = self.end.filter(|&e| e > self.cursor) {
            stop = stop.min(e);
        }
        stop
    }

    /// The pending piece covering `cursor`, by its offset.
    fn covering(&self) -> Option<u64> {
        let floor = self.cursor.saturating_sub(self.longest);
        self.pending
            .range(floor..=self.cursor)
            .rev()
            .find(|(off, p)| off.saturating_add(p.len() as u64) > self.cursor)
            .map(|(&off, _)| off)
    }

    /// Moves delivery as far as the pieces, done ranges and links allow.
    fn advance(&mut self) {
        loop {
            // The end and links apply where delivery *reaches* their offset, the end of
            // the region before it; a jump that lands on the same offset starts a region.
            if !self.landed && self.end == Some(self.cursor) {
                break;
            }
            if !self.landed
                && let Some(&link) = self.links.get(&self.cursor)
            {
                match link {
                    Link::Wait => break,
                    Link::To(to) => {
                        self.links.remove(&self.cursor);
                        self.ret.get_or_insert(self.cursor);
                        self.cursor = to;
                        self.landed = true;
                    }
                    Link::Return => {
                        self.links.remove(&self.cursor);
                        if let Some(back) = self.ret.take() {
                            self.cursor = back;
                            self.landed = true;
                        }
                    }
                }
                continue;
            }
            let until = self.done_until(self.cursor);
            if until > self.cursor {
                self.cursor = self.stop_after(until);
                self.landed = false;
                continue;
            }
            let Some(off) = self.covering() else { break };
            let Some(piece) = self.pending.get(&off) else {
                break;
            };
            let piece_end = off.saturating_add(piece.len() as u64);
            let stop = self.stop_after(piece_end);
            let from = (self.cursor - off) as usize;
            let to = (stop - off) as usize;
            let bytes = piece.get(from..to).unwrap_or_default();
            Self::push_ready(&mut self.ready, &mut self.read_at, bytes);
            if stop == piece_end {
                self.pending.remove(&off);
            }
            self.delivered += stop - self.cursor;
            self.mark_done(self.cursor, stop);
            self.cursor = stop;
            self.landed = false;
        }
        // Pieces wholly delivered or elided are dropped.
        while let Some((&off, p)) = self.pending.first_key_value() {
            if self.done_until(off) < off.saturating_add(p.len() as u64) {
                break;
            }
            self.pending.pop_first();
        }
    }

    /// Records that the stream ends at `end`.
    pub(crate) fn set_end(&mut self, end: u64) {
        self.end = Some(self.end.map_or(end, |e| e.min(end)));
        self.advance();
    }

    /// Where the stream ends, if known.
    pub(crate) fn end(&self) -> Option<u64> {
        self.end
    }

    /// Bytes delivered (elided stretches not counted).
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The next offset to deliver.
    #[cfg(test)]
    pub(crate) fn frontier(&self) -> u64 {
        self.cursor
    }

    /// Whether `[start, start + len)` has fully arrived (delivered, elided or pending).
    pub(crate) fn has(&self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        let from = self.done_until(start);
        if from >= end {
            return true;
        }
        let floor = from.saturating_sub(self.longest);
        self.pending
            .range(floor..=from)
            .any(|(&off, p)| off.saturating_add(p.len() as u64) >= end)
    }

    /// Whether every byte up to the end has been delivered.
    pub(crate) fn complete(&self) -> bool {
        self.end.is_some_and(|e| {
            (!self.landed && self.cursor == e) || (self.ret.is_none() && self.cursor > e)
        })
    }

    /// Moves up to `buf.len()` in-order bytes into `buf`; returns how many.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> usize {
        // One slice copy (a `VecDeque<u8>`'s drain cost about an instruction per byte on
        // top of the copy).
        let waiting = self.ready.get(self.read_at..).unwrap_or_default();
        let n = buf.len().min(waiting.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), waiting.get(..n)) {
            to.copy_from_slice(from);
        }
        self.consume(n);
        n
    }

    /// The in-order bytes waiting to be read, without copying them out: hand them on,
    /// then [`consume`](Reassembly::consume) what was used.
    pub(crate) fn peek(&self) -> &[u8] {
        self.ready.get(self.read_at..).unwrap_or_default()
    }

    /// Marks the first `n` bytes [`peek`](Reassembly::peek) showed as read (at most all).
    pub(crate) fn consume(&mut self, n: usize) {
        self.read_at = (self.read_at + n).min(self.ready.len());
        if self.read_at == self.ready.len() {
            self.ready.clear();
            self.read_at = 0;
        }
    }

    /// Appends delivered bytes to `ready`, first moving the unread ones to the front
    /// when more than half of it has been read (so it never grows past twice what waits).
    fn push_ready(ready: &mut Vec<u8>, read_at: &mut usize, bytes: &[u8]) {
        if *read_at > 0 && *read_at >= ready.len() / 2 {
            ready.drain(..*read_at);
            *read_at = 0;
        }
        ready.extend_from_slice(bytes);
    }

    /// In-order bytes waiting to be read.
    pub(crate) fn readable(&self) -> usize {
        self.ready.len() - self.read_at
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
    fn reads_in_pieces_across_the_buffer_wrapping() {
        let mut r = Reassembly::default();
        let data: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
        let mut got = Vec::new();
        let mut out = [0u8; 700];
        for (i, piece) in data.chunks(500).enumerate() {
            r.insert(i as u64 * 500, piece);
            // Read less than arrived, so the queue's front moves and its storage wraps.
            let n = r.read(&mut out[..300]);
            got.extend_from_slice(&out[..n]);
        }
        loop {
            let n = r.read(&mut out);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&out[..n]);
        }
        assert_eq!(got, data);
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

    #[test]
    fn spliced_parts_are_delivered_in_object_order() {
        // Regions of 10: object A = 0..10 then 30..40 then 50..55; object B = 10..20
        // then 40..45; object C = 20..30 (its region end, 30, is also where A's second
        // part starts: a link applies where delivery reaches an offset, not where a jump
        // lands on it).
        let a: Vec<u8> = (0..25).collect();
        let b: Vec<u8> = (100..115).collect();
        let c: Vec<u8> = (200..210).collect();
        let mut r = Reassembly::default();
        r.hold(10);
        r.insert(10, &b[..10]);
        r.insert(20, &c);
        r.insert(0, &a[..10]);
        assert_eq!(r.frontier(), 10, "held at A's region end");
        r.hold(20);
        r.splice(10, 30, 40);
        // The notice that A's second part goes on too comes with its pieces.
        r.hold(40);
        r.insert(30, &a[10..20]);
        assert_eq!(
            r.frontier(),
            40,
            "the chain waits for the return link or more parts"
        );
        r.hold(40);
        r.splice(40, 50, 60);
        r.skip(55, 60);
        r.splice(20, 40, 50);
        r.skip(45, 50);
        r.insert(50, &a[20..]);
        assert_eq!(
            r.frontier(),
            40,
            "returned to B, then on to its second part"
        );
        r.insert(40, &b[10..]);
        r.set_end(30);
        assert!(r.complete());
        let mut out = [0u8; 64];
        let n = r.read(&mut out);
        let want: Vec<u8> = [&a[..], &b[..], &c[..]].concat();
        assert_eq!(&out[..n], &want[..]);
        // Late duplicates change nothing.
        r.insert(30, &a[10..20]);
        r.hold(10);
        assert_eq!((r.readable(), r.delivered()), (0, 50));
    }

    /// One part of an object in the proptest's layout.
    #[derive(Clone, Copy, Debug)]
    struct Part {
        k: usize,
        base: u64,
        start: u64,
        follows: Option<u64>,
    }

    proptest::proptest! {
        /// §5.2: objects in regions of `region` bytes, each longer one going on in fresh
        /// regions handed out in any order, their pieces arriving in any order with
        /// duplicates, continuations learned as a client learns them (a part's
        /// description before its data; a notice with every piece of an overflowing
        /// part): the stream read is each object whole, in object order.
        #[test]
        fn any_splice_layout_and_arrival_order_reads_objects_in_order(
            lens in proptest::collection::vec(1u64..400, 1..6),
            region in 16u64..200,
            alloc_order in proptest::collection::vec(proptest::prelude::any::<u32>(), 64),
            chunk in 1usize..64,
            order in proptest::collection::vec(proptest::prelude::any::<u32>(), 256),
        ) {
            // First parts in regions 0..n, continuations after, in a shuffled order.
            let mut parts: Vec<Part> = (0..lens.len())
                .map(|k| Part { k, base: 0, start: k as u64 * region, follows: None })
                .collect();
            let mut open: Vec<usize> = (0..parts.len()).filter(|&i| lens[i] > region).collect();
            let mut next_region = lens.len() as u64;
            let mut draws = alloc_order.iter().cycle();
            while !open.is_empty() {
                let pick = *draws.next().unwrap_or(&0) as usize % open.len();
                let i = open.swap_remove(pick);
                let p = parts[i];
                let part = Part {
                    k: p.k,
                    base: p.base + region,
                    start: next_region * region,
                    follows: Some(p.start + region),
                };
                next_region += 1;
                parts.push(part);
                if lens[p.k] - part.base > region {
                    open.push(parts.len() - 1);
                }
            }
            let object = |k: usize, i: u64| (k as u64 * 7919 + i) as u8;
            let extent = |p: &Part| p.start + (lens[p.k] - p.base).min(region);
            // Pieces of every part, shuffled, some twice.
            let mut pieces: Vec<(usize, u64, u64)> = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                let mut at = p.start;
                while at < extent(p) {
                    let to = (at + chunk as u64).min(extent(p));
                    pieces.push((i, at, to));
                    at = to;
                }
            }
            let mut keys = order.iter().cycle();
            let mut ordered: Vec<(u32, (usize, u64, u64))> =
                pieces.iter().map(|&p| (*keys.next().unwrap_or(&0), p)).collect();
            ordered.extend(pieces.iter().take(3).map(|&p| (u32::MAX, p)));
            ordered.sort_by_key(|(key, _)| *key);
            let last = lens.len() - 1;
            let mut r = Reassembly::default();
            let mut described = alloc::vec![false; parts.len()];
            for (_, (i, from, to)) in ordered {
                let p = parts[i];
                if !described[i] {
                    described[i] = true;
                    let region_end = p.start + region;
                    if let Some(at) = p.follows {
                        r.splice(at, p.start, region_end);
                    }
                    r.skip(extent(&p), region_end);
                }
                let rest = lens[p.k] - p.base;
                if rest > region {
                    r.hold(p.start + region);
                } else if p.k == last && to == extent(&p) {
                    r.set_end(to);
                }
                let data: Vec<u8> = (from..to).map(|o| object(p.k, p.base + o - p.start)).collect();
                r.insert(from, &data);
            }
            proptest::prop_assert!(r.complete());
            let want: Vec<u8> = lens
                .iter()
                .enumerate()
                .flat_map(|(k, &len)| (0..len).map(move |i| object(k, i)))
                .collect();
            let mut out = alloc::vec![0u8; want.len() + 1];
            let n = r.read(&mut out);
            proptest::prop_assert_eq!(&out[..n], &want[..]);
        }
    }

    proptest::proptest! {
        /// Pieces of one stream, overlapping, duplicated, mostly in order with some
        /// swapped, read through small buffers (or in place, peek and consume) between
        /// arrivals: the reader gets exactly
        /// the stream, whichever path (in order straight to the reader, or filed) each
        /// piece took.
        #[test]
        fn any_arrival_order_reads_the_stream(
            cuts in proptest::collection::vec(1usize..3000, 1..40),
            swaps in proptest::collection::vec((0usize..40, 0usize..40), 0..8),
            dups in proptest::collection::vec(0usize..40, 0..6),
            reads in proptest::collection::vec(1usize..4000, 1..20),
        ) {
            let total: usize = cuts.iter().sum();
            let stream: Vec<u8> = (0..total).map(|i| (i * 7 % 251) as u8).collect();
            let mut pieces = Vec::new();
            let mut at = 0;
            for c in &cuts {
                pieces.push((at, at + c));
                at += c;
            }
            for d in dups {
                if let Some(&(a, b)) = pieces.get(d % pieces.len()) {
                    // A duplicate, sometimes one byte longer or shorter at its end.
                    pieces.push((a, (b + d % 3).min(total).max(a + 1) - usize::from(d % 3 == 1 && b > a + 1)));
                }
            }
            let n = pieces.len();
            for (x, y) in swaps {
                pieces.swap(x % n, y % n);
            }
            let mut r = Reassembly::default();
            let mut got = Vec::new();
            let mut buf = alloc::vec![0u8; 4000];
            for (i, &(a, b)) in pieces.iter().enumerate() {
                r.insert(a as u64, &stream[a..b]);
                let want = reads[i % reads.len()];
                if i % 2 == 0 {
                    let k = r.read(&mut buf[..want]);
                    got.extend_from_slice(&buf[..k]);
                } else {
                    // In place: what peek shows is what read would have copied.
                    let k = want.min(r.peek().len());
                    got.extend_from_slice(&r.peek()[..k]);
                    r.consume(k);
                }
            }
            r.set_end(total as u64);
            loop {
                let k = r.read(&mut buf);
                if k == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..k]);
            }
            proptest::prop_assert!(r.complete());
            proptest::prop_assert_eq!(r.readable(), 0);
            proptest::prop_assert_eq!(got, stream);
        }
    }
}
