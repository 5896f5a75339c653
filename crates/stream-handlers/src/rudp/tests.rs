//! Unit tests of the header, fragmentation and the reassembler's limits, with the
//! regression tests of the reassembler's fixed defects.

use super::*;
use alloc::vec;
use alloc::vec::Vec;
use sansio::Instant;

const T0: Instant = Instant::ZERO;

fn at(us: u64) -> Instant {
    Instant::from_micros(us)
}

#[test]
fn header_round_trips() {
    let h = Header {
        kind: Kind::Ack,
        stream: 7,
        message: 9,
        seq: 11,
        index: 1,
        count: 3,
        len: 100,
        size: 40,
    };
    let mut b = Vec::new();
    h.emit(&mut b);
    assert_eq!(b.len(), HEADER_LEN);
    assert_eq!(Header::parse(&b), Ok(h));
    assert_eq!(Header::parse(&b[..5]), Err(ReassemblyError::Truncated));
    b[0] = 2;
    assert_eq!(Header::parse(&b), Err(ReassemblyError::BadVersion));
}

/// Regression (d): the reserved bytes 22..24 were never checked.
#[test]
fn reserved_header_bytes_must_be_zero() {
    let p = fragment(1, 0, 0, &[1, 2, 3], 8).unwrap();
    for (at, bit) in [(22, 0x80), (23, 1)] {
        let mut bad = p[0].clone();
        bad[at] |= bit;
        assert_eq!(Header::parse(&bad), Err(ReassemblyError::Reserved));
        let mut r = Reassembler::new(ReassemblyConfig::default());
        assert_eq!(r.handle_fragment(T0, &bad), Err(ReassemblyError::Reserved));
    }
}

#[test]
fn empty_message_is_one_fragment() {
    let p = fragment(1, 1, 0, &[], 64).unwrap();
    assert_eq!(p.len(), 1);
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let m = r.handle_fragment(T0, &p[0]).unwrap().unwrap();
    assert!(m.payload.is_empty());
    assert_eq!(
        r.handle_fragment(T0, &p[0]),
        Err(ReassemblyError::AlreadyDelivered)
    );
}

#[test]
fn bad_fragments_are_refused_with_their_reason() {
    let msg = [5u8; 100];
    let p = fragment(1, 2, 0, &msg, 40).unwrap();
    let mut r = Reassembler::new(ReassemblyConfig {
        max_message_len: 100,
        ..ReassemblyConfig::default()
    });
    assert_eq!(r.handle_fragment(T0, &p[0]), Ok(None));
    assert_eq!(
        r.handle_fragment(T0, &p[0]),
        Err(ReassemblyError::Duplicate)
    );
    let mut short = p[1].clone();
    short.pop();
    assert_eq!(
        r.handle_fragment(T0, &short),
        Err(ReassemblyError::OutOfRange)
    );
    let mut shifted = p[1].clone();
    shifted[11] ^= 1;
    assert_eq!(
        r.handle_fragment(T0, &shifted),
        Err(ReassemblyError::Inconsistent)
    );
    let long = fragment(1, 4, 0, &[0; 101], 40).unwrap();
    assert_eq!(
        r.handle_fragment(T0, &long[0]),
        Err(ReassemblyError::TooLong)
    );
    let mut bad_index = p[2].clone();
    bad_index[13] = 9;
    assert_eq!(
        r.handle_fragment(T0, &bad_index),
        Err(ReassemblyError::OutOfRange)
    );
    assert_eq!(r.handle_fragment(T0, &p[2]), Ok(None));
    let done = r.handle_fragment(T0, &p[1]).unwrap().unwrap();
    assert_eq!(done.payload, msg);
    assert_eq!(done.fragments, 3);
    assert_eq!(r.in_progress(), 0);
    assert_eq!(r.bytes_held(), 0);
    assert_eq!(fragment(0, 0, 0, &msg, 0), Err(FragmentError::ZeroSize));
    // With no room for any message, one needing two fragments is refused as busy.
    let mut none = Reassembler::new(ReassemblyConfig {
        max_messages: 0,
        ..ReassemblyConfig::default()
    });
    assert_eq!(none.handle_fragment(T0, &p[0]), Err(ReassemblyError::Busy));
}

