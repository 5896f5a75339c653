//! Statuses: what a response says ([`Status`]), and why a head was refused ([`HttpError`],
//! each of which a status answers).

use core::fmt;

/// Why a request head was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// No CRLFCRLF yet: the head is not complete.
    Incomplete,
    /// No CRLFCRLF within [`MAX_HEAD`](super::MAX_HEAD) bytes.
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
    /// A `Range` value that is not one `bytes=` range (from
    /// [`RangeSpec::parse`](super::RangeSpec::parse);
    /// [`parse_request`](super::parse_request) ignores such a header instead).
    BadRange,
    /// A response's status line is not `HTTP/1.x SP 3DIGIT SP reason`
    /// ([`ResponseHead::parse`](super::ResponseHead::parse)).
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

/// The statuses served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 200: the whole object.
    Ok,
    /// 206: one range of it.
    PartialContent,
    /// 301: a directory named without its final `/` (the `Location` adds it).
    MovedPermanently,
    /// 304: the client's copy is current (a conditional GET); no body.
    NotModified,
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
    const ALL: [Status; 8] = [
        Status::Ok,
        Status::PartialContent,
        Status::MovedPermanently,
        Status::NotModified,
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
            Status::MovedPermanently => 301,
            Status::NotModified => 304,
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
            Status::MovedPermanently => "Moved Permanently",
            Status::NotModified => "Not Modified",
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

    /// Whether the head describes the object (its `ETag` and `Last-Modified`): 200, 206
    /// and 304.
    pub fn describes_object(self) -> bool {
        matches!(
            self,
            Status::Ok | Status::PartialContent | Status::NotModified
        )
    }

    /// The fixed text body of a status that does not serve the object
    /// (`"404 Not Found\n"`); empty for 200, 206 and 304 (which has no body).
    pub fn error_body(self) -> &'static [u8] {
        match self {
            Status::Ok | Status::PartialContent | Status::NotModified => b"",
            Status::MovedPermanently => b"301 Moved Permanently\n",
            Status::BadRequest => b"400 Bad Request\n",
            Status::NotFound => b"404 Not Found\n",
            Status::MethodNotAllowed => b"405 Method Not Allowed\n",
            Status::RangeNotSatisfiable => b"416 Range Not Satisfiable\n",
        }
    }
}
