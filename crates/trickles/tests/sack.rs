//! SACK proofs (paper §2.2 and Appendix A): honest proofs verify, missing or substituted
//! nonces do not, malformed proofs are named.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use trickles::crypto::{KeyConfig, NonceGen, NonceKind, ServerKeys};
use trickles::sack::{
    MAX_SACK_BLOCKS, ProofBuilder, ProofError, SACK_BLOCK_LEN, SackBlock, check_shape, verify_proof,
};

fn keys(seed: u8) -> ServerKeys {
    ServerKeys::new(&KeyConfig {
        mac_keys: [[seed; 16], [seed ^ 1; 16]],
        current_epoch: 0,
        nonce_key: [seed ^ 2; 16],
        rtx_nonce_key: [seed ^ 3; 16],
    })
}

fn block(left: u32, right: u32, nonce: u32) -> SackBlock {
    SackBlock { left, right, nonce }
}

/// The honest block for `left..=right`.
fn honest(g: &NonceGen, conn: u64, left: u32, right: u32) -> SackBlock {
    let nonce = (left..=right).fold(0, |acc, i| acc ^ g.packet_nonce(conn, i));
    block(left, right, nonce)
}

/// First packet numbers near 0, near `u32::MAX` (leaving room for the range), or anywhere.
fn start_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..1000,
        (200u32..1200).prop_map(|d| u32::MAX - d),
        0u32..u32::MAX - 1200
    ]
}

proptest! {
    /// Appendix A, Theorem A.1: a client holding every nonce of a range but one cannot
    /// produce the range nonce. No XOR of any subset of the nonces it holds equals it
    /// (a chance coincidence has probability 2^-32 per subset), and the block it would
    /// build from them is rejected.
    #[test]
    fn missing_one_nonce_cannot_forge_the_range_nonce(
        seed in any::<u8>(),
        conn in any::<u64>(),
        left in start_strategy(),
        len in 1u32..10,
        missing in any::<prop::sample::Index>(),
    ) {
        let keys = keys(seed);
        let g = keys.nonces(NonceKind::Original);
        let right = left + len;
        let lost = left + missing.index(len as usize + 1) as u32;
        let held: Vec<u32> =
            (left..=right).filter(|&i| i != lost).map(|i| g.packet_nonce(conn, i)).collect();
        let target = g.range_nonce(conn, left, right);

        for subset in 0u32..1 << held.len() {
            let xor = held
                .iter()
                .enumerate()
                .filter(|(k, _)| subset >> k & 1 == 1)
                .fold(0, |acc, (_, p)| acc ^ p);
            prop_assert_ne!(xor, target, "subset {:b} of the held nonces", subset);
        }
        let all_held = held.iter().fold(0, |acc, p| acc ^ p);
        prop_assert_eq!(
            verify_proof(g, conn, &[block(left, right, all_held)]),
            Err(ProofError::BadNonce { index: 0 })
        );
        // The honest client reports the hole instead, and that proof verifies.
        let mut proof = Vec::new();
        if lost > left {
            proof.push(honest(g, conn, left, lost - 1));
        }
        if lost < right {
            proof.push(honest(g, conn, lost + 1, right));
        }
        prop_assert_eq!(verify_proof(g, conn, &proof), Ok(()));
    }

    /// Longer ranges (up to 200 packets), one nonce missing: the XOR of the rest is off by
    /// exactly the missing packet's nonce, which is unpredictable, and is rejected.
    #[test]
    fn missing_one_nonce_in_a_long_range_is_rejected(
        seed in any::<u8>(),
        conn in any::<u64>(),
        left in start_strategy(),
        len in 1u32..200,
        missing in any::<prop::sample::Index>(),
    ) {
        let keys = keys(seed);
        let g = keys.nonces(NonceKind::Original);
        let right = left + len;
        let lost = left + missing.index(len as usize + 1) as u32;
        let xor = (left..=right)
            .filter(|&i| i != lost)
            .fold(0, |acc, i| acc ^ g.packet_nonce(conn, i));
        prop_assert_eq!(xor ^ g.packet_nonce(conn, lost), g.range_nonce(conn, left, right));
        let proof = [honest(g, conn, 0, 0), block(left, right, xor)];
        let expected = if left >= 2 { ProofError::BadNonce { index: 1 } } else { ProofError::Malformed { index: 1 } };
        prop_assert_eq!(verify_proof(g, conn, &proof), Err(expected));
    }

    /// A retransmission carries a nonce under `K'`; putting it in place of the lost
    /// original's in a block does not make the block verify.
    #[test]
    fn retransmitted_nonce_does_not_stand_in_for_the_original(
        seed in any::<u8>(),
        conn in any::<u64>(),
        left in start_strategy(),
        len in 0u32..64,
        missing in any::<prop::sample::Index>(),
    ) {
        let keys = keys(seed);
        let (orig, rtx) = (keys.nonces(NonceKind::Original), keys.nonces(NonceKind::Retransmit));
        let right = left + len;
        let lost = left + missing.index(len as usize + 1) as u32;
        let forged = (left..=right).fold(0, |acc, i| {
            acc ^ if i == lost { rtx.packet_nonce(conn, i) } else { orig.packet_nonce(conn, i) }
        });
        prop_assert_eq!(
            verify_proof(orig, conn, &[block(left, right, forged)]),
            Err(ProofError::BadNonce { index: 0 })
        );
        prop_assert_eq!(verify_proof(orig, conn, &[honest(orig, conn, left, right)]), Ok(()));
    }

    /// Nonces of one connection do not verify on another.
    #[test]
    fn proofs_are_bound_to_the_connection(seed in any::<u8>(), a in any::<u64>(), b in any::<u64>(), left in start_strategy(), len in 0u32..50) {
        prop_assume!(a != b);
        let keys = keys(seed);
        let g = keys.nonces(NonceKind::Original);
        let proof = [honest(g, a, left, left + len)];
        prop_assert_eq!(verify_proof(g, a, &proof), Ok(()));
        prop_assert_eq!(verify_proof(g, b, &proof), Err(ProofError::BadNonce { index: 0 }));
    }
}

