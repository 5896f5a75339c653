//! # esp-proto — ephemeral state processing packets and instructions
//!
//! The ESP protocol of Calvert, Griffioen and Wen (SIGCOMM 2002, §2–§4): packets that run
//! one predefined instruction at each ESP-capable router they pass, against that router's
//! ephemeral state store ([`ess`]). No I/O, no clock, no allocation unless asked: bytes in
//! and out.
//!
//! The layers, bottom up:
//!
//! * [`consts`]: protocol numbers (IP protocol 253, IPv4 option 158, IPv6 option 0x3E);
//! * [`wire`]: the ESP header ([`wire::Header`], [`wire::HeaderRepr`]) and where it rides in
//!   an IP packet — dedicated, IPv4 option or IPv6 hop-by-hop ([`wire::locate`], builders,
//!   `wire::piggyback` with `alloc`, the reflector, TTL decrement); the IP header itself
//!   (checks, checksum, TTL, builders) is the workspace's one IP layer, `waist-ip`;
//! * [`instr`] and [`codec`]: the 17 instructions (the paper's COUNT, COMPARE, COLLECT,
//!   RCHLD, RCOLLECT, the marks and SUBCAST its applications need, and a general set), one
//!   table documenting them all, and their operand encodings; [`idmap`]: Bloom IDmaps;
//! * [`exec`]: running an instruction atomically on one store context
//!   ([`exec::execute`]), and what a router does with a header there ([`exec::process`]:
//!   Err/RB packets pass, an abort sets Err and its code, clears Loc and forwards);
//! * `node` (feature `alloc`): a router's contexts — one per input port, one per output
//!   port, a central one, each sharded by CID;
//! * `endpoint` (feature `alloc`): the end-system API — a CID-bound endpoint that builds,
//!   piggybacks and parses packets and reports aborts precisely, and the host reflector;
//!
//! ESP at a router in a network, and ESP on simulated networks (the Fig. 1 network, tree
//! aggregation plain and robust end to end), are the router node's business (`waist-node`:
//! `waist_node::sim::esp`).
//!
//! # Example
//!
//! A router runs COUNT from a packet twice; the threshold lets one through.
//!
//! ```
//! use esp_proto::exec::{Context, Env, Verdict, process};
//! use esp_proto::instr::Instruction;
//! use esp_proto::wire::{Header, HeaderRepr, Loc};
//! use esp_proto::{Ess, EssConfig, HashKey, Instant, Tag};
//!
//! let count = Instruction::Count { counter: Tag(0xC0FFEE), thresh: 1 };
//! let repr = HeaderRepr { loc: Loc::OUTPUT, err: false, rb: false, opcode: count.opcode(), cid: 7, operand_len: 16 };
//! let mut packet = [0u8; 24];
//! repr.emit(&mut packet)?;
//! count.emit(&mut packet[8..])?;
//!
//! let mut ess = Ess::new(EssConfig::new(10, 10_000, 10, HashKey::from_seed(1))?);
//! let env = Env::new(0x0A00_0001, HashKey::from_seed(2));
//! let mut verdicts = Vec::new();
//! for t in 0..2 {
//!     let mut copy = packet;
//!     let mut header = Header::new_checked(&mut copy[..])?;
//!     let p = process(&mut Context::new(&mut ess, &env, 7), Instant::from_ticks(t), &mut header);
//!     verdicts.push(p.verdict);
//! }
//! assert_eq!(verdicts, [Verdict::Forward, Verdict::Drop]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod codec;
pub mod consts;
mod display;
#[cfg(feature = "alloc")]
pub mod endpoint;
pub mod exec;
pub mod idmap;
pub mod instr;
#[cfg(feature = "alloc")]
pub mod node;
pub mod wire;

/// The ESS crate this one runs on: its stores, their configuration and keys, and the time
/// they count in.
pub use ess;
/// The sharded store an [`node::EspNode`] keeps per context (feature `alloc`).
#[cfg(feature = "alloc")]
pub use ess::ShardedEss;
/// The ESS types esp-proto's API takes and returns, so a crate that depends on esp-proto
/// alone can name them.
pub use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};
