//! The stateless server engine (§2.2, §2.5, Fig. 4).
//!
//! [`Server::handle_request`] takes one segment and returns what to send and what to tell
//! the application; it stores nothing about the connection. The only mutable state is the
//! replay filter, whose size is fixed by configuration, not by the number of clients.
//!
//! ```text
//!  segment ─► parse ─► MAC ─► fresh? ─► cc::plan ─► SACK proof ─► Bloom ─► new continuations
//!             (values)  (one CMAC: the only       (two AES per                + nonces + ranges
//!                        crypto garbage can cost)   proof block)
//!                                                                                │
//!  application ◄── Event (OPEN / REQUEST / CLOSE, user continuation, data) ◄─────┘
//!       └── data for each planned response ─► Server::emit ─► segments
//! ```
//!
//! The calling order per request: `handle_request`, then for each
//! [`Reply::responses`] entry `emit` with the application's bytes for its range.
//!
//! With [`ServerConfig::cache_entries`] set, the server also keeps the socket cache of §5.1
//! (module [`cache`]): soft state that lets a request presenting a continuation the server
//! itself issued skip the MAC. Replies are the same with or without it.
//!
//! The server keeps its keys as configured; [`Server::keys_mut`] rotates them, which a
//! [`Service`](crate::app::Service) given a [`Rotation`](crate::crypto::Rotation) does at
//! each period's end.

use alloc::vec::Vec;

use sansio::Instant;

pub mod cache;
mod respond;
pub use cache::CacheStats;
use cache::ContinuationCache;
use respond::{finish, parse_blocks, plan, syn_hash};

use crate::cc::{self, CcConfig, PlanError, RequestMode, Slot, SlotKind};
use crate::conn::{Addr, FourTuple};
use crate::crypto::{KeyConfig, NonceKind, ServerKeys};
use crate::replay::{self, ReplayConfig, ReplayFilter};
use crate::sack::{self, ProofError, SackBlock};
use crate::wire::continuation::{CONTINUATION_LEN, Continuation};
use crate::wire::delta::ContinuationDelta;
use crate::wire::{self, ByteRange, Request, RequestKind, ResponseKind, WireError};

/// Everything a server (and its replicas) is configured with.
#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    /// MAC and nonce keys, shared by replicas.
    pub keys: KeyConfig,
    /// Replay filter parameters; `horizon_us` is also the freshness horizon T.
    pub replay: ReplayConfig,
    /// Congestion-control settings.
    pub cc: CcConfig,
    /// This site's id; continuations from another site are refused (timeouts excepted).
    pub site: u16,
    /// Most application bytes one response may carry.
    pub mss: u16,
    /// Whether to answer a request that sets [`wire::REQUEST_FLAG_DELTA`] with
    /// delta-encoded continuations ([`crate::delta`]); otherwise every response carries the
    /// full continuation.
    pub delta: bool,
    /// Entries of the socket cache (§5.1; rounded up to whole power-of-two sets of
    /// [`cache::WAYS`]); 0, the default, turns it off. Each entry takes 128 bytes (two cache
    /// lines).
    pub cache_entries: usize,
}

impl ServerConfig {
    /// A configuration with the given keys and the paper's defaults elsewhere.
    pub fn new(keys: KeyConfig) -> ServerConfig {
        ServerConfig {
            keys,
            replay: ReplayConfig::default(),
            cc: CcConfig::default(),
            site: 0,
            mss: DEFAULT_MSS,
            delta: true,
            cache_entries: 0,
        }
    }
}

/// Sizing constants and rules, re-exported: they live in [`crate::limits`], which the
/// client and the application layer import too.
pub use crate::limits::{DEFAULT_MSS, UCONT_ROOM, payload_limit, ucont_room};

/// Most retransmissions of one normal request the server answers (each with half the
/// data of the one before, and never with a continuation).
pub const MAX_RETRY: u8 = 3;

