//! [`HttpApp`]: HTTP on a stateless Trickles server, and the sealed-answer encoding its
//! user continuations carry.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use super::access::AccessRecord;
use super::answer::{Answer, Body, MAX_LOCATION, answer, write_head};
use super::request::parse_request;
use super::status::Status;
use super::{ObjectInfo, Store};
use crate::app::{Application, Binding, Minisocket, UcontKey, UserContinuation};
use crate::server::{EventKind, Server};
use crate::wire::{ByteRange, Reader};

/// Counters of an [`HttpApp`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpStats {
    /// OPEN events answered (each SYN, retransmitted ones included).
    pub opens: u64,
    /// REQUEST events (resumptions through the user continuation).
    pub requests: u64,
    /// OPENs answered 200 or 206.
    pub status_2xx: u64,
    /// OPENs answered 301 or 304.
    pub status_3xx: u64,
    /// OPENs answered 400, 404, 405 or 416.
    pub status_4xx: u64,
    /// Access-log records dropped because [`ACCESS_LOG_CAPACITY`] were waiting.
    pub access_dropped: u64,
    /// REQUESTs dropped because their user continuation did not open (forged, altered,
    /// another connection's, or none).
    pub bad_ucont: u64,
    /// Connections refused because the object changed or vanished since the answer.
    pub stale: u64,
    /// Response-head bytes sent (retransmissions included).
    pub bytes_head: u64,
    /// Body bytes sent (retransmissions included).
    pub bytes_body: u64,
}

/// Sealed-answer format: the first byte of the user continuation's application data.
const SEAL_FORMAT: u8 = 2;
/// Flag bit: HEAD.
const FLAG_HEAD_ONLY: u8 = 1;
/// Flag bit: the answer is dated (a `Date` varint follows the head's length).
const FLAG_DATED: u8 = 2;

/// Access-log records held for [`HttpApp::poll_access`] at most (more are dropped and
/// counted in [`HttpStats::access_dropped`]).
pub const ACCESS_LOG_CAPACITY: usize = 4096;

