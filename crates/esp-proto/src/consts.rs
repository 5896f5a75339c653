//! Protocol numbers and sizes, in one place (see the workspace's DESIGN.md).

/// IP protocol / IPv6 next header of a dedicated ESP packet (RFC 3692 experimental).
pub const IP_PROTOCOL: u8 = 253;

/// IPv4 option type of a piggybacked ESP instruction: copied flag set, class 0, number 30
/// (RFC 4727 experimental).
pub const IPV4_OPTION: u8 = 158;

/// IPv4 Router Alert option type (RFC 2113), carried beside [`IPV4_OPTION`].
pub const IPV4_ROUTER_ALERT: u8 = 148;

/// IPv6 hop-by-hop option type of a piggybacked ESP instruction: action 00 (skip if
/// unknown), change bit 1 (may change en route), number 30 (RFC 4727 experimental).
pub const IPV6_HBH_OPTION: u8 = 0x3E;

/// The ESP header version this crate speaks.
pub const VERSION: u8 = 1;

/// Bytes of the fixed ESP header before the operands.
pub const HEADER_LEN: usize = 8;

/// Largest operand field that fits a piggybacked IPv4 option: the 40-byte option space,
/// less a 4-byte Router Alert, less the option's own type and length bytes, less the
/// header.
pub const MAX_IPV4_OPTION_OPERANDS: usize = 40 - 4 - 2 - HEADER_LEN;
