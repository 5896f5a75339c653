//! Fragmentation and bounded reassembly under loss, reordering, duplication and corruption.
//!
//! Random messages (sizes 0, exact multiples of the fragment size and anything between, on
//! several streams, message ids interleaved and reused across streams) are fragmented and
//! delivered through a seeded shuffle that loses, duplicates and reorders fragments. The
//! reassembler must deliver every message whose fragments all arrived exactly once with
//! its exact bytes, nothing else, keep within its `ReassemblyConfig` (messages and bytes
//! held), and answer every corrupted fragment with a typed error, never a panic and never a
//! wrong assembly. `reassembly_eviction.rs` adds small limits, time and late replays.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use sansio::Instant;
use stream_handlers::rudp::{
    HEADER_LEN, Header, Kind, Reassembler, ReassemblyConfig, ReassemblyError, fragment,
};

/// A seeded xorshift: the test's own randomness for shuffles, losses and corruptions.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform-enough in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn percent(&mut self, p: u8) -> bool {
        self.below(100) < usize::from(p)
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// One sent message.
#[derive(Debug)]
struct Sent {
    stream: u16,
    id: u32,
    first_seq: u32,
    bytes: Vec<u8>,
    fragments: Vec<Vec<u8>>,
}

/// A fragment size and message lengths: 0, exact multiples of the size, and anything.
fn workload() -> impl Strategy<Value = (u16, Vec<(u16, usize)>)> {
    (1u16..80).prop_flat_map(|size| {
        let s = usize::from(size);
        let len = prop_oneof![
            1 => Just(0usize),
            2 => (1usize..6).prop_map(move |k| k * s),
            3 => 1usize..400,
        ];
        (Just(size), prop::collection::vec((0u16..3, len), 1..24))
    })
}

/// Fragments every message: ids count up per stream (so the same id recurs on other
/// streams), sequence numbers run on per stream across messages, bytes from `rng`.
fn send(size: u16, lens: &[(u16, usize)], rng: &mut Rng) -> Vec<Sent> {
    let mut next_id: HashMap<u16, u32> = HashMap::new();
    let mut next_seq: HashMap<u16, u32> = HashMap::new();
    lens.iter()
        .map(|&(stream, len)| {
            let id = *next_id.entry(stream).and_modify(|i| *i += 1).or_insert(0);
            let seq = next_seq.entry(stream).or_insert(u32::MAX - 40);
            let first_seq = *seq;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let fragments = fragment(stream, id, first_seq, &bytes, size).unwrap();
            assert_eq!(fragments.len(), len.div_ceil(usize::from(size)).max(1));
            *seq = seq.wrapping_add(fragments.len() as u32);
            Sent {
                stream,
                id,
                first_seq,
                bytes,
                fragments,
            }
        })
        .collect()
}

/// The wire: each fragment lost with `loss` %, else sent once or (with `dup` %) two or three
/// times, then all shuffled. Returns (message index, fragment index, bytes) in arrival order.
fn deliver(sent: &[Sent], loss: u8, dup: u8, rng: &mut Rng) -> Vec<(usize, usize, Vec<u8>)> {
    let mut wire = Vec::new();
    for (m, s) in sent.iter().enumerate() {
        for (i, f) in s.fragments.iter().enumerate() {
            if rng.percent(loss) {
                continue;
            }
            let copies = if rng.percent(dup) {
                2 + rng.below(2)
            } else {
                1
            };
            for _ in 0..copies {
                wire.push((m, i, f.clone()));
            }
        }
    }
    rng.shuffle(&mut wire);
    wire
}

