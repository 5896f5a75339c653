//! The server's event queue and minisockets (§3, Fig. 11).
//!
//! A Trickles server application has no per-connection sockets. [`EventQueue`] turns each
//! accepted request into an event — OPEN, REQUEST or CLOSE — carrying a transient
//! [`Minisocket`]: the connection, the client's data and user continuation, and the
//! responses congestion control allows. The application answers through the minisocket
//! and the minisocket is gone; the queue holds only unprocessed events, so its memory is
//! linear in them and bounded by its capacity, never by the number of connections.
//!
//! | Fig. 11 call            | here                                                        |
//! |-------------------------|-------------------------------------------------------------|
//! | `msk_send`              | [`Minisocket::send`]                                        |
//! | `msk_sendv`             | [`Minisocket::sendv`]                                       |
//! | `msk_sendbulk`          | [`Minisocket::send_with`] (any data source, per response)   |
//! | (serve an object)       | [`Minisocket::send_object`]: each range out of one buffer   |
//! | `msk_setucont`          | [`Minisocket::set_ucont`], [`Minisocket::set_ucont_all`]    |
//! | `msk_drop`              | [`EventQueue::drop_front`] (or dropping a `Minisocket`)      |
//! | (refuse the connection) | [`Minisocket::refuse`]: a reset instead of the responses    |
//! | `msk_detach`            | [`EventQueue::pop`]: the minisocket leaves the queue, valid |
//! | `msk_extract_events`    | [`EventQueue::extract`] + [`Minisocket::extract`]           |
//! | `msk_install_events`    | [`Minisocket::install`] + [`EventQueue::install`]           |
//! | `msk_request` (client)  | [`Client::request`](crate::client::Client::request)         |
//!
//! Events come out in receive order, which is not the client's order: requests of one
//! connection can be reordered or lost on the way, and a retransmitted request repeats one
//! already answered. Applications key everything on the request's own user continuation
//! and data offset, never on what they saw before (the examples show it).
//!
//! Extracted minisockets are serialized under a MAC ([`MigrationKey`], shared by the
//! replicas of a service), so another replica, or this one after a restart, can install
//! and answer them; a tampered or stale one is refused.
//!
//! ```
//! use trickles::app::EventQueue;
//! use trickles::client::{Client, ClientConfig};
//! use trickles::conn::{Addr, FourTuple};
//! use trickles::crypto::KeyConfig;
//! use trickles::server::{EventKind, Server, ServerConfig};
//!
//! let keys = KeyConfig { mac_keys: [[1; 16], [2; 16]], current_epoch: 0, nonce_key: [3; 16], rtx_nonce_key: [4; 16] };
//! let mut server = Server::new(ServerConfig::new(keys));
//! let mut queue = EventQueue::new(64);
//! let (c, s) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
//! let tuple = FourTuple { client_addr: c, client_port: 4000, server_addr: s, server_port: 80 };
//! let mut client = Client::new(ClientConfig::default(), tuple, 7);
//! client.connect(0, b"hello?");
//! let syn = client.poll_transmit().unwrap();
//! queue.push_segment(&mut server, 1_000, c, s, &syn).unwrap();
//!
//! let msk = queue.pop().unwrap();
//! assert_eq!(msk.kind(), EventKind::Open);
//! assert_eq!(msk.data(), b"hello?");
//! let mut segments = Vec::new();
//! msk.send(&server, b"hi!", true, &mut |seg: &[u8]| segments.push(seg.to_vec())).unwrap();
//! for seg in &segments {
//!     let _ = client.handle_segment(2_000, seg);
//! }
//! let mut got = [0u8; 8];
//! let n = client.read(&mut got);
//! assert_eq!(&got[..n], b"hi!");
//! ```

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;

