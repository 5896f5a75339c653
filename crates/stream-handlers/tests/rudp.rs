//! RUDP round trips: fragment, reorder and duplicate arbitrarily, assemble: the original.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use sansio::Instant;
use stream_handlers::rudp::{HEADER_LEN, Reassembler, ReassemblyConfig, ReassemblyError, fragment};

proptest! {
    #[test]
    fn any_order_with_duplicates_assembles_the_original(
        msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..600), 1..5),
        size in 1u16..200,
        order in proptest::collection::vec(any::<prop::sample::Index>(), 0..400),
        first_seq in any::<u32>(),
    ) {
        let mut packets = Vec::new();
        let mut seq = first_seq;
        for (id, m) in msgs.iter().enumerate() {
            let p = fragment(7, id as u32, seq, m, size).unwrap();
            seq = seq.wrapping_add(p.len() as u32);
            packets.extend(p);
        }
        // Every packet once, in an arbitrary order, plus arbitrary duplicates.
        let mut sequence: Vec<usize> = (0..packets.len()).collect();
        for (i, ix) in order.iter().enumerate() {
            let j = ix.index(sequence.len());
            if i % 2 == 0 {
                let k = i % sequence.len();
                sequence.swap(j, k);
            } else {
                sequence.push(sequence[j]);
            }
        }
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let mut done = vec![None; msgs.len()];
        for &i in &sequence {
            match r.handle_fragment(Instant::ZERO, &packets[i]) {
                Ok(Some(a)) => {
                    prop_assert!(done[a.message as usize].is_none());
                    let id = a.message as usize;
                    done[id] = Some(a);
                }
                Ok(None) => {}
                Err(ReassemblyError::Duplicate | ReassemblyError::AlreadyDelivered) => {}
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }
        for (id, m) in msgs.iter().enumerate() {
            let a = done[id].as_ref().expect("every message completes");
            prop_assert_eq!(&a.payload, m);
            prop_assert_eq!(usize::from(a.fragments), m.len().div_ceil(usize::from(size)).max(1));
        }
        prop_assert_eq!(r.in_progress(), 0);
        prop_assert_eq!(r.bytes_held(), 0);
        prop_assert_eq!(r.stats().assembled, msgs.len() as u64);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_memory_stays_bounded(
        packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 0..64),
    ) {
        let cfg = ReassemblyConfig {
            max_messages: 3,
            max_message_len: 4096,
            max_bytes: 6000,
            timeout: 50,
        };
        let mut r = Reassembler::new(cfg);
        for (t, mut p) in (0u64..).zip(packets) {
            // Make about half of them plausible headers.
            if p.len() >= HEADER_LEN && p[0] % 2 == 0 {
                p[0] = 1;
                p[1] = 0;
            }
            if let Ok(Some(a)) = r.handle_fragment(Instant::from_micros(t * 7), &p) {
                prop_assert!(a.payload.len() <= 4096);
            }
            prop_assert!(r.in_progress() <= 3);
            prop_assert!(r.bytes_held() <= 6000);
        }
    }
}
