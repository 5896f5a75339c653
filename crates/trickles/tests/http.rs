//! HTTP/1.1 GETs on the stateless server (`app::http`): whole exchanges over lossy
//! simulated links, error answers, and user continuations that are forged, altered,
//! another connection's, or out of date.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Range;

use proptest::prelude::*;
use trickles::Instant;
use trickles::app::http::{HttpApp, MemStore, Store, answer, parse_request, write_head};
use trickles::app::{Application, Binding, EventQueue, HttpStats, UcontKey, UserContinuation};
use trickles::client::{Client, ClientConfig};
use trickles::conn::{Addr, FourTuple};
use trickles::server::{Server, ServerConfig};
use trickles::sim::app::{AppOutcome, AppRun, run_app};
use trickles::sim::sim_keys;
use trickles::wire::{self, Response, ResponseKind, Segment};

const KEY: [u8; 16] = [0x42; 16];
const PATH: &str = "/data/object.bin";

/// `len` position-dependent bytes: misplaced data shows.
fn object(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64)
        .map(|i| {
            let x = (i ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (x >> 56) as u8 ^ i as u8
        })
        .collect()
}

fn store_with(bytes: Vec<u8>) -> MemStore {
    let mut s = MemStore::new();
    s.insert("/index.html", b"<!doctype html><p>hello</p>\n".to_vec());
    s.insert(PATH, bytes);
    s
}

fn run(store: &MemStore, request: &[u8], loss_ppm: u32, seed: u64) -> AppOutcome {
    let mut run = AppRun::new(5_000, vec![request.to_vec()]);
    run.loss_fwd_ppm = loss_ppm;
    run.loss_rev_ppm = loss_ppm;
    run.seed = seed;
    let make = || Box::new(HttpApp::new(&KEY, store.clone())) as Box<dyn Application>;
    run_app(
        &run,
        &make,
        ServerConfig::new(sim_keys()),
        ClientConfig::default(),
    )
}

/// The response's status code, its headers (names lowercased) and body.
fn split(received: &[u8]) -> (u16, Vec<(String, String)>, &[u8]) {
    let end = received
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole head");
    let head = std::str::from_utf8(&received[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap();
    assert!(status.starts_with("HTTP/1.1 "), "{status}");
    let code = status[9..12].parse().unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(": ").unwrap();
            (n.to_ascii_lowercase(), v.to_string())
        })
        .collect();
    (code, headers, &received[end + 4..])
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A `Range` header as the test generates it.
#[derive(Clone, Debug)]
enum RangeHeader {
    None,
    FromTo(u64, u64),
    From(u64),
    Suffix(u64),
    /// Two ranges: ignored.
    List(u64, u64),
    /// Not a byte range: ignored.
    Garbage,
}

impl RangeHeader {
    fn line(&self) -> String {
        match self {
            RangeHeader::None => String::new(),
            RangeHeader::FromTo(a, b) => format!("Range: bytes={a}-{b}\r\n"),
            RangeHeader::From(a) => format!("Range: bytes={a}-\r\n"),
            RangeHeader::Suffix(n) => format!("Range: bytes=-{n}\r\n"),
            RangeHeader::List(a, b) => format!("Range: bytes=0-{a}, {b}-\r\n"),
            RangeHeader::Garbage => "Range: lines=1-2\r\n".to_string(),
        }
    }

    /// What RFC 9110 says to answer for an object of `len` bytes: the status and the span
    /// (written out here independently of the library).
    fn expect(&self, len: u64) -> (u16, Range<u64>) {
        let whole = (200, 0..len);
        match *self {
            RangeHeader::None | RangeHeader::List(..) | RangeHeader::Garbage => whole,
            // first > last is an invalid range-spec: the header is ignored.
            RangeHeader::FromTo(a, b) if a > b => whole,
            RangeHeader::FromTo(a, _) | RangeHeader::From(a) if a >= len => (416, 0..0),
            RangeHeader::FromTo(a, b) => (206, a..(b + 1).min(len)),
            RangeHeader::From(a) => (206, a..len),
            RangeHeader::Suffix(0) => (416, 0..0),
            RangeHeader::Suffix(_) if len == 0 => whole,
            RangeHeader::Suffix(n) => (206, len - n.min(len)..len),
        }
    }
}

fn range_header(len: u64) -> impl Strategy<Value = RangeHeader> {
    let pos = 0..len + 40;
    prop_oneof![
        Just(RangeHeader::None),
        (pos.clone(), pos.clone()).prop_map(|(a, b)| RangeHeader::FromTo(a.min(b), a.max(b))),
        (pos.clone(), pos.clone()).prop_map(|(a, b)| RangeHeader::FromTo(a, b)),
        pos.clone().prop_map(RangeHeader::From),
        pos.clone().prop_map(RangeHeader::Suffix),
        (pos.clone(), pos).prop_map(|(a, b)| RangeHeader::List(a, b)),
        Just(RangeHeader::Garbage),
    ]
}

fn get(method: &str, path: &str, range: &RangeHeader) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nUser-Agent: proptest\r\n{}\r\n",
        range.line()
    )
    .into_bytes()
}

