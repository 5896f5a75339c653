//! Continuation MACs, key epochs and the packet-nonce PRF (paper §2.2).

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

// `aes` 0.9: an implementation independent of the `aes` 0.8 the crate uses, and the one
// the `cmac` crate needs.
use aes09::Aes128;
use aes09::cipher::{BlockCipherEncrypt, KeyInit};
use cmac::{Cmac, Mac};
use proptest::prelude::*;
use trickles::conn::{Addr, FOUR_TUPLE_MAX_LEN, FourTuple};
use trickles::crypto::{KeyConfig, MacKey, NonceGen, NonceKind, ServerKeys, Tag, ct_eq};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn tag(s: &str) -> Tag {
    hex(s).try_into().unwrap()
}

fn config() -> KeyConfig {
    KeyConfig {
        mac_keys: [[0xa0; 16], [0xa1; 16]],
        current_epoch: 9,
        nonce_key: [0xb0; 16],
        rtx_nonce_key: [0xb1; 16],
    }
}

fn v4_tuple() -> FourTuple {
    FourTuple {
        client_addr: Addr::V4([192, 0, 2, 33]),
        client_port: 51_000,
        server_addr: Addr::V4([198, 51, 100, 7]),
        server_port: 443,
    }
}

fn encode(t: &FourTuple) -> Vec<u8> {
    let mut buf = [0u8; FOUR_TUPLE_MAX_LEN];
    let n = t.encode(&mut buf);
    buf[..n].to_vec()
}

fn flip(bytes: &[u8], bit: usize) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v[bit / 8] ^= 1 << (bit % 8);
    v
}

// ---- AES-128-CMAC -------------------------------------------------------------------

/// RFC 4493 §4, all four examples (key 2b7e1516...).
#[test]
fn cmac_matches_rfc4493_vectors() {
    let key: [u8; 16] = hex("2b7e1516 28aed2a6 abf71588 09cf4f3c")
        .try_into()
        .unwrap();
    let msg = hex(
        "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51
         30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710",
    );
    let k = MacKey::new(&key);
    let cases = [
        (0, "bb1d6929 e9593728 7fa37d12 9b756746"),
        (16, "070a16b4 6b4d4144 f79bdd9d d04a287c"),
        (40, "dfa66747 de9ae630 30ca3261 1497c827"),
        (64, "51f0bebf 7e3b9d92 fc497417 79363cfe"),
    ];
    for (len, expected) in cases {
        let expected = tag(expected);
        assert_eq!(
            k.tag(&[&msg[..len]]),
            expected,
            "RFC 4493, {len}-byte message"
        );
        assert!(k.verify(&[&msg[..len]], &expected));
        // The same message cut into parts at every point gives the same tag.
        for cut in 0..=len {
            assert_eq!(
                k.tag(&[&msg[..cut], &msg[cut..len]]),
                expected,
                "cut at {cut}"
            );
        }
    }
    assert_eq!(k.tag(&[]), tag("bb1d6929 e9593728 7fa37d12 9b756746"));
}

proptest! {
    /// Our CMAC agrees with the `cmac` crate on random keys, lengths and
    /// splits of the input into parts.
    #[test]
    fn cmac_matches_cmac_crate(
        key in any::<[u8; 16]>(),
        msg in proptest::collection::vec(any::<u8>(), 0..200),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let mut reference = <Cmac<Aes128> as KeyInit>::new(&key.into());
        reference.update(&msg);
        let expected: Tag = reference.finalize().into_bytes().into();

        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(msg.len() + 1)).collect();
        points.sort_unstable();
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut start = 0;
        for p in points {
            parts.push(&msg[start..p]);
            start = p;
        }
        parts.push(&msg[start..]);
        prop_assert_eq!(MacKey::new(&key).tag(&parts), expected);
    }
}

// ---- Continuation MACs: every bit counts ----------------------------------------------

