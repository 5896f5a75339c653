//! Packet sizing shared by the server, the client and the application layer: the default
//! MSS, the room left for a user continuation, and how much application data one response
//! may carry. Both ends size responses by these same rules, so packets stay the same size.

use crate::wire::continuation::CONTINUATION_LEN;

/// Payload per response that fits a 1500-byte IPv4 MTU with a continuation:
/// 1500 − 20 (IPv4) − 24 (TCP + option) − 24 (response header) − 54 (continuation)
/// − 16 bytes left for a small user continuation.
pub const DEFAULT_MSS: u16 = 1362;

/// Bytes of user continuation that [`DEFAULT_MSS`] leaves room for. A response whose user
/// continuation is longer carries that much less data ([`ucont_room`]), so the packet still
/// fits; the client sizes its ranges by the same rule from the user continuation it sends
/// (servers echo it, or answer with one of about the same size).
pub const UCONT_ROOM: usize = 16;

/// Application bytes left of `limit` when the response carries a user continuation of
/// `ucont_len` bytes (see [`UCONT_ROOM`]).
#[inline]
pub fn ucont_room(limit: usize, ucont_len: usize) -> usize {
    limit.saturating_sub(ucont_len.saturating_sub(UCONT_ROOM))
}

/// Most application bytes a response may carry: `mss` with a continuation, `mss` plus the
/// continuation's length without one (delayed acks, retransmissions), so packets stay the
/// same size. The client sizes its ranges with the same rule.
#[inline]
pub fn payload_limit(mss: u16, with_continuation: bool) -> u16 {
    if with_continuation {
        mss
    } else {
        mss.saturating_add(CONTINUATION_LEN as u16)
    }
}