/// Most retransmit-timeout requests one connection gets answered per replay-horizon
/// interval (the paper's rate limit on timeouts, §2.2). One is the strictest reading; with
/// one, a connection on a lossy path whose timeout request or its answers are lost stalls
/// until the next interval with its timer backed off, which at 5% loss each way costs
/// seconds per transfer. Four bound what timeouts can win (4 × `initial_cwnd` responses per
/// connection per horizon) and recover such paths within a few RTOs.
pub const TIMEOUTS_PER_HORIZON: u8 = 4;

/// Why a segment got no answer. Every rejection is silent on the wire (§2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejected {
    /// The segment or message did not parse.
    Wire(WireError),
    /// A request kind the server does not take without a continuation, or vice versa.
    Malformed,
    /// The continuation's MAC did not verify (or its key epoch is no longer live).
    Mac,
    /// The continuation is older than the horizon (or from the future).
    Stale,
    /// Seen within the horizon: a replay, or a Bloom false positive.
    Replay,
    /// The continuation was issued by another site.
    OtherSite,
    /// The SACK proof is malformed or a range nonce is wrong.
    Proof(ProofError),
    /// The proof is inconsistent with the request.
    Plan(PlanError),
    /// A request retransmitted more than [`MAX_RETRY`] times.
    TooManyRetries,
}

impl core::fmt::Display for Rejected {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Rejected::Wire(e) => write!(f, "unparsable segment: {e}"),
            Rejected::Malformed => f.write_str("request kind and continuation disagree"),
            Rejected::Mac => f.write_str("continuation MAC does not verify"),
            Rejected::Stale => f.write_str("continuation older than the horizon"),
            Rejected::Replay => f.write_str("continuation already used within the horizon"),
            Rejected::OtherSite => f.write_str("continuation issued by another site"),
            Rejected::Proof(e) => write!(f, "bad SACK proof: {e}"),
            Rejected::Plan(e) => write!(f, "inconsistent request: {e}"),
            Rejected::TooManyRetries => f.write_str("request retransmitted too often"),
        }
    }
}

impl From<WireError> for Rejected {
    fn from(e: WireError) -> Self {
        Rejected::Wire(e)
    }
}

/// What the application is told about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A new connection (SYN, possibly with data).
    Open,
    /// A request on an existing connection (normal or retransmit timeout).
    Request,
    /// The client is done (a hint: the server holds nothing to free).
    Close,
}

/// The application event of one request, borrowing the segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// OPEN, REQUEST or CLOSE.
    pub kind: EventKind,
    /// The connection.
    pub tuple: FourTuple,
    /// The connection's nonce (from its verified transport continuation, or derived from
    /// the SYN): it names this incarnation of the four-tuple, so applications bind their
    /// user continuations to it ([`crate::app::Binding`]).
    pub conn_nonce: u64,
    /// The user continuation the client attached (unverified: the application MACs it).
    pub user_continuation: &'a [u8],
    /// Where `data` sits in the client's output stream, when the client numbered it: a
    /// retransmitted request carries the same data at the same offset, so the application
    /// can tell a repeat from new input.
    pub data_offset: Option<u64>,
    /// Client data carried by the request.
    pub data: &'a [u8],
}

/// One response the application may fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedResponse {
    /// Data, or a retransmission.
    pub kind: ResponseKind,
    /// Packet number.
    pub packet_number: u32,
    /// The packet's nonce (from the second key for retransmissions).
    pub nonce: u32,
    /// The new transport continuation, MACed (`None` for retransmissions).
    pub continuation: Option<Continuation>,
    /// The same continuation as a delta from the client's prediction, when the request
    /// asked for delta encoding and the server allows it: [`Server::emit`] sends this
    /// instead of `continuation`. Its tag is the MAC over the full continuation.
    pub delta: Option<ContinuationDelta>,
    /// The bytes of the server's output stream the client asked this response to carry.
    pub range: Option<ByteRange>,
    /// Most application bytes it may carry: the MSS, plus the continuation's 54 bytes when
    /// it carries none (so every packet is the same size), halved for each retransmission
    /// of the request (§2.2's exponential backoff).
    pub limit: u16,
}

