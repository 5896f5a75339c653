//! User continuations: the server application's state, carried by the client (§2.1, §4).
//!
//! A Trickles server application keeps nothing between requests either; what it needs to
//! resume (which object, how far into it, what input it has seen) rides in a *user
//! continuation* that the server attaches to each response and the client sends back with
//! its next request. The application protects it with a MAC under its own key
//! ([`UcontKey`]), bound to the connection ([`Binding`]: four-tuple and connection nonce),
//! so a client can neither forge nor alter one, nor replay one on another connection.
//!
//! [`UserContinuation`] gives the standard formats of §4.1, whose first fields the client
//! reads (without being able to verify them) to manage its requests:
//!
//! * [`UserContinuation::Input`] (§4.2): a digest of the client input consumed so far, and
//!   how many bytes of the client's output stream that is, so the client advances its
//!   transmit queue and sends the rest with this continuation.
//! * [`UserContinuation::Output`] (§4.3): `valid_start..valid_end` of the server's output
//!   stream that this continuation can generate; the client splits that range into
//!   requests sized by its simulation of the server's congestion control. `skip_to` is the
//!   SKIP notice of §5.2: the object's region of the output space reaches there, and the
//!   client elides `valid_end..skip_to` (never requests, buffers or delivers it).
//! * [`UserContinuation::Overflow`] (§5.2): an object longer than its region goes on
//!   through a fresh input continuation. The notice comes with the region's last bytes;
//!   the client holds delivery there and sends the notice back in its input stream; the
//!   server consumes it in stream order, allocates a fresh region, and answers with a new
//!   input continuation and an output continuation for the next part whose `follows`
//!   field tells the client to splice it in after the first.
//! * [`UserContinuation::Opaque`]: anything else the application defines.
//!
//! ```text
//!  kind (1) │ Input:  consumed (8) │ state_len (2) │ state          │ tag (16)
//!           │ Output: valid_start (8) │ valid_end (8) │ skip_to (8) │ app_len (2) │ app │ tag
//!           │ Output (kind 6): … │ skip_to (8) │ follows (8) │ app_len (2) │ app │ tag
//!           │ Overflow: at (8) │ state_len (2) │ state         │ tag (16)
//!           │ Opaque: body_len (2) │ body                            │ tag (16)
//!  tag = AES-128-CMAC_K("trickles ucont" ‖ four-tuple ‖ conn_nonce ‖ everything before it)
//! ```
//!
//! ```
//! use trickles::app::{Binding, UcontKey, UserContinuation};
//! use trickles::conn::{Addr, FourTuple};
//!
//! let key = UcontKey::new(&[9; 16]);
//! let tuple = FourTuple {
//!     client_addr: Addr::V4([10, 0, 0, 1]),
//!     client_port: 40000,
//!     server_addr: Addr::V4([10, 0, 0, 2]),
//!     server_port: 80,
//! };
//! let conn = Binding { tuple, conn_nonce: 77 };
//! let uc = UserContinuation::Output {
//!     valid_start: 0,
//!     valid_end: 5000,
//!     skip_to: 5000,
//!     follows: None,
//!     app: b"/index.html",
//! };
//! let sealed = key.seal(&conn, &uc).unwrap();
//! assert_eq!(key.open(&conn, &sealed), Ok(uc));
//! // Another connection (or incarnation) cannot use it.
//! let other = Binding { conn_nonce: 78, ..conn };
//! assert!(key.open(&other, &sealed).is_err());
//! ```

use alloc::vec::Vec;
use core::fmt;

use crate::conn::{FOUR_TUPLE_MAX_LEN, FourTuple};
use crate::crypto::{MacKey, TAG_LEN, Tag};
use crate::wire::Reader;

/// Domain separation: user-continuation tags can never be confused with other MACs made
/// under the same key.
const DOMAIN: &[u8] = b"trickles ucont";

/// Most bytes of application data in one user continuation (`state`, `app` or `body`).
pub const MAX_UCONT_BODY: usize = 1024;

const KIND_INPUT: u8 = 1;
const KIND_OUTPUT: u8 = 2;
const KIND_OPAQUE: u8 = 3;
const KIND_BUNDLE: u8 = 4;
const KIND_OVERFLOW: u8 = 5;
/// An output continuation with `follows` set.
const KIND_OUTPUT_FOLLOWS: u8 = 6;

