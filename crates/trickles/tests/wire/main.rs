//! The Trickles wire formats: round trips, truncations, named rejections, sizes, and the TCP
//! framing cross-checked against etherparse.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

// A test crate's root is its own directory's file, so the modules name their paths.
mod messages;
mod rejections;
mod segments;
mod strategies;
