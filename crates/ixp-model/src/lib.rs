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

pub mod params;

pub use params::{Memory, Params, ParamsError};
pub mod engine;
pub mod esp;
pub mod ess_model;
pub mod fifo;
pub mod mem;
pub mod sim;

pub use engine::{LoadError, Program, Step};
pub use sim::{ConfigError, Machine, MachineConfig, RunReport, Stop};
