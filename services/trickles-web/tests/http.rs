//! HTTP basics on both transports of one trickles-web process: `Date`, `Last-Modified`,
//! `ETag`, conditional GETs answered 304, `index.html` for `/dir/` and 301 for `/dir`,
//! and the access log in the Common Log Format. The TCP fallback is spoken to with a raw
//! `TcpStream`, Trickles with the core's client (`Demux`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Getter, TempDir, Web, path_str, split};
use trickles::app::http::{ClfDate, HttpDate};

const LIMIT: Duration = Duration::from_secs(20);

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// One request over a fresh TCP connection (closed by the server after it): the head and
/// the body.
fn tcp_exchange(addr: SocketAddr, request: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let (head, body) = split(&out);
    (head, body.to_vec())
}

/// The value of header `name` (any case) in `head`.
fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.split("\r\n").skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn status(head: &str) -> u16 {
    head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// One transport, as the checks below use it: a request head in, the response out.
trait Transport {
    fn name(&self) -> &'static str;
    fn exchange(&mut self, request: &str) -> (String, Vec<u8>);
}

struct Tcp(SocketAddr);

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn exchange(&mut self, request: &str) -> (String, Vec<u8>) {
        tcp_exchange(self.0, request)
    }
}

struct Trickles(Getter);

impl Transport for Trickles {
    fn name(&self) -> &'static str {
        "trickles"
    }

    fn exchange(&mut self, request: &str) -> (String, Vec<u8>) {
        let out = self.0.exchange(request.as_bytes(), LIMIT);
        let (head, body) = split(&out);
        (head, body.to_vec())
    }
}

/// `GET path` with the extra header lines `extra` (each ending in CRLF), the query
/// naming the transport `via` (so each transport's log lines are its own).
fn get(via: &str, path: &str, extra: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("GET {path}{sep}via={via} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{extra}\r\n")
}

/// What one transport must do; returns the requests made, as (request line, status,
/// body bytes) for the access log, and the page's ETag.
fn check(t: &mut dyn Transport, page: &[u8], mtime: u64) -> (Vec<(String, u16, u64)>, String) {
    let name = t.name();
    let mut made = Vec::new();
    let mut ask = |t: &mut dyn Transport, request: String| {
        let started = unix_now();
        let (head, body) = t.exchange(&request);
        let line = request.split("\r\n").next().unwrap().to_string();
        made.push((line, status(&head), body.len() as u64));
        // Every answer is dated now (within the clock's second and a loaded machine's
        // delay).
        let date = HttpDate::parse(header(&head, "date").expect("a Date").as_bytes())
            .expect("an HTTP-date");
        assert!(
            date + 1 >= started && date <= unix_now() + 1,
            "{name}: Date {date}, now {started}"
        );
        (head, body)
    };

    // The validators of a 200.
    let (head, body) = ask(t, get(name, "/page.txt", ""));
    assert_eq!((status(&head), &body[..]), (200, page), "{name}: {head}");
    let last_modified = header(&head, "last-modified").expect("Last-Modified");
    assert_eq!(HttpDate::parse(last_modified.as_bytes()), Some(mtime));
    let etag = header(&head, "etag").expect("an ETag").to_string();
    assert!(
        etag.len() > 2 && etag.starts_with('"') && etag.ends_with('"'),
        "{name}: strong ETag {etag}"
    );

    // Conditional GETs: the copy is current → 304, no body, the validators again.
    let since = HttpDate(mtime).to_string();
    for extra in [
        format!("If-None-Match: {etag}\r\n"),
        format!("If-None-Match: \"other\", W/{etag}\r\n"),
        format!("If-Modified-Since: {since}\r\n"),
        format!("If-Modified-Since: {}\r\n", HttpDate(mtime + 3600)),
    ] {
        let (head, body) = ask(t, get(name, "/page.txt", &extra));
        assert_eq!(status(&head), 304, "{name} {extra}: {head}");
        assert!(body.is_empty(), "{name} {extra}: a 304 has no body");
        assert_eq!(header(&head, "etag"), Some(&*etag));
        assert_eq!(header(&head, "last-modified"), Some(last_modified));
        assert_eq!(header(&head, "content-length"), None);
    }
    // Not current: the whole page. If-None-Match wins over If-Modified-Since.
    for extra in [
        format!("If-None-Match: \"other\"\r\nIf-Modified-Since: {since}\r\n"),
        format!("If-Modified-Since: {}\r\n", HttpDate(mtime - 1)),
    ] {
        let (head, body) = ask(t, get(name, "/page.txt", &extra));
        assert_eq!((status(&head), &body[..]), (200, page), "{name} {extra}");
    }

    // Directories: /sub/ is its index.html, /sub a redirect there, no listing.
    let (head, body) = ask(t, get(name, "/sub/", ""));
    assert_eq!(
        (status(&head), &body[..]),
        (200, &b"<p>sub</p>\n"[..]),
        "{name}"
    );
    assert_eq!(
        header(&head, "content-type"),
        Some("text/html; charset=utf-8")
    );
    let (head, _) = ask(t, get(name, "/sub?q=1", ""));
    assert_eq!(status(&head), 301, "{name}: {head}");
    let location = format!("/sub/?q=1&via={name}");
    assert_eq!(header(&head, "location"), Some(&*location));
    let (head, _) = ask(t, get(name, "/empty/", ""));
    assert_eq!(status(&head), 404, "{name}: a directory without index.html");
    (made, etag)
}

