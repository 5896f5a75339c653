//! Each handler against an independent model of what the paper (§3–§4) and the handler's
//! docs say it does, on random messages with random run-time `configure` calls between
//! them, applied to both.
//!
//! The models below never call the crate's code: they read fields, evaluate predicates,
//! look up routes, copy, filter and rewrite bytes on their own, so a bug shared by a handler
//! and a helper it uses (`Field::read`, `Predicate::matches`, `naive_multicast`) still
//! shows. Every output list must equal the model's exactly: destinations, payloads, order.
//! Customised multicast is also checked as the paper composes it: an Rx-side mirror and
//! Tx-side per-destination filters in a `Deployment`.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use stream_handlers::deploy::{Deployment, Point};
use stream_handlers::handlers::{
    ByteSwap, ContentRouter, CustomMulticast, Delta, DestFilter, Filter, Mirror,
};
use stream_handlers::{Destination, Field, HandlerError, Message, Param, Predicate, StreamHandler};

// ---- The model: plain readings of the docs -------------------------------------------

/// A field: `width` bytes big-endian at `offset` (widths 1 and 2 as given, any other width
/// reads 4 bytes); nothing if the payload ends before the field does.
fn read(f: Field, payload: &[u8]) -> Option<u32> {
    let width = match f.width {
        1 => 1,
        2 => 2,
        _ => 4,
    };
    let offset = usize::from(f.offset);
    if offset + width > payload.len() {
        return None;
    }
    let mut value = 0u32;
    for &b in &payload[offset..offset + width] {
        value = (value << 8) | u32::from(b);
    }
    Some(value)
}

/// Whether a payload passes: a payload too short for the field never does.
fn passes(p: Predicate, payload: &[u8]) -> bool {
    match p {
        Predicate::All => true,
        Predicate::Eq(f, v) => read(f, payload) == Some(v),
        Predicate::Lt(f, v) => matches!(read(f, payload), Some(x) if x < v),
        Predicate::Ge(f, v) => matches!(read(f, payload), Some(x) if x >= v),
        Predicate::Range(f, lo, hi) => matches!(read(f, payload), Some(x) if lo <= x && x <= hi),
    }
}

/// The predicate of a destination in a per-destination table: its first entry, or
/// everything if it has none.
fn predicate_of(filters: &[(Destination, Predicate)], dest: Destination) -> Predicate {
    for &(d, p) in filters {
        if d == dest {
            return p;
        }
    }
    Predicate::All
}

/// What a handler does, as the model sees it.
trait Model {
    fn handle(&mut self, msg: &Message) -> Vec<Message>;
    fn configure(&mut self, p: Param) -> Result<(), HandlerError>;
}

/// Content-based routing: the first route whose value equals the field, else the default,
/// else dropped. A route for a known value is replaced; a new one needs room.
struct RouteModel {
    field: Field,
    routes: Vec<(u32, Destination)>,
    default: Option<Destination>,
    capacity: usize,
}

impl Model for RouteModel {
    fn handle(&mut self, msg: &Message) -> Vec<Message> {
        let mut dest = self.default;
        if let Some(v) = read(self.field, &msg.payload)
            && let Some(&(_, d)) = self.routes.iter().find(|r| r.0 == v)
        {
            dest = Some(d);
        }
        dest.map(|d| Message::new(d, msg.payload.clone()))
            .into_iter()
            .collect()
    }

    fn configure(&mut self, p: Param) -> Result<(), HandlerError> {
        let Param::Route(value, dest) = p else {
            return Err(HandlerError::UnsupportedParam);
        };
        for r in &mut self.routes {
            if r.0 == value {
                r.1 = dest;
                return Ok(());
            }
        }
        if self.routes.len() >= self.capacity {
            return Err(HandlerError::TableFull);
        }
        self.routes.push((value, dest));
        Ok(())
    }
}

/// Mirroring: one copy per destination, in order; a fan-out `n` means destinations `0..n`.
struct MirrorModel(Vec<Destination>);

impl Model for MirrorModel {
    fn handle(&mut self, msg: &Message) -> Vec<Message> {
        self.0
            .iter()
            .map(|&d| Message::new(d, msg.payload.clone()))
            .collect()
    }

