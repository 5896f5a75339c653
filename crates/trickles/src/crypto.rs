//! The server's secrets: continuation MACs, connection nonces and the packet-nonce PRF.
//!
//! Trickles keeps a connection's server state in the client's hands (§2.2 of the paper), so
//! the server needs three cryptographic tools, all built on AES-128:
//!
//! * **Continuation MACs** ([`ServerKeys::mac`], [`ServerKeys::verify`]): AES-128-CMAC
//!   (RFC 4493) over the connection's [`FourTuple`] and the server-owned continuation
//!   fields. The original Linux module used HMAC-MD5; CMAC needs only the AES block cipher
//!   we already need for nonces, and with AES-NI it is about 2.5 times faster here (see
//!   `benches/primitives.rs`, group `trickles_mac`).
//! * **Key epochs** ([`ServerKeys::rotate`]): two MAC keys are live at once, the current
//!   one and its predecessor, so continuations issued just before a rotation still verify.
//!   A continuation names the epoch of its key in one byte; the key of epoch `e` sits in
//!   slot `e % 2`.
//! * **Packet nonces** ([`NonceGen`]): `r_x = f(K, x)` with `f` the AES-128 block cipher,
//!   one block giving four 32-bit words; packet `i` carries `p_i = r_i ^ r_{i+1}`, so the
//!   XOR of the nonces of any range `m..=n` is `r_m ^ r_{n+1}` and costs the server at most
//!   two AES evaluations to check. Retransmissions use a second key `K'`
//!   ([`NonceKind::Retransmit`]), so a retransmission's nonce cannot stand in for the
//!   lost original's in a SACK proof.
//!
//! ```text
//!  KeyConfig ──► ServerKeys ─┬─ mac/verify(epoch, tuple, fields) ── continuation tags
//!                            ├─ conn_nonce(tuple, client_isn) ───── per-connection nonce
//!                            └─ nonces(kind) ─► NonceGen ─ r / packet_nonce / range_nonce
//! ```
//!
//! ## Performance
//!
//! The `aes` crate chooses among its backends on every call into the cipher
//! (`encrypt_with_backend`), unless the build enables the CPU features statically. On CPUs
//! with AVX-512 VAES (Intel Ice Lake and later, AMD Zen 4) it picks its VAES-512 backend,
//! whose entry broadcasts all eleven round keys into ZMM registers: 30–45 ns per call
//! here, whatever the number of blocks. A static `+aes` does not skip that choice (the crate
//! tests for VAES first). So release builds get the fast path in two ways:
//!
//! 1. **One cipher call per operation.** [`MacKey`] runs CMAC (RFC 4493, checked against
//!    the RFC's vectors and the `cmac` crate) inside one call instead of the `cmac` crate's
//!    three; [`verify_proof`](crate::sack::verify_proof) checks all of a proof's blocks in
//!    one call through [`NonceGen::with_prf`], which the server can also use to compute a
//!    response's packet nonces at once. This is portable and is most of the gain.
//! 2. **AES-NI compiled in.** The workspace's `.cargo/config.toml` builds x86-64 Linux
//!    targets with `-C target-feature=+aes,+ssse3,+sse4.1,+pclmulqdq`, so the crate can
//!    inline its AES-NI code: 3–20% more on this machine, and on CPUs without VAES (where
//!    the plain AES-NI backend is the one chosen) the difference between an out-of-line
//!    call and inlined code (from the crate's source; not measurable on this machine).
//!    Every x86-64 CPU since about 2010 has these features. The test
//!    `aes_ni_is_compiled_in` in `tests/crypto.rs` fails if a build loses them (setting
//!    `RUSTFLAGS` replaces the config's flags rather than adding to them).
//!
//! Best of 3 × 200 batches on a shared 2-vCPU AMD EPYC VM (AVX-512 VAES), ns per operation
//! (independent operations back to back, so pipelined AES shows as less than its latency):
//!
//! | operation                          | default | `+aes,...` (config) | `target-cpu=native` |
//! |------------------------------------|--------:|--------------------:|--------------------:|
//! | `cmac` crate, 67 bytes, 3 calls    |     317 |                 287 |                 111 |
//! | [`MacKey::tag`], 67 bytes, 1 call  |     136 |                 132 |                  93 |
//! | [`ServerKeys::verify`], 54 + 13 B  |     200 |                 161 |                 121 |
//! | [`NonceGen::r`]                    |      50 |                  44 |                 2.7 |
//! | [`NonceGen::range_nonce`]          |      54 |                  45 |                 5.4 |
//! | `verify_proof`, 4 blocks           |      66 |                  63 |                  25 |
//!
//! The rest of the gap to `target-cpu=native` is the VAES-512 dispatch itself, which only
//! `+avx512f,+vaes` removes (measured: the same numbers as `native`); such a binary dies
//! with an illegal instruction on most x86-64 machines, so the workspace does not use it.
//! A deployment on known hardware can build with `RUSTFLAGS="-C target-cpu=native"`.
//!
//! ```
//! use trickles::conn::{Addr, FourTuple};
//! use trickles::crypto::{KeyConfig, NonceKind, ServerKeys};
//!
//! let cfg = KeyConfig {
//!     mac_keys: [[1; 16], [2; 16]],
//!     current_epoch: 7,
//!     nonce_key: [3; 16],
//!     rtx_nonce_key: [4; 16],
//! };
//! let keys = ServerKeys::new(&cfg);
//! let tuple = FourTuple {
//!     client_addr: Addr::V4([10, 0, 0, 1]),
//!     client_port: 40000,
//!     server_addr: Addr::V4([10, 0, 0, 2]),
//!     server_port: 80,
//! };
//! let tag = keys.mac(7, &tuple, b"continuation fields").unwrap();
//! assert!(keys.verify(7, &tuple, b"continuation fields", &tag));
//! assert!(!keys.verify(7, &tuple, b"continuation fieldz", &tag));
//!
//! let prf = keys.nonces(NonceKind::Original);
//! let c = keys.conn_nonce(&tuple, 12345);
//! let xor = (10..=20).fold(0, |acc, i| acc ^ prf.packet_nonce(c, i));
//! assert_eq!(xor, prf.range_nonce(c, 10, 20));
//! ```

