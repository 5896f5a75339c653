//! The range nonces' PRF (§2.3): packet nonces and range nonces from one AES-128 key,
//! one for original transmissions, one for retransmissions.

use core::fmt;

use aes::Aes128;
use aes::cipher::KeyInit;

use super::encrypt;

/// Which nonce key a packet's nonce comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonceKind {
    /// `K`: the first transmission of a packet.
    Original,
    /// `K'`: a retransmission. Its nonce is unrelated to the original's, so a client that
    /// lost the original cannot use the retransmission to hide the loss.
    Retransmit,
}

/// The packet-nonce PRF: `r_x`, word `x mod 4` of `AES_K(conn_nonce || x / 4)`.
#[derive(Clone)]
pub struct NonceGen {
    aes: Aes128,
}

impl NonceGen {
    /// Prepares the PRF under `key`.
    pub fn new(key: &[u8; 16]) -> NonceGen {
        NonceGen {
            aes: <Aes128 as KeyInit>::new(&(*key).into()),
        }
    }

    /// One PRF block: `AES_K(conn_nonce || block)`, both halves big-endian, read as a
    /// big-endian `u128` so word `w` is bits `127 - 32w ..= 96 - 32w`.
    ///
    /// Nonce block indices are `x / 4 <= 2^30`, so inputs with the top bit of `block` set
    /// are free for other uses ([`NonceGen::keyed_hash`]).
    #[inline]
    fn block(&self, conn_nonce: u64, block: u64) -> u128 {
        encrypt(
            &self.aes,
            (u128::from(conn_nonce) << 64) | u128::from(block),
        )
    }

    /// Word `w mod 4` of a PRF block.
    fn word(block: u128, w: u64) -> u32 {
        // Truncation is the point: this selects one 32-bit word.
        (block >> (96 - 32 * (w % 4))) as u32
    }

    /// `r_x` with `x` widened so that `x = 2^32` (needed for `r_{last+1}`) does not wrap.
    fn r_wide(&self, conn_nonce: u64, x: u64) -> u32 {
        Self::word(self.block(conn_nonce, x / 4), x)
    }

    /// `r_a ^ r_b`, with one AES evaluation when both fall in one block.
    fn r_xor(&self, conn_nonce: u64, a: u64, b: u64) -> u32 {
        if a / 4 == b / 4 {
            let blk = self.block(conn_nonce, a / 4);
            Self::word(blk, a) ^ Self::word(blk, b)
        } else {
            self.r_wide(conn_nonce, a) ^ self.r_wide(conn_nonce, b)
        }
    }

    /// `r_x`: word `x mod 4` (big-endian `u32` words) of
    /// `AES_K(conn_nonce.to_be_bytes() || (x / 4) as u64, big-endian)`.
    pub fn r(&self, conn_nonce: u64, x: u32) -> u32 {
        self.r_wide(conn_nonce, u64::from(x))
    }

    /// `p_i = r_i ^ r_{i+1}`, the nonce packet `i` carries. One AES evaluation when
    /// `i % 4 != 3` (both words in one block), two otherwise.
    pub fn packet_nonce(&self, conn_nonce: u64, i: u32) -> u32 {
        let x = u64::from(i);
        self.r_xor(conn_nonce, x, x + 1)
    }

    /// The range nonce of packets `first..=last`:
    /// `p_first ^ ... ^ p_last = r_first ^ r_{last+1}`, with at most two AES evaluations
    /// (one when both ends fall in the same block).
    ///
    /// For `first > last` this is still `r_first ^ r_{last+1}` (0 when `first == last + 1`,
    /// the empty range); callers check `first <= last` first, as
    /// [`verify_proof`](crate::sack::verify_proof) does.
    pub fn range_nonce(&self, conn_nonce: u64, first: u32, last: u32) -> u32 {
        self.r_xor(conn_nonce, u64::from(first), u64::from(last) + 1)
    }

    /// A 64-bit keyed hash of `(conn_nonce, value)`, domain-separated from every nonce
    /// block (the top bit of the block index is set; nonce blocks never have it).
    pub(crate) fn keyed_hash(&self, conn_nonce: u64, value: u64) -> u64 {
        // The high half of the block: a truncation on purpose.
        (self.block(conn_nonce, value | (1 << 63)) >> 64) as u64
    }
}

impl fmt::Debug for NonceGen {
    /// Key material is not shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NonceGen { .. }")
    }
}