    fn configure(&mut self, p: Param) -> Result<(), HandlerError> {
        let Param::FanOut(n) = p else {
            return Err(HandlerError::UnsupportedParam);
        };
        self.0 = (0..n).collect();
        Ok(())
    }
}

/// Filtering: the message unchanged if it passes, else nothing.
struct FilterModel(Predicate);

impl Model for FilterModel {
    fn handle(&mut self, msg: &Message) -> Vec<Message> {
        if passes(self.0, &msg.payload) {
            vec![msg.clone()]
        } else {
            vec![]
        }
    }

    fn configure(&mut self, p: Param) -> Result<(), HandlerError> {
        let Param::Predicate(p) = p else {
            return Err(HandlerError::UnsupportedParam);
        };
        self.0 = p;
        Ok(())
    }
}

/// Sets one destination's predicate: its first entry, or a new entry at the end.
fn set_dest(filters: &mut Vec<(Destination, Predicate)>, dest: Destination, p: Predicate) {
    for f in filters.iter_mut() {
        if f.0 == dest {
            f.1 = p;
            return;
        }
    }
    filters.push((dest, p));
}

/// The Tx-side filter: the copy passes its destination's predicate. A new predicate applies
/// to every destination that has one (the tour: "the host gives every client …"); a
/// destination's predicate to that destination alone.
struct DestFilterModel(Vec<(Destination, Predicate)>);

impl Model for DestFilterModel {
    fn handle(&mut self, msg: &Message) -> Vec<Message> {
        if passes(predicate_of(&self.0, msg.dest), &msg.payload) {
            vec![msg.clone()]
        } else {
            vec![]
        }
    }

    fn configure(&mut self, p: Param) -> Result<(), HandlerError> {
        match p {
            Param::Predicate(p) => self.0 = self.0.iter().map(|&(d, _)| (d, p)).collect(),
            Param::DestPredicate(d, p) => set_dest(&mut self.0, d, p),
            _ => return Err(HandlerError::UnsupportedParam),
        }
        Ok(())
    }
}

/// Customised multicast: for each destination in order, a copy if its predicate passes.
/// Fan-out changes the destinations, a predicate the filters (a destination's predicate
/// that destination's filter); routes do not apply.
struct MulticastModel {
    dests: Vec<Destination>,
    filters: Vec<(Destination, Predicate)>,
}

impl Model for MulticastModel {
    fn handle(&mut self, msg: &Message) -> Vec<Message> {
        let mut out = Vec::new();
        for &d in &self.dests {
            if passes(predicate_of(&self.filters, d), &msg.payload) {
                out.push(Message::new(d, msg.payload.clone()));
            }
        }
        out
    }

    fn configure(&mut self, p: Param) -> Result<(), HandlerError> {
        match p {
            Param::FanOut(n) => self.dests = (0..n).collect(),
            Param::Predicate(p) => {
                self.filters = self.filters.iter().map(|&(d, _)| (d, p)).collect();
            }
            Param::DestPredicate(d, p) => set_dest(&mut self.filters, d, p),
            Param::Route(..) => return Err(HandlerError::UnsupportedParam),
        }
        Ok(())
    }
}

/// Delta: adds `step` (wrapping) to each byte of `offset .. offset + len·percent/100`
/// (percent capped at 100), both ends clipped to the message. No parameters.
struct DeltaModel {
    offset: u16,
    percent: u8,
    step: u8,
}

impl Model for DeltaModel {
    fn handle(&mut self, msg: &Message) -> Vec<Message> {
        let len = msg.payload.len();
        let region = len * usize::from(self.percent.min(100)) / 100;
        let start = usize::from(self.offset).min(len);
        let end = (start + region).min(len);
        let mut payload = msg.payload.clone();
        for b in &mut payload[start..end] {
            *b = b.wrapping_add(self.step);
        }
        vec![Message::new(msg.dest, payload)]
    }

    fn configure(&mut self, _p: Param) -> Result<(), HandlerError> {
        Err(HandlerError::UnsupportedParam)
    }
}

/// ByteSwap (the format handler): each whole 32-bit word byte-swapped, trailing bytes (len mod 4) unchanged.
struct FormatModel;

impl Model for FormatModel {
    fn handle(&mut self, msg: &Message) -> Vec<Message> {
        let p = &msg.payload;
        let whole = p.len() / 4 * 4;
        let payload = (0..p.len())
            .map(|j| {
                if j < whole {
                    p[j - j % 4 + 3 - j % 4]
                } else {
                    p[j]
                }
            })
            .collect();
        vec![Message::new(msg.dest, payload)]
    }

