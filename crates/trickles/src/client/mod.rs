//! The stateful client engine (§2.4, §4).
//!
//! The client keeps everything the server does not: unused continuations, the SACK proof,
//! which byte ranges are outstanding, the retransmit timer and the reassembly buffer. It
//! predicts each request's responses with the server's own [`cc::plan`], so it knows which
//! packet numbers to expect, sizes each request's ranges to the responses that will carry
//! data, and never mistakes a terminated trickle for a loss. With [`ClientConfig::delta`]
//! the same prediction turns each delta-encoded continuation back into the full one
//! ([`crate::delta`]).
//!
//! Requests go out in packet-number order: the request for continuation `k` leaves once
//! every packet below `k` is resolved — received, or declared lost after `dup_thresh`
//! later packets arrived (§2.5, Fig. 10 A'). That is what keeps the prefix property: each
//! proof extends the previous one.
//!
//! Calling order, as for every sans-IO core here: [`Client::connect`], then feed
//! [`Client::handle_segment`] and [`Client::handle_timeout`], drain
//! [`Client::poll_transmit`], re-read [`Client::poll_timeout`], and [`Client::read`] the
//! stream. Every entry point takes `now` as an [`Instant`] (microseconds on the caller's
//! clock), and `poll_timeout` answers on the same clock. Many connections behind one address: [`Demux`] (four-tuple → connection,
//! local ports, whole IP packets in and out).

pub mod demux;
mod park;
mod ranges;
mod reassembly;
mod requests;
mod responses;
mod timer;
mod ucont_store;
mod upload;

pub use demux::{ConnId, Demux, DemuxError};

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;

use sansio::Instant;

use crate::cc::{self, CcConfig, RequestMode, Slot, SlotKind};
use crate::conn::FourTuple;
use crate::delta;
use crate::limits::{DEFAULT_MSS, range_len};
use crate::sack::{MAX_SACK_BLOCKS, ProofBuilder, SACK_BLOCK_LEN, SackBlock};
use crate::wire::continuation::Continuation;
use crate::wire::{
    self, ByteRange, RangeList, Request, RequestKind, Response, ResponseKind, SegmentHeader,
    WireError,
};
use ranges::Outstanding;
use reassembly::Reassembly;
use ucont_store::UcontStore;
use upload::SendStream;

/// Bytes of request payload (after the TCP header) that fit the packets responses use:
/// the default MSS, a continuation and the response header, so requests never exceed the
/// path MTU the responses fit.
const REQUEST_ROOM: usize = DEFAULT_MSS as usize + crate::wire::continuation::CONTINUATION_LEN + 24;

/// Blocks kept from the front of a proof too long to send whole (see
/// `Client::proof_blocks`): the first loss and the blocks around it.
const PROOF_HEAD: usize = 2;

/// Client settings. `cc` and `mss` must match the server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The server's congestion-control settings (the client simulates them).
    pub cc: CcConfig,
    /// Bytes the client asks each data-carrying response for.
    pub mss: u16,
    /// Later packets that must arrive before a missing one is declared lost.
    pub dup_thresh: u32,
    /// Retransmit timeout before any RTT sample.
    pub initial_rto_us: u64,
    /// Smallest retransmit timeout.
    pub min_rto_us: u64,
    /// Largest retransmit timeout (backoff stops here).
    pub max_rto_us: u64,
    /// Most client-to-server bytes one request carries.
    pub max_request_data: u16,
    /// Ask for delta-encoded continuations ([`crate::delta`]): every request sets
    /// [`wire::REQUEST_FLAG_DELTA`], and the client rebuilds each delta it receives from its
    /// own prediction for that packet number. A server that does not support them sends
    /// full continuations, which the client takes as usual.
    pub delta: bool,
    /// How long a continuation may wait unspent while the client has nothing to ask for
    /// (application-limited: no data to send, no range it can request yet). Spending
    /// such continuations at once would bounce empty requests and responses at the
    /// window's pace, growing the window on nothing; parked, they are spent in order as
    /// soon as there is something to ask. Keep it below the server's freshness horizon
    /// (its replay `horizon_us`); older ones are dropped, and the client restarts with a
    /// timeout request if it has nothing else. 0: never park.
    pub park_max_us: u64,
    /// Whether responses' TCP checksums are checked ([`wire::Checksum`]). Turn it off
    /// only under a link that has checked the whole packet already (an IP-in-UDP link:
    /// the UDP checksum covers the inner packet and the kernel verifies it); responses
    /// carry nothing a client could authenticate either way.
    pub checksum: wire::Checksum,
    /// Most packets expected at once (0: no limit), the client's receive window: a
    /// continuation that arrives while this many are in flight is parked (and spent, in
    /// order, as packets are resolved) instead of asking for more. The server's window
    /// (up to [`CcConfig::max_cwnd`]) can otherwise outgrow the socket buffer below the
    /// client, whose overflow the transport must then recover from as loss. Needs
    /// [`ClientConfig::park_max_us`] above 0.
    pub max_in_flight: u32,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            cc: CcConfig::default(),
            mss: DEFAULT_MSS,
            dup_thresh: 3,
            initial_rto_us: 1_000_000,
            min_rto_us: 200_000,
            max_rto_us: 60_000_000,
            max_request_data: 1024,
            delta: false,
            park_max_us: 500_000,
            checksum: wire::Checksum::Verify,
            max_in_flight: 0,
        }
    }
}

