//! Reliable client-to-server data.
//!
//! The server keeps nothing, so it cannot acknowledge data; a response is the
//! acknowledgment. Each chunk rides in one request together with its offset in the
//! client's output stream, and is done once any response predicted for that request
//! arrives. If every predicted response is declared lost (or a retransmit timeout abandons
//! them), the chunk goes back to be sent again at the same offset; the application sees
//! the offset and can tell a repeat from new input.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec::Vec;

/// A chunk waiting for one of its request's responses.
#[derive(Clone, Debug)]
struct Flight {
    len: usize,
    /// Packet numbers the request was predicted to produce.
    numbers: Vec<u32>,
    /// How many of them are not yet declared lost.
    pending: usize,
}

/// The client's output stream.
#[derive(Debug, Default)]
pub(crate) struct SendStream {
    /// Bytes from offset `base` on that are not yet known to have arrived.
    buf: VecDeque<u8>,
    base: u64,
    /// First offset never sent.
    next: u64,
    /// Chunks to send again, by offset.
    lost: BTreeMap<u64, usize>,
    /// Chunks in flight, by offset.
    flights: BTreeMap<u64, Flight>,
    /// Offsets where a framed request ([`SendStream::push_framed`]) starts: no chunk
    /// crosses one, so each request begins a packet of its own.
    frames: BTreeSet<u64>,
    /// The most input the server has reported consuming (§4.2), once it has reported any:
    /// bytes from here on stay buffered, since the server may ask for them again.
    input_floor: Option<u64>,
}

impl SendStream {
    /// An empty stream whose first byte will have offset `offset`.
    pub(crate) fn starting_at(offset: u64) -> SendStream {
        SendStream {
            base: offset,
            next: offset,
            ..SendStream::default()
        }
    }