    fn configure(&mut self, _p: Param) -> Result<(), HandlerError> {
        Err(HandlerError::UnsupportedParam)
    }
}

// ---- Random inputs ---------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    /// A message to the destination.
    Msg(Destination, Vec<u8>),
    /// A run-time parameter change.
    Cfg(Param),
}

fn field() -> impl Strategy<Value = Field> {
    let offset = prop_oneof![6 => 0u16..10, 1 => Just(u16::MAX), 1 => any::<u16>()];
    let width = prop_oneof![4 => prop_oneof![Just(1u8), Just(2), Just(4)], 1 => any::<u8>()];
    (offset, width).prop_map(|(o, w)| Field::new(o, w))
}

/// Values that often match the small bytes of the payloads, sometimes anything.
fn value() -> impl Strategy<Value = u32> {
    prop_oneof![3 => 0u32..6, 1 => 0u32..0x300, 1 => any::<u32>()]
}

fn predicate() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        Just(Predicate::All),
        (field(), value()).prop_map(|(f, v)| Predicate::Eq(f, v)),
        (field(), value()).prop_map(|(f, v)| Predicate::Lt(f, v)),
        (field(), value()).prop_map(|(f, v)| Predicate::Ge(f, v)),
        // Not sorted: an empty band (lo > hi) must keep nothing.
        (field(), value(), value()).prop_map(|(f, a, b)| Predicate::Range(f, a, b)),
    ]
}

fn dest() -> impl Strategy<Value = Destination> {
    prop_oneof![5 => 0u16..6, 1 => any::<u16>()]
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![3 => 0u8..4, 1 => any::<u8>()], 0..24)
}

fn param() -> impl Strategy<Value = Param> {
    prop_oneof![
        predicate().prop_map(Param::Predicate),
        (0u16..7).prop_map(Param::FanOut),
        (value(), dest()).prop_map(|(v, d)| Param::Route(v, d)),
        (dest(), predicate()).prop_map(|(d, p)| Param::DestPredicate(d, p)),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (dest(), payload()).prop_map(|(d, p)| Op::Msg(d, p)),
        1 => param().prop_map(Op::Cfg),
    ];
    prop::collection::vec(op, 0..40)
}