/// Parses one Common Log Format line without a regex: client, time, request line,
/// status, bytes.
fn parse_clf(line: &str) -> Option<(&str, &str, &str, u16, u64)> {
    let (client, rest) = line.split_once(" - - [")?;
    let (time, rest) = rest.split_once("] \"")?;
    let (request, rest) = rest.rsplit_once("\" ")?;
    let (status, bytes) = rest.split_once(' ')?;
    Some((
        client,
        time,
        request,
        status.parse().ok()?,
        bytes.parse().ok()?,
    ))
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn http_basics_on_both_transports_and_the_access_log() {
    let dir = TempDir::new("http");
    let page = dir.file("page.txt", 3000);
    std::fs::create_dir_all(dir.root().join("sub")).unwrap();
    std::fs::create_dir_all(dir.root().join("empty")).unwrap();
    std::fs::write(dir.root().join("sub/index.html"), b"<p>sub</p>\n").unwrap();
    let mtime = std::fs::metadata(dir.root().join("page.txt"))
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let log = dir.0.join("access.log");
    let keys = dir.0.join("keys");
    let started = unix_now();
    let web = Web::start(&[
        "--root",
        path_str(&dir.root()),
        "--keys",
        path_str(&keys),
        "--listen",
        "udp:127.0.0.1:0",
        "--tcp",
        "127.0.0.1:0",
        "--access-log",
        path_str(&log),
    ]);

    let (over_tcp, tcp_etag) = check(&mut Tcp(web.tcp.unwrap()), &page, mtime);
    let (over_trickles, trickles_etag) =
        check(&mut Trickles(Getter::new(web.udp.unwrap())), &page, mtime);
    assert_eq!(tcp_etag, trickles_etag, "one store, one core: one ETag");

    // Every request of both transports has its line (a SYN answered twice may log
    // twice: the Trickles server keeps no state to tell).
    let made: Vec<_> = over_tcp.iter().chain(&over_trickles).collect();
    let deadline = std::time::Instant::now() + LIMIT;
    while lines(&log).len() < made.len() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let ended = unix_now();
    let logged = lines(&log);
    let parsed: Vec<_> = logged
        .iter()
        .map(|l| parse_clf(l).unwrap_or_else(|| panic!("not CLF: {l}")))
        .collect();
    for (client, time, _, _, _) in &parsed {
        assert_eq!(*client, "127.0.0.1");
        assert!(
            (started..=ended + 1).any(|t| ClfDate(t).to_string() == *time),
            "time {time} not within the test"
        );
    }
    for (request, status, bytes) in made {
        assert!(
            parsed
                .iter()
                .any(|(_, _, r, s, b)| r == request && s == status && b == bytes),
            "no line for {request:?} {status} {bytes} in\n{}",
            logged.join("\n")
        );
    }
    assert!(web.stop(), "graceful exit");
}
