//! Arbitrary bytes as an HTTP/1.1 request head for `trickles::app::http`.
//!
//! The input goes to `parse_request` as it is. When it parses, the request is answered out
//! of a `MemStore` holding a few fixed objects, a directory (`/d`, with an `index.html`)
//! and mostly one at the request's own path (its length and modification time taken
//! from the input, empty objects included), so 200, 206, 304, 301 and 416 come up as often as
//! 404; the answer is dated (from the input too), the head is written and the body read.
//! The same input also goes to the HTTP-date parser, the entity-tag list matcher and an
//! access-log record.
//!
//! Asserts: no panic; on `Ok`, the bytes consumed are at most the input's and at most
//! `MAX_HEAD`, end in the head's CRLFCRLF and hold no earlier one, and parse alone to the
//! same request; the path starts with `/` and has no `..` segment and no NUL; the head is
//! a status line, ends in its only CRLFCRLF, and its `Content-Length` is the answer's body
//! length, which is what the store reads for the body (a range within the object, nonempty
//! for 206); a 304 has no `Content-Length`, no body and the object's `ETag`; a 301 has a
//! `Location` of printable ASCII ending in the directory's `/`; a dated answer's `Date`
//! parses back to its date. A date that parses writes and parses back to itself. An
//! access-log line is one line with its request line inside its two quotes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trickles::app::http::{
    AccessRecord, Answer, Body, ETag, HttpDate, MAX_HEAD, MemStore, Status, Store, answer,
    etag_list_matches, parse_request, write_head,
};

fuzz_target!(|input: &[u8]| {
    if let Some(t) = HttpDate::parse(input) {
        let written = HttpDate(t).to_string();
        assert_eq!(written.len(), 29);
        // A leap second (:60) is the next minute's first and writes as that; dates are
        // written up to the end of 9999.
        if t <= 253_402_300_799 {
            assert_eq!(HttpDate::parse(written.as_bytes()), Some(t));
        }
    }
    let _ = etag_list_matches(input, ETag(0x1234));
    let line =
        AccessRecord::new([127, 0, 0, 1].into(), 0, input, Status::BadRequest, 0).to_string();
    assert!(line.bytes().all(|b| (b' '..=b'~').contains(&b)), "{line}");
    assert_eq!(line.matches('"').count(), 2, "{line}");

    let Ok((req, consumed)) = parse_request(input) else {
        return;
    };
    assert!(consumed <= input.len() && consumed <= MAX_HEAD);
    let head = &input[..consumed];
    assert!(head.ends_with(b"\r\n\r\n"));
    assert_eq!(
        head.windows(4).position(|w| w == b"\r\n\r\n"),
        Some(consumed - 4)
    );
    assert_eq!(parse_request(head), Ok((req.clone(), consumed)));
    assert!(req.path.starts_with('/'), "{:?}", req.path);
    assert!(!req.path.split('/').any(|s| s == ".."), "{:?}", req.path);
    assert!(!req.path.contains('\0'));

    let mut store = MemStore::new();
    store.insert("/", b"root".to_vec());
    store.insert("/index.html", b"<p>index</p>\n".to_vec());
    store.insert("/empty", Vec::new());
    store.insert("/d/index.html", b"<p>d</p>\n".to_vec());
    let hash = input
        .iter()
        .fold(0u64, |n, &b| n.wrapping_mul(31) ^ u64::from(b));
    let len = (hash % 3000) as usize;
    // Mostly an object at the request's own path; now and then none (404, or the 301 of
    // `/d`).
    if hash % 5 != 0 {
        store.insert(&req.path, (0..len).map(|i| i as u8).collect());
    }
    // Dated about the dates a request names (1994), or not at all.
    if hash % 4 != 0 {
        store.set_modified(&req.path, 784_111_777 + hash % 5 - 2);
    }

    let a = answer(&store, &req).at(Some(784_111_777 + hash % 7));
    check_answer(&store, &a);
    if a.status == Status::MovedPermanently {
        assert!(store.is_directory(&req.path) && !req.path.ends_with('/'));
    }
    // The errors a parse failure would get write sound heads too.
    for status in [Status::BadRequest, Status::MethodNotAllowed] {
        check_answer(&store, &Answer::error(status));
    }
});

fn check_answer(store: &MemStore, a: &Answer) {
    let info = store.info(a.id);
    let mut out = b"prefix".to_vec();
    let n = write_head(a, info.as_ref(), &mut out);
    let head = &out[6..];
    assert_eq!(n, head.len());
    assert!(head.starts_with(b"HTTP/1.1 "));
    assert!(head.ends_with(b"\r\n\r\n"));
    assert_eq!(head.windows(4).position(|w| w == b"\r\n\r\n"), Some(n - 4));
    let text = std::str::from_utf8(head).expect("heads are ASCII");
    assert!(
        head.iter()
            .all(|&b| b == b'\r' || b == b'\n' || (b' '..=b'~').contains(&b))
    );
    let field = |name: &str| text.split("\r\n").find_map(|l| l.strip_prefix(name));
    if let Some(date) = a.date {
        let written = field("Date: ").expect("a Date");
        assert_eq!(HttpDate::parse(written.as_bytes()), Some(date));
    }
    if a.status == Status::NotModified {
        assert!(field("Content-Length: ").is_none() && field("Content-Type: ").is_none());
        assert_eq!(a.body_len(), 0);
        let info = info.expect("a 304 is about an object");
        assert_eq!(field("ETag: "), Some(&*ETag::of(&info).to_string()));
        return;
    }
    if a.status == Status::MovedPermanently {
        let location = field("Location: ").expect("a Location");
        assert_eq!(Some(location), a.location.as_deref());
        assert!(location.starts_with('/'));
        let path = location.split('?').next().unwrap_or_default();
        assert!(path.ends_with('/'));
    }
    let content_length: u64 = field("Content-Length: ")
        .expect("a Content-Length")
        .parse()
        .expect("a number");
    assert_eq!(content_length, a.body_len());
    match a.body {
        Body::Object { start, end } => {
            assert!(a.status.serves_object());
            let info = info.expect("the answered object exists");
            assert!(start <= end && end <= info.len);
            assert!(a.status == Status::Ok || start < end);
            let mut body = Vec::new();
            assert!(store.read(a.id, start, (end - start) as usize, &mut body));
            assert_eq!(body.len() as u64, content_length);
        }
        Body::Fixed(text) => {
            assert!(!a.status.serves_object());
            assert_eq!(text, a.status.error_body());
        }
    }
}
