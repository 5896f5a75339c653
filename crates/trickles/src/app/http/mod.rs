//! HTTP/1.1 GETs out of an object store, on a stateless Trickles server (§4, §5.2, §7.1).
//!
//! The plain pieces work on any transport (the daemon's TCP fallback server uses them
//! directly):
//!
//! * [`parse_request`]: one request head (`GET` or `HEAD`, origin-form `/path?query` or
//!   the absolute-form `http://host[:port]/path` a proxy client sends, a single byte
//!   [`RangeSpec`], `If-None-Match`, `If-Modified-Since`, `If-Range`) into a [`Request`],
//!   or a typed [`HttpError`].
//! * [`answer`]: what to serve from a [`Store`]: a [`Status`] and the body as a span of
//!   the object (or a short fixed text for errors): an [`Answer`]. A path ending in `/`
//!   serves its `index.html`, a directory named without its `/` is redirected (301)
//!   there, and there are no directory listings; conditional requests get 304
//!   ([`not_modified`]). [`Answer::at`] dates it: the caller's clock, not ours.
//! * [`write_head`]: the response head (`Date`, `Last-Modified`, a strong [`ETag`] made
//!   from the object's version), deterministic (the `Date` is the answer's, no
//!   `Connection`), so any replica regenerates it byte for byte at any time.
//! * [`HttpDate`] and [`ClfDate`]: dates as HTTP and access logs write them;
//!   [`AccessRecord`]: one request's access-log line, in the Common Log Format.
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
//! store.set_modified("/hello.txt", 784_111_777);
//! let bytes = b"GET /hello.txt HTTP/1.1\r\nHost: example\r\nRange: bytes=7-\r\n\r\n";
//! let (req, used) = parse_request(bytes).unwrap();
//! assert_eq!((&*req.path, used), ("/hello.txt", bytes.len()));
//!
//! // Answered at 2000-10-10 13:55:36 (the caller's clock).
//! let a = answer(&store, &req).at(Some(971_186_136));
//! assert_eq!((a.status, a.body), (Status::PartialContent, Body::Object { start: 7, end: 13 }));
//! let mut out = Vec::new();
//! write_head(&a, store.info(a.id).as_ref(), &mut out);
//! assert!(store.read(a.id, 7, 6, &mut out));
//! assert_eq!(
//!     out,
//!     b"HTTP/1.1 206 Partial Content\r\nServer: trickles-web\r\n\
//!       Date: Tue, 10 Oct 2000 13:55:36 GMT\r\n\
//!       Content-Type: text/plain; charset=utf-8\r\nContent-Length: 6\r\n\
//!       Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: \"0000000000000002\"\r\n\
//!       Accept-Ranges: bytes\r\nContent-Range: bytes 7-12/13\r\n\r\nworld\n"
//! );
//!
//! // The client's copy is current: 304, no body.
//! let bytes = b"GET /hello.txt HTTP/1.1\r\nHost: e\r\nIf-None-Match: \"0000000000000002\"\r\n\r\n";
//! let a = answer(&store, &parse_request(bytes).unwrap().0);
//! assert_eq!((a.status, a.body_len()), (Status::NotModified, 0));
//! ```

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

mod access;
mod answer;
mod app;
mod conditional;
mod date;
mod fields;
mod request;
mod response;
mod status;

pub use access::{AccessRecord, MAX_LOGGED_LINE, request_line};
pub use answer::{Answer, Body, MAX_LOCATION, answer, write_head};
pub use app::{ACCESS_LOG_CAPACITY, HttpApp, HttpStats};
pub use conditional::{ETAG_LEN, ETag, etag_list_matches, if_range_holds, not_modified};
pub use date::{ClfDate, HTTP_DATE_LEN, HttpDate};
pub use fields::RangeSpec;
pub use request::{Method, Request, get_request, parse_request};
pub use response::{ContentRange, ResponseHead};
pub use status::{HttpError, Status};

/// Longest request head accepted, its final CRLFCRLF included.
pub const MAX_HEAD: usize = 8192;

