//! A publisher's fragments, shuffled and repeated, reach a subscriber as each message
//! exactly once, intact, with the right ids and `seq` fields; a corrupted byte makes its
//! message not intact.

#![allow(clippy::unwrap_used, missing_docs)]

use proptest::prelude::*;
use stream_handlers::endpoint::{Publisher, PublisherConfig, Subscriber, SubscriberConfig, Verify};
use stream_handlers::rudp::HEADER_LEN;
use stream_handlers::spec::Fields;

fn fields() -> impl Strategy<Value = Option<Fields>> {
    prop_oneof![
        Just(None),
        Just(Some(Fields::Image)),
        Just(Some(Fields::Flight))
    ]
}

/// Every fragment of `messages` messages, each once or twice, in an order `keys` decides.
fn shuffled(p: &mut Publisher, messages: u32, keys: &[u32]) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for i in 0..messages {
        for f in p.next(1_000 * u64::from(i)).unwrap() {
            all.push(f);
        }
    }
    let n = all.len();
    let mut keyed: Vec<(u32, Vec<u8>)> = Vec::new();
    for (i, f) in all.into_iter().enumerate() {
        let k = keys[i % keys.len()];
        if k.is_multiple_of(3) {
            keyed.push((k / 3 + (i as u32) * 7, f.clone()));
        }
        keyed.push((k ^ (i as u32), f));
    }
    keyed.sort_by_key(|(k, _)| *k);
    assert!(keyed.len() >= n);
    keyed.into_iter().map(|(_, f)| f).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn shuffled_and_repeated_fragments_give_each_message_once(
        fields in fields(),
        extra in 0u32..600,
        fragment in 16u16..300,
        messages in 1u32..12,
        seed in any::<u64>(),
        keys in proptest::collection::vec(any::<u32>(), 1..40),
    ) {
        let size = 31 + extra;
        let cfg = PublisherConfig { stream: 9, fields, size, seed, fragment };
        let mut p = Publisher::new(cfg).unwrap();
        let mut s = Subscriber::new(SubscriberConfig::new(9, fields, size, seed));
        let mut got = Vec::new();
        for f in shuffled(&mut p, messages, &keys) {
            if let Ok(Some(r)) = s.handle_fragment(20_000_000, &f) {
                got.push(r);
            }
        }
        got.sort_by_key(|r| r.message);
        let ids: Vec<u32> = got.iter().map(|r| r.message).collect();
        prop_assert_eq!(ids, (0..messages).collect::<Vec<_>>());
        for r in &got {
            prop_assert_eq!(r.seq, r.message);
            prop_assert_eq!(r.intact, Some(true));
            prop_assert_eq!(r.len, size as usize);
            prop_assert_eq!(r.latency_ns, 20_000_000 - 1_000 * u64::from(r.message));
        }
        let sum = s.summary();
        prop_assert_eq!((sum.received, sum.intact, sum.lost, sum.refused), (u64::from(messages), u64::from(messages), 0, 0));
    }

    #[test]
    fn a_corrupted_byte_is_caught(
        fields in fields(),
        extra in 0u32..600,
        fragment in 16u16..300,
        seed in any::<u64>(),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let size = 31 + extra;
        let cfg = PublisherConfig { stream: 9, fields, size, seed, fragment };
        let mut p = Publisher::new(cfg).unwrap();
        let mut frags = p.next(5).unwrap();
        // A byte of the message outside its timestamp (which the subscriber takes as sent).
        let mut offset = at.index(size as usize - 8);
        if offset >= 4 {
            offset += 8;
        }
        let f = &mut frags[offset / usize::from(fragment)];
        f[HEADER_LEN + offset % usize::from(fragment)] ^= flip;
        let mut cfg = SubscriberConfig::new(9, fields, size, seed);
        let mut s = Subscriber::new(cfg.clone());
        let got: Vec<_> = frags.iter().filter_map(|f| s.handle_fragment(10, f).unwrap()).collect();
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].intact, Some(false));
        prop_assert_eq!((s.summary().corrupt, s.summary().intact), (1, 0));
        // Header verification sees a changed seq field only.
        cfg.verify = Verify::Header;
        let mut s = Subscriber::new(cfg);
        let got: Vec<_> = frags.iter().filter_map(|f| s.handle_fragment(10, f).unwrap()).collect();
        prop_assert_eq!(got[0].intact, Some(offset >= 4));
    }
}
