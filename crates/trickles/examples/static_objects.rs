//! A static object server on Trickles (§4, §7.1): the server keeps its objects and nothing
//! about any client.
//!
//! The client's request is a line `GET <name>\n`. A request line longer than one packet
//! is summarised in an *input continuation*: how many bytes were consumed and a running
//! 128-bit digest of the name so far (objects are indexed by the digest of their name), so
//! the server needs no buffer per client however long the line; a line longer than
//! `max_line` is refused. A complete line becomes an *output continuation*
//! (`valid_start..valid_end` = the object's bytes, app data = the name's digest) that every
//! response carries; the client asks for ranges of it and the server serves any range of
//! any object at any time, so losses cost nothing but the lost packets.
//!
//! Requests arrive in any order and some twice: [`absorb`] takes input only in stream
//! order, and everything the server does is a function of the request alone.
//!
//! ```text
//! cargo run --release -p trickles --features sim --example static_objects
//! ```

// Example harness: a failed run should abort loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use trickles::app::Application;
use trickles::app::{Absorbed, Minisocket, UcontKey, UserContinuation, absorb, bundle};
use trickles::server::{EventKind, Server};

/// The server: objects by name (and by the digest of their name), the user-continuation
/// key, and the longest request line it accepts.
pub struct StaticObjects {
    /// The application's key (replicas share it).
    pub key: UcontKey,
    /// Objects by name.
    pub objects: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Names by digest.
    index: BTreeMap<[u8; 16], Vec<u8>>,
    /// Longest request line accepted.
    pub max_line: usize,
}

/// What the server answers for an unknown name.
pub const NOT_FOUND: &[u8] = b"404 not found\n";

/// The running digest of a name: two FNV-1a 64-bit hashes with different bases, which
/// can be continued byte by byte from a continuation.
fn digest_update(mut d: [u64; 2], bytes: &[u8]) -> [u64; 2] {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    for &b in bytes {
        d[0] = (d[0] ^ u64::from(b)).wrapping_mul(PRIME);
        d[1] = (d[1] ^ u64::from(b)).wrapping_mul(PRIME);
    }
    d
}

const DIGEST_START: [u64; 2] = [0xcbf2_9ce4_8422_2325, 0x6c62_272e_07bb_0142];

fn digest_bytes(d: [u64; 2]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&d[0].to_be_bytes());
    out[8..].copy_from_slice(&d[1].to_be_bytes());
    out
}

/// Where a request line stands: the first bytes (up to `GET `), then the name's digest.
#[derive(Clone, Copy)]
struct LineState {
    prefix: [u8; 4],
    prefix_len: u8,
    digest: [u64; 2],
}

impl LineState {
    const LEN: usize = 1 + 4 + 16;

    fn new() -> LineState {
        LineState {
            prefix: [0; 4],
            prefix_len: 0,
            digest: DIGEST_START,
        }
    }

    fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[0] = self.prefix_len;
        out[1..5].copy_from_slice(&self.prefix);
        out[5..].copy_from_slice(&digest_bytes(self.digest));
        out
    }

    fn decode(b: &[u8]) -> Option<LineState> {
        let b: &[u8; Self::LEN] = b.try_into().ok()?;
        let prefix_len = b[0];
        if prefix_len > 4 {
            return None;
        }
        let mut prefix = [0u8; 4];
        prefix.copy_from_slice(&b[1..5]);
        let mut d = [0u64; 2];
        d[0] = u64::from_be_bytes(b[5..13].try_into().ok()?);
        d[1] = u64::from_be_bytes(b[13..21].try_into().ok()?);
        Some(LineState {
            prefix,
            prefix_len,
            digest: d,
        })
    }

    /// Takes `bytes`; returns `Some(digest)` when the line ended (at a newline).
    fn feed(&mut self, bytes: &[u8]) -> Option<[u8; 16]> {
        for &b in bytes {
            if usize::from(self.prefix_len) < 4 {
                self.prefix[usize::from(self.prefix_len)] = b;
                self.prefix_len += 1;
            } else if b == b'\n' {
                return Some(digest_bytes(self.digest));
            } else {
                self.digest = digest_update(self.digest, &[b]);
            }
        }
        None
    }
}

impl StaticObjects {
    /// A server for `objects` under `key`.
    pub fn new(key: UcontKey, objects: BTreeMap<Vec<u8>, Vec<u8>>, max_line: usize) -> Self {
        let index = objects
            .keys()
            .map(|name| {
                (
                    digest_bytes(digest_update(DIGEST_START, name)),
                    name.clone(),
                )
            })
            .collect();
        StaticObjects {
            key,
            objects,
            index,
            max_line,
        }
    }

    /// The body served for the name with digest `digest`.
    fn body(&self, digest: &[u8]) -> &[u8] {
        <&[u8; 16]>::try_from(digest)
            .ok()
            .and_then(|d| self.index.get(d))
            .and_then(|name| self.objects.get(name))
            .map_or(NOT_FOUND, Vec::as_slice)
    }

