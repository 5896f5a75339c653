//! # netsim — a deterministic network simulator for sans-IO cores
//!
//! Runs the real protocol cores of the workspace (ESP routers, SNAP nodes, Trickles hosts)
//! at the nodes of a simulated network, on a virtual clock, so tests, reproductions and the
//! demo exercise them end to end without sockets, threads or wall time.
//!
//! What it does not do: no I/O, no clock, no threads. It owns a virtual clock and one
//! seeded random generator; the same seed and the same calls give the same run, event for
//! event. `#![no_std]` with `alloc`.
//!
//! ```text
//!   Node (your core) ──Outbox::send(iface, pkt)──► link: MTU, loss, delay + jitter, dup
//!        ▲                                                         │
//!        └──── handle_packet(now, iface, pkt) ◄── event queue ◄───┘
//!        └──── handle_timeout(now)            ◄── poll_timeout()
//! ```
//!
//! * [`Node`]: the trait a core implements (or a small adapter around it).
//! * [`Simulator`]: nodes, links ([`LinkConfig`]: delay, jitter and so reordering, loss,
//!   duplication, MTU, up/down), the event loop ([`Simulator::step`],
//!   [`Simulator::run_until`], [`Simulator::run`]) and [`Simulator::act`] to drive a node
//!   from a test.
//! * [`Routes`]: least-delay next hops between all nodes, for routers' forwarding tables.
//! * [`graph`]: the shortest-path search under [`Routes`], for any small graph whose edges
//!   carry a cost and the interface each end uses (fastpath's reference tables and `waist
//!   up`'s static routes use it too).
//! * [`Rng`]: the seeded generator behind every random choice.
//!
//! Interfaces are numbered per node in the order its links were connected. Routing is the
//! nodes' business (they may use [`Routes`]): the simulator only carries a packet from an
//! interface to the one at the other end of its link.
//!
//! # Example
//!
//! ```
//! use netsim::{Instant, LinkConfig, Node, Outbox, Simulator};
//!
//! /// Counts what it receives.
//! #[derive(Default)]
//! struct Sink(Vec<(Instant, Vec<u8>)>);
//! impl Node for Sink {
//!     fn handle_packet(&mut self, now: Instant, _: usize, p: Vec<u8>, _: &mut Outbox) {
//!         self.0.push((now, p));
//!     }
//! }
//!
//! let mut sim = Simulator::new(1);
//! let (a, b) = (sim.add_node(Sink::default()), sim.add_node(Sink::default()));
//! let link = sim.connect(a, b, LinkConfig::with_delay(10).loss_ppm(500_000));
//! for i in 0..1000u16 {
//!     sim.act(a, |_, _, out| out.send(0, i.to_be_bytes().to_vec()));
//! }
//! sim.run(u64::MAX);
//! let got = sim.node(b).0.len() as u64;
//! assert_eq!(got, sim.link_stats(link).delivered);
//! assert!((400..600).contains(&got)); // half lost, give or take
//! assert!(sim.node(b).0.iter().all(|(t, _)| t.ticks() == 10));
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod graph;
mod link;
mod node;
mod routes;
mod sim;

pub use link::{Direction, Fate, LinkConfig, LinkStats};
pub use node::{Node, Outbox};
pub use routes::Routes;
pub use sim::{LinkId, NodeId, Simulator};

/// A point in virtual time, in ticks (what a tick means is the caller's choice): the
/// workspace's one caller-time type, [`sansio::Instant`], so the ESS stores (`ess::Instant`)
/// and the simulated nodes share it.
pub use sansio::Instant;
/// The simulator's only source of randomness: [`sansio::Rng`] (xoshiro256**, seeded through
/// SplitMix64), so a run is a pure function of its seed and inputs.
pub use sansio::Rng;