/// Which messages got every fragment, and which got some but not all.
fn arrivals(sent: &[Sent], wire: &[(usize, usize, Vec<u8>)]) -> (HashSet<usize>, HashSet<usize>) {
    let got: HashSet<(usize, usize)> = wire.iter().map(|w| (w.0, w.1)).collect();
    let mut complete = HashSet::new();
    let mut partial = HashSet::new();
    for (m, s) in sent.iter().enumerate() {
        let n = (0..s.fragments.len())
            .filter(|&i| got.contains(&(m, i)))
            .count();
        if n == s.fragments.len() {
            complete.insert(m);
        } else if n > 0 {
            partial.insert(m);
        }
    }
    (complete, partial)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// With room for every message (and so a memory of every delivery), the messages whose
    /// fragments all arrived come out exactly once, whole and exact; the others stay in
    /// progress; the only refusals are duplicates.
    #[test]
    fn every_complete_message_is_assembled_once_and_exactly(
        (size, lens) in workload(),
        loss in 0u8..30,
        dup in 0u8..40,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let sent = send(size, &lens, &mut rng);
        let wire = deliver(&sent, loss, dup, &mut rng);
        let (complete, partial) = arrivals(&sent, &wire);
        let cfg = ReassemblyConfig { max_messages: sent.len(), ..ReassemblyConfig::default() };
        let mut r = Reassembler::new(cfg);
        let by_key: HashMap<(u16, u32), usize> =
            sent.iter().enumerate().map(|(m, s)| ((s.stream, s.id), m)).collect();
        let mut assembled: HashMap<usize, usize> = HashMap::new();
        for (t, (m, _, packet)) in (0u64..).zip(&wire) {
            match r.handle_fragment(Instant::from_micros(t), packet) {
                Ok(Some(a)) => {
                    let k = by_key.get(&(a.stream, a.message)).copied();
                    prop_assert_eq!(k, Some(*m), "assembled a message that was not sent");
                    let s = &sent[*m];
                    prop_assert_eq!(&a.payload, &s.bytes);
                    prop_assert_eq!(a.first_seq, s.first_seq);
                    prop_assert_eq!(usize::from(a.fragments), s.fragments.len());
                    *assembled.entry(*m).or_default() += 1;
                }
                Ok(None) => {}
                Err(e) => prop_assert!(
                    matches!(e, ReassemblyError::Duplicate | ReassemblyError::AlreadyDelivered),
                    "a sound fragment refused: {e:?}"
                ),
            }
            prop_assert!(r.in_progress() <= cfg.max_messages);
            prop_assert!(r.bytes_held() <= cfg.max_bytes);
        }
        prop_assert_eq!(r.stats().assembled, complete.len() as u64);
        prop_assert_eq!(assembled.keys().copied().collect::<HashSet<_>>(), complete);
        prop_assert!(assembled.values().all(|&n| n == 1), "assembled twice: {:?}", assembled);
        prop_assert_eq!(r.in_progress(), partial.len());
        prop_assert_eq!(r.stats().evicted, 0);
    }

    /// With few slots, a length limit and a byte budget: never more in progress than the
    /// limit nor more bytes held than the budget; a message that could never fit whole is
    /// refused as too long, never held; no refusal changes anything; whatever comes out was
    /// sent, whole, at most once; whatever was evicted is counted.
    #[test]
    fn the_configured_bounds_hold_under_loss_and_reordering(
        (size, lens) in workload(),
        max_messages in 1usize..4,
        max_message_len in 0u32..300,
        max_bytes in 0usize..1_000,
        loss in 0u8..30,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let sent = send(size, &lens, &mut rng);
        let wire = deliver(&sent, loss, 0, &mut rng);
        let cfg = ReassemblyConfig { max_messages, max_message_len, max_bytes, timeout: u64::MAX };
        let mut r = Reassembler::new(cfg);
        let mut assembled = HashSet::new();
        for (m, _, packet) in &wire {
            let s = &sent[*m];
            let (before, held, stats) = (r.in_progress(), r.bytes_held(), r.stats());
            let res = r.handle_fragment(Instant::ZERO, packet);
            let too_long = s.bytes.len() > max_message_len as usize
                || whole_charge(s.bytes.len(), s.fragments.len()) > max_bytes;
            prop_assert_eq!(matches!(res, Err(ReassemblyError::TooLong)), too_long);
            match res {
                Ok(Some(a)) => {
                    prop_assert_eq!((a.stream, a.message), (s.stream, s.id));
                    prop_assert_eq!(&a.payload, &s.bytes);
                    prop_assert!(assembled.insert(*m), "assembled twice");
                }
                Ok(None) => prop_assert!(r.bytes_held() > 0),
                Err(e) => {
                    prop_assert!(matches!(e, ReassemblyError::TooLong), "{e:?}");
                    prop_assert_eq!((r.in_progress(), r.bytes_held()), (before, held));
                    prop_assert_eq!(r.stats(), stats);
                }
            }
            prop_assert!(r.in_progress() <= max_messages);
            prop_assert!(r.bytes_held() <= max_bytes);
            let st = r.stats();
            prop_assert_eq!(st.assembled, assembled.len() as u64);
            prop_assert!(st.evicted >= stats.evicted && st.expired == 0);
        }
    }

    /// Corrupted copies of real fragments (bit flips in every header field but the stream
    /// and message id, truncation, extra bytes, lying length, count, size and index fields)
    /// beside the real ones: no panic, nothing assembled wrong or twice, and every message
    /// none of whose fragments was corrupted still comes out whole if all of them arrived.
    #[test]
    fn corrupted_fragments_are_refused_and_never_assembled_wrong(
        (size, lens) in workload(),
        corrupt in 5u8..60,
        dup in 0u8..30,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let sent = send(size, &lens, &mut rng);
        let clean = deliver(&sent, 0, dup, &mut rng);
        let mut wire = Vec::new();
        let mut tainted = HashSet::new();
        for (m, i, packet) in clean {
            if !rng.percent(corrupt) {
                wire.push((m, packet));
                continue;
            }
            tainted.insert(m);
            let bad = corrupted(&packet, &mut rng);
            if bad == packet {
                continue; // no change (e.g. a lie equal to the truth): not a corruption
            }
            wire.push((m, bad));
            if rng.percent(50) {
                wire.push((m, sent[m].fragments[i].clone()));
            }
        }
        let cfg = ReassemblyConfig { max_messages: sent.len(), ..ReassemblyConfig::default() };
        let mut r = Reassembler::new(cfg);
        let mut assembled = HashSet::new();
        let mut got: HashMap<usize, HashSet<Vec<u8>>> = HashMap::new();
        for (m, packet) in &wire {
            got.entry(*m).or_default().insert(packet.clone());
            if let Ok(Some(a)) = r.handle_fragment(Instant::ZERO, packet) {
                let s = &sent[*m];
                prop_assert_eq!((a.stream, a.message), (s.stream, s.id));
                prop_assert_eq!(&a.payload, &s.bytes, "a wrong assembly");
                prop_assert!(assembled.insert(*m), "assembled twice");
            }
            prop_assert!(r.in_progress() <= cfg.max_messages);
            prop_assert!(r.bytes_held() <= cfg.max_bytes);
        }
        for (m, s) in sent.iter().enumerate() {
            let all = s.fragments.iter().all(|f| got.get(&m).is_some_and(|g| g.contains(f)));
            if all && !tainted.contains(&m) {
                prop_assert!(assembled.contains(&m), "message {} lost", m);
            }
        }
    }

    /// Any header at all, with any body: a typed answer, and what assembles has the length
    /// and fragment count its header declared.
    #[test]
    fn arbitrary_headers_never_panic(
        packets in prop::collection::vec(
            (0u16..2, 0u32..3, any::<u32>(), 0u16..4, 0u16..5, 0u32..200, 0u16..80, 0usize..100),
            1..30,
        ),
    ) {
        let cfg = ReassemblyConfig {
            max_messages: 3,
            max_message_len: 150,
            max_bytes: 400,
            ..ReassemblyConfig::default()
        };
        let mut r = Reassembler::new(cfg);
        for (stream, message, seq, index, count, len, size, body) in packets {
            let h = Header { kind: Kind::Data, stream, message, seq, index, count, len, size };
            let mut p = Vec::new();
            h.emit(&mut p);
            p.extend((0..body).map(|b| b as u8));
            if let Ok(Some(a)) = r.handle_fragment(Instant::ZERO, &p) {
                prop_assert_eq!(a.payload.len(), len as usize);
                prop_assert_eq!(a.fragments, count);
            }
            prop_assert!(r.in_progress() <= 3);
            prop_assert!(r.bytes_held() <= 400);
        }
    }
}

