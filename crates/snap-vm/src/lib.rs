//! # snap-vm — Safe and Nimble Active Packets
//!
//! SNAP (Moore, Hicks and Nettles, *Practical Programmable Packets*, INFOCOM 2001): packets
//! that carry a small stack-machine program which every SNAP node runs on arrival. Branches
//! only go forward and nearly every instruction is constant-time and allocates a constant
//! amount, so a packet's CPU, memory and bandwidth use are linear in its length and known
//! before it runs; a resource bound, decremented per hop and shared with children, bounds
//! its spread.
//!
//! The layers:
//!
//! * [`value`]: the 32-bit words (7-bit tag or opcode, 25-bit data or immediate);
//! * [`op`]: the 97 instructions, one table for all;
//! * [`wire`]: the packet (header, then code | heap | stack, executed in place; IPv6
//!   addresses behind a header flag, [`wire#ipv6`]);
//! * [`program`]: programs as values, to build packets from;
//! * [`verify`]: the one-pass linear-resource verifier and its [`Bounds`](verify::Bounds);
//! * [`vm`]: the interpreter — in place, checks interleaved, output returned not performed;
//!   and bare runs ([`vm::MicroProgram`]: code on a frame without a packet, ESP microcode);
//! * [`asm`]: the assembler and disassembler (the paper's notation, plus data directives);
//! * [`paper`]: the paper's programs, ready-made — Figs. 1 and 2's pings — and a
//!   traceroute and a multicast in their style (formerly `fixtures`);
//! * [`service`]: node-resident services, including the ESS (SNAP as ESP microcode);
//! * [`ip`]: SNAP in IPv4 protocol 254 or IPv6 next header 254;
//! * [`plan`]: a compiler from a PLAN subset to SNAP (§V: inlining, unrolled folds).
//!
//! Running SNAP at a router, and on simulated networks, is the router node's business
//! (`waist-node`: `waist_node::sim::snap`).
//!
//! `#![no_std]` with `alloc`; no I/O, no clock.
//!
//! # Example: Fig. 1's ping at its destination
//!
//! ```
//! use snap_vm::op::Op;
//! use snap_vm::program::Program;
//! use snap_vm::value::{Value, Word};
//! use snap_vm::vm::{Delivered, End, NodeConfig, Vm};
//!
//! let mut ping = Program { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], rb: 8, ..Program::default() };
//! ping.code = [(Op::Forw, 0), (Op::Bne, 5), (Op::Push, 1), (Op::Getsrc, 0), (Op::Forwto, 0), (Op::Pop, 0), (Op::Demux, 0)]
//!     .map(|(op, imm)| Word::new(op as u8, imm))
//!     .to_vec();
//! let payload = ping.heap_bytes(b"hello");
//! ping.stack = vec![payload, Value::int(7), Value::int(0)]; // [0 :: port :: payload]
//!
//! // At B the packet turns around toward A.
//! let mut b = Vm::new(NodeConfig { address: [10, 0, 0, 2], ifaces: 2, mtu: 1500 });
//! let out = b.run(0, 0, ping.to_bytes()?);
//! assert_eq!(out.end, End::Forwarded);
//! assert_eq!(out.transmits[0].dst, [10, 0, 0, 1]);
//!
//! // Back at A, it delivers the payload to port 7.
//! let mut a = Vm::new(NodeConfig { address: [10, 0, 0, 1], ifaces: 2, mtu: 1500 });
//! let back = a.run(1, 0, out.transmits[0].packet.clone());
//! let d = back.delivery.expect("delivered");
//! assert_eq!((d.port, d.value), (7, Delivered::Bytes(b"hello".to_vec())));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod asm;
pub mod ip;
pub mod op;
pub mod paper;
pub mod plan;
pub mod program;
pub mod service;
pub mod value;
pub mod verify;
pub mod vm;
pub mod wire;

/// Re-export for compatibility: the paper's programs live in [`paper`] now.
pub use paper as fixtures;
