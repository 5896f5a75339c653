//! What the Trickles server and client fuzz targets share: the connection, the server's
//! configuration, segment framing with a valid checksum, and the byte-level mutation.

use trickles::Instant;
use trickles::conn::{Addr, FourTuple};
use trickles::crypto::KeyConfig;
use trickles::replay::ReplayConfig;
use trickles::server::ServerConfig;
use trickles::wire::{self, SegmentHeader, TCP_HEADER_LEN};

pub const CLIENT: Addr = Addr::V4([10, 0, 0, 1]);
pub const SERVER: Addr = Addr::V4([10, 0, 0, 2]);
/// The clock when the valid traffic was recorded starts here (µs).
pub const START_US: u64 = 5_000_000;
/// [`START_US`] as the cores' time.
pub const START: Instant = Instant::from_micros(START_US);

pub fn tuple() -> FourTuple {
    FourTuple {
        client_addr: CLIENT,
        client_port: 5555,
        server_addr: SERVER,
        server_port: 80,
    }
}

/// Fixed keys and a small replay filter (a fresh server per input must be cheap; the
/// horizon is the default).
pub fn server_config() -> ServerConfig {
    let mut cfg = ServerConfig::new(KeyConfig {
        mac_keys: [[1; 16], [2; 16]],
        current_epoch: 0,
        nonce_key: [3; 16],
        rtx_nonce_key: [4; 16],
    });
    cfg.replay = ReplayConfig {
        num_bits: 1 << 12,
        ..ReplayConfig::default()
    };
    cfg
}

/// Frames `payload` as a segment with a valid checksum: from the client to the server
/// (`to_server`) or back.
pub fn frame(payload: &[u8], seq: u32, syn: bool, to_server: bool) -> Option<Vec<u8>> {
    let mut out = vec![0u8; TCP_HEADER_LEN + payload.len()];
    out.get_mut(TCP_HEADER_LEN..)?.copy_from_slice(payload);
    let t = tuple();
    let (src, dst, h) = if to_server {
        (
            CLIENT,
            SERVER,
            SegmentHeader {
                src_port: t.client_port,
                dst_port: t.server_port,
                syn,
                seq,
                ack: 0,
            },
        )
    } else {
        (
            SERVER,
            CLIENT,
            SegmentHeader {
                src_port: t.server_port,
                dst_port: t.client_port,
                syn,
                seq,
                ack: 0,
            },
        )
    };
    let n = wire::finish_segment(&src, &dst, &h, &mut out, payload.len()).ok()?;
    out.truncate(n);
    Some(out)
}

/// XORs `body`'s (position, byte) triples into `payload`; a trailing single byte cuts it
/// (the data field takes the rest). `None` for an empty payload.
pub fn xor_mutate(payload: &mut Vec<u8>, body: &[u8]) -> Option<()> {
    if payload.is_empty() {
        return None;
    }
    for t in body.chunks_exact(3) {
        let pos = usize::from(u16::from_le_bytes([t[0], t[1]])) % payload.len();
        payload[pos] ^= t[2];
    }
    if body.len() % 3 == 1 {
        payload.truncate(usize::from(body[body.len() - 1]) % (payload.len() + 1));
    }
    Some(())
}
