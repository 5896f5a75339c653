//! The tiny HTTP/1.1 server: one request per connection, the answers the module docs list.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::render::{Format, render};
use super::{
    CONNECTION_TIMEOUT, MAX_CONNECTIONS, MAX_REQUEST_BYTES, METRICS_PATH, MetricsHandle,
    STATUS_PATH,
};

/// Serves `GET /metrics` and `GET /api/status` on `listener` until `shutdown` completes,
/// asking the core through `handle` on every request.
///
/// One task per connection, at most [`MAX_CONNECTIONS`] at once, each bounded by
/// [`MAX_REQUEST_BYTES`] and [`CONNECTION_TIMEOUT`] (see the module docs for the answers).
/// When `shutdown` completes the server stops accepting, aborts the connections in
/// progress and returns `Ok`. Accept errors (such as running out of file descriptors) are
/// logged and retried after a pause, not returned.
///
/// # Errors
///
/// Only if the listener has no local address.
pub async fn serve(
    listener: TcpListener,
    handle: MetricsHandle,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let local = listener
        .local_addr()
        .context("metrics listener has no address")?;
    tracing::debug!(%local, "metrics endpoint listening");
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if connections.len() >= MAX_CONNECTIONS {
                        tracing::debug!(%peer, "metrics: too many connections, closing");
                        continue;
                    }
                    let handle = handle.clone();
                    connections.spawn(async move {
                        let served = tokio::time::timeout(CONNECTION_TIMEOUT, answer(stream, peer, &handle));
                        match served.await {
                            Ok(Ok(())) => {}
                            Ok(Err(e)) => tracing::debug!(%peer, error = %e, "metrics connection failed"),
                            Err(_) => tracing::debug!(%peer, "metrics connection timed out"),
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(done) = connections.join_next(), if !connections.is_empty() => {
                if let Err(e) = done {
                    tracing::error!(error = %e, "metrics connection task failed");
                }
            }
        }
    }
    connections.shutdown().await;
    Ok(())
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `GET`/`HEAD /metrics`; `head` is true for `HEAD`; the format `Accept` chose.
    Metrics {
        head: bool,
        format: Format,
    },
    /// `GET`/`HEAD /api/status`.
    Status {
        head: bool,
    },
    NotFound,
    MethodNotAllowed,
    Malformed,
}

/// Serves one connection: reads the head, answers once, closes.
async fn answer(
    mut stream: TcpStream,
    peer: SocketAddr,
    handle: &MetricsHandle,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; MAX_REQUEST_BYTES];
    let mut len = 0;
    let request = loop {
        if let Some(head) = buf.get(..len).and_then(head_of) {
            break parse(head);
        }
        let Some(room) = buf.get_mut(len..).filter(|room| !room.is_empty()) else {
            let response = status(431, "Request Header Fields Too Large");
            return finish(stream, &response).await;
        };
        let n = stream.read(room).await?;
        if n == 0 {
            if len == 0 {
                return Ok(()); // connected and closed without a byte: nothing to answer
            }
            break Request::Malformed; // the head never ended
        }
        len += n;
    };
    let response = match request {
        Request::Metrics { head, format } => {
            match handle
                .scrape()
                .await
                .and_then(|snapshot| render(&snapshot, format))
            {
                Ok(body) => ok(format.content_type(), &body, head),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics scrape failed");
                    status(503, "Service Unavailable")
                }
            }
        }
        Request::Status { .. } if !loopback(peer.ip()) => status(403, "Forbidden"),
        Request::Status { head } => match handle.status().await {
            Ok(json) => ok("application/json", &format!("{json}\n"), head),
            Err(e) => {
                tracing::warn!(error = %e, "status request failed");
                status(503, "Service Unavailable")
            }
        },
        Request::NotFound => status(404, "Not Found"),
        Request::MethodNotAllowed => status(405, "Method Not Allowed"),
        Request::Malformed => status(400, "Bad Request"),
    };
    finish(stream, &response).await
}

