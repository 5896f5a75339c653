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
//! | (bulk, no copy)         | [`Minisocket::send_slices`]: slices held, scratch reused    |
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
//! use trickles::Instant;
//!
//! let keys = KeyConfig { mac_keys: [[1; 16], [2; 16]], current_epoch: 0, nonce_key: [3; 16], rtx_nonce_key: [4; 16] };
//! let mut server = Server::new(ServerConfig::new(keys));
//! let mut queue = EventQueue::new(64);
//! let (c, s) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
//! let tuple = FourTuple { client_addr: c, client_port: 4000, server_addr: s, server_port: 80 };
//! let mut client = Client::new(ClientConfig::default(), tuple, 7);
//! client.connect(Instant::ZERO, b"hello?");
//! let syn = client.poll_transmit().unwrap();
//! queue.push_segment(&mut server, Instant::from_micros(1_000), c, s, &syn).unwrap();
//!
//! let msk = queue.pop().unwrap();
//! assert_eq!(msk.kind(), EventKind::Open);
//! assert_eq!(msk.data(), b"hello?");
//! let mut segments = Vec::new();
//! msk.send(&server, b"hi!", true, &mut |seg: &[u8]| segments.push(seg.to_vec())).unwrap();
//! for seg in &segments {
//!     let _ = client.handle_segment(Instant::from_micros(2_000), seg);
//! }
//! let mut got = [0u8; 8];
//! let n = client.read(&mut got);
//! assert_eq!(&got[..n], b"hi!");
//! ```

mod migration;
mod queue;

pub use migration::MigrationKey;
pub use queue::{EventQueue, PushError, QueueStats};

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;
use sansio::Instant;

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

/// What [`Minisocket::send`] and friends did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendReport {
    /// Segments handed to the sink.
    pub segments: usize,
    /// Application bytes they carried.
    pub bytes: usize,
}

/// A transient minisocket: one accepted request and what may be sent in answer.
///
/// Two minisockets are equal when they would send the same: their fields, and the user
/// continuation of each response, however it was set.
#[derive(Clone, Debug)]
pub struct Minisocket {
    kind: EventKind,
    tuple: FourTuple,
    conn_nonce: u64,
    received: Instant,
    user_continuation: Vec<u8>,
    data_offset: Option<u64>,
    data: Vec<u8>,
    responses: Vec<PlannedResponse>,
    /// The user continuations the application set (see [`Minisocket::ucont`]).
    uconts: Uconts,
}

/// The user continuations the application set on a minisocket's responses, without a copy
/// per response: what [`Minisocket::set_ucont_all`] set is held once.
#[derive(Clone, Debug, Default)]
struct Uconts {
    /// What the last `set_ucont_all` set, for the responses with a transport continuation.
    all: AllUcont,
    /// Per response, what [`Minisocket::set_ucont`] set since (it wins over `all`): empty
    /// until the first `set_ucont`, else one slot per response.
    each: Vec<Option<Vec<u8>>>,
}

/// What [`Minisocket::set_ucont_all`] set.
#[derive(Clone, Debug, Default)]
enum AllUcont {
    /// Nothing.
    #[default]
    None,
    /// The user continuation the request came with ([`Minisocket::set_ucont_all_received`]).
    Received,
    /// These bytes.
    Given(Vec<u8>),
}

impl PartialEq for Minisocket {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.tuple == other.tuple
            && self.conn_nonce == other.conn_nonce
            && self.received == other.received
            && self.user_continuation == other.user_continuation
            && self.data_offset == other.data_offset
            && self.data == other.data
            && self.responses == other.responses
            && (0..self.responses.len()).all(|i| self.ucont(i) == other.ucont(i))
    }
}