/// What holding a whole message costs, as `ReassemblyConfig::max_bytes` documents it: its
/// bytes, two bytes per fragment but the last, and a bit per fragment in 8-byte words.
fn whole_charge(len: usize, count: usize) -> usize {
    len + 2 * (count - 1) + 8 * count.div_ceil(64)
}

/// A corrupted copy of `packet`.
fn corrupted(packet: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut p = packet.to_vec();
    let put16 =
        |p: &mut Vec<u8>, at: usize, v: u16| p[at..at + 2].copy_from_slice(&v.to_be_bytes());
    match rng.below(8) {
        // A flipped bit in version, kind, sequence, index, count, length, size or the
        // reserved bytes (not in the stream or message id: without a checksum a flip there
        // is a fragment of another message, which only the UDP checksum can catch).
        0 => {
            let fields: Vec<usize> = (0..2).chain(8..HEADER_LEN).collect();
            let at = fields[rng.below(fields.len())];
            p[at] ^= 1 << rng.below(8);
        }
        1 => p.truncate(rng.below(p.len())),
        2 => p.extend((0..1 + rng.below(8)).map(|_| rng.next() as u8)),
        // The length lies: a little or a lot.
        3 => {
            let len = u32::from_be_bytes([p[16], p[17], p[18], p[19]]);
            let lie = if rng.percent(50) {
                len.wrapping_add(1 + rng.below(4) as u32)
                    .wrapping_sub(2 + rng.below(2) as u32)
            } else {
                rng.next() as u32
            };
            p[16..20].copy_from_slice(&lie.to_be_bytes());
        }
        4 => put16(&mut p, 14, rng.next() as u16 % 8),
        5 => put16(&mut p, 20, rng.next() as u16 % 100),
        6 => put16(&mut p, 12, rng.next() as u16 % 8),
        // An acknowledgement where data was expected.
        _ => p[1] = 1,
    }
    p
}

