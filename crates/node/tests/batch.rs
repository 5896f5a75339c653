//! `Node::handle_packets` (a batch, its ESP lookups warmed together) against
//! `Node::handle_packet` one frame at a time: on random sequences of frames — ESP
//! instructions of every kind the stores see, at every site, dedicated and piggybacked,
//! plain IP, frames for the node, short and garbage frames, unknown interfaces, any of
//! those behind a threaded label (forwarded by the label, falling back, out of hops), and
//! routing messages that teach the labels' table — the two nodes must rewrite every frame
//! alike, answer alike, queue the same transmits and deliveries and count the same
//! statistics. The stores are small, so they fill and refuse.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::IpAddr;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::{CombineOp, CompareOp, Instruction};
use esp_proto::wire::Loc;
use ess::{HashKey, Tag, Value};
use fastpath::dv;
use fastpath::dv::wire::{AdvEntry, Advertisement, MessageKind};
use proptest::prelude::*;
use waist_node::frame::{KIND_LABEL, KIND_ROUTING};
use waist_node::routes::prefix;
use waist_node::{Config, Delivery, EspConfig, InPlace, Instant, Node};

fn instruction() -> impl Strategy<Value = Instruction> {
    let tag = || (0u64..24).prop_map(Tag);
    let val = || (0u64..4).prop_map(Value);
    prop_oneof![
        (tag(), 0u64..6).prop_map(|(counter, thresh)| Instruction::Count { counter, thresh }),
        (tag(), val()).prop_map(|(value, current)| Instruction::Compare {
            value,
            current,
            op: CompareOp::Lt
        }),
        (tag(), val(), tag()).prop_map(|(value, val, counter)| Instruction::Collect {
            value,
            val,
            counter,
            op: CombineOp::Add
        }),
        (tag(), val()).prop_map(|(tag, value)| Instruction::Get { tag, value }),
        (tag(), val()).prop_map(|(tag, value)| Instruction::Put { tag, value }),
        (tag(), val()).prop_map(|(tag, value)| Instruction::Update {
            tag,
            value,
            op: CombineOp::Max
        }),
        tag().prop_map(|tag| Instruction::Mark { tag }),
        tag().prop_map(|tag| Instruction::Subcast { tag }),
        tag().prop_map(|tag| Instruction::Exists { tag }),
        (tag(), val(), val()).prop_map(|(tag, expect, new)| Instruction::Cswap {
            tag,
            expect,
            new
        }),
    ]
}

/// One arriving frame, as drawn.
#[derive(Clone, Debug)]
enum Arrival {
    Esp {
        instr: Instruction,
        loc: u8,
        cid: u32,
        piggyback: bool,
        to_node: bool,
        ttl: u8,
    },
    Plain,
    Garbage(Vec<u8>),
    /// Behind a threaded label (its 32-bit word: random bit, hop limit, index).
    Labelled(u32, Box<Arrival>),
    /// A neighbour's update: destinations 77.. at (cost, index in its table).
    Routing(Vec<(u16, u32)>),
}

fn unlabelled() -> impl Strategy<Value = Arrival> {
    prop_oneof![
        8 => (instruction(), 0u8..8, 0u32..3, any::<bool>(), prop::bool::weighted(0.1), 1u8..4)
            .prop_map(|(instr, loc, cid, piggyback, to_node, ttl)| Arrival::Esp {
                instr, loc, cid, piggyback, to_node, ttl
            }),
        1 => Just(Arrival::Plain),
        1 => prop::collection::vec(any::<u8>(), 0..48).prop_map(Arrival::Garbage),
    ]
}

fn arrival() -> impl Strategy<Value = Arrival> {
    // Label words: threaded, hop limit 0..3, index 0..6 (0: this router), or random.
    let word = prop_oneof![
        4 => (0u32..3, 0u32..6).prop_map(|(hops, index)| (hops << 24) | index),
        1 => any::<u32>().prop_map(|w| w | 0x8000_0000),
    ];
    prop_oneof![
        10 => unlabelled(),
        4 => (word, unlabelled()).prop_map(|(w, a)| Arrival::Labelled(w, Box::new(a))),
        1 => prop::collection::vec((0u16..3, 0u32..8), 0..4).prop_map(Arrival::Routing),
    ]
}

const ME: [u8; 4] = [10, 0, 0, 254];

