//! Where an ESP instruction sits in a raw IP packet, and how to put one there (paper §2.5).
//!
//! An ESP *instruction* on the wire is the ESP header and its operands (a [`Header`]):
//! `HEADER_LEN + operand_len` bytes. It travels in one of three [`Form`]s (protocol numbers
//! in [`consts`](crate::consts)):
//!
//! ```text
//! Dedicated      IPv4, protocol 253                | instruction | payload
//!                IPv6 [| hop-by-hop], next hdr 253 | instruction | payload
//! Ipv4Option     IPv4 options: … [148 4 0 0] [158 2+n instruction(n)] EOL pad | payload
//! Ipv6HopByHop   IPv6, next hdr 0 | hop-by-hop: … [0x3E n instruction(n)] Pad1/PadN | …
//! ```
//!
//! [`locate`] finds the instruction and returns its byte range; a router wraps that range in
//! [`Header::new_checked`] and rewrites control bits and operands in place. Processing never
//! changes an address, length or protocol field, so an instruction cannot divert a packet
//! (§2.5): only the reflector ([`reflect`]), the hop count every router pays anyway
//! ([`decrement_ttl`]) and the builders ([`emit_dedicated_ipv4`], [`emit_dedicated_ipv6`],
//! [`piggyback_into`]) write IP header fields. In the [`Form::Ipv4Option`] form, though, the
//! instruction's own bytes are IPv4 header bytes, covered by the header checksum (RFC 791):
//! whoever rewrites them in place must update the checksum, as `node::EspNode::process_at`
//! does (RFC 1624, over exactly the bytes that changed, with
//! `waist_ip::rewrite::note_rewrite`).
//!
//! The IP header's own work (header checks, checksum, TTL, address swap, header builders)
//! is done by the IP layer, `waist-ip`; this module finds and places ESP in the packet and
//! maps the IP layer's errors into its [`IpError`].
//!
//! Parsing never panics and its work is bounded by the 40-byte IPv4 option space or the
//! hop-by-hop header length. It does not verify the IPv4 header checksum (routers need not;
//! see [`ipv4_checksum_ok`]). IPv6 extension headers other than hop-by-hop are not walked,
//! and jumbograms are not supported. A dedicated IPv4 fragment other than the first carries
//! no instruction; a piggybacked IPv4 option (copied flag set) is found in every fragment.

use core::fmt;
use core::ops::Range;

use super::{Header, WireError};
use crate::consts::IPV4_ROUTER_ALERT;

mod build;
mod fixed;
mod parse;

#[cfg(feature = "alloc")]
pub use build::piggyback;
pub use build::{
    dedicated_ipv4_len, dedicated_ipv6_len, emit_dedicated_ipv4, emit_dedicated_ipv6,
    piggyback_into, piggybacked_len,
};
pub use fixed::{addresses, decrement_ttl, ipv4_checksum_ok, reflect};
pub use parse::{locate, locate_in};

mod field {
    use core::ops::Range;
    pub(super) const V4_TOTAL_LEN: Range<usize> = 2..4;
    pub(super) const V4_FRAGMENT: Range<usize> = 6..8;
    pub(super) const V4_PROTOCOL: usize = 9;
    pub(super) const V4_HEADER_LEN: usize = waist_ip::IPV4_HEADER_LEN;
    pub(super) const V4_OPTION_SPACE: usize = 40;
    pub(super) const V6_PAYLOAD_LEN: Range<usize> = 4..6;
    pub(super) const V6_NEXT_HEADER: usize = 6;
    pub(super) const V6_HEADER_LEN: usize = waist_ip::IPV6_HEADER_LEN;
    pub(super) const HBH_MAX_LEN: usize = 256 * 8;
}

const HOP_BY_HOP: u8 = 0;
const EOL: u8 = 0;
const NOP: u8 = 1;
const PAD1: u8 = 0;
const PADN: u8 = 1;
const ROUTER_ALERT: [u8; 4] = [IPV4_ROUTER_ALERT, 4, 0, 0];

/// How an ESP instruction (ESP header and operands) travels in its IP packet (paper §2.5;
/// protocol numbers in [`consts`](crate::consts)):
///
/// ```text
/// Dedicated      IPv4, protocol 253                | instruction | payload
///                IPv6 [| hop-by-hop], next hdr 253 | instruction | payload
/// Ipv4Option     IPv4 options: … [148 4 0 0] [158 2+n instruction(n)] EOL pad | payload
/// Ipv6HopByHop   IPv6, next hdr 0 | hop-by-hop: … [0x3E n instruction(n)] Pad1/PadN | …
/// ```
///
/// Routers rewrite only the instruction's bytes ([`Located`]) — no address, length or
/// protocol field — so an instruction cannot divert its packet. In the IPv4 option form
/// those bytes lie inside the IPv4 header, and the router updates the header checksum with
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// The IP payload (after an IPv6 hop-by-hop header, if any) starts with it: IPv4
    /// protocol or IPv6 next header 253.
    Dedicated,
    /// The data of IPv4 option 158.
    Ipv4Option,
    /// The data of IPv6 hop-by-hop option 0x3E.
    Ipv6HopByHop,
}

