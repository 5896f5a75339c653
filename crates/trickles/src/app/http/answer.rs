//! Answers: what to serve for a request ([`answer`](answer())) and its response head
//! ([`write_head`]).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::conditional::{ETag, if_range_holds, not_modified};
use super::date::HttpDate;
use super::request::{Method, Request};
use super::status::Status;
use super::{ObjectInfo, Store};

/// Longest `Location` a redirect carries (it rides in the sealed answer of a Trickles
/// connection); a directory whose redirect would be longer is answered 404.
pub const MAX_LOCATION: usize = 512;

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
    /// A fixed text (errors, redirects; empty for 304).
    Fixed(&'static [u8]),
}

/// What to answer a request with: everything the response depends on, small enough to
/// seal into a user continuation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The status.
    pub status: Status,
    /// HEAD: the head only (its `Content-Length` is still the body's).
    pub head_only: bool,
    /// The object's id (0 when there is none: 301, 400, 404, 405).
    pub id: u64,
    /// The object's version (0 when there is none).
    pub version: u64,
    /// The object's full length, for `Content-Range` (0 when there is none).
    pub object_len: u64,
    /// The body.
    pub body: Body,
    /// The `Date` (seconds since the Unix epoch), when the server has a clock
    /// ([`Answer::at`]); without one there is no `Date` (RFC 9110 §6.6.1).
    pub date: Option<u64>,
    /// A 301's `Location`: the directory's path with its `/` (percent-encoded) and the
    /// query, if any.
    pub location: Option<String>,
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
            date: None,
            location: None,
        }
    }

    /// The same answer, dated `date` (seconds since the Unix epoch: the time it is
    /// answered; `None`: no clock, no `Date`).
    pub fn at(self, date: Option<u64>) -> Answer {
        Answer { date, ..self }
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

    /// Body bytes sent (what an access log records): none for HEAD.
    pub fn sent_body_len(&self) -> u64 {
        if self.head_only { 0 } else { self.body_len() }
    }
}