/// What a user continuation is bound to: one connection's four-tuple and nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The connection's addresses and ports.
    pub tuple: FourTuple,
    /// The connection nonce ([`Event::conn_nonce`](crate::server::Event::conn_nonce)),
    /// naming this incarnation of the four-tuple.
    pub conn_nonce: u64,
}

/// A user continuation in one of the standard formats, borrowing its variable part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserContinuation<'a> {
    /// Input consumed so far (§4.2).
    Input {
        /// Bytes of the client's output stream the server has consumed: the client
        /// resumes sending from this offset, with this continuation.
        consumed: u64,
        /// The application's digest of that input (for example a partial request line).
        state: &'a [u8],
    },
    /// A range of the server's output stream this continuation can generate (§4.3).
    Output {
        /// First byte offset it covers.
        valid_start: u64,
        /// One past the last byte offset it covers.
        valid_end: u64,
        /// SKIP (§5.2): the output from `valid_end` up to here will never be filled (the
        /// rest of the object's region); equal to `valid_end` when there is none.
        skip_to: u64,
        /// For the continuation of an object that overflowed its region (§5.2, answering
        /// an [`Overflow`](UserContinuation::Overflow) notice): the offset where the
        /// previous part's region ended. The client delivers this range right after the
        /// byte before `follows`, ahead of whatever lies at `follows` in sequence order.
        follows: Option<u64>,
        /// The application's data (for example an object id).
        app: &'a [u8],
    },
    /// §5.2's overflow notice: the object whose region ends at `at` goes on past it. The
    /// client holds delivery at `at` and sends this notice back to the server **as a
    /// request of its own in its input stream** (a framed request whose data is the
    /// sealed notice). An application reading input through input continuations meets it
    /// there, at its place in the stream, recognises it by opening the request's data
    /// with its key, and answers with a fresh input continuation and the output
    /// continuation of the object's next part in a fresh region (`follows: Some(at)`).
    /// Input is consumed in stream order, so the fresh region is allocated exactly once,
    /// however often the notice is sent. Send the notice with **every** response serving
    /// the part ([`Minisocket::set_ucont`](crate::app::Minisocket::set_ucont) on each,
    /// not only those carrying transport continuations), so the client holds delivery
    /// before whichever response brings the region's last byte.
    Overflow {
        /// Where the full region of the object's current part ends.
        at: u64,
        /// The application's data (for example the object id and how far it got).
        state: &'a [u8],
    },
    /// Application-defined.
    Opaque(&'a [u8]),
}

/// Why a user continuation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UcontError {
    /// Shorter than its fields say.
    Truncated,
    /// Bytes after the tag.
    TrailingBytes,
    /// An unknown kind byte.
    BadKind(u8),
    /// An output continuation with `valid_end < valid_start` or `skip_to < valid_end`.
    BadRange,
    /// A variable part longer than [`MAX_UCONT_BODY`].
    TooLong,
    /// The tag does not verify under this key and connection.
    Mac,
}

impl fmt::Display for UcontError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UcontError::Truncated => f.write_str("user continuation truncated"),
            UcontError::TrailingBytes => f.write_str("bytes after the user continuation"),
            UcontError::BadKind(k) => write!(f, "unknown user continuation kind {k}"),
            UcontError::BadRange => f.write_str("output continuation ends before it starts"),
            UcontError::TooLong => f.write_str("user continuation body too long"),
            UcontError::Mac => f.write_str("user continuation MAC does not verify"),
        }
    }
}

/// The crate's bounds-checked [`Reader`], with truncation reported as a [`UcontError`].
struct Fields<'a>(Reader<'a>);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], UcontError> {
        self.0.take(n).map_err(|_| UcontError::Truncated)
    }

    fn u8(&mut self) -> Result<u8, UcontError> {
        self.0.u8().map_err(|_| UcontError::Truncated)
    }

    fn u16(&mut self) -> Result<u16, UcontError> {
        self.0.u16().map_err(|_| UcontError::Truncated)
    }

    fn u64(&mut self) -> Result<u64, UcontError> {
        self.0.u64().map_err(|_| UcontError::Truncated)
    }

    /// A `u16`-length-prefixed body of at most [`MAX_UCONT_BODY`] bytes.
    fn body(&mut self) -> Result<&'a [u8], UcontError> {
        let n = usize::from(self.u16()?);
        if n > MAX_UCONT_BODY {
            return Err(UcontError::TooLong);
        }
        self.take(n)
    }

    fn is_empty(&self) -> bool {
        self.0.remaining() == 0
    }
}