impl PlannedResponse {
    /// Most application bytes this response may carry: the range's length, at most
    /// [`PlannedResponse::limit`].
    pub fn allowed(&self) -> usize {
        self.range.map_or(0, |r| usize::from(r.len.min(self.limit)))
    }
}

/// The result of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply<'a> {
    /// The application event.
    pub event: Event<'a>,
    /// The responses congestion control allows, in order.
    pub responses: Vec<PlannedResponse>,
}

/// What opening a connection from a SYN, or resuming one from a continuation, decided
/// before the SACK proof's nonces and the replay filter are checked.
struct Admitted {
    /// What the application is told.
    kind: EventKind,
    /// The connection's nonce.
    conn_nonce: u64,
    /// The smoothed RTT the new continuations carry.
    rtt_us: u32,
    /// The planned responses (the server's scratch buffer, returned after the reply).
    slots: Vec<Slot>,
    /// How many SACK blocks the proof has.
    nblocks: usize,
    /// The replay-filter key.
    fresh_key: u64,
}

/// The Trickles server: keys, configuration and the replay filter. No connection state.
pub struct Server {
    cfg: ServerConfig,
    keys: ServerKeys,
    replay: ReplayFilter,
    /// MACs computed on behalf of incoming segments (verifications and SYN nonces).
    inbound_macs: u64,
    /// Scratch for the planned slots, reused across requests (not connection state).
    scratch: Vec<Slot>,
    /// Scratch for a request's SACK blocks, reused across requests.
    blocks: Vec<SackBlock>,
    /// Continuations this server issued, verified (soft state; empty when disabled).
    cache: ContinuationCache,
}

impl Server {
    /// A server with configuration `cfg`.
    pub fn new(cfg: ServerConfig) -> Server {
        Server {
            keys: ServerKeys::new(&cfg.keys),
            replay: ReplayFilter::new(cfg.replay),
            inbound_macs: 0,
            scratch: Vec::new(),
            blocks: Vec::new(),
            cache: ContinuationCache::new(cfg.cache_entries),
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// The keys (for rotation). Cached continuations of an epoch that is no longer live,
    /// or whose key was replaced, stop hitting: each entry remembers its key's identity.
    pub fn keys_mut(&mut self) -> &mut ServerKeys {
        &mut self.keys
    }

    /// MACs computed so far to judge incoming segments (one per SYN or continuation that
    /// missed the socket cache; the MACs of new continuations are not counted). Attack
    /// tests read it.
    pub fn inbound_macs(&self) -> u64 {
        self.inbound_macs
    }

    /// The socket cache's hits and misses so far (both 0 when it is disabled).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Entries the socket cache can hold (0: disabled).
    pub fn cache_capacity(&self) -> usize {
        self.cache.capacity()
    }

    /// Drops every cached continuation. Call it whenever memory is short: replies do not
    /// change, the next requests only cost their MACs again.
    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }

    /// Bytes of server memory, all of it independent of the number of connections (the
    /// socket cache's is fixed by [`ServerConfig::cache_entries`]).
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Server>() + self.replay.memory_bytes() + self.cache.memory_bytes()
    }

