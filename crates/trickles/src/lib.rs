//! # trickles — a stateless TCP-like transport
//!
//! Trickles (Shieh, Myers and Sirer, *A Stateless Approach to Connection-Oriented
//! Protocols*, TOCS 2008) moves all of a TCP connection's server-side state into
//! continuations that ride in the packets, so the server keeps none.
//!
//! This crate is being built under its issue. What exists today:
//!
//! * [`cwnd`]: TCP Reno's congestion window as a closed form of the request number
//!   (Fig. 8), in exact integer arithmetic, with the ack-by-ack simulation it replaces.
//!
//! `#![no_std]`, no I/O, no clock.
//!
//! ```
//! use trickles::cwnd::{RenoSim, tcp_cwnd};
//! let mut reno = RenoSim::new(3, 8);
//! for k in 41..=200 {
//!     reno.ack();
//!     assert_eq!(tcp_cwnd(k, 40, 3, 8), reno.cwnd);
//! }
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod cc;
pub mod client;
pub mod conn;
pub mod continuation;
pub mod crypto;
pub mod cwnd;
pub mod replay;
pub mod sack;
pub mod server;
pub mod wire;
