//! Replay defence with two rotating Bloom filters (paper §2.2, Fig. 4).

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use trickles::crypto::{KeyConfig, ServerKeys};
use trickles::replay::{
    ReplayConfig, ReplayFilter, measure_false_positive_rate, replay_hash, timeout_hash,
};

const T: u64 = 1_000_000;

/// A small filter: fast to clear, still with a negligible false-positive rate for the few
/// keys these tests insert.
fn small() -> ReplayFilter {
    ReplayFilter::new(ReplayConfig {
        horizon_us: T,
        num_bits: 1 << 16,
        hashes: 6,
    })
}

#[test]
fn fresh_once_then_replay_then_forgotten() {
    let mut f = small();
    assert!(f.check_and_insert(100_000, 42), "first sight is fresh");
    assert!(!f.check_and_insert(100_001, 42), "second sight is a replay");
    assert!(f.contains(42));
    assert!(
        !f.check_and_insert(T + 900_000, 42),
        "one interval later: still a replay"
    );
    assert!(
        f.check_and_insert(2 * T, 42),
        "two intervals later: forgotten"
    );
    assert!(!f.check_and_insert(2 * T + 1, 42));
}

#[test]
fn remembered_for_at_least_one_horizon() {
    let mut f = small();
    // Inserted at the very end of interval 0: still there at the very end of interval 1.
    assert!(f.check_and_insert(T - 1, 7));
    assert!(!f.check_and_insert(2 * T - 1, 7));
    assert!(f.check_and_insert(2 * T, 7));
}

proptest! {
    /// Anything inserted at `t` is a replay at every time up to `t + T`, and (with the
    /// small filter's negligible false-positive rate) fresh again from `t + 2T` on.
    #[test]
    fn horizon_property(t in 0u64..1 << 40, later in 0..=T, gone in 2 * T..10 * T, key in any::<u64>()) {
        let mut f = small();
        prop_assert!(f.check_and_insert(t, key));
        prop_assert!(!f.check_and_insert(t + later, key));
        let mut g = small();
        prop_assert!(g.check_and_insert(t, key));
        prop_assert!(g.check_and_insert(t + gone, key));
    }
}

#[test]
fn rotation_by_one_interval_keeps_the_previous_one() {
    let mut f = small();
    assert!(f.check_and_insert(0, 1)); // interval 0
    assert!(f.check_and_insert(T, 2)); // interval 1: 1 moves to the older filter
    assert!(f.contains(1) && f.contains(2));
    assert!(f.check_and_insert(2 * T, 3)); // interval 2: 1 is gone, 2 is older
    assert!(!f.contains(1) && f.contains(2) && f.contains(3));
    assert!(f.check_and_insert(5 * T, 4)); // three intervals on: both cleared
    assert!(!f.contains(2) && !f.contains(3) && f.contains(4));
}

#[test]
fn time_going_backwards_never_rotates_or_panics() {
    let mut f = small();
    assert!(f.check_and_insert(5 * T, 1));
    assert!(f.check_and_insert(T, 2), "an earlier time still inserts");
    assert!(
        !f.check_and_insert(0, 1),
        "and still sees what was inserted"
    );
    assert!(!f.check_and_insert(5 * T + 1, 2));
    assert!(f.contains(1) && f.contains(2));
    // The next rotation is still relative to interval 5.
    assert!(f.check_and_insert(6 * T, 3));
    assert!(f.contains(1) && f.contains(2));
    assert!(f.check_and_insert(7 * T, 4));
    assert!(!f.contains(1) && !f.contains(2) && f.contains(3));
    // Extremes.
    assert!(f.check_and_insert(u64::MAX, 5));
    assert!(!f.check_and_insert(0, 5));
    assert!(f.check_and_insert(u64::MAX - 1, 6));
    assert!(!f.contains(3));
}

#[test]
fn degenerate_config_is_clamped_not_panicking() {
    let mut f = ReplayFilter::new(ReplayConfig {
        horizon_us: 0,
        num_bits: 0,
        hashes: 0,
    });
    let cfg = f.config();
    assert_eq!((cfg.horizon_us, cfg.num_bits, cfg.hashes), (1, 64, 1));
    assert!(f.check_and_insert(0, 9));
    assert!(!f.check_and_insert(0, 9));
    assert!(f.check_and_insert(2, 9));
    assert_eq!(f.interval(5), 5);
}

#[test]
fn default_is_the_papers_parameters() {
    let f = ReplayFilter::new(ReplayConfig::default());
    let cfg = f.config();
    assert_eq!(
        (cfg.horizon_us, cfg.num_bits, cfg.hashes),
        (1_000_000, 1 << 21, 6)
    );
    assert_eq!(f.memory_bytes(), 512 * 1024, "two 256 KiB filters");
    assert_eq!(f.interval(2_500_000), 2);
}

// ---- False positives ----------------------------------------------------------------

/// `(1 - e^{-kn/m})^k` (Fan et al.), the paper's formula.
fn theory(cfg: ReplayConfig, n: u64) -> f64 {
    let (k, m) = (f64::from(cfg.hashes), cfg.num_bits as f64);
    (1.0 - (-k * n as f64 / m).exp()).powf(k)
}

