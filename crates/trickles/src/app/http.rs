//! HTTP/1.1 GETs out of an object store, on a stateless Trickles server (§4, §5.2, §7.1).
//!
//! The plain pieces work on any transport (the daemon's TCP fallback server uses them
//! directly):
//!
//! * [`parse_request`]: one request head (`GET` or `HEAD`, origin-form `/path?query` or
//!   the absolute-form `http://host[:port]/path` a proxy client sends, a single byte
//!   [`RangeSpec`]) into a [`Request`], or a typed [`HttpError`].
//! * [`answer`]: what to serve from a [`Store`]: a [`Status`] and the body as a span of
//!   the object (or a short fixed text for errors): an [`Answer`].
//! * [`write_head`]: the response head, deterministic (no `Date`, no `Connection`), so
//!   any replica regenerates it byte for byte at any time.
//! * [`ResponseHead::parse`]: the client's side: a response head's status,
//!   `Content-Length` and `Content-Range` (the downloader and the proxy frame bodies with
//!   it).
//!
//! [`HttpApp`] puts them on Trickles, one GET per connection. The request head rides in
//! the SYN; the server's output stream is the response head followed by the body. The
//! answer is sealed into an output user continuation that every response carries, so a
//! later request — to this replica or another, a second or an hour later — regenerates
//! the head and reads the asked ranges of the object without any state:
//!
//! ```text
//!  OPEN    SYN data ─► parse_request ─► answer(store) ─► write_head ─► seal ──┐
//!  REQUEST ucont ─► open ─► version still current? ─► write_head ─────────────┤
//!                                                                             ▼
//!          output stream: [0, head_len) head │ [head_len, total) body = store.read
//! ```
//!
//! No I/O and no clock here: the store does the reading.
//!
//! ```
//! use trickles::app::http::{Body, MemStore, Status, Store, answer, parse_request, write_head};
//!
//! let mut store = MemStore::new();
//! store.insert("/hello.txt", b"hello, world\n".to_vec());
//! let bytes = b"GET /hello.txt HTTP/1.1\r\nHost: example\r\nRange: bytes=7-\r\n\r\n";
//! let (req, used) = parse_request(bytes).unwrap();
//! assert_eq!((&*req.path, used), ("/hello.txt", bytes.len()));
//!
//! let a = answer(&store, &req);
//! assert_eq!((a.status, a.body), (Status::PartialContent, Body::Object { start: 7, end: 13 }));
//! let mut out = Vec::new();
//! write_head(&a, store.info(a.id).as_ref(), &mut out);
//! assert!(store.read(a.id, 7, 6, &mut out));
//! assert_eq!(
//!     out,
//!     b"HTTP/1.1 206 Partial Content\r\nServer: trickles-web\r\n\
//!       Content-Type: text/plain; charset=utf-8\r\nContent-Length: 6\r\n\
//!       Accept-Ranges: bytes\r\nContent-Range: bytes 7-12/13\r\n\r\nworld\n"
//! );
//! ```

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use super::{Application, Binding, Minisocket, UcontKey, UserContinuation};
use crate::server::{EventKind, Server};
use crate::wire::{ByteRange, Reader};

mod response;
pub use response::{ContentRange, ResponseHead};

/// Longest request head accepted, its final CRLFCRLF included.
pub const MAX_HEAD: usize = 8192;

// ---------------------------------------------------------------------------------------
// The store

/// What the server knows of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// The store's name for it, stable while the object exists.
    pub id: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Changes whenever its content does: a continuation made for another version is
    /// refused rather than served with mixed bytes.
    pub version: u64,
    /// Its media type.
    pub content_type: &'static str,
}

/// Where the objects come from: files for the daemon, memory for tests ([`MemStore`]).
pub trait Store {
    /// The object at `path` (decoded, starting with `/`, free of `..` segments).
    fn lookup(&self, path: &str) -> Option<ObjectInfo>;

    /// The object named `id`, if it still exists.
    fn info(&self, id: u64) -> Option<ObjectInfo>;

    /// Appends up to `len` bytes of object `id` from `offset` on to `out` (fewer at the
    /// object's end). Returns `false` if the object is gone.
    fn read(&self, id: u64, offset: u64, len: usize, out: &mut Vec<u8>) -> bool;
}

/// The media type for `path`'s extension (html, txt, css, js, json, png, jpg, svg; any
/// case), else `application/octet-stream`.
pub fn content_type_for(path: &str) -> &'static str {
    const TYPES: [(&str, &str); 11] = [
        ("html", "text/html; charset=utf-8"),
        ("htm", "text/html; charset=utf-8"),
        ("txt", "text/plain; charset=utf-8"),
        ("css", "text/css"),
        ("js", "text/javascript"),
        ("json", "application/json"),
        ("png", "image/png"),
        ("jpg", "image/jpeg"),
        ("jpeg", "image/jpeg"),
        ("svg", "image/svg+xml"),
        ("ico", "image/x-icon"),
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((_, ext)) = name.rsplit_once('.') else {
        return "application/octet-stream";
    };
    TYPES
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map_or("application/octet-stream", |(_, t)| t)
}

/// Objects in memory by path. Ids are insertion indexes; versions start at 1 and grow
/// when [`MemStore::insert`] replaces an object. A path ending in `/` finds its
/// `index.html`.
#[derive(Clone, Debug, Default)]
pub struct MemStore {
    by_path: BTreeMap<String, u64>,
    objects: Vec<MemObject>,
}

#[derive(Clone, Debug)]
struct MemObject {
    content_type: &'static str,
    version: u64,
    bytes: Vec<u8>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> MemStore {
        MemStore::default()
    }

    /// Stores `bytes` at `path` and returns the object's id; replacing an object keeps its
    /// id and bumps its version.
    pub fn insert(&mut self, path: &str, bytes: Vec<u8>) -> u64 {
        let content_type = content_type_for(path);
        if let Some(&id) = self.by_path.get(path)
            && let Some(o) = usize::try_from(id)
                .ok()
                .and_then(|i| self.objects.get_mut(i))
        {
            o.version += 1;
            o.bytes = bytes;
            return id;
        }
        let id = self.objects.len() as u64;
        self.objects.push(MemObject {
            content_type,
            version: 1,
            bytes,
        });
        self.by_path.insert(String::from(path), id);
        id
    }

