//! Response heads, for clients: [`ResponseHead::parse`] reads the status line and the
//! few header fields a downloader or a proxy needs to frame and check a body
//! (`Content-Length`, `Content-Range`, `Connection`), so the daemons never look inside
//! HTTP themselves.
//!
//! ```
//! use trickles::app::http::{ContentRange, ResponseHead};
//!
//! let bytes = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 6\r\n\
//!               Content-Range: bytes 7-12/13\r\n\r\nworld\n";
//! let (head, len) = ResponseHead::parse(bytes).unwrap();
//! assert_eq!((head.status, head.reason, len), (206, "Partial Content", bytes.len() - 6));
//! assert_eq!(head.content_length, Some(6));
//! assert_eq!(
//!     head.content_range,
//!     Some(ContentRange::Bytes { first: 7, last: 12, complete_len: Some(13) })
//! );
//! assert!(head.is_success());
//! ```

use super::fields::{connection, decimal, field, head, split_once, trim_ows};
use super::status::HttpError;

/// A `Content-Range` value (RFC 9110 §14.4), bytes only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentRange {
    /// `bytes first-last/complete` (or `/*`: length unknown).
    Bytes {
        /// First byte of the body in the whole representation.
        first: u64,
        /// Last byte (inclusive).
        last: u64,
        /// The whole representation's length, when known.
        complete_len: Option<u64>,
    },
    /// `bytes */complete`: the range asked for selects nothing (a 416).
    Unsatisfied {
        /// The whole representation's length.
        complete_len: u64,
    },
}

impl ContentRange {
    /// Parses a `Content-Range` value; anything but a well-formed byte range with
    /// `first <= last < complete_len` is [`HttpError::BadContentRange`].
    pub fn parse(value: &[u8]) -> Result<ContentRange, HttpError> {
        let bad = HttpError::BadContentRange;
        let value = trim_ows(value);
        let (unit, rest) = split_once(value, b' ').ok_or(bad)?;
        if !unit.eq_ignore_ascii_case(b"bytes") {
            return Err(bad);
        }
        let (range, complete) = split_once(trim_ows(rest), b'/').ok_or(bad)?;
        let complete_len = match complete {
            b"*" => None,
            digits => Some(decimal(digits).ok_or(bad)?),
        };
        if range == b"*" {
            return complete_len
                .map(|complete_len| ContentRange::Unsatisfied { complete_len })
                .ok_or(bad);
        }
        let (first, last) = split_once(range, b'-').ok_or(bad)?;
        let (first, last) = (decimal(first).ok_or(bad)?, decimal(last).ok_or(bad)?);
        if first > last || complete_len.is_some_and(|len| last >= len) {
            return Err(bad);
        }
        Ok(ContentRange::Bytes {
            first,
            last,
            complete_len,
        })
    }

    /// The whole representation's length, when the value says.
    pub fn complete_len(&self) -> Option<u64> {
        match *self {
            ContentRange::Bytes { complete_len, .. } => complete_len,
            ContentRange::Unsatisfied { complete_len } => Some(complete_len),
        }
    }
}

/// A parsed response head: what a client needs to frame and check the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHead<'a> {
    /// The `x` of `HTTP/1.x`.
    pub minor: u8,
    /// The status code (100–999).
    pub status: u16,
    /// The reason phrase (possibly empty).
    pub reason: &'a str,
    /// `Content-Length`, if present (repeats must agree).
    pub content_length: Option<u64>,
    /// `Content-Range`, if present.
    pub content_range: Option<ContentRange>,
    /// The server will close after this response (`Connection: close`, or HTTP/1.0
    /// without `Connection: keep-alive`).
    pub close: bool,
    /// A `Transfer-Encoding` is present: the body is not framed by `Content-Length`.
    pub transfer_encoded: bool,
}