/// Regression (a): once `max_messages` partial messages had each lost a fragment, every
/// new message was `Busy` forever.
#[test]
fn lost_fragments_never_block_new_messages() {
    let cfg = ReassemblyConfig {
        max_messages: 2,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(cfg);
    let msg = [7u8; 30];
    // Ten messages each lose their last fragment.
    for id in 0..10 {
        let p = fragment(1, id, 0, &msg, 10).unwrap();
        assert_eq!(r.handle_fragment(at(u64::from(id)), &p[0]), Ok(None));
        assert_eq!(r.handle_fragment(at(u64::from(id)), &p[1]), Ok(None));
        assert!(r.in_progress() <= 2);
    }
    assert_eq!(r.stats().evicted, 8, "the oldest made room each time");
    assert_eq!(r.stats().expired, 0);
    // A new message still assembles, before any timeout.
    let p = fragment(1, 10, 0, &msg, 10).unwrap();
    let mut done = None;
    for f in &p {
        done = r.handle_fragment(at(20), f).unwrap().or(done);
    }
    assert_eq!(done.map(|a| a.message), Some(10));
    assert_eq!(r.stats().evicted, 9);
}

#[test]
fn dead_messages_time_out_and_a_late_fragment_starts_afresh() {
    let cfg = ReassemblyConfig {
        timeout: 1_000,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(cfg);
    let msg: Vec<u8> = (0..30).collect();
    let p = fragment(1, 0, 0, &msg, 10).unwrap();
    let q = fragment(1, 1, 0, &msg, 10).unwrap();
    assert_eq!(r.handle_fragment(at(0), &p[0]), Ok(None));
    assert_eq!(r.handle_fragment(at(500), &q[0]), Ok(None));
    assert_eq!(r.poll_timeout(), Some(at(1_001)));
    assert_eq!(r.expire(at(1_000)), 0, "exactly the timeout is not more");
    assert_eq!(r.expire(at(1_001)), 1);
    assert_eq!(r.in_progress(), 1);
    assert_eq!(r.poll_timeout(), Some(at(1_501)));
    // Message 1's next fragment after its timeout: the old part is dropped, this one
    // starts the message again, and the message completes once the rest come.
    assert_eq!(r.handle_fragment(at(1_600), &q[1]), Ok(None));
    assert_eq!(r.stats().expired, 2);
    assert_eq!(r.handle_fragment(at(1_700), &q[2]), Ok(None));
    let a = r.handle_fragment(at(1_800), &q[0]).unwrap().unwrap();
    assert_eq!(a.payload, msg);
    assert_eq!(r.stats().evicted, 2);
    assert_eq!(r.poll_timeout(), None);
}

/// Regression (b): the delivered set remembered only the last `max_messages` ids, so a
/// late duplicate of an older message was assembled a second time.
#[test]
fn a_late_duplicate_is_never_assembled_twice() {
    let cfg = ReassemblyConfig {
        max_messages: 1,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(cfg);
    let msgs: Vec<Vec<Vec<u8>>> = (0..200)
        .map(|id| fragment(4, id, 0, &[id as u8; 12], 5).unwrap())
        .collect();
    let mut delivered = 0;
    for (id, frags) in msgs.iter().enumerate() {
        for f in frags {
            if r.handle_fragment(T0, f).unwrap().is_some() {
                delivered += 1;
            }
        }
        // Every earlier message, replayed whole: nothing assembles again.
        for old in msgs.iter().take(id + 1) {
            for f in old {
                let res = r.handle_fragment(T0, f);
                assert!(
                    matches!(
                        res,
                        Err(ReassemblyError::AlreadyDelivered | ReassemblyError::Stale)
                    ),
                    "{res:?}"
                );
            }
        }
    }
    assert_eq!(delivered, 200);
    assert_eq!(
        r.handle_fragment(T0, &msgs[199 - 127][0]),
        Err(ReassemblyError::AlreadyDelivered)
    );
    assert_eq!(
        r.handle_fragment(T0, &msgs[199 - 128][0]),
        Err(ReassemblyError::Stale)
    );
    // Another stream with the same ids is its own.
    let other = fragment(5, 0, 0, &[1; 12], 5).unwrap();
    let mut got = None;
    for f in &other {
        got = r.handle_fragment(T0, f).unwrap().or(got);
    }
    assert!(got.is_some());
}

#[test]
fn a_message_overtaken_by_the_window_is_dropped_and_stale() {
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let slow = fragment(2, 0, 0, &[9; 20], 10).unwrap();
    assert_eq!(r.handle_fragment(T0, &slow[0]), Ok(None));
    // Message 1 skipped; messages 2..=128 delivered: message 0 is now below the window.
    for id in 2..=DELIVERY_WINDOW {
        let f = fragment(2, id, 0, &[1], 10).unwrap();
        assert!(r.handle_fragment(T0, &f[0]).unwrap().is_some());
    }
    assert_eq!(r.in_progress(), 0);
    assert_eq!(r.stats().evicted, 1);
    assert_eq!(r.handle_fragment(T0, &slow[1]), Err(ReassemblyError::Stale));
    // Message 1 is still in the window: late, but not lost.
    let late = fragment(2, 1, 0, &[3], 10).unwrap();
    assert!(r.handle_fragment(T0, &late[0]).unwrap().is_some());
    // A stream forgotten starts again from id 0.
    r.forget_stream(2);
    assert!(r.handle_fragment(T0, &late[0]).unwrap().is_some());
}

/// Regression (c): the first fragment allocated the whole declared length, so 16 tiny
/// packets could claim 16 MiB.
#[test]
fn memory_grows_with_the_fragments_not_the_declared_length() {
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let big = vec![0u8; 1 << 20];
    for id in 0..16 {
        let p = fragment(1, id, 0, &big, 1024).unwrap();
        // Only the (short) header-sized claim of the first fragment: its bytes, its
        // index, and the bitmap of 1,024 fragments.
        assert_eq!(r.handle_fragment(T0, &p[0]), Ok(None));
    }
    assert_eq!(r.in_progress(), 16);
    assert_eq!(r.bytes_held(), 16 * (1024 + 2 + 8 * 16));
    // A byte budget evicts the oldest: held bytes never pass it.
    let cfg = ReassemblyConfig {
        max_bytes: 5_000,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(cfg);
    let msg = vec![1u8; 4_000];
    for id in 0..6 {
        let p = fragment(1, id, 0, &msg, 1_000).unwrap();
        for f in &p[..3] {
            assert_eq!(r.handle_fragment(at(u64::from(id)), f), Ok(None));
            assert!(r.bytes_held() <= 5_000);
        }
    }
    assert!(r.stats().evicted >= 5);
    assert!(r.stats().evicted_bytes >= 5 * 3_000);
    // A message that could never fit whole is too long, not held.
    let huge = fragment(1, 9, 0, &[0; 5_000], 1_000).unwrap();
    assert_eq!(
        r.handle_fragment(T0, &huge[0]),
        Err(ReassemblyError::TooLong)
    );
}

#[test]
fn fragments_in_any_order_are_put_in_place() {
    let msg: Vec<u8> = (0..=255).collect();
    let p = fragment(1, 0, 0, &msg, 50).unwrap();
    for order in [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 0, 5, 1, 4, 3]] {
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let mut done = None;
        for i in order {
            done = r.handle_fragment(T0, &p[i]).unwrap().or(done);
        }
        assert_eq!(done.unwrap().payload, msg);
        assert_eq!(r.bytes_held(), 0);
    }
}
