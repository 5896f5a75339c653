//! Destination-customised multicast, composed as an Rx-side mirror and Tx-side
//! per-destination filters, delivers each destination exactly its filtered copy; a control
//! message re-parameterises one subscriber and leaves the others' copies as they were.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use stream_handlers::control::ControlMessage;
use stream_handlers::handlers::{CustomMulticast, naive_multicast};
use stream_handlers::stream::{Destination, Field, Message, Predicate, StreamHandler};

fn field() -> impl Strategy<Value = Field> {
    (0u16..12, prop_oneof![Just(1u8), Just(2), Just(4)]).prop_map(|(o, w)| Field::new(o, w))
}

fn predicate() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        Just(Predicate::All),
        (field(), any::<u32>()).prop_map(|(f, v)| Predicate::Eq(f, v & 0xff)),
        (field(), any::<u32>()).prop_map(|(f, v)| Predicate::Lt(f, v)),
        (field(), any::<u32>()).prop_map(|(f, v)| Predicate::Ge(f, v)),
        (field(), any::<u32>(), any::<u32>()).prop_map(|(f, a, b)| Predicate::Range(
            f,
            a.min(b),
            a.max(b)
        )),
    ]
}

proptest! {
    #[test]
    fn composed_multicast_equals_naive_per_destination_filtering(
        payload in proptest::collection::vec(any::<u8>(), 0..64),
        dests in proptest::collection::btree_set(0u16..16, 0..8),
        filters in proptest::collection::vec((0u16..16, predicate()), 0..10),
        src in any::<u16>(),
    ) {
        let dests: Vec<u16> = dests.into_iter().collect();
        let msg = Message::new(src, payload);
        let expected = naive_multicast(&dests, &filters, &msg);
        // Sanity of the oracle itself: each destination at most once, the original bytes.
        for m in &expected {
            prop_assert_eq!(&m.payload, &msg.payload);
            prop_assert_eq!(expected.iter().filter(|x| x.dest == m.dest).count(), 1);
        }
        let mut mc = CustomMulticast::new(dests.clone(), filters.clone());
        // As deployed: mirror on the Rx side, filters on the Tx side.
        let mut dep = mc.deployment();
        prop_assert_eq!(dep.run(msg.clone()), expected.clone());
        // As one handler.
        let mut out = Vec::new();
        mc.handle(msg.clone(), &mut out);
        prop_assert_eq!(out, expected);
    }
}

proptest! {
    /// `SetDestPredicate` for one destination, as bytes on the wire, applied to the
    /// Tx-side stage of the deployment and to the multicast as one handler: that
    /// destination now gets what the new predicate keeps, every other destination exactly
    /// what it got before.
    #[test]
    fn one_subscriber_is_re_parameterised_and_the_others_keep_theirs(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..32), 1..8),
        dests in proptest::collection::btree_set(0u16..8, 1..6),
        filters in proptest::collection::vec((0u16..8, predicate()), 0..8),
        pick in any::<prop::sample::Index>(),
        new in predicate(),
    ) {
        let dests: Vec<Destination> = dests.into_iter().collect();
        let dest = dests[pick.index(dests.len())];
        let mut mc = CustomMulticast::new(dests.clone(), filters.clone());
        let mut dep = mc.deployment();
        let mut wire = Vec::new();
        ControlMessage::SetDestPredicate { handler: 1, dest, predicate: new }.emit(&mut wire);
        let (stage, param) = ControlMessage::parse(&wire).unwrap().param().unwrap();
        dep.stages[usize::from(stage)].handler.configure(param).unwrap();
        mc.configure(param).unwrap();
        for payload in payloads {
            let msg = Message::new(0, payload);
            let before = naive_multicast(&dests, &filters, &msg);
            let out = dep.run(msg.clone());
            let mut one = Vec::new();
            mc.handle(msg.clone(), &mut one);
            prop_assert_eq!(&one, &out);
            let others = |v: &[Message]| -> Vec<Message> {
                v.iter().filter(|m| m.dest != dest).cloned().collect()
            };
            prop_assert_eq!(others(&out), others(&before));
            let got = out.iter().any(|m| m.dest == dest);
            prop_assert_eq!(got, new.matches(&msg.payload));
        }
    }
}