/// Known cases, each with its reason: the property tests above rely on these refusals.
#[test]
fn each_corruption_has_its_typed_reason() {
    let msg: Vec<u8> = (0..100).collect();
    let p = fragment(2, 9, 50, &msg, 40).unwrap();
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let try_ = |r: &mut Reassembler, f: &dyn Fn(&mut Vec<u8>)| {
        let mut q = p[1].clone();
        f(&mut q);
        r.handle_fragment(Instant::ZERO, &q)
    };
    assert_eq!(
        try_(&mut r, &|q| q.truncate(10)),
        Err(ReassemblyError::Truncated)
    );
    assert_eq!(
        try_(&mut r, &|q| q[0] = 0),
        Err(ReassemblyError::BadVersion)
    );
    assert_eq!(try_(&mut r, &|q| q[1] = 7), Err(ReassemblyError::BadKind));
    assert_eq!(try_(&mut r, &|q| q[1] = 1), Err(ReassemblyError::NotData));
    assert_eq!(try_(&mut r, &|q| q[23] = 1), Err(ReassemblyError::Reserved));
    assert_eq!(
        try_(&mut r, &|q| q.push(0)),
        Err(ReassemblyError::OutOfRange)
    );
    assert_eq!(
        try_(&mut r, &|q| q[15] = 4),
        Err(ReassemblyError::OutOfRange)
    );
    assert_eq!(
        try_(&mut r, &|q| q[21] = 41),
        Err(ReassemblyError::OutOfRange)
    );
    assert_eq!(r.in_progress(), 0, "a refusal leaves nothing behind");
    assert_eq!(r.bytes_held(), 0);
    assert_eq!(r.handle_fragment(Instant::ZERO, &p[0]), Ok(None));
    // A lying length that keeps the count and this fragment's span: caught against the
    // first fragment's header.
    assert_eq!(
        try_(&mut r, &|q| q[19] = 99),
        Err(ReassemblyError::Inconsistent)
    );
    // A flipped sequence number moves the message's first sequence number.
    assert_eq!(
        try_(&mut r, &|q| q[11] ^= 4),
        Err(ReassemblyError::Inconsistent)
    );
    assert_eq!(r.handle_fragment(Instant::ZERO, &p[2]), Ok(None));
    let a = r.handle_fragment(Instant::ZERO, &p[1]).unwrap().unwrap();
    assert_eq!(a.payload, msg);
    assert_eq!(
        r.handle_fragment(Instant::ZERO, &p[1]),
        Err(ReassemblyError::AlreadyDelivered)
    );
}
