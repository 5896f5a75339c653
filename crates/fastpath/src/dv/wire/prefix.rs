//! The 24-byte prefix entry of kinds 5–7 (see the picture in [`super`]).

use alloc::vec::Vec;

use crate::lpm::{IpPrefix, Prefix, Prefix6, PrefixError};
use crate::threaded::MAX_INDEX;

use super::WireError;

/// Bytes per prefix entry (kinds 5, 6 and 7).
pub const PREFIX_ENTRY_LEN: usize = 24;
/// The family byte of an IPv4 entry (IANA address family number 1, as BGP's AFI).
pub const FAMILY_IPV4: u8 = 1;
/// The family byte of an IPv6 entry (IANA address family number 2).
pub const FAMILY_IPV6: u8 = 2;

mod field {
    use core::ops::Range;
    pub(super) const FAMILY: usize = 0;
    pub(super) const LEN: usize = 1;
    pub(super) const COST: Range<usize> = 2..4;
    pub(super) const INDEX: Range<usize> = 4..8;
    pub(super) const ADDR: Range<usize> = 8..24;
    /// Within ADDR: the IPv4 address, then zero padding.
    pub(super) const V4: Range<usize> = 0..4;
    pub(super) const V4_PAD: Range<usize> = 4..16;
}

/// One prefix entry: "I reach `prefix` at `cost`, and it sits at `index` in my table"
/// (kind 5); a host's question about the address `prefix` names (kind 6, cost and index
/// 0); or the router's answer (kind 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixEntry {
    /// The prefix (in a query, a full-length one: the address asked about).
    pub prefix: IpPrefix,
    /// The sender's cost to it (infinity = unreachable; [`super::UNREACHABLE`] in an
    /// answer when there is no route).
    pub cost: u16,
    /// The prefix's index in the sender's threaded table (24 bits).
    pub index: u32,
}

fn be16(b: &[u8]) -> u16 {
    let mut w = [0u8; 2];
    if let Some(s) = b.get(..2) {
        w.copy_from_slice(s);
    }
    u16::from_be_bytes(w)
}

fn be32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(..4) {
        w.copy_from_slice(s);
    }
    u32::from_be_bytes(w)
}

fn prefix_error(e: PrefixError) -> WireError {
    match e {
        PrefixError::TooLong(n) | PrefixError::TooLong6(n) => WireError::PrefixTooLong(n),
        PrefixError::HostBitsSet => WireError::HostBitsSet,
    }
}

/// Decodes and checks one entry (`chunk` is [`PREFIX_ENTRY_LEN`] bytes).
pub(super) fn decode(chunk: &[u8]) -> Result<PrefixEntry, WireError> {
    let family = chunk.get(field::FAMILY).copied().unwrap_or(0);
    let len = chunk.get(field::LEN).copied().unwrap_or(0);
    let cost = be16(chunk.get(field::COST).unwrap_or(&[]));
    let index = be32(chunk.get(field::INDEX).unwrap_or(&[]));
    let addr = chunk.get(field::ADDR).unwrap_or(&[]);
    let mut a16 = [0u8; 16];
    if addr.len() == 16 {
        a16.copy_from_slice(addr);
    }
    let prefix = match family {
        FAMILY_IPV4 => {
            if a16
                .get(field::V4_PAD)
                .is_some_and(|p| p.iter().any(|&b| b != 0))
            {
                return Err(WireError::PaddingNotZero);
            }
            let mut a4 = [0u8; 4];
            a4.copy_from_slice(a16.get(field::V4).unwrap_or(&[0; 4]));
            IpPrefix::V4(Prefix::new(a4, len).map_err(prefix_error)?)
        }
        FAMILY_IPV6 => IpPrefix::V6(Prefix6::new(a16, len).map_err(prefix_error)?),
        other => return Err(WireError::BadFamily(other)),
    };
    if index > MAX_INDEX {
        return Err(WireError::IndexTooLarge);
    }
    Ok(PrefixEntry {
        prefix,
        cost,
        index,
    })
}

/// Appends one entry; the index is masked to 24 bits.
pub(super) fn encode(e: &PrefixEntry, out: &mut Vec<u8>) {
    let (family, len, addr) = match e.prefix {
        IpPrefix::V4(p) => {
            let mut a = [0u8; 16];
            if let Some(head) = a.get_mut(field::V4) {
                head.copy_from_slice(&p.addr());
            }
            (FAMILY_IPV4, p.len(), a)
        }
        IpPrefix::V6(p) => (FAMILY_IPV6, p.len(), p.addr()),
    };
    out.push(family);
    out.push(len);
    out.extend_from_slice(&e.cost.to_be_bytes());
    out.extend_from_slice(&(e.index & MAX_INDEX).to_be_bytes());
    out.extend_from_slice(&addr);
}