/// HTTP/1.1 GET and HEAD on a stateless Trickles server, one request per connection.
///
/// **The whole request head must ride in the SYN's data** (so at most the client's
/// `max_request_data`, 1024 bytes by default): an OPEN whose data is not one complete,
/// valid head is answered 400. The server's output stream is the response head followed
/// by the body. Every response carries the same output user continuation
/// (`0..total`, SKIP to `total`), MACed under the application's key and bound to the
/// connection, whose application data is the sealed [`Answer`]:
///
/// ```text
///  format (1) = 2 │ status code (2) │ flags (1): bit 0 HEAD, bit 1 dated │ id │ version
///    │ object_len │ body start │ body end │ head_len │ [date]   (LEB128, ≤ 10 bytes each)
///    │ a 301's Location (the rest, at most MAX_LOCATION bytes)
/// ```
///
/// **Dates.** With [`HttpApp::set_wall_clock`] the `now` its events are handled at is
/// taken as wall-clock time since the Unix epoch (the daemons' clock is), and each answer
/// carries the `Date` of its OPEN, sealed with it: every later response regenerates the
/// same head. Without it (simulations, whose clocks start at zero) there is no `Date`.
///
/// **Access log.** With [`HttpApp::log_access`] each OPEN answered leaves an
/// [`AccessRecord`] (the client's address, the request line, the status, the body's
/// length, the time) for [`HttpApp::poll_access`]. Nothing tells a retransmitted SYN
/// from the first without state, so one answered twice is recorded twice.
///
/// A REQUEST opens it (a bad one is dropped and counted), checks that the object still
/// has that version and length (else the connection is refused: a client must never get
/// two versions' bytes in one body), regenerates the head, checks its length, and serves
/// the asked ranges. Each response's bytes are read before any is sent, so a read that
/// fails refuses the connection instead of leaving a hole. Nothing is kept between events.
///
/// ```
/// use trickles::app::http::{HttpApp, MemStore};
/// use trickles::app::{Application, EventQueue};
/// use trickles::client::{Client, ClientConfig};
/// use trickles::conn::{Addr, FourTuple};
/// use trickles::crypto::KeyConfig;
/// use trickles::server::{Server, ServerConfig};
/// use trickles::Instant;
///
/// let mut store = MemStore::new();
/// store.insert("/hi.txt", b"hi!\n".to_vec());
/// let mut app = HttpApp::new(&[7; 16], store);
/// let keys = KeyConfig { mac_keys: [[1; 16], [2; 16]], current_epoch: 0, nonce_key: [3; 16], rtx_nonce_key: [4; 16] };
/// let mut server = Server::new(ServerConfig::new(keys));
/// let mut queue = EventQueue::new(16);
/// let (c, s) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
/// let tuple = FourTuple { client_addr: c, client_port: 4000, server_addr: s, server_port: 80 };
/// let mut client = Client::new(ClientConfig::default(), tuple, 7);
/// // The whole request head rides in the SYN.
/// client.connect(Instant::ZERO, b"GET /hi.txt HTTP/1.1\r\nHost: s\r\n\r\n");
/// let syn = client.poll_transmit().unwrap();
/// queue.push_segment(&mut server, Instant::from_micros(1_000), c, s, &syn).unwrap();
/// let mut segments = Vec::new();
/// app.handle(queue.pop().unwrap(), &server, &mut |seg: &[u8]| segments.push(seg.to_vec()));
/// for seg in &segments {
///     let _ = client.handle_segment(Instant::from_micros(2_000), seg);
/// }
/// let mut got = [0u8; 512];
/// let n = client.read(&mut got);
/// assert!(got[..n].starts_with(b"HTTP/1.1 200 OK\r\n"));
/// assert!(got[..n].ends_with(
///     b"Content-Length: 4\r\nETag: \"0000000000000001\"\r\nAccept-Ranges: bytes\r\n\r\nhi!\n"
/// ));
/// assert_eq!(app.stats().status_2xx, 1);
/// ```
pub struct HttpApp<S: Store> {
    key: UcontKey,
    store: S,
    stats: HttpStats,
    /// Scratch reused from event to event (nothing in it outlives one): the response
    /// head, the output bytes one event sends, the segment being written. Each holds at
    /// most what one event needs.
    scratch: Scratch,
    /// Events' `now` is wall-clock time: answers are dated.
    wall_clock: bool,
    /// Records waiting for [`HttpApp::poll_access`], when logging.
    access: Option<VecDeque<AccessRecord>>,
}

/// [`HttpApp`]'s reused buffers.
#[derive(Default)]
struct Scratch {
    head: Vec<u8>,
    output: Vec<u8>,
    segment: Vec<u8>,
}

impl<S: Store> HttpApp<S> {
    /// The application serving `store`, sealing under `key` (shared by all replicas).
    pub fn new(key: &[u8; 16], store: S) -> HttpApp<S> {
        HttpApp {
            key: UcontKey::new(key),
            store,
            stats: HttpStats::default(),
            scratch: Scratch::default(),
            wall_clock: false,
            access: None,
        }
    }

    /// Seals under `key` from now on (a reloaded key file): user continuations sealed
    /// under the old key no longer open.
    pub fn set_key(&mut self, key: &[u8; 16]) {
        self.key = UcontKey::new(key);
    }

    /// Takes the `now` of each event ([`Minisocket::received`]) as wall-clock time since
    /// the Unix epoch (`true`), so answers carry a `Date`; or not (`false`, the default:
    /// no `Date`).
    pub fn set_wall_clock(&mut self, on: bool) {
        self.wall_clock = on;
    }

    /// Records every OPEN answered for [`HttpApp::poll_access`] (`true`), or not
    /// (`false`, the default; waiting records are dropped).
    pub fn log_access(&mut self, on: bool) {
        self.access = on.then(VecDeque::new);
    }