impl<'a> UserContinuation<'a> {
    /// Reads the standard fields of a sealed user continuation **without verifying it**:
    /// what a client does (it has no key). Returns the continuation and its tag.
    pub fn parse(bytes: &'a [u8]) -> Result<(UserContinuation<'a>, &'a [u8]), UcontError> {
        let mut r = Fields(Reader::new(bytes));
        let uc = match r.u8()? {
            KIND_INPUT => {
                let consumed = r.u64()?;
                UserContinuation::Input {
                    consumed,
                    state: r.body()?,
                }
            }
            kind @ (KIND_OUTPUT | KIND_OUTPUT_FOLLOWS) => {
                let valid_start = r.u64()?;
                let valid_end = r.u64()?;
                let skip_to = r.u64()?;
                let follows = if kind == KIND_OUTPUT_FOLLOWS {
                    Some(r.u64()?)
                } else {
                    None
                };
                if valid_end < valid_start || skip_to < valid_end {
                    return Err(UcontError::BadRange);
                }
                UserContinuation::Output {
                    valid_start,
                    valid_end,
                    skip_to,
                    follows,
                    app: r.body()?,
                }
            }
            KIND_OVERFLOW => {
                let at = r.u64()?;
                UserContinuation::Overflow {
                    at,
                    state: r.body()?,
                }
            }
            KIND_OPAQUE => UserContinuation::Opaque(r.body()?),
            k => return Err(UcontError::BadKind(k)),
        };
        let tag = r.take(TAG_LEN)?;
        if !r.is_empty() {
            return Err(UcontError::TrailingBytes);
        }
        Ok((uc, tag))
    }

    /// Bytes of the sealed encoding.
    pub fn sealed_len(&self) -> usize {
        let fixed = match self {
            UserContinuation::Input { .. } => 1 + 8 + 2,
            UserContinuation::Output { follows, .. } => {
                1 + 24 + if follows.is_some() { 8 } else { 0 } + 2
            }
            UserContinuation::Overflow { .. } => 1 + 8 + 2,
            UserContinuation::Opaque(_) => 1 + 2,
        };
        fixed + self.body().len() + TAG_LEN
    }

    fn body(&self) -> &'a [u8] {
        match *self {
            UserContinuation::Input { state, .. } => state,
            UserContinuation::Output { app, .. } => app,
            UserContinuation::Overflow { state, .. } => state,
            UserContinuation::Opaque(body) => body,
        }
    }

    /// The encoding without the tag, appended to `out`.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), UcontError> {
        let body = self.body();
        if body.len() > MAX_UCONT_BODY {
            return Err(UcontError::TooLong);
        }
        match *self {
            UserContinuation::Input { consumed, .. } => {
                out.push(KIND_INPUT);
                out.extend_from_slice(&consumed.to_be_bytes());
            }
            UserContinuation::Output {
                valid_start,
                valid_end,
                skip_to,
                follows,
                ..
            } => {
                if valid_end < valid_start || skip_to < valid_end {
                    return Err(UcontError::BadRange);
                }
                out.push(if follows.is_some() {
                    KIND_OUTPUT_FOLLOWS
                } else {
                    KIND_OUTPUT
                });
                out.extend_from_slice(&valid_start.to_be_bytes());
                out.extend_from_slice(&valid_end.to_be_bytes());
                out.extend_from_slice(&skip_to.to_be_bytes());
                if let Some(at) = follows {
                    out.extend_from_slice(&at.to_be_bytes());
                }
            }
            UserContinuation::Overflow { at, .. } => {
                out.push(KIND_OVERFLOW);
                out.extend_from_slice(&at.to_be_bytes());
            }
            UserContinuation::Opaque(_) => out.push(KIND_OPAQUE),
        }
        // Checked above: at most MAX_UCONT_BODY (< 2^16).
        out.extend_from_slice(&(body.len() as u16).to_be_bytes());
        out.extend_from_slice(body);
        Ok(())
    }
}

/// An application's user-continuation key: AES-128-CMAC, prepared once.
///
/// Replicas of one service share it (so any replica can resume any connection); it is the
/// application's own, separate from the transport's keys.
#[derive(Clone, Debug)]
pub struct UcontKey {
    mac: MacKey,
}

impl UcontKey {
    /// Prepares `key`.
    pub fn new(key: &[u8; 16]) -> UcontKey {
        UcontKey {
            mac: MacKey::new(key),
        }
    }

