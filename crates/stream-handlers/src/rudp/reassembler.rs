//! The [`Reassembler`]: bounded, at-most-once reassembly with eviction (the guarantees are
//! in the [`rudp`](super) module doc).

use alloc::collections::BTreeMap;
use alloc::collections::btree_map::Entry;
use alloc::vec;
use alloc::vec::Vec;

use sansio::Instant;

use super::{HEADER_LEN, Header, Kind, ReassemblyError};

/// Message ids per stream, below the highest one delivered, whose delivery is remembered.
pub const DELIVERY_WINDOW: u32 = u128::BITS;

/// Limits of a [`Reassembler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReassemblyConfig {
    /// Partial messages at once (default 16).
    pub max_messages: usize,
    /// Longest message accepted, bytes (default 1 MiB).
    pub max_message_len: u32,
    /// Bytes held by all partial messages together (default 4 MiB): the fragments' bytes
    /// plus their bookkeeping, a bit per declared fragment (in 8-byte words) and two bytes
    /// per fragment held but the last (counted by length: the allocator's slack aside).
    pub max_bytes: usize,
    /// Microseconds a partial message may wait for its next fragment (default 2 s).
    pub timeout: u64,
}

impl Default for ReassemblyConfig {
    /// 16 messages of up to 1 MiB, 4 MiB in all, 2 s between fragments.
    fn default() -> Self {
        Self {
            max_messages: 16,
            max_message_len: 1 << 20,
            max_bytes: 4 << 20,
            timeout: 2_000_000,
        }
    }
}

/// What a [`Reassembler`] has done, as counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Messages assembled (each at most once).
    pub assembled: u64,
    /// Partial messages dropped unfinished: timed out, evicted to make room, left below
    /// their stream's delivery window, or forgotten with their stream.
    pub evicted: u64,
    /// Bytes those held, as [`Reassembler::bytes_held`] counts them.
    pub evicted_bytes: u64,
    /// Of the evicted, those that had waited longer than the timeout.
    pub expired: u64,
}

/// A message assembled from all its fragments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assembled {
    /// Its stream.
    pub stream: u16,
    /// Its message id.
    pub message: u32,
    /// Sequence number of its first fragment.
    pub first_seq: u32,
    /// Fragments it arrived in.
    pub fragments: u16,
    /// Its bytes.
    pub payload: Vec<u8>,
}

/// Which recent message ids of one stream were delivered.
#[derive(Clone, Copy, Debug)]
struct Window {
    /// One past the highest id delivered.
    top: u64,
    /// Bit `i`: id `top - 1 - i` was delivered.
    bits: u128,
}

impl Window {
    fn new(id: u32) -> Self {
        Self {
            top: u64::from(id) + 1,
            bits: 1,
        }
    }

    /// Whether a fragment of message `id` may still be taken.
    fn check(&self, id: u32) -> Result<(), ReassemblyError> {
        let id = u64::from(id);
        if id >= self.top {
            return Ok(());
        }
        let back = self.top - 1 - id;
        if back >= u64::from(DELIVERY_WINDOW) {
            Err(ReassemblyError::Stale)
        } else if (self.bits >> back) & 1 == 1 {
            Err(ReassemblyError::AlreadyDelivered)
        } else {
            Ok(())
        }
    }

    /// Records the delivery of `id` (which [`Window::check`] allowed).
    fn mark(&mut self, id: u32) {
        let id = u64::from(id);
        if id >= self.top {
            let shift = id + 1 - self.top;
            self.bits = u32::try_from(shift)
                .ok()
                .and_then(|s| self.bits.checked_shl(s))
                .unwrap_or(0)
                | 1;
            self.top = id + 1;
        } else if let Some(bit) = u32::try_from(self.top - 1 - id)
            .ok()
            .and_then(|back| 1u128.checked_shl(back))
        {
            self.bits |= bit;
        }
    }

    /// The lowest id that is not stale.
    fn floor(&self) -> u64 {
        self.top.saturating_sub(u64::from(DELIVERY_WINDOW))
    }
}

/// 64-bit words of a bitmap with a bit per fragment.
fn bitmap_words(count: u16) -> usize {
    usize::from(count).div_ceil(64)
}

/// What a whole message of `len` bytes in `count` fragments holds just before it completes.
fn whole_charge(len: u32, count: u16) -> usize {
    usize::try_from(len)
        .unwrap_or(usize::MAX)
        .saturating_add(2 * usize::from(count.saturating_sub(1)))
        .saturating_add(8 * bitmap_words(count))
}

/// A message some of whose fragments arrived. Memory grows with the fragments: the
/// full-size ones (all but the last) are appended to `full` in arrival order, `order`
/// saying which each is; the last goes to `last`.
#[derive(Debug)]
struct Partial {
    head: Header,
    first_seq: u32,
    /// Bit `i`: fragment `i` arrived.
    have: Vec<u64>,
    missing: u16,
    order: Vec<u16>,
    full: Vec<u8>,
    last: Vec<u8>,
    /// When its latest fragment arrived.
    touched: Instant,
}