/// Runs `ops` through the handler and the model: the same outputs for every message
/// (appended after what `out` already held), the same answer to every `configure`.
fn agree(h: &mut dyn StreamHandler, m: &mut dyn Model, ops: &[Op]) -> Result<(), TestCaseError> {
    let sentinel = Message::new(9999, vec![0xee]);
    for op in ops {
        match op {
            Op::Msg(d, p) => {
                let msg = Message::new(*d, p.clone());
                let mut out = vec![sentinel.clone()];
                h.handle(msg.clone(), &mut out);
                let mut want = vec![sentinel.clone()];
                want.extend(m.handle(&msg));
                prop_assert_eq!(out, want, "{} on {:?}", h.name(), msg);
            }
            Op::Cfg(p) => prop_assert_eq!(h.configure(*p), m.configure(*p), "{:?}", p),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn route_equals_its_model(
        f in field(),
        routes in prop::collection::vec((value(), dest()), 0..5),
        default in proptest::option::of(dest()),
        capacity in 0usize..6,
        ops in ops(),
    ) {
        let mut h = ContentRouter::new(f, default, capacity);
        h.routes = routes.clone();
        let mut m = RouteModel { field: f, routes, default, capacity };
        agree(&mut h, &mut m, &ops)?;
    }

    #[test]
    fn mirror_equals_its_model(dests in prop::collection::vec(dest(), 0..6), ops in ops()) {
        agree(&mut Mirror::new(dests.clone()), &mut MirrorModel(dests), &ops)?;
    }

    #[test]
    fn filter_equals_its_model(p in predicate(), ops in ops()) {
        agree(&mut Filter::new(p), &mut FilterModel(p), &ops)?;
    }

    #[test]
    fn dest_filter_equals_its_model(
        filters in prop::collection::vec((dest(), predicate()), 0..6),
        ops in ops(),
    ) {
        agree(&mut DestFilter::new(filters.clone()), &mut DestFilterModel(filters), &ops)?;
    }

    #[test]
    fn custom_multicast_equals_its_model(
        dests in prop::collection::vec(dest(), 0..6),
        filters in prop::collection::vec((dest(), predicate()), 0..6),
        ops in ops(),
    ) {
        let mut h = CustomMulticast::new(dests.clone(), filters.clone());
        agree(&mut h, &mut MulticastModel { dests, filters }, &ops)?;
    }

    #[test]
    fn delta_equals_its_model(
        offset in prop_oneof![0u16..30, any::<u16>()],
        percent in prop_oneof![0u8..=100, any::<u8>()],
        step in any::<u8>(),
        ops in ops(),
    ) {
        let mut h = Delta { offset, percent, step };
        agree(&mut h, &mut DeltaModel { offset, percent, step }, &ops)?;
    }

    #[test]
    fn format_equals_its_model(ops in ops()) {
        agree(&mut ByteSwap, &mut FormatModel, &ops)?;
    }

    /// The paper's composition: a mirror on the Rx side, per-destination filters on the Tx
    /// side, built by hand as a `Deployment`, equals `CustomMulticast` (as a handler and as
    /// its own deployment) and the model; run-time changes go to the stage they concern.
    #[test]
    fn rx_mirror_and_tx_filters_compose_into_custom_multicast(
        dests in prop::collection::vec(dest(), 0..6),
        filters in prop::collection::vec((dest(), predicate()), 0..6),
        ops in ops(),
    ) {
        let mut composed = Deployment::new();
        composed.push(Point::RxSide, Box::new(Mirror::new(dests.clone())));
        composed.push(Point::TxSide, Box::new(DestFilter::new(filters.clone())));
        let mut mc = CustomMulticast::new(dests.clone(), filters.clone());
        let mut own = mc.deployment();
        prop_assert_eq!(own.stages.len(), 2);
        prop_assert_eq!(own.stages[0].point, Point::RxSide);
        prop_assert_eq!(own.stages[1].point, Point::TxSide);
        let mut model = MulticastModel { dests, filters };
        for op in &ops {
            match op {
                Op::Msg(d, p) => {
                    let msg = Message::new(*d, p.clone());
                    let want = model.handle(&msg);
                    let mut out = Vec::new();
                    mc.handle(msg.clone(), &mut out);
                    prop_assert_eq!(&out, &want);
                    prop_assert_eq!(composed.run(msg.clone()), want.clone());
                    prop_assert_eq!(own.run(msg), want);
                }
                Op::Cfg(p) => {
                    let want = model.configure(*p);
                    prop_assert_eq!(mc.configure(*p), want);
                    let stage = match p {
                        Param::FanOut(_) => 0,
                        _ => 1,
                    };
                    prop_assert_eq!(composed.stages[stage].handler.configure(*p), want);
                    prop_assert_eq!(own.stages[stage].handler.configure(*p), want);
                }
            }
        }
    }
}

/// The models themselves can tell handlers apart: a filter that kept short payloads, a
/// router whose later route won, a format that swapped the tail would all disagree here.
#[test]
fn the_models_decide_the_edge_cases_the_docs_name() {
    let f = Field::new(1, 2);
    assert!(!passes(Predicate::Ge(f, 0), &[7, 7]));
    assert!(passes(Predicate::Ge(f, 0), &[7, 7, 7]));
    assert!(!passes(Predicate::Range(f, 3, 2), &[0, 0, 2]));
    assert_eq!(read(Field::new(0, 3), &[1, 2, 3, 4]), Some(0x0102_0304));
    let mut r = RouteModel {
        field: Field::new(0, 1),
        routes: vec![(1, 5), (1, 6)],
        default: None,
        capacity: 2,
    };
    assert_eq!(r.handle(&Message::new(0, vec![1]))[0].dest, 5);
    assert_eq!(
        r.configure(Param::Route(2, 1)),
        Err(HandlerError::TableFull)
    );
    let out = FormatModel.handle(&Message::new(0, vec![1, 2, 3, 4, 5, 6]));
    assert_eq!(out[0].payload, vec![4, 3, 2, 1, 5, 6]);
    let d = DeltaModel {
        offset: 8,
        percent: 200,
        step: 1,
    }
    .handle(&Message::new(0, vec![0; 10]));
    assert_eq!(d[0].payload, vec![0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
}
