//! # trickles — a stateless TCP-like transport
//!
//! Trickles (Shieh, Myers and Sirer, *A Stateless Approach to Connection-Oriented
//! Protocols*, TOCS 2008) moves all of a TCP connection's server-side state into
//! continuations that ride in the packets, so the server keeps none: a request carries
//! the transport continuation the server issued earlier (MACed, bound to the connection)
//! and a SACK proof of what the client received; the server checks them, simulates TCP
//! Reno for that one *trickle*, and answers with new continuations.
//!
//! ```text
//!   client (stateful)                                server (stateless)
//!   continuations, proof, ranges ── request ──►  MAC ► fresh ► proof ► Bloom ► cc::plan
//!   reassembly ◄──────────────── responses ◄──  new continuations + nonces + app data
//! ```
//!
//! * [`wire`] (with [`wire::continuation`] and [`wire::delta`], the continuation formats): TCP segments marked by option 253 carrying requests
//!   (continuation, SACK blocks, byte ranges, user continuation, data) and responses. The
//!   IP layer beneath them ([`ip`]: whole IP packets in and out, and [`ip::mss_for_mtu`];
//!   the Internet checksum summed into each segment's) is the workspace's one, `waist-ip`.
//! * [`delta`]: delta-encoded continuations (§5.3; format in [`wire::delta`]): a client that asks for them gets only
//!   the fields it cannot predict with [`cc::plan`], rebuilds the full continuation, and
//!   presents it as usual.
//! * [`crypto`]: AES-128-CMAC continuation MACs under two live keys, the nonce PRF.
//! * [`sack`]: SACK proofs from XOR range nonces (§2.2, Appendix A).
//! * [`replay`]: two Bloom filters rotating every horizon, fed bits of the MAC (Fig. 4).
//! * [`cc`]: the per-request plan, with Reno's window in closed form ([`cc::window`], Fig. 8):
//!   continue, split, terminate, fast recovery, retransmit timeout (§2.5).
//! * [`limits`]: packet sizing both ends share (default MSS, user-continuation room).
//! * [`server`] and [`client`]: the engines. The server's only state is its keys and
//!   replay filters, whatever the number of connections.
//! * [`app`]: what a stateless server application needs on top: MACed user continuations
//!   bound to the connection in the standard input/output formats (with SKIP notices,
//!   §4, §5.2), and the minisocket event queue (§3) whose minisockets send within the
//!   window, refuse, or migrate to another replica under a MAC. The client files the
//!   standard continuations, picks one per request, frames requests
//!   ([`Client::request`](client::Client::request)) and skips unused output regions.
//!   [`app::http`] serves HTTP/1.1 GETs out of an object store, the answer sealed in the
//!   user continuation so any replica regenerates any byte of it.
//! * **Hosts, in whole IP packets** — what a daemon drives: [`app::Service`] (server:
//!   packets in, the application's answers out, each to the peer its request came from)
//!   and [`client::Demux`] (client: many connections behind one address, four-tuple →
//!   connection, ephemeral ports). [`crypto::KeySchedule`] derives every key from one
//!   master secret by rotation period, so replicas sharing it agree without talking;
//!   [`crypto::Rotation`] (that schedule and a period) is when a service's keys rotate.
//! * `compat` (feature `tcp-fallback`, on with `sim`): the client's transparent fallback
//!   to TCP (§2.6). A `compat::Connection` opens with a Trickles SYN carrying the
//!   queued data; a Trickles server's answer keeps it a Trickles client, a TCP-only
//!   server's plain SYN-ACK turns it into a TCP connection on smoltcp's socket (opened
//!   with the SYN's sequence number, window and options) that sends the queued bytes
//!   again. The application reads the same bytes either way; packets in and out are
//!   whole IP packets in both modes.
//! * `sim` (feature `sim`): servers and clients on `netsim` links.
//!
//! `#![no_std]` with `alloc`, no I/O, no clock: time, keys and seeds come in as arguments.
//!
//! **Time** is the workspace's one [`Instant`] (re-exported here), one tick a
//! microsecond: every entry point a daemon or a simulator calls takes `now: Instant`
//! ([`Client::connect`](client::Client::connect), `handle_segment`, `handle_timeout`;
//! [`client::Demux`]; [`Server::handle_request`](server::Server::handle_request);
//! [`app::Service::handle_packet`]; minisocket migration), and every `poll_timeout`
//! answers `Option<Instant>`, the deadline at which to call `handle_timeout` (`None`:
//! nothing due). A server host's one deadline is its key rotation
//! ([`crypto::Rotation`]): given one ([`app::Service::rotate_with`]),
//! [`app::Service::poll_timeout`] reports the end of the current key period, and
//! `handle_timeout` moves to the next.
//! Wire timestamps (continuation timestamps in milliseconds, RTTs in microseconds) are
//! derived from `now` inside.
//!
//! A whole exchange without a network:
//!
//! ```
//! use trickles::client::{Client, ClientConfig};
//! use trickles::conn::{Addr, FourTuple};
//! use trickles::crypto::KeyConfig;
//! use trickles::server::{Server, ServerConfig};
//! use trickles::Instant;
//!
//! let keys = KeyConfig { mac_keys: [[1; 16], [2; 16]], current_epoch: 0, nonce_key: [3; 16], rtx_nonce_key: [4; 16] };
//! let mut server = Server::new(ServerConfig::new(keys));
//! let (c, s) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
//! let tuple = FourTuple { client_addr: c, client_port: 4000, server_addr: s, server_port: 80 };
//! let mut client = Client::new(ClientConfig::default(), tuple, 12345);
//! let object = b"a stateless hello";
//! client.connect(Instant::ZERO, b"GET /");
//! let mut now = Instant::ZERO;
//! while !client.is_complete() {
//!     now = now.saturating_add(1_000); // a millisecond later
//!     let Some(request) = client.poll_transmit() else { break };
//!     let Ok(reply) = server.handle_request(now, c, s, &request) else { continue };
//!     for r in &reply.responses {
//!         // The application: serve the requested range of `object`.
//!         let (start, len) = r.range.map_or((0, 0), |r| (r.start as usize, usize::from(r.len)));
//!         let data = object.get(start..(start + len).min(object.len())).unwrap_or_default();
//!         let eos = start + len >= object.len();
//!         let mut buf = [0u8; 1600];
//!         let n = server.emit(&tuple, r, &[], data, eos, &mut buf).unwrap();
//!         client.handle_segment(now, &buf[..n]).unwrap();
//!     }
//! }
//! let mut got = [0u8; 64];
//! let n = client.read(&mut got);
//! assert_eq!(&got[..n], object);
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub use sansio::Instant;

pub mod app;
pub mod cc;
pub mod client;
#[cfg(feature = "tcp-fallback")]
pub mod compat;
pub mod conn;
/// The transport continuation's format. It lives in [`wire::continuation`] now; this path
/// re-exports it.
pub mod continuation {
    pub use crate::wire::continuation::*;
}
pub mod crypto;
/// Reno's window in closed form. It lives in [`cc::window`] now, beside the plan that
/// uses it; this path re-exports it.
pub mod cwnd {
    pub use crate::cc::window::*;
}
pub mod delta;
pub mod ip;
pub mod limits;
pub mod replay;
pub mod sack;
pub mod server;
#[cfg(feature = "sim")]
pub mod sim;
pub mod wire;