use core::fmt;

use aes::Aes128;
use aes::cipher::consts::U16;
use aes::cipher::{
    BlockCipherEncBackend, BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, KeyInit,
};

use crate::conn::{FOUR_TUPLE_MAX_LEN, FourTuple};

/// Length of a MAC tag: a full AES-128-CMAC output, untruncated.
pub const TAG_LEN: usize = 16;

/// A MAC tag.
pub type Tag = [u8; TAG_LEN];

/// The domain-separation label of [`ServerKeys::conn_nonce`]'s CMAC input.
///
/// Continuation MAC inputs begin with a [`FourTuple::encode`] family byte (4, 6, 46 or
/// 64); this label begins with `c` (99), so no connection-nonce input is ever a
/// continuation MAC input, and a connection nonce the client sees is not a tag it can use.
const CONN_NONCE_LABEL: &[u8] = b"conn";

/// Secrets a server (and its replicas) are configured with.
///
/// Every replica of a service is given the same `KeyConfig`, so any of them can verify a
/// continuation any other issued.
#[derive(Clone, Copy)]
pub struct KeyConfig {
    /// The two live MAC keys: `mac_keys[e % 2]` is the key of key epoch `e`.
    pub mac_keys: [[u8; 16]; 2],
    /// The epoch new continuations are issued under; `current_epoch.wrapping_sub(1)` is
    /// also live.
    pub current_epoch: u8,
    /// `K`, the nonce key of original transmissions.
    pub nonce_key: [u8; 16],
    /// `K'`, the nonce key of retransmissions.
    pub rtx_nonce_key: [u8; 16],
}

impl fmt::Debug for KeyConfig {
    /// Shows the epoch only: key bytes never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyConfig")
            .field("current_epoch", &self.current_epoch)
            .finish_non_exhaustive()
    }
}

/// Constant-time equality of two byte strings: every byte is examined, whatever the
/// contents. A length mismatch returns `false` at once (lengths are not secret).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut acc = 0u8;
    for (x, y) in a.iter().zip(b) {
        // `black_box` keeps the optimiser from turning the fold into an early exit.
        acc = core::hint::black_box(acc | (x ^ y));
    }
    acc == 0
}

