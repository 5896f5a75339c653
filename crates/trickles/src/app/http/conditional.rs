//! Conditional requests (RFC 9110 §13): entity tags and the preconditions a GET or HEAD
//! may carry.
//!
//! An object's entity tag is strong and derived from its version ([`ETag`]): the store
//! promises a new version whenever the content (or the modification time) changes, which
//! is exactly what a strong validator must track. Evaluation follows §13.2.2:
//!
//! 1. `If-None-Match` (a list of tags, weak comparison, or `*`): a match answers 304;
//! 2. only without it, `If-Modified-Since`: unchanged since that date answers 304;
//! 3. then `If-Range` decides whether a `Range` applies (strong comparison of a tag, or
//!    the exact `Last-Modified`).
//!
//! Malformed tag lists match nothing (the full answer is always a safe answer).
//!
//! ```
//! use trickles::app::http::{ETag, etag_list_matches};
//!
//! let tag = ETag(0x1f);
//! assert_eq!(tag.to_string(), "\"000000000000001f\"");
//! assert!(etag_list_matches(b"\"x\", W/\"000000000000001f\"", tag));
//! assert!(etag_list_matches(b"*", tag));
//! assert!(!etag_list_matches(b"\"000000000000001e\"", tag));
//! ```

use core::fmt;

use super::ObjectInfo;
use super::date::HttpDate;
use super::fields::trim_ows;
use super::request::Request;

/// An object's strong entity tag: its version as 16 hex digits, quoted (always 18 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ETag(pub u64);

/// Bytes of an [`ETag`] as written.
pub const ETAG_LEN: usize = 18;

impl ETag {
    /// The tag of `info`.
    pub fn of(info: &ObjectInfo) -> ETag {
        ETag(info.version)
    }

    /// Whether `opaque` (a tag's quoted string, quotes included) is this one's.
    fn is(self, opaque: &[u8]) -> bool {
        let [b'"', hex @ .., b'"'] = opaque else {
            return false;
        };
        hex.len() == 16
            && hex.iter().enumerate().all(|(i, &h)| {
                let nibble = (self.0 >> (60 - 4 * i)) & 0xf;
                HEX.get(nibble as usize) == Some(&h)
            })
    }
}

impl ETag {
    /// The tag as written, as bytes (what [`Display`](fmt::Display) writes).
    pub fn to_bytes(self) -> [u8; ETAG_LEN] {
        let mut out = [b'"'; ETAG_LEN];
        for (i, d) in out.iter_mut().skip(1).take(16).enumerate() {
            *d = HEX[((self.0 >> (60 - 4 * i)) & 0xf) as usize];
        }
        out
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Always ASCII.
        f.write_str(core::str::from_utf8(&self.to_bytes()).map_err(|_| fmt::Error)?)
    }
}

/// An entity tag of a list: whether it is weak, and its opaque part (quotes included).
type Tag<'a> = (bool, &'a [u8]);