impl Eq for Minisocket {}

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

    /// When the request arrived (the `now` it was handled at).
    pub fn received(&self) -> Instant {
        self.received
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
        if pkt >= self.responses.len() {
            return Err(MskError::NoSuchResponse(pkt));
        }
        let each = &mut self.uconts.each;
        if each.is_empty() {
            each.resize(self.responses.len(), None);
        }
        let slot = each.get_mut(pkt).ok_or(MskError::NoSuchResponse(pkt))?;
        *slot = Some(ucont.to_vec());
        Ok(())
    }

    /// Sets the same user continuation on every response that carries a transport
    /// continuation (the ones the client will send requests with). It is held once, not
    /// copied per response.
    pub fn set_ucont_all(&mut self, ucont: &[u8]) {
        let mut given = match core::mem::take(&mut self.uconts.all) {
            AllUcont::Given(mut v) => {
                v.clear();
                v
            }
            _ => Vec::new(),
        };
        given.extend_from_slice(ucont);
        self.set_all(AllUcont::Given(given));
    }

    /// [`Minisocket::set_ucont_all`] with the user continuation this request came with
    /// ([`Minisocket::user_continuation`]), without copying it: for an application whose
    /// continuation stays the same from request to request.
    pub fn set_ucont_all_received(&mut self) {
        self.set_all(AllUcont::Received);
    }

    fn set_all(&mut self, all: AllUcont) {
        // What `set_ucont` set earlier on these responses is overridden.
        for (slot, resp) in self.uconts.each.iter_mut().zip(&self.responses) {
            if resp.continuation.is_some() {
                *slot = None;
            }
        }
        self.uconts.all = all;
    }

    /// The user continuation response `pkt` carries, if the application set one.
    fn ucont(&self, pkt: usize) -> Option<&[u8]> {
        if let Some(Some(u)) = self.uconts.each.get(pkt) {
            return Some(u);
        }
        // `set_ucont_all` sets only the responses with a transport continuation.
        self.responses.get(pkt)?.continuation.as_ref()?;
        match &self.uconts.all {
            AllUcont::None => None,
            AllUcont::Received => Some(&self.user_continuation),
            AllUcont::Given(u) => Some(u),
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
        let mut buf = [0u8; SEGMENT_BUF_LEN];
        for (i, resp) in self.responses.iter().enumerate() {
            data.clear();
            let mut eos = false;
            let ucont = self.ucont(i).unwrap_or_default();
            if let Some(range) = resp.range {
                let allowed = allowed(resp, range, ucont.len());
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

    /// [`Minisocket::send_with`] with each response's data a slice the caller already
    /// holds, copied once, straight into the segment: `data(range, allowed)` returns the
    /// server's output at `range.start` (anything beyond `allowed` bytes is cut) and
    /// whether it ends the output. Segments are written in `scratch`, grown to
    /// [`SEGMENT_BUF_LEN`] the first time and reused as is after: keep it from call to
    /// call. Consumes the minisocket.
    pub fn send_slices<'d>(
        self,
        server: &Server,
        data: &mut dyn FnMut(ByteRange, usize) -> (&'d [u8], bool),
        sink: &mut dyn FnMut(&[u8]),
        scratch: &mut Vec<u8>,
    ) -> Result<SendReport, MskError> {
        if scratch.len() < SEGMENT_BUF_LEN {
            scratch.resize(SEGMENT_BUF_LEN, 0);
        }
        let mut report = SendReport::default();
        for (i, resp) in self.responses.iter().enumerate() {
            let ucont = self.ucont(i).unwrap_or_default();
            let (part, eos) = match resp.range {
                Some(range) => {
                    let allowed = allowed(resp, range, ucont.len());
                    let (part, eos) = data(range, allowed);
                    (part.get(..allowed).unwrap_or(part), eos)
                }
                None => (&[][..], false),
            };
            let n = server.emit(&self.tuple, resp, ucont, part, eos, scratch)?;
            sink(scratch.get(..n).unwrap_or_default());
            report.segments += 1;
            report.bytes += part.len();
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
        let mut buf = [0u8; SEGMENT_BUF_LEN];
        let n = server.emit(&self.tuple, &reset, &[], &[], false, &mut buf)?;
        sink(buf.get(..n).unwrap_or_default());
        Ok(())
    }

    /// Heap bytes this minisocket holds (for the queue's memory accounting).
    fn heap_bytes(&self) -> usize {
        self.user_continuation.capacity()
            + self.data.capacity()
            + self.responses.capacity() * core::mem::size_of::<PlannedResponse>()
            + self.uconts.each.capacity() * core::mem::size_of::<Option<Vec<u8>>>()
            + self
                .uconts
                .each
                .iter()
                .flatten()
                .map(Vec::capacity)
                .sum::<usize>()
            + match &self.uconts.all {
                AllUcont::Given(u) => u.capacity(),
                _ => 0,
            }
    }
}

/// Most application bytes `resp` may carry of `range` next to a user continuation of
/// `ucont_len` bytes.
fn allowed(resp: &PlannedResponse, range: ByteRange, ucont_len: usize) -> usize {
    // A long user continuation takes room from the data (the client asked for
    // correspondingly less). A response without a transport continuation has the user
    // continuation's room in its limit already: all of it counts.
    let room = if resp.continuation.is_some() {
        ucont_room(usize::from(resp.limit), ucont_len)
    } else {
        usize::from(resp.limit).saturating_sub(ucont_len)
    };
    usize::from(range.len).min(room)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Client, ClientConfig};
    use crate::crypto::KeyConfig;
    use crate::server::ServerConfig;

    /// A server and the OPEN minisocket of one SYN, with a user continuation made up.
    fn open() -> (Server, Minisocket) {
        let keys = KeyConfig {
            mac_keys: [[1; 16], [2; 16]],
            current_epoch: 0,
            nonce_key: [3; 16],
            rtx_nonce_key: [4; 16],
        };
        let mut server = Server::new(ServerConfig::new(keys));
        let mut queue = EventQueue::new(4);
        let (c, s) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
        let tuple = FourTuple {
            client_addr: c,
            client_port: 4000,
            server_addr: s,
            server_port: 80,
        };
        let mut client = Client::new(ClientConfig::default(), tuple, 7);
        client.connect(Instant::ZERO, b"hello?");
        let syn = client.poll_transmit().unwrap_or_default();
        assert!(
            queue
                .push_segment(&mut server, Instant::from_micros(1_000), c, s, &syn)
                .is_ok()
        );
        let mut msk = queue.pop().unwrap_or_else(|| unreachable!());
        msk.user_continuation = b"as received".to_vec();
        assert!(msk.responses().len() >= 2);
        (server, msk)
    }

    /// The old representation, one slot per response, as the reference.
    fn model_all(model: &mut [Option<Vec<u8>>], msk: &Minisocket, ucont: &[u8]) {
        for (slot, resp) in model.iter_mut().zip(msk.responses()) {
            if resp.continuation.is_some() {
                *slot = Some(ucont.to_vec());
            }
        }
    }

    #[test]
    fn user_continuations_resolve_as_one_slot_per_response_would() {
        let (_, mut msk) = open();
        let n = msk.responses().len();
        let received = msk.user_continuation().to_vec();
        let mut model: Vec<Option<Vec<u8>>> = alloc::vec![None; n];
        let check = |msk: &Minisocket, model: &[Option<Vec<u8>>]| {
            for (i, m) in model.iter().enumerate() {
                assert_eq!(msk.ucont(i), m.as_deref(), "response {i}");
            }
        };
        check(&msk, &model);
        assert_eq!(msk.set_ucont(n, b"x"), Err(MskError::NoSuchResponse(n)));
        assert!(msk.set_ucont(0, b"first").is_ok());
        model[0] = Some(b"first".to_vec());
        check(&msk, &model);
        msk.set_ucont_all(b"all");
        model_all(&mut model, &msk, b"all");
        check(&msk, &model);
        assert!(msk.set_ucont(n - 1, b"last").is_ok());
        model[n - 1] = Some(b"last".to_vec());
        check(&msk, &model);
        msk.set_ucont_all_received();
        model_all(&mut model, &msk, &received);
        check(&msk, &model);
        msk.set_ucont_all(b"again");
        model_all(&mut model, &msk, b"again");
        check(&msk, &model);
        assert!(msk.set_ucont(0, b"").is_ok());
        model[0] = Some(Vec::new());
        check(&msk, &model);

        // Migration carries what each response would send, and equality compares that.
        let key = MigrationKey::new(&[9; 16], 1_000_000);
        let back = Minisocket::install(
            &key,
            &msk.extract(&key, Instant::from_micros(5)),
            Instant::from_micros(6),
        );
        assert_eq!(back.as_ref(), Ok(&msk));
        msk.set_ucont_all_received();
        assert_ne!(back.as_ref(), Ok(&msk));
        let back = Minisocket::install(
            &key,
            &msk.extract(&key, Instant::from_micros(5)),
            Instant::from_micros(6),
        );
        assert_eq!(back.as_ref(), Ok(&msk));
    }

    #[test]
    fn send_slices_sends_what_send_with_does_whatever_the_scratch_held() {
        let (server, mut msk) = open();
        let output: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for ucont in [&b""[..], b"short", &[0xee; 300]] {
            msk.set_ucont_all(ucont);
            let slice = |range: ByteRange| {
                let from = usize::try_from(range.start).unwrap_or(usize::MAX);
                // More than the range: the minisocket cuts.
                output.get(from..).unwrap_or_default()
            };
            let mut want = Vec::new();
            let want_report = msk.clone().send_with(
                &server,
                &mut |range, _, out| {
                    out.extend_from_slice(slice(range));
                    range.start > 10
                },
                &mut |s: &[u8]| want.push(s.to_vec()),
            );
            assert!(want_report.is_ok_and(|r| r.bytes > 0 && r.segments == want.len()));
            for fill in [0u8, 0xa5, 0xff] {
                let mut scratch = alloc::vec![fill; 100];
                for _ in 0..2 {
                    let mut got = Vec::new();
                    let report = msk.clone().send_slices(
                        &server,
                        &mut |range, _| (slice(range), range.start > 10),
                        &mut |s: &[u8]| got.push(s.to_vec()),
                        &mut scratch,
                    );
                    assert_eq!(report, want_report);
                    assert_eq!(got, want);
                    scratch.fill(fill);
                }
            }
        }
    }
}