/// Checks one run: complete, the head regenerable byte for byte by the library, and the
/// head's fields and the body as RFC 9110 wants them.
fn check_get(out: &AppOutcome, store: &MemStore, request: &[u8], range: &RangeHeader, head: bool) {
    let len = store.lookup(PATH).unwrap().len;
    let obj = object(len as usize, len);
    assert!(out.complete, "{:?} {:?}", out.client, out.server);
    let (code, headers, body) = split(&out.received);
    let (want_code, span) = range.expect(len);
    assert_eq!(code, want_code, "{range:?} len {len}");
    let want_body: &[u8] = match (code, head) {
        (_, true) => b"",
        (416, _) => b"416 Range Not Satisfiable\n",
        _ => &obj[span.start as usize..span.end as usize],
    };
    assert!(
        body == want_body,
        "{} body bytes, want {}",
        body.len(),
        want_body.len()
    );
    let content_length = if code == 416 {
        26
    } else {
        span.end - span.start
    };
    assert_eq!(
        header(&headers, "content-length"),
        Some(&*content_length.to_string())
    );
    let content_range = match code {
        206 => Some(format!("bytes {}-{}/{len}", span.start, span.end - 1)),
        416 => Some(format!("bytes */{len}")),
        _ => None,
    };
    assert_eq!(header(&headers, "content-range"), content_range.as_deref());
    assert_eq!(header(&headers, "server"), Some("trickles-web"));
    assert_eq!(header(&headers, "date"), None);
    assert_eq!(header(&headers, "connection"), None);
    // The plain path (the TCP fallback server's) writes the same head.
    let (req, _) = parse_request(request).unwrap();
    let a = answer(store, &req);
    let mut want_head = Vec::new();
    write_head(&a, store.info(a.id).as_ref(), &mut want_head);
    assert_eq!(&out.received[..want_head.len()], &want_head[..]);
    assert_eq!(
        out.received.len() as u64,
        want_head.len() as u64 + body.len() as u64
    );
}

fn any_len() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..5_000, 1 => 5_000u64..200_000]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any object size and Range header, with or without 5% loss each way: the client
    /// reads exactly the head and then the right slice of the object (or the 416 text).
    #[test]
    fn get_reads_the_head_then_exactly_the_right_slice(
        (len, range) in any_len().prop_flat_map(|len| (Just(len), range_header(len))),
        lossy in any::<bool>(),
        head in prop::sample::select(vec![false, false, false, true]),
        seed in any::<u64>(),
    ) {
        let store = store_with(object(len as usize, len));
        let request = get(if head { "HEAD" } else { "GET" }, PATH, &range);
        let out = run(&store, &request, if lossy { 50_000 } else { 0 }, seed);
        check_get(&out, &store, &request, &range, head);
    }
}

/// The biggest objects under loss both ways: every part arrives in place.
#[test]
fn a_large_object_arrives_exact_under_loss() {
    for (len, range, seed) in [
        (200_000, RangeHeader::None, 1),
        (199_999, RangeHeader::FromTo(1_000, 150_000), 2),
        (150_001, RangeHeader::Suffix(100_000), 3),
    ] {
        let store = store_with(object(len, len as u64));
        let request = get("GET", PATH, &range);
        let out = run(&store, &request, 50_000, seed);
        check_get(&out, &store, &request, &range, false);
        assert!(out.client.losses > 0, "no loss at all: {:?}", out.client);
    }
}

