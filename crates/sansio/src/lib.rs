//! # sansio — what a sans-IO core is given instead of reading it from the system
//!
//! The workspace's cores never read a clock and never draw entropy: the caller hands them the
//! time and the seeds. This crate is the one home of the two types that carry them, so every
//! core speaks the same unit of time and draws the same streams from the same seeds.
//!
//! * [`Instant`]: a point in time in ticks of the caller's clock, a microsecond at every API a
//!   daemon calls (what a tick means elsewhere is the caller's choice). The ESS stores
//!   (`ess::Instant`), the router node (`waist_node::Instant`) and the simulator
//!   (`netsim::Instant`) re-export it, so it is one type everywhere.
//! * [`SplitMix64`]: Steele, Lea and Flood's tiny seeded generator, for stretching a seed into
//!   keys and drawing indices and test data; [`mix64`] is its finaliser on its own (a
//!   bijection on `u64` that scrambles every bit).
//! * [`Rng`]: xoshiro256** (Blackman and Vigna), seeded through [`SplitMix64`], the
//!   simulator's source of every random choice.
//!
//! None of the generators is for secrets: keys that must stay secret come from the
//! operating system, through the caller.
//!
//! # Example
//!
//! ```
//! use sansio::{Instant, Rng, SplitMix64, mix64};
//!
//! // Time comes in as an argument; a tick is whatever the caller says it is.
//! let now = Instant::from_ticks(1_000);
//! assert_eq!(now.saturating_add(500).ticks(), 1_500);
//!
//! // The same seed gives the same stream, on every run and every machine.
//! let mut a = SplitMix64::new(0);
//! assert_eq!(a.next_u64(), 0xe220_a839_7b1d_cdaf); // Vigna's reference output
//! assert_eq!(mix64(SplitMix64::GAMMA), 0xe220_a839_7b1d_cdaf);
//!
//! let mut r = Rng::new(7);
//! let roll = r.below(6);
//! assert!(roll < 6);
//! assert_eq!(Rng::new(7).below(6), roll);
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

mod rng;
mod splitmix;
mod time;

pub use rng::Rng;
pub use splitmix::{SplitMix64, mix64};
pub use time::{Instant, MILLIS, SECONDS};
