//! Each handler's declared [`Needs`] is honest: a handler that says it needs a prefix of
//! `n` bytes decides the same on the message cut to `n` bytes as on the whole message
//! (the same destinations, in the same order) and changes no byte of it, so a node may run
//! it on a message's first fragment and let the rest follow. Handlers that rewrite the
//! message say they need all of it.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use stream_handlers::deploy::{Deployment, Point};
use stream_handlers::handlers::{
    ByteSwap, ContentRouter, CustomMulticast, Delta, DestFilter, Filter, Mirror,
};
use stream_handlers::{Destination, Field, Message, Needs, Param, Predicate, StreamHandler};

fn field() -> impl Strategy<Value = Field> {
    let width = prop_oneof![4 => prop_oneof![Just(1u8), Just(2), Just(4)], 1 => any::<u8>()];
    (0u16..24, width).prop_map(|(o, w)| Field::new(o, w))
}

/// Values that often match the small bytes of the payloads.
fn value() -> impl Strategy<Value = u32> {
    prop_oneof![3 => 0u32..4, 1 => 0u32..0x400, 1 => any::<u32>()]
}

fn predicate() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        Just(Predicate::All),
        (field(), value()).prop_map(|(f, v)| Predicate::Eq(f, v)),
        (field(), value()).prop_map(|(f, v)| Predicate::Lt(f, v)),
        (field(), value()).prop_map(|(f, v)| Predicate::Ge(f, v)),
        (field(), value(), value()).prop_map(|(f, a, b)| Predicate::Range(f, a, b)),
    ]
}

fn dests() -> impl Strategy<Value = Vec<Destination>> {
    prop::collection::vec(0u16..6, 0..5)
}

fn filters() -> impl Strategy<Value = Vec<(Destination, Predicate)>> {
    prop::collection::vec((0u16..6, predicate()), 0..5)
}

/// A handler that decides without changing bytes, as random parameters.
#[derive(Clone, Debug)]
enum Deciding {
    Route(Field, Vec<(u32, Destination)>, Option<Destination>),
    Mirror(Vec<Destination>),
    Filter(Predicate),
    DestFilter(Vec<(Destination, Predicate)>),
    Multicast(Vec<Destination>, Vec<(Destination, Predicate)>),
}

impl Deciding {
    fn build(&self) -> Box<dyn StreamHandler> {
        match self.clone() {
            Self::Route(f, routes, default) => {
                let mut r = ContentRouter::new(f, default, 8);
                for (v, d) in routes {
                    r.configure(Param::Route(v, d)).unwrap();
                }
                Box::new(r)
            }
            Self::Mirror(d) => Box::new(Mirror::new(d)),
            Self::Filter(p) => Box::new(Filter::new(p)),
            Self::DestFilter(f) => Box::new(DestFilter::new(f)),
            Self::Multicast(d, f) => Box::new(CustomMulticast::new(d, f)),
        }
    }
}

fn deciding() -> impl Strategy<Value = Deciding> {
    prop_oneof![
        (
            field(),
            prop::collection::vec((value(), 0u16..6), 0..5),
            prop::option::of(0u16..6)
        )
            .prop_map(|(f, r, d)| Deciding::Route(f, r, d)),
        dests().prop_map(Deciding::Mirror),
        predicate().prop_map(Deciding::Filter),
        filters().prop_map(Deciding::DestFilter),
        (dests(), filters()).prop_map(|(d, f)| Deciding::Multicast(d, f)),
    ]
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![3 => 0u8..4, 1 => any::<u8>()], 0..64)
}

/// The outputs' destinations, in order.
fn decide(h: &mut dyn StreamHandler, msg: &Message) -> Vec<Destination> {
    let mut out = Vec::new();
    h.handle(msg.clone(), &mut out);
    out.iter().map(|m| m.dest).collect()
}