// ---- Shape --------------------------------------------------------------------------

fn shape_cases() -> Vec<(&'static str, Vec<SackBlock>, Result<(), ProofError>)> {
    let b = |l, r| block(l, r, 0);
    vec![
        ("empty", vec![], Err(ProofError::Empty)),
        ("one block", vec![b(5, 9)], Ok(())),
        ("one packet", vec![b(5, 5)], Ok(())),
        ("gap of one", vec![b(0, 3), b(5, 9)], Ok(())),
        (
            "left > right",
            vec![b(0, 3), b(9, 5)],
            Err(ProofError::Malformed { index: 1 }),
        ),
        (
            "left > right first",
            vec![b(4, 3)],
            Err(ProofError::Malformed { index: 0 }),
        ),
        (
            "adjacent",
            vec![b(0, 3), b(4, 9)],
            Err(ProofError::Malformed { index: 1 }),
        ),
        (
            "overlapping",
            vec![b(0, 5), b(3, 9)],
            Err(ProofError::Malformed { index: 1 }),
        ),
        (
            "same block twice",
            vec![b(0, 5), b(0, 5)],
            Err(ProofError::Malformed { index: 1 }),
        ),
        (
            "unordered",
            vec![b(10, 12), b(0, 5)],
            Err(ProofError::Malformed { index: 1 }),
        ),
        (
            "third unordered",
            vec![b(0, 1), b(10, 12), b(5, 6)],
            Err(ProofError::Malformed { index: 2 }),
        ),
        (
            "ends at u32::MAX",
            vec![b(0, 3), b(u32::MAX - 1, u32::MAX)],
            Ok(()),
        ),
        (
            "after u32::MAX",
            vec![b(u32::MAX, u32::MAX), b(0, 0)],
            Err(ProofError::Malformed { index: 1 }),
        ),
        ("whole space", vec![b(0, u32::MAX)], Ok(())),
    ]
}

#[test]
fn shape_errors_are_named() {
    for (name, blocks, expected) in shape_cases() {
        assert_eq!(check_shape(&blocks), expected, "{name}");
    }
}

#[test]
fn block_count_limits() {
    let spaced =
        |n: u32| -> Vec<SackBlock> { (0..n).map(|k| block(3 * k, 3 * k + 1, 0)).collect() };
    assert_eq!(check_shape(&spaced(MAX_SACK_BLOCKS as u32)), Ok(()));
    assert_eq!(
        check_shape(&spaced(MAX_SACK_BLOCKS as u32 + 1)),
        Err(ProofError::TooMany)
    );

    let keys = keys(1);
    let g = keys.nonces(NonceKind::Original);
    let mut max: Vec<SackBlock> = (0..64u32).map(|k| honest(g, 9, 3 * k, 3 * k + 1)).collect();
    assert_eq!(verify_proof(g, 9, &max), Ok(()));
    max.push(honest(g, 9, 200, 201));
    assert_eq!(verify_proof(g, 9, &max), Err(ProofError::TooMany));
    assert_eq!(verify_proof(g, 9, &[]), Err(ProofError::Empty));
}

/// Shape is checked before nonces: a malformed proof with honest nonces is still malformed.
#[test]
fn verify_proof_reports_shape_before_nonces() {
    let keys = keys(2);
    let g = keys.nonces(NonceKind::Original);
    let overlapping = [honest(g, 1, 0, 5), honest(g, 1, 3, 9)];
    assert_eq!(
        verify_proof(g, 1, &overlapping),
        Err(ProofError::Malformed { index: 1 })
    );
    let wrong = honest(g, 1, 7, 9).nonce ^ 1;
    let bad_second = [honest(g, 1, 0, 5), block(7, 9, wrong)];
    assert_eq!(
        verify_proof(g, 1, &bad_second),
        Err(ProofError::BadNonce { index: 1 })
    );
    assert_eq!(check_shape(&bad_second), Ok(()));
}