    fn object(&self, id: u64) -> Option<&MemObject> {
        self.objects.get(usize::try_from(id).ok()?)
    }
}

impl Store for MemStore {
    fn lookup(&self, path: &str) -> Option<ObjectInfo> {
        let id = match self.by_path.get(path) {
            Some(&id) => id,
            None if path.ends_with('/') => *self.by_path.get(&[path, "index.html"].concat())?,
            None => return None,
        };
        self.info(id)
    }

    fn info(&self, id: u64) -> Option<ObjectInfo> {
        let o = self.object(id)?;
        Some(ObjectInfo {
            id,
            len: o.bytes.len() as u64,
            version: o.version,
            content_type: o.content_type,
        })
    }

    fn read(&self, id: u64, offset: u64, len: usize, out: &mut Vec<u8>) -> bool {
        let Some(o) = self.object(id) else {
            return false;
        };
        let from = usize::try_from(offset).map_or(o.bytes.len(), |f| f.min(o.bytes.len()));
        let to = from.saturating_add(len).min(o.bytes.len());
        out.extend_from_slice(o.bytes.get(from..to).unwrap_or_default());
        true
    }
}

// ---------------------------------------------------------------------------------------
// Requests

/// Why a request head was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// No CRLFCRLF yet: the head is not complete.
    Incomplete,
    /// No CRLFCRLF within [`MAX_HEAD`] bytes.
    TooLong,
    /// The request line is not `method SP target SP version`.
    BadRequestLine,
    /// The version is not `HTTP/1.x`.
    BadVersion,
    /// The target is not an origin-form or `http://` absolute-form target, has a bad or
    /// NUL percent-escape, is not UTF-8 once decoded, or has a `..` segment.
    BadTarget,
    /// A header line that is not `name: value` (bad name, control bytes, line folding).
    BadHeader,
    /// An HTTP/1.1 request without a `Host` header, or with two, or a bad value.
    BadHost,
    /// `Content-Length` other than 0 or any `Transfer-Encoding`: GETs carry no body.
    BodyNotAllowed,
    /// A method other than `GET` and `HEAD`.
    MethodNotAllowed,
    /// A `Range` value that is not one `bytes=` range (from [`RangeSpec::parse`];
    /// [`parse_request`] ignores such a header instead).
    BadRange,
    /// A response's status line is not `HTTP/1.x SP 3DIGIT SP reason`
    /// ([`ResponseHead::parse`]).
    BadStatusLine,
    /// A response's `Content-Length` is not a number, or repeats disagree.
    BadContentLength,
    /// A response's `Content-Range` is not one valid byte range, or is repeated.
    BadContentRange,
}

impl HttpError {
    /// The status that answers it: 405 for [`HttpError::MethodNotAllowed`], else 400.
    pub fn status(self) -> Status {
        match self {
            HttpError::MethodNotAllowed => Status::MethodNotAllowed,
            _ => Status::BadRequest,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpError::Incomplete => "request head incomplete",
            HttpError::TooLong => "request head too long",
            HttpError::BadRequestLine => "malformed request line",
            HttpError::BadVersion => "unsupported HTTP version",
            HttpError::BadTarget => "bad request target",
            HttpError::BadHeader => "malformed header line",
            HttpError::BadHost => "missing, repeated or bad Host header",
            HttpError::BodyNotAllowed => "request with a body",
            HttpError::MethodNotAllowed => "method not allowed",
            HttpError::BadRange => "malformed Range header",
            HttpError::BadStatusLine => "malformed status line",
            HttpError::BadContentLength => "malformed or conflicting Content-Length",
            HttpError::BadContentRange => "malformed or repeated Content-Range",
        })
    }
}

impl core::error::Error for HttpError {}

/// The methods served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The object.
    Get,
    /// Its head only.
    Head,
}

/// One byte range of a `Range: bytes=…` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// `bytes=first-last` (inclusive; `first <= last`).
    FromTo {
        /// First byte.
        first: u64,
        /// Last byte, clamped to the object's.
        last: u64,
    },
    /// `bytes=first-`: to the end.
    From {
        /// First byte.
        first: u64,
    },
    /// `bytes=-len`: the last `len` bytes.
    Suffix {
        /// How many.
        len: u64,
    },
}

impl RangeSpec {
    /// Parses a `Range` value holding a single byte range (the unit in any case, optional
    /// whitespace around the range; numbers too long for `u64` saturate). A list of
    /// ranges, another unit, or `first > last` is [`HttpError::BadRange`].
    pub fn parse(value: &[u8]) -> Result<RangeSpec, HttpError> {
        let value = trim_ows(value);
        let (unit, set) = split_once(value, b'=').ok_or(HttpError::BadRange)?;
        if !unit.eq_ignore_ascii_case(b"bytes") || set.contains(&b',') {
            return Err(HttpError::BadRange);
        }
        let (first, last) = split_once(trim_ows(set), b'-').ok_or(HttpError::BadRange)?;
        match (decimal(first), decimal(last)) {
            (Some(first), Some(last)) if first <= last => Ok(RangeSpec::FromTo { first, last }),
            (Some(first), None) if last.is_empty() => Ok(RangeSpec::From { first }),
            (None, Some(len)) if first.is_empty() => Ok(RangeSpec::Suffix { len }),
            _ => Err(HttpError::BadRange),
        }
    }