/// What the server knows of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// The store's name for it, stable while the object exists.
    pub id: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Changes whenever its content or its modification time does: a continuation made
    /// for another version is refused rather than served with mixed bytes. It is also the
    /// object's strong entity tag ([`ETag`]).
    pub version: u64,
    /// When it was last modified (seconds since the Unix epoch), if the store knows: its
    /// `Last-Modified`, and what `If-Modified-Since` is compared with.
    pub modified: Option<u64>,
    /// Its media type.
    pub content_type: &'static str,
}

/// Where the objects come from: files for the daemon, memory for tests ([`MemStore`]).
pub trait Store {
    /// The object at `path` (decoded, starting with `/`, free of `..` segments); `None`
    /// for a directory ([`answer`](answer()) asks for its `index.html` itself).
    fn lookup(&self, path: &str) -> Option<ObjectInfo>;

    /// Whether `path` (as for [`Store::lookup`], without a final `/`) names a directory:
    /// a request for it without its `/` is redirected (301) to it with one. None by
    /// default.
    fn is_directory(&self, path: &str) -> bool {
        let _ = path;
        false
    }

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
/// when [`MemStore::insert`] replaces an object or [`MemStore::set_modified`] dates it.
/// A path that is a prefix of others up to a `/` is a directory (`/sub` when `/sub/x`
/// exists).
#[derive(Clone, Debug, Default)]
pub struct MemStore {
    by_path: BTreeMap<String, u64>,
    objects: Vec<MemObject>,
}

#[derive(Clone, Debug)]
struct MemObject {
    content_type: &'static str,
    version: u64,
    modified: Option<u64>,
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
            modified: None,
            bytes,
        });
        self.by_path.insert(String::from(path), id);
        id
    }

    /// Gives the object at `path` the modification time `modified` (seconds since the
    /// Unix epoch), bumping its version. Returns whether there is one.
    pub fn set_modified(&mut self, path: &str, modified: u64) -> bool {
        let Some(o) = self
            .by_path
            .get(path)
            .and_then(|&id| usize::try_from(id).ok())
            .and_then(|i| self.objects.get_mut(i))
        else {
            return false;
        };
        o.version += 1;
        o.modified = Some(modified);
        true
    }

    fn object(&self, id: u64) -> Option<&MemObject> {
        self.objects.get(usize::try_from(id).ok()?)
    }
}

impl Store for MemStore {
    fn lookup(&self, path: &str) -> Option<ObjectInfo> {
        self.info(*self.by_path.get(path)?)
    }

    fn is_directory(&self, path: &str) -> bool {
        let dir = [path, "/"].concat();
        self.by_path
            .range::<str, _>((
                core::ops::Bound::Excluded(&*dir),
                core::ops::Bound::Unbounded,
            ))
            .next()
            .is_some_and(|(p, _)| p.starts_with(&dir))
    }

    fn info(&self, id: u64) -> Option<ObjectInfo> {
        let o = self.object(id)?;
        Some(ObjectInfo {
            id,
            len: o.bytes.len() as u64,
            version: o.version,
            modified: o.modified,
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

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn store() -> MemStore {
        let mut s = MemStore::new();
        s.insert("/index.html", b"<h1>hi</h1>\n".to_vec());
        s.insert("/a b.txt", b"0123456789".to_vec());
        s.insert("/empty", Vec::new());
        s
    }

    #[test]
    fn mem_store_and_content_types() {
        let mut s = store();
        let v = s.lookup("/index.html").unwrap();
        assert_eq!(s.lookup("/"), None, "a directory is no object");
        assert_eq!(s.lookup("/nope/"), None);
        s.insert("/sub/deeper/x", Vec::new());
        for (path, dir) in [("/sub", true), ("/sub/deeper", true), ("/su", false)] {
            assert_eq!(s.is_directory(path), dir, "{path}");
        }
        assert!(!s.is_directory("/sub/deeper/x") && !s.is_directory("/index.html"));
        assert!(s.set_modified("/empty", 7) && !s.set_modified("/none", 7));
        let e = s.lookup("/empty").unwrap();
        assert_eq!((e.modified, e.version), (Some(7), 2));
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
}