#[test]
fn errors_display_their_reason() {
    for (e, needle) in [
        (ProofError::Empty, "no blocks"),
        (ProofError::TooMany, "64"),
        (ProofError::Malformed { index: 4 }, "4"),
        (ProofError::BadNonce { index: 7 }, "7"),
    ] {
        let s = e.to_string();
        assert!(s.contains(needle), "{s:?} lacks {needle:?}");
    }
}

// ---- Wire form ----------------------------------------------------------------------

proptest! {
    #[test]
    fn block_emit_parse_round_trip(left in any::<u32>(), right in any::<u32>(), nonce in any::<u32>()) {
        let b = block(left, right, nonce);
        let mut bytes = [0u8; SACK_BLOCK_LEN];
        b.emit(&mut bytes);
        prop_assert_eq!(&bytes[..4], &left.to_be_bytes());
        prop_assert_eq!(&bytes[4..8], &right.to_be_bytes());
        prop_assert_eq!(&bytes[8..], &nonce.to_be_bytes());
        prop_assert_eq!(SackBlock::parse(&bytes), b);
    }
}

// ---- ProofBuilder -------------------------------------------------------------------

/// The maximal runs of consecutive received packet numbers, computed the obvious way.
fn maximal_runs(received: &[u32]) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &i in received {
        match runs.last_mut() {
            Some((_, r)) if u64::from(*r) + 1 == u64::from(i) => *r = i,
            _ => runs.push((i, i)),
        }
    }
    runs
}

proptest! {
    /// Over random receive patterns (including near `u32::MAX`), the builder's blocks are
    /// exactly the maximal runs, carry the honest range nonces, and verify.
    #[test]
    fn builder_makes_maximal_runs_that_verify(
        seed in any::<u8>(),
        conn in any::<u64>(),
        base in prop_oneof![0u32..100, (0u32..400).prop_map(|d| u32::MAX - d), any::<u32>()],
        pattern in proptest::collection::vec(prop::bool::weighted(0.8), 1..400),
    ) {
        let keys = keys(seed);
        let g = keys.nonces(NonceKind::Original);
        let received: Vec<u32> = pattern
            .iter()
            .enumerate()
            .filter(|(_, got)| **got)
            .filter_map(|(k, _)| base.checked_add(k as u32))
            .collect();
        let mut builder = ProofBuilder::new();
        for &i in &received {
            prop_assert!(builder.push(i, g.packet_nonce(conn, i)));
        }
        let runs = maximal_runs(&received);
        let got: Vec<(u32, u32)> = builder.blocks().iter().map(|b| (b.left, b.right)).collect();
        prop_assert_eq!(&got, &runs);
        for b in builder.blocks() {
            prop_assert_eq!(b.nonce, g.range_nonce(conn, b.left, b.right));
        }
        let expected = match runs.len() {
            0 => Err(ProofError::Empty),
            n if n > MAX_SACK_BLOCKS => Err(ProofError::TooMany),
            _ => Ok(()),
        };
        prop_assert_eq!(verify_proof(g, conn, builder.blocks()), expected);
        // Any window of at most 64 consecutive blocks is a valid proof too.
        for window in builder.blocks().chunks(MAX_SACK_BLOCKS) {
            prop_assert_eq!(verify_proof(g, conn, window), Ok(()));
        }
    }

    /// Trimming keeps exactly the blocks that end at or above `from`, whole.
    #[test]
    fn trim_below_drops_whole_finished_blocks(
        pattern in proptest::collection::vec(any::<bool>(), 1..200),
        from in 0u32..220,
    ) {
        let received: Vec<u32> =
            pattern.iter().enumerate().filter(|(_, g)| **g).map(|(k, _)| k as u32).collect();
        let mut builder = ProofBuilder::new();
        for &i in &received {
            builder.push(i, i.wrapping_mul(0x9e37_79b9));
        }
        let before = builder.blocks().to_vec();
        builder.trim_below(from);
        let kept: Vec<SackBlock> = before.iter().copied().filter(|b| b.right >= from).collect();
        prop_assert_eq!(builder.blocks(), &kept[..]);
    }
}

#[test]
fn builder_rejects_out_of_order_and_duplicates() {
    let mut b = ProofBuilder::new();
    assert!(b.blocks().is_empty());
    assert!(b.push(10, 0x1));
    assert!(b.push(11, 0x2));
    assert!(!b.push(11, 0x4), "duplicate");
    assert!(!b.push(3, 0x8), "older");
    assert!(b.push(13, 0x10));
    assert_eq!(b.blocks(), &[block(10, 11, 0x3), block(13, 13, 0x10)]);
    assert!(b.push(u32::MAX, 0x20));
    assert!(!b.push(u32::MAX, 0x40));
    assert_eq!(b.blocks().len(), 3);

    b.trim_below(11);
    assert_eq!(
        b.blocks()[0],
        block(10, 11, 0x3),
        "straddling block kept whole"
    );
    b.trim_below(12);
    assert_eq!(b.blocks()[0], block(13, 13, 0x10));
    b.trim_below(u32::MAX);
    assert_eq!(b.blocks(), &[block(u32::MAX, u32::MAX, 0x20)]);
}