impl<'a> ResponseHead<'a> {
    /// Parses one response head from the front of `bytes`: the head and its length, up to
    /// and including its CRLFCRLF (the body starts there).
    ///
    /// Returns [`HttpError::Incomplete`] while there is no CRLFCRLF in the first
    /// [`MAX_HEAD`](super::MAX_HEAD) bytes and [`HttpError::TooLong`] once there are that many without
    /// one; [`HttpError::BadStatusLine`], [`HttpError::BadVersion`],
    /// [`HttpError::BadHeader`], [`HttpError::BadContentLength`] and
    /// [`HttpError::BadContentRange`] say what is wrong.
    pub fn parse(bytes: &'a [u8]) -> Result<(ResponseHead<'a>, usize), HttpError> {
        let (head, len) = head(bytes)?;
        let mut lines = head.split(|&b| b == b'\n');
        let line = lines.next().unwrap_or_default();
        let line = line.strip_suffix(b"\r").ok_or(HttpError::BadStatusLine)?;
        let (minor, status, reason) = status_line(line)?;
        let mut parsed = ResponseHead {
            minor,
            status,
            reason,
            content_length: None,
            content_range: None,
            close: false,
            transfer_encoded: false,
        };
        let mut keep_alive = false;
        for line in lines {
            let (name, value) = field(line)?;
            let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
            if is("content-length") {
                let n = decimal(value).ok_or(HttpError::BadContentLength)?;
                if parsed.content_length.is_some_and(|m| m != n) || n == u64::MAX {
                    return Err(HttpError::BadContentLength);
                }
                parsed.content_length = Some(n);
            } else if is("content-range") {
                if parsed.content_range.is_some() {
                    return Err(HttpError::BadContentRange);
                }
                parsed.content_range = Some(ContentRange::parse(value)?);
            } else if is("transfer-encoding") {
                parsed.transfer_encoded = true;
            } else if is("connection") {
                let (close, keep) = connection(value);
                parsed.close |= close;
                keep_alive |= keep;
            }
        }
        parsed.close |= minor == 0 && !keep_alive;
        Ok((parsed, len))
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// `HTTP/1.x SP 3DIGIT SP reason`: `x`, the code and the reason (the space before an
/// empty reason may be missing, as RFC 9112 §4 asks clients to accept).
fn status_line(line: &[u8]) -> Result<(u8, u16, &str), HttpError> {
    let (version, rest) = split_once(line, b' ').ok_or(HttpError::BadStatusLine)?;
    let minor = match version {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', d] if d.is_ascii_digit() => d - b'0',
        _ => return Err(HttpError::BadVersion),
    };
    let (code, reason) = split_once(rest, b' ').unwrap_or((rest, b""));
    let status = match code {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => return Err(HttpError::BadStatusLine),
    };
    if !reason
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80)
    {
        return Err(HttpError::BadStatusLine);
    }
    let reason = core::str::from_utf8(reason).map_err(|_| HttpError::BadStatusLine)?;
    Ok((minor, status, reason))
}

#[cfg(test)]
mod tests {
    use super::super::{
        Answer, MAX_HEAD, MemStore, Status, Store, answer, parse_request, write_head,
    };
    use super::*;
    use alloc::vec::Vec;

    fn parse(bytes: &[u8]) -> Result<ResponseHead<'_>, HttpError> {
        ResponseHead::parse(bytes).map(|(h, _)| h)
    }

    #[test]
    fn a_plain_200() {
        let bytes = b"HTTP/1.1 200 OK\r\nServer: trickles-web\r\nContent-Type: text/plain\r\n\
                      Content-Length: 13\r\nAccept-Ranges: bytes\r\n\r\nhello, world\n";
        let (h, len) = ResponseHead::parse(bytes).unwrap();
        assert_eq!(len, bytes.len() - 13);
        assert_eq!(
            h,
            ResponseHead {
                minor: 1,
                status: 200,
                reason: "OK",
                content_length: Some(13),
                content_range: None,
                close: false,
                transfer_encoded: false,
            }
        );
        assert!(h.is_success());
    }

    #[test]
    fn incomplete_until_the_blank_line() {
        let bytes = b"HTTP/1.1 404 Not Found\r\nContent-Length: 14\r\n\r\n";
        for cut in 0..bytes.len() {
            assert_eq!(
                ResponseHead::parse(&bytes[..cut]),
                Err(HttpError::Incomplete),
                "{cut}"
            );
        }
        let h = parse(bytes).unwrap();
        assert_eq!(
            (h.status, h.reason, h.is_success()),
            (404, "Not Found", false)
        );
        let mut long = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        long.resize(MAX_HEAD, b'a');
        assert_eq!(ResponseHead::parse(&long), Err(HttpError::TooLong));
    }

