//! # waist-node — the router node: one sans-IO pipeline for IP, ESP, SNAP and the fast path
//!
//! A [`Node`] is a whole router as a value: frames in, frames out, no I/O, no clock, no
//! threads. The `waist-router` daemon drives it over TUN devices and UDP links; the
//! [`netsim`](https://docs.rs/netsim) simulator drives the very same code (feature `sim`)
//! in tests and reproductions.
//!
//! ## The pipeline
//!
//! ```text
//!  frame ─► link frame (frame): plain IP │ 0xF1 label + IP │ 0xF2 routing message ─► dv
//!    │
//!    ├─ label: threaded table (fastpath) ─► out iface, label rewritten in place
//!    │         (delivered here / random / bad index ─► on by the IP header)
//!    ▼
//!  IP check (waist-ip: version, lengths, IPv4 checksum) ── bad ─► counted drop
//!    ├─ SNAP (protocol 254, if on): run it; every send routed, framed afresh (snap_vm::ip)
//!    ├─ for the node: echo reply │ ESP reflection │ poll_deliver()
//!    ▼
//!  TTL − 1 (0 ─► ICMP time exceeded) ─► ESP ingress: input port, central context
//!    ▼
//!  route: multicast group ─► copies │ source-hash cache ─► LPM (IPv4, IPv6) │ none ─► ICMP
//!    ▼
//!  MTU: IPv4 DF / IPv6 ─► ICMP too big │ IPv4 ─► fragments
//!    ▼
//!  ESP egress once per copy (output port) ─► transmit
//! ```
//!
//! Each stage but the IP check is optional ([`Config`]): a node without ESP or SNAP
//! forwards those packets as plain IP (partial deployment). Routes come from config
//! ([`Config::routes`], [`Config::groups`], or [`Node::add_route`] later) and from distance
//! vector over the links (`fastpath::dv`, extended to advertise prefixes with their
//! threaded indices, [`Config::originate`]). The config is the whole router: the daemon
//! and the simulator build the same node from it, SNAP services ([`Config::snap_ess`])
//! included.
//! [`Node::reconfigure`] applies a new config to a running node (a daemon's reload),
//! keeping its ESS bindings, link states and learned routes where the change allows.
//!
//! ## The link frame
//!
//! A UDP link carries one frame per datagram; a TUN device carries plain IP packets. A
//! frame whose first nibble is 4 or 6 is a plain IP packet; one whose first nibble is 0xF
//! is a waist *shim*, its first byte the kind: `0xF1` then a 32-bit threaded label and the
//! IP packet, `0xF2` then a distance-vector message ([`frame`]).
//!
//! ## Calling order (quinn-proto's shape)
//!
//! ```text
//!  handle_packet(now, iface, &mut frame) ─► Some(InPlace): send frame[range] on iface
//!  poll_transmit(&mut buf) until None      ─► everything else to send (copies, ICMP, …)
//!  poll_deliver() until None               ─► what is addressed to the node
//!  poll_timeout() ─► sleep until then ─► handle_timeout(now)
//! ```
//!
//! A caller that reads frames in batches (`recvmmsg`) hands the whole batch to
//! [`Node::handle_packets`] instead of calling `handle_packet` per frame: the same results,
//! with the ESP store lookups of the batch warmed together so their cache misses overlap.
//!
//! Time is one [`Instant`] (the workspace's `sansio::Instant`) in microseconds at every
//! entry point: the ESS stores, the SNAP VM and distance vector take the same type.
//!
//! ## Example
//!
//! ```
//! use waist_node::{Config, Instant, Node, routes::prefix};
//! use waist_ip::{IpHeader, emit_header};
//!
//! let mut node = Node::new(Config::router([10, 0, 0, 254].into(), 2), Instant::ZERO)?;
//! node.add_route(prefix([10, 2, 0, 0].into(), 16)?, 1);
//!
//! let mut frame = [0u8; 28];
//! emit_header(&mut frame, [10, 1, 0, 1].into(), [10, 2, 0, 7].into(), 17, 64, 8)?;
//! let out = node.handle_packet(Instant::ZERO, 0, &mut frame).expect("forwarded in place");
//! assert_eq!(out.iface, 1);
//! assert_eq!(IpHeader::parse(&frame[out.range])?.ttl, 63);
//! assert!(node.stats().balanced());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

mod config;
pub mod frag;
pub mod frame;
pub mod host;
mod node;
pub mod routes;
#[cfg(feature = "sim")]
pub mod sim;
mod stats;

pub use config::{
    Config, ConfigError, EspConfig, IfaceConfig, MicrocodeConfig, SnapEss, StreamsConfig,
};
pub use node::snap;
pub use node::{
    Delivery, Diff, InPlace, MAX_DELIVERIES, MAX_FRAME, Node, Reconfigured, RoutingFate, StoreFate,
    Transmit,
};
pub use sansio::{Instant, MILLIS, SECONDS};
pub use stats::{Drops, Stats};