/// The continuation MAC is the CMAC of `encode(tuple) || fields` under the epoch's key.
#[test]
fn server_mac_is_cmac_of_tuple_then_fields() {
    let cfg = config();
    let keys = ServerKeys::new(&cfg);
    let fields = [0x5a; 54];
    let t = v4_tuple();
    let expected = MacKey::new(&cfg.mac_keys[9 % 2]).tag(&[&encode(&t), &fields]);
    assert_eq!(keys.mac(9, &t, &fields), Some(expected));
    let expected8 = MacKey::new(&cfg.mac_keys[8 % 2]).tag(&[&encode(&t), &fields]);
    assert_eq!(keys.mac(8, &t, &fields), Some(expected8));
}

/// Exhaustive over one sample: flipping any single bit of the tuple encoding, the fields
/// or the tag makes verification fail.
#[test]
fn every_single_bit_flip_is_rejected() {
    let cfg = config();
    let keys = ServerKeys::new(&cfg);
    let mac = MacKey::new(&cfg.mac_keys[1]);
    let t = v4_tuple();
    let enc = encode(&t);
    let fields: Vec<u8> = (0..54u8).map(|i| i.wrapping_mul(29)).collect();
    let good = keys.mac(9, &t, &fields).unwrap();
    assert!(keys.verify(9, &t, &fields, &good));
    assert!(mac.verify(&[&enc, &fields], &good));

    for bit in 0..enc.len() * 8 {
        assert!(
            !mac.verify(&[&flip(&enc, bit), &fields], &good),
            "tuple bit {bit}"
        );
    }
    for bit in 0..fields.len() * 8 {
        assert!(
            !keys.verify(9, &t, &flip(&fields, bit), &good),
            "field bit {bit}"
        );
    }
    for bit in 0..TAG_BITS {
        let bad: Tag = flip(&good, bit).try_into().unwrap();
        assert!(!keys.verify(9, &t, &fields, &bad), "tag bit {bit}");
    }
    // Through the FourTuple itself: every address and port bit.
    let (Addr::V4(ca), Addr::V4(sa)) = (t.client_addr, t.server_addr) else {
        unreachable!()
    };
    for bit in 0..32 {
        let mut u = t;
        u.client_addr = Addr::V4(flip(&ca, bit).try_into().unwrap());
        assert!(!keys.verify(9, &u, &fields, &good), "client addr bit {bit}");
        let mut u = t;
        u.server_addr = Addr::V4(flip(&sa, bit).try_into().unwrap());
        assert!(!keys.verify(9, &u, &fields, &good), "server addr bit {bit}");
    }
    for bit in 0..16 {
        let mut u = t;
        u.client_port ^= 1 << bit;
        assert!(!keys.verify(9, &u, &fields, &good), "client port bit {bit}");
        let mut u = t;
        u.server_port ^= 1 << bit;
        assert!(!keys.verify(9, &u, &fields, &good), "server port bit {bit}");
    }
    // A truncated or extended field block is another message.
    assert!(!keys.verify(9, &t, &fields[..53], &good));
    let mut longer = fields.clone();
    longer.push(0);
    assert!(!keys.verify(9, &t, &longer, &good));
}

const TAG_BITS: usize = 128;

fn tuple_strategy() -> impl Strategy<Value = FourTuple> {
    let v4 = (
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<[u8; 4]>(),
        any::<u16>(),
    )
        .prop_map(|(c, cp, s, sp)| FourTuple {
            client_addr: Addr::V4(c),
            client_port: cp,
            server_addr: Addr::V4(s),
            server_port: sp,
        });
    let v6 = (
        any::<[u8; 16]>(),
        any::<u16>(),
        any::<[u8; 16]>(),
        any::<u16>(),
    )
        .prop_map(|(c, cp, s, sp)| FourTuple {
            client_addr: Addr::V6(c),
            client_port: cp,
            server_addr: Addr::V6(s),
            server_port: sp,
        });
    prop_oneof![v4, v6]
}

