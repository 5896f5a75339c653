//! The simplest stateless application: synthetic objects named by their length.
//!
//! [`ObjectApp`] serves objects whose byte `i` is [`object_byte`]`(i)`, so any replica
//! regenerates any range at any time from nothing but the request. The simulations and
//! reproductions use it; a real server serves files with `http`.

use super::{Application, Minisocket, UcontKey, UserContinuation};
use crate::server::{EventKind, Server};

/// Byte `i` of every synthetic object: position-dependent, so misplaced data shows.
pub fn object_byte(i: u64) -> u8 {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 56) as u8 ^ (i as u8)
}

/// The simulations' object server as an [`Application`]: the request (in the SYN) is the
/// object's length, 8 bytes big-endian; byte `i` of the object is
/// [`object_byte`]`(i)`; every response carries a MACed output continuation
/// (`0..len`, no application data), so any replica with the key serves any range.
pub struct ObjectApp {
    key: UcontKey,
}

impl ObjectApp {
    /// The server application under `key`.
    pub fn new(key: &[u8; 16]) -> ObjectApp {
        ObjectApp {
            key: UcontKey::new(key),
        }
    }
}

impl Application for ObjectApp {
    fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        if msk.kind() == EventKind::Close {
            return;
        }
        let conn = msk.binding();
        let ucont = msk.user_continuation().to_vec();
        let (len, sealed) = match self.key.open(&conn, &ucont) {
            Ok(UserContinuation::Output { valid_end, .. }) => (valid_end, ucont),
            _ if ucont.is_empty() && msk.kind() == EventKind::Open => {
                let Some(len) = msk
                    .data()
                    .first_chunk::<8>()
                    .map(|b| u64::from_be_bytes(*b))
                else {
                    return;
                };
                let output = UserContinuation::Output {
                    valid_start: 0,
                    valid_end: len,
                    skip_to: len,
                    follows: None,
                    app: &[],
                };
                let Ok(sealed) = self.key.seal(&conn, &output) else {
                    return;
                };
                (len, sealed)
            }
            _ => return,
        };
        msk.set_ucont_all(&sealed);
        let _ = msk.send_with(
            server,
            &mut |range, allowed, out| {
                let end = range.start.saturating_add(allowed as u64).min(len);
                out.extend((range.start.min(end)..end).map(object_byte));
                end >= len
            },
            sink,
        );
    }
}