/// Why a segment was ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// It did not parse.
    Wire(WireError),
    /// It belongs to another connection.
    OtherConnection,
    /// The server reset the connection.
    Reset,
    /// It carries bytes beyond anything requested.
    Unrequested,
}

impl core::fmt::Display for ClientError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClientError::Wire(e) => write!(f, "unparsable segment: {e}"),
            ClientError::OtherConnection => f.write_str("segment for another connection"),
            ClientError::Reset => f.write_str("connection reset by the server"),
            ClientError::Unrequested => f.write_str("data beyond anything requested"),
        }
    }
}

impl From<WireError> for ClientError {
    fn from(e: WireError) -> Self {
        ClientError::Wire(e)
    }
}

/// A request's plan and the proof it was made from, as sent.
#[derive(Clone, Copy)]
struct Planned<'a> {
    slots: &'a [Slot],
    proof: &'a [SackBlock],
}

/// Counters a client keeps about its connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Requests sent (SYN, normal, timeout, FIN).
    pub requests: u64,
    /// Retransmit-timeout requests sent.
    pub timeouts: u64,
    /// Response segments accepted.
    pub responses: u64,
    /// Packets declared lost by the duplicate threshold.
    pub losses: u64,
    /// Retransmissions received.
    pub retransmissions: u64,
    /// Delta-encoded continuations rebuilt from a prediction.
    pub deltas_rebuilt: u64,
    /// Delta-encoded continuations dropped for want of a prediction for their number.
    pub deltas_dropped: u64,
}

/// A continuation waiting to be spent (see [`ClientConfig::park_max_us`]).
#[derive(Debug)]
struct Parked {
    /// When it was parked.
    at: u64,
    continuation: Continuation,
    ucont: Arc<[u8]>,
    /// The SACK proof as it stood when the continuation's packet was resolved: it ends
    /// at that packet, as the request made with it must, however far the proof has moved
    /// on by the time it is spent.
    proof: Vec<SackBlock>,
}

/// A numbered packet the client expects.
#[derive(Clone, Copy, Debug)]
struct Expected {
    /// The continuation predicted for it (kept only when asking for deltas, and only for
    /// slots that carry one).
    predicted: Option<Continuation>,
    /// When the request expected to produce it was sent, until its RTT sample is taken.
    sent_at: Option<u64>,
    /// The start of the byte range it carries (a key of `outstanding`), for a data slot
    /// that is not a retransmission.
    range: Option<u64>,
}

/// An arrived numbered packet not yet resolved in order.
#[derive(Debug)]
struct Arrival {
    nonce: u32,
    continuation: Option<(Continuation, Arc<[u8]>)>,
    /// `consumed` of the input continuation the response carried, if it carried one.
    consumed: Option<u64>,
}

