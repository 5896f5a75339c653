//! The event queue (§3.1): each segment the server accepts becomes a [`Minisocket`] waiting
//! for the application, in receive order.

use super::*;

/// Why [`EventQueue::push_segment`] queued nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// The server refused the segment (see [`Rejected`]); nothing about it is kept.
    Rejected(Rejected),
    /// The queue is full: the segment was not even examined (it costs no MAC and does not
    /// touch the replay filter), as if the network had dropped it.
    Full,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Rejected(r) => write!(f, "rejected: {r}"),
            PushError::Full => f.write_str("event queue full"),
        }
    }
}

/// Counters of an [`EventQueue`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Events queued (pushed or installed).
    pub queued: u64,
    /// Segments the server refused.
    pub rejected: u64,
    /// Segments not examined because the queue was full.
    pub overflow: u64,
}

/// The queue of events waiting for the application (§3.1), in receive order.
#[derive(Clone, Debug)]
pub struct EventQueue {
    events: VecDeque<Minisocket>,
    capacity: usize,
    stats: QueueStats,
}

impl EventQueue {
    /// An empty queue holding at most `capacity` events.
    pub fn new(capacity: usize) -> EventQueue {
        EventQueue {
            events: VecDeque::new(),
            capacity,
            stats: QueueStats::default(),
        }
    }

    /// Runs one segment (the bytes after the IP header, from `src` to `dst`) through
    /// `server` at `now` and queues its event. A full queue refuses the segment before
    /// the server sees it.
    pub fn push_segment(
        &mut self,
        server: &mut Server,
        now: Instant,
        src: Addr,
        dst: Addr,
        tcp: &[u8],
    ) -> Result<(), PushError> {
        if self.events.len() >= self.capacity {
            self.stats.overflow += 1;
            return Err(PushError::Full);
        }
        let reply = match server.handle_request(now, src, dst, tcp) {
            Ok(r) => r,
            Err(e) => {
                self.stats.rejected += 1;
                return Err(PushError::Rejected(e));
            }
        };
        let e = reply.event;
        self.events.push_back(Minisocket {
            kind: e.kind,
            tuple: e.tuple,
            conn_nonce: e.conn_nonce,
            received: now,
            user_continuation: e.user_continuation.to_vec(),
            data_offset: e.data_offset,
            data: e.data.to_vec(),
            responses: reply.responses,
            uconts: Uconts::default(),
        });
        self.stats.queued += 1;
        Ok(())
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event waits.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The oldest event, left in place.
    pub fn front(&self) -> Option<&Minisocket> {
        self.events.front()
    }

    /// Takes the oldest event out of the queue (`msk_detach`): the minisocket stays valid
    /// for every operation and is the caller's.
    pub fn pop(&mut self) -> Option<Minisocket> {
        self.events.pop_front()
    }

    /// Removes and frees the oldest event unanswered (`msk_drop`): to the client it is a
    /// lost packet, recovered like any other.
    pub fn drop_front(&mut self) -> bool {
        self.events.pop_front().is_some()
    }

    /// Removes the events `select` picks (`msk_extract_events`), in order; the rest stay
    /// in order.
    pub fn extract(&mut self, mut select: impl FnMut(&Minisocket) -> bool) -> Vec<Minisocket> {
        let mut out = Vec::new();
        let mut keep = VecDeque::with_capacity(self.events.len());
        for m in self.events.drain(..) {
            if select(&m) {
                out.push(m);
            } else {
                keep.push_back(m);
            }
        }
        self.events = keep;
        out
    }

    /// Queues a minisocket (`msk_install_events`), behind the events already waiting; a
    /// full queue gives it back.
    pub fn install(&mut self, m: Minisocket) -> Result<(), Box<Minisocket>> {
        if self.events.len() >= self.capacity {
            self.stats.overflow += 1;
            return Err(Box::new(m));
        }
        self.events.push_back(m);
        self.stats.queued += 1;
        Ok(())
    }

    /// Counters.
    pub fn stats(&self) -> QueueStats {
        self.stats
    }

    /// Bytes the queue holds: linear in the events waiting, nothing per connection.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<EventQueue>()
            + self.events.capacity() * core::mem::size_of::<Minisocket>()
            + self
                .events
                .iter()
                .map(Minisocket::heap_bytes)
                .sum::<usize>()
    }
}
