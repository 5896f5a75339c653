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
//! stream. Many connections behind one address: [`Demux`] (four-tuple → connection,
//! local ports, whole IP packets in and out).

pub mod demux;
mod park;
mod ranges;
mod recv;
mod send;
mod timer;
mod ucont;

pub use demux::{ConnId, Demux, DemuxError};

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use crate::cc::{self, CcConfig, RequestMode, Slot, SlotKind};
use crate::conn::FourTuple;
use crate::delta;
use crate::limits::{DEFAULT_MSS, payload_limit, ucont_room};
use crate::sack::{MAX_SACK_BLOCKS, ProofBuilder, SACK_BLOCK_LEN, SackBlock};
use crate::wire::continuation::Continuation;
use crate::wire::{
    self, ByteRange, RangeList, Request, RequestKind, Response, ResponseKind, SegmentHeader,
    WireError,
};
use ranges::Outstanding;
use recv::Reassembly;
use send::SendStream;
use ucont::UcontStore;

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

/// An arrived numbered packet not yet resolved in order.
#[derive(Debug)]
struct Arrival {
    nonce: u32,
    continuation: Option<(Continuation, Vec<u8>)>,
    /// `consumed` of the input continuation the response carried, if it carried one.
    consumed: Option<u64>,
}

/// A Trickles client connection.
#[derive(Debug)]
pub struct Client {
    cfg: ClientConfig,
    tuple: FourTuple,
    isn: u32,
    /// Predicted numbered packets still to resolve, each with the continuation predicted
    /// for it (kept only when asking for deltas, and only for slots that carry one).
    expected: BTreeMap<u32, Option<Continuation>>,
    arrived: BTreeMap<u32, Arrival>,
    /// Numbers below this belong to an abandoned epoch.
    floor: u32,
    proof: ProofBuilder,
    /// The highest-numbered continuation received, with its user continuation.
    latest: Option<(Continuation, Vec<u8>)>,
    /// Continuations that arrived when there was nothing to ask for, oldest first, with
    /// their arrival times (see [`ClientConfig::park_max_us`]).
    parked: VecDeque<(u64, Continuation, Vec<u8>)>,
    /// Something to ask for appeared while continuations were parked: spend them at the
    /// next `handle_timeout`.
    wake: bool,
    recv: Reassembly,
    next_offset: u64,
    /// The end of the furthest range ever requested.
    requested_end: u64,
    outstanding: BTreeMap<u64, Outstanding>,
    /// Index into `outstanding`: the range each numbered data slot carries, by number.
    by_number: BTreeMap<u32, u64>,
    /// Index into `outstanding`: the ranges riding in retransmissions (few at a time).
    retransmitted: Vec<u64>,
    lost_ranges: VecDeque<ByteRange>,
    transmit: VecDeque<Vec<u8>>,
    /// Send time of the request expected to produce each number (RTT samples).
    sent_at: BTreeMap<u32, u64>,
    srtt_us: u64,
    rttvar_us: u64,
    rto_us: u64,
    timeouts_in_row: u8,
    deadline: Option<u64>,
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
            by_number: BTreeMap::new(),
            retransmitted: Vec::new(),
            lost_ranges: VecDeque::new(),
            transmit: VecDeque::new(),
            sent_at: BTreeMap::new(),
            srtt_us: 0,
            rttvar_us: 0,
            rto_us: cfg.initial_rto_us,
            timeouts_in_row: 0,
            deadline: None,
            out: SendStream::default(),
            syn_data: Vec::new(),
            fin_sent: false,
            pending_frames: Vec::new(),
            uconts: UcontStore::default(),
            reset: false,
            stats: ClientStats::default(),
        }
    }

    /// Sends the SYN at `now_us`, carrying `data` (the application's first request, which a
    /// Trickles server answers at once) and asking for the first responses' data. Bytes
    /// queued with [`Client::send_data`] or [`Client::request`] before `connect` ride in
    /// the SYN too, ahead of `data` (§2.6: `write()` before `connect()`). The SYN carries
    /// at most `max_request_data` bytes; the rest follows in the next requests.
    pub fn connect(&mut self, now_us: u64, data: &[u8]) {
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

    /// When [`Client::handle_timeout`] wants to be called (µs, on the caller's clock). It
    /// may be in the past — 0 right after [`Client::send_data`] or [`Client::request`]
    /// woke a client holding parked continuations — meaning "now"; `None` when the client
    /// waits for nothing (done, or idle with nothing to send).
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.wake { Some(0) } else { self.deadline }
    }

    /// Handles one segment from the server (the bytes after the IP header).
    pub fn handle_segment(&mut self, now_us: u64, tcp: &[u8]) -> Result<(), ClientError> {
        let seg = wire::parse_segment(&self.tuple.server_addr, &self.tuple.client_addr, tcp)?;
        if seg.src_port != self.tuple.server_port || seg.dst_port != self.tuple.client_port {
            return Err(ClientError::OtherConnection);
        }
        let resp = Response::parse(seg.payload)?;
        if resp.kind == ResponseKind::Reset {
            // The server refused the connection (for example a request its application
            // cannot summarise statelessly): stop sending and keep what arrived.
            self.deadline = None;
            self.reset = true;
            self.transmit.clear();
            return Err(ClientError::Reset);
        }
        if self.reset {
            return Err(ClientError::Reset);
        }
        let continuation = self.rebuild(&resp);
        if let Some(c) = &continuation
            && let Some((l, _)) = &self.latest
            && c.conn_nonce != l.conn_nonce
        {
            return Err(ClientError::OtherConnection);
        }
        let end = resp.offset.saturating_add(resp.data.len() as u64);
        if end > self.requested_end {
            // Data the client never asked for (responses carry no MAC the client can
            // check): refusing it bounds the reassembly buffer by what was requested.
            return Err(ClientError::Unrequested);
        }
        self.stats.responses += 1;
        let consumed = self.take_uconts(resp.user_continuation);
        let mut progress = false;
        if !resp.data.is_empty() && !self.recv.has(resp.offset, resp.data.len() as u64) {
            progress = true;
        }
        if resp.end_of_stream {
            // Before the data: delivery stops there, whatever follows in sequence order.
            self.recv.set_end(end);
            progress = true;
        }
        self.recv.insert(resp.offset, resp.data);
        if let Some(o) = self.outstanding.get(&resp.offset).copied()
            && let got = u64::from(o.len).min(resp.data.len() as u64)
            && (got == 0 || self.recv.has(resp.offset, got))
        {
            if resp.data.len() >= usize::from(o.len) || resp.end_of_stream {
                self.outstanding.remove(&resp.offset);
            } else {
                // A short answer (the application had less to send yet, or a retried
                // request's halved limit): ask for the rest again.
                self.range_short(resp.offset, resp.data.len() as u16);
            }
        }
        if resp.kind == ResponseKind::Retransmit {
            self.stats.retransmissions += 1;
        } else if resp.packet_number >= self.floor
            && !self.arrived.contains_key(&resp.packet_number)
        {
            if let Some(sent) = self.sent_at.remove(&resp.packet_number) {
                self.rtt_sample(now_us.saturating_sub(sent));
            }
            let cont = continuation.map(|c| (c, resp.user_continuation.to_vec()));
            if let Some((c, u)) = &cont
                && self
                    .latest
                    .as_ref()
                    .is_none_or(|(l, _)| c.number > l.number)
            {
                self.latest = Some((*c, u.clone()));
                progress = true;
            }
            self.arrived.insert(
                resp.packet_number,
                Arrival {
                    nonce: resp.nonce,
                    continuation: cont,
                    consumed,
                },
            );
        }
        if progress {
            self.timeouts_in_row = 0;
            self.rto_us = self.computed_rto();
        }
        self.resolve(now_us);
        self.unpark(now_us);
        self.arm(now_us, progress);
        Ok(())
    }

    /// The response's full continuation: as sent, or rebuilt from its delta and the
    /// prediction for its number. A delta with no prediction is dropped (the response then
    /// counts as one whose continuation was lost); a wrong rebuild fails the server's MAC.
    fn rebuild(&mut self, resp: &Response<'_>) -> Option<Continuation> {
        if resp.continuation.is_some() {
            return resp.continuation;
        }
        let delta = resp.delta?;
        match self.expected.get(&resp.packet_number).copied().flatten() {
            Some(predicted) => {
                self.stats.deltas_rebuilt += 1;
                Some(delta.apply(&predicted))
            }
            None => {
                self.stats.deltas_dropped += 1;
                None
            }
        }
    }

    /// Resolves packets in number order: each arrival extends the proof and releases its
    /// continuation's request; a packet still missing after `dup_thresh` later arrivals is
    /// declared lost.
    fn resolve(&mut self, now_us: u64) {
        loop {
            let next_expected = self.expected.first_key_value().map(|(&n, _)| n);
            let next_arrived = self.arrived.first_key_value().map(|(&n, _)| n);
            match (next_expected, next_arrived) {
                (_, Some(a)) if next_expected.is_none_or(|e| a <= e) => {
                    self.expected.remove(&a);
                    let Some(arrival) = self.arrived.remove(&a) else {
                        break;
                    };
                    self.proof.push(a, arrival.nonce);
                    self.out.on_received(a, arrival.consumed);
                    self.by_number.remove(&a);
                    self.count_later(a);
                    if let Some((c, ucont)) = arrival.continuation {
                        self.spend(now_us, c, &ucont);
                    }
                }
                (Some(e), _) => {
                    // Every arrival still held is above `e` (those below were resolved
                    // first), so they all count.
                    let later = self.arrived.len() as u32;
                    if later < self.cfg.dup_thresh {
                        break;
                    }
                    self.expected.remove(&e);
                    self.sent_at.remove(&e);
                    self.stats.losses += 1;
                    self.out.on_lost(e);
                    if let Some(start) = self.by_number.remove(&e)
                        && self
                            .outstanding
                            .get(&start)
                            .is_some_and(|o| !o.retransmit && o.watch == e)
                    {
                        self.range_lost(start);
                    }
                }
                (None, _) => break,
            }
        }
    }

    /// The user continuation a request carries, and the end of the output it may ask for
    /// with it (see the `ucont` module): the best input continuation when client data
    /// waits, else the output continuation covering the next range, else `given` (the
    /// one that arrived with the transport continuation being spent).
    fn pick_ucont(&self, kind: RequestKind, given: &[u8]) -> (Vec<u8>, Option<u64>) {
        if kind == RequestKind::Syn || kind == RequestKind::Fin {
            return (given.to_vec(), None);
        }
        if self.out.has_unsent()
            && let Some(input) = self.uconts.input()
        {
            // Ranges of known output regions need their output continuation: a request
            // carrying input asks for none of them (before any is known, it asks blindly
            // from the start, which the server may answer from the object it opens).
            let limit = self.uconts.has_outputs().then_some(0);
            return (input.to_vec(), limit);
        }
        if let Some(start) = self.peek_range_start()
            && let Some((end, output)) = self.uconts.output_for(start)
        {
            return (output.to_vec(), Some(end));
        }
        (given.to_vec(), None)
    }

    /// The proof to send: the whole one, or — when a window lost so much that it needs more
    /// than [`MAX_SACK_BLOCKS`] blocks — its first [`PROOF_HEAD`] blocks (which fix the
    /// first loss) and its last blocks (which fix the run of losses right before the
    /// request). The blocks left out read as losses to the server: a client may always
    /// report more loss than it had, and the server reads only the first gap and the gap
    /// before the request, which both survive.
    fn proof_blocks(&self) -> Vec<SackBlock> {
        let blocks = self.proof.blocks();
        if blocks.len() <= MAX_SACK_BLOCKS {
            return blocks.to_vec();
        }
        let tail = MAX_SACK_BLOCKS - PROOF_HEAD;
        let mut out = blocks.get(..PROOF_HEAD).unwrap_or_default().to_vec();
        out.extend_from_slice(blocks.get(blocks.len() - tail..).unwrap_or_default());
        out
    }

    /// Sends the request that uses continuation `c` (the FIN once done).
    pub(super) fn spend_now(&mut self, now_us: u64, c: Continuation, ucont: &[u8]) {
        self.proof.trim_below(c.proof_start);
        if self.done() {
            // Done: the first unused continuation carries the FIN (a hint: the server
            // frees nothing, its application may).
            if !self.fin_sent {
                self.fin_sent = true;
                let proof = self.proof_blocks();
                let planned = Planned {
                    slots: &[],
                    proof: &proof,
                };
                self.send_with(now_us, RequestKind::Fin, Some(c), ucont, planned, 0);
            }
            return;
        }
        let blocks = self.proof_blocks();
        let Ok(slots) = cc::plan(&c, &blocks, RequestMode::Normal, &self.cfg.cc) else {
            return;
        };
        let planned = Planned {
            slots: &slots,
            proof: &blocks,
        };
        self.send_with(now_us, RequestKind::Request, Some(c), ucont, planned, 0);
    }

    /// Records what `planned.slots` will bring, assigns ranges, and queues the request
    /// with `planned.proof` (the blocks the plan was made from).
    fn send_with(
        &mut self,
        now_us: u64,
        kind: RequestKind,
        c: Option<Continuation>,
        ucont: &[u8],
        planned: Planned<'_>,
        retry: u8,
    ) {
        let Planned { slots, proof } = planned;
        self.settle();
        let (ucont, range_end) = self.pick_ucont(kind, ucont);
        let ucont = ucont.as_slice();
        let mut ranges = RangeList::new();
        // A retransmission is watched against packets numbered from this request's first
        // new packet on; a request with none (a trickle terminated in recovery) watches
        // packets after everything predicted so far, which come from later requests.
        let next_number = slots
            .iter()
            .filter(|s| s.kind != SlotKind::Retransmit)
            .map(|s| s.number)
            .min()
            .or_else(|| {
                self.expected
                    .last_key_value()
                    .map(|(&n, _)| n.saturating_add(1))
            })
            .unwrap_or(self.floor);
        for slot in slots {
            if slot.kind != SlotKind::Retransmit {
                let predicted = slot
                    .params
                    .filter(|_| self.cfg.delta)
                    .map(|p| delta::predict(&p, c.as_ref()));
                self.expected.insert(slot.number, predicted);
                self.sent_at.entry(slot.number).or_insert(now_us);
            }
            if !slot.kind.carries_data() {
                continue;
            }
            let size = ucont_room(
                usize::from(payload_limit(self.cfg.mss, slot.params.is_some())),
                ucont.len(),
            ) as u16;
            let Some(range) = self.next_range(size, range_end) else {
                continue;
            };
            self.requested_end = self
                .requested_end
                .max(range.start.saturating_add(u64::from(range.len)));
            let retransmit = slot.kind == SlotKind::Retransmit;
            let watch = if retransmit { next_number } else { slot.number };
            if ranges.push(range).is_err() {
                self.lost_ranges.push_front(range);
                continue;
            }
            if retransmit {
                self.retransmitted.push(range.start);
            } else {
                self.by_number.insert(slot.number, range.start);
            }
            self.outstanding.insert(
                range.start,
                Outstanding {
                    len: range.len,
                    watch,
                    retransmit,
                    later: 0,
                },
            );
        }
        let sack: Vec<u8> = if kind == RequestKind::Syn {
            Vec::new()
        } else {
            proof
                .iter()
                .flat_map(|b| {
                    let mut out = [0u8; SACK_BLOCK_LEN];
                    b.emit(&mut out);
                    out
                })
                .collect()
        };
        let numbered: Vec<u32> = slots
            .iter()
            .filter(|s| s.kind != SlotKind::Retransmit)
            .map(|s| s.number)
            .collect();
        // Data rides only where a response is predicted (that response acknowledges it).
        let chunk = if kind == RequestKind::Syn {
            // The SYN carries the connection's first request, always the same bytes.
            (!self.syn_data.is_empty()).then(|| (0, self.syn_data.clone()))
        } else if kind == RequestKind::Fin || numbered.is_empty() {
            None
        } else {
            // At most `max_request_data`, and no more than fits a packet the size of a full
            // response beside everything else the request carries (a long user
            // continuation, a long proof).
            let fixed = Request {
                kind,
                flags: 0,
                retry,
                continuation: c,
                sack: &sack,
                ranges,
                user_continuation: ucont,
                data_offset: Some(0),
                data: &[],
            }
            .buffer_len();
            let room = REQUEST_ROOM.saturating_sub(fixed);
            self.out
                .take(usize::from(self.cfg.max_request_data).min(room))
        };
        let (data_offset, data) = match &chunk {
            Some((offset, bytes)) => (Some(*offset), bytes.as_slice()),
            None => (None, &[][..]),
        };
        let req = Request {
            kind,
            flags: if self.cfg.delta {
                wire::REQUEST_FLAG_DELTA
            } else {
                0
            },
            retry,
            continuation: c,
            sack: &sack,
            ranges,
            user_continuation: ucont,
            data_offset,
            data,
        };
        let mut out = alloc::vec![0u8; wire::TCP_HEADER_LEN + req.buffer_len()];
        let Some(body) = out.get_mut(wire::TCP_HEADER_LEN..) else {
            return;
        };
        let Ok(n) = req.emit(body) else { return };
        let header = SegmentHeader {
            src_port: self.tuple.client_port,
            dst_port: self.tuple.server_port,
            syn: kind == RequestKind::Syn,
            seq: if kind == RequestKind::Syn {
                self.isn
            } else {
                c.map_or(0, |c| c.number)
            },
            ack: 0,
        };
        let Ok(len) = wire::finish_segment(
            &self.tuple.client_addr,
            &self.tuple.server_addr,
            &header,
            &mut out,
            n,
        ) else {
            return;
        };
        out.truncate(len);
        self.transmit.push_back(out);
        self.stats.requests += 1;
        if let Some((offset, bytes)) = chunk
            && kind != RequestKind::Syn
        {
            self.out.sent(offset, bytes.len(), numbered);
        }
        if self.deadline.is_none() {
            self.deadline = Some(now_us.saturating_add(self.rto_us));
        }
    }
}
