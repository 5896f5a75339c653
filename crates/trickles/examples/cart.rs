//! A shopping cart kept in the user continuation (§7.1): a retransmitted "add" adds once.
//!
//! The client sends framed requests `ADD <item>\n` … `CHECKOUT\n`. The cart never lives
//! on the server: it rides in the input continuation together with how much of the
//! client's request stream it reflects. A request is applied only at exactly that offset
//! ([`absorb`]), so a retransmission (its offset already consumed) or a request that
//! overtook an earlier one (its offset not yet reached) leaves the cart as it was, and the
//! client, seeing less consumed than it sent, sends the rest again. `CHECKOUT` turns the
//! cart into an output continuation whose output is the receipt.
//!
//! ```text
//! cargo run --release -p trickles --features sim --example cart
//! ```

// Example harness: a failed run should abort loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use trickles::app::Application;
use trickles::app::{Absorbed, Binding, Minisocket, UcontKey, UserContinuation, absorb, bundle};
use trickles::server::{EventKind, Server};

/// The cart server: just its key.
pub struct Cart {
    /// The application's key.
    pub key: UcontKey,
}

/// Items so far and the partial request line, as carried in the input continuation:
/// `u16 items_len | items ("\n"-separated) | partial line`.
fn encode_state(items: &[u8], partial: &[u8]) -> Vec<u8> {
    let mut s = (items.len() as u16).to_be_bytes().to_vec();
    s.extend_from_slice(items);
    s.extend_from_slice(partial);
    s
}

fn decode_state(state: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (len, rest) = state.split_first_chunk::<2>()?;
    let n = usize::from(u16::from_be_bytes(*len));
    Some((rest.get(..n)?.to_vec(), rest.get(n..)?.to_vec()))
}

/// The receipt for a cart: each item with its count, in first-added order.
pub fn receipt(items: &[u8]) -> Vec<u8> {
    let mut counts: Vec<(&[u8], usize)> = Vec::new();
    for item in items.split(|&b| b == b'\n').filter(|i| !i.is_empty()) {
        match counts.iter_mut().find(|(i, _)| *i == item) {
            Some((_, n)) => *n += 1,
            None => counts.push((item, 1)),
        }
    }
    let mut out = b"receipt\n".to_vec();
    for (item, n) in counts {
        out.extend_from_slice(item);
        out.extend_from_slice(format!(" x{n}\n").as_bytes());
    }
    out
}

impl Cart {
    fn serve_receipt(
        &self,
        mut msk: Minisocket,
        server: &Server,
        sealed: &[u8],
        items: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) {
        msk.set_ucont_all(sealed);
        let _ = msk.send_object(server, 0, &receipt(items), true, sink);
    }

    /// The input state this request leads to: `(consumed, items, partial, checked_out)`.
    fn advance(&self, conn: &Binding, msk: &Minisocket) -> Option<(u64, Vec<u8>, Vec<u8>, bool)> {
        let (consumed, mut items, mut partial) = if msk.user_continuation().is_empty() {
            (0, Vec::new(), Vec::new())
        } else {
            match self.key.open(conn, msk.user_continuation()) {
                Ok(UserContinuation::Input { consumed, state }) => {
                    let (items, partial) = decode_state(state)?;
                    (consumed, items, partial)
                }
                _ => return None,
            }
        };
        let Absorbed::New { from } = absorb(consumed, msk.data_offset(), msk.data()) else {
            // A repeat or a request ahead of its turn: the cart stays as it was.
            return Some((consumed, items, partial, false));
        };
        let new = msk.data().get(from..).unwrap_or_default();
        let mut checked_out = false;
        for &b in new {
            if b != b'\n' {
                partial.push(b);
                continue;
            }
            if let Some(item) = partial.strip_prefix(b"ADD ") {
                items.extend_from_slice(item);
                items.push(b'\n');
            } else if partial == b"CHECKOUT" {
                checked_out = true;
            }
            partial.clear();
        }
        Some((consumed + new.len() as u64, items, partial, checked_out))
    }
}

impl Application for Cart {
    fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        if msk.kind() == EventKind::Close {
            return;
        }
        let conn = msk.binding();
        let ucont = msk.user_continuation().to_vec();
        if let Ok(UserContinuation::Output { app, .. }) = self.key.open(&conn, &ucont) {
            let items = app.to_vec();
            self.serve_receipt(msk, server, &ucont, &items, sink);
            return;
        }
        let Some((consumed, items, partial, checked_out)) = self.advance(&conn, &msk) else {
            return; // Forged, tampered or foreign: as if lost.
        };
        if checked_out {
            let len = receipt(&items).len() as u64;
            let output = UserContinuation::Output {
                valid_start: 0,
                valid_end: len,
                skip_to: len,
                follows: None,
                app: &items,
            };
            let sealed = self.key.seal(&conn, &output).unwrap();
            // The input read to its end, reported with the receipt's continuation.
            let state = encode_state(&items, &partial);
            let input = UserContinuation::Input {
                consumed,
                state: &state,
            };
            let input = self.key.seal(&conn, &input).unwrap();
            let both = bundle(&[&input, &sealed]).unwrap();
            self.serve_receipt(msk, server, &both, &items, sink);
            return;
        }
        let state = encode_state(&items, &partial);
        let input = UserContinuation::Input {
            consumed,
            state: &state,
        };
        let Ok(sealed) = self.key.seal(&conn, &input) else {
            // A cart too big to carry: refuse rather than keep state.
            let _ = msk.refuse(server, sink);
            return;
        };
        msk.set_ucont_all(&sealed);
        let _ = msk.send(server, &[], false, sink);
    }
}

/// The example's server.
pub fn server_app() -> Cart {
    Cart {
        key: UcontKey::new(&[0xca; 16]),
    }
}

/// The example's requests: some adds (one item twice) and a checkout.
pub fn requests() -> Vec<Vec<u8>> {
    ["apple", "pear", "plum", "apple", "fig", "kiwi"]
        .iter()
        .map(|i| format!("ADD {i}\n").into_bytes())
        .chain([b"CHECKOUT\n".to_vec()])
        .collect()
}

#[allow(dead_code)] // Also compiled into the tests, which do not call `main`.
fn main() {
    use trickles::client::ClientConfig;
    use trickles::server::ServerConfig;
    use trickles::sim::app::{AppRun, run_app};
    use trickles::sim::sim_keys;

    let mut run = AppRun::new(10_000, requests());
    run.loss_rev_ppm = 100_000;
    let out = run_app(
        &run,
        &|| Box::new(server_app()),
        ServerConfig::new(sim_keys()),
        ClientConfig::default(),
    );
    print!(
        "{} client requests over a link losing 10% of them; the receipt:\n{}",
        out.client.requests,
        String::from_utf8_lossy(&out.received)
    );
}
