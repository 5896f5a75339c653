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

/// Most application bytes a response may carry: `mss` with a continuation; without one
/// (delayed acks, retransmissions), which also carries no user continuation, `mss` plus the
/// continuation's length and the [`UCONT_ROOM`] a user continuation would have taken. The
/// client asks for at most this ([`range_len`]), so that a window of responses is one
/// size and leaves as one GSO run.
#[inline]
pub fn payload_limit(mss: u16, with_continuation: bool) -> u16 {
    if with_continuation {
        mss
    } else {
        mss.saturating_add((CONTINUATION_LEN + UCONT_ROOM) as u16)
    }
}

/// The length of the byte range a client asks one response for, when the request carries
/// a user continuation of `ucont_len` bytes (which the server echoes, or answers with one
/// of about the same size, in the responses that carry a transport continuation): with a
/// continuation, [`ucont_room`] of `mss`; without one, `mss` plus the continuation's length
/// and as much of [`UCONT_ROOM`] as the user continuation would have used. Both kinds of
/// packet are then the same length, a user continuation of any size.
#[inline]
pub fn range_len(mss: u16, with_continuation: bool, ucont_len: usize) -> usize {
    if with_continuation {
        ucont_room(usize::from(mss), ucont_len)
    } else {
        usize::from(mss) + CONTINUATION_LEN + ucont_len.min(UCONT_ROOM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response with a continuation and a user continuation of `u` bytes carries
    /// `CONTINUATION_LEN + u + range_len(.., true, u)` bytes after its header; one without
    /// carries `range_len(.., false, u)`: the same, never above `payload_limit`.
    #[test]
    fn both_kinds_of_response_are_one_length() {
        for u in [0usize, 1, 15, 16, 17, 68, 200] {
            let with = CONTINUATION_LEN + u + range_len(DEFAULT_MSS, true, u);
            let without = range_len(DEFAULT_MSS, false, u);
            assert_eq!(with, without, "u {u}");
            assert!(without <= usize::from(payload_limit(DEFAULT_MSS, false)));
            assert!(
                range_len(DEFAULT_MSS, true, u) <= usize::from(payload_limit(DEFAULT_MSS, true))
            );
        }
    }
}
