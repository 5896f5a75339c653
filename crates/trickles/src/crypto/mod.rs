//! The server's secrets: continuation MACs, connection nonces and the packet-nonce PRF.
//!
//! Trickles keeps a connection's server state in the client's hands (§2.2 of the paper), so
//! the server needs three cryptographic tools, all built on AES-128:
//!
//! * **Continuation MACs** ([`ServerKeys::mac_continuation`],
//!   [`ServerKeys::verify_continuation`]): AES-128-CMAC (RFC 4493) over the connection's
//!   [`FourTuple`] and the server-owned continuation fields, packed into 48 bytes (three
//!   AES blocks) for IPv4. [`ServerKeys::mac`] and [`ServerKeys::verify`] are the same CMAC
//!   over `encode(tuple) || fields` for any byte string. The original Linux module used HMAC-MD5; CMAC needs only the AES block cipher
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
//!  KeyConfig ──► ServerKeys ─┬─ mac/verify_continuation(tuple, c) ─ continuation tags
//!                            ├─ conn_nonce(tuple, client_isn) ───── per-connection nonce
//!                            └─ nonces(kind) ─► NonceGen ─ r / packet_nonce / range_nonce
//! ```
//!
//! ## Performance: which `aes` crate, and AES-NI compiled in
//!
//! The AES comes from RustCrypto's `aes` **0.8**, not 0.9. Version 0.9 chooses among its
//! backends at run time on every call into the cipher and, on CPUs with AVX-512 VAES (Intel
//! Ice Lake and later, AMD Zen 4, this machine), picks a VAES-512 backend whose entry copies
//! all eleven round keys into ZMM registers, whatever the number of blocks: about 60–70 ns
//! per call here, more than the 4-block CMAC it wraps. Nothing short of compiling for
//! `+avx512f,+vaes` (a binary that dies on most x86-64 machines) or `unsafe` code avoids that
//! entry. Version 0.8 has only AES-NI and software backends; with AES-NI enabled at compile
//! time its check is a constant and each block is a few inlined `aesenc` instructions.
//! Measured with `server_per_request interleave 5` (medians, ns per request, same run):
//!
//! | server path                           | `aes` 0.9 | `aes` 0.8 |
//! |---------------------------------------|----------:|----------:|
//! | valid request + its responses emitted |       672 |       514 |
//! | forged request (one CMAC, rejected)   |       258 |       199 |
//!
//! `aes` 0.9 stays a dev-dependency, as an independent implementation the tests check our
//! PRF and CMAC (and the `cmac` crate, which needs 0.9) against.
//!
//! AES-NI is compiled in by the workspace's `.cargo/config.toml`, which builds x86-64 Linux
//! targets with `-C target-feature=+aes,+ssse3,+sse4.1,+pclmulqdq`; every x86-64 CPU since
//! about 2010 has them. Without it the crate detects AES-NI at run time (still fast, one
//! predictable branch per block). The test `aes_ni_is_compiled_in` in `tests/crypto.rs`
//! fails if a build loses the flags (setting `RUSTFLAGS` replaces the config's flags rather
//! than adding to them). On AArch64, `aes` 0.8 uses the ARMv8 AES instructions only when
//! built with `--cfg aes_armv8` (the config sets it for the Linux target); otherwise it
//! uses its constant-time bitsliced software backend, as it does on `x86_64-unknown-none`.
//!
//! CMAC is written here (RFC 4493, checked against the RFC's vectors and the `cmac` crate)
//! so that a continuation's MAC is one straight-line function over `u128` blocks.
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

use crate::conn::{Addr, FOUR_TUPLE_MAX_LEN, FourTuple};
use crate::wire::continuation::{CONTINUATION_FLAG_DELAYED_ACK, Continuation};

mod cmac;
mod nonce;
mod rotation;
mod schedule;

pub use cmac::MacKey;
use cmac::encrypt;
pub use nonce::{NonceGen, NonceKind};
pub use rotation::Rotation;
pub use schedule::KeySchedule;

/// Length of a MAC tag: a full AES-128-CMAC output, untruncated.
pub const TAG_LEN: usize = 16;

/// A MAC tag.
pub type Tag = [u8; TAG_LEN];