/// The paper's parameters (n = 83,333 per interval, m = 2^21, k = 6): theory 0.0091%,
/// measured 0.00696% in the paper. Ours must be below 0.02% over 10^6 fresh probes, and
/// near the theory (so a filter that never reports anything would fail too).
#[test]
fn false_positive_rate_matches_the_paper() {
    let cfg = ReplayConfig::default();
    let p = theory(cfg, 83_333);
    assert!((p - 0.000091).abs() < 0.000001, "theory {p}");
    let (fp, probes) = measure_false_positive_rate(cfg, 83_333, 1_000_000, 0x5eed);
    let rate = fp as f64 / probes as f64;
    println!(
        "false positives: {fp} / {probes} = {:.5}% (theory {:.5}%)",
        rate * 100.0,
        p * 100.0
    );
    assert!(rate < 0.0002, "rate {rate}");
    assert!(
        rate > p / 3.0 && rate < p * 2.0,
        "rate {rate} far from theory {p}"
    );
}

/// Just before a rotation both filters can hold n keys: the rate roughly doubles, and
/// with the paper's parameters is still below 0.03%.
#[test]
fn false_positive_rate_with_both_filters_full() {
    let cfg = ReplayConfig::default();
    let mut f = ReplayFilter::new(cfg);
    let mut x = 0u64;
    let mut next = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for interval in 0..2u64 {
        for _ in 0..83_333 {
            f.check_and_insert(interval * T, next());
        }
    }
    let probes = 1_000_000;
    let fp = (0..probes).filter(|_| f.contains(next())).count();
    let rate = fp as f64 / probes as f64;
    let p = theory(cfg, 83_333);
    println!(
        "both full: {fp} / {probes} = {:.5}% (2 x theory {:.5}%)",
        rate * 100.0,
        2.0 * p * 100.0
    );
    assert!(rate < 0.0003, "rate {rate}");
    assert!(rate > p, "rate {rate} below one filter's theory {p}");
}

#[test]
fn measurement_is_reproducible() {
    let cfg = ReplayConfig {
        num_bits: 1 << 14,
        ..ReplayConfig::default()
    };
    let a = measure_false_positive_rate(cfg, 2000, 10_000, 1);
    assert_eq!(a, measure_false_positive_rate(cfg, 2000, 10_000, 1));
    assert_eq!(a.1, 10_000);
    // A heavily loaded filter reports many false positives.
    let (fp, _) = measure_false_positive_rate(cfg, 20_000, 10_000, 1);
    assert!(fp > 5_000, "{fp}");
}

// ---- Bloom keys ---------------------------------------------------------------------

fn keys() -> ServerKeys {
    ServerKeys::new(&KeyConfig {
        mac_keys: [[1; 16], [2; 16]],
        current_epoch: 1,
        nonce_key: [3; 16],
        rtx_nonce_key: [4; 16],
    })
}

proptest! {
    /// Each retry of one continuation is a different key: a request dropped as a false
    /// positive is not dropped again for the same reason when retried.
    #[test]
    fn retries_hash_differently(tag in any::<[u8; 16]>(), a in any::<u8>(), b in any::<u8>()) {
        prop_assert_eq!(replay_hash(&tag, a), replay_hash(&tag, a));
        if a != b {
            prop_assert_ne!(replay_hash(&tag, a), replay_hash(&tag, b));
        }
    }

    /// Every bit of the tag reaches the key.
    #[test]
    fn every_tag_bit_matters(tag in any::<[u8; 16]>(), bit in 0usize..128, retry in any::<u8>()) {
        let mut other = tag;
        other[bit / 8] ^= 1 << (bit % 8);
        prop_assert_ne!(replay_hash(&tag, retry), replay_hash(&other, retry));
    }
}

#[test]
fn a_retry_passes_the_filter_but_a_replayed_retry_does_not() {
    let mut f = small();
    let tag = [0x3c; 16];
    assert!(f.check_and_insert(10, replay_hash(&tag, 0)));
    assert!(!f.check_and_insert(20, replay_hash(&tag, 0)));
    assert!(f.check_and_insert(30, replay_hash(&tag, 1)));
    assert!(!f.check_and_insert(40, replay_hash(&tag, 1)));
}

#[test]
fn one_timeout_request_per_connection_per_interval() {
    let keys = keys();
    let mut f = small();
    let (conn_a, conn_b) = (0xaaaa, 0xbbbb);
    let now = 3 * T + 5;
    let i = f.interval(now);
    assert!(f.check_and_insert(now, timeout_hash(conn_a, i, &keys)));
    assert!(
        !f.check_and_insert(now + 10, timeout_hash(conn_a, i, &keys)),
        "second in interval"
    );
    assert!(
        f.check_and_insert(now + 20, timeout_hash(conn_b, i, &keys)),
        "other connection"
    );
    let later = now + T;
    assert!(f.check_and_insert(later, timeout_hash(conn_a, f.interval(later), &keys)));
}

#[test]
fn timeout_hash_is_keyed_and_survives_mac_key_rotation() {
    let mut keys = keys();
    let h = timeout_hash(77, 5, &keys);
    assert_ne!(h, timeout_hash(77, 6, &keys));
    assert_ne!(h, timeout_hash(78, 5, &keys));
    let other = ServerKeys::new(&KeyConfig {
        mac_keys: [[1; 16], [2; 16]],
        current_epoch: 1,
        nonce_key: [3; 16],
        rtx_nonce_key: [5; 16],
    });
    assert_ne!(h, timeout_hash(77, 5, &other), "depends on the key");
    keys.rotate([9; 16]);
    assert_eq!(
        h,
        timeout_hash(77, 5, &keys),
        "a MAC-key rotation grants no second timeout"
    );
}
