//! SACK proofs: how a client proves which packets it received (§2.2, Appendix A).
//!
//! Every data packet `i` carries a nonce `p_i` the client cannot predict
//! ([`NonceGen::packet_nonce`]). The client groups the packets it received into maximal
//! runs of consecutive packet numbers and sends, for each run `[m, n]`, the XOR of the run's
//! nonces: a [`SackBlock`] `{ left: m, right: n, nonce }`, 12 bytes on the wire. Because
//! `p_i = r_i ^ r_{i+1}`, the XOR telescopes to `r_m ^ r_{n+1}` and the server checks a run
//! of any length with two PRF evaluations.
//!
//! A client missing even one nonce of a run learns nothing about the run's XOR
//! (Appendix A, Theorem A.1), so it cannot claim a packet it did not receive: loss cannot be
//! hidden. Retransmissions carry nonces under a second key `K'`, unrelated to the
//! original's, so a retransmission's nonce does not fill the hole either.
//!
//! ```text
//!  client                                  server
//!  received p_i ─► ProofBuilder::push ─► [SackBlock; g] ─► verify_proof (2 AES per block)
//! ```
//!
//! ```
//! use trickles::sack::{SACK_BLOCK_LEN, SackBlock};
//! let block = SackBlock { left: 10, right: 17, nonce: 0xdead_beef };
//! let mut bytes = [0u8; SACK_BLOCK_LEN];
//! block.emit(&mut bytes);
//! assert_eq!(bytes, [0, 0, 0, 10, 0, 0, 0, 17, 0xde, 0xad, 0xbe, 0xef]);
//! assert_eq!(SackBlock::parse(&bytes), block);
//! ```

use alloc::vec::Vec;
use core::fmt;

use crate::crypto::NonceGen;

/// Length of one [`SackBlock`] on the wire.
pub const SACK_BLOCK_LEN: usize = 12;

/// The most blocks a proof may carry (the original module's limit).
pub const MAX_SACK_BLOCKS: usize = 64;

/// One run of received packets: the inclusive packet-number range `left..=right` and the XOR
/// of their nonces (the range nonce).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SackBlock {
    /// First packet number of the run.
    pub left: u32,
    /// Last packet number of the run (inclusive).
    pub right: u32,
    /// `p_left ^ ... ^ p_right`.
    pub nonce: u32,
}

mod field {
    use core::ops::Range;
    pub(super) const LEFT: Range<usize> = 0..4;
    pub(super) const RIGHT: Range<usize> = 4..8;
    pub(super) const NONCE: Range<usize> = 8..12;
}

impl SackBlock {
    /// Reads a block: `left`, `right`, `nonce`, each a big-endian `u32`. Any 12 bytes are a
    /// block; whether it makes sense is [`check_shape`]'s business.
    pub fn parse(b: &[u8; SACK_BLOCK_LEN]) -> SackBlock {
        let word = |r: core::ops::Range<usize>| {
            let mut w = [0u8; 4];
            if let Some(src) = b.get(r) {
                w.copy_from_slice(src);
            }
            u32::from_be_bytes(w)
        };
        SackBlock {
            left: word(field::LEFT),
            right: word(field::RIGHT),
            nonce: word(field::NONCE),
        }
    }

    /// Writes the block in the layout [`parse`](SackBlock::parse) reads.
    pub fn emit(&self, out: &mut [u8; SACK_BLOCK_LEN]) {
        for (range, value) in [
            (field::LEFT, self.left),
            (field::RIGHT, self.right),
            (field::NONCE, self.nonce),
        ] {
            if let Some(dst) = out.get_mut(range) {
                dst.copy_from_slice(&value.to_be_bytes());
            }
        }
    }
}

/// Why a SACK proof was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofError {
    /// The proof has no blocks.
    Empty,
    /// The proof has more than [`MAX_SACK_BLOCKS`] blocks.
    TooMany,
    /// Block `index` has `left > right`, or does not start at least two packets after the
    /// previous block's end (blocks must be increasing and separated by a missing packet).
    Malformed {
        /// Position of the offending block in the proof.
        index: usize,
    },
    /// Block `index`'s nonce is not the range nonce of its packets.
    BadNonce {
        /// Position of the offending block in the proof.
        index: usize,
    },
}

impl fmt::Display for ProofError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofError::Empty => f.write_str("SACK proof has no blocks"),
            ProofError::TooMany => write!(f, "SACK proof has more than {MAX_SACK_BLOCKS} blocks"),
            ProofError::Malformed { index } => write!(
                f,
                "SACK block {index} is inverted, overlaps, touches or precedes the block before it"
            ),
            ProofError::BadNonce { index } => {
                write!(f, "SACK block {index} has a wrong range nonce")
            }
        }
    }
}

