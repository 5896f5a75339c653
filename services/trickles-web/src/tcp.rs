//! The plain-TCP fallback (the paper's §2.6 from the server's side): the same directory
//! over HTTP/1.1 on the kernel's TCP, for clients that do not speak Trickles (a browser,
//! curl without the proxy).
//!
//! One task per connection: it reads request heads (`trickles::app::http::parse_request`),
//! answers each from the same [`FileStore`] with the same heads the Trickles application
//! writes (`Date` from the wall clock read here, `Last-Modified`, `ETag`, 304 for a
//! current copy, `index.html` and the 301 for directories: all decided by
//! `trickles::app::http::answer`), records it in the access log if there is one, and
//! keeps the connection open unless the client asked to close. Everything HTTP is the
//! core's; this module moves bytes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use trickles::app::http::{self, AccessRecord, Answer, Body, HttpError, MAX_HEAD, Store};

use crate::access::AccessLog;
use crate::store::FileStore;

/// Bytes read from a file per write to the socket.
const CHUNK: usize = 256 * 1024;

/// A connection idle this long between requests is closed.
const IDLE: Duration = Duration::from_secs(60);

/// Counters of the fallback, shared with the metrics.
#[derive(Debug, Default)]
pub struct TcpStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Requests answered.
    pub requests: AtomicU64,
    /// Requests answered 4xx.
    pub errors: AtomicU64,
    /// Requests answered 304.
    pub not_modified: AtomicU64,
    /// Body bytes sent.
    pub body_bytes: AtomicU64,
}

/// Serves `store` on `listener` until `shutdown` completes, recording each request in
/// `log` if given; connections in progress are then aborted.
pub async fn serve(
    listener: TcpListener,
    store: FileStore,
    stats: Arc<TcpStats>,
    log: Option<AccessLog>,
    shutdown: impl Future<Output = ()>,
) {
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let (store, stats, log) = (store.clone(), stats.clone(), log.clone());
                    stats.connections.fetch_add(1, Ordering::Relaxed);
                    stats.open.fetch_add(1, Ordering::Relaxed);
                    tasks.spawn(async move {
                        let conn = Conn { store: &store, stats: &stats, log: log.as_ref(), peer };
                        if let Err(e) = connection(stream, conn).await {
                            tracing::debug!(%peer, "tcp connection: {e}");
                        }
                        stats.open.fetch_sub(1, Ordering::Relaxed);
                    });
                }
                Err(e) => {
                    tracing::warn!("tcp accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    tasks.shutdown().await;
}

/// What one connection's task works with.
#[derive(Clone, Copy)]
struct Conn<'a> {
    store: &'a FileStore,
    stats: &'a TcpStats,
    log: Option<&'a AccessLog>,
    peer: SocketAddr,
}

/// Seconds since the Unix epoch now (the `Date` of an answer, the time of its log line).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One connection's requests, in order.
async fn connection(mut stream: TcpStream, conn: Conn<'_>) -> std::io::Result<()> {
    let Conn {
        store,
        stats,
        log,
        peer,
    } = conn;
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(2048);
    // Grows to what the largest answer needs (a small object's head and body, or one
    // CHUNK of a large one), not CHUNK up front for every connection.
    let mut out = Vec::new();
    loop {
        // Read until a whole head is buffered.
        let (answer, close, used) = loop {
            match http::parse_request(&buf) {
                Ok((req, used)) => break (http::answer(store, &req), req.close, used),
                Err(HttpError::Incomplete) if buf.len() < MAX_HEAD => {}
                Err(e) => break (Answer::error(e.status()), true, buf.len()),
            }
            let mut chunk = [0u8; 4096];
            let n = match tokio::time::timeout(IDLE, stream.read(&mut chunk)).await {
                Ok(r) => r?,
                Err(_) => return Ok(()),
            };
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let now = unix_now();
        let answer = answer.at(Some(now));
        let mut logged = Logged(log.map(|log| {
            let head = buf.get(..used).unwrap_or(&buf);
            (
                log,
                AccessRecord::new(peer.ip(), now, head, answer.status, 0),
            )
        }));
        buf.drain(..used);
        stats.requests.fetch_add(1, Ordering::Relaxed);
        match answer.status.code() {
            304 => _ = stats.not_modified.fetch_add(1, Ordering::Relaxed),
            400.. => _ = stats.errors.fetch_add(1, Ordering::Relaxed),
            _ => {}
        }
        out.clear();
        let info = store.info(answer.id).filter(|_| answer.id != 0);
        http::write_head(&answer, info.as_ref(), &mut out);
        if !answer.head_only {
            match answer.body {
                Body::Fixed(b) => out.extend_from_slice(b),
                Body::Object { start, end } => {
                    let mut at = start;
                    while at < end {
                        let want = usize::try_from(end - at).unwrap_or(CHUNK).min(CHUNK);
                        if !store.read(answer.id, at, want, &mut out) || out.is_empty() {
                            // The file vanished or shrank: the length promised cannot be
                            // kept, so the connection ends here.
                            return Ok(());
                        }
                        stream.write_all(&out).await?;
                        at += want as u64;
                        stats.body_bytes.fetch_add(want as u64, Ordering::Relaxed);
                        logged.sent(want as u64);
                        out.clear();
                    }
                }
            }
        }
        stream.write_all(&out).await?;
        if let (false, Body::Fixed(b)) = (answer.head_only, answer.body) {
            logged.sent(b.len() as u64);
        }
        drop(logged);
        if close {
            stream.shutdown().await?;
            return Ok(());
        }
    }
}

/// A request's access-log record, written when dropped: once its answer is sent, or when
/// the connection ends during it (with the body bytes sent by then, as nginx counts).
struct Logged<'a>(Option<(&'a AccessLog, AccessRecord)>);

impl Logged<'_> {
    /// `n` more body bytes were sent.
    fn sent(&mut self, n: u64) {
        if let Some((_, r)) = &mut self.0 {
            r.bytes += n;
        }
    }
}

impl Drop for Logged<'_> {
    fn drop(&mut self) {
        if let Some((log, r)) = &self.0 {
            log.write(r);
        }
    }
}

/// Binds the fallback's listener.
///
/// # Errors
///
/// The address is in use or not local.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("--tcp {addr}: {e}"))
}