    fn tag(&self, conn: &Binding, encoded: &[u8]) -> Tag {
        let mut tuple = [0u8; FOUR_TUPLE_MAX_LEN];
        let n = conn.tuple.encode(&mut tuple);
        let tuple = tuple.get(..n).unwrap_or(&tuple);
        self.mac
            .tag(&[DOMAIN, tuple, &conn.conn_nonce.to_be_bytes(), encoded])
    }

    /// Encodes `uc` and its tag for connection `conn`.
    pub fn seal(&self, conn: &Binding, uc: &UserContinuation<'_>) -> Result<Vec<u8>, UcontError> {
        let mut out = Vec::with_capacity(uc.sealed_len());
        self.seal_into(conn, uc, &mut out)?;
        Ok(out)
    }

    /// Appends the sealed `uc` to `out` (left unchanged on error).
    pub fn seal_into(
        &self,
        conn: &Binding,
        uc: &UserContinuation<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), UcontError> {
        let start = out.len();
        if let Err(e) = uc.encode(out) {
            out.truncate(start);
            return Err(e);
        }
        let tag = self.tag(conn, out.get(start..).unwrap_or_default());
        out.extend_from_slice(&tag);
        Ok(())
    }

    /// Parses `bytes` and verifies its tag for `conn`, in constant time; only then is the
    /// continuation returned. Format errors are reported before the MAC is computed.
    pub fn open<'a>(
        &self,
        conn: &Binding,
        bytes: &'a [u8],
    ) -> Result<UserContinuation<'a>, UcontError> {
        let (uc, tag) = UserContinuation::parse(bytes)?;
        let body = bytes
            .get(..bytes.len() - TAG_LEN)
            .ok_or(UcontError::Truncated)?;
        let want = self.tag(conn, body);
        if crate::crypto::ct_eq(&want, tag) {
            Ok(uc)
        } else {
            Err(UcontError::Mac)
        }
    }
}

/// How a request's client data relates to an input continuation that has consumed
/// `consumed` bytes ([`absorb`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absorbed {
    /// `data[from..]` is input the continuation has not seen, starting exactly at
    /// `consumed`: append it.
    New {
        /// Where the new bytes start in the request's data.
        from: usize,
    },
    /// Everything in the request was consumed before (a retransmission, or a request
    /// overtaken by a later one): answer with the continuation unchanged.
    Repeat,
    /// The data starts after `consumed` (an earlier request is still missing) or carries
    /// no offset: answer with the continuation unchanged; the client sends it again.
    Gap,
}

/// The standard way to take client input into an input continuation (§4.2), whatever
/// order requests arrive in: input is consumed only in stream order, so a repeated or
/// reordered request can never be applied twice or out of turn.
pub fn absorb(consumed: u64, offset: Option<u64>, data: &[u8]) -> Absorbed {
    let Some(offset) = offset else {
        return Absorbed::Gap;
    };
    let end = offset.saturating_add(data.len() as u64);
    if offset > consumed {
        Absorbed::Gap
    } else if end <= consumed {
        Absorbed::Repeat
    } else {
        // consumed - offset < data.len() here.
        Absorbed::New {
            from: (consumed - offset) as usize,
        }
    }
}

/// Packs several sealed user continuations into one response's user-continuation field,
/// for the client to file each (for example an input continuation to go on reading the
/// client's requests and the output continuation of the object one of them opened).
/// `kind 4 │ count (1) │ (len (2) │ sealed)*`. Each member keeps its own MAC; the bundle
/// itself is not a user continuation and never comes back to the server.
///
/// Returns `None` for more than 255 members or a member longer than 65,535 bytes.
pub fn bundle(members: &[&[u8]]) -> Option<Vec<u8>> {
    let count = u8::try_from(members.len()).ok()?;
    let mut out = alloc::vec![KIND_BUNDLE, count];
    for m in members {
        out.extend_from_slice(&u16::try_from(m.len()).ok()?.to_be_bytes());
        out.extend_from_slice(m);
    }
    Some(out)
}

/// The members of a [`bundle`], or `None` if `bytes` is not a well-formed bundle.
pub fn unbundle(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    let mut r = Reader::new(bytes);
    if r.u8().ok()? != KIND_BUNDLE {
        return None;
    }
    let count = r.u8().ok()?;
    let mut out = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let n = usize::from(r.u16().ok()?);
        out.push(r.take(n).ok()?);
    }
    (r.remaining() == 0).then_some(out)
}
