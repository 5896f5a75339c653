//! The TCP half of a run: `concurrency` tasks, a connection per request or, with
//! `keepalive`, one per task (see the module docs of [`load`](super)).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::timeout_at;

use super::{Budget, LoadConfig, Report, cpu_seconds, request_bytes};

/// Reads `stream` to end of file into `buf` (reused), returning the bytes read.
async fn read_to_end(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<u64> {
    let mut total = 0;
    loop {
        let n = stream.read(buf).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// One request on a new connection with `Connection: close`, read to end of file.
async fn fetch_close(server: SocketAddr, request: &[u8], buf: &mut [u8]) -> io::Result<u64> {
    let mut stream = TcpStream::connect(server).await?;
    stream.set_nodelay(true)?;
    stream.write_all(request).await?;
    read_to_end(&mut stream, buf).await
}

/// The lengths of one `Connection: close` response and of one keep-alive response, learnt
/// without parsing (see the module docs).
async fn probe(server: SocketAddr, path: &str) -> anyhow::Result<(u64, u64)> {
    let mut buf = vec![0u8; 1 << 18];
    let close = request_bytes(path, true);
    let alone = fetch_close(server, &close, &mut buf).await?;
    let mut both = request_bytes(path, false);
    both.extend_from_slice(&close);
    let pair = fetch_close(server, &both, &mut buf).await?;
    let keepalive = pair
        .checked_sub(alone)
        .filter(|&k| k > 0)
        .context("the server closed a keep-alive connection after one response")?;
    Ok((alone, keepalive))
}

/// The TCP half: see the module docs.
pub async fn run_tcp(cfg: &LoadConfig, server: SocketAddr) -> anyhow::Result<Report> {
    let (close_len, keepalive_len) = probe(server, &cfg.path)
        .await
        .context("probing the response length")?;
    let expected = if cfg.keepalive {
        keepalive_len
    } else {
        close_len
    };
    let request = Arc::new(request_bytes(&cfg.path, !cfg.keepalive));
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let budget = Arc::new(Budget::new(cfg, start));
    let mut tasks = JoinSet::new();
    for _ in 0..cfg.concurrency {
        let (budget, request, stall, keepalive) =
            (budget.clone(), request.clone(), cfg.stall, cfg.keepalive);
        tasks.spawn(async move {
            let mut part = Report::default();
            let mut buf = vec![0u8; 1 << 16];
            let mut conn: Option<TcpStream> = None;
            while budget.claim() {
                let deadline = (Instant::now() + stall).min(budget.end);
                let one = async {
                    if !keepalive {
                        return fetch_close(server, &request, &mut buf).await;
                    }
                    let stream = match conn.as_mut() {
                        Some(s) => s,
                        None => {
                            let s = TcpStream::connect(server).await?;
                            s.set_nodelay(true)?;
                            conn.insert(s)
                        }
                    };
                    stream.write_all(&request).await?;
                    let mut got = 0;
                    while got < expected {
                        let want = usize::try_from(expected - got)
                            .unwrap_or(usize::MAX)
                            .min(buf.len());
                        let n = stream.read(&mut buf[..want]).await?;
                        if n == 0 {
                            break;
                        }
                        got += n as u64;
                    }
                    Ok(got)
                };
                match timeout_at(deadline.into(), one).await {
                    Ok(Ok(n)) if n == expected => {
                        part.requests += 1;
                        part.bytes += n;
                    }
                    // The run ended with this request outstanding: not counted.
                    Err(_) if Instant::now() >= budget.end => break,
                    _ => {
                        part.errors += 1;
                        conn = None;
                    }
                }
            }
            part
        });
    }
    let mut report = Report {
        response_len: expected,
        ..Report::default()
    };
    while let Some(part) = tasks.join_next().await {
        let part = part.context("a load task panicked")?;
        report.requests += part.requests;
        report.bytes += part.bytes;
        report.errors += part.errors;
    }
    report.seconds = start.elapsed().as_secs_f64();
    report.cpu = (cpu_seconds() - cpu0) / report.seconds.max(1e-9);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::config;
    use crate::load::{Target, run};
    use tokio::net::TcpListener;

    /// How the test's TCP server misbehaves.
    #[derive(Clone, Copy, PartialEq)]
    enum Fault {
        None,
        /// Closes every connection after its first answer.
        OneAnswer,
        /// Cuts the answer by one byte on every odd-numbered connection.
        OddShort,
    }

    /// A TCP server answering every request on a connection with `answer`, closing after
    /// `Connection: close`, with `fault`.
    async fn tcp_server(answer: &'static [u8], fault: Fault) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for n in 0.. {
                let (mut s, _) = listener.accept().await.unwrap();
                let body = if fault == Fault::OddShort && n % 2 == 1 {
                    &answer[1..]
                } else {
                    answer
                };
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 1024];
                    loop {
                        let Ok(n) = s.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        got.extend_from_slice(&buf[..n]);
                        // The test's own framing: one request per blank line.
                        while let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                            let req: Vec<u8> = got.drain(..i + 4).collect();
                            let close = req.windows(6).any(|w| w == b"close\r");
                            if s.write_all(body).await.is_err()
                                || close
                                || fault == Fault::OneAnswer
                            {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";

    #[tokio::test]
    async fn tcp_close_and_keepalive_count_whole_responses() {
        let server = tcp_server(ANSWER, Fault::None).await;
        let r = run(&config(Target::Tcp(server), 4, 50)).await.unwrap();
        assert_eq!((r.requests, r.errors, r.response_len), (50, 0, 41), "{r:?}");
        assert_eq!(r.bytes, 50 * 41);
        let mut cfg = config(Target::Tcp(server), 4, 50);
        cfg.keepalive = true;
        let r = run(&cfg).await.unwrap();
        assert_eq!((r.requests, r.errors, r.response_len), (50, 0, 41), "{r:?}");
    }

    #[tokio::test]
    async fn tcp_responses_of_another_length_are_errors() {
        // Connection 0 (the probe's lone request) sets the length; connection 1 is the
        // probe's pair; then odd connections answer one byte short.
        let server = tcp_server(ANSWER, Fault::OddShort).await;
        let r = run(&config(Target::Tcp(server), 1, 20)).await.unwrap();
        assert_eq!(
            (r.requests, r.errors, r.response_len),
            (10, 10, 41),
            "{r:?}"
        );
    }

    #[tokio::test]
    async fn keepalive_needs_a_server_that_keeps_connections() {
        // The probe's pair of requests gets one answer: keep-alive cannot be framed.
        let server = tcp_server(ANSWER, Fault::OneAnswer).await;
        let mut cfg = config(Target::Tcp(server), 2, 10);
        cfg.keepalive = true;
        assert!(run(&cfg).await.is_err());
    }
}