    /// The span of an object of `len` bytes it selects, or `None` if it selects nothing
    /// (416). A nonzero suffix of an empty object selects the empty span `0..0`.
    pub fn resolve(self, len: u64) -> Option<Range<u64>> {
        match self {
            RangeSpec::FromTo { first, last } => {
                (first < len).then(|| first..last.saturating_add(1).min(len))
            }
            RangeSpec::From { first } => (first < len).then_some(first..len),
            RangeSpec::Suffix { len: n } => (n > 0).then(|| len - n.min(len)..len),
        }
    }
}

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// GET or HEAD.
    pub method: Method,
    /// The percent-decoded path (starts with `/`, no `..` segment, no NUL): borrowed when
    /// it had no escapes. The query is not part of it.
    pub path: Cow<'a, str>,
    /// The raw query after `?`, if any.
    pub query: Option<&'a str>,
    /// The authority of an absolute-form target, else the `Host` header.
    pub host: Option<&'a str>,
    /// One satisfiable-or-not byte range; `None` when there was no `Range` header, or it
    /// was unparsable, a list, repeated, or came with `If-Range` (the whole object is
    /// served, as RFC 9110 §14.2 allows).
    pub range: Option<RangeSpec>,
    /// The client asked to close after this response (`Connection: close`, or HTTP/1.0
    /// without `Connection: keep-alive`).
    pub close: bool,
    /// The `x` of `HTTP/1.x`.
    pub minor: u8,
}

/// Parses one request head from the front of `bytes`: the request and the bytes it took,
/// up to and including its CRLFCRLF (GET and HEAD have no body: the next request starts
/// there). Lines end in CRLF; header names are matched in any case; header values lose
/// surrounding spaces and tabs.
///
/// Returns [`HttpError::Incomplete`] while there is no CRLFCRLF in the first
/// [`MAX_HEAD`] bytes, [`HttpError::TooLong`] once there are that many without one; the
/// other errors say what is wrong (see [`HttpError::status`] for the answer). After an
/// error a connection should answer and close: the framing is lost.
pub fn parse_request(bytes: &[u8]) -> Result<(Request<'_>, usize), HttpError> {
    let window = bytes.get(..MAX_HEAD).unwrap_or(bytes);
    let Some(end) = window.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(if bytes.len() >= MAX_HEAD {
            HttpError::TooLong
        } else {
            HttpError::Incomplete
        });
    };
    // The head's lines, each ending in CR (a bare LF leaves a line without one).
    let head = window.get(..end + 1).unwrap_or_default();
    let mut lines = head.split(|&b| b == b'\n');
    let line = lines.next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").ok_or(HttpError::BadRequestLine)?;
    let (method, target, minor) = request_line(line)?;
    let (path, query, authority) = parse_target(target)?;

    let mut fields = Fields::default();
    for line in lines {
        fields.add(line.strip_suffix(b"\r").ok_or(HttpError::BadHeader)?)?;
    }
    if (minor >= 1 && fields.host.is_none()) || fields.hosts > 1 {
        return Err(HttpError::BadHost);
    }
    let range = match fields.range {
        Some(value) if fields.ranges == 1 && !fields.if_range => RangeSpec::parse(value).ok(),
        _ => None,
    };
    let request = Request {
        method,
        path,
        query,
        host: authority.or(fields.host),
        range,
        close: fields.close || (minor == 0 && !fields.keep_alive),
        minor,
    };
    Ok((request, end + 4))
}

/// `method SP target SP HTTP/1.x`: the method, the target, and `x`.
fn request_line(line: &[u8]) -> Result<(Method, &[u8], u8), HttpError> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::BadRequestLine);
    };
    if method.is_empty() || target.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(HttpError::BadRequestLine);
    }
    let minor = match version {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', d] if d.is_ascii_digit() => d - b'0',
        _ => return Err(HttpError::BadVersion),
    };
    let method = match method {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        _ => return Err(HttpError::MethodNotAllowed),
    };
    Ok((method, target, minor))
}

/// The decoded path, the raw query and an absolute-form target's authority.
type Target<'a> = (Cow<'a, str>, Option<&'a str>, Option<&'a str>);

fn parse_target(target: &[u8]) -> Result<Target<'_>, HttpError> {
    if !target.iter().all(|&b| b.is_ascii_graphic() && b != b'#') {
        return Err(HttpError::BadTarget);
    }
    let target = core::str::from_utf8(target).map_err(|_| HttpError::BadTarget)?;
    let (rest, authority) = if target.starts_with('/') {
        (target, None)
    } else {
        let scheme = target.get(..7).ok_or(HttpError::BadTarget)?;
        if !scheme.eq_ignore_ascii_case("http://") {
            return Err(HttpError::BadTarget);
        }
        let after = target.get(7..).unwrap_or_default();
        let split = after.find(['/', '?']).unwrap_or(after.len());
        let (authority, rest) = after.split_at(split);
        if authority.is_empty() || authority.contains('@') {
            return Err(HttpError::BadTarget);
        }
        (rest, Some(authority))
    };
    let (raw, query) = match rest.split_once('?') {
        Some((raw, query)) => (raw, Some(query)),
        None => (rest, None),
    };
    let path = if raw.is_empty() {
        Cow::Borrowed("/")
    } else {
        percent_decode(raw)?
    };
    if path.split('/').any(|segment| segment == "..") {
        return Err(HttpError::BadTarget);
    }
    Ok((path, query, authority))
}

/// `raw` with its `%XX` escapes decoded; a bad escape, `%00` or a result that is not
/// UTF-8 is [`HttpError::BadTarget`].
fn percent_decode(raw: &str) -> Result<Cow<'_, str>, HttpError> {
    if !raw.contains('%') {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.bytes();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        let (Some(hi), Some(lo)) = (bytes.next().and_then(hex), bytes.next().and_then(hex)) else {
            return Err(HttpError::BadTarget);
        };
        match (hi << 4) | lo {
            0 => return Err(HttpError::BadTarget),
            b => out.push(b),
        }
    }
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| HttpError::BadTarget)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// What the header lines said, as far as serving a GET cares.
#[derive(Default)]
struct Fields<'a> {
    host: Option<&'a str>,
    hosts: usize,
    range: Option<&'a [u8]>,
    ranges: usize,
    if_range: bool,
    close: bool,
    keep_alive: bool,
}

