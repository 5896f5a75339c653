//! # fastpath — trading packet headers for packet processing
//!
//! Chandranmenon and Varghese, *Trading Packet Headers for Packet Processing*: source
//! hashing, threaded indices and the Data Manipulation Layer.
//!
//! ## Source hashing and flow caches (§3)
//!
//! The sender of a flow puts two things in every packet: a **flow id** ([`FlowId`], up to
//! 16 bytes, what makes packets "the same flow") and a **source hash** ([`SourceHash`], at
//! least 16 random bits it chose once for the flow). A receiver caches the result of its
//! slow path per flow in a [`FlowCache`] of `2^k` slots indexed by the hash's low bits —
//! no hash function runs at the receiver — and a slot answers only if its stored flow id
//! equals the packet's, so the cache never answers one flow with another's result.
//!
//! ```text
//!  packet ──► wire: IPv4 option 94 / IPv6 flow label ──► (SourceHash, FlowId)
//!                                                            │
//!             FlowCache[hash & (2^k − 1)] ── flow id equal? ─┤── hit:  cached answer
//!                                                            └── miss: slow path, install
//!  slow paths (apps): bridge table · LPM routing · RPC duplicate table · 16-filter list
//! ```
//!
//! * [`flow`], [`cache`] — the flow id, the index, the cache.
//! * [`assign`] — §3.1's ways to choose an index (random, precomputed `f(FID)`,
//!   manufacturer assigned) and §3.5's boot nonce against stale entries after a crash.
//! * [`wire`] — where they ride: an IPv4 option (RFC 4727 experimental value 94, hash
//!   word-aligned) and the IPv6 flow label (RFC 6437).
//! * [`apps`] — Table 3: a learning bridge, a route cache over [`lpm`], RPC duplicate
//!   detection, a packet-filter cache.
//! * [`hashes`] — the receiver-side hashes compared in Table 4 and Fig. 5 (XOR folding,
//!   CRC).
//!
//! No I/O, no clock, no randomness of its own: seeds, nonces and `now` come in.
//!
//! ```
//! use fastpath::apps::route::RouteCache;
//! use fastpath::assign::FlowSource;
//! use fastpath::lpm::Prefix;
//! use fastpath::wire::{SourceHashOption, find_ipv4_option};
//! use fastpath::Lookup;
//!
//! // A router: a longest-prefix-match table with a source-hash cache in front.
//! let mut router = RouteCache::new(16)?;
//! router.add_route(Prefix::new([10, 1, 0, 0], 16)?, 3u16);
//!
//! // A sender starts a flow: a flow number and a random index, chosen once.
//! let mut sender = FlowSource::new([192, 168, 0, 7], 0x5eed_1234, 42);
//! let (_, hash) = sender.start_flow();
//!
//! // The index rides in the IPv4 option (here parsed back from its bytes).
//! let mut opt = [0u8; 8];
//! SourceHashOption { hash, flow_id: None }.emit(&mut opt)?;
//! let got = SourceHashOption::parse(&opt)?;
//!
//! // First packet: slow path; every later one: one slot read and a flow-id compare.
//! let dst = [10, 1, 2, 3];
//! let src = [192, 168, 0, 7];
//! assert_eq!(router.route(got.hash, dst, src, 0), (Some(&3), Lookup::Miss));
//! assert_eq!(router.route(got.hash, dst, src, 0), (Some(&3), Lookup::Hit));
//! # let _ = find_ipv4_option;
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! ## Threaded indices, distance-vector routing and the hierarchy (§4)
//!
//! Every router numbers its destinations; a packet carries, in a 32-bit label, the index
//! of its destination *in the next router's table*. Forwarding reads the index, reads the
//! entry, writes the entry's next index into the label and sends: no hash, no compare.
//! Distance-vector routing computes the indices: each advertisement says "I reach D at
//! cost c, and D sits at index i in my table" (Fig. 7), so the neighbour that picks this
//! router as next hop stores `i`.
//!
//! ```text
//!  label(R=0, i) ─► ThreadedTable[i] = {iface, j} ─► label(R=0, j) out of iface
//!  label(R=1, h) ─► FlowCache[h] keyed by destination ─hit─► iface   (leaving the area)
//!                                                   └miss─► LPM, install
//!  dv::Router: handle_message / link_up / link_down / handle_timeout ─► poll_transmit
//!              └─ keeps its ThreadedTable in step with its routes
//! ```
//!
//! * [`threaded`] — the label word (R bit, hop limit, 24-bit index) and [`threaded::ThreadedTable`].
//! * [`dv`] — the sans-IO distance-vector [`dv::Router`] and its advertisement wire format;
//!   destinations are routers and the IPv4/IPv6 prefixes routers originate ([`dv::Dest`]),
//!   with longest-prefix match over the learned prefixes ([`lpm`]);
//!   [`dv::host::FirstHop`], the source's side of Fig. 6 (ask the first router for a
//!   destination's index, cache it, refresh it).
//! * [`hier`] — §4.1: threaded labels inside the area, source hashing into a destination
//!   cache for traffic leaving it.
//! * `sim` (feature `sim`) — a deterministic multi-router simulation with a hop-by-hop trace.
//!
//! ## The Data Manipulation Layer (§5)
//!
//! * [`dml`] — a header of regions (offset, length, kind) after the link header, built by
//!   layers that push regions down and add their header lengths (accumulated offsets).
//! * [`ilp`] — copy, Internet checksum and AES-CTR decryption of those regions in one
//!   pass, equal bit for bit to the separate passes.
//!
//! ```
//! use fastpath::dml::{DmlHeader, RegionKind, RegionStack};
//! use fastpath::dv::{Config, Router};
//! use fastpath::ilp::integrated;
//! use fastpath::threaded::{Forward, Label};
//! use sansio::Instant;
//!
//! // Two routers on one link learn each other's index for themselves.
//! let t0 = Instant::ZERO;
//! let (mut a, mut b) = (Router::new(Config::new(1), t0), Router::new(Config::new(2), t0));
//! a.link_up(t0, 0, 1)?;
//! b.link_up(t0, 0, 1)?;
//! for now in [0, 1_000, 2_000].map(Instant::from_millis) {
//!     while let Some(t) = a.poll_transmit() { b.handle_message(now, 0, &t.bytes)?; }
//!     while let Some(t) = b.poll_transmit() { a.handle_message(now, 0, &t.bytes)?; }
//!     a.handle_timeout(now);
//!     b.handle_timeout(now);
//! }
//! // A packet for router 2 enters a with a's index; a rewrites it to b's index.
//! let label = Label::threaded(a.index_of(2).unwrap(), 16);
//! let Forward::Send { iface, out_label } = a.table().forward(label)? else { panic!() };
//! assert_eq!((iface, out_label.index), (0, b.index_of(2).unwrap()));
//! assert_eq!(b.table().forward(out_label)?, Forward::Deliver);
//!
//! // A DML header: the transport marks its data, the network layer adds its 20 bytes.
//! let mut regions = RegionStack::new();
//! regions.push(RegionKind::Data, 8, 4)?;
//! regions.add_header(20)?;
//! let mut packet = vec![0u8; regions.finish(0).buffer_len()];
//! regions.finish(0).emit(&mut packet)?;
//! packet.extend_from_slice(&[0; 28]);
//! packet.extend_from_slice(b"data");
//! let (header, payload) = DmlHeader::parse(&packet)?;
//! let mut app = [0u8; 4];
//! integrated(&header, payload, &mut app, None)?;
//! assert_eq!(&app, b"data");
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod apps;
pub mod assign;
pub mod cache;
pub mod flow;
pub mod hashes;
pub mod lpm;
pub mod wire;

pub use cache::{CacheError, CacheStats, FlowCache, Lookup};
pub use flow::{FlowId, FlowIdError, SourceHash};

pub mod dml;
pub mod dv;
pub mod hier;
pub mod ilp;
#[cfg(feature = "sim")]
pub mod sim;
pub mod threaded;