/// Whether `peer` is this machine's loopback, the only peer the JSON view answers: an
/// IPv4 or IPv6 loopback address, or an IPv4 one mapped into IPv6 (a dual-stack listener
/// sees 127.0.0.1 as `::ffff:127.0.0.1`).
fn loopback(peer: std::net::IpAddr) -> bool {
    match peer {
        std::net::IpAddr::V4(a) => a.is_loopback(),
        std::net::IpAddr::V6(a) => {
            a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// A 200 answer with `body` (left out for `HEAD`, its length still given).
fn ok(content_type: &str, body: &str, head: bool) -> String {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head {
        out.push_str(body);
    }
    out
}

/// Writes the whole response and closes our side.
async fn finish(mut stream: TcpStream, response: &str) -> std::io::Result<()> {
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// A bodyless answer with a one-line text explanation.
fn status(code: u16, reason: &str) -> String {
    let body = format!("{code} {reason}\n");
    let allow = if code == 405 {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n{allow}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The request head (without the blank line) once `buf` holds all of it.
fn head_of(buf: &[u8]) -> Option<&[u8]> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = buf.windows(2).position(|w| w == b"\n\n");
    match (crlf, lf) {
        (Some(a), Some(b)) => buf.get(..a.min(b)),
        (Some(end), None) | (None, Some(end)) => buf.get(..end),
        (None, None) => None,
    }
}

/// Reads the request line and the `Accept` header of a complete head.
fn parse(head: &[u8]) -> Request {
    let Ok(head) = std::str::from_utf8(head) else {
        return Request::Malformed;
    };
    let mut lines = head.lines();
    let mut parts = lines.next().unwrap_or("").split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Request::Malformed;
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Request::Malformed;
    }
    let path = target.split('?').next().unwrap_or(target);
    if path != METRICS_PATH && path != STATUS_PATH {
        return Request::NotFound;
    }
    let head = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Request::MethodNotAllowed,
    };
    if path == STATUS_PATH {
        return Request::Status { head };
    }
    let accept = lines.find_map(|line| {
        line.split_once(':')
            .filter(|(name, _)| name.trim().eq_ignore_ascii_case("accept"))
            .map(|(_, value)| value.trim())
    });
    Request::Metrics {
        head,
        format: Format::negotiate(accept),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_peers_see_the_json_view() {
        for (peer, ok) in [
            ("127.0.0.1", true),
            ("127.9.9.9", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("10.0.0.1", false),
            ("192.168.1.20", false),
            ("::ffff:10.0.0.1", false),
            ("fd00::1", false),
        ] {
            assert_eq!(loopback(peer.parse().unwrap()), ok, "{peer}");
        }
    }

    #[test]
    fn parses_request_heads() {
        let get = |head: &str| parse(head.as_bytes());
        assert_eq!(
            get("GET /metrics HTTP/1.1\r\nHost: x"),
            Request::Metrics {
                head: false,
                format: Format::Prometheus
            }
        );
        assert_eq!(
            get("HEAD /metrics?x=1 HTTP/1.0\r\naccept: application/openmetrics-text;version=1.0.0"),
            Request::Metrics {
                head: true,
                format: Format::OpenMetrics
            }
        );
        assert_eq!(
            get("GET /api/status HTTP/1.1\r\nAccept: application/openmetrics-text"),
            Request::Status { head: false }
        );
        assert_eq!(get("GET /other HTTP/1.1"), Request::NotFound);
        assert_eq!(get("POST /metrics HTTP/1.1"), Request::MethodNotAllowed);
        assert_eq!(get("PUT /api/status HTTP/1.1"), Request::MethodNotAllowed);
        assert_eq!(get("GET /metrics"), Request::Malformed);
        assert_eq!(get("GET /metrics HTTP/1.1 extra"), Request::Malformed);
        assert_eq!(get("GET metrics SPDY/3"), Request::Malformed);
        assert_eq!(get(""), Request::Malformed);
        assert_eq!(parse(&[0xff, 0xfe, b' ', b'/']), Request::Malformed);
    }

    #[test]
    fn finds_the_end_of_the_head() {
        assert_eq!(
            head_of(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"),
            Some(&b"GET / HTTP/1.1\r\nA: b"[..])
        );
        assert_eq!(head_of(b"GET / HTTP/1.1\n\n"), Some(&b"GET / HTTP/1.1"[..]));
        assert_eq!(head_of(b"GET / HTTP/1.1\r\n"), None);
    }
}