impl Partial {
    fn new(head: Header, first_seq: u32, now: Instant) -> Self {
        Self {
            head,
            first_seq,
            have: vec![0; bitmap_words(head.count)],
            missing: head.count,
            order: Vec::new(),
            full: Vec::new(),
            last: Vec::new(),
            touched: now,
        }
    }

    fn key(&self) -> (u16, u32) {
        (self.head.stream, self.head.message)
    }

    /// Bytes held, bookkeeping included.
    fn held(&self) -> usize {
        self.full.len() + self.last.len() + 2 * self.order.len() + 8 * self.have.len()
    }

    fn is_last(&self, index: u16) -> bool {
        index.saturating_add(1) == self.head.count
    }

    /// Bytes fragment `index` of `len` bytes would add.
    fn adds(&self, index: u16, len: usize) -> usize {
        if self.is_last(index) { len } else { len + 2 }
    }

    fn has(&self, index: u16) -> bool {
        self.have
            .get(usize::from(index / 64))
            .is_some_and(|w| (w >> (index % 64)) & 1 == 1)
    }

    fn expired(&self, now: Instant, timeout: u64) -> bool {
        now.saturating_since(self.touched) > timeout
    }

    fn add(&mut self, index: u16, body: &[u8], now: Instant) {
        if let Some(w) = self.have.get_mut(usize::from(index / 64)) {
            *w |= 1 << (index % 64);
        }
        self.missing = self.missing.saturating_sub(1);
        self.touched = now;
        if self.is_last(index) {
            self.last = body.to_vec();
        } else {
            self.order.push(index);
            self.full.extend_from_slice(body);
        }
    }

    /// The message's bytes, once every fragment arrived. Fragments that came in order are
    /// already in place; others are put in place by one copy.
    fn into_payload(self) -> Vec<u8> {
        let size = usize::from(self.head.size);
        let in_order = self
            .order
            .iter()
            .enumerate()
            .all(|(k, &i)| usize::from(i) == k);
        let mut out = if in_order {
            self.full
        } else {
            let mut out = vec![0u8; self.full.len()];
            for (chunk, &i) in self.full.chunks(size.max(1)).zip(&self.order) {
                let at = usize::from(i) * size;
                if let Some(dst) = out.get_mut(at..at + chunk.len()) {
                    dst.copy_from_slice(chunk);
                }
            }
            out
        };
        out.extend_from_slice(&self.last);
        out
    }
}

/// Assembles messages from fragments arriving in any order, at most once each, within
/// bounded memory.
///
/// Call [`handle_fragment`](Self::handle_fragment) with every data packet as it arrives.
/// Dead partial messages are dropped when room is needed; to free their memory sooner,
/// call [`expire`](Self::expire) at [`poll_timeout`](Self::poll_timeout). When a stream
/// ends (and its sender may start again from message id 0), call
/// [`forget_stream`](Self::forget_stream).
#[derive(Debug)]
pub struct Reassembler {
    cfg: ReassemblyConfig,
    partial: Vec<Partial>,
    held: usize,
    delivered: BTreeMap<u16, Window>,
    stats: ReassemblyStats,
}

impl Reassembler {
    /// An empty reassembler with limits `cfg`.
    pub fn new(cfg: ReassemblyConfig) -> Self {
        Self {
            cfg,
            partial: Vec::new(),
            held: 0,
            delivered: BTreeMap::new(),
            stats: ReassemblyStats::default(),
        }
    }

    /// Its limits.
    pub fn config(&self) -> ReassemblyConfig {
        self.cfg
    }

    /// Messages in progress.
    pub fn in_progress(&self) -> usize {
        self.partial.len()
    }

    /// Bytes held by the messages in progress, bookkeeping included (see
    /// [`ReassemblyConfig::max_bytes`]); never more than `max_bytes`.
    pub fn bytes_held(&self) -> usize {
        self.held
    }

    /// Its counters.
    pub fn stats(&self) -> ReassemblyStats {
        self.stats
    }

