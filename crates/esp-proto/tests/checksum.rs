//! A router's in-place processing keeps every IP header well formed (issue 24): after the
//! TTL decrement, ESP ingress (input port, central) and egress (output port), a packet in
//! any form — dedicated IPv4/IPv6, IPv4 option 158, IPv6 hop-by-hop — parses with
//! etherparse, its IPv4 header checksum verifies by etherparse's own computation, and its
//! lengths agree with its bytes. Instructions that rewrite their own bytes (COLLECT, GET
//! that aborts, PARAM, …) lie inside the IPv4 header in the option form, which the header
//! checksum covers.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::net::IpAddr;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::{CombineOp, Instruction};
use esp_proto::node::{EspNode, NodeConfig};
use esp_proto::wire::{Loc, decrement_ttl, locate};
use ess::{EssConfig, HashKey, Instant, Tag, Value};
use proptest::prelude::*;
use support::instruction;

#[derive(Clone, Copy, Debug)]
enum Form {
    DedicatedV4,
    DedicatedV6,
    Ipv4Option,
    Ipv6HopByHop,
}

fn node(seed: u64) -> EspNode {
    EspNode::new(NodeConfig {
        ifaces: 2,
        store: EssConfig::new(4, 1_000, 1, HashKey::from_seed(seed)).unwrap(),
        shards: 1,
        node_id: 0x0A00_00FE,
        idmap_key: HashKey::from_seed(seed ^ 9),
        timestamp_shift: 0,
    })
}

/// A UDP packet of `payload` bytes from `src` to `dst` with TTL `ttl`.
fn udp(src: IpAddr, dst: IpAddr, ttl: u8, payload: usize) -> Vec<u8> {
    let h = waist_ip::header_len_for(src);
    let mut p = vec![0u8; h + 8 + payload];
    waist_ip::emit_header(&mut p, src, dst, 17, ttl, 8 + payload).unwrap();
    p
}

/// The instruction in `form` from a host to another, or `None` where it does not fit.
fn packet(form: Form, instr: &Instruction, loc: Loc, ttl: u8) -> Option<Vec<u8>> {
    let (s4, d4) = (IpAddr::from([10, 1, 0, 1]), IpAddr::from([10, 2, 0, 1]));
    let (s6, d6) = (
        IpAddr::from([0xfd00, 1, 0, 0, 0, 0, 0, 1]),
        IpAddr::from([0xfd00, 2, 0, 0, 0, 0, 0, 1]),
    );
    let ep = |s| Endpoint::new(7, s).with_loc(loc).with_ttl(ttl);
    match form {
        Form::DedicatedV4 => ep(s4).packet_to(d4, instr, b"data").ok(),
        Form::DedicatedV6 => ep(s6).packet_to(d6, instr, b"data").ok(),
        Form::Ipv4Option => ep(s4).piggyback(&udp(s4, d4, ttl, 12), instr).ok(),
        Form::Ipv6HopByHop => ep(s6).piggyback(&udp(s6, d6, ttl, 12), instr).ok(),
    }
}

/// etherparse's verdict: parses, IPv4 checksum right by its own sum, lengths agree.
fn well_formed(p: &[u8]) -> Result<(), String> {
    let sliced = etherparse::SlicedPacket::from_ip(p).map_err(|e| format!("{e}"))?;
    match sliced.net {
        Some(etherparse::NetSlice::Ipv4(v4)) => {
            let h = v4.header().to_header();
            if h.header_checksum != h.calc_header_checksum() {
                return Err(format!(
                    "checksum {:#06x}, should be {:#06x}",
                    h.header_checksum,
                    h.calc_header_checksum()
                ));
            }
            if usize::from(h.total_len) != p.len() {
                return Err(format!(
                    "total length {} for {} bytes",
                    h.total_len,
                    p.len()
                ));
            }
        }
        Some(etherparse::NetSlice::Ipv6(v6)) => {
            let len = usize::from(v6.header().payload_length()) + 40;
            if len != p.len() {
                return Err(format!("IPv6 length {len} for {} bytes", p.len()));
            }
        }
        _ => return Err("not IP".into()),
    }
    Ok(())
}

fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        Just(Form::DedicatedV4),
        Just(Form::DedicatedV6),
        Just(Form::Ipv4Option),
        Just(Form::Ipv6HopByHop),
    ]
}

