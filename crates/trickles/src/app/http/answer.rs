//! Answers: what to serve for a request ([`answer`](answer())) and its response head
//! ([`write_head`]).

use alloc::vec::Vec;

use super::request::{Method, Request};
use super::status::Status;
use super::{ObjectInfo, Store};

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
