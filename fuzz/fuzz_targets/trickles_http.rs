//! Arbitrary bytes as an HTTP/1.1 request head for `trickles::app::http`.
//!
//! The input goes to `parse_request` as it is. When it parses, the request is answered out
//! of a `MemStore` holding a few fixed objects and one at the request's own path (its
//! length taken from the input, empty objects included), so 200, 206 and 416 come up as
//! often as 404; the head is written and the body read.
//!
//! Asserts: no panic; on `Ok`, the bytes consumed are at most the input's and at most
//! `MAX_HEAD`, end in the head's CRLFCRLF and hold no earlier one, and parse alone to the
//! same request; the path starts with `/` and has no `..` segment and no NUL; the head is
//! a status line, ends in its only CRLFCRLF, and its `Content-Length` is the answer's body
//! length, which is what the store reads for the body (a range within the object, nonempty
//! for 206).
#![no_main]

use libfuzzer_sys::fuzz_target;
use trickles::app::http::{
    Answer, Body, MAX_HEAD, MemStore, Status, Store, answer, parse_request, write_head,
};

fuzz_target!(|input: &[u8]| {
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
    let len = input
        .iter()
        .fold(0usize, |n, &b| n.wrapping_mul(31) ^ usize::from(b))
        % 3000;
    store.insert(&req.path, (0..len).map(|i| i as u8).collect());

    let a = answer(&store, &req);
    check_answer(&store, &a);
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
    let content_length: u64 = text
        .split("\r\n")
        .find_map(|l| l.strip_prefix("Content-Length: "))
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
