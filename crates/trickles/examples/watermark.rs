//! A stateless dynamic transform on Trickles (§6.2, §7.1): the paper's watermarking server.
//!
//! The client asks for the server's image marked with its own parameter (`MARK <hex>\n`).
//! Output block `i` depends only on image block `i` and the parameter, so the server never
//! keeps a marked copy: the output continuation carries the parameter, and any block is
//! computed again when a packet is lost. Here the "watermark" XORs each 64-byte block with
//! a keystream derived from the parameter and the block number; the transform is a stand-in
//! for the paper's JPEG coefficient embedding with the same dependency structure.
//!
//! ```text
//! cargo run --release -p trickles --features sim --example watermark
//! ```

// Example harness: a failed run should abort loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use trickles::app::Application;
use trickles::app::{Minisocket, UcontKey, UserContinuation};
use trickles::server::{EventKind, Server};

/// Bytes per transform block.
pub const BLOCK: usize = 64;

/// The marking server: one image, the application key.
pub struct Watermark {
    /// The application's key.
    pub key: UcontKey,
    /// The unmarked image.
    pub image: Vec<u8>,
}

/// Byte `j` of the keystream of block `block` under `param` (SplitMix64 of both).
fn keystream(param: u64, block: u64, j: usize) -> u8 {
    let mut z = param ^ block.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (j as u64) << 56;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u8
}

/// Marks `image[start..end]`: each output byte from its own image byte, block number and
/// `param` only.
pub fn mark(image: &[u8], param: u64, start: usize, end: usize, out: &mut Vec<u8>) {
    let end = end.min(image.len());
    for (i, &b) in image.iter().enumerate().take(end).skip(start) {
        out.push(b ^ keystream(param, (i / BLOCK) as u64, i % BLOCK));
    }
}

impl Application for Watermark {
    fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        if msk.kind() == EventKind::Close {
            return;
        }
        let conn = msk.binding();
        let ucont = msk.user_continuation().to_vec();
        let (param, sealed) = match self.key.open(&conn, &ucont) {
            Ok(UserContinuation::Output { app, .. }) => {
                let Ok(p) = <[u8; 8]>::try_from(app) else {
                    return;
                };
                (u64::from_be_bytes(p), ucont)
            }
            Err(_) if ucont.is_empty() => {
                // The request line arrives in the SYN: `MARK <hex>\n` (one packet).
                let line = msk.data();
                let Some(param) = line
                    .strip_prefix(b"MARK ")
                    .and_then(|r| r.strip_suffix(b"\n"))
                    .and_then(|hex| core::str::from_utf8(hex).ok())
                    .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                else {
                    let _ = msk.refuse(server, sink);
                    return;
                };
                let output = UserContinuation::Output {
                    valid_start: 0,
                    valid_end: self.image.len() as u64,
                    skip_to: self.image.len() as u64,
                    follows: None,
                    app: &param.to_be_bytes(),
                };
                (param, self.key.seal(&conn, &output).unwrap())
            }
            _ => return, // Forged or foreign: as if lost.
        };
        msk.set_ucont_all(&sealed);
        let image = &self.image;
        let _ = msk.send_with(
            server,
            &mut |range, allowed, out| {
                let start = usize::try_from(range.start).unwrap_or(usize::MAX);
                let end = start.saturating_add(allowed);
                mark(image, param, start, end, out);
                end >= image.len()
            },
            sink,
        );
    }
}

/// The example's image: 300 KB of a smooth pattern.
pub fn image() -> Vec<u8> {
    (0..300_000u32)
        .map(|i| ((i % 640) as u8) ^ ((i / 640) as u8))
        .collect()
}

/// The example's server.
pub fn server_app() -> Watermark {
    Watermark {
        key: UcontKey::new(&[0x31; 16]),
        image: image(),
    }
}

#[allow(dead_code)] // Also compiled into the tests, which do not call `main`.
fn main() {
    use trickles::client::ClientConfig;
    use trickles::server::ServerConfig;
    use trickles::sim::app::{AppRun, run_app};
    use trickles::sim::sim_keys;

    let param = 0x00c0_ffee_u64;
    let mut run = AppRun::new(10_000, vec![format!("MARK {param:x}\n").into_bytes()]);
    run.loss_fwd_ppm = 20_000;
    let out = run_app(
        &run,
        &|| Box::new(server_app()),
        ServerConfig::new(sim_keys()),
        ClientConfig::default(),
    );
    let img = image();
    let mut expected = Vec::new();
    mark(&img, param, 0, img.len(), &mut expected);
    println!(
        "marked {} bytes in {:.1} ms over a 2%-lossy link: exact {}, {} packets lost and regenerated",
        out.received.len(),
        out.elapsed_us as f64 / 1000.0,
        out.complete && out.received == expected,
        out.client.losses,
    );
}