proptest! {
    /// Random keys, tuples (IPv4 and IPv6) and fields: a random single-bit flip of the
    /// tuple encoding, the fields or the tag is rejected.
    #[test]
    fn random_single_bit_flips_are_rejected(
        mac_key in any::<[u8; 16]>(),
        t in tuple_strategy(),
        fields in proptest::collection::vec(any::<u8>(), 1..100),
        which in 0..3u8,
        bit in any::<prop::sample::Index>(),
    ) {
        let cfg = KeyConfig { mac_keys: [mac_key, [0; 16]], current_epoch: 0, ..config() };
        let keys = ServerKeys::new(&cfg);
        let mac = MacKey::new(&mac_key);
        let enc = encode(&t);
        let good = keys.mac(0, &t, &fields).unwrap();
        prop_assert!(keys.verify(0, &t, &fields, &good));
        match which {
            0 => {
                let b = bit.index(enc.len() * 8);
                prop_assert!(!mac.verify(&[&flip(&enc, b), &fields], &good));
            }
            1 => {
                let b = bit.index(fields.len() * 8);
                prop_assert!(!keys.verify(0, &t, &flip(&fields, b), &good));
            }
            _ => {
                let bad: Tag = flip(&good, bit.index(TAG_BITS)).try_into().unwrap();
                prop_assert!(!keys.verify(0, &t, &fields, &bad));
            }
        }
    }
}

// ---- Key epochs -----------------------------------------------------------------------

#[test]
fn rotation_keeps_the_previous_epoch_and_kills_the_one_before() {
    let mut keys = ServerKeys::new(&config());
    let t = v4_tuple();
    let fields = b"some continuation fields";
    assert_eq!(keys.current_epoch(), 9);
    assert!(keys.is_live(9) && keys.is_live(8));
    assert!(!keys.is_live(7) && !keys.is_live(10));
    assert_eq!(keys.mac(10, &t, fields), None);
    let tag8 = keys.mac(8, &t, fields).unwrap();
    let tag9 = keys.mac(9, &t, fields).unwrap();
    assert_ne!(tag8, tag9);

    keys.rotate([0xc0; 16]);
    assert_eq!(keys.current_epoch(), 10);
    let tag10 = keys.mac(10, &t, fields).unwrap();
    assert!(
        keys.verify(9, &t, fields, &tag9),
        "previous epoch still verifies"
    );
    assert!(keys.verify(10, &t, fields, &tag10));
    assert!(
        !keys.verify(8, &t, fields, &tag8),
        "two epochs back is dead"
    );
    assert_eq!(keys.mac(8, &t, fields), None);
    // A tag of epoch 9 presented as epoch 10 (or the reverse) fails.
    assert!(!keys.verify(10, &t, fields, &tag9));
    assert!(!keys.verify(9, &t, fields, &tag10));

    keys.rotate([0xc1; 16]);
    assert!(keys.verify(10, &t, fields, &tag10));
    assert!(!keys.verify(9, &t, fields, &tag9));
    // Epoch 11's key went into epoch 9's slot: a stale epoch-9 tag relabelled 11 fails.
    assert!(!keys.verify(11, &t, fields, &tag9));
}

#[test]
fn epochs_wrap_around_u8() {
    let mut keys = ServerKeys::new(&KeyConfig {
        current_epoch: 255,
        ..config()
    });
    assert!(keys.is_live(255) && keys.is_live(254) && !keys.is_live(0));
    let t = v4_tuple();
    let tag255 = keys.mac(255, &t, b"x").unwrap();
    keys.rotate([7; 16]);
    assert_eq!(keys.current_epoch(), 0);
    assert!(keys.is_live(0) && keys.is_live(255) && !keys.is_live(254));
    assert!(keys.verify(255, &t, b"x", &tag255));
    let tag0 = keys.mac(0, &t, b"x").unwrap();
    assert_eq!(tag0, MacKey::new(&[7; 16]).tag(&[&encode(&t), b"x"]));
}

#[test]
fn replicas_with_one_config_agree() {
    let (a, b) = (ServerKeys::new(&config()), ServerKeys::new(&config()));
    let t = v4_tuple();
    let tag = a.mac(9, &t, b"fields").unwrap();
    assert!(b.verify(9, &t, b"fields", &tag));
    assert_eq!(a.conn_nonce(&t, 77), b.conn_nonce(&t, 77));
    let other = ServerKeys::new(&KeyConfig {
        mac_keys: [[1; 16], [2; 16]],
        ..config()
    });
    assert!(!other.verify(9, &t, b"fields", &tag));
}

