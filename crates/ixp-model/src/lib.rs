//! # ixp-model — the IXP1200 network processor, ESS on it, and stream handlers
//!
//! A discrete-event, cycle-level model of an IXP1200 and its host. (Tour to be written as
//! the modules land.)
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod deploy;
pub mod handler;
pub mod handlers;
pub mod host;
pub mod params;
pub mod rudp;

pub use params::{Memory, Params, ParamsError};
pub mod admission;
pub mod control;
pub mod path;