/// An ESP instruction found in a packet by [`locate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// How it travels.
    pub form: Form,
    /// Its bytes (header and operands) in the packet; [`Header::new_checked`] accepts them.
    pub range: Range<usize>,
}

impl Located {
    /// The instruction in `packet` (the one it was located in), to read and rewrite in place.
    ///
    /// # Errors
    ///
    /// [`IpError::Ip`] (`Truncated`) or [`IpError::Instruction`] if `packet` is not that packet.
    #[inline]
    pub fn header_mut<'p>(&self, packet: &'p mut [u8]) -> Result<Header<&'p mut [u8]>, IpError> {
        let len = packet.len();
        let bytes = packet.get_mut(self.range.clone()).ok_or(IpError::Ip(
            waist_ip::IpError::Truncated {
                len,
                needed: self.range.end,
            },
        ))?;
        Header::new_checked(bytes).map_err(|error| IpError::Instruction {
            offset: self.range.start,
            error,
        })
    }
}

/// Why bytes are not a well-formed IP packet, or an instruction cannot be put into one.
///
/// What the IP layer itself rejects (truncation, version, header and total length, a packet
/// too long to build) is [`IpError::Ip`] with [`waist_ip::IpError`]; the other variants are
/// about options and ESP instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpError {
    /// The IP layer rejects the packet (or the packet to build): [`waist_ip::IpError`]'s
    /// `Truncated`, `Version`, `HeaderLength`, `TotalLength` or `TooLong`. This crate does
    /// not verify IPv4 header checksums, so `Checksum` only comes from callers converting.
    Ip(waist_ip::IpError),
    /// An IPv4 option or IPv6 hop-by-hop option whose length is below 2 or overruns its
    /// header.
    OptionLength {
        /// Offset of the option's type byte in the packet.
        offset: usize,
    },
    /// The IPv6 hop-by-hop header runs past the payload.
    ExtensionLength {
        /// Bytes the header declares (at least 8).
        declared: usize,
        /// Payload bytes left for it.
        available: usize,
    },
    /// Bytes carried as an ESP instruction are not one (for an ESP option, the instruction's
    /// operand length disagrees with the option's length).
    Instruction {
        /// Offset of the instruction in the packet; 0 for one handed to a builder.
        offset: usize,
        /// What is wrong with it.
        error: WireError,
    },
    /// The packet carries a second ESP instruction.
    Duplicate {
        /// Offset of the second one.
        offset: usize,
    },
    /// `piggyback`: the packet already carries an ESP instruction.
    AlreadyCarried {
        /// Offset of that instruction.
        offset: usize,
    },
    /// `piggyback`: the option(s) to insert do not fit the IPv4 option space (40 bytes) or
    /// the IPv6 hop-by-hop limits (option data at most 255 bytes, header at most 2048).
    OptionSpace {
        /// Bytes the new option(s) need.
        needed: usize,
        /// Bytes left for them.
        available: usize,
    },
    /// The output buffer is too small for the packet to build.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        len: usize,
    },
}

/// The IP layer's errors as this crate's: [`IpError::Ip`].
impl From<waist_ip::IpError> for IpError {
    #[inline]
    fn from(e: waist_ip::IpError) -> Self {
        IpError::Ip(e)
    }
}

impl fmt::Display for IpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpError::OptionLength { offset } => write!(f, "bad IP option length at {offset}"),
            IpError::ExtensionLength {
                declared,
                available,
            } => write!(
                f,
                "IPv6 hop-by-hop header of {declared} bytes, {available} available"
            ),
            IpError::Instruction { offset, error } => {
                write!(f, "bad ESP instruction at {offset}: {error}")
            }
            IpError::Duplicate { offset } => write!(f, "second ESP instruction at {offset}"),
            IpError::AlreadyCarried { offset } => {
                write!(f, "packet already carries an ESP instruction at {offset}")
            }
            IpError::OptionSpace { needed, available } => write!(
                f,
                "ESP option needs {needed} bytes, {available} left in the IP header"
            ),
            IpError::BufferTooSmall { needed, len } => {
                write!(f, "output buffer of {len} bytes, {needed} needed")
            }
            IpError::Ip(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for IpError {}