#[test]
fn conn_nonce_depends_on_tuple_isn_and_key() {
    let mut keys = ServerKeys::new(&config());
    let t = v4_tuple();
    let n = keys.conn_nonce(&t, 1000);
    assert_eq!(n, keys.conn_nonce(&t, 1000));
    assert_ne!(n, keys.conn_nonce(&t, 1001));
    let mut u = t;
    u.client_port += 1;
    assert_ne!(n, keys.conn_nonce(&u, 1000));
    // It is the first 8 bytes of a domain-separated CMAC under the current key.
    let mac = MacKey::new(&config().mac_keys[1]);
    let full = mac.tag(&[b"conn", &encode(&t), &1000u32.to_be_bytes()]);
    assert_eq!(n, u64::from_be_bytes(full[..8].try_into().unwrap()));
    // Not the continuation MAC of any field block: the label keeps the inputs apart.
    assert_ne!(
        &keys.mac(9, &t, &1000u32.to_be_bytes()).unwrap()[..8],
        &n.to_be_bytes()
    );
    keys.rotate([0xee; 16]);
    assert_ne!(n, keys.conn_nonce(&t, 1000), "a new key gives new nonces");
}

#[test]
fn debug_output_hides_keys() {
    let cfg = config();
    let shown = format!("{cfg:?} {:?}", ServerKeys::new(&cfg));
    assert!(shown.contains("current_epoch: 9"), "{shown}");
    assert!(!shown.contains("160") && !shown.contains("a0"), "{shown}");
}

// ---- Constant-time comparison -------------------------------------------------------

#[test]
fn ct_eq_compares_whole_strings() {
    assert!(ct_eq(b"", b""));
    assert!(ct_eq(b"abc", b"abc"));
    assert!(!ct_eq(b"abc", b"abd"));
    assert!(!ct_eq(b"abc", b"bbc"));
    assert!(!ct_eq(b"abc", b"ab"));
    assert!(!ct_eq(b"", b"a"));
}

proptest! {
    #[test]
    fn ct_eq_is_slice_equality(a in any::<Vec<u8>>(), b in any::<Vec<u8>>()) {
        prop_assert_eq!(ct_eq(&a, &b), a == b);
        prop_assert!(ct_eq(&a, &a));
    }
}

// ---- Packet nonces --------------------------------------------------------------------

const NONCE_KEY: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
const CONN: u64 = 0x0011_2233_4455_6677;

/// Literal values from `openssl enc -aes-128-ecb` on `conn_nonce || block index`.
#[test]
fn r_matches_openssl_aes_blocks() {
    let g = NonceGen::new(&NONCE_KEY);
    // AES_K(0011223344556677 0000000000000002) = 9e0588d7 7ee7d187 98992e46 ace24b0c
    assert_eq!(
        [8, 9, 10, 11].map(|x| g.r(CONN, x)),
        [0x9e05_88d7, 0x7ee7_d187, 0x9899_2e46, 0xace2_4b0c]
    );
    // AES_K(... 000000003fffffff) = b00b56b4 44d12762 10ab3585 3c0adfa7
    assert_eq!(g.r(CONN, u32::MAX), 0x3c0a_dfa7);
    assert_eq!(g.r(CONN, u32::MAX - 1), 0x10ab_3585);
    assert_eq!(g.packet_nonce(CONN, 8), 0x9e05_88d7 ^ 0x7ee7_d187);
    assert_eq!(g.range_nonce(CONN, 8, 10), 0x9e05_88d7 ^ 0xace2_4b0c);
    // r_{2^32} is word 0 of AES_K(... 0000000040000000) = a5d63d3d ...
    assert_eq!(g.packet_nonce(CONN, u32::MAX), 0x3c0a_dfa7 ^ 0xa5d6_3d3d);
    assert_eq!(
        g.range_nonce(CONN, u32::MAX - 1, u32::MAX),
        0x10ab_3585 ^ 0xa5d6_3d3d
    );
}