/// A Trickles client connection.
#[derive(Debug)]
pub struct Client {
    cfg: ClientConfig,
    tuple: FourTuple,
    isn: u32,
    /// Predicted numbered packets still to resolve (one map, one lookup per packet, for
    /// everything the client keeps about each).
    expected: BTreeMap<u32, Expected>,
    arrived: BTreeMap<u32, Arrival>,
    /// Numbers below this belong to an abandoned epoch.
    floor: u32,
    proof: ProofBuilder,
    /// The highest-numbered continuation received, with its user continuation.
    latest: Option<(Continuation, Arc<[u8]>)>,
    /// Continuations that arrived when there was nothing to ask for, oldest first, with
    /// their arrival times (see [`ClientConfig::park_max_us`]).
    parked: VecDeque<Parked>,
    /// Something to ask for appeared while continuations were parked: spend them at the
    /// next `handle_timeout`.
    wake: bool,
    recv: Reassembly,
    next_offset: u64,
    /// The end of the furthest range ever requested.
    requested_end: u64,
    outstanding: BTreeMap<u64, Outstanding>,
    /// Index into `outstanding`: the ranges riding in retransmissions (few at a time).
    retransmitted: Vec<u64>,
    lost_ranges: VecDeque<ByteRange>,
    /// The output continuations' generation ([`UcontStore`]) when `lost_ranges` was last
    /// settled against them; `None` once a range was added since.
    lost_settled: Option<u64>,
    transmit: VecDeque<Vec<u8>>,
    srtt_us: u64,
    rttvar_us: u64,
    rto_us: u64,
    timeouts_in_row: u8,
    deadline: Option<u64>,
    /// The `now` of the latest call that gave one (µs): what [`Client::poll_timeout`]
    /// answers when the client wants its timer run at once.
    last_now: u64,
    out: SendStream,
    /// The SYN's data: every SYN (a retransmitted one too) carries it whole at offset 0.
    syn_data: Vec<u8>,
    fin_sent: bool,
    /// Framed requests queued before `connect` behind the first (which rides in the SYN).
    pending_frames: Vec<Vec<u8>>,
    /// Standard user continuations received (input and output).
    uconts: UcontStore,
    /// The server reset the connection.
    reset: bool,
    stats: ClientStats,
}

impl Client {
    /// A client for connection `tuple` whose SYN will carry initial sequence number `isn`
    /// (choose it at random: with the tuple it names the connection to the server).
    pub fn new(cfg: ClientConfig, tuple: FourTuple, isn: u32) -> Client {
        Client {
            cfg,
            tuple,
            isn,
            expected: BTreeMap::new(),
            arrived: BTreeMap::new(),
            floor: 0,
            proof: ProofBuilder::new(),
            latest: None,
            parked: VecDeque::new(),
            wake: false,
            recv: Reassembly::default(),
            next_offset: 0,
            requested_end: 0,
            outstanding: BTreeMap::new(),
            retransmitted: Vec::new(),
            lost_ranges: VecDeque::new(),
            lost_settled: None,
            transmit: VecDeque::new(),
            srtt_us: 0,
            rttvar_us: 0,
            rto_us: cfg.initial_rto_us,
            timeouts_in_row: 0,
            deadline: None,
            last_now: 0,
            out: SendStream::default(),
            syn_data: Vec::new(),
            fin_sent: false,
            pending_frames: Vec::new(),
            uconts: UcontStore::default(),
            reset: false,
            stats: ClientStats::default(),
        }
    }

    /// Sends the SYN at `now`, carrying `data` (the application's first request, which a
    /// Trickles server answers at once) and asking for the first responses' data. Bytes
    /// queued with [`Client::send_data`] or [`Client::request`] before `connect` ride in
    /// the SYN too, ahead of `data` (§2.6: `write()` before `connect()`). The SYN carries
    /// at most `max_request_data` bytes; the rest follows in the next requests.
    pub fn connect(&mut self, now: Instant, data: &[u8]) {
        let now_us = self.clock(now);
        let mut queued = self.out.unsent_prefix();
        queued.extend_from_slice(data);
        // The SYN carries at most `max_request_data` bytes; the rest follows in requests.
        let first = queued.len().min(usize::from(self.cfg.max_request_data));
        let rest = queued.split_off(first);
        self.syn_data = queued;
        self.out = SendStream::starting_at(self.syn_data.len() as u64);
        self.out.push(&rest);
        for frame in core::mem::take(&mut self.pending_frames) {
            self.out.push_framed(&frame);
        }
        let slots = cc::open(&self.cfg.cc);
        let planned = Planned {
            slots: &slots,
            proof: &[],
        };
        self.send_with(now_us, RequestKind::Syn, None, &[], planned, 0);
    }

