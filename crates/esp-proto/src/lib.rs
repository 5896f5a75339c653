//! # esp-proto — ephemeral state processing packets and instructions
//!
//! The ESP protocol of Calvert, Griffioen and Wen (SIGCOMM 2002, §2–§4): packets that run
//! one predefined instruction at each ESP-capable router they pass, against that router's
//! ephemeral state store ([`ess`]).
//!
//! No I/O, no clock: `#![no_std]`, bytes in and out.
//!
//! This crate is being built under its issue. What exists today:
//!
//! * [`consts`]: protocol numbers;
//! * [`wire`]: the ESP header ([`wire::Header`], a checked view; [`wire::HeaderRepr`]);
//! * [`instr`]: the paper's COUNT, COMPARE and COLLECT with their operand encodings;
//! * [`exec`]: running an instruction on a store context ([`exec::execute`]) and what a
//!   router does with a header in one context ([`exec::process`]).
//!
//! # Example
//!
//! ```
//! use esp_proto::consts::HEADER_LEN;
//! use esp_proto::wire::{Header, HeaderRepr, Loc};
//!
//! let repr = HeaderRepr { loc: Loc::OUTPUT, err: false, rb: false, opcode: 1, cid: 7, operand_len: 0 };
//! let mut buf = [0u8; HEADER_LEN];
//! repr.emit(&mut buf)?;
//! let mut view = Header::new_checked(&mut buf[..])?;
//! view.set_err(true); // a router whose instruction aborted
//! assert!(view.err());
//! # Ok::<(), esp_proto::wire::WireError>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod codec;
pub mod consts;
#[cfg(feature = "alloc")]
pub mod endpoint;
pub mod exec;
pub mod idmap;
pub mod instr;
#[cfg(feature = "alloc")]
pub mod node;
#[cfg(feature = "sim")]
pub mod sim;
pub mod wire;
