//! Header fields: the one byte range a `Range` value may ask for ([`RangeSpec`]), what a
//! request's header lines say ([`Fields`]), and the token grammar requests and responses
//! share.

use alloc::vec::Vec;
use core::ops::Range;

use super::MAX_HEAD;
use super::status::HttpError;

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

/// What the header lines said, as far as serving a GET cares.
#[derive(Default)]
pub(super) struct Fields<'a> {
    pub(super) host: Option<&'a str>,
    pub(super) hosts: usize,
    pub(super) range: Option<&'a [u8]>,
    pub(super) ranges: usize,
    /// `If-Range` (`Some(b"")` when repeated: it then never holds).
    pub(super) if_range: Option<&'a [u8]>,
    /// Each `If-None-Match` line's value (a list each; together one list).
    pub(super) if_none_match: Vec<&'a [u8]>,
    pub(super) if_modified_since: Option<&'a [u8]>,
    pub(super) if_modified_sinces: usize,
    pub(super) close: bool,
    pub(super) keep_alive: bool,
}

impl<'a> Fields<'a> {
    /// Takes one header line (as [`head`] splits it, its CR still on).
    pub(super) fn add(&mut self, line: &'a [u8]) -> Result<(), HttpError> {
        let (name, value) = field(line)?;
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
            self.if_range = Some(if self.if_range.is_some() { b"" } else { value });
        } else if is("if-none-match") {
            self.if_none_match.push(value);
        } else if is("if-modified-since") {
            self.if_modified_sinces += 1;
            self.if_modified_since = Some(value);
        } else if is("connection") {
            let (close, keep_alive) = connection(value);
            self.close |= close;
            self.keep_alive |= keep_alive;
        } else if is("transfer-encoding") || (is("content-length") && value != b"0") {
            return Err(HttpError::BodyNotAllowed);
        }
        Ok(())
    }
}

/// RFC 9110's `tchar`: the bytes of methods and header names.
/// The head at the front of `bytes`, up to its CRLFCRLF: its lines joined by LF, the last
/// still ending in CR (split them on LF), and the bytes the whole head takes.
/// [`HttpError::Incomplete`] while there is no CRLFCRLF in the first [`MAX_HEAD`] bytes,
/// [`HttpError::TooLong`] once there are that many without one.
pub(super) fn head(bytes: &[u8]) -> Result<(&[u8], usize), HttpError> {
    let window = bytes.get(..MAX_HEAD).unwrap_or(bytes);
    let Some(end) = window.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(if bytes.len() >= MAX_HEAD {
            HttpError::TooLong
        } else {
            HttpError::Incomplete
        });
    };
    Ok((window.get(..end + 1).unwrap_or_default(), end + 4))
}

/// One header line (its CR still on): the name and the value without surrounding
/// whitespace. A line without CR, without a colon, with a name that is not a token (line
/// folding, inner whitespace) or a value with control bytes is [`HttpError::BadHeader`].
pub(super) fn field(line: &[u8]) -> Result<(&[u8], &[u8]), HttpError> {
    let line = line.strip_suffix(b"\r").ok_or(HttpError::BadHeader)?;
    let (name, value) = split_once(line, b':').ok_or(HttpError::BadHeader)?;
    let value = trim_ows(value);
    let value_ok = value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) || !value_ok {
        return Err(HttpError::BadHeader);
    }
    Ok((name, value))
}

/// A `Connection` value's options: whether it names `close`, whether `keep-alive`.
pub(super) fn connection(value: &[u8]) -> (bool, bool) {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .fold((false, false), |(close, keep), o| {
            (
                close || o.eq_ignore_ascii_case(b"close"),
                keep || o.eq_ignore_ascii_case(b"keep-alive"),
            )
        })
}

pub(super) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

pub(super) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

pub(super) fn split_once(s: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let at = s.iter().position(|&b| b == sep)?;
    let (a, b) = s.split_at(at);
    Some((a, b.get(1..).unwrap_or_default()))
}

/// A nonempty run of ASCII digits, saturating at `u64::MAX`.
pub(super) fn decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::http::parse_request;

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
            parse_request(bytes.as_bytes()).unwrap().0.range
        };
        assert_eq!(
            with("range: bytes=1-2\r\n"),
            Some(RangeSpec::FromTo { first: 1, last: 2 })
        );
        assert_eq!(with("Range: bytes=1-2,5-6\r\n"), None);
        assert_eq!(with("Range: bytes=x\r\n"), None);
        assert_eq!(with("Range: bytes=1-2\r\nRange: bytes=1-2\r\n"), None);
        // With If-Range the range is kept: the answer decides whether it applies.
        assert_eq!(
            with("Range: bytes=1-2\r\nIf-Range: \"e\"\r\n"),
            Some(RangeSpec::FromTo { first: 1, last: 2 })
        );
    }
}