use super::ucont::Binding;
use crate::conn::{Addr, FourTuple};
use crate::crypto::{MacKey, TAG_LEN};
use crate::limits::ucont_room;
use crate::server::{EventKind, PlannedResponse, Rejected, Server};
use crate::wire::continuation::{CONTINUATION_LEN, Continuation};
use crate::wire::delta::{ContinuationDelta, DELTA_MAX_LEN};
use crate::wire::{ByteRange, Reader, ResponseKind, WireError};

/// Largest segment a minisocket writes: a response header, continuation, user
/// continuation and a full payload fit with room to spare.
pub const SEGMENT_BUF_LEN: usize = 4096;

/// Why a minisocket operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MskError {
    /// `set_ucont` for a response the minisocket does not have.
    NoSuchResponse(usize),
    /// A response would not fit a segment (user continuation too long).
    Wire(WireError),
    /// An extracted minisocket that does not parse.
    Malformed,
    /// An extracted minisocket whose MAC does not verify.
    Mac,
    /// An extracted minisocket older than the migration horizon.
    Stale,
}

impl fmt::Display for MskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MskError::NoSuchResponse(i) => write!(f, "no response {i} in this minisocket"),
            MskError::Wire(e) => write!(f, "response does not fit: {e}"),
            MskError::Malformed => f.write_str("extracted minisocket does not parse"),
            MskError::Mac => f.write_str("extracted minisocket MAC does not verify"),
            MskError::Stale => f.write_str("extracted minisocket older than the horizon"),
        }
    }
}

impl From<WireError> for MskError {
    fn from(e: WireError) -> Self {
        MskError::Wire(e)
    }
}

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

/// What [`Minisocket::send`] and friends did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendReport {
    /// Segments handed to the sink.
    pub segments: usize,
    /// Application bytes they carried.
    pub bytes: usize,
}

/// A transient minisocket: one accepted request and what may be sent in answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Minisocket {
    kind: EventKind,
    tuple: FourTuple,
    conn_nonce: u64,
    received_us: u64,
    user_continuation: Vec<u8>,
    data_offset: Option<u64>,
    data: Vec<u8>,
    responses: Vec<PlannedResponse>,
    /// Per response: the user continuation the application set, if any.
    uconts: Vec<Option<Vec<u8>>>,
}

impl Minisocket {
    /// OPEN, REQUEST or CLOSE.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The connection.
    pub fn tuple(&self) -> &FourTuple {
        &self.tuple
    }

    /// What the application binds its user continuations to.
    pub fn binding(&self) -> Binding {
        Binding {
            tuple: self.tuple,
            conn_nonce: self.conn_nonce,
        }
    }

    /// When the request arrived (the caller's clock, microseconds).
    pub fn received_us(&self) -> u64 {
        self.received_us
    }

    /// The user continuation the client attached (unverified: open it with the
    /// application's [`UcontKey`](super::UcontKey)).
    pub fn user_continuation(&self) -> &[u8] {
        &self.user_continuation
    }

    /// Client data carried by the request.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Where [`Minisocket::data`] sits in the client's output stream, when numbered.
    pub fn data_offset(&self) -> Option<u64> {
        self.data_offset
    }

    /// The responses congestion control allows, in order.
    pub fn responses(&self) -> &[PlannedResponse] {
        &self.responses
    }