/// Errors arrive whole, their heads and fixed bodies, with and without loss.
#[test]
fn error_answers_arrive_whole() {
    let store = store_with(object(10, 0));
    let cases: [(&[u8], u16, &[u8]); 7] = [
        (
            b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n",
            404,
            b"404 Not Found\n",
        ),
        (b"GET /missing HTTP/1.0\r\n\r\n", 404, b"404 Not Found\n"),
        (b"HEAD /missing HTTP/1.1\r\nHost: t\r\n\r\n", 404, b""),
        (b"GET / HTTP/1.1\r\n\r\n", 400, b"400 Bad Request\n"),
        (
            b"GET /a/../etc/passwd HTTP/1.1\r\nHost: t\r\n\r\n",
            400,
            b"400 Bad Request\n",
        ),
        (
            b"GET /index.html HTTP/1.1\r\nHost: t\r\n",
            400,
            b"400 Bad Request\n",
        ),
        (
            b"PUT /index.html HTTP/1.1\r\nHost: t\r\n\r\n",
            405,
            b"405 Method Not Allowed\n",
        ),
    ];
    for (request, code, body) in cases {
        for (loss, seed) in [(0, 1), (50_000, 2), (100_000, 3)] {
            let out = run(&store, request, loss, seed);
            let what = String::from_utf8_lossy(request);
            assert!(out.complete, "{what} loss {loss}: {:?}", out.client);
            let (got, headers, got_body) = split(&out.received);
            assert_eq!((got, got_body), (code, body), "{what} loss {loss}");
            let want_len = match code {
                404 => 14,
                400 => 16,
                _ => 23,
            };
            assert_eq!(
                header(&headers, "content-length"),
                Some(&*want_len.to_string())
            );
        }
    }
    // The index of a directory, and a page by its percent-encoded name.
    let out = run(&store, b"GET http://t/ HTTP/1.1\r\nHost: t\r\n\r\n", 0, 1);
    let (code, headers, body) = split(&out.received);
    assert_eq!((code, body), (200, &b"<!doctype html><p>hello</p>\n"[..]));
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/html; charset=utf-8")
    );
    let out = run(
        &store,
        b"GET /%69ndex.html?v=2 HTTP/1.1\r\nHost: t\r\n\r\n",
        0,
        1,
    );
    assert_eq!(split(&out.received).0, 200);
}

/// A directory without its slash is redirected, and a conditional GET of a current copy
/// gets 304 with the validators and no body; with and without loss.
#[test]
fn redirects_and_not_modified_arrive_whole() {
    let mut store = store_with(object(5_000, 1));
    store.set_modified(PATH, 784_111_777);
    let info = store.lookup(PATH).unwrap();
    let etag = format!("\"{:016x}\"", info.version);
    let cases: [(String, u16, &[u8]); 5] = [
        (
            "GET /data?v=1 HTTP/1.1\r\nHost: t\r\n\r\n".into(),
            301,
            b"301 Moved Permanently\n",
        ),
        (
            format!("GET {PATH} HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n"),
            304,
            b"",
        ),
        (
            format!("HEAD {PATH} HTTP/1.1\r\nHost: t\r\nIf-None-Match: W/{etag}\r\n\r\n"),
            304,
            b"",
        ),
        (
            format!(
                "GET {PATH} HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"
            ),
            304,
            b"",
        ),
        (
            format!(
                "GET {PATH} HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:36 GMT\r\n\r\n"
            ),
            200,
            &object(5_000, 1),
        ),
    ];
    for (request, code, body) in &cases {
        for (loss, seed) in [(0, 1), (50_000, 2)] {
            let out = run(&store, request.as_bytes(), loss, seed);
            assert!(out.complete, "{request} loss {loss}: {:?}", out.client);
            let (got, headers, got_body) = split(&out.received);
            assert_eq!((got, got_body), (*code, *body), "{request} loss {loss}");
            match code {
                301 => assert_eq!(header(&headers, "location"), Some("/data/?v=1")),
                _ => {
                    assert_eq!(header(&headers, "etag"), Some(&*etag));
                    assert_eq!(
                        header(&headers, "last-modified"),
                        Some("Sun, 06 Nov 1994 08:49:37 GMT")
                    );
                    let length = header(&headers, "content-length");
                    assert_eq!(length.is_none(), *code == 304, "{request}");
                }
            }
        }
    }
}