fn loc() -> impl Strategy<Value = Loc> {
    (1u8..8).prop_map(|bits| {
        let mut l = Loc::NONE;
        for (bit, site) in [(1, Loc::INPUT), (2, Loc::CENTRAL), (4, Loc::OUTPUT)] {
            if bits & bit != 0 {
                l = l | site;
            }
        }
        l
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn routers_leave_every_form_well_formed(
        seed in any::<u64>(),
        history in proptest::collection::vec(instruction(), 0..12),
        instr in instruction(),
        form in form(),
        loc in loc(),
        ttl in 1u8..=255,
    ) {
        let mut n = node(seed);
        // Earlier packets leave state behind (so COLLECT may complete, GET find a value, …).
        for (i, h) in history.iter().enumerate() {
            if let Some(mut p) = packet(form, h, Loc::ALL, 64) {
                let t = Instant::from_ticks(i as u64);
                n.ingress(t, 0, &mut p);
                n.egress(t, 1, &mut p);
            }
        }
        let Some(original) = packet(form, &instr, loc, ttl) else {
            // Only RCHLD/RCOLLECT with wide IDmaps do not fit an IPv4 option.
            prop_assume!(false);
            unreachable!()
        };
        prop_assert!(well_formed(&original).is_ok(), "builder: {:?}", well_formed(&original));
        let mut p = original.clone();
        let left = decrement_ttl(&mut p).unwrap();
        let t = Instant::from_ticks(100);
        let forwarded = left > 0 && n.ingress(t, 0, &mut p) && n.egress(t, 1, &mut p);
        prop_assert_eq!(p.len(), original.len(), "processing never changes the length");
        if let Err(e) = well_formed(&p) {
            return Err(TestCaseError::fail(format!("{form:?} {instr:?} forwarded={forwarded}: {e}")));
        }
        prop_assert!(locate(&p).unwrap().is_some());
    }
}

/// Issue 24's case in literal bytes: two children COUNTed under tag 2 at the central
/// context, the first COLLECT (val 5) held there; the second (val 7) completes, rewrites
/// its value operand to 5 + 7 = 12 inside the IPv4 header, and the header checksum follows
/// by RFC 1624 over exactly the changed bytes (with the TTL: 0xd54e → 0xd649).
#[test]
fn collect_in_the_ipv4_option_literal() {
    let mut n = node(1);
    let ep = Endpoint::new(7, IpAddr::from([10, 1, 0, 1])).with_loc(Loc::CENTRAL);
    let (s, d) = (IpAddr::from([10, 1, 0, 1]), IpAddr::from([10, 2, 0, 1]));
    let t = Instant::from_ticks(0);
    for _ in 0..2 {
        let mut count = ep
            .piggyback(
                &udp(s, d, 64, 4),
                &Instruction::Count {
                    counter: Tag(2),
                    thresh: 9,
                },
            )
            .unwrap();
        assert!(n.ingress(t, 0, &mut count));
    }
    let collect = |v| Instruction::Collect {
        value: Tag(1),
        val: Value(v),
        counter: Tag(2),
        op: CombineOp::Add,
    };
    let mut first = ep.piggyback(&udp(s, d, 64, 4), &collect(5)).unwrap();
    assert!(
        !n.ingress(t, 0, &mut first),
        "the first child's value is held"
    );
    let input = ep.piggyback(&udp(s, d, 64, 4), &collect(7)).unwrap();
    assert_eq!(input, INPUT);
    let mut p = input.clone();
    decrement_ttl(&mut p).unwrap();
    assert!(n.ingress(t, 0, &mut p));
    assert!(n.egress(t, 1, &mut p));
    assert_eq!(p, OUTPUT, "{p:?}");
    well_formed(&p).unwrap();
}

/// 10.1.0.1 → 10.2.0.1, UDP, TTL 64, DF: IHL 15 (Router Alert; option 158 of 35 bytes
/// carrying the ESP header — Loc central, CID 7 — and COLLECT V = 1, val = 7, C = 2,
/// op add), 4 bytes of payload.
const INPUT: [u8; 72] = [
    0x4f, 0x00, 0x00, 0x48, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xd5, 0x4e, 0x0a, 0x01, 0x00, 0x01,
    0x0a, 0x02, 0x00, 0x01, 0x94, 0x04, 0x00, 0x00, 0x9e, 0x23, 0x12, 0x00, 0x03, 0x19, 0x00, 0x00,
    0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// The same after one ESP router: TTL 63, val 12, header checksum 0xd649 (computed by hand from scratch, not by our code).
const OUTPUT: [u8; 72] = [
    0x4f, 0x00, 0x00, 0x48, 0x00, 0x00, 0x40, 0x00, 0x3f, 0x11, 0xd6, 0x49, 0x0a, 0x01, 0x00, 0x01,
    0x0a, 0x02, 0x00, 0x01, 0x94, 0x04, 0x00, 0x00, 0x9e, 0x23, 0x12, 0x00, 0x03, 0x19, 0x00, 0x00,
    0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];