impl<'a> Fields<'a> {
    /// Takes one header line (without its CRLF).
    fn add(&mut self, line: &'a [u8]) -> Result<(), HttpError> {
        let (name, value) = split_once(line, b':').ok_or(HttpError::BadHeader)?;
        let value = trim_ows(value);
        let value_ok = value
            .iter()
            .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
        // A name starting with whitespace is line folding; inner whitespace is refused too.
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) || !value_ok {
            return Err(HttpError::BadHeader);
        }
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if is("host") {
            self.hosts += 1;
            if !value.iter().all(u8::is_ascii_graphic) {
                return Err(HttpError::BadHost);
            }
            self.host = core::str::from_utf8(value).ok();
        } else if is("range") {
            self.ranges += 1;
            self.range = Some(value);
        } else if is("if-range") {
            self.if_range = true;
        } else if is("connection") {
            for option in value.split(|&b| b == b',').map(trim_ows) {
                self.close |= option.eq_ignore_ascii_case(b"close");
                self.keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if is("transfer-encoding") || (is("content-length") && value != b"0") {
            return Err(HttpError::BodyNotAllowed);
        }
        Ok(())
    }
}

/// RFC 9110's `tchar`: the bytes of methods and header names.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn split_once(s: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let at = s.iter().position(|&b| b == sep)?;
    let (a, b) = s.split_at(at);
    Some((a, b.get(1..).unwrap_or_default()))
}

/// A nonempty run of ASCII digits, saturating at `u64::MAX`.
fn decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

// ---------------------------------------------------------------------------------------
// Answers

/// The statuses served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 200: the whole object.
    Ok,
    /// 206: one range of it.
    PartialContent,
    /// 400: the request did not parse.
    BadRequest,
    /// 404: no such object.
    NotFound,
    /// 405: neither GET nor HEAD.
    MethodNotAllowed,
    /// 416: the range selects nothing of the object.
    RangeNotSatisfiable,
}

impl Status {
    const ALL: [Status; 6] = [
        Status::Ok,
        Status::PartialContent,
        Status::BadRequest,
        Status::NotFound,
        Status::MethodNotAllowed,
        Status::RangeNotSatisfiable,
    ];

    /// The status code.
    pub fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::PartialContent => 206,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::RangeNotSatisfiable => 416,
        }
    }

    /// The status for `code`, if it is one of these.
    pub fn from_code(code: u16) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The reason phrase.
    pub fn reason(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::PartialContent => "Partial Content",
            Status::BadRequest => "Bad Request",
            Status::NotFound => "Not Found",
            Status::MethodNotAllowed => "Method Not Allowed",
            Status::RangeNotSatisfiable => "Range Not Satisfiable",
        }
    }

    /// Whether the body is (part of) the object: 200 and 206.
    pub fn serves_object(self) -> bool {
        matches!(self, Status::Ok | Status::PartialContent)
    }

    /// The fixed text body of an error status (`"404 Not Found\n"`); empty for 200, 206.
    pub fn error_body(self) -> &'static [u8] {
        match self {
            Status::Ok | Status::PartialContent => b"",
            Status::BadRequest => b"400 Bad Request\n",
            Status::NotFound => b"404 Not Found\n",
            Status::MethodNotAllowed => b"405 Method Not Allowed\n",
            Status::RangeNotSatisfiable => b"416 Range Not Satisfiable\n",
        }
    }
}

/// A response's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Bytes `start..end` of the object.
    Object {
        /// First byte.
        start: u64,
        /// One past the last.
        end: u64,
    },
    /// A fixed text (errors).
    Fixed(&'static [u8]),
}

/// What to answer a request with: everything the response depends on, small enough to
/// seal into a user continuation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The status.
    pub status: Status,
    /// HEAD: the head only (its `Content-Length` is still the body's).
    pub head_only: bool,
    /// The object's id (0 when there is none: 400, 404, 405).
    pub id: u64,
    /// The object's version (0 when there is none).
    pub version: u64,
    /// The object's full length, for `Content-Range` (0 when there is none).
    pub object_len: u64,
    /// The body.
    pub body: Body,
}

impl Answer {
    /// An error answer with its fixed body and no object.
    pub fn error(status: Status) -> Answer {
        Answer {
            status,
            head_only: false,
            id: 0,
            version: 0,
            object_len: 0,
            body: Body::Fixed(status.error_body()),
        }
    }

    /// The body's length: the `Content-Length`.
    pub fn body_len(&self) -> u64 {
        match self.body {
            Body::Object { start, end } => end.saturating_sub(start),
            Body::Fixed(b) => b.len() as u64,
        }
    }

    /// Bytes of output after a head of `head_len`: the head, then the body unless HEAD.
    pub fn output_len(&self, head_len: u64) -> u64 {
        if self.head_only {
            head_len
        } else {
            head_len.saturating_add(self.body_len())
        }
    }
}

/// What to serve for `req` out of `store`: 404 for an unknown path; 200 with the whole
/// object without a usable range; 206 with the span a range selects; 416 when it selects
/// nothing. HEAD gets the same answer, head only.
pub fn answer<S: Store + ?Sized>(store: &S, req: &Request<'_>) -> Answer {
    let head_only = req.method == Method::Head;
    let Some(info) = store.lookup(&req.path) else {
        return Answer {
            head_only,
            ..Answer::error(Status::NotFound)
        };
    };
    let (status, body) = match req.range.map(|r| r.resolve(info.len)) {
        None => (Status::Ok, 0..info.len),
        Some(None) => (Status::RangeNotSatisfiable, 0..0),
        Some(Some(span)) if span.is_empty() => (Status::Ok, 0..info.len),
        Some(Some(span)) => (Status::PartialContent, span),
    };
    let body = match status {
        Status::RangeNotSatisfiable => Body::Fixed(status.error_body()),
        _ => Body::Object {
            start: body.start,
            end: body.end,
        },
    };
    Answer {
        status,
        head_only,
        id: info.id,
        version: info.version,
        object_len: info.len,
        body,
    }
}