proptest! {
    /// `r_x` is word `x mod 4` of the AES block `conn_nonce || x / 4`.
    #[test]
    fn r_is_a_word_of_an_aes_block(key in any::<[u8; 16]>(), conn in any::<u64>(), x in any::<u32>()) {
        let aes = <Aes128 as KeyInit>::new(&key.into());
        let mut block = [0u8; 16];
        block[..8].copy_from_slice(&conn.to_be_bytes());
        block[8..].copy_from_slice(&u64::from(x / 4).to_be_bytes());
        let mut b = aes09::Block::from(block);
        aes.encrypt_block(&mut b);
        let w = (x % 4) as usize * 4;
        let expected = u32::from_be_bytes(b[w..w + 4].try_into().unwrap());
        prop_assert_eq!(NonceGen::new(&key).r(conn, x), expected);
    }

    #[test]
    fn packet_nonce_is_r_i_xor_r_i_plus_1(key in any::<[u8; 16]>(), conn in any::<u64>(), i in index_strategy()) {
        let g = NonceGen::new(&key);
        let p = g.packet_nonce(conn, i);
        if let Some(next) = i.checked_add(1) {
            prop_assert_eq!(p, g.r(conn, i) ^ g.r(conn, next));
        }
        prop_assert_eq!(p, g.range_nonce(conn, i, i));
    }

    /// The range nonce is the XOR of the range's packet nonces, for ranges of up to 200
    /// packets anywhere (across 4-word block boundaries, up to `u32::MAX`).
    #[test]
    fn range_nonce_is_xor_of_packet_nonces(
        key in any::<[u8; 16]>(),
        conn in any::<u64>(),
        first in index_strategy(),
        len in 0u32..200,
    ) {
        let g = NonceGen::new(&key);
        let last = first.saturating_add(len);
        let xor = (first..=last).fold(0, |acc, i| acc ^ g.packet_nonce(conn, i));
        prop_assert_eq!(g.range_nonce(conn, first, last), xor);
    }
}

/// Packet numbers near 0, near 4-word block boundaries, near `u32::MAX`, or anywhere.
fn index_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..300,
        (0u32..1 << 28, 0u32..8).prop_map(|(b, d)| (b * 4).wrapping_add(d).wrapping_sub(4)),
        (0u32..300).prop_map(|d| u32::MAX - d),
        any::<u32>(),
    ]
}

#[test]
fn empty_range_nonce_is_zero_and_nothing_panics_at_the_edges() {
    let g = NonceGen::new(&NONCE_KEY);
    assert_eq!(g.range_nonce(CONN, 5, 4), 0);
    // r_{2^32} = p_MAX ^ r_MAX, so the whole packet-number space is r_0 ^ p_MAX ^ r_MAX.
    let r_top = g.packet_nonce(CONN, u32::MAX) ^ g.r(CONN, u32::MAX);
    assert_eq!(g.range_nonce(CONN, 0, u32::MAX), g.r(CONN, 0) ^ r_top);
    let _ = g.range_nonce(CONN, u32::MAX, 0);
    let _ = g.packet_nonce(u64::MAX, u32::MAX);
}

#[test]
fn retransmit_key_gives_unrelated_nonces() {
    let keys = ServerKeys::new(&config());
    let (orig, rtx) = (
        keys.nonces(NonceKind::Original),
        keys.nonces(NonceKind::Retransmit),
    );
    let conn = keys.conn_nonce(&v4_tuple(), 5);
    let same = (0..1000)
        .filter(|&i| orig.packet_nonce(conn, i) == rtx.packet_nonce(conn, i))
        .count();
    assert_eq!(same, 0);
    assert_eq!(
        orig.r(conn, 3),
        NonceGen::new(&config().nonce_key).r(conn, 3)
    );
    assert_eq!(
        rtx.r(conn, 3),
        NonceGen::new(&config().rtx_nonce_key).r(conn, 3)
    );
}

// ---- The AES fast path ----------------------------------------------------------------