/// Runs `f` with AES-128 encryption under `aes`, as a function on big-endian `u128` blocks,
/// inside one backend dispatch of the `aes` crate, and returns what `f` returns.
///
/// Each `encrypt_block` call of the `aes` crate picks an implementation for the CPU, and on
/// CPUs with VAES/AVX-512 that choice costs more than the AES itself (see the module's
/// `Performance` section). Doing all of an operation's blocks in one dispatch pays it once.
/// `fallback` is returned if the backend never ran `f` (the `aes` crate always runs it
/// exactly once); callers pass a fail-closed value.
fn with_aes<R>(aes: &Aes128, fallback: R, f: impl FnOnce(&dyn Fn(u128) -> u128) -> R) -> R {
    struct Job<'a, F, R> {
        f: F,
        out: &'a mut R,
    }
    impl<F, R> BlockSizeUser for Job<'_, F, R> {
        type BlockSize = U16;
    }
    impl<F: FnOnce(&dyn Fn(u128) -> u128) -> R, R> BlockCipherEncClosure for Job<'_, F, R> {
        #[inline(always)]
        fn call<B: BlockCipherEncBackend<BlockSize = U16>>(self, backend: &B) {
            let enc = |x: u128| {
                let mut block = aes::Block::from(x.to_be_bytes());
                backend.encrypt_block((&mut block).into());
                u128::from_be_bytes(block.into())
            };
            *self.out = (self.f)(&enc);
        }
    }
    let mut out = fallback;
    aes.encrypt_with_backend(Job { f, out: &mut out });
    out
}

/// CMAC's subkey doubling in GF(2^128): shift left, reduce by `x^128 + x^7 + x^2 + x + 1`.
/// Branch-free (the input is secret).
fn dbl(x: u128) -> u128 {
    (x << 1) ^ (0x87 & 0u128.wrapping_sub(x >> 127))
}

/// AES-128-CMAC (RFC 4493) of the concatenation of `parts`, with `enc` the block cipher and
/// `k1`, `k2` the subkeys.
fn cmac(enc: &dyn Fn(u128) -> u128, k1: u128, k2: u128, parts: &[&[u8]]) -> u128 {
    let mut state = 0u128;
    let mut buf = [0u8; 16];
    let mut fill = 0usize;
    for part in parts {
        let mut rest: &[u8] = part;
        while !rest.is_empty() {
            // Only a full buffer followed by more input is a non-final block.
            if fill == 16 {
                state = enc(state ^ u128::from_be_bytes(buf));
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
        u128::from_be_bytes(buf) ^ k1
    } else {
        // Pad with 10*: a one bit, then zeros over whatever an earlier block left.
        for (i, b) in buf.iter_mut().enumerate().skip(fill) {
            *b = if i == fill { 0x80 } else { 0 };
        }
        u128::from_be_bytes(buf) ^ k2
    };
    enc(state ^ last)
}

/// A general-purpose AES-128-CMAC key, prepared once: the AES key schedule and the CMAC
/// subkeys `K1`, `K2`.
///
/// The server's continuation MACs use it through [`ServerKeys`]; applications can use it
/// for their own user continuations (§2.2: "a server application should protect its state
/// by using a MAC over the user continuation").
///
/// The CMAC mode is written here rather than taken from the `cmac` crate so that a whole
/// tag costs one backend dispatch of the `aes` crate instead of three; the tests check it
/// against RFC 4493's vectors and against the `cmac` crate on random keys and inputs.
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
        let l = with_aes(&aes, 0, |enc| enc(0));
        let k1 = dbl(l);
        MacKey {
            aes,
            k1,
            k2: dbl(k1),
        }
    }

    /// The CMAC tag of the concatenation of `parts`.
    pub fn tag(&self, parts: &[&[u8]]) -> Tag {
        with_aes(&self.aes, 0, |enc| cmac(enc, self.k1, self.k2, parts)).to_be_bytes()
    }

    /// Whether `tag` is the tag of the concatenation of `parts`, compared in constant time.
    pub fn verify(&self, parts: &[&[u8]], tag: &Tag) -> bool {
        with_aes(&self.aes, false, |enc| {
            ct_eq(&cmac(enc, self.k1, self.k2, parts).to_be_bytes(), tag)
        })
    }
}

impl fmt::Debug for MacKey {
    /// Key material is not shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacKey { .. }")
    }
}

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
///
/// Each method costs one dispatch of the `aes` crate; to compute many nonces (a response's
/// packets, a proof's blocks) in one dispatch, use [`with_prf`](NonceGen::with_prf).
#[derive(Clone)]
pub struct NonceGen {
    aes: Aes128,
}