    /// Handles one TCP segment (the bytes after the IP header) from `src` to `dst` that
    /// arrived at `now`, and returns the event and the planned responses.
    ///
    /// An invalid continuation costs one MAC computation; a segment that fails to parse
    /// costs none.
    pub fn handle_request<'a>(
        &mut self,
        now: Instant,
        src: Addr,
        dst: Addr,
        tcp: &'a [u8],
    ) -> Result<Reply<'a>, Rejected> {
        let mut responses = Vec::new();
        let event = self.handle_request_into(now, src, dst, tcp, &mut responses)?;
        Ok(Reply { event, responses })
    }

    /// [`handle_request`](Server::handle_request) with the planned responses written into
    /// `responses` (cleared first; left empty when the request is rejected) instead of a
    /// new `Vec`: a server that keeps one `Vec` across requests allocates nothing per
    /// request. Accepts and rejects exactly what `handle_request` does, with the same
    /// responses.
    #[inline]
    pub fn handle_request_into<'a>(
        &mut self,
        now: Instant,
        src: Addr,
        dst: Addr,
        tcp: &'a [u8],
        responses: &mut Vec<PlannedResponse>,
    ) -> Result<Event<'a>, Rejected> {
        responses.clear();
        let now_us = now.micros();
        let seg = wire::parse_segment(&src, &dst, tcp)?;
        let req = Request::parse(seg.payload)?;
        let tuple = FourTuple {
            client_addr: src,
            client_port: seg.src_port,
            server_addr: dst,
            server_port: seg.dst_port,
        };
        let now_ms = (now_us / 1000) as u32;
        if req.kind == RequestKind::Request && req.retry > MAX_RETRY {
            return Err(Rejected::TooManyRetries);
        }
        let backoff = req.retry.min(15);
        let limit_shift = if req.kind == RequestKind::Request {
            backoff
        } else {
            0
        };
        // The SACK proof's blocks: the server's reused buffer once a continuation passed.
        let mut blocks: Vec<SackBlock> = Vec::new();
        let Admitted {
            kind,
            conn_nonce,
            rtt_us,
            slots,
            nblocks,
            fresh_key,
        } = match (req.kind, req.continuation.as_ref()) {
            (RequestKind::Syn, None) => self.open_from_syn(&req, &tuple, seg.seq),
            (RequestKind::Syn, Some(_)) | (_, None) => return Err(Rejected::Malformed),
            (kind, Some(c)) => {
                // The continuation's bytes as sent: they follow the request header.
                let raw = seg
                    .payload
                    .get(wire::REQUEST_HEADER_LEN..wire::REQUEST_HEADER_LEN + CONTINUATION_LEN)
                    .unwrap_or_default();
                self.resume(now_us, &tuple, &req, kind, c, raw, &mut blocks)?
            }
        };
        let proof = blocks.get(..nblocks).unwrap_or_default();
        let Server {
            cfg,
            keys,
            replay,
            scratch,
            blocks: blocks_slot,
            cache,
            ..
        } = self;
        let keys: &ServerKeys = keys;
        let originals = keys.nonces(NonceKind::Original);
        let mut ranges = req.ranges.as_slice().iter().copied();
        let delta = cfg.delta && req.accepts_delta();
        let planned = sack::check_nonces(originals, conn_nonce, proof)
            .map_err(Rejected::Proof)
            .and_then(|()| {
                if !replay.check_and_insert(now_us, fresh_key) {
                    return Err(Rejected::Replay);
                }
                if responses.capacity() < slots.len() {
                    // Empty (cleared above): a fresh exact allocation, cheaper than
                    // growing through `extend`'s reserve.
                    *responses = Vec::with_capacity(slots.len());
                }
                responses.extend(slots.iter().map(|slot| {
                    let range = if slot.kind.carries_data() {
                        ranges.next()
                    } else {
                        None
                    };
                    let nonces = match slot.kind {
                        SlotKind::Retransmit => keys.nonces(NonceKind::Retransmit),
                        SlotKind::Data | SlotKind::ContinuationOnly => originals,
                    };
                    let nonce = nonces.packet_nonce(conn_nonce, slot.number);
                    let mut resp = plan(cfg, keys, slot, nonce, range, conn_nonce, rtt_us, now_ms);
                    resp.limit >>= limit_shift;
                    resp
                }));
                // Every new continuation's MAC in one call: their CMAC chains run side by
                // side. The cache and the deltas need the tags, so they come after.
                keys.mac_continuations(
                    &tuple,
                    responses.iter_mut().filter_map(|r| r.continuation.as_mut()),
                );
                for (resp, slot) in responses.iter_mut().zip(slots.iter()) {
                    finish(
                        keys,
                        cache,
                        resp,
                        slot,
                        &tuple,
                        req.continuation.as_ref(),
                        delta,
                        req.asks_delayed_ack(),
                    );
                }
                Ok(())
            });
        // Back to the scratch buffers, rejected or not, for the next request.
        *scratch = slots;
        *blocks_slot = blocks;
        planned?;
        Ok(Event {
            kind,
            tuple,
            conn_nonce,
            user_continuation: req.user_continuation,
            data_offset: req.data_offset,
            data: req.data,
        })
    }

    /// Opens a connection from a SYN (§2.1): derives the connection's nonce from the
    /// four-tuple and the SYN's sequence number (one MAC) and plans the initial window.
    #[inline(always)]
    fn open_from_syn(&mut self, req: &Request<'_>, tuple: &FourTuple, seq: u32) -> Admitted {
        self.inbound_macs += 1;
        let conn_nonce = self.keys.conn_nonce(tuple, seq);
        // A retransmitted SYN carries its retry count, so it is not taken for a replay of
        // the first; a replayed SYN of the same count is dropped.
        Admitted {
            kind: EventKind::Open,
            conn_nonce,
            rtt_us: 0,
            // Delayed acknowledgments when the client asks and this server grants them;
            // the continuations carry the outcome from here on.
            slots: cc::open(&CcConfig {
                delayed_ack: self.cfg.cc.delayed_ack && req.asks_delayed_ack(),
                ..self.cfg.cc
            }),
            nblocks: 0,
            fresh_key: syn_hash(conn_nonce, req.retry),
        }
    }

    /// Resumes a connection from the continuation `c` a request of `kind` presented
    /// (`raw`: its bytes as sent): authenticates it (Fig. 4A), parses the SACK proof's
    /// blocks into `blocks` (the server's reused buffer) and plans the responses from the
    /// proof as sent (§2.5). The proof's nonces are checked afterwards, before the replay
    /// filter sees the request, in the same cipher call as the responses' nonces.
    #[allow(clippy::too_many_arguments)] // The request's parts, all borrowed; a struct would only rename them.
    #[inline(always)]
    fn resume(
        &mut self,
        now_us: u64,
        tuple: &FourTuple,
        req: &Request<'_>,
        kind: RequestKind,
        c: &Continuation,
        raw: &[u8],
        blocks: &mut Vec<SackBlock>,
    ) -> Result<Admitted, Rejected> {
        let now_ms = (now_us / 1000) as u32;
        self.authenticate(now_ms, tuple, c, raw, kind)?;
        *blocks = core::mem::take(&mut self.blocks);
        let nblocks = parse_blocks(req, blocks)?;
        let proof = blocks.get(..nblocks).unwrap_or_default();
        let mut slots = core::mem::take(&mut self.scratch);
        slots.clear();
        match kind {
            RequestKind::Fin => {}
            RequestKind::Timeout => {
                cc::plan_into(c, proof, RequestMode::Timeout, &self.cfg.cc, &mut slots)
                    .map_err(Rejected::Plan)?
            }
            _ => cc::plan_into(c, proof, RequestMode::Normal, &self.cfg.cc, &mut slots)
                .map_err(Rejected::Plan)?,
        }
        if kind == RequestKind::Request && req.retry > 0 {
            // A retransmitted request re-delivers data only: its responses carry no
            // continuation, so retries can never multiply trickles.
            slots.retain(|s| s.kind.carries_data());
            for s in &mut slots {
                s.params = None;
            }
        }
        let sample = now_ms.wrapping_sub(c.timestamp_ms).saturating_mul(1000);
        let rtt_us = if c.rtt_us == 0 {
            sample
        } else {
            c.rtt_us - c.rtt_us / 8 + sample / 8
        };
        Ok(Admitted {
            kind: if kind == RequestKind::Fin {
                EventKind::Close
            } else {
                EventKind::Request
            },
            conn_nonce: c.conn_nonce,
            rtt_us,
            slots,
            nblocks,
            fresh_key: self.fresh_key(now_us, c, kind, req.retry),
        })
    }

    /// MAC first, then freshness and site (Fig. 4A). The replay filter comes after the
    /// SACK proof is checked, so nothing that fails a check is ever inserted.
    ///
    /// `raw` is `c` as it was on the wire: when the socket cache holds exactly those bytes
    /// for `tuple`, issued under the key still live for their epoch, the MAC is known good
    /// and not computed (Fig. 13); everything after it runs either way.
    fn authenticate(
        &mut self,
        now_ms: u32,
        tuple: &FourTuple,
        c: &Continuation,
        raw: &[u8],
        kind: RequestKind,
    ) -> Result<(), Rejected> {
        let cached = self.cache.lookup(tuple, raw, self.keys.key_id(c.key_epoch));
        if !cached {
            self.inbound_macs += 1;
            if !self.keys.verify_continuation(tuple, c) {
                return Err(Rejected::Mac);
            }
        }
        if kind == RequestKind::Timeout {
            // Exempt from freshness: a client may hold only stale continuations (§2.2).
            return Ok(());
        }
        let horizon_ms = self.cfg.replay.horizon_us / 1000;
        if u64::from(now_ms.wrapping_sub(c.timestamp_ms)) > horizon_ms {
            return Err(Rejected::Stale);
        }
        if c.site != self.cfg.site {
            return Err(Rejected::OtherSite);
        }
        Ok(())
    }

    /// The replay-filter key: at-most-once for normal requests (the tag and the retry
    /// counter); at most [`TIMEOUTS_PER_HORIZON`] timeouts per connection per horizon
    /// interval (the request's retry field, modulo that, picks the slot).
    fn fresh_key(&self, now_us: u64, c: &Continuation, kind: RequestKind, retry: u8) -> u64 {
        if kind == RequestKind::Timeout {
            let interval = now_us / self.cfg.replay.horizon_us.max(1);
            let slot = u64::from(retry % TIMEOUTS_PER_HORIZON);
            let key = interval
                .wrapping_mul(u64::from(TIMEOUTS_PER_HORIZON))
                .wrapping_add(slot);
            replay::timeout_hash(c.conn_nonce, key, &self.keys)
        } else {
            replay::replay_hash(&c.tag, retry)
        }
    }

    /// Writes the segment for `resp` carrying `data` (at most the response's allowed
    /// bytes; the rest is cut) and `user_continuation` into `out`; returns its length.
    /// `end_of_stream` tells the client the output ends with this data. The continuation
    /// goes out as its delta when the response has one ([`PlannedResponse::delta`]).
    pub fn emit(
        &self,
        tuple: &FourTuple,
        resp: &PlannedResponse,
        user_continuation: &[u8],
        data: &[u8],
        end_of_stream: bool,
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        let data = data.get(..resp.allowed()).unwrap_or(data);
        // Borrowed, not copied into a `Response`: see `wire::Parts`.
        let msg = wire::Parts {
            kind: resp.kind,
            end_of_stream,
            packet_number: resp.packet_number,
            nonce: resp.nonce,
            offset: resp.range.map_or(0, |r| r.start),
            continuation: if resp.delta.is_some() {
                None
            } else {
                resp.continuation.as_ref()
            },
            delta: resp.delta.as_ref(),
            user_continuation,
            data,
        };
        let body = out
            .get_mut(wire::TCP_HEADER_LEN..)
            .ok_or(WireError::BadLength)?;
        let n = msg.emit(body)?;
        let seg = wire::SegmentHeader {
            src_port: tuple.server_port,
            dst_port: tuple.client_port,
            syn: false,
            seq: resp.packet_number,
            ack: 0,
        };
        wire::finish_segment(&tuple.server_addr, &tuple.client_addr, &seg, out, n)
    }
}