/// Release builds on x86-64 Linux must have AES-NI compiled in.
///
/// The workspace's `.cargo/config.toml` builds this target with
/// `-C target-feature=+aes,+ssse3,+sse4.1,+pclmulqdq`, which lets the `aes` crate inline
/// its AES-NI code with no run-time CPU check per block
/// (see the `Performance` section of `trickles::crypto`). A build that lost the
/// flags — run from outside the workspace, or with `RUSTFLAGS` set, which replaces the
/// config's flags rather than adding to them — still works, but slower; this test makes
/// such a build fail instead of silently losing the fast path. To build with other flags
/// on purpose, include `+aes` (e.g. `RUSTFLAGS="-C target-cpu=native"`).
#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
// A constant assertion on purpose: a build without the flags should fail this test with a
// message, not stop the whole test build.
#[allow(clippy::assertions_on_constants)]
fn aes_ni_is_compiled_in() {
    assert!(
        cfg!(target_feature = "aes"),
        "built without AES-NI: see .cargo/config.toml and the Performance section of trickles::crypto"
    );
    assert!(aes_hw(), "this CPU lacks AES-NI, which the build assumes");
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn aes_hw() -> bool {
    std::arch::is_x86_feature_detected!("aes")
}

// ---- Continuation MACs as the server issues and checks them --------------------------

use trickles::continuation::{Continuation, EpochStart};

fn sample_continuation(epoch: u8) -> Continuation {
    Continuation {
        number: 0x0102_0304,
        tcp_base: 0x1112_1314,
        start_cwnd: 0x2122,
        ssthresh: 0x3132,
        proof_start: 0x4142_4344,
        rtt_us: 0x5152_5354,
        timestamp_ms: 0x6162_6364,
        epoch_start: EpochStart::Recovery,
        rtx: 0x71,
        site: 0x8182,
        key_epoch: epoch,
        flags: 0,
        conn_nonce: 0x9192_9394_9596_9798,
        tag: [0; 16],
    }
}

/// The documented input, built independently: `encode(tuple)` with `epoch_start` in the
/// family byte's bits 0 and 7 and the delayed-ack flag in its bit 4, then every field but
/// `epoch_start`, `key_epoch`, `flags`.
fn continuation_input(t: &FourTuple, c: &Continuation) -> Vec<u8> {
    let mut v = encode(t);
    let es = c.epoch_start as u8;
    v[0] |= (es & 1) | ((es >> 1) << 7);
    if c.flags & 1 != 0 {
        v[0] |= 0x10;
    }
    let fields = c.mac_fields();
    v.extend_from_slice(&fields[..24]);
    v.push(c.rtx);
    v.extend_from_slice(&fields[26..28]);
    v.extend_from_slice(&fields[30..38]);
    v
}

fn cmac_crate(key: &[u8; 16], msg: &[u8]) -> Tag {
    let mut reference = <Cmac<Aes128> as KeyInit>::new(&(*key).into());
    reference.update(msg);
    reference.finalize().into_bytes().into()
}

/// `mac_continuation` is the `cmac` crate's CMAC of the documented input (48 bytes for
/// IPv4: three blocks), under the key of the continuation's epoch.
#[test]
fn continuation_mac_is_cmac_of_documented_input() {
    let cfg = config();
    let keys = ServerKeys::new(&cfg);
    let v6 = FourTuple {
        client_addr: Addr::V6([0x20; 16]),
        client_port: 1,
        server_addr: Addr::V6([0x30; 16]),
        server_port: 2,
    };
    let mixed = FourTuple {
        server_addr: Addr::V6([0x30; 16]),
        ..v4_tuple()
    };
    for t in [v4_tuple(), v6, mixed] {
        for epoch in [8u8, 9] {
            for (es, flags) in [EpochStart::Open, EpochStart::Recovery, EpochStart::Timeout]
                .into_iter()
                .flat_map(|es| [(es, 0), (es, 1)])
            {
                let mut c = sample_continuation(epoch);
                c.epoch_start = es;
                c.flags = flags;
                let input = continuation_input(&t, &c);
                if matches!(t.client_addr, Addr::V4(_)) && matches!(t.server_addr, Addr::V4(_)) {
                    assert_eq!(input.len(), 48);
                }
                let expected = cmac_crate(&cfg.mac_keys[usize::from(epoch % 2)], &input);
                assert_eq!(keys.mac_continuation(&t, &c), Some(expected));
                c.tag = expected;
                assert!(keys.verify_continuation(&t, &c));
            }
        }
    }
    // Not live, or a reserved flag set: no tag, no verification.
    let c = sample_continuation(10);
    assert_eq!(keys.mac_continuation(&v4_tuple(), &c), None);
    for reserved in [2u8, 0x80, 0xff] {
        let mut c = sample_continuation(9);
        c.tag = keys.mac_continuation(&v4_tuple(), &c).unwrap();
        c.flags = reserved;
        assert_eq!(keys.mac_continuation(&v4_tuple(), &c), None);
        assert!(!keys.verify_continuation(&v4_tuple(), &c));
    }
    // The delayed-ack flag is covered: switching it on or off fails the check.
    let mut c = sample_continuation(9);
    c.tag = keys.mac_continuation(&v4_tuple(), &c).unwrap();
    assert!(keys.verify_continuation(&v4_tuple(), &c));
    c.flags = 1;
    assert!(!keys.verify_continuation(&v4_tuple(), &c));
    c.tag = keys.mac_continuation(&v4_tuple(), &c).unwrap();
    assert!(keys.verify_continuation(&v4_tuple(), &c));
    c.flags = 0;
    assert!(!keys.verify_continuation(&v4_tuple(), &c));
}

/// Every bit of every encoded field but the tag (the key epoch included: another live
/// epoch is another key) and of the four-tuple is covered: flipping it fails the check.
#[test]
fn continuation_mac_covers_every_field_bit() {
    let keys = ServerKeys::new(&config());
    let t = v4_tuple();
    let mut c = sample_continuation(9);
    c.tag = keys.mac_continuation(&t, &c).unwrap();
    assert!(keys.verify_continuation(&t, &c));
    let mut bytes = [0u8; 54];
    c.emit(&mut bytes);
    for bit in 0..38 * 8 {
        let flipped = flip(&bytes, bit);
        // Bytes that no longer parse (epoch_start 3, a reserved flag) never reach the check;
        // the delayed-ack flag bit does, and fails it.
        if let Ok(d) = Continuation::parse(&flipped) {
            assert!(!keys.verify_continuation(&t, &d), "field bit {bit}");
        }
    }
    for es in [EpochStart::Open, EpochStart::Timeout] {
        let d = Continuation {
            epoch_start: es,
            ..c
        };
        assert!(!keys.verify_continuation(&t, &d), "{es:?}");
    }
    let d = Continuation { key_epoch: 8, ..c };
    assert!(!keys.verify_continuation(&t, &d));
    for bit in 0..TAG_BITS {
        let d = Continuation {
            tag: flip(&c.tag, bit).try_into().unwrap(),
            ..c
        };
        assert!(!keys.verify_continuation(&t, &d), "tag bit {bit}");
    }
    let (Addr::V4(ca), Addr::V4(sa)) = (t.client_addr, t.server_addr) else {
        unreachable!()
    };
    for bit in 0..32 {
        let mut u = t;
        u.client_addr = Addr::V4(flip(&ca, bit).try_into().unwrap());
        assert!(!keys.verify_continuation(&u, &c), "client addr bit {bit}");
        let mut u = t;
        u.server_addr = Addr::V4(flip(&sa, bit).try_into().unwrap());
        assert!(!keys.verify_continuation(&u, &c), "server addr bit {bit}");
    }
    for bit in 0..16 {
        let mut u = t;
        u.client_port ^= 1 << bit;
        assert!(!keys.verify_continuation(&u, &c), "client port bit {bit}");
        let mut u = t;
        u.server_port ^= 1 << bit;
        assert!(!keys.verify_continuation(&u, &c), "server port bit {bit}");
    }
}