/// Appends the response head for `answer` to `out` and returns its length. `info` gives
/// the object's `Content-Type` (200, 206; without it `application/octet-stream`); error
/// bodies are `text/plain`. The head is a function of its arguments alone (no `Date`, no
/// `Connection`): every replica writes the same bytes.
pub fn write_head(answer: &Answer, info: Option<&ObjectInfo>, out: &mut Vec<u8>) -> usize {
    let before = out.len();
    let status = answer.status;
    let put = |out: &mut Vec<u8>, parts: &[&[u8]]| {
        parts.iter().for_each(|p| out.extend_from_slice(p));
    };
    put(out, &[b"HTTP/1.1 "]);
    put_decimal(out, u64::from(status.code()));
    put(
        out,
        &[
            b" ",
            status.reason().as_bytes(),
            b"\r\nServer: trickles-web\r\n",
        ],
    );
    let content_type = match (status.serves_object(), info) {
        (true, Some(info)) => info.content_type,
        (true, None) => "application/octet-stream",
        (false, _) => "text/plain; charset=utf-8",
    };
    put(out, &[b"Content-Type: ", content_type.as_bytes(), b"\r\n"]);
    put(out, &[b"Content-Length: "]);
    put_decimal(out, answer.body_len());
    put(out, &[b"\r\n"]);
    match (status, answer.body) {
        (Status::Ok, _) => put(out, &[b"Accept-Ranges: bytes\r\n"]),
        (Status::PartialContent, Body::Object { start, end }) => {
            put(out, &[b"Accept-Ranges: bytes\r\nContent-Range: bytes "]);
            put_decimal(out, start);
            put(out, &[b"-"]);
            put_decimal(out, end.saturating_sub(1));
            put(out, &[b"/"]);
            put_decimal(out, answer.object_len);
            put(out, &[b"\r\n"]);
        }
        (Status::RangeNotSatisfiable, _) => {
            put(out, &[b"Accept-Ranges: bytes\r\nContent-Range: bytes */"]);
            put_decimal(out, answer.object_len);
            put(out, &[b"\r\n"]);
        }
        (Status::MethodNotAllowed, _) => put(out, &[b"Allow: GET, HEAD\r\n"]),
        _ => {}
    }
    put(out, &[b"\r\n"]);
    out.len() - before
}

fn put_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(at..).unwrap_or_default());
}

// ---------------------------------------------------------------------------------------
// The Trickles application

/// Counters of an [`HttpApp`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpStats {
    /// OPEN events answered (each SYN, retransmitted ones included).
    pub opens: u64,
    /// REQUEST events (resumptions through the user continuation).
    pub requests: u64,
    /// OPENs answered 200 or 206.
    pub status_2xx: u64,
    /// OPENs answered 400, 404, 405 or 416.
    pub status_4xx: u64,
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
const SEAL_FORMAT: u8 = 1;
/// Flag bit: HEAD.
const FLAG_HEAD_ONLY: u8 = 1;

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
///  format (1) = 1 │ status code (2) │ flags (1): bit 0 HEAD │ id │ version │ object_len
///    │ body start │ body end │ head_len        (the last six LEB128, at most 10 bytes each)
/// ```
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
/// client.connect(0, b"GET /hi.txt HTTP/1.1\r\nHost: s\r\n\r\n");
/// let syn = client.poll_transmit().unwrap();
/// queue.push_segment(&mut server, 1_000, c, s, &syn).unwrap();
/// let mut segments = Vec::new();
/// app.handle(queue.pop().unwrap(), &server, &mut |seg: &[u8]| segments.push(seg.to_vec()));
/// for seg in &segments {
///     let _ = client.handle_segment(2_000, seg);
/// }
/// let mut got = [0u8; 512];
/// let n = client.read(&mut got);
/// assert!(got[..n].starts_with(b"HTTP/1.1 200 OK\r\n"));
/// assert!(got[..n].ends_with(b"Content-Length: 4\r\nAccept-Ranges: bytes\r\n\r\nhi!\n"));
/// assert_eq!(app.stats().status_2xx, 1);
/// ```
pub struct HttpApp<S: Store> {
    key: UcontKey,
    store: S,
    stats: HttpStats,
}

impl<S: Store> HttpApp<S> {
    /// The application serving `store`, sealing under `key` (shared by all replicas).
    pub fn new(key: &[u8; 16], store: S) -> HttpApp<S> {
        HttpApp {
            key: UcontKey::new(key),
            store,
            stats: HttpStats::default(),
        }
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
        let answer = match parse_request(msk.data()) {
            Ok((req, _)) => answer(&self.store, &req),
            Err(e) => Answer::error(e.status()),
        };
        if answer.status.serves_object() {
            self.stats.status_2xx += 1;
        } else {
            self.stats.status_4xx += 1;
        }
        let Some(info) = self.current(&answer) else {
            return self.refuse(msk, server, sink);
        };
        let mut head = Vec::new();
        let head_len = write_head(&answer, info.as_ref(), &mut head) as u64;
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
        self.send(msk, server, sink, &answer, &head);
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
        let mut head = Vec::new();
        if write_head(&answer, info.as_ref(), &mut head) as u64 != head_len {
            // Same version, another content type: not the head the client has part of.
            return self.refuse(msk, server, sink);
        }
        let sealed = msk.user_continuation().to_vec();
        msk.set_ucont_all(&sealed);
        self.send(msk, server, sink, &answer, &head);
    }

    /// The object `answer` serves, if it still has the answer's version and length:
    /// `Some(None)` for answers that read no object, `None` when it changed.
    fn current(&self, answer: &Answer) -> Option<Option<ObjectInfo>> {
        if !answer.status.serves_object() {
            return Some(None);
        }
        let info = self.store.info(answer.id)?;
        (info.version == answer.version && info.len == answer.object_len).then_some(Some(info))
    }

    fn refuse(&mut self, msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        self.stats.stale += 1;
        let _ = msk.refuse(server, sink);
    }