/// The nonce PRF inside one cipher dispatch: see [`NonceGen::with_prf`].
///
/// Its methods compute what [`NonceGen`]'s methods of the same names compute.
pub struct Prf<'a> {
    enc: &'a dyn Fn(u128) -> u128,
}

impl Prf<'_> {
    /// One PRF block: `AES_K(conn_nonce || block)`, both halves big-endian, read as a
    /// big-endian `u128` so word `w` is bits `127 - 32w ..= 96 - 32w`.
    ///
    /// Nonce block indices are `x / 4 <= 2^30`, so inputs with the top bit of `block` set
    /// are free for other uses ([`Prf::keyed_hash`]).
    fn block(&self, conn_nonce: u64, block: u64) -> u128 {
        (self.enc)((u128::from(conn_nonce) << 64) | u128::from(block))
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

    /// See [`NonceGen::r`].
    pub fn r(&self, conn_nonce: u64, x: u32) -> u32 {
        self.r_wide(conn_nonce, u64::from(x))
    }

    /// See [`NonceGen::packet_nonce`].
    pub fn packet_nonce(&self, conn_nonce: u64, i: u32) -> u32 {
        let x = u64::from(i);
        self.r_xor(conn_nonce, x, x + 1)
    }

    /// See [`NonceGen::range_nonce`].
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

impl fmt::Debug for Prf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Prf { .. }")
    }
}

impl NonceGen {
    /// Prepares the PRF under `key`.
    pub fn new(key: &[u8; 16]) -> NonceGen {
        NonceGen {
            aes: <Aes128 as KeyInit>::new(&(*key).into()),
        }
    }

    /// Runs `f` with the PRF inside a single dispatch of the `aes` crate, and returns what
    /// `f` returns. Use it to compute many nonces at once (a response's packet nonces, a
    /// proof's range nonces); [`verify_proof`](crate::sack::verify_proof) does.
    ///
    /// `fallback` is returned if the cipher backend never runs `f` (it always runs it
    /// exactly once); pass a fail-closed value.
    pub fn with_prf<R>(&self, fallback: R, f: impl FnOnce(&Prf<'_>) -> R) -> R {
        with_aes(&self.aes, fallback, |enc| f(&Prf { enc }))
    }

    /// `r_x`: word `x mod 4` (big-endian `u32` words) of
    /// `AES_K(conn_nonce.to_be_bytes() || (x / 4) as u64, big-endian)`.
    pub fn r(&self, conn_nonce: u64, x: u32) -> u32 {
        self.with_prf(0, |p| p.r(conn_nonce, x))
    }

    /// `p_i = r_i ^ r_{i+1}`, the nonce packet `i` carries. One AES evaluation when
    /// `i % 4 != 3` (both words in one block), two otherwise.
    pub fn packet_nonce(&self, conn_nonce: u64, i: u32) -> u32 {
        self.with_prf(0, |p| p.packet_nonce(conn_nonce, i))
    }

    /// The range nonce of packets `first..=last`:
    /// `p_first ^ ... ^ p_last = r_first ^ r_{last+1}`, with at most two AES evaluations
    /// (one when both ends fall in the same block).
    ///
    /// For `first > last` this is still `r_first ^ r_{last+1}` (0 when `first == last + 1`,
    /// the empty range); callers check `first <= last` first, as
    /// [`verify_proof`](crate::sack::verify_proof) does.
    pub fn range_nonce(&self, conn_nonce: u64, first: u32, last: u32) -> u32 {
        self.with_prf(0, |p| p.range_nonce(conn_nonce, first, last))
    }
}

impl fmt::Debug for NonceGen {
    /// Key material is not shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NonceGen { .. }")
    }
}

/// A server's prepared keys: two live MAC keys and the two nonce PRFs.
///
/// Build it once from a [`KeyConfig`]; every method takes `&self`, so one `ServerKeys` can be
/// shared by all the server's workers. Call [`rotate`](ServerKeys::rotate) to move to a new
/// key epoch.
#[derive(Clone)]
pub struct ServerKeys {
    /// `macs[e % 2]` is the key of live epoch `e`.
    macs: [MacKey; 2],
    current_epoch: u8,
    nonce: NonceGen,
    rtx_nonce: NonceGen,
}

