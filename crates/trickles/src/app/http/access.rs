//! Access-log records: what was asked and what was answered, one per request, written in
//! the Common Log Format by [`Display`](fmt::Display).
//!
//! ```text
//!  127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a HTTP/1.1" 200 2326
//!  client        time (ClfDate)                request line      status bytes
//! ```
//!
//! The core makes the record (both transports answer through the same code); where the
//! lines go is the daemon's business. The request line is logged as it came, up to
//! [`MAX_LOGGED_LINE`] bytes, with `"`, `\` and every byte outside printable ASCII
//! written `\xHH` (as nginx does), so a line can neither break the log's framing nor
//! carry a terminal escape.
//!
//! ```
//! use trickles::app::http::{AccessRecord, Status};
//!
//! let r = AccessRecord::new(
//!     [127, 0, 0, 1].into(),
//!     971_186_136,
//!     b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
//!     Status::Ok,
//!     2326,
//! );
//! assert_eq!(
//!     r.to_string(),
//!     "127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] \"GET /a HTTP/1.1\" 200 2326"
//! );
//! ```

use alloc::vec::Vec;
use core::fmt;
use core::net::IpAddr;

use super::date::ClfDate;
use super::status::Status;

/// Longest request line kept in a record (longer ones are cut, and end in `...`).
pub const MAX_LOGGED_LINE: usize = 2048;

/// One request as an access log records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRecord {
    /// The client's address, as the transport gives it.
    pub client: IpAddr,
    /// When the request was answered: seconds since the Unix epoch.
    pub time: u64,
    /// The request line as received (no CRLF), at most [`MAX_LOGGED_LINE`] bytes.
    pub request_line: Vec<u8>,
    /// Whether the request line was longer and was cut.
    pub cut: bool,
    /// The status answered.
    pub status: u16,
    /// Body bytes of the answer (0 for HEAD and 304).
    pub bytes: u64,
}

impl AccessRecord {
    /// The record of a request whose head starts `head` (its first line is taken, up to
    /// its CRLF or LF, or all of `head` when there is none).
    pub fn new(client: IpAddr, time: u64, head: &[u8], status: Status, bytes: u64) -> Self {
        let line = request_line(head);
        let cut = line.len() > MAX_LOGGED_LINE;
        AccessRecord {
            client,
            time,
            request_line: line.get(..MAX_LOGGED_LINE).unwrap_or(line).to_vec(),
            cut,
            status: status.code(),
            bytes,
        }
    }
}

/// The first line of `head`, without its line end.
pub fn request_line(head: &[u8]) -> &[u8] {
    let line = head
        .iter()
        .position(|&b| b == b'\n')
        .and_then(|end| head.get(..end))
        .unwrap_or(head);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl fmt::Display for AccessRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} - - [{}] \"", self.client, ClfDate(self.time))?;
        for &b in &self.request_line {
            if b == b'"' || b == b'\\' || !(b' '..=b'~').contains(&b) {
                write!(f, "\\x{b:02X}")?;
            } else {
                fmt::Write::write_char(f, char::from(b))?;
            }
        }
        if self.cut {
            f.write_str("...")?;
        }
        write!(f, "\" {} {}", self.status, self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn hostile_lines_stay_on_one_line_and_in_their_quotes() {
        let r = AccessRecord::new(
            "::1".parse().unwrap(),
            0,
            b"GET /\"a\\b\x1b[31m\xff HTTP/1.1\nX: y",
            Status::BadRequest,
            16,
        );
        assert_eq!(
            r.to_string(),
            "::1 - - [01/Jan/1970:00:00:00 +0000] \
             \"GET /\\x22a\\x5Cb\\x1B[31m\\xFF HTTP/1.1\" 400 16"
        );
        let long = alloc::vec![b'a'; MAX_LOGGED_LINE + 5];
        let r = AccessRecord::new([10, 0, 0, 1].into(), 0, &long, Status::BadRequest, 0);
        assert!(r.cut && r.request_line.len() == MAX_LOGGED_LINE);
        assert!(r.to_string().ends_with("aaa...\" 400 0"));
        assert_eq!(request_line(b""), b"");
        assert_eq!(request_line(b"\r\n"), b"");
        assert_eq!(request_line(b"GET / HTTP/1.0\r\n\r\n"), b"GET / HTTP/1.0");
    }
}
