//! Request heads: [`parse_request`] makes one into a [`Request`].

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

use super::date::HttpDate;
use super::fields::{Fields, RangeSpec, head, is_tchar};
use super::status::HttpError;

/// The methods served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The object.
    Get,
    /// Its head only.
    Head,
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
    /// was unparsable, a list, or repeated (the whole object is served, as RFC 9110
    /// §14.2 allows).
    pub range: Option<RangeSpec>,
    /// The `If-Range` value: the range applies only if it names the object's current
    /// `ETag` or its exact `Last-Modified` ([`answer`](super::answer()) decides).
    /// Repeated: `Some("")`, which never holds.
    pub if_range: Option<&'a [u8]>,
    /// The `If-None-Match` values, one per header line (each a list of entity tags, or
    /// `*`); empty when there was none.
    pub if_none_match: Vec<&'a [u8]>,
    /// The `If-Modified-Since` date (seconds since the Unix epoch); `None` when absent,
    /// not a valid HTTP-date, or repeated (RFC 9110 §13.1.3: then it is ignored).
    pub if_modified_since: Option<u64>,
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
/// [`MAX_HEAD`](super::MAX_HEAD) bytes, [`HttpError::TooLong`] once there are that many without one; the
/// other errors say what is wrong (see [`HttpError::status`] for the answer). After an
/// error a connection should answer and close: the framing is lost.
pub fn parse_request(bytes: &[u8]) -> Result<(Request<'_>, usize), HttpError> {
    let (head, len) = head(bytes)?;
    // The head's lines, each ending in CR (a bare LF leaves a line without one).
    let mut lines = head.split(|&b| b == b'\n');
    let line = lines.next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").ok_or(HttpError::BadRequestLine)?;
    let (method, target, minor) = request_line(line)?;
    let (path, query, authority) = parse_target(target)?;

    let mut fields = Fields::default();
    for line in lines {
        fields.add(line)?;
    }
    if (minor >= 1 && fields.host.is_none()) || fields.hosts > 1 {
        return Err(HttpError::BadHost);
    }
    let range = match fields.range {
        Some(value) if fields.ranges == 1 => RangeSpec::parse(value).ok(),
        _ => None,
    };
    let if_modified_since = match fields.if_modified_since {
        Some(value) if fields.if_modified_sinces == 1 => HttpDate::parse(value),
        _ => None,
    };
    let request = Request {
        method,
        path,
        query,
        host: authority.or(fields.host),
        range,
        if_range: fields.if_range,
        if_none_match: fields.if_none_match,
        if_modified_since,
        close: fields.close || (minor == 0 && !fields.keep_alive),
        minor,
    };
    Ok((request, len))
}

/// A GET request head for `path` on `host`: with `range`, for bytes `first..=last` only;
/// with `close`, asking the server to close after answering. What the clients send, and
/// what [`parse_request`] reads back.
pub fn get_request(host: &str, path: &str, range: Option<(u64, u64)>, close: bool) -> Vec<u8> {
    let mut head = alloc::format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n");
    if let Some((first, last)) = range {
        head.push_str(&alloc::format!("Range: bytes={first}-{last}\r\n"));
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::http::{MAX_HEAD, Status};

    #[test]
    fn get_requests_read_back() {
        let bytes = get_request("h:80", "/a/b", Some((5, 9)), true);
        assert_eq!(
            bytes,
            b"GET /a/b HTTP/1.1\r\nHost: h:80\r\nRange: bytes=5-9\r\nConnection: close\r\n\r\n"
        );
        let (req, used) = parse_request(&bytes).unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!((req.host, req.close), (Some("h:80"), true));
        assert_eq!(req.range, Some(RangeSpec::FromTo { first: 5, last: 9 }));
        let plain = get_request("h", "/", None, false);
        assert_eq!(plain, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    fn parse(bytes: &[u8]) -> Result<Request<'_>, HttpError> {
        parse_request(bytes).map(|(r, _)| r)
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
                if_range: None,
                if_none_match: Vec::new(),
                if_modified_since: None,
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
}