/// With a wall clock, answers are dated (the OPEN's date, sealed) and each OPEN leaves
/// one access-log record; resumptions leave none.
#[test]
fn dates_and_access_records() {
    let mut app = HttpApp::new(&KEY, store_with(object(60_000, 7)));
    app.set_wall_clock(true);
    app.log_access(true);
    let mut client = Client::new(ClientConfig::default(), tuple(4001), 4001);
    client.connect(Instant::ZERO, &get("GET", PATH, &RangeHeader::None));
    let syn = client.poll_transmit().unwrap();
    for s in serve(&mut app, &syn) {
        let _ = client.handle_segment(Instant::from_micros(50_000), &s);
    }
    let mut got = vec![0; 100_000];
    let n = client.read(&mut got);
    let (code, headers, _) = split(&got[..n]);
    assert_eq!(code, 200);
    // `serve` handles every event at 0.1 s after the epoch.
    assert_eq!(
        header(&headers, "date"),
        Some("Thu, 01 Jan 1970 00:00:00 GMT")
    );
    let record = app.poll_access().expect("the OPEN is recorded");
    assert_eq!(
        record.to_string(),
        "10.0.0.1 - - [01/Jan/1970:00:00:00 +0000] \"GET /data/object.bin HTTP/1.1\" 200 60000"
    );
    assert_eq!(app.poll_access(), None);
    for r in std::iter::from_fn(|| client.poll_transmit()).collect::<Vec<_>>() {
        serve(&mut app, &r);
    }
    assert!(app.stats().requests > 0);
    assert_eq!(app.poll_access(), None, "resumptions are not requests");
    app.log_access(false);
    serve(&mut app, &syn);
    assert_eq!(app.poll_access(), None);
}

// ---------------------------------------------------------------------------------------
// User continuations, driven through the server and queue directly.

const CLIENT: Addr = Addr::V4([10, 0, 0, 1]);
const SERVER: Addr = Addr::V4([10, 0, 0, 2]);

fn tuple(port: u16) -> FourTuple {
    FourTuple {
        client_addr: CLIENT,
        client_port: port,
        server_addr: SERVER,
        server_port: 80,
    }
}

/// What the application sent for one segment, run through a fresh replica (same keys,
/// empty replay filter) so the same request can be presented in many versions.
fn serve(app: &mut HttpApp<MemStore>, seg: &[u8]) -> Vec<Vec<u8>> {
    let mut server = Server::new(ServerConfig::new(sim_keys()));
    let mut queue = EventQueue::new(4);
    queue
        .push_segment(
            &mut server,
            Instant::from_micros(100_000),
            CLIENT,
            SERVER,
            seg,
        )
        .expect("the transport accepts the request: only the application can refuse it");
    let mut out = Vec::new();
    app.handle(queue.pop().unwrap(), &server, &mut |s: &[u8]| {
        out.push(s.to_vec())
    });
    out
}

/// The responses' data, and whether one was a reset.
fn responses(segs: &[Vec<u8>]) -> (usize, bool) {
    let mut data = 0;
    let mut reset = false;
    for s in segs {
        let p = wire::parse_segment(&SERVER, &CLIENT, s).unwrap();
        let r = Response::parse(p.payload).unwrap();
        data += r.data.len();
        reset |= r.kind == ResponseKind::Reset;
    }
    (data, reset)
}

/// A client on `port` that asked for the object and got the SYN's answer: its next
/// request segments (each carrying the sealed user continuation).
fn next_requests(app: &mut HttpApp<MemStore>, port: u16) -> Vec<Vec<u8>> {
    let mut client = Client::new(ClientConfig::default(), tuple(port), u32::from(port));
    client.connect(Instant::ZERO, &get("GET", PATH, &RangeHeader::None));
    let syn = client.poll_transmit().unwrap();
    for s in serve(app, &syn) {
        let _ = client.handle_segment(Instant::from_micros(50_000), &s);
    }
    std::iter::from_fn(|| client.poll_transmit()).collect()
}

/// `seg` (a request from the client) with its user continuation replaced by `ucont`,
/// checksum and all.
fn with_ucont(seg: &[u8], ucont: &[u8]) -> Vec<u8> {
    let p = wire::parse_segment(&CLIENT, &SERVER, seg).unwrap();
    let req = wire::Request::parse(p.payload).unwrap();
    let req = wire::Request {
        user_continuation: ucont,
        ..req
    };
    let mut payload = vec![0; req.buffer_len()];
    req.emit(&mut payload).unwrap();
    let mut out = vec![0; payload.len() + 64];
    let n = wire::emit_segment(
        &CLIENT,
        &SERVER,
        &Segment {
            payload: &payload,
            ..p
        },
        &mut out,
    )
    .unwrap();
    out.truncate(n);
    out
}

fn ucont_of(seg: &[u8]) -> Vec<u8> {
    let p = wire::parse_segment(&CLIENT, &SERVER, seg).unwrap();
    wire::Request::parse(p.payload)
        .unwrap()
        .user_continuation
        .to_vec()
}