/// Checks a proof's shape, without cryptography: 1 to [`MAX_SACK_BLOCKS`] blocks, each with
/// `left <= right`, each starting at least two packet numbers after the previous block's
/// `right` (strictly increasing, with at least one missing packet in between).
pub fn check_shape(blocks: &[SackBlock]) -> Result<(), ProofError> {
    if blocks.is_empty() {
        return Err(ProofError::Empty);
    }
    if blocks.len() > MAX_SACK_BLOCKS {
        return Err(ProofError::TooMany);
    }
    let mut prev_right: Option<u32> = None;
    for (index, b) in blocks.iter().enumerate() {
        let after_gap = match prev_right {
            None => true,
            Some(r) => u64::from(b.left) >= u64::from(r) + 2,
        };
        if b.left > b.right || !after_gap {
            return Err(ProofError::Malformed { index });
        }
        prev_right = Some(b.right);
    }
    Ok(())
}

/// Verifies a SACK proof: [`check_shape`] first (no crypto is spent on a malformed proof),
/// then each block's nonce against `nonces`' range nonce, two PRF evaluations per block.
///
/// `nonces` is the nonce PRF the packets were sent under (normally
/// [`NonceKind::Original`](crate::crypto::NonceKind::Original)); `conn_nonce` is the
/// connection's nonce from its continuation.
pub fn verify_proof(
    nonces: &NonceGen,
    conn_nonce: u64,
    blocks: &[SackBlock],
) -> Result<(), ProofError> {
    check_shape(blocks)?;
    check_nonces(nonces, conn_nonce, blocks)
}

/// Checks each block's nonce against the range nonce `nonces` gives (two PRF evaluations
/// per block); a mismatch is reported for the first bad block. Shape is not checked: see
/// [`check_shape`] (the server checks shape while parsing, before the MAC).
pub fn check_nonces(
    nonces: &NonceGen,
    conn_nonce: u64,
    blocks: &[SackBlock],
) -> Result<(), ProofError> {
    for (index, b) in blocks.iter().enumerate() {
        if nonces.range_nonce(conn_nonce, b.left, b.right) != b.nonce {
            return Err(ProofError::BadNonce { index });
        }
    }
    Ok(())
}

/// Client side: accumulates the nonces of received packets into a SACK proof.
///
/// Call [`push`](ProofBuilder::push) for each packet in increasing packet-number order,
/// [`trim_below`](ProofBuilder::trim_below) when the server reports a prefix as done, and
/// send [`blocks`](ProofBuilder::blocks). The builder does not cap the number of blocks:
/// a client holding more than [`MAX_SACK_BLOCKS`] runs must send a subset.
#[derive(Clone, Debug, Default)]
pub struct ProofBuilder {
    blocks: Vec<SackBlock>,
}

impl ProofBuilder {
    /// An empty builder.
    pub fn new() -> ProofBuilder {
        ProofBuilder { blocks: Vec::new() }
    }

    /// Records packet `i`, received with nonce `p` (as the server sent it).
    ///
    /// Packets must come in increasing order: a packet at or below the last one recorded is
    /// ignored and `false` returned. A packet right after the last one extends the last
    /// block (its nonce is XORed in); a gap starts a new block.
    pub fn push(&mut self, i: u32, p: u32) -> bool {
        match self.blocks.last_mut() {
            Some(last) if i <= last.right => false,
            Some(last) if u64::from(i) == u64::from(last.right) + 1 => {
                last.right = i;
                last.nonce ^= p;
                true
            }
            _ => {
                self.blocks.push(SackBlock {
                    left: i,
                    right: i,
                    nonce: p,
                });
                true
            }
        }
    }

    /// Drops the blocks that end below `from` (the server reported everything below it
    /// as committed). A block straddling `from` is kept whole: its nonce covers all of it.
    pub fn trim_below(&mut self, from: u32) {
        let done = self.blocks.iter().take_while(|b| b.right < from).count();
        self.blocks.drain(..done);
    }

    /// The proof so far: maximal runs of received packets, in increasing order.
    pub fn blocks(&self) -> &[SackBlock] {
        &self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_round_trips_through_literal_bytes() {
        let bytes = [
            0x01, 0x02, 0x03, 0x04, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2a,
        ];
        let b = SackBlock::parse(&bytes);
        assert_eq!(
            b,
            SackBlock {
                left: 0x0102_0304,
                right: u32::MAX,
                nonce: 42
            }
        );
        let mut out = [0u8; SACK_BLOCK_LEN];
        b.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn display_names_the_block() {
        let s = alloc::format!("{}", ProofError::BadNonce { index: 3 });
        assert!(s.contains('3'), "{s}");
    }
}