/// Most continuation MACs [`ServerKeys::mac_continuations`] computes side by side (IPv4).
pub const MAC_LANES: usize = 4;

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

/// Longest continuation MAC input: family byte, two IPv6 addresses and two ports, and the
/// 35 continuation bytes it covers.
const CONT_MAC_MAX: usize = 1 + 16 + 2 + 16 + 2 + 35;

/// Length of the continuation MAC input of an IPv4 connection: exactly three blocks.
#[cfg(test)]
const CONT_MAC_V4: usize = 48;

/// The continuation MAC input of `c` on `tuple` into `out`; returns its length (48 for
/// IPv4, 72 for IPv6, 60 for mixed families).
///
/// The input is `FourTuple::encode(tuple)` with `c.epoch_start` (0, 1 or 2) folded into the
/// family byte's free bits 0 and 7 and `c.flags`' one defined bit
/// ([`CONTINUATION_FLAG_DELAYED_ACK`]) into its free bit 4 (the family bytes 4, 6, 46 and
/// 64 are even, below 128 and clear in bit 4), then continuation bytes `0..24` (`number`
/// through `timestamp_ms`), 25 (`rtx`), `26..28` (`site`) and `30..38` (`conn_nonce`).
/// Left out: `key_epoch`, which selects the key and so is bound by it, and the reserved
/// `flags` bits, which are always 0 (`Continuation::parse` rejects anything else and
/// [`ServerKeys::verify_continuation`] refuses it). The encoding
/// is injective over every continuation that parses, so the MAC still covers every field;
/// it is 48 bytes for IPv4 where `encode(tuple) || mac_fields()` was 51, which saves a
/// fourth AES block on every continuation MAC and check. Its lengths also differ from
/// every [`ServerKeys::conn_nonce`] input's (21, 33 and 45 bytes), and its first byte is
/// never that label's `c`.
#[inline(always)]
fn continuation_mac_input(
    tuple: &FourTuple,
    c: &Continuation,
    out: &mut [u8; CONT_MAC_MAX],
) -> usize {
    let family = match (tuple.client_addr, tuple.server_addr) {
        (Addr::V4(_), Addr::V4(_)) => 4u8,
        (Addr::V6(_), Addr::V6(_)) => 6,
        (Addr::V4(_), Addr::V6(_)) => 46,
        (Addr::V6(_), Addr::V4(_)) => 64,
    };
    let mut n = 0;
    let mut put = |bytes: &[u8]| {
        if let Some(dst) = out.get_mut(n..n + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        n += bytes.len();
    };
    put(&[family_byte(family, c)]);
    put(tuple.client_addr.as_bytes());
    put(&tuple.client_port.to_be_bytes());
    put(tuple.server_addr.as_bytes());
    put(&tuple.server_port.to_be_bytes());
    put(&c.number.to_be_bytes());
    put(&c.tcp_base.to_be_bytes());
    put(&c.start_cwnd.to_be_bytes());
    put(&c.ssthresh.to_be_bytes());
    put(&c.proof_start.to_be_bytes());
    put(&c.rtt_us.to_be_bytes());
    put(&c.timestamp_ms.to_be_bytes());
    put(&[c.rtx]);
    put(&c.site.to_be_bytes());
    put(&c.conn_nonce.to_be_bytes());
    n
}

/// The first byte of a continuation MAC input: the four-tuple's `family` byte with
/// `c.epoch_start` in bits 0 and 7 and `c.flags`' delayed-ack bit in bit 4.
#[inline(always)]
fn family_byte(family: u8, c: &Continuation) -> u8 {
    let es = u8::from(c.epoch_start);
    let delayed = c.flags & CONTINUATION_FLAG_DELAYED_ACK;
    family | (es & 1) | ((es & 2) << 6) | (delayed << 4)
}

/// The three blocks of an IPv4 connection's continuation MAC input
/// ([`continuation_mac_input`]'s 48 bytes), built in registers as big-endian integers and
/// returned in the native-endian form CMAC works in. Building them byte by byte in memory
/// and then loading 16 bytes at a time stalls each load until the narrow stores before it
/// have retired (a store-forwarding failure): about a fifth of a request's time went there.
#[inline(always)]
fn continuation_blocks_v4(
    client: [u8; 4],
    server: [u8; 4],
    tuple: &FourTuple,
    c: &Continuation,
) -> [u128; 3] {
    let family = family_byte(4, c);
    let w = |x: u32| u128::from(x);
    let number = c.number;
    let rtt = c.rtt_us;
    // Bytes 0..16: family, client address and port, server address and port, the first
    // three bytes of `number`.
    let b0 = u128::from(family) << 120
        | w(u32::from_be_bytes(client)) << 88
        | u128::from(tuple.client_port) << 72
        | w(u32::from_be_bytes(server)) << 40
        | u128::from(tuple.server_port) << 24
        | w(number >> 8);
    // Bytes 16..32: the last byte of `number`, `tcp_base`, `start_cwnd`, `ssthresh`,
    // `proof_start`, the first three bytes of `rtt_us`.
    let b1 = w(number & 0xff) << 120
        | w(c.tcp_base) << 88
        | u128::from(c.start_cwnd) << 72
        | u128::from(c.ssthresh) << 56
        | w(c.proof_start) << 24
        | w(rtt >> 8);
    // Bytes 32..48: the last byte of `rtt_us`, `timestamp_ms`, `rtx`, `site`, `conn_nonce`.
    let b2 = w(rtt & 0xff) << 120
        | w(c.timestamp_ms) << 88
        | u128::from(c.rtx) << 80
        | u128::from(c.site) << 64
        | u128::from(c.conn_nonce);
    [b0.to_be(), b1.to_be(), b2.to_be()]
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

    /// The identity of the key of `epoch` (see `MacKey::id`), or `None` if `epoch` is not
    /// live: a continuation cached under id `i` may skip verification only while its
    /// epoch's key still has id `i`, so a rotation (or new keys) invalidates it.
    pub(crate) fn key_id(&self, epoch: u8) -> Option<u64> {
        self.is_live(epoch).then(|| self.slot(epoch).id())
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

    /// The tag of continuation `c` on `tuple`: AES-128-CMAC, under the key of
    /// `c.key_epoch`, of the continuation MAC input (the four-tuple's encoding with
    /// `epoch_start` and the delayed-ack flag folded into its family byte, then every
    /// continuation field but `key_epoch`, which picks the key; 48 bytes, three AES
    /// blocks, for IPv4). `c.tag` is ignored. `None` if the epoch is not live or a reserved
    /// `flags` bit is set.
    ///
    /// This is what the server puts in the continuations it issues and checks with
    /// [`verify_continuation`](ServerKeys::verify_continuation); it is not
    /// [`mac`](ServerKeys::mac) of the continuation's bytes.
    pub fn mac_continuation(&self, tuple: &FourTuple, c: &Continuation) -> Option<Tag> {
        if !self.is_live(c.key_epoch) || !c.flags_valid() {
            return None;
        }
        Some(self.continuation_tag(tuple, c).to_ne_bytes())
    }

    /// Sets the tag of every continuation in `cs`, all on `tuple`, to
    /// [`mac_continuation`](ServerKeys::mac_continuation)`(tuple, c)`, or to zeros where
    /// that is `None` (epoch not live, reserved flag); returns how many got a real tag.
    ///
    /// The same tags as one call per continuation, computed faster: for IPv4 the
    /// continuations' CMAC chains (three dependent AES blocks each) run side by side, up to
    /// [`MAC_LANES`] at a time, so their AES work overlaps. A server answering a request
    /// with several continuations (slow start, delayed acknowledgments) MACs them all with
    /// one call. Continuations of another key epoch than the one before them start a new
    /// group (a group shares one key); IPv6 and mixed-family tuples take the general CMAC,
    /// one continuation after another.
    pub fn mac_continuations<'c>(
        &self,
        tuple: &FourTuple,
        cs: impl IntoIterator<Item = &'c mut Continuation>,
    ) -> usize {
        let (Addr::V4(client), Addr::V4(server)) = (tuple.client_addr, tuple.server_addr) else {
            let mut macd = 0;
            for c in cs {
                let tag = self.mac_continuation(tuple, c);
                macd += usize::from(tag.is_some());
                c.tag = tag.unwrap_or_default();
            }
            return macd;
        };
        let mut group: [Option<&'c mut Continuation>; MAC_LANES] = Default::default();
        let mut len = 0;
        let mut slot_of_group = 0u8;
        let mut macd = 0;
        for c in cs {
            if !self.mac_ok(c) {
                c.tag = [0; TAG_LEN];
                continue;
            }
            let slot = c.key_epoch & 1;
            if len == MAC_LANES || (len > 0 && slot != slot_of_group) {
                let full = group.get_mut(..len).unwrap_or_default();
                macd += self.mac_group_v4(client, server, tuple, full);
                len = 0;
            }
            slot_of_group = slot;
            if let Some(g) = group.get_mut(len) {
                *g = Some(c);
                len += 1;
            }
        }
        let rest = group.get_mut(..len).unwrap_or_default();
        macd + self.mac_group_v4(client, server, tuple, rest)
    }

    /// Whether `c` can be MACed: its epoch is live and no reserved flag is set.
    #[inline(always)]
    fn mac_ok(&self, c: &Continuation) -> bool {
        self.is_live(c.key_epoch) && c.flags_valid()
    }

    /// Tags the continuations of `group` (IPv4 on `tuple`; all of one key epoch slot, live,
    /// flags valid) side by side; empties the group and returns its length.
    #[inline(always)]
    fn mac_group_v4(
        &self,
        client: [u8; 4],
        server: [u8; 4],
        tuple: &FourTuple,
        group: &mut [Option<&mut Continuation>],
    ) -> usize {
        let Some(Some(first)) = group.first() else {
            return 0;
        };
        let key = self.slot(first.key_epoch);
        let blocks = |c: &Option<&mut Continuation>| {
            c.as_deref()
                .map_or([0; 3], |c| continuation_blocks_v4(client, server, tuple, c))
        };
        // One instance per group size: each runs its lanes straight through.
        fn put(group: &mut [Option<&mut Continuation>], tags: &[u128]) {
            for (c, t) in group.iter_mut().zip(tags) {
                if let Some(c) = c.take() {
                    c.tag = t.to_ne_bytes();
                }
            }
        }
        match &*group {
            [a] => put(group, &[key.tag3_blocks(blocks(a))]),
            [a, b] => {
                let tags = key.tag3_lanes(&[blocks(a), blocks(b)]);
                put(group, &tags);
            }
            [a, b, c] => {
                let tags = key.tag3_lanes(&[blocks(a), blocks(b), blocks(c)]);
                put(group, &tags);
            }
            [a, b, c, d] => {
                let tags = key.tag3_lanes(&[blocks(a), blocks(b), blocks(c), blocks(d)]);
                put(group, &tags);
            }
            _ => {
                for c in group.iter_mut().filter_map(Option::take) {
                    c.tag = key
                        .tag3_blocks(continuation_blocks_v4(client, server, tuple, c))
                        .to_ne_bytes();
                }
            }
        }
        group.len()
    }

    /// Whether `c.tag` is [`mac_continuation`](ServerKeys::mac_continuation)`(tuple, c)`,
    /// compared in constant time; `false` if `c.key_epoch` is not live or a reserved
    /// `c.flags` bit is set.
    ///
    /// Call this before anything else touches a request (in particular before the replay
    /// filter), so forged packets cost one CMAC and change no state.
    pub fn verify_continuation(&self, tuple: &FourTuple, c: &Continuation) -> bool {
        if !self.is_live(c.key_epoch) || !c.flags_valid() {
            return false;
        }
        // One 128-bit XOR, compared as a whole: no early exit on the first differing byte.
        let diff = self.continuation_tag(tuple, c) ^ u128::from_ne_bytes(c.tag);
        core::hint::black_box(diff) == 0
    }

    /// The continuation tag under the key of `c.key_epoch`'s slot (liveness is the
    /// caller's to check).
    #[inline]
    fn continuation_tag(&self, tuple: &FourTuple, c: &Continuation) -> u128 {
        let key = self.slot(c.key_epoch);
        if let (Addr::V4(client), Addr::V4(server)) = (tuple.client_addr, tuple.server_addr) {
            return key.tag3_blocks(continuation_blocks_v4(client, server, tuple, c));
        }
        let mut input = [0u8; CONT_MAC_MAX];
        let n = continuation_mac_input(tuple, c, &mut input);
        key.tag_u128(&[input.get(..n).unwrap_or_default()])
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

#[cfg(test)]
mod tests;