    /// Queues `data` for the server. It rides in the following requests, at most
    /// `max_request_data` bytes each, with its stream offset (the SYN's data occupies the
    /// offsets before it), and is sent again until a response to a request carrying it
    /// arrives.
    pub fn send_data(&mut self, data: &[u8]) {
        self.out.push(data);
        self.wake = !self.parked.is_empty() || self.idle();
    }

    /// Queues one application request (`msk_request`) and returns at once: like
    /// [`Client::send_data`], but the request starts a packet of its own and no packet
    /// carries the end of one request with the start of the next, so a stateless server
    /// sees request boundaries at packet boundaries. Before [`Client::connect`], the first
    /// request rides in the SYN and later ones follow it.
    pub fn request(&mut self, data: &[u8]) {
        if self.connected() {
            self.out.push_framed(data);
            self.wake = !self.parked.is_empty() || self.idle();
        } else if self.out.is_empty() {
            self.out.push(data);
        } else {
            self.pending_frames.push(data.to_vec());
        }
    }

    /// Whether [`Client::connect`] was called.
    fn connected(&self) -> bool {
        self.stats.requests > 0
    }

    /// Whether everything queued with [`Client::connect`] and [`Client::send_data`] has
    /// reached the server.
    pub fn sent_all(&self) -> bool {
        self.out.is_idle()
    }

    /// The connection's addresses and ports.
    pub fn tuple(&self) -> &FourTuple {
        &self.tuple
    }

    /// Counters.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Whether the server refused the connection with a reset; nothing more is sent.
    pub fn is_reset(&self) -> bool {
        self.reset
    }

    /// Whether the whole server output has arrived (the server marked its end).
    pub fn is_complete(&self) -> bool {
        self.recv.complete()
    }

    /// Bytes of server output received in order so far.
    pub fn delivered(&self) -> u64 {
        self.recv.delivered()
    }

    /// In-order bytes waiting for [`Client::read`].
    pub fn readable(&self) -> usize {
        self.recv.readable()
    }

    /// Reads in-order server output into `buf`; returns how many bytes.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        self.recv.read(buf)
    }

    /// The in-order server output waiting to be read, in place (no copy): use it, then
    /// [`Client::consume`] as much as was used. What [`Client::read`] would return next.
    pub fn peek(&self) -> &[u8] {
        self.recv.peek()
    }

    /// Drops the first `n` bytes of [`Client::peek`] (at most all of them), as a read
    /// would.
    pub fn consume(&mut self, n: usize) {
        self.recv.consume(n);
    }

    /// Packets the client expects and has not yet resolved: its view of the window in
    /// flight.
    pub fn in_flight(&self) -> usize {
        self.expected.len()
    }

    /// The smoothed RTT, once measured.
    pub fn srtt_us(&self) -> Option<u64> {
        (self.srtt_us > 0).then_some(self.srtt_us)
    }

    /// The next segment to send (TCP header and payload; the caller adds IP).
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.transmit.pop_front()
    }

    /// When [`Client::handle_timeout`] wants to be called, on the caller's clock. It may
    /// be in the past: right after [`Client::send_data`] or [`Client::request`] woke a
    /// client holding parked continuations it is the `now` of the latest call, due at
    /// once. `None` when the client waits for nothing (done, or idle with nothing to
    /// send).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let due = if self.wake {
            Some(self.last_now)
        } else {
            self.deadline
        };
        due.map(Instant::from_micros)
    }

    /// Notes `now` as the latest time seen and returns it in microseconds, the unit
    /// inside.
    fn clock(&mut self, now: Instant) -> u64 {
        self.last_now = now.micros();
        self.last_now
    }
}