    /// Appends `data` to the stream.
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.buf.extend(data);
    }

    /// Appends `data` as one framed request: it starts a new chunk, and the next
    /// framed request starts another.
    pub(crate) fn push_framed(&mut self, data: &[u8]) {
        let start = self.end();
        self.frames.insert(start);
        self.buf.extend(data);
        self.frames.insert(self.end());
    }

    /// The server reported (in an input continuation) that it has consumed the stream up
    /// to `consumed`. The newest report counts: if nothing in flight or queued covers
    /// `consumed`, the bytes from there on are sent again (the server read less than it
    /// was sent, and the responses that said so may have been the only ones).
    pub(crate) fn input_consumed(&mut self, consumed: u64) {
        if self.input_floor.is_some_and(|f| consumed < f) {
            return; // An older report.
        }
        self.input_floor = Some(consumed);
        if consumed >= self.next || consumed < self.base {
            return;
        }
        let covered = self
            .lost
            .range(..=consumed)
            .next_back()
            .is_some_and(|(&o, &l)| o + l as u64 > consumed)
            || self
                .flights
                .range(..=consumed)
                .next_back()
                .is_some_and(|(&o, f)| o + f.len as u64 > consumed);
        if !covered {
            // Drop queued pieces above it (they are re-sent as part of this one).
            self.lost.retain(|&o, _| o < consumed);
            self.lost.insert(consumed, (self.next - consumed) as usize);
        }
    }

    /// Whether anything is waiting to be sent (new or lost).
    pub(crate) fn has_unsent(&self) -> bool {
        !self.lost.is_empty() || self.next < self.end()
    }

    /// Whether nothing was ever pushed (or everything pushed is gone).
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes pushed and not yet sent, before anything was sent (used to move data
    /// queued before `connect` into the SYN).
    pub(crate) fn unsent_prefix(&self) -> Vec<u8> {
        self.buf.iter().copied().collect()
    }

    /// Whether every byte pushed has arrived.
    pub(crate) fn is_idle(&self) -> bool {
        !self.has_unsent() && self.flights.is_empty()
    }

    fn end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// The next chunk to send, at most `max` bytes: a lost one first, then new bytes.
    pub(crate) fn take(&mut self, max: usize) -> Option<(u64, Vec<u8>)> {
        if max == 0 {
            return None;
        }
        let (offset, len) = if let Some((&offset, &len)) = self.lost.first_key_value() {
            self.lost.remove(&offset);
            if len > max {
                self.lost.insert(offset + max as u64, len - max);
            }
            (offset, len.min(max))
        } else if self.next < self.end() {
            // Up to the next frame boundary, if one comes first.
            let stop = self
                .frames
                .range(self.next + 1..)
                .next()
                .copied()
                .unwrap_or(self.end())
                .min(self.end());
            let len = ((stop - self.next) as usize).min(max);
            let offset = self.next;
            self.next += len as u64;
            (offset, len)
        } else {
            return None;
        };
        let from = (offset - self.base) as usize;
        Some((offset, self.buf.range(from..from + len).copied().collect()))
    }

    /// Records that the chunk at `offset` went out in a request predicted to produce
    /// `numbers`. With no predicted response it is lost at once.
    pub(crate) fn sent(&mut self, offset: u64, len: usize, numbers: Vec<u32>) {
        if numbers.is_empty() {
            self.lost.insert(offset, len);
            return;
        }
        let pending = numbers.len();
        self.flights.insert(
            offset,
            Flight {
                len,
                numbers,
                pending,
            },
        );
    }

    /// Packet `number` arrived: chunks whose request produced it are done, except the part
    /// at or past `consumed` when the response carried an input continuation that consumed
    /// less (§4.2): that part goes back to be sent again. Once the server has sent any
    /// input continuation, a response without one counts as its latest report (so a
    /// server that reads input through input continuations reports the end of it too,
    /// e.g. bundled with the output continuation it opens).
    pub(crate) fn on_received(&mut self, number: u32, consumed: Option<u64>) {
        // Once the server reports consumption through input continuations, only they say
        // how far it read: a response without one counts as the latest report.
        let consumed = consumed.or(self.input_floor);
        let mut again = Vec::new();
        self.flights.retain(|&offset, f| {
            if !f.numbers.contains(&number) {
                return true;
            }
            // The server read only up to `consumed` of this chunk: send the rest again.
            let end = offset + f.len as u64;
            if let Some(c) = consumed
                && c < end
            {
                let from = c.max(offset);
                again.push((from, (end - from) as usize));
            }
            false
        });
        for (offset, len) in again {
            self.lost.insert(offset, len);
        }
        self.trim();
    }

    /// Packet `number` was declared lost: chunks with no response left go back.
    pub(crate) fn on_lost(&mut self, number: u32) {
        let mut gone = Vec::new();
        for (&offset, f) in self.flights.iter_mut() {
            if f.numbers.contains(&number) {
                f.pending = f.pending.saturating_sub(1);
                if f.pending == 0 {
                    gone.push(offset);
                }
            }
        }
        for offset in gone {
            if let Some(f) = self.flights.remove(&offset) {
                self.lost.insert(offset, f.len);
            }
        }
    }

    /// Every chunk in flight goes back to be sent again (a retransmit timeout).
    pub(crate) fn abandon(&mut self) {
        for (offset, f) in core::mem::take(&mut self.flights) {
            self.lost.insert(offset, f.len);
        }
    }

    /// Drops bytes below the lowest chunk still unsent, lost or in flight.
    fn trim(&mut self) {
        let low = [
            self.lost.keys().next().copied(),
            self.flights.keys().next().copied(),
            self.input_floor,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(self.next);
        let drop = (low.min(self.next) - self.base) as usize;
        self.buf.drain(..drop.min(self.buf.len()));
        self.base += drop as u64;
        // Boundaries at or below the first unsent byte no longer split anything.
        while self
            .frames
            .first()
            .is_some_and(|&f| f <= self.next.min(self.base))
        {
            self.frames.pop_first();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_come_back_until_a_response_arrives() {
        let mut s = SendStream::default();
        s.push(b"hello world");
        let (o, d) = s.take(5).unwrap_or_default();
        assert_eq!((o, &d[..]), (0, &b"hello"[..]));
        s.sent(0, 5, alloc::vec![10, 11]);
        let (o, d) = s.take(100).unwrap_or_default();
        assert_eq!((o, &d[..]), (5, &b" world"[..]));
        s.sent(5, 6, alloc::vec![12]);
        s.on_lost(10);
        assert!(!s.has_unsent());
        s.on_lost(11);
        assert_eq!(s.take(100), Some((0, b"hello".to_vec())));
        s.sent(0, 5, alloc::vec![20]);
        s.on_received(20, None);
        s.on_received(12, None);
        assert!(s.is_idle());
        assert_eq!(s.base, 11);
    }
}
