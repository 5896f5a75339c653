//! Reassembly with small limits, a clock and late replays: the properties the eviction,
//! the byte budget and the delivery window exist for.
//!
//! * However many messages lost fragments before, new messages still assemble (the dead
//!   ones are evicted, and every eviction is counted).
//! * No message is ever assembled twice, however often and however late its fragments are
//!   repeated, with partial messages timing out and evicted on the way.
//! * The bytes held never exceed the budget, nor the messages in progress their limit.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use sansio::Instant;
use stream_handlers::rudp::{Reassembler, ReassemblyConfig, ReassemblyError, fragment};

/// A seeded xorshift for losses, shuffles and delays.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// One message: its stream, id, bytes and fragments.
struct Sent {
    key: (u16, u32),
    bytes: Vec<u8>,
    fragments: Vec<Vec<u8>>,
}

/// Messages of the given (stream, length)s, ids counting up per stream from `next_id`.
fn send(size: u16, lens: &[(u16, usize)], next_id: &mut HashMap<u16, u32>) -> Vec<Sent> {
    lens.iter()
        .map(|&(stream, len)| {
            let id = next_id.entry(stream).or_insert(0);
            let key = (stream, *id);
            *id += 1;
            let bytes: Vec<u8> = (0..len)
                .map(|i| (i as u8).wrapping_mul(31) ^ key.1 as u8)
                .collect();
            let fragments = fragment(stream, key.1, 0, &bytes, size).unwrap();
            Sent {
                key,
                bytes,
                fragments,
            }
        })
        .collect()
}

/// What holding a whole message costs (`ReassemblyConfig::max_bytes`'s accounting).
fn whole_charge(s: &Sent) -> usize {
    let count = s.fragments.len();
    s.bytes.len() + 2 * (count - 1) + 8 * count.div_ceil(64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Messages that each lost at least one fragment, then clean messages (each message's
    /// fragments together, in any order; fewer than the delivery window in all): every
    /// clean message assembles, and each lost message that left anything behind is
    /// counted as evicted or still in progress, never silently gone.
    #[test]
    fn lost_messages_never_stop_new_ones(
        size in 1u16..40,
        lost in prop::collection::vec((0u16..3, 2usize..6), 0..100),
        fresh in prop::collection::vec((0u16..3, 0usize..200), 1..12),
        max_messages in 1usize..5,
        slack in 0usize..3_000,
        after_timeout in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let mut ids = HashMap::new();
        let s = usize::from(size);
        let lost_lens: Vec<(u16, usize)> =
            lost.iter().map(|&(st, k)| (st, (k - 1) * s + 1 + rng.below(s))).collect();
        let lost = send(size, &lost_lens, &mut ids);
        let fresh = send(size, &fresh, &mut ids);
        let need = fresh.iter().chain(&lost).map(whole_charge).max().unwrap_or(0);
        let cfg = ReassemblyConfig {
            max_messages,
            max_bytes: need + slack,
            ..ReassemblyConfig::default()
        };
        let mut r = Reassembler::new(cfg);
        let mut wire = Vec::new();
        let mut left_behind = 0u64;
        for m in &lost {
            let drop = rng.below(m.fragments.len());
            let mut got: Vec<&Vec<u8>> = m
                .fragments
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != drop && rng.below(2) == 0)
                .map(|(_, f)| f)
                .collect();
            rng.shuffle(&mut got);
            left_behind += u64::from(!got.is_empty());
            wire.extend(got);
        }
        for f in &wire {
            prop_assert_eq!(r.handle_fragment(Instant::ZERO, f), Ok(None));
            prop_assert!(r.in_progress() <= max_messages);
            prop_assert!(r.bytes_held() <= cfg.max_bytes);
        }
        let evicted_early = r.stats().evicted;
        prop_assert_eq!(evicted_early + r.in_progress() as u64, left_behind);
        let later = if after_timeout { cfg.timeout + 1 } else { 1 };
        for m in &fresh {
            let mut frags = m.fragments.clone();
            rng.shuffle(&mut frags);
            let mut done = None;
            for f in &frags {
                done = r.handle_fragment(Instant::from_micros(later), f).unwrap().or(done);
                prop_assert!(r.bytes_held() <= cfg.max_bytes);
            }
            let a = done.expect("a clean message assembles");
            prop_assert_eq!((a.stream, a.message), m.key);
            prop_assert_eq!(&a.payload, &m.bytes);
        }
        let st = r.stats();
        prop_assert_eq!(st.evicted + r.in_progress() as u64, left_behind);
        prop_assert_eq!(st.assembled, fresh.len() as u64);
        if after_timeout {
            // Every lost message still held has timed out: swept, counted as expired.
            r.expire(Instant::from_micros(later));
            prop_assert_eq!((r.in_progress(), r.bytes_held()), (0, 0));
            prop_assert_eq!(r.stats().expired, left_behind - evicted_early);
        } else {
            prop_assert_eq!(st.expired, 0);
        }
    }

    /// Every fragment sent one to four times, each copy delayed by up to `delay` places
    /// (far behind the delivery window when many messages follow), on a clock that lets
    /// partial messages time out: nothing is assembled twice or wrong, and the limits hold.
    #[test]
    fn nothing_is_assembled_twice_whatever_the_duplication_and_delay(
        size in 1u16..20,
        lens in prop::collection::vec((0u16..3, 0usize..60), 1..300),
        delay in 0usize..600,
        max_messages in 1usize..6,
        max_bytes in 0usize..2_000,
        timeout in 0u64..2_000,
        step in 0usize..100,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let sent = send(size, &lens, &mut HashMap::new());
        let by_key: HashMap<(u16, u32), &Sent> = sent.iter().map(|s| (s.key, s)).collect();
        let mut wire = Vec::new();
        for s in &sent {
            for f in &s.fragments {
                for _ in 0..1 + rng.below(4) {
                    wire.push((wire.len() + rng.below(delay + 1), f));
                }
            }
        }
        wire.sort_by_key(|w| w.0);
        let cfg = ReassemblyConfig { max_messages, max_bytes, timeout, ..ReassemblyConfig::default() };
        let mut r = Reassembler::new(cfg);
        let mut assembled = HashSet::new();
        let mut now = 0u64;
        for (_, f) in wire {
            now += rng.below(step + 1) as u64;
            match r.handle_fragment(Instant::from_micros(now), f) {
                Ok(Some(a)) => {
                    let s = by_key[&(a.stream, a.message)];
                    prop_assert_eq!(&a.payload, &s.bytes, "a wrong assembly");
                    prop_assert!(assembled.insert(s.key), "{:?} assembled twice", s.key);
                }
                Ok(None) => {}
                Err(e) => prop_assert!(
                    matches!(
                        e,
                        ReassemblyError::Duplicate
                            | ReassemblyError::AlreadyDelivered
                            | ReassemblyError::Stale
                            | ReassemblyError::TooLong
                    ),
                    "a sound fragment refused: {e:?}"
                ),
            }
            prop_assert!(r.in_progress() <= max_messages);
            prop_assert!(r.bytes_held() <= max_bytes);
        }
        prop_assert_eq!(r.stats().assembled, assembled.len() as u64);
        r.expire(Instant::from_micros(now.saturating_add(timeout).saturating_add(1)));
        prop_assert_eq!((r.in_progress(), r.bytes_held()), (0, 0));
    }
}