    /// When the first partial message in progress times out (`None`: none is in progress).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let wait = self.cfg.timeout.saturating_add(1);
        self.partial
            .iter()
            .map(|p| p.touched.saturating_add(wait))
            .min()
    }

    /// Drops every partial message whose latest fragment arrived more than the timeout
    /// before `now`; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let timeout = self.cfg.timeout;
        self.evict_where(|p| p.expired(now, timeout), true)
    }

    /// Forgets stream `stream`: drops its partial messages and which of its messages were
    /// delivered, so its sender may number messages from 0 again. Call this when the
    /// stream ends (a `Terminate` control message), never for a stream still running: its
    /// late duplicates could then be assembled again.
    pub fn forget_stream(&mut self, stream: u16) {
        self.delivered.remove(&stream);
        self.evict_where(|p| p.head.stream == stream, false);
    }

    /// Takes one packet arriving at `now`; returns the message it completes, if any.
    ///
    /// A fragment that needs room may first evict dead partial messages, then the one that
    /// has waited longest since its latest fragment (counted in [`stats`](Self::stats)).
    ///
    /// # Errors
    ///
    /// A [`ReassemblyError`] saying why the packet was dropped. It adds nothing; only a
    /// timed-out partial message of the same id may have been dropped.
    pub fn handle_fragment(
        &mut self,
        now: Instant,
        packet: &[u8],
    ) -> Result<Option<Assembled>, ReassemblyError> {
        let h = Header::parse(packet)?;
        if h.kind != Kind::Data {
            return Err(ReassemblyError::NotData);
        }
        if h.len > self.cfg.max_message_len {
            return Err(ReassemblyError::TooLong);
        }
        let (start, end) = h.span().ok_or(ReassemblyError::OutOfRange)?;
        let body = packet.get(HEADER_LEN..).unwrap_or(&[]);
        if body.len() != end - start {
            return Err(ReassemblyError::OutOfRange);
        }
        if whole_charge(h.len, h.count) > self.cfg.max_bytes {
            return Err(ReassemblyError::TooLong);
        }
        if let Some(w) = self.delivered.get(&h.stream) {
            w.check(h.message)?;
        }
        let first_seq = h.seq.wrapping_sub(u32::from(h.index));
        let key = (h.stream, h.message);
        let timeout = self.cfg.timeout;
        let mut found = self.partial.iter().position(|p| p.key() == key);
        if let Some(i) = found
            && self.partial.get(i).is_some_and(|p| p.expired(now, timeout))
        {
            self.evict(i, true);
            found = None;
        }
        let mut part = match found.and_then(|i| Some((i, self.partial.get(i)?))) {
            Some((i, p)) => {
                if (p.head.count, p.head.len, p.head.size) != (h.count, h.len, h.size)
                    || p.first_seq != first_seq
                {
                    return Err(ReassemblyError::Inconsistent);
                }
                if p.has(h.index) {
                    return Err(ReassemblyError::Duplicate);
                }
                let p = self.partial.swap_remove(i);
                self.held -= p.held();
                p
            }
            None if h.count == 1 => {
                return Ok(Some(self.deliver(Assembled {
                    stream: h.stream,
                    message: h.message,
                    first_seq,
                    fragments: 1,
                    payload: body.to_vec(),
                })));
            }
            None if self.cfg.max_messages == 0 => return Err(ReassemblyError::Busy),
            None => Partial::new(h, first_seq, now),
        };
        // Fits once the others are gone: `whole_charge` is at most `max_bytes`.
        self.make_room(now, part.held() + part.adds(h.index, body.len()));
        part.add(h.index, body, now);
        if part.missing > 0 {
            self.held += part.held();
            self.partial.push(part);
            return Ok(None);
        }
        let fragments = part.head.count;
        Ok(Some(self.deliver(Assembled {
            stream: h.stream,
            message: h.message,
            first_seq,
            fragments,
            payload: part.into_payload(),
        })))
    }

    /// Records `a` as delivered and drops the partial messages of its stream that fell
    /// below the delivery window.
    fn deliver(&mut self, a: Assembled) -> Assembled {
        let floor = match self.delivered.entry(a.stream) {
            Entry::Vacant(v) => v.insert(Window::new(a.message)).floor(),
            Entry::Occupied(mut o) => {
                o.get_mut().mark(a.message);
                o.get().floor()
            }
        };
        let stream = a.stream;
        self.evict_where(
            |p| p.head.stream == stream && u64::from(p.head.message) < floor,
            false,
        );
        self.stats.assembled += 1;
        a
    }

    /// Whether one more partial message holding `need` bytes lacks room.
    fn lacks_room(&self, need: usize) -> bool {
        self.partial.len() >= self.cfg.max_messages
            || self.held.saturating_add(need) > self.cfg.max_bytes
    }

    /// Evicts until one more partial message holding `need` bytes fits: first the dead
    /// ones, then the longest waiting since its latest fragment.
    fn make_room(&mut self, now: Instant, need: usize) {
        if !self.lacks_room(need) {
            return;
        }
        self.expire(now);
        while self.lacks_room(need) {
            let oldest =
                (0..self.partial.len()).min_by_key(|&i| self.partial.get(i).map(|p| p.touched));
            match oldest {
                Some(i) => self.evict(i, false),
                None => break,
            }
        }
    }

    fn evict_where(&mut self, mut doomed: impl FnMut(&Partial) -> bool, expired: bool) -> usize {
        let mut n = 0;
        let mut i = 0;
        while let Some(p) = self.partial.get(i) {
            if doomed(p) {
                self.evict(i, expired);
                n += 1;
            } else {
                i += 1;
            }
        }
        n
    }

    fn evict(&mut self, i: usize, expired: bool) {
        if i >= self.partial.len() {
            return;
        }
        let p = self.partial.swap_remove(i);
        let bytes = p.held();
        self.held -= bytes;
        self.stats.evicted += 1;
        self.stats.evicted_bytes += bytes as u64;
        if expired {
            self.stats.expired += 1;
        }
    }
}
