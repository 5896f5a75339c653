//! AES-128-CMAC (RFC 4493) over `u128` blocks: the mode, its subkeys and [`MacKey`], the
//! prepared key every continuation MAC and check runs through.

use core::fmt;

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit};

use super::{Tag, ct_eq};

/// AES-128 encryption of one block, read and written as a big-endian `u128`.
#[inline(always)]
pub(super) fn encrypt(aes: &Aes128, x: u128) -> u128 {
    let mut block = aes::Block::from(x.to_be_bytes());
    aes.encrypt_block(&mut block);
    u128::from_be_bytes(block.into())
}

/// AES-128 encryption of one block held as a native-endian `u128` (the bytes in memory
/// order): no byte swaps, for CMAC, which only XORs blocks.
#[inline(always)]
pub(super) fn encrypt_ne(aes: &Aes128, x: u128) -> u128 {
    let mut block = aes::Block::from(x.to_ne_bytes());
    aes.encrypt_block(&mut block);
    u128::from_ne_bytes(block.into())
}

/// CMAC's subkey doubling in GF(2^128): shift left, reduce by `x^128 + x^7 + x^2 + x + 1`.
/// Branch-free (the input is secret).
pub(super) fn dbl(x: u128) -> u128 {
    (x << 1) ^ (0x87 & 0u128.wrapping_sub(x >> 127))
}

/// AES-128-CMAC (RFC 4493) of the concatenation of `parts`, with `enc` the block cipher and
/// `k1`, `k2` the subkeys. Blocks are native-endian `u128`s (memory order): the mode only
/// XORs them, so only the subkeys' derivation needs the big-endian view.
#[inline(always)]
pub(super) fn cmac(enc: &impl Fn(u128) -> u128, k1: u128, k2: u128, parts: &[&[u8]]) -> u128 {
    let mut state = 0u128;
    let mut buf = [0u8; 16];
    let mut fill = 0usize;
    for part in parts {
        let mut rest: &[u8] = part;
        while !rest.is_empty() {
            // Only a full buffer followed by more input is a non-final block.
            if fill == 16 {
                state = enc(state ^ u128::from_ne_bytes(buf));
                fill = 0;
            }
            let take = (16 - fill).min(rest.len());
            let (head, tail) = rest.split_at(take);
            if let Some(dst) = buf.get_mut(fill..fill + take) {
                dst.copy_from_slice(head);
            }
            fill += take;
            rest = tail;
        }
    }
    let last = if fill == 16 {
        u128::from_ne_bytes(buf) ^ k1
    } else {
        // Pad with 10*: a one bit, then zeros over whatever an earlier block left.
        for (i, b) in buf.iter_mut().enumerate().skip(fill) {
            *b = if i == fill { 0x80 } else { 0 };
        }
        u128::from_ne_bytes(buf) ^ k2
    };
    enc(state ^ last)
}

/// A general-purpose AES-128-CMAC key, prepared once: the AES key schedule and the CMAC
/// subkeys `K1`, `K2`.
///
/// The server's continuation MACs use it through [`ServerKeys`](super::ServerKeys); applications can use it
/// for their own user continuations (§2.2: "a server application should protect its state
/// by using a MAC over the user continuation").
///
/// The CMAC mode is written here rather than taken from the `cmac` crate (which needs
/// `aes` 0.9; see the module's `Performance` section); the tests check it against RFC
/// 4493's vectors and against the `cmac` crate on random keys and inputs.
#[derive(Clone)]
pub struct MacKey {
    aes: Aes128,
    k1: u128,
    k2: u128,
}

impl MacKey {
    /// Prepares `key` (expands the AES key schedule and derives the subkeys).
    pub fn new(key: &[u8; 16]) -> MacKey {
        let aes = <Aes128 as KeyInit>::new(&(*key).into());
        let l = encrypt(&aes, 0);
        let k1 = dbl(l);
        let k2 = dbl(k1);
        // Stored in the native-endian form `cmac` works in.
        let ne = |k: u128| u128::from_ne_bytes(k.to_be_bytes());
        MacKey {
            aes,
            k1: ne(k1),
            k2: ne(k2),
        }
    }

    /// The CMAC tag of the concatenation of `parts`.
    pub fn tag(&self, parts: &[&[u8]]) -> Tag {
        self.tag_u128(parts).to_ne_bytes()
    }

    /// Whether `tag` is the tag of the concatenation of `parts`, compared in constant time.
    pub fn verify(&self, parts: &[&[u8]], tag: &Tag) -> bool {
        ct_eq(&self.tag_u128(parts).to_ne_bytes(), tag)
    }

    /// The tag of exactly three blocks, given in the native-endian form: CMAC without
    /// buffering or padding, three dependent AES blocks, the last one XORed with `K1`.
    /// Equal to `tag` of the blocks' 48 bytes.
    #[inline(always)]
    pub(super) fn tag3_blocks(&self, b: [u128; 3]) -> u128 {
        let s = encrypt_ne(&self.aes, b[0]);
        let s = encrypt_ne(&self.aes, s ^ b[1]);
        encrypt_ne(&self.aes, s ^ b[2] ^ self.k1)
    }

    /// The tags of `N` independent three-block inputs ([`MacKey::tag3_blocks`] of each),
    /// computed side by side: each of the three CBC-MAC steps encrypts the `N` chains'
    /// blocks one after another with no dependence between them, so the AES unit
    /// pipelines them instead of waiting out each chain's ten dependent rounds.
    ///
    /// One `encrypt_block` per lane rather than one `encrypt_blocks` over the `N` blocks:
    /// `aes` 0.8 runs fewer than eight blocks one by one either way, and its many-block
    /// entry is an out-of-line call (about 60 instructions each) where the one-block
    /// entry inlines to its eleven AES instructions.
    #[inline(always)]
    pub(super) fn tag3_lanes<const N: usize>(&self, b: &[[u128; 3]; N]) -> [u128; N] {
        let mut s = [0u128; N];
        for (s, b) in s.iter_mut().zip(b) {
            *s = encrypt_ne(&self.aes, b[0]);
        }
        for (s, b) in s.iter_mut().zip(b) {
            *s = encrypt_ne(&self.aes, *s ^ b[1]);
        }
        for (s, b) in s.iter_mut().zip(b) {
            *s = encrypt_ne(&self.aes, *s ^ b[2] ^ self.k1);
        }
        s
    }

    /// A 64-bit identity of this key (from its CMAC subkey `K1`): two different keys
    /// have different ids except with probability 2^-64. Never sent anywhere; the server's
    /// continuation cache uses it to tell whether the key a cached continuation was
    /// issued under is still the one in its epoch's slot.
    pub(crate) fn id(&self) -> u64 {
        // Truncation on purpose: 64 bits identify a key well enough.
        self.k1 as u64
    }

    /// The tag as a native-endian `u128`.
    #[inline]
    pub(super) fn tag_u128(&self, parts: &[&[u8]]) -> u128 {
        cmac(&|x| encrypt_ne(&self.aes, x), self.k1, self.k2, parts)
    }
}

impl fmt::Debug for MacKey {
    /// Key material is not shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacKey { .. }")
    }
}