    /// The byte ranges of the server's output the client asked for, in response order.
    pub fn ranges(&self) -> impl Iterator<Item = ByteRange> + '_ {
        self.responses.iter().filter_map(|r| r.range)
    }

    /// Most application bytes all responses together may carry.
    pub fn capacity(&self) -> usize {
        self.responses.iter().map(PlannedResponse::allowed).sum()
    }

    /// Sets the user continuation of response `pkt` (an index into
    /// [`Minisocket::responses`]); responses without one carry none.
    pub fn set_ucont(&mut self, pkt: usize, ucont: &[u8]) -> Result<(), MskError> {
        let slot = self
            .uconts
            .get_mut(pkt)
            .ok_or(MskError::NoSuchResponse(pkt))?;
        *slot = Some(ucont.to_vec());
        Ok(())
    }

    /// Sets the same user continuation on every response that carries a transport
    /// continuation (the ones the client will send requests with).
    pub fn set_ucont_all(&mut self, ucont: &[u8]) {
        for (slot, resp) in self.uconts.iter_mut().zip(&self.responses) {
            if resp.continuation.is_some() {
                *slot = Some(ucont.to_vec());
            }
        }
    }

    /// Sends `data`, the server's output from the first requested range's start on: each
    /// response carries the bytes of its own range (never more than congestion control
    /// allows), and `end_of_stream` marks the response whose range reaches the end of
    /// `data`. Responses whose range lies beyond `data` carry nothing (they still carry
    /// their transport continuation). Consumes the minisocket.
    pub fn send(
        self,
        server: &Server,
        data: &[u8],
        end_of_stream: bool,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<SendReport, MskError> {
        self.sendv(server, &[data], end_of_stream, sink)
    }

    /// [`Minisocket::send`] with the output given as a list of slices, read as their
    /// concatenation (scatter-gather).
    pub fn sendv(
        self,
        server: &Server,
        iov: &[&[u8]],
        end_of_stream: bool,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<SendReport, MskError> {
        let base = self.ranges().map(|r| r.start).min().unwrap_or(0);
        let total: u64 = iov.iter().map(|s| s.len() as u64).sum();
        let end = base.saturating_add(total);
        self.send_with(
            server,
            &mut |range: ByteRange, allowed: usize, out: &mut Vec<u8>| {
                let from = range.start.max(base);
                let to = range.start.saturating_add(allowed as u64).min(end);
                gather(iov, from.saturating_sub(base), to.saturating_sub(base), out);
                end_of_stream && to >= end
            },
            sink,
        )
    }

    /// Sends the ranges the client asked for out of `object`, whose byte `i` is byte
    /// `start + i` of the server's output (a static object, a rendered page): each
    /// response whose range starts inside the object carries what the range holds of it
    /// (others carry none), and when `last` the response that reaches the object's end
    /// marks the end of the stream. Consumes the minisocket.
    pub fn send_object(
        self,
        server: &Server,
        start: u64,
        object: &[u8],
        last: bool,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<SendReport, MskError> {
        let end = start.saturating_add(object.len() as u64);
        self.send_with(
            server,
            &mut |range, allowed, out| {
                // A response's data starts at its range's start: a range that begins
                // before the object gets none of it.
                let to = range.start.saturating_add(allowed as u64).min(end);
                if range.start >= start
                    && let (Ok(a), Ok(b)) = (
                        usize::try_from(range.start - start),
                        usize::try_from(to.saturating_sub(start)),
                    )
                    && let Some(part) = object.get(a..b)
                {
                    out.extend_from_slice(part);
                }
                last && to >= end
            },
            sink,
        )
    }

    /// Sends with the data of each response supplied by `fill(range, allowed, out)`: it
    /// appends at most `allowed` bytes (the response's limit, less what a user
    /// continuation longer than [`UCONT_ROOM`](crate::limits::UCONT_ROOM) takes) of the server's output at `range.start` to `out`
    /// (anything beyond is cut) and returns whether they end the output. Responses
    /// without a range get no call. Consumes the minisocket.
    pub fn send_with(
        self,
        server: &Server,
        fill: &mut dyn FnMut(ByteRange, usize, &mut Vec<u8>) -> bool,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<SendReport, MskError> {
        let mut report = SendReport::default();
        let mut data = Vec::new();
        let mut buf = alloc::vec![0u8; SEGMENT_BUF_LEN];
        for (resp, ucont) in self.responses.iter().zip(&self.uconts) {
            data.clear();
            let mut eos = false;
            let ucont = ucont.as_deref().unwrap_or_default();
            if let Some(range) = resp.range {
                // A long user continuation takes room from the data (the client asked for
                // correspondingly less).
                let allowed =
                    usize::from(range.len).min(ucont_room(usize::from(resp.limit), ucont.len()));
                eos = fill(range, allowed, &mut data);
                data.truncate(allowed);
            }
            let n = server.emit(&self.tuple, resp, ucont, &data, eos, &mut buf)?;
            sink(buf.get(..n).unwrap_or_default());
            report.segments += 1;
            report.bytes += data.len();
        }
        Ok(report)
    }

    /// Refuses the connection: sends the client a reset instead of the planned responses
    /// (for example when its request cannot be summarised in an input continuation).
    /// Consumes the minisocket.
    pub fn refuse(self, server: &Server, sink: &mut dyn FnMut(&[u8])) -> Result<(), MskError> {
        let reset = PlannedResponse {
            kind: ResponseKind::Reset,
            packet_number: 0,
            nonce: 0,
            continuation: None,
            delta: None,
            range: None,
            limit: 0,
        };
        let mut buf = alloc::vec![0u8; SEGMENT_BUF_LEN];
        let n = server.emit(&self.tuple, &reset, &[], &[], false, &mut buf)?;
        sink(buf.get(..n).unwrap_or_default());
        Ok(())
    }

    /// Serializes this minisocket under `key`, stamped with `now_us`, for
    /// [`Minisocket::install`] on another replica (or after a restart).
    pub fn extract(&self, key: &MigrationKey, now_us: u64) -> Vec<u8> {
        let mut out = Vec::new();
        out.push(MIGRATION_VERSION);
        out.push(kind_byte(self.kind));
        put_addr(&mut out, &self.tuple.client_addr);
        out.extend_from_slice(&self.tuple.client_port.to_be_bytes());
        put_addr(&mut out, &self.tuple.server_addr);
        out.extend_from_slice(&self.tuple.server_port.to_be_bytes());
        out.extend_from_slice(&self.conn_nonce.to_be_bytes());
        out.extend_from_slice(&now_us.to_be_bytes());
        out.extend_from_slice(&self.received_us.to_be_bytes());
        match self.data_offset {
            Some(o) => {
                out.push(1);
                out.extend_from_slice(&o.to_be_bytes());
            }
            None => out.push(0),
        }
        put_bytes(&mut out, &self.user_continuation);
        put_bytes(&mut out, &self.data);
        // At most a few dozen responses per request (burst limit and window growth).
        out.extend_from_slice(&(self.responses.len() as u16).to_be_bytes());
        for (resp, ucont) in self.responses.iter().zip(&self.uconts) {
            out.push(resp.kind as u8);
            out.extend_from_slice(&resp.packet_number.to_be_bytes());
            out.extend_from_slice(&resp.nonce.to_be_bytes());
            match &resp.continuation {
                Some(c) => {
                    out.push(1);
                    let mut b = [0u8; CONTINUATION_LEN];
                    c.emit(&mut b);
                    out.extend_from_slice(&b);
                }
                None => out.push(0),
            }
            match &resp.delta {
                Some(d) => {
                    out.push(1);
                    let mut b = [0u8; DELTA_MAX_LEN];
                    let n = d.emit(&mut b).unwrap_or(0);
                    out.extend_from_slice(b.get(..n).unwrap_or_default());
                }
                None => out.push(0),
            }
            match resp.range {
                Some(r) => {
                    out.push(1);
                    out.extend_from_slice(&r.start.to_be_bytes());
                    out.extend_from_slice(&r.len.to_be_bytes());
                }
                None => out.push(0),
            }
            out.extend_from_slice(&resp.limit.to_be_bytes());
            match ucont {
                Some(u) => {
                    out.push(1);
                    put_bytes(&mut out, u);
                }
                None => out.push(0),
            }
        }
        let tag = key.mac.tag(&[MIGRATION_DOMAIN, &out]);
        out.extend_from_slice(&tag);
        out
    }

    /// Rebuilds a minisocket from [`Minisocket::extract`]'s bytes: the MAC is checked
    /// first, then the stamp (refused if older than the key's horizon at `now_us`, or from
    /// the future), then the fields.
    pub fn install(key: &MigrationKey, bytes: &[u8], now_us: u64) -> Result<Minisocket, MskError> {
        let split = bytes
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(MskError::Malformed)?;
        let (body, tag) = bytes.split_at(split);
        if !key.mac.verify(&[MIGRATION_DOMAIN, body], &tag_array(tag)) {
            return Err(MskError::Mac);
        }
        let (m, stamped) = decode(body).map_err(|_| MskError::Malformed)?;
        if stamped > now_us || now_us - stamped > key.horizon_us {
            return Err(MskError::Stale);
        }
        Ok(m)
    }

    /// Heap bytes this minisocket holds (for the queue's memory accounting).
    fn heap_bytes(&self) -> usize {
        self.user_continuation.capacity()
            + self.data.capacity()
            + self.responses.capacity() * core::mem::size_of::<PlannedResponse>()
            + self.uconts.capacity() * core::mem::size_of::<Option<Vec<u8>>>()
            + self
                .uconts
                .iter()
                .flatten()
                .map(Vec::capacity)
                .sum::<usize>()
    }
}

/// Appends bytes `from..to` of the concatenation of `iov` to `out`.
fn gather(iov: &[&[u8]], from: u64, to: u64, out: &mut Vec<u8>) {
    let mut at = 0u64;
    for s in iov {
        let len = s.len() as u64;
        let lo = from.max(at);
        let hi = to.min(at + len);
        if lo < hi
            && let Some(part) = s.get((lo - at) as usize..(hi - at) as usize)
        {
            out.extend_from_slice(part);
        }
        at += len;
        if at >= to {
            break;
        }
    }
}

const MIGRATION_VERSION: u8 = 1;
const MIGRATION_DOMAIN: &[u8] = b"trickles minisocket";

fn kind_byte(kind: EventKind) -> u8 {
    match kind {
        EventKind::Open => 0,
        EventKind::Request => 1,
        EventKind::Close => 2,
    }
}

fn put_addr(out: &mut Vec<u8>, a: &Addr) {
    match a {
        Addr::V4(b) => {
            out.push(4);
            out.extend_from_slice(b);
        }
        Addr::V6(b) => {
            out.push(6);
            out.extend_from_slice(b);
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Lengths are those of one request's data or user continuation: below 2^32.
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

fn tag_array(tag: &[u8]) -> [u8; TAG_LEN] {
    let mut t = [0u8; TAG_LEN];
    if tag.len() == TAG_LEN {
        t.copy_from_slice(tag);
    }
    t
}

/// Decodes [`Minisocket::extract`]'s body (MAC already checked): the minisocket and its
/// stamp. Lengths are still checked: every read goes through the crate's [`Reader`].
fn decode(body: &[u8]) -> Result<(Minisocket, u64), WireError> {
    let mut r = Reader::new(body);
    if r.u8()? != MIGRATION_VERSION {
        return Err(WireError::BadVersion(0));
    }
    let kind = match r.u8()? {
        0 => EventKind::Open,
        1 => EventKind::Request,
        2 => EventKind::Close,
        k => return Err(WireError::BadKind(k)),
    };
    let client_addr = addr(&mut r)?;
    let client_port = r.u16()?;
    let server_addr = addr(&mut r)?;
    let server_port = r.u16()?;
    let conn_nonce = r.u64()?;
    let stamped = r.u64()?;
    let received_us = r.u64()?;
    let data_offset = present(&mut r)?.then(|| r.u64()).transpose()?;
    let user_continuation = bytes(&mut r)?.to_vec();
    let data = bytes(&mut r)?.to_vec();
    let n = usize::from(r.u16()?);
    let mut responses = Vec::new();
    let mut uconts = Vec::new();
    for _ in 0..n {
        let kind = ResponseKind::try_from(r.u8()?)?;
        let packet_number = r.u32()?;
        let nonce = r.u32()?;
        let continuation = present(&mut r)?
            .then(|| Continuation::parse(r.take(CONTINUATION_LEN)?))
            .transpose()?;
        let delta = if present(&mut r)? {
            let rest = r.peek();
            let (d, used) = ContinuationDelta::parse(rest)?;
            r.take(used)?;
            Some(d)
        } else {
            None
        };
        let range = present(&mut r)?
            .then(|| -> Result<ByteRange, WireError> {
                Ok(ByteRange {
                    start: r.u64()?,
                    len: r.u16()?,
                })
            })
            .transpose()?;
        let limit = r.u16()?;
        let ucont = present(&mut r)?
            .then(|| bytes(&mut r).map(<[u8]>::to_vec))
            .transpose()?;
        responses.push(PlannedResponse {
            kind,
            packet_number,
            nonce,
            continuation,
            delta,
            range,
            limit,
        });
        uconts.push(ucont);
    }
    if r.remaining() != 0 {
        return Err(WireError::BadLength);
    }
    let m = Minisocket {
        kind,
        tuple: FourTuple {
            client_addr,
            client_port,
            server_addr,
            server_port,
        },
        conn_nonce,
        received_us,
        user_continuation,
        data_offset,
        data,
        responses,
        uconts,
    };
    Ok((m, stamped))
}

/// A presence byte: 0 or 1.
fn present(r: &mut Reader<'_>) -> Result<bool, WireError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(WireError::BadFlags(b)),
    }
}

fn addr(r: &mut Reader<'_>) -> Result<Addr, WireError> {
    match r.u8()? {
        4 => Ok(Addr::V4(r.array()?)),
        6 => Ok(Addr::V6(r.array()?)),
        b => Err(WireError::BadKind(b)),
    }
}

/// A `u32`-length-prefixed byte string.
fn bytes<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], WireError> {
    let n = usize::try_from(r.u32()?).map_err(|_| WireError::BadLength)?;
    r.take(n)
}

/// The key replicas share to move minisockets between them, with the longest time an
/// extracted minisocket may wait before it is installed.
#[derive(Clone, Debug)]
pub struct MigrationKey {
    mac: MacKey,
    horizon_us: u64,
}

impl MigrationKey {
    /// Prepares `key`; extracted minisockets older than `horizon_us` are refused (use the
    /// transport's freshness horizon: their continuations are no use to a client later).
    pub fn new(key: &[u8; 16], horizon_us: u64) -> MigrationKey {
        MigrationKey {
            mac: MacKey::new(key),
            horizon_us,
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
    /// `server` at `now_us` and queues its event. A full queue refuses the segment before
    /// the server sees it.
    pub fn push_segment(
        &mut self,
        server: &mut Server,
        now_us: u64,
        src: Addr,
        dst: Addr,
        tcp: &[u8],
    ) -> Result<(), PushError> {
        if self.events.len() >= self.capacity {
            self.stats.overflow += 1;
            return Err(PushError::Full);
        }
        let reply = match server.handle_request(now_us, src, dst, tcp) {
            Ok(r) => r,
            Err(e) => {
                self.stats.rejected += 1;
                return Err(PushError::Rejected(e));
            }
        };
        let e = reply.event;
        let n = reply.responses.len();
        self.events.push_back(Minisocket {
            kind: e.kind,
            tuple: e.tuple,
            conn_nonce: e.conn_nonce,
            received_us: now_us,
            user_continuation: e.user_continuation.to_vec(),
            data_offset: e.data_offset,
            data: e.data.to_vec(),
            responses: reply.responses,
            uconts: alloc::vec![None; n],
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
