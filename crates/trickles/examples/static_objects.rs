//! A static object server on Trickles (§4, §7.1): the server keeps its objects and nothing
//! about any client.
//!
//! The client's request is a line `GET <name>\n`. A request line longer than one packet
//! is gathered in an *input continuation* (consumed bytes and the partial line), so the
//! server needs no buffer per client; a line longer than `max_line` cannot be summarised
//! compactly and the connection is refused. A complete line becomes an *output
//! continuation* (`valid_start..valid_end` = the object's bytes, app data = its name) that
//! every response carries; the client asks for ranges of it and the server serves any
//! range of any object at any time, so losses cost nothing but the lost packets.
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

use trickles::app::{Absorbed, Binding, Minisocket, UcontKey, UserContinuation, absorb};
use trickles::server::{EventKind, Server};
use trickles::sim::app::Application;

/// The server: objects by name, the user-continuation key, and the longest request line
/// it will carry in an input continuation.
pub struct StaticObjects {
    /// The application's key (replicas share it).
    pub key: UcontKey,
    /// Objects by name.
    pub objects: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Longest request line summarised in an input continuation.
    pub max_line: usize,
}

/// What the server answers for an unknown name.
pub fn not_found(name: &[u8]) -> Vec<u8> {
    let mut body = b"404 ".to_vec();
    body.extend_from_slice(name);
    body.push(b'\n');
    body
}

impl StaticObjects {
    /// The body served for `name`.
    fn body(&self, name: &[u8]) -> Vec<u8> {
        self.objects
            .get(name)
            .cloned()
            .unwrap_or_else(|| not_found(name))
    }

    /// Serves the ranges the request asked for from `name`'s body, with `ucont` (the
    /// sealed output continuation) on every response.
    fn serve(
        &self,
        mut msk: Minisocket,
        server: &Server,
        ucont: &[u8],
        name: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) {
        let body = self.body(name);
        msk.set_ucont_all(ucont);
        let _ = msk.send_with(
            server,
            &mut |range, allowed, out| {
                let start = usize::try_from(range.start).unwrap_or(usize::MAX);
                let end = start.saturating_add(allowed).min(body.len());
                if let Some(part) = body.get(start.min(end)..end) {
                    out.extend_from_slice(part);
                }
                end >= body.len()
            },
            sink,
        );
    }

    /// The request line so far: `state` plus the new input; `Err` with the continuation to
    /// send unchanged if this request brings nothing new in order.
    fn take_input(&self, conn: &Binding, msk: &Minisocket) -> Result<(u64, Vec<u8>), ()> {
        let (consumed, state) = if msk.user_continuation().is_empty() {
            (0, Vec::new())
        } else {
            match self.key.open(conn, msk.user_continuation()) {
                Ok(UserContinuation::Input { consumed, state }) => (consumed, state.to_vec()),
                _ => return Err(()),
            }
        };
        match absorb(consumed, msk.data_offset(), msk.data()) {
            Absorbed::New { from } => {
                let new = msk.data().get(from..).unwrap_or_default();
                let mut line = state;
                line.extend_from_slice(new);
                Ok((consumed + new.len() as u64, line))
            }
            Absorbed::Repeat | Absorbed::Gap => Ok((consumed, state)),
        }
    }
}

impl Application for StaticObjects {
    fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        if msk.kind() == EventKind::Close {
            return; // Nothing to free: the server holds nothing per client.
        }
        let conn = msk.binding();
        let ucont = msk.user_continuation().to_vec();
        // An output continuation: serve its object.
        if let Ok(UserContinuation::Output { app, .. }) = self.key.open(&conn, &ucont) {
            let name = app.to_vec();
            self.serve(msk, server, &ucont, &name, sink);
            return;
        }
        let Ok((consumed, line)) = self.take_input(&conn, &msk) else {
            return; // Forged, tampered or foreign: as if lost.
        };
        if let Some(nl) = line.iter().position(|&b| b == b'\n') {
            let name = line
                .get(..nl)
                .unwrap_or_default()
                .strip_prefix(b"GET ")
                .unwrap_or_default()
                .to_vec();
            let len = self.body(&name).len() as u64;
            let output = UserContinuation::Output {
                valid_start: 0,
                valid_end: len,
                app: &name,
            };
            let sealed = self.key.seal(&conn, &output).unwrap();
            self.serve(msk, server, &sealed, &name, sink);
        } else if line.len() > self.max_line {
            // Too long to carry statelessly: refuse cleanly.
            let _ = msk.refuse(server, sink);
        } else {
            let input = UserContinuation::Input {
                consumed,
                state: &line,
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
    StaticObjects {
        key: UcontKey::new(&[0x77; 16]),
        objects,
        max_line: 8192,
    }
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
        let expected = server_app().body(name);
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
