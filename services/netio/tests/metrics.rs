#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! The metrics endpoint over real loopback sockets, with a fake core answering scrapes.

use std::net::SocketAddr;
use std::time::Duration;

use netio::metrics::{self, MAX_REQUEST_BYTES, Sample, ScrapeRequests, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::timeout;

const WITHIN: Duration = Duration::from_secs(5);

/// A core task that answers every scrape with a counter of the scrapes so far.
fn fake_core(mut scrapes: ScrapeRequests) -> JoinHandle<u32> {
    tokio::spawn(async move {
        let mut answered = 0u32;
        while let Some(responder) = scrapes.next().await {
            answered += 1;
            responder.respond(vec![
                Sample::counter(
                    "scrapes",
                    "Scrapes answered by the fake core.",
                    f64::from(answered),
                )
                .with_label("core", "fake"),
                Sample::gauge("queue_depth", "A gauge.", 3.0),
            ]);
        }
        answered
    })
}

struct Server {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    server: JoinHandle<anyhow::Result<()>>,
}

async fn start(scrapes_to_core: bool) -> (Server, Option<JoinHandle<u32>>) {
    let listener = TcpListener::bind(metrics::bind_addr(None)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    assert!(addr.ip().is_loopback());
    let (handle, scrapes) = metrics::channel();
    let core = if scrapes_to_core {
        Some(fake_core(scrapes))
    } else {
        drop(scrapes); // a core that has stopped listening
        None
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, handle, async move {
        let _ = stopped.await;
    }));
    (Server { addr, stop, server }, core)
}

/// Sends `request` raw, then reads until the server closes the connection.
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    timeout(WITHIN, stream.read_to_end(&mut response))
        .await
        .expect("the server did not close the connection")
        .unwrap();
    String::from_utf8(response).unwrap()
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let (head, _) = response.split_once("\r\n\r\n")?;
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn body(response: &str) -> &str {
    response.split_once("\r\n\r\n").unwrap().1
}

/// The value of the `scrapes` counter in an exposition.
fn scrapes_value(response: &str) -> f64 {
    let line = body(response)
        .lines()
        .find(|l| l.starts_with("scrapes_total{"))
        .unwrap_or_else(|| panic!("no scrapes_total in {response:?}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn scrapes_render_fresh_values_and_other_requests_are_refused() {
    let (server, core) = start(true).await;
    let get = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

    let first = exchange(server.addr, get).await;
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
    assert_eq!(
        header(&first, "content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(
        header(&first, "content-length")
            .unwrap()
            .parse::<usize>()
            .unwrap(),
        body(&first).len()
    );
    // The classic format: the counter typed by the name its samples carry, no `# EOF`.
    assert!(
        body(&first).contains("# TYPE scrapes_total counter\nscrapes_total{core=\"fake\"} 1\n"),
        "{first}"
    );
    assert!(
        body(&first).contains("# TYPE queue_depth gauge\nqueue_depth 3\n"),
        "{first}"
    );
    assert!(!body(&first).contains("# EOF"), "{first}");

    // Garbage of all kinds: answered with an error and closed, and the server lives on.
    let garbage = exchange(server.addr, &[0xff, 0x00, 0xfe, b'\r', b'\n', b'\r', b'\n']).await;
    assert!(garbage.starts_with("HTTP/1.1 400 "), "{garbage}");
    let too_long = exchange(server.addr, &vec![b'A'; MAX_REQUEST_BYTES]).await;
    assert!(too_long.starts_with("HTTP/1.1 431 "), "{too_long}");
    let mut half = TcpStream::connect(server.addr).await.unwrap();
    half.write_all(b"GET /metr").await.unwrap();
    half.shutdown().await.unwrap(); // the head never ends
    let mut cut = String::new();
    timeout(WITHIN, half.read_to_string(&mut cut))
        .await
        .unwrap()
        .unwrap();
    assert!(cut.starts_with("HTTP/1.1 400 "), "{cut}");
    drop(TcpStream::connect(server.addr).await.unwrap()); // connect and leave

    let not_found = exchange(server.addr, b"GET /other HTTP/1.1\r\n\r\n").await;
    assert!(
        not_found.starts_with("HTTP/1.1 404 Not Found\r\n"),
        "{not_found}"
    );
    let post = exchange(server.addr, b"POST /metrics HTTP/1.1\r\n\r\n").await;
    assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
    assert_eq!(header(&post, "allow"), Some("GET, HEAD"));

    // Prometheus asks for OpenMetrics and gets it labelled so.
    let openmetrics = exchange(
        server.addr,
        b"GET /metrics?x=1 HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n",
    )
    .await;
    assert_eq!(
        header(&openmetrics, "content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(
        body(&openmetrics).contains("# TYPE scrapes counter\nscrapes_total{core=\"fake\"} 2.0\n"),
        "{openmetrics}"
    );
    assert!(body(&openmetrics).ends_with("# EOF\n"), "{openmetrics}");
    // The JSON view of a core without a status of its own: its samples.
    let status = exchange(server.addr, b"GET /api/status HTTP/1.1\r\n\r\n").await;
    assert_eq!(header(&status, "content-type"), Some("application/json"));
    let json: serde_json::Value = serde_json::from_str(body(&status)).unwrap();
    assert_eq!(json["samples"][0]["name"], "scrapes_total", "{status}");
    assert_eq!(json["samples"][0]["type"], "counter");
    assert_eq!(json["samples"][0]["labels"]["core"], "fake");
    assert_eq!(json["samples"][0]["value"], 3.0);
    // HEAD: the headers only.
    let head = exchange(server.addr, b"HEAD /metrics HTTP/1.0\n\n").await;
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n") && body(&head).is_empty(),
        "{head}"
    );

    let second = exchange(server.addr, get).await;
    assert!(second.starts_with("HTTP/1.1 200 OK\r\n"), "{second}");
    assert_eq!(scrapes_value(&first), 1.0);
    assert_eq!(
        scrapes_value(&second),
        5.0,
        "rendered at scrape time: 5th answer"
    );

    // Shutdown stops the server, which drops its handle, which ends the core's stream.
    server.stop.send(()).unwrap();
    timeout(WITHIN, server.server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        TcpStream::connect(server.addr).await.is_err(),
        "still accepting after shutdown"
    );
    assert_eq!(timeout(WITHIN, core.unwrap()).await.unwrap().unwrap(), 5);
}

#[tokio::test]
async fn a_core_that_stopped_listening_gets_503() {
    let (server, _) = start(false).await;
    let response = exchange(server.addr, b"GET /metrics HTTP/1.1\r\n\r\n").await;
    assert!(response.starts_with("HTTP/1.1 503 "), "{response}");
    server.stop.send(()).unwrap();
    timeout(WITHIN, server.server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn try_next_sees_only_waiting_scrapes() {
    let (handle, mut scrapes) = metrics::channel();
    assert!(scrapes.try_next().is_none());
    let asking = tokio::spawn(async move { handle.scrape().await });
    let responder = timeout(WITHIN, async {
        loop {
            if let Some(r) = scrapes.try_next() {
                break r;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    responder.respond(vec![Sample::gauge("g", "h", 1.5)]);
    let snapshot = asking.await.unwrap().unwrap();
    assert_eq!(snapshot, vec![Sample::gauge("g", "h", 1.5)]);
    // The handle is gone: the stream ends.
    assert!(scrapes.next().await.is_none());
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_request_is_closed() {
    let (server, _core) = start(true).await;
    let started = std::time::Instant::now();
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n").await.unwrap(); // and never the blank line
    let mut response = Vec::new();
    timeout(
        metrics::CONNECTION_TIMEOUT * 2,
        slow.read_to_end(&mut response),
    )
    .await
    .expect("the server kept a stalled connection open")
    .unwrap();
    assert!(response.is_empty(), "closed without an answer");
    assert!(started.elapsed() >= metrics::CONNECTION_TIMEOUT - Duration::from_millis(100));
    server.stop.send(()).unwrap();
    timeout(WITHIN, server.server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