/// The first entity tag of a list, and the rest of the list after its separator; `None`
/// if malformed.
fn next_tag(list: &[u8]) -> Option<(Tag<'_>, &[u8])> {
    let (weak, rest) = match list {
        [b'W', b'/', rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let [b'"', inner @ ..] = rest else {
        return None;
    };
    let close = inner.iter().position(|&b| b == b'"')?;
    // etagc: %x21 / %x23-7E / obs-text.
    if !inner
        .get(..close)?
        .iter()
        .all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
    {
        return None;
    }
    let opaque = rest.get(..close + 2)?;
    let after = trim_ows(rest.get(close + 2..)?);
    let after = match after {
        [] => after,
        [b',', more @ ..] => more,
        _ => return None,
    };
    Some(((weak, opaque), after))
}

/// Whether an `If-None-Match` value names `tag`: `*`, or a list holding it (weak
/// comparison: `W/` is ignored). Empty elements are skipped; a malformed list matches
/// nothing.
pub fn etag_list_matches(value: &[u8], tag: ETag) -> bool {
    let mut rest = trim_ows(value);
    if rest == b"*" {
        return true;
    }
    let mut found = false;
    loop {
        rest = trim_ows(rest);
        match rest {
            [] => return found,
            [b',', more @ ..] => rest = more,
            _ => match next_tag(rest) {
                Some(((_, opaque), more)) => {
                    found |= tag.is(opaque);
                    rest = more;
                }
                None => return false,
            },
        }
    }
}

/// Whether an `If-Range` value holds for `info`: a strong tag equal to its [`ETag`], or
/// an HTTP-date equal to its `Last-Modified` (RFC 9110 §13.1.5).
pub fn if_range_holds(value: &[u8], info: &ObjectInfo) -> bool {
    match next_tag(trim_ows(value)) {
        Some(((false, opaque), [])) => ETag::of(info).is(opaque),
        Some(_) => false,
        None => info
            .modified
            .is_some_and(|m| HttpDate::parse(value) == Some(m)),
    }
}

/// Whether `req`'s preconditions make the answer for `info` a 304: an `If-None-Match`
/// naming its tag, or (only without `If-None-Match`) an `If-Modified-Since` no earlier
/// than its modification time.
pub fn not_modified(req: &Request<'_>, info: &ObjectInfo) -> bool {
    if !req.if_none_match.is_empty() {
        let tag = ETag::of(info);
        return req.if_none_match.iter().any(|v| etag_list_matches(v, tag));
    }
    matches!(
        (req.if_modified_since, info.modified),
        (Some(since), Some(modified)) if modified <= since
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::http::parse_request;
    use alloc::string::ToString;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    const INFO: ObjectInfo = ObjectInfo {
        id: 1,
        len: 10,
        version: 0xabc,
        modified: Some(784_111_777),
        content_type: "text/plain",
    };
    const TAG: &str = "\"0000000000000abc\"";

    fn cond(headers: &str) -> bool {
        let bytes = ["GET / HTTP/1.1\r\nHost: h\r\n", headers, "\r\n"].concat();
        not_modified(&parse_request(bytes.as_bytes()).unwrap().0, &INFO)
    }

    #[test]
    fn tags() {
        assert_eq!(ETag::of(&INFO).to_string(), TAG);
        assert_eq!(ETag(u64::MAX).to_string().len(), ETAG_LEN);
        assert_eq!(ETag(0).to_string(), "\"0000000000000000\"");
        assert_eq!(
            ETag(0x0123_4567_89ab_cdef).to_string(),
            "\"0123456789abcdef\""
        );
        for (list, matches) in [
            (TAG.to_string(), true),
            (["W/", TAG].concat(), true),
            (["\"a\",", TAG].concat(), true),
            ([" \"a\" , ,W/", TAG, " ,"].concat(), true),
            ("*".to_string(), true),
            (" * ".to_string(), true),
            ("\"0000000000000ABC\"".to_string(), false),
            ("\"abc\"".to_string(), false),
            ("0000000000000abc".to_string(), false),
            ([TAG, " x"].concat(), false),
            (["\"a,b\", ", TAG].concat(), true),
            (["\"a", TAG].concat(), false),
            ("".to_string(), false),
            ("*, \"x\"".to_string(), false),
        ] {
            assert_eq!(
                etag_list_matches(list.as_bytes(), ETag::of(&INFO)),
                matches,
                "{list}"
            );
        }
    }

    /// The precedence matrix of RFC 9110 §13.2.2 for GET.
    #[test]
    fn conditional_matrix() {
        let m = "Sun, 06 Nov 1994 08:49:37 GMT";
        let later = "Sun, 06 Nov 1994 08:49:38 GMT";
        let earlier = "Sun, 06 Nov 1994 08:49:36 GMT";
        let inm = |v: &str| ["If-None-Match: ", v, "\r\n"].concat();
        let ims = |v: &str| ["If-Modified-Since: ", v, "\r\n"].concat();
        for (headers, want) in [
            (String::new(), false),
            (inm(TAG), true),
            (inm("\"other\""), false),
            (inm("*"), true),
            // Two lines are one list.
            ([inm("\"other\""), inm(TAG)].concat(), true),
            (ims(m), true),
            (ims(later), true),
            (ims(earlier), false),
            (ims("yesterday"), false),
            // Repeated: ignored.
            ([ims(m), ims(m)].concat(), false),
            // If-None-Match wins over If-Modified-Since, either way.
            ([inm("\"other\""), ims(later)].concat(), false),
            ([inm(TAG), ims(earlier)].concat(), true),
            ([ims(later), inm("\"other\"")].concat(), false),
            // A malformed If-None-Match still takes precedence (and matches nothing).
            ([inm("garbage"), ims(later)].concat(), false),
        ] {
            assert_eq!(cond(&headers), want, "{headers:?}");
        }
        // Without a modification time, If-Modified-Since never holds.
        let mut unknown = INFO;
        unknown.modified = None;
        let bytes = ["GET / HTTP/1.1\r\nHost: h\r\n", &ims(later), "\r\n"].concat();
        assert!(!not_modified(
            &parse_request(bytes.as_bytes()).unwrap().0,
            &unknown
        ));
    }

    use alloc::string::String;

    #[test]
    fn if_range() {
        assert!(if_range_holds(TAG.as_bytes(), &INFO));
        assert!(!if_range_holds(["W/", TAG].concat().as_bytes(), &INFO));
        assert!(!if_range_holds(b"\"other\"", &INFO));
        assert!(if_range_holds(b"Sun, 06 Nov 1994 08:49:37 GMT", &INFO));
        assert!(!if_range_holds(b"Sun, 06 Nov 1994 08:49:38 GMT", &INFO));
        assert!(!if_range_holds(b"", &INFO));
        assert!(!if_range_holds(b"nonsense", &INFO));
    }

    proptest! {
        /// Any bytes as a tag list: no panic; a list that contains our tag as a whole
        /// element, surrounded by anything well formed, matches.
        #[test]
        fn lists_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64), version: u64) {
            let tag = ETag(version);
            let _ = etag_list_matches(&bytes, tag);
            let info = ObjectInfo { version, ..INFO };
            let _ = if_range_holds(&bytes, &info);
            let written = tag.to_string();
            let list: Vec<u8> = [&b"\"x\", W/"[..], written.as_bytes(), b" , \"y\""].concat();
            prop_assert!(etag_list_matches(&list, tag));
            prop_assert!(etag_list_matches(written.as_bytes(), tag));
            prop_assert!(!etag_list_matches(written.as_bytes(), ETag(version ^ 1)));
        }
    }
}