    #[test]
    fn content_ranges() {
        assert_eq!(
            ContentRange::parse(b"bytes 0-0/1"),
            Ok(ContentRange::Bytes {
                first: 0,
                last: 0,
                complete_len: Some(1)
            })
        );
        assert_eq!(
            ContentRange::parse(b" BYTES 5-9/* "),
            Ok(ContentRange::Bytes {
                first: 5,
                last: 9,
                complete_len: None
            })
        );
        let unsatisfied = ContentRange::parse(b"bytes */0").unwrap();
        assert_eq!(unsatisfied, ContentRange::Unsatisfied { complete_len: 0 });
        assert_eq!(unsatisfied.complete_len(), Some(0));
        for bad in [
            &b"bytes 5-4/10"[..],
            b"bytes 0-10/10",
            b"bytes */*",
            b"bytes 1-2",
            b"items 1-2/3",
            b"bytes -2/3",
            b"bytes 1-/3",
            b"bytes 1-2/x",
            b"",
        ] {
            assert_eq!(
                ContentRange::parse(bad),
                Err(HttpError::BadContentRange),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bad_heads_are_named() {
        let cases: [(&[u8], HttpError); 9] = [
            (b"HTTP/2 200 OK\r\n\r\n", HttpError::BadVersion),
            (b"HTTP/1.1 20 OK\r\n\r\n", HttpError::BadStatusLine),
            (b"HTTP/1.1 099 OK\r\n\r\n", HttpError::BadStatusLine),
            (b"HTTP/1.1\r\n\r\n", HttpError::BadStatusLine),
            (b"HTTP/1.1 200 OK\nX: y\r\n\r\n", HttpError::BadStatusLine),
            (b"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", HttpError::BadHeader),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
                HttpError::BadContentLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                HttpError::BadContentLength,
            ),
            (
                b"HTTP/1.1 206 P\r\nContent-Range: bytes 0-1/2\r\nContent-Range: bytes 0-1/2\r\n\r\n",
                HttpError::BadContentRange,
            ),
        ];
        for (bytes, e) in cases {
            assert_eq!(parse(bytes), Err(e), "{bytes:?}");
        }
    }

    #[test]
    fn connection_and_versions() {
        let h = parse(b"HTTP/1.1 204\r\nconnection: Keep-Alive, CLOSE\r\n\r\n").unwrap();
        assert_eq!((h.status, h.reason, h.close), (204, "", true));
        assert!(parse(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().close);
        assert!(
            !parse(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n")
                .unwrap()
                .close
        );
        let h = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        assert!(h.transfer_encoded && h.content_length.is_none());
    }

    /// Every head the server side writes reads back with its numbers.
    #[test]
    fn reads_what_write_head_writes() {
        let mut store = MemStore::new();
        store.insert("/f.bin", (0..=255).collect());
        store.insert("/empty", Vec::new());
        let cases: [(&[u8], u16, Option<ContentRange>, u64); 5] = [
            (b"GET /f.bin HTTP/1.1\r\nHost: h\r\n\r\n", 200, None, 256),
            (
                b"GET /f.bin HTTP/1.1\r\nHost: h\r\nRange: bytes=10-\r\n\r\n",
                206,
                Some(ContentRange::Bytes {
                    first: 10,
                    last: 255,
                    complete_len: Some(256),
                }),
                246,
            ),
            (
                b"GET /empty HTTP/1.1\r\nHost: h\r\nRange: bytes=0-99\r\n\r\n",
                416,
                Some(ContentRange::Unsatisfied { complete_len: 0 }),
                Status::RangeNotSatisfiable.error_body().len() as u64,
            ),
            (
                b"GET /nope HTTP/1.1\r\nHost: h\r\n\r\n",
                404,
                None,
                Status::NotFound.error_body().len() as u64,
            ),
            (
                b"POST /f.bin HTTP/1.1\r\nHost: h\r\n\r\n",
                405,
                None,
                Status::MethodNotAllowed.error_body().len() as u64,
            ),
        ];
        for (request, status, range, len) in cases {
            let a = match parse_request(request) {
                Ok((req, _)) => answer(&store, &req),
                Err(e) => Answer::error(e.status()),
            };
            let mut out = Vec::new();
            let n = write_head(&a, store.info(a.id).as_ref(), &mut out);
            let (h, used) = ResponseHead::parse(&out).unwrap();
            assert_eq!(used, n);
            assert_eq!(
                (h.status, h.content_range, h.content_length),
                (status, range, Some(len))
            );
            assert_eq!(h.reason, a.status.reason());
            assert!(!h.close);
        }
    }
}