fn setup() -> (HttpApp<MemStore>, Vec<Vec<u8>>) {
    let mut app = HttpApp::new(&KEY, store_with(object(60_000, 7)));
    let reqs = next_requests(&mut app, 4000);
    assert!(!reqs.is_empty());
    assert!(!ucont_of(&reqs[0]).is_empty());
    (app, reqs)
}

/// Serving `seg` sends nothing at all and counts a bad user continuation.
fn assert_dropped(app: &mut HttpApp<MemStore>, seg: &[u8]) {
    let before = app.stats();
    let out = serve(app, seg);
    assert!(out.is_empty(), "{} segments sent", out.len());
    assert_eq!(
        app.stats(),
        HttpStats {
            requests: before.requests + 1,
            bad_ucont: before.bad_ucont + 1,
            ..before
        }
    );
}

#[test]
fn the_genuine_continuation_is_served() {
    let (mut app, reqs) = setup();
    for r in &reqs {
        let (data, reset) = responses(&serve(&mut app, r));
        assert!(data > 0 && !reset);
    }
    assert_eq!(app.stats().bad_ucont, 0);
    assert_eq!(app.stats().requests, reqs.len() as u64);
}

#[test]
fn continuations_of_other_connections_or_keys_are_never_served() {
    let (mut app, reqs) = setup();
    let genuine = ucont_of(&reqs[0]);
    // Another connection's genuine continuation.
    let others = next_requests(&mut app, 4001);
    assert_dropped(&mut app, &with_ucont(&reqs[0], &ucont_of(&others[0])));
    // One sealed under another key, claiming the whole of a longer object.
    let (uc, _) = UserContinuation::parse(&genuine).unwrap();
    let UserContinuation::Output { app: data, .. } = uc else {
        panic!("{uc:?}")
    };
    let conn = Binding {
        tuple: tuple(4000),
        conn_nonce: 0,
    };
    let forged = UcontKey::new(&[0x43; 16])
        .seal(
            &conn,
            &UserContinuation::Output {
                valid_start: 0,
                valid_end: 1 << 40,
                skip_to: 1 << 40,
                follows: None,
                app: data,
            },
        )
        .unwrap();
    assert_dropped(&mut app, &with_ucont(&reqs[0], &forged));
    // None, or not a continuation at all.
    assert_dropped(&mut app, &with_ucont(&reqs[0], b""));
    assert_dropped(&mut app, &with_ucont(&reqs[0], b"GET /etc/passwd"));
}

#[test]
fn a_changed_or_vanished_object_refuses_the_connection() {
    let (mut app, reqs) = setup();
    app.store_mut().insert(PATH, object(60_000, 8));
    let (data, reset) = responses(&serve(&mut app, &reqs[0]));
    assert_eq!((data, reset), (0, true));
    assert_eq!(app.stats().stale, 1);
    // Reverting the bytes does not revert the version.
    app.store_mut().insert(PATH, object(60_000, 7));
    assert!(responses(&serve(&mut app, &reqs[0])).1);
    // A store where the id names nothing any more.
    let (_, reqs) = setup();
    let mut empty = HttpApp::new(&KEY, MemStore::new());
    assert!(responses(&serve(&mut empty, &reqs[0])).1);
    assert_eq!(empty.stats().stale, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any alteration of the sealed continuation — a flipped bit, a changed byte, a cut
    /// or an extension — is dropped unserved.
    #[test]
    fn an_altered_continuation_is_never_served(
        at in any::<prop::sample::Index>(),
        how in 0u8..4,
        byte in any::<u8>(),
        bit in 0u8..8,
    ) {
        let (mut app, reqs) = setup();
        let mut uc = ucont_of(&reqs[0]);
        let i = at.index(uc.len());
        match how {
            0 => uc[i] ^= 1 << bit,
            1 => uc[i] = if uc[i] == byte { !byte } else { byte },
            2 => uc.truncate(i),
            _ => uc.insert(i, byte),
        }
        assert_dropped(&mut app, &with_ucont(&reqs[0], &uc));
    }
}

/// A request head longer than the SYN's data (1024 bytes by default) cannot be served:
/// the SYN holds an incomplete head, answered 400, and the connection still completes.
#[test]
fn a_head_longer_than_the_syn_is_answered_400() {
    let store = store_with(object(10, 0));
    let pad = "p".repeat(1200);
    let request = format!("GET /index.html HTTP/1.1\r\nHost: t\r\nX-Pad: {pad}\r\n\r\n");
    let out = run(&store, request.as_bytes(), 0, 1);
    assert!(out.complete && !out.reset, "{:?}", out.client);
    assert_eq!(split(&out.received).2, b"400 Bad Request\n");
}