/// What to serve for `req` out of `store` (undated: see [`Answer::at`]):
///
/// * the object at the path; for a path ending in `/`, its `index.html`; a directory
///   named without its `/` is redirected there (301, `Location` relative, the query
///   kept); anything else is 404 (there are no directory listings);
/// * 304 when the preconditions say the client's copy is current
///   ([`not_modified`]: `If-None-Match`, else `If-Modified-Since`);
/// * else 200 with the whole object when there is no range (or `If-Range` does not
///   hold); 206 with the span a range selects; 416 when it selects nothing.
///
/// HEAD gets the same answer, head only.
pub fn answer<S: Store + ?Sized>(store: &S, req: &Request<'_>) -> Answer {
    let head_only = req.method == Method::Head;
    let path: &str = &req.path;
    let found = store.lookup(path).or_else(|| {
        path.ends_with('/')
            .then(|| store.lookup(&[path, "index.html"].concat()))
            .flatten()
    });
    let Some(info) = found else {
        let location = (!path.ends_with('/') && store.is_directory(path))
            .then(|| location(path, req.query))
            .filter(|l| l.len() <= MAX_LOCATION);
        let status = match location {
            Some(_) => Status::MovedPermanently,
            None => Status::NotFound,
        };
        return Answer {
            head_only,
            location,
            ..Answer::error(status)
        };
    };
    let object = |status, body| Answer {
        status,
        head_only,
        id: info.id,
        version: info.version,
        object_len: info.len,
        body,
        date: None,
        location: None,
    };
    if not_modified(req, &info) {
        return object(Status::NotModified, Body::Fixed(b""));
    }
    let range = req
        .range
        .filter(|_| req.if_range.is_none_or(|v| if_range_holds(v, &info)));
    let (status, body) = match range.map(|r| r.resolve(info.len)) {
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
    object(status, body)
}

/// `path` + `/`, percent-encoded where a path segment may not hold the byte as it is,
/// then `?query`.
fn location(path: &str, query: Option<&str>) -> String {
    let mut out = String::with_capacity(path.len() + 1);
    for b in path.bytes() {
        let plain = b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b);
        if plain {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out.push('/');
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// Appends the response head for `answer` to `out` and returns its length. `info` is the
/// object it describes (200, 206, 304): its `Content-Type` (without it
/// `application/octet-stream`), `Last-Modified` and `ETag`. Bodies of other statuses are
/// `text/plain`; 304 has neither `Content-Type` nor `Content-Length`. The head is a
/// function of its arguments alone (the `Date` is the answer's, there is no
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
    if let Some(date) = answer.date {
        put(out, &[b"Date: ", &HttpDate(date).to_bytes(), b"\r\n"]);
    }
    let info = info.filter(|_| status.describes_object());
    if status != Status::NotModified {
        let content_type = match (status.serves_object(), info) {
            (true, Some(info)) => info.content_type,
            (true, None) => "application/octet-stream",
            (false, _) => "text/plain; charset=utf-8",
        };
        put(out, &[b"Content-Type: ", content_type.as_bytes(), b"\r\n"]);
        put(out, &[b"Content-Length: "]);
        put_decimal(out, answer.body_len());
        put(out, &[b"\r\n"]);
    }
    if let Some(info) = info {
        if let Some(m) = info.modified {
            put(out, &[b"Last-Modified: ", &HttpDate(m).to_bytes(), b"\r\n"]);
        }
        put(out, &[b"ETag: ", &ETag::of(info).to_bytes(), b"\r\n"]);
    }
    if let (Status::MovedPermanently, Some(l)) = (status, &answer.location) {
        put(out, &[b"Location: ", l.as_bytes(), b"\r\n"]);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::http::tests::store;
    use crate::app::http::{MemStore, parse_request};
    use alloc::string::String;

    /// The head the store's answer to `request` gets, as a string.
    fn head_for(store: &MemStore, request: &[u8]) -> (Answer, String) {
        let a = match parse_request(request) {
            Ok((req, _)) => answer(store, &req),
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
             ETag: \"0000000000000001\"\r\nAccept-Ranges: bytes\r\n\r\n"
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
             ETag: \"0000000000000001\"\r\nAccept-Ranges: bytes\r\n\
             Content-Range: bytes 6-9/10\r\n\r\n"
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

    /// A dated store and answers: `Date`, `Last-Modified`, `ETag`, 304 and 301 heads.
    #[test]
    fn dated_conditional_and_redirect_heads() {
        let mut s = store();
        s.insert("/sub/index.html", b"<p>sub</p>".to_vec());
        s.insert("/sub/deeper/x", b"x".to_vec());
        assert!(s.set_modified("/sub/index.html", 784_111_777));
        let head = |request: &[u8]| {
            let (req, _) = parse_request(request).unwrap();
            let a = answer(&s, &req).at(Some(971_186_136));
            let mut out = Vec::new();
            write_head(&a, s.info(a.id).as_ref(), &mut out);
            (a, String::from_utf8(out).unwrap())
        };
        let (a, h) = head(b"GET /sub/ HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!((a.status, a.body_len()), (Status::Ok, 10));
        let etag = "\"0000000000000002\"";
        assert_eq!(
            h,
            [
                "HTTP/1.1 200 OK\r\nServer: trickles-web\r\n\
                 Date: Tue, 10 Oct 2000 13:55:36 GMT\r\n\
                 Content-Type: text/html; charset=utf-8\r\nContent-Length: 10\r\n\
                 Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: ",
                etag,
                "\r\nAccept-Ranges: bytes\r\n\r\n"
            ]
            .concat()
        );
        let not_modified = [
            "HTTP/1.1 304 Not Modified\r\nServer: trickles-web\r\n\
             Date: Tue, 10 Oct 2000 13:55:36 GMT\r\n\
             Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: ",
            etag,
            "\r\n\r\n",
        ]
        .concat();
        for conditional in [
            ["If-None-Match: ", etag].concat(),
            "If-None-Match: \"x\", W/\"0000000000000002\"".into(),
            "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT".into(),
            "If-Modified-Since: Sunday, 06-Nov-94 08:49:38 GMT".into(),
        ] {
            for method in ["GET", "HEAD"] {
                let request = [
                    method,
                    " /sub/index.html HTTP/1.1\r\nHost: h\r\n",
                    &conditional,
                    "\r\n\r\n",
                ]
                .concat();
                let (a, h) = head(request.as_bytes());
                assert_eq!(h, not_modified, "{request}");
                assert_eq!((a.body_len(), a.sent_body_len()), (0, 0));
            }
        }
        // Not current: the whole answer, with a range if If-Range holds.
        for (conditional, status) in [
            ("If-None-Match: \"0000000000000001\"", Status::Ok),
            (
                "If-Modified-Since: Sun, 06 Nov 1994 08:49:36 GMT",
                Status::Ok,
            ),
            (
                "Range: bytes=0-0\r\nIf-Range: \"0000000000000002\"",
                Status::PartialContent,
            ),
            (
                "Range: bytes=0-0\r\nIf-Range: W/\"0000000000000002\"",
                Status::Ok,
            ),
            (
                "Range: bytes=0-0\r\nIf-Range: \"0000000000000001\"",
                Status::Ok,
            ),
            (
                "Range: bytes=0-0\r\nIf-Range: Sun, 06 Nov 1994 08:49:37 GMT",
                Status::PartialContent,
            ),
            (
                "Range: bytes=0-0\r\nIf-Range: Sun, 06 Nov 1994 08:49:36 GMT",
                Status::Ok,
            ),
            // Unchanged and a range: 304 first.
            ("Range: bytes=0-0\r\nIf-None-Match: *", Status::NotModified),
        ] {
            let request = [
                "GET /sub/index.html HTTP/1.1\r\nHost: h\r\n",
                conditional,
                "\r\n\r\n",
            ]
            .concat();
            assert_eq!(head(request.as_bytes()).0.status, status, "{conditional}");
        }
        // A directory without its slash: 301 there, query kept; no listing anywhere.
        let (a, h) = head(b"GET /sub?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(a.location.as_deref(), Some("/sub/?x=1"));
        assert_eq!(
            h,
            "HTTP/1.1 301 Moved Permanently\r\nServer: trickles-web\r\n\
             Date: Tue, 10 Oct 2000 13:55:36 GMT\r\n\
             Content-Type: text/plain; charset=utf-8\r\nContent-Length: 22\r\n\
             Location: /sub/?x=1\r\n\r\n"
        );
        assert_eq!(
            head(b"GET /sub/deeper/ HTTP/1.1\r\nHost: h\r\n\r\n")
                .0
                .status,
            Status::NotFound
        );
        assert_eq!(
            head(b"GET /sub/deeper HTTP/1.1\r\nHost: h\r\n\r\n")
                .0
                .location
                .as_deref(),
            Some("/sub/deeper/")
        );
        assert_eq!(
            head(b"GET /nope/ HTTP/1.1\r\nHost: h\r\n\r\n").0.status,
            Status::NotFound
        );
        // Bytes a path may not carry plainly are escaped in the Location.
        s.insert("/a b%/\u{e9}", Vec::new());
        let (req, _) = parse_request(b"HEAD /a%20b%25 HTTP/1.0\r\n\r\n").unwrap();
        let a = answer(&s, &req);
        assert_eq!((a.status, a.head_only), (Status::MovedPermanently, true));
        assert_eq!(a.location.as_deref(), Some("/a%20b%25/"));
        // Too long a Location: 404.
        let long = ["/", &"d".repeat(MAX_LOCATION), "/f"].concat();
        s.insert(&long, Vec::new());
        let request = ["GET ", &long[..long.len() - 2], " HTTP/1.0\r\n\r\n"].concat();
        let (req, _) = parse_request(request.as_bytes()).unwrap();
        assert_eq!(answer(&s, &req).status, Status::NotFound);
    }

    #[test]
    fn answers() {
        let s = store();
        let get = |r: &[u8]| answer(&s, &parse_request(r).unwrap().0);
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
    fn decimals() {
        let mut d = Vec::new();
        put_decimal(&mut d, u64::MAX);
        put_decimal(&mut d, 0);
        assert_eq!(d, b"184467440737095516150");
    }
}