/// `msg` cut to the first `n` bytes.
fn prefix(msg: &Message, n: usize) -> Message {
    let cut = msg.payload.len().min(n);
    Message::new(msg.dest, msg.payload[..cut].to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// A deciding handler's prefix is enough: same destinations, in order, and every
    /// output carries the message's bytes unchanged.
    #[test]
    fn a_declared_prefix_decides_as_the_whole_message(
        spec in deciding(),
        payload in payload(),
        dest in 0u16..6,
    ) {
        let mut h = spec.build();
        let Needs::Prefix(n) = h.needs() else {
            return Err(TestCaseError::fail(format!("{} needs the whole message", h.name())));
        };
        let msg = Message::new(dest, payload);
        let mut whole = Vec::new();
        h.handle(msg.clone(), &mut whole);
        prop_assert!(whole.iter().all(|m| m.payload == msg.payload), "{} changed bytes", h.name());
        let on_prefix = decide(h.as_mut(), &prefix(&msg, n));
        let on_whole: Vec<Destination> = whole.iter().map(|m| m.dest).collect();
        prop_assert_eq!(on_prefix, on_whole, "{} needs more than {} bytes", h.name(), n);
    }

    /// A pipeline of deciding handlers needs the longest of their prefixes, and that is
    /// enough for the pipeline; one rewriting stage makes it need the whole message.
    #[test]
    fn a_deployment_prefix_decides_as_the_whole_message(
        stages in prop::collection::vec(deciding(), 0..4),
        rewrite in prop::option::of(any::<bool>()),
        payload in payload(),
        dest in 0u16..6,
    ) {
        let mut dep = Deployment::new();
        let mut want = Needs::Prefix(0);
        for spec in &stages {
            let h = spec.build();
            want = want.then(h.needs());
            dep.push(Point::RxSide, h);
        }
        prop_assert_eq!(dep.needs(), want);
        let msg = Message::new(dest, payload);
        let Needs::Prefix(n) = want else {
            return Err(TestCaseError::fail("deciding handlers need a prefix"));
        };
        let whole: Vec<Destination> = dep.run(msg.clone()).iter().map(|m| m.dest).collect();
        let cut: Vec<Destination> = dep.run(prefix(&msg, n)).iter().map(|m| m.dest).collect();
        prop_assert_eq!(cut, whole);
        if let Some(swap) = rewrite {
            let h: Box<dyn StreamHandler> =
                if swap { Box::new(ByteSwap) } else { Box::new(Delta::paper(1)) };
            dep.push(Point::InTransit, h);
            prop_assert_eq!(dep.needs(), Needs::Whole);
        }
    }
}

/// The prefixes are tight where a field is read, and rewriting handlers need everything.
#[test]
fn prefixes_end_at_the_fields_read() {
    let f = Field::new(4, 2);
    let p = Predicate::Ge(f, 1);
    let flt = Filter::new(p);
    assert_eq!(flt.needs(), Needs::Prefix(6));
    let mut router = ContentRouter::new(Field::new(9, 4), Some(1), 4);
    router.configure(Param::Route(7, 2)).unwrap();
    assert_eq!(router.needs(), Needs::Prefix(13));
    assert_eq!(Mirror::new(vec![1, 2]).needs(), Needs::Prefix(0));
    let mc = CustomMulticast::new(
        vec![1, 2],
        vec![(1, p), (2, Predicate::Lt(Field::new(1, 1), 3))],
    );
    assert_eq!(mc.needs(), Needs::Prefix(6));
    assert_eq!(DestFilter::new(vec![]).needs(), Needs::Prefix(0));
    assert_eq!(ByteSwap.needs(), Needs::Whole);
    assert_eq!(Delta::paper(3).needs(), Needs::Whole);
    // One byte short of the field, the filter decides otherwise: the prefix is not padded.
    let msg = Message::new(0, vec![0, 0, 0, 0, 0, 1, 9]);
    let mut flt = flt;
    assert_eq!(decide(&mut flt, &prefix(&msg, 6)), vec![0]);
    assert_eq!(
        decide(&mut flt, &prefix(&msg, 5)),
        Vec::<Destination>::new()
    );
}
