//! # waist-ip — the one IP layer of the waist cores
//!
//! Every core of the workspace that reads or rewrites an IPv4 or IPv6 header does it here:
//! the router node (`waist-node`), ESP's placement of instructions, SNAP's framing, the
//! fast path's options and Trickles' segments. One checksum, one TTL decrement, one header
//! check, one set of ICMP builders — so a fix lands once and no caller has to remember the
//! IPv4 header checksum after changing a header byte in place.
//!
//! No I/O, no clock, no allocation: bytes in, bytes out. `#![no_std]`.
//!
//! ```text
//!  bytes ─► IpHeader::parse ─(version, lengths, IPv4 checksum)─► fields a router reads
//!  bytes ─► rewrite::{decrement_ttl, rewrite, note_rewrite} ─► RFC 1624 checksum update
//!  bytes ─► icmp::{emit_error, echo_reply} ─► the answer, RFC 1812 / 4443 rules applied
//!  checksum::{Sum, checksum, adjust, pseudo_header} ─ the arithmetic beneath all of it
//! ```
//!
//! # Example
//!
//! ```
//! use waist_ip::{IpHeader, emit_header, rewrite};
//! use waist_ip::icmp::{IcmpError, emit_error};
//!
//! let mut packet = [0u8; 30];
//! emit_header(&mut packet, [10, 0, 0, 1].into(), [10, 0, 0, 9].into(), 17, 1, 10)?;
//! let header = IpHeader::parse(&packet)?;
//! if rewrite::decrement_ttl(&mut packet)? == 0 {
//!     let mut answer = [0u8; 64];
//!     let n = emit_error(IcmpError::TimeExceeded, &packet, [10, 0, 0, 254].into(), &mut answer)
//!         .unwrap();
//!     assert_eq!(IpHeader::parse(&answer[..n])?.dst, header.src);
//! }
//! # Ok::<(), waist_ip::IpError>(())
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod checksum;
mod header;
pub mod icmp;
pub mod rewrite;
pub mod udp;

pub use header::{
    IPV4_HEADER_LEN, IPV4_MAX_HEADER_LEN, IPV6_HEADER_LEN, IpError, IpHeader, Version, emit_header,
    header_len_for,
};