    /// Serves the ranges the request asked for from the body of `digest`, with `ucont`
    /// (the sealed output continuation) on every response.
    fn serve(
        &self,
        mut msk: Minisocket,
        server: &Server,
        ucont: &[u8],
        digest: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) {
        msk.set_ucont_all(ucont);
        let _ = msk.send_object(server, 0, self.body(digest), true, sink);
    }
}

impl Application for StaticObjects {
    fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        if msk.kind() == EventKind::Close {
            return; // Nothing to free: the server holds nothing per client.
        }
        let conn = msk.binding();
        let ucont = msk.user_continuation().to_vec();
        let (consumed, mut line) = if ucont.is_empty() {
            (0, LineState::new())
        } else {
            match self.key.open(&conn, &ucont) {
                // An output continuation: serve its object.
                Ok(UserContinuation::Output { app, .. }) => {
                    let digest = app.to_vec();
                    self.serve(msk, server, &ucont, &digest, sink);
                    return;
                }
                Ok(UserContinuation::Input { consumed, state }) => {
                    let Some(line) = LineState::decode(state) else {
                        return;
                    };
                    (consumed, line)
                }
                // Forged, tampered or foreign: as if lost.
                _ => return,
            }
        };
        // Input is taken only in stream order: repeats and early arrivals change nothing.
        let mut now_consumed = consumed;
        let mut done = None;
        if let Absorbed::New { from } = absorb(consumed, msk.data_offset(), msk.data()) {
            let new = msk.data().get(from..).unwrap_or_default();
            now_consumed += new.len() as u64;
            done = line.feed(new);
        }
        if let Some(digest) = done.filter(|_| &line.prefix == b"GET ") {
            let len = self.body(&digest).len() as u64;
            let output = UserContinuation::Output {
                valid_start: 0,
                valid_end: len,
                skip_to: len,
                follows: None,
                app: &digest,
            };
            let sealed = self.key.seal(&conn, &output).unwrap();
            // Report the input read to its end with the output continuation, so the
            // client knows the whole request arrived (§4.2).
            let state = line.encode();
            let input = UserContinuation::Input {
                consumed: now_consumed,
                state: &state,
            };
            let input = self.key.seal(&conn, &input).unwrap();
            let both = bundle(&[&input, &sealed]).unwrap();
            self.serve(msk, server, &both, &digest, sink);
        } else if done.is_some()
            || now_consumed > self.max_line as u64
            || (line.prefix_len == 4 && &line.prefix != b"GET ")
        {
            // Not a request this server speaks, or longer than it accepts: refuse cleanly.
            let _ = msk.refuse(server, sink);
        } else {
            let state = line.encode();
            let input = UserContinuation::Input {
                consumed: now_consumed,
                state: &state,
            };
            let sealed = self.key.seal(&conn, &input).unwrap();
            msk.set_ucont_all(&sealed);
            // No output yet: the responses carry the input continuation only.
            let _ = msk.send(server, &[], false, sink);
        }
    }
}

/// A deterministic object of `len` bytes.
pub fn object(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 8) as u8)
        .collect()
}

/// The example's server with three objects.
pub fn server_app() -> StaticObjects {
    let mut objects = BTreeMap::new();
    objects.insert(b"/index.html".to_vec(), object(20_000, 1));
    objects.insert(b"/big.bin".to_vec(), object(1_000_000, 2));
    // A name longer than one packet (a long query string).
    objects.insert(
        [b"/search?q=".as_slice(), &[b'x'; 3000]].concat(),
        object(5_000, 3),
    );
    StaticObjects::new(UcontKey::new(&[0x77; 16]), objects, 8192)
}

#[allow(dead_code)] // Also compiled into the tests, which do not call `main`.
fn main() {
    use trickles::client::ClientConfig;
    use trickles::server::ServerConfig;
    use trickles::sim::app::{AppRun, run_app};
    use trickles::sim::sim_keys;

    for (name, loss) in [
        (&b"/index.html"[..], 0),
        (b"/big.bin", 10_000),
        (b"/nothing", 0),
    ] {
        let mut run = AppRun::new(5_000, vec![[b"GET ", name, b"\n"].concat()]);
        run.loss_fwd_ppm = loss;
        run.loss_rev_ppm = loss;
        let out = run_app(
            &run,
            &|| Box::new(server_app()),
            ServerConfig::new(sim_keys()),
            ClientConfig::default(),
        );
        let app = server_app();
        let expected = app.objects.get(name).map_or(NOT_FOUND, Vec::as_slice);
        println!(
            "GET {}: {} bytes in {:.1} ms, loss {:.1}% each way, exact: {}",
            String::from_utf8_lossy(name),
            out.received.len(),
            out.elapsed_us as f64 / 1000.0,
            f64::from(loss) / 10_000.0,
            out.complete && out.received == expected,
        );
    }
}
