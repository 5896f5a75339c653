//! # fastpath — trading packet headers for packet processing
//!
//! Chandranmenon and Varghese, *Trading Packet Headers for Packet Processing*: source
//! hashing, threaded indices and the Data Manipulation Layer. (Tour to be written as the
//! modules land.)
#![no_std]
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