impl ServerKeys {
    /// Prepares every key of `cfg`.
    pub fn new(cfg: &KeyConfig) -> ServerKeys {
        ServerKeys {
            macs: [MacKey::new(&cfg.mac_keys[0]), MacKey::new(&cfg.mac_keys[1])],
            current_epoch: cfg.current_epoch,
            nonce: NonceGen::new(&cfg.nonce_key),
            rtx_nonce: NonceGen::new(&cfg.rtx_nonce_key),
        }
    }

    /// The epoch new continuations are issued under.
    pub fn current_epoch(&self) -> u8 {
        self.current_epoch
    }

    /// Whether tags of `epoch` are accepted: the current epoch and the one before it.
    pub fn is_live(&self, epoch: u8) -> bool {
        epoch == self.current_epoch || epoch == self.current_epoch.wrapping_sub(1)
    }

    /// Installs `key` as epoch `current + 1`, which becomes current. The old current epoch
    /// stays live; the one before it dies (its slot is overwritten).
    ///
    /// Replicas must rotate together: a replica still on the old epoch rejects the new
    /// epoch's continuations.
    pub fn rotate(&mut self, key: [u8; 16]) {
        let next = self.current_epoch.wrapping_add(1);
        *self.slot_mut(next) = MacKey::new(&key);
        self.current_epoch = next;
    }

    fn slot(&self, epoch: u8) -> &MacKey {
        let [even, odd] = &self.macs;
        if epoch.is_multiple_of(2) { even } else { odd }
    }

    fn slot_mut(&mut self, epoch: u8) -> &mut MacKey {
        let [even, odd] = &mut self.macs;
        if epoch.is_multiple_of(2) { even } else { odd }
    }

    /// AES-128-CMAC over `FourTuple::encode(tuple) || fields` under the key of `epoch`;
    /// `None` if `epoch` is not live.
    pub fn mac(&self, epoch: u8, tuple: &FourTuple, fields: &[u8]) -> Option<Tag> {
        if !self.is_live(epoch) {
            return None;
        }
        let mut enc = [0u8; FOUR_TUPLE_MAX_LEN];
        let n = tuple.encode(&mut enc);
        let enc = enc.get(..n).unwrap_or(&enc);
        Some(self.slot(epoch).tag(&[enc, fields]))
    }

    /// Whether `tag` is [`mac`](ServerKeys::mac)`(epoch, tuple, fields)`, compared in
    /// constant time; `false` if `epoch` is not live.
    ///
    /// Call this before anything else touches a request (in particular before the replay
    /// filter), so forged packets cost one CMAC and change no state.
    pub fn verify(&self, epoch: u8, tuple: &FourTuple, fields: &[u8], tag: &Tag) -> bool {
        if !self.is_live(epoch) {
            return false;
        }
        let mut enc = [0u8; FOUR_TUPLE_MAX_LEN];
        let n = tuple.encode(&mut enc);
        let enc = enc.get(..n).unwrap_or(&enc);
        self.slot(epoch).verify(&[enc, fields], tag)
    }

    /// The 64-bit per-connection nonce, derived statelessly at SYN time: the first 8 bytes
    /// (big-endian) of the CMAC under the current key of `"conn" || encode(tuple) ||
    /// client_isn` (big-endian).
    ///
    /// The server computes it once, on the SYN, and carries it in the connection's
    /// (MAC-protected) continuations from then on; it does not need to be recomputable
    /// after a key rotation.
    pub fn conn_nonce(&self, tuple: &FourTuple, client_isn: u32) -> u64 {
        let mut enc = [0u8; FOUR_TUPLE_MAX_LEN];
        let n = tuple.encode(&mut enc);
        let enc = enc.get(..n).unwrap_or(&enc);
        let tag =
            self.slot(self.current_epoch)
                .tag(&[CONN_NONCE_LABEL, enc, &client_isn.to_be_bytes()]);
        let mut first = [0u8; 8];
        first.copy_from_slice(&tag[..8]);
        u64::from_be_bytes(first)
    }

    /// The nonce PRF of `kind`: `K` for originals, `K'` for retransmissions.
    pub fn nonces(&self, kind: NonceKind) -> &NonceGen {
        match kind {
            NonceKind::Original => &self.nonce,
            NonceKind::Retransmit => &self.rtx_nonce,
        }
    }
}

impl fmt::Debug for ServerKeys {
    /// Shows the epoch only: key bytes never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerKeys")
            .field("current_epoch", &self.current_epoch)
            .finish_non_exhaustive()
    }
}