    /// Serves the ranges `msk` asks for of `head` ++ the answer's body.
    fn send(
        &mut self,
        msk: Minisocket,
        server: &Server,
        sink: &mut dyn FnMut(&[u8]),
        answer: &Answer,
        head: &[u8],
    ) {
        let head_len = head.len() as u64;
        let total = answer.output_len(head_len);
        let ranges: Vec<ByteRange> = msk.ranges().collect();
        // One read for the span the ranges cover when they lie close together (the usual
        // case: a window of consecutive ranges), else one per range. Either way every byte
        // is read before any response is sent.
        let spans: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| r.start.min(total)..r.start.saturating_add(u64::from(r.len)).min(total))
            .collect();
        let lo = spans.iter().map(|s| s.start).min().unwrap_or(0);
        let hi = spans.iter().map(|s| s.end).max().unwrap_or(0);
        let asked: u64 = spans.iter().map(|s| s.end - s.start).sum();
        let mut chunks: Vec<(ByteRange, Vec<u8>)> = Vec::with_capacity(ranges.len());
        let mut all = Vec::new();
        if hi > lo && hi - lo <= asked.saturating_mul(2) {
            if !self.output(answer, head, lo..hi, &mut all) {
                return self.refuse(msk, server, sink);
            }
            for (range, span) in ranges.iter().zip(&spans) {
                let (a, b) = ((span.start - lo) as usize, (span.end - lo) as usize);
                chunks.push((*range, all.get(a..b).unwrap_or_default().to_vec()));
            }
        } else {
            for (range, span) in ranges.iter().zip(&spans) {
                let mut chunk = Vec::new();
                if !self.output(answer, head, span.clone(), &mut chunk) {
                    return self.refuse(msk, server, sink);
                }
                chunks.push((*range, chunk));
            }
        }
        let stats = &mut self.stats;
        let mut chunks = chunks.into_iter();
        let _ = msk.send_with(
            server,
            &mut |range, allowed, out| {
                // Called once per range, in the order of `msk.ranges()`.
                let chunk = chunks
                    .next()
                    .filter(|(r, _)| *r == range)
                    .map(|(_, c)| c)
                    .unwrap_or_default();
                let sent = chunk.get(..allowed).unwrap_or(chunk.as_slice());
                out.extend_from_slice(sent);
                let n = sent.len() as u64;
                let in_head = head_len.saturating_sub(range.start).min(n);
                stats.bytes_head += in_head;
                stats.bytes_body += n - in_head;
                range.start.saturating_add(n) >= total
            },
            sink,
        );
    }

    /// Appends bytes `span` of the output (`head` ++ body) to `out`; `false` if the store
    /// could not supply them all.
    fn output(&self, answer: &Answer, head: &[u8], span: Range<u64>, out: &mut Vec<u8>) -> bool {
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
                self.store
                    .read(answer.id, start.saturating_add(offset), len, out)
                    && out.len() - before == len
            }
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
    out.push(if answer.head_only { FLAG_HEAD_ONLY } else { 0 });
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
    let head_only = match r.u8().ok()? {
        0 => false,
        FLAG_HEAD_ONLY => true,
        _ => return None,
    };
    let mut next = || get_varint(&mut r);
    let (id, version, object_len) = (next()?, next()?, next()?);
    let (start, end, head_len) = (next()?, next()?, next()?);
    if r.remaining() != 0 {
        return None;
    }
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

    fn parse(bytes: &[u8]) -> Result<Request<'_>, HttpError> {
        parse_request(bytes).map(|(r, _)| r)
    }

    fn store() -> MemStore {
        let mut s = MemStore::new();
        s.insert("/index.html", b"<h1>hi</h1>\n".to_vec());
        s.insert("/a b.txt", b"0123456789".to_vec());
        s.insert("/empty", Vec::new());
        s
    }

    #[test]
    fn origin_form_with_query_and_headers() {
        let bytes = b"GET /index.html?x=1&y HTTP/1.1\r\nHOST:  example.org \r\n\
                      User-Agent: t\t\r\nAccept: */*\r\n\r\nGET /next";
        let (req, used) = parse_request(bytes).unwrap();
        assert_eq!(used, bytes.len() - 9);
        assert_eq!(
            req,
            Request {
                method: Method::Get,
                path: Cow::Borrowed("/index.html"),
                query: Some("x=1&y"),
                host: Some("example.org"),
                range: None,
                close: false,
                minor: 1,
            }
        );
    }

    #[test]
    fn absolute_form_takes_the_authority_as_host() {
        let r = parse(b"GET http://h.example:8080/a%20b.txt?q HTTP/1.1\r\nHost: proxy\r\n\r\n")
            .unwrap();
        assert_eq!(
            (&*r.path, r.query, r.host),
            ("/a b.txt", Some("q"), Some("h.example:8080"))
        );
        let r = parse(b"HEAD HTTP://h HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!((r.method, &*r.path, r.host), (Method::Head, "/", Some("h")));
        assert_eq!(
            &*parse(b"GET http://h?x HTTP/1.0\r\n\r\n").unwrap().path,
            "/"
        );
        for bad in [
            &b"GET http:// HTTP/1.0\r\n\r\n"[..],
            b"GET http://u@h/ HTTP/1.0\r\n\r\n",
            b"GET https://h/ HTTP/1.0\r\n\r\n",
            b"GET * HTTP/1.0\r\n\r\n",
            b"GET h/x HTTP/1.0\r\n\r\n",
        ] {
            assert_eq!(parse(bad), Err(HttpError::BadTarget), "{bad:?}");
        }
    }

    #[test]
    fn percent_decoding_and_dot_dot() {
        let r = parse(b"GET /%41%62/%e2%82%ac HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(r.path, Cow::<str>::Owned("/Ab/\u{20ac}".into()));
        assert!(matches!(
            parse(b"GET /plain HTTP/1.0\r\n\r\n").unwrap().path,
            Cow::Borrowed(_)
        ));
        // `..` as a name part is fine; as a segment it is refused, however spelled.
        assert_eq!(
            &*parse(b"GET /a..b/..c HTTP/1.0\r\n\r\n").unwrap().path,
            "/a..b/..c"
        );
        for bad in [
            &b"GET /.. HTTP/1.0\r\n\r\n"[..],
            b"GET /a/../b HTTP/1.0\r\n\r\n",
            b"GET /a/%2e%2E/b HTTP/1.0\r\n\r\n",
            b"GET /a%2F..%2Fb HTTP/1.0\r\n\r\n",
            b"GET http://h/../x HTTP/1.0\r\n\r\n",
            b"GET /%00 HTTP/1.0\r\n\r\n",
            b"GET /%4 HTTP/1.0\r\n\r\n",
            b"GET /%zz HTTP/1.0\r\n\r\n",
            b"GET /%ff HTTP/1.0\r\n\r\n",
            b"GET /a#frag HTTP/1.0\r\n\r\n",
            b"GET /\xc3\xa9 HTTP/1.0\r\n\r\n",
        ] {
            assert_eq!(parse(bad), Err(HttpError::BadTarget), "{bad:?}");
        }
    }

    #[test]
    fn range_forms() {
        let range = |v: &[u8]| RangeSpec::parse(v);
        assert_eq!(
            range(b"bytes=2-5"),
            Ok(RangeSpec::FromTo { first: 2, last: 5 })
        );
        assert_eq!(range(b" Bytes= 7- "), Ok(RangeSpec::From { first: 7 }));
        assert_eq!(range(b"bytes=-3"), Ok(RangeSpec::Suffix { len: 3 }));
        assert_eq!(
            range(b"bytes=99999999999999999999999-"),
            Ok(RangeSpec::From { first: u64::MAX })
        );
        for bad in [
            &b"bytes=5-2"[..],
            b"bytes=0-1,4-5",
            b"bytes=-",
            b"bytes=a-b",
            b"bytes 0-1",
            b"items=0-1",
            b"bytes=1-2-3",
            b"",
        ] {
            assert_eq!(range(bad), Err(HttpError::BadRange), "{bad:?}");
        }
        assert_eq!(
            RangeSpec::FromTo { first: 2, last: 50 }.resolve(10),
            Some(2..10)
        );
        assert_eq!(
            RangeSpec::FromTo {
                first: 10,
                last: 50
            }
            .resolve(10),
            None
        );
        assert_eq!(RangeSpec::From { first: 9 }.resolve(10), Some(9..10));
        assert_eq!(RangeSpec::Suffix { len: 30 }.resolve(10), Some(0..10));
        assert_eq!(RangeSpec::Suffix { len: 3 }.resolve(10), Some(7..10));
        assert_eq!(RangeSpec::Suffix { len: 0 }.resolve(10), None);
        assert_eq!(RangeSpec::Suffix { len: 1 }.resolve(0), Some(0..0));

        // In a request: a usable single range is kept; anything else is ignored.
        let with = |h: &str| {
            let bytes = ["GET / HTTP/1.1\r\nHost: h\r\n", h, "\r\n"].concat();
            parse(bytes.as_bytes()).unwrap().range
        };
        assert_eq!(
            with("range: bytes=1-2\r\n"),
            Some(RangeSpec::FromTo { first: 1, last: 2 })
        );
        assert_eq!(with("Range: bytes=1-2,5-6\r\n"), None);
        assert_eq!(with("Range: bytes=x\r\n"), None);
        assert_eq!(with("Range: bytes=1-2\r\nRange: bytes=1-2\r\n"), None);
        assert_eq!(with("Range: bytes=1-2\r\nIf-Range: \"e\"\r\n"), None);
    }

    #[test]
    fn connection_and_version() {
        let close = |b: &[u8]| parse(b).unwrap().close;
        assert!(!close(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
        assert!(close(
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, Close\r\n\r\n"
        ));
        assert!(close(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(!close(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        assert_eq!(
            parse(b"GET / HTTP/1.9\r\nHost: h\r\n\r\n").unwrap().minor,
            9
        );
    }

    #[test]
    fn each_error() {
        let cases: [(&[u8], HttpError); 22] = [
            (b"GET / HTTP/1.1\r\nHost: h\r\n", HttpError::Incomplete),
            (b"", HttpError::Incomplete),
            (b"GET / HTTP/1.1\r\n\r\n", HttpError::BadHost),
            (
                b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
                HttpError::BadHost,
            ),
            (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", HttpError::BadHost),
            (b"GET /  HTTP/1.1\r\n\r\n", HttpError::BadRequestLine),
            (b"GET /\r\n\r\n", HttpError::BadRequestLine),
            (b" GET / HTTP/1.1\r\n\r\n", HttpError::BadRequestLine),
            (b"GET / HTTP/1.1\n\r\n\r\n", HttpError::BadRequestLine),
            (b"G(T / HTTP/1.1\r\n\r\n", HttpError::BadRequestLine),
            (b"GET / HTTP/2.0\r\n\r\n", HttpError::BadVersion),
            (b"GET / http/1.1\r\n\r\n", HttpError::BadVersion),
            (b"GET / HTTP/1.10\r\n\r\n", HttpError::BadVersion),
            (
                b"POST / HTTP/1.1\r\nHost: h\r\n\r\n",
                HttpError::MethodNotAllowed,
            ),
            (
                b"get / HTTP/1.1\r\nHost: h\r\n\r\n",
                HttpError::MethodNotAllowed,
            ),
            (b"GET x HTTP/1.1\r\n\r\n", HttpError::BadTarget),
            (b"GET / HTTP/1.0\r\nNo colon\r\n\r\n", HttpError::BadHeader),
            (b"GET / HTTP/1.0\r\nA : b\r\n\r\n", HttpError::BadHeader),
            (
                b"GET / HTTP/1.0\r\nA: b\r\n folded\r\n\r\n",
                HttpError::BadHeader,
            ),
            (b"GET / HTTP/1.0\r\nA: b\x00c\r\n\r\n", HttpError::BadHeader),
            (
                b"GET / HTTP/1.0\r\nContent-Length: 5\r\n\r\n",
                HttpError::BodyNotAllowed,
            ),
            (
                b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                HttpError::BodyNotAllowed,
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                parse(bytes),
                Err(want),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        assert!(parse(b"GET / HTTP/1.0\r\nContent-Length: 0\r\n\r\n").is_ok());
        // A head of exactly MAX_HEAD bytes is taken; one byte more is too long.
        let fits = |n: usize| {
            let pad = "x".repeat(n - 23);
            ["GET / HTTP/1.0\r\nX: ", &pad, "\r\n\r\n"]
                .concat()
                .into_bytes()
        };
        let at_limit = fits(MAX_HEAD);
        assert_eq!(parse_request(&at_limit).map(|(_, n)| n), Ok(MAX_HEAD));
        assert_eq!(parse(&fits(MAX_HEAD + 1)), Err(HttpError::TooLong));
        assert_eq!(parse(&[b'x'; MAX_HEAD - 1]), Err(HttpError::Incomplete));
        assert_eq!(parse(&[b'x'; MAX_HEAD]), Err(HttpError::TooLong));
        assert_eq!(
            HttpError::MethodNotAllowed.status(),
            Status::MethodNotAllowed
        );
        assert_eq!(HttpError::Incomplete.status(), Status::BadRequest);
    }

    /// The head the store's answer to `request` gets, as a string.
    fn head_for(store: &MemStore, request: &[u8]) -> (Answer, String) {
        let a = match parse(request) {
            Ok(req) => answer(store, &req),
            Err(e) => Answer::error(e.status()),
        };
        let mut out = Vec::new();
        let n = write_head(&a, store.info(a.id).as_ref(), &mut out);
        assert_eq!(n, out.len());
        (a, String::from_utf8(out).unwrap())
    }

    #[test]
    fn heads_are_byte_exact() {
        let s = store();
        let (a, head) = head_for(&s, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(a.body, Body::Object { start: 0, end: 12 });
        assert_eq!(
            head,
            "HTTP/1.1 200 OK\r\nServer: trickles-web\r\n\
             Content-Type: text/html; charset=utf-8\r\nContent-Length: 12\r\n\
             Accept-Ranges: bytes\r\n\r\n"
        );
        let (a, head) = head_for(
            &s,
            b"GET /a%20b.txt HTTP/1.1\r\nHost: h\r\nRange: bytes=-4\r\n\r\n",
        );
        assert_eq!(a.body, Body::Object { start: 6, end: 10 });
        assert_eq!(
            head,
            "HTTP/1.1 206 Partial Content\r\nServer: trickles-web\r\n\
             Content-Type: text/plain; charset=utf-8\r\nContent-Length: 4\r\n\
             Accept-Ranges: bytes\r\nContent-Range: bytes 6-9/10\r\n\r\n"
        );
        let (a, head) = head_for(&s, b"GET /nope HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(
            (a.status, a.body),
            (Status::NotFound, Body::Fixed(b"404 Not Found\n"))
        );
        assert_eq!(
            head,
            "HTTP/1.1 404 Not Found\r\nServer: trickles-web\r\n\
             Content-Type: text/plain; charset=utf-8\r\nContent-Length: 14\r\n\r\n"
        );
        let (a, head) = head_for(
            &s,
            b"GET /a%20b.txt HTTP/1.1\r\nHost: h\r\nRange: bytes=10-\r\n\r\n",
        );
        assert_eq!(a.status, Status::RangeNotSatisfiable);
        assert_eq!(
            head,
            "HTTP/1.1 416 Range Not Satisfiable\r\nServer: trickles-web\r\n\
             Content-Type: text/plain; charset=utf-8\r\nContent-Length: 26\r\n\
             Accept-Ranges: bytes\r\nContent-Range: bytes */10\r\n\r\n"
        );
        let (_, head) = head_for(&s, b"DELETE / HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(
            head,
            "HTTP/1.1 405 Method Not Allowed\r\nServer: trickles-web\r\n\
             Content-Type: text/plain; charset=utf-8\r\nContent-Length: 23\r\n\
             Allow: GET, HEAD\r\n\r\n"
        );
        let (_, head) = head_for(&s, b"GET / HTTP/1.1\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
    }

    #[test]
    fn answers() {
        let s = store();
        let get = |r: &[u8]| answer(&s, &parse(r).unwrap());
        let a = get(b"HEAD /index.html HTTP/1.0\r\n\r\n");
        assert!(a.head_only);
        assert_eq!((a.body_len(), a.output_len(100)), (12, 100));
        assert!(get(b"HEAD /x HTTP/1.0\r\n\r\n").head_only);
        // An empty object: a suffix range cannot be expressed, the (empty) whole is sent.
        let a = get(b"GET /empty HTTP/1.0\r\nRange: bytes=-5\r\n\r\n");
        assert_eq!(
            (a.status, a.body),
            (Status::Ok, Body::Object { start: 0, end: 0 })
        );
        let a = get(b"GET /empty HTTP/1.0\r\nRange: bytes=0-\r\n\r\n");
        assert_eq!(a.status, Status::RangeNotSatisfiable);
        let a = get(b"GET /index.html HTTP/1.0\r\nRange: bytes=0-0\r\n\r\n");
        assert_eq!(
            (a.status, a.body),
            (Status::PartialContent, Body::Object { start: 0, end: 1 })
        );
    }

    #[test]
    fn mem_store_and_content_types() {
        let mut s = store();
        let v = s.lookup("/index.html").unwrap();
        assert_eq!(s.lookup("/"), Some(v));
        assert_eq!(s.lookup("/nope/"), None);
        let mut out = b"x".to_vec();
        assert!(s.read(v.id, 11, 100, &mut out));
        assert!(s.read(v.id, u64::MAX, 100, &mut out));
        assert_eq!(out, b"x\n");
        assert!(!s.read(99, 0, 1, &mut out));
        assert_eq!(s.insert("/index.html", b"new".to_vec()), v.id);
        assert_eq!(
            s.info(v.id).map(|i| (i.version, i.len)),
            Some((v.version + 1, 3))
        );
        for (path, ty) in [
            ("/a.HTML", "text/html; charset=utf-8"),
            ("/a.txt", "text/plain; charset=utf-8"),
            ("/s.css", "text/css"),
            ("/x.js", "text/javascript"),
            ("/d.json", "application/json"),
            ("/i.png", "image/png"),
            ("/i.JPG", "image/jpeg"),
            ("/i.svg", "image/svg+xml"),
            ("/dir.png/file", "application/octet-stream"),
            ("/noext", "application/octet-stream"),
            ("/a.tar.gz", "application/octet-stream"),
        ] {
            assert_eq!(content_type_for(path), ty, "{path}");
        }
    }

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
            },
            Answer::error(Status::NotFound),
        ];
        for a in answers {
            let mut app = Vec::new();
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
            assert_eq!(unseal(&key, &conn, &sealed), Some((a, 150)));
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
        let mut d = Vec::new();
        put_decimal(&mut d, u64::MAX);
        put_decimal(&mut d, 0);
        assert_eq!(d, b"184467440737095516150");
    }
}