fn frame(a: &Arrival) -> Vec<u8> {
    let src: IpAddr = [10, 1, 0, 1].into();
    let far: IpAddr = [10, 2, 0, 1].into();
    match a {
        Arrival::Esp {
            instr,
            loc,
            cid,
            piggyback,
            to_node,
            ttl,
        } => {
            let dst = if *to_node { ME.into() } else { far };
            let ep = Endpoint::new(*cid, src)
                .with_loc(Loc::from_bits(*loc))
                .with_ttl(*ttl);
            let built = if *piggyback {
                let mut base = vec![0u8; 20 + 8 + 4];
                waist_ip::emit_header(&mut base, src, dst, 17, *ttl, 12).unwrap();
                ep.piggyback(&base, instr)
            } else {
                ep.packet_to(dst, instr, &[1, 2, 3])
            };
            built.unwrap_or_default()
        }
        Arrival::Plain => {
            let mut p = vec![0u8; 40];
            waist_ip::emit_header(&mut p, src, far, 17, 9, 20).unwrap();
            p
        }
        Arrival::Garbage(g) => g.clone(),
        Arrival::Labelled(word, inner) => {
            let mut f = vec![KIND_LABEL];
            f.extend_from_slice(&word.to_be_bytes());
            f.extend(frame(inner));
            f
        }
        Arrival::Routing(entries) => {
            let entries: Vec<AdvEntry> = (77..)
                .zip(entries)
                .map(|(dest, &(cost, index))| AdvEntry { dest, cost, index })
                .collect();
            let mut f = vec![KIND_ROUTING];
            let mut msg = Vec::new();
            Advertisement::emit(MessageKind::Update, 9, &entries, &mut msg);
            f.extend(msg);
            f
        }
    }
}

fn node() -> Node {
    let mut c = Config::router(ME.into(), 3);
    // 2^4 bindings per context: small enough to fill and refuse.
    c.esp = Some(EspConfig::new(1, 4, HashKey::from_seed(3)).unwrap());
    // Routing on interface 1, whose neighbour's updates fill the labels' table.
    c.dv = Some(dv::Config::new(u32::from_be_bytes(ME)));
    c.ifaces[1] = c.ifaces[1].clone().with_dv(1);
    let mut n = Node::new(c, Instant::ZERO).unwrap();
    n.add_route(prefix([10, 1, 0, 0].into(), 16).unwrap(), 0);
    n.add_route(prefix([10, 2, 0, 0].into(), 16).unwrap(), 1);
    n
}

type Out = (
    Vec<(Option<InPlace>, Vec<u8>)>,
    Vec<(usize, Vec<u8>)>,
    Vec<Delivery>,
);

fn drain(n: &mut Node, sent: Vec<(Option<InPlace>, Vec<u8>)>) -> Out {
    let mut queued = Vec::new();
    while let Some(t) = n.poll_transmit_owned() {
        queued.push(t);
    }
    let mut delivered = Vec::new();
    while let Some(d) = n.poll_deliver() {
        delivered.push(d);
    }
    (sent, queued, delivered)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_batch_runs_exactly_like_one_frame_at_a_time(
        batches in prop::collection::vec(
            (prop::collection::vec((0usize..4, arrival()), 0..40), 0u64..4_000_000),
            1..8,
        ),
    ) {
        let (mut one, mut many) = (node(), node());
        let mut now = 0u64;
        for (frames, step) in &batches {
            now += step;
            let at = Instant::from_micros(now);
            one.handle_timeout(at);
            many.handle_timeout(at);
            let mut single = Vec::new();
            for (iface, a) in frames {
                let mut f = frame(a);
                let sent = one.handle_packet(at, *iface, &mut f);
                single.push((sent, f));
            }
            let mut batch: Vec<(usize, Vec<u8>)> =
                frames.iter().map(|(i, a)| (*i, frame(a))).collect();
            let mut batched = Vec::new();
            many.handle_packets(at, &mut batch, |i, sent, f| {
                assert_eq!(i, batched.len());
                batched.push((sent, f.to_vec()));
            });
            prop_assert_eq!(drain(&mut one, single), drain(&mut many, batched));
            prop_assert_eq!(one.stats(), many.stats());
            prop_assert_eq!(
                one.esp().map(|e| (e.stats(), e.created())),
                many.esp().map(|e| (e.stats(), e.created()))
            );
        }
    }
}

#[test]
fn batches_of_count_packets_fill_the_store_alike() {
    let (mut one, mut many) = (node(), node());
    let at = Instant::from_micros(5);
    let mut frames: Vec<(usize, Vec<u8>)> = (0..96u64)
        .map(|t| {
            let count = Instruction::Count {
                counter: Tag(t),
                thresh: 9,
            };
            let ep = Endpoint::new(1, [10, 1, 0, 1].into()).with_loc(Loc::ALL);
            (0, ep.packet_to([10, 2, 0, 1].into(), &count, &[]).unwrap())
        })
        .collect();
    let mut single = Vec::new();
    for (iface, f) in &frames {
        let mut f = f.clone();
        single.push((one.handle_packet(at, *iface, &mut f), f));
    }
    let mut batched = Vec::new();
    for chunk in frames.chunks_mut(32) {
        many.handle_packets(at, chunk, |_, sent, f| batched.push((sent, f.to_vec())));
    }
    assert_eq!(drain(&mut one, single), drain(&mut many, batched));
    assert_eq!(one.stats(), many.stats());
    let esp = many.esp().unwrap().stats();
    assert_eq!(esp, one.esp().unwrap().stats());
    // 16 bindings per context: the first 16 packets run everywhere, the rest abort.
    assert!(esp.executed >= 96 && esp.aborted >= 80, "{esp:?}");
}