    /// The oldest access-log record not yet taken, if logging ([`HttpApp::log_access`]).
    /// Call after each [`Service::serve`](crate::app::Service::serve).
    pub fn poll_access(&mut self) -> Option<AccessRecord> {
        self.access.as_mut()?.pop_front()
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, to change objects (their continuations then go stale).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Counters.
    pub fn stats(&self) -> HttpStats {
        self.stats
    }

    fn open(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        self.stats.opens += 1;
        let secs = msk.received().micros() / 1_000_000;
        let answer = match parse_request(msk.data()) {
            Ok((req, _)) => answer(&self.store, &req),
            Err(e) => Answer::error(e.status()),
        }
        .at(self.wall_clock.then_some(secs));
        match answer.status.code() {
            200..=299 => self.stats.status_2xx += 1,
            300..=399 => self.stats.status_3xx += 1,
            _ => self.stats.status_4xx += 1,
        }
        if let Some(log) = &mut self.access {
            if log.len() < ACCESS_LOG_CAPACITY {
                log.push_back(AccessRecord::new(
                    msk.tuple().client_addr.into(),
                    secs,
                    msk.data(),
                    answer.status,
                    answer.sent_body_len(),
                ));
            } else {
                self.stats.access_dropped += 1;
            }
        }
        let Some(info) = self.current(&answer) else {
            return self.refuse(msk, server, sink);
        };
        let head = &mut self.scratch.head;
        head.clear();
        let head_len = write_head(&answer, info.as_ref(), head) as u64;
        let total = answer.output_len(head_len);
        let mut app = Vec::new();
        encode_answer(&answer, head_len, &mut app);
        let output = UserContinuation::Output {
            valid_start: 0,
            valid_end: total,
            skip_to: total,
            follows: None,
            app: &app,
        };
        // Cannot fail: the range is in order and `app` is far below MAX_UCONT_BODY.
        let Ok(sealed) = self.key.seal(&msk.binding(), &output) else {
            return;
        };
        msk.set_ucont_all(&sealed);
        self.send(msk, server, sink, &answer);
    }

    fn resume(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        self.stats.requests += 1;
        let Some((answer, head_len)) = unseal(&self.key, &msk.binding(), msk.user_continuation())
        else {
            self.stats.bad_ucont += 1;
            return;
        };
        let Some(info) = self.current(&answer) else {
            return self.refuse(msk, server, sink);
        };
        let head = &mut self.scratch.head;
        head.clear();
        if write_head(&answer, info.as_ref(), head) as u64 != head_len {
            // Same version, another content type: not the head the client has part of.
            return self.refuse(msk, server, sink);
        }
        // The continuation the client sent is the one every response carries.
        msk.set_ucont_all_received();
        self.send(msk, server, sink, &answer);
    }

    /// The object `answer` describes, if it still has the answer's version and length:
    /// `Some(None)` for answers about no object, `None` when it changed.
    fn current(&self, answer: &Answer) -> Option<Option<ObjectInfo>> {
        if !answer.status.describes_object() {
            return Some(None);
        }
        let info = self.store.info(answer.id)?;
        (info.version == answer.version && info.len == answer.object_len).then_some(Some(info))
    }

    fn refuse(&mut self, msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        self.stats.stale += 1;
        let _ = msk.refuse(server, sink);
    }

    /// Serves the ranges `msk` asks for of the head (in `scratch.head`) ++ the answer's
    /// body.
    fn send(
        &mut self,
        msk: Minisocket,
        server: &Server,
        sink: &mut dyn FnMut(&[u8]),
        answer: &Answer,
    ) {
        let Scratch {
            head,
            output: all,
            segment,
        } = &mut self.scratch;
        let store = &self.store;
        let head_len = head.len() as u64;
        let total = answer.output_len(head_len);
        let span =
            |r: ByteRange| r.start.min(total)..r.start.saturating_add(u64::from(r.len)).min(total);
        // One read for the span the ranges cover when they lie close together (the usual
        // case: a window of consecutive ranges), else one per range, one after the other
        // in `all`. Either way every byte is read before any response is sent.
        let (mut lo, mut hi, mut asked) = (u64::MAX, 0, 0u64);
        for s in msk.ranges().map(span) {
            (lo, hi, asked) = (lo.min(s.start), hi.max(s.end), asked + (s.end - s.start));
        }
        all.clear();
        let dense = hi > lo && hi - lo <= asked.saturating_mul(2);
        let read = if dense {
            output(store, answer, head, lo..hi, all)
        } else {
            msk.ranges()
                .all(|r| output(store, answer, head, span(r), all))
        };
        if !read {
            return self.refuse(msk, server, sink);
        }
        let all: &[u8] = all;
        // Where in `all` the next range's bytes are when read one range after the other.
        let mut next = 0usize;
        let stats = &mut self.stats;
        let _ = msk.send_slices(
            server,
            &mut |range, allowed| {
                // Called once per range, in the order of `msk.ranges()`.
                let s = span(range);
                let len = (s.end - s.start) as usize;
                let from = if dense { (s.start - lo) as usize } else { next };
                next = from + len;
                let chunk = all.get(from..from + len).unwrap_or_default();
                let sent = chunk.get(..allowed).unwrap_or(chunk);
                let n = sent.len() as u64;
                let in_head = head_len.saturating_sub(range.start).min(n);
                stats.bytes_head += in_head;
                stats.bytes_body += n - in_head;
                (sent, range.start.saturating_add(n) >= total)
            },
            sink,
            segment,
        );
    }
}

/// Appends bytes `span` of the output (`head` ++ the answer's body out of `store`) to
/// `out`; `false` if the store could not supply them all.
fn output<S: Store>(
    store: &S,
    answer: &Answer,
    head: &[u8],
    span: Range<u64>,
    out: &mut Vec<u8>,
) -> bool {
    let head_len = head.len() as u64;
    if span.start < head_len {
        let to = span.end.min(head_len);
        out.extend_from_slice(
            head.get(span.start as usize..to as usize)
                .unwrap_or_default(),
        );
    }
    let from = span.start.max(head_len);
    if from >= span.end {
        return true;
    }
    let (Ok(len), offset) = (usize::try_from(span.end - from), from - head_len) else {
        return false;
    };
    match answer.body {
        Body::Fixed(text) => {
            let part = usize::try_from(offset)
                .ok()
                .and_then(|o| text.get(o..o.checked_add(len)?));
            part.map(|p| out.extend_from_slice(p)).is_some()
        }
        Body::Object { start, .. } => {
            let before = out.len();
            store.read(answer.id, start.saturating_add(offset), len, out)
                && out.len() - before == len
        }
    }
}

impl<S: Store> Application for HttpApp<S> {
    fn handle(&mut self, msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        match msk.kind() {
            EventKind::Open => self.open(msk, server, sink),
            EventKind::Request => self.resume(msk, server, sink),
            EventKind::Close => {}
        }
    }
}

/// Appends the sealed-answer encoding of `answer` with a head of `head_len` bytes.
fn encode_answer(answer: &Answer, head_len: u64, out: &mut Vec<u8>) {
    let (start, end) = match answer.body {
        Body::Object { start, end } => (start, end),
        Body::Fixed(text) => (0, text.len() as u64),
    };
    out.push(SEAL_FORMAT);
    out.extend_from_slice(&answer.status.code().to_be_bytes());
    let head_only = if answer.head_only { FLAG_HEAD_ONLY } else { 0 };
    let dated = if answer.date.is_some() { FLAG_DATED } else { 0 };
    out.push(head_only | dated);
    for n in [
        answer.id,
        answer.version,
        answer.object_len,
        start,
        end,
        head_len,
    ] {
        put_varint(out, n);
    }
    if let Some(date) = answer.date {
        put_varint(out, date);
    }
    if let Some(l) = &answer.location {
        out.extend_from_slice(l.as_bytes());
    }
}

/// Opens a sealed answer for `conn`: the answer and its head's length, if the user
/// continuation verifies, is this application's output continuation, and is consistent.
fn unseal(key: &UcontKey, conn: &Binding, ucont: &[u8]) -> Option<(Answer, u64)> {
    let UserContinuation::Output {
        valid_start: 0,
        valid_end,
        skip_to,
        follows: None,
        app,
    } = key.open(conn, ucont).ok()?
    else {
        return None;
    };
    let mut r = Reader::new(app);
    if r.u8().ok()? != SEAL_FORMAT {
        return None;
    }
    let status = Status::from_code(r.u16().ok()?)?;
    let flags = r.u8().ok()?;
    if flags & !(FLAG_HEAD_ONLY | FLAG_DATED) != 0 {
        return None;
    }
    let head_only = flags & FLAG_HEAD_ONLY != 0;
    let mut next = || get_varint(&mut r);
    let (id, version, object_len) = (next()?, next()?, next()?);
    let (start, end, head_len) = (next()?, next()?, next()?);
    let date = if flags & FLAG_DATED != 0 {
        Some(next()?)
    } else {
        None
    };
    let rest = r.rest();
    let location = match (status, rest) {
        (Status::MovedPermanently, l) if !l.is_empty() && l.len() <= MAX_LOCATION => {
            Some(String::from(core::str::from_utf8(l).ok()?))
        }
        (Status::MovedPermanently, _) => return None,
        (_, []) => None,
        _ => return None,
    };
    let body = if status.serves_object() {
        (start <= end && end <= object_len).then_some(Body::Object { start, end })?
    } else {
        let text = status.error_body();
        (start == 0 && end == text.len() as u64).then_some(Body::Fixed(text))?
    };
    let answer = Answer {
        status,
        head_only,
        id,
        version,
        object_len,
        body,
        date,
        location,
    };
    (valid_end == skip_to && valid_end == answer.output_len(head_len)).then_some((answer, head_len))
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn get_varint(r: &mut Reader<'_>) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = r.u8().ok()?;
        if shift == 63 && b > 1 {
            return None;
        }
        n |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_answers_round_trip_and_varints_are_bounded() {
        use crate::conn::{Addr, FourTuple};
        let key = UcontKey::new(&[1; 16]);
        let conn = Binding {
            tuple: FourTuple {
                client_addr: Addr::V4([1, 2, 3, 4]),
                client_port: 1,
                server_addr: Addr::V4([5, 6, 7, 8]),
                server_port: 80,
            },
            conn_nonce: 9,
        };
        let answers = [
            Answer {
                status: Status::PartialContent,
                head_only: true,
                id: u64::MAX,
                version: 1 << 63,
                object_len: 1000,
                body: Body::Object { start: 5, end: 999 },
                date: Some(784_111_777),
                location: None,
            },
            Answer::error(Status::NotFound),
            Answer {
                location: Some("/sub%20dir/?q".into()),
                ..Answer::error(Status::MovedPermanently).at(Some(u64::MAX))
            },
            Answer {
                status: Status::NotModified,
                id: 3,
                version: 4,
                object_len: 5,
                ..Answer::error(Status::NotModified).at(Some(0))
            },
        ];
        for a in answers {
            let mut app = Vec::new();
            encode_answer(&a, 150, &mut app);
            // A location where none belongs, or none where one does, is refused.
            let mut other = a.clone();
            other.location = match a.location {
                Some(_) => None,
                None => Some("/x/".into()),
            };
            let total = a.output_len(150);
            let mut bad = Vec::new();
            encode_answer(&other, 150, &mut bad);
            let uc = UserContinuation::Output {
                valid_start: 0,
                valid_end: total,
                skip_to: total,
                follows: None,
                app: &bad,
            };
            assert_eq!(unseal(&key, &conn, &key.seal(&conn, &uc).unwrap()), None);
            app.clear();
            encode_answer(&a, 150, &mut app);
            let total = a.output_len(150);
            let uc = UserContinuation::Output {
                valid_start: 0,
                valid_end: total,
                skip_to: total,
                follows: None,
                app: &app,
            };
            let sealed = key.seal(&conn, &uc).unwrap();
            assert_eq!(unseal(&key, &conn, &sealed), Some((a.clone(), 150)));
            // A total that does not match the answer is refused even under a good MAC.
            let off = UserContinuation::Output {
                valid_start: 0,
                valid_end: total + 1,
                skip_to: total + 1,
                follows: None,
                app: &app,
            };
            assert_eq!(unseal(&key, &conn, &key.seal(&conn, &off).unwrap()), None);
        }
        let mut v = Vec::new();
        put_varint(&mut v, u64::MAX);
        assert_eq!(v.len(), 10);
        assert_eq!(get_varint(&mut Reader::new(&v)), Some(u64::MAX));
        assert_eq!(get_varint(&mut Reader::new(&[0xff; 10])), None);
        assert_eq!(get_varint(&mut Reader::new(&[0x80])), None);
    }
}
