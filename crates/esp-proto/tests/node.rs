//! A router's contexts and the end-system API on whole IP packets: every IP form, Loc
//! selecting contexts, CID sharding, precise error reports, and the reflector.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use esp_proto::endpoint::{Endpoint, HostAction, host_receive};
use esp_proto::exec::{Abort, Processed, Verdict};
use esp_proto::instr::{CombineOp, Instruction, Param};
use esp_proto::node::{EspNode, NodeConfig, Outcome, Site};
use esp_proto::wire::{ErrCode, Loc, addresses, locate};
use ess::{EssConfig, HashKey, Instant, Tag, Value};

fn node(shards: u32) -> EspNode {
    EspNode::new(NodeConfig {
        ifaces: 3,
        store: EssConfig::new(8, 10_000, 1, HashKey::from_seed(1)).unwrap(),
        shards,
        node_id: 0x0A00_0063,
        idmap_key: HashKey::from_seed(2),
        timestamp_shift: 0,
    })
}

const T: Instant = Instant::from_ticks(5);
const V4A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const V4B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
const V6A: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1));
const V6B: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2));

fn count(tag: u64) -> Instruction {
    Instruction::Count {
        counter: Tag(tag),
        thresh: 1,
    }
}

/// Runs `packet` through the node's ingress and egress on port 1; returns whether it
/// survived.
fn route(n: &mut EspNode, packet: &mut [u8]) -> bool {
    n.ingress(T, 0, packet) && n.egress(T, 1, packet)
}

/// A UDP packet from 10.0.0.1 to 10.0.0.2 (an application's packet to piggyback on).
fn udp4(payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(1, 2)
        .write(&mut p, payload)
        .unwrap();
    p
}

#[test]
fn every_ip_form_is_processed() {
    let udp4 = udp4(b"payload");
    let udp6 = {
        let mut p = Vec::new();
        let (IpAddr::V6(a), IpAddr::V6(b)) = (V6A, V6B) else {
            unreachable!()
        };
        etherparse::PacketBuilder::ipv6(a.octets(), b.octets(), 64)
            .udp(1, 2)
            .write(&mut p, b"payload")
            .unwrap();
        p
    };
    let ep4 = Endpoint::new(1, V4A).with_loc(Loc::OUTPUT);
    let ep6 = Endpoint::new(1, V6A).with_loc(Loc::OUTPUT);
    let packets = [
        ep4.packet_to(V4B, &count(1), &[]).unwrap(),
        ep6.packet_to(V6B, &count(2), b"data").unwrap(),
        ep4.piggyback(&udp4, &count(3)).unwrap(),
        ep6.piggyback(&udp6, &count(4)).unwrap(),
    ];
    let mut n = node(1);
    for template in &packets {
        // COUNT with threshold 1: the first copy passes, the second is dropped.
        let mut first = template.clone();
        assert!(route(&mut n, &mut first));
        let mut second = template.clone();
        assert!(!route(&mut n, &mut second));
        // Only the instruction could have changed, and COUNT leaves its operands alone.
        assert_eq!(first, *template);
    }
    assert_eq!(n.stats().executed, 8);
    assert_eq!(n.stats().dropped, 4);
    // Input and central contexts were skipped (Loc = output only).
    assert_eq!(n.stats().skipped, 16);
    // A plain UDP packet is not ESP's business.
    let mut plain = udp4.clone();
    assert_eq!(n.process_at(T, Site::Input(0), &mut plain), Outcome::NotEsp);
    assert_eq!(plain, udp4);
}

#[test]
fn loc_selects_contexts_and_each_context_has_its_own_state() {
    let mut n = node(1);
    let ep = Endpoint::new(9, V4A).with_loc(Loc::INPUT | Loc::CENTRAL);
    let p = ep.packet_to(V4B, &count(7), &[]).unwrap();
    // Input port 0 and the central context each count once: both pass the first packet.
    let mut a = p.clone();
    assert!(n.ingress(T, 0, &mut a));
    // Arriving on port 2, its input context is fresh, but the central one has counted.
    let mut b = p.clone();
    assert_eq!(
        n.process_at(T, Site::Input(2), &mut b),
        Outcome::Ran(Processed::PASS)
    );
    assert!(!n.process_at(T, Site::Central, &mut b).forwards());
    // Output contexts are not selected.
    assert_eq!(n.process_at(T, Site::Output(1), &mut b), Outcome::Skipped);
    // Ports that do not exist are skipped, not a panic.
    let ep_out = Endpoint::new(9, V4A).with_loc(Loc::OUTPUT);
    let mut c = ep_out.packet_to(V4B, &count(8), &[]).unwrap();
    assert_eq!(n.process_at(T, Site::Output(7), &mut c), Outcome::Skipped);
}

#[test]
fn one_computation_always_meets_the_same_shard() {
    // Eight shards per context: COUNT from one CID must see its own earlier count. (Tags
    // are the computation's names; the CID only picks the store.)
    let mut n = node(8);
    for cid in 0..64u32 {
        let ep = Endpoint::new(cid, V4A).with_loc(Loc::CENTRAL);
        let p = ep
            .packet_to(V4B, &count(0xAB00 + u64::from(cid)), &[])
            .unwrap();
        let mut first = p.clone();
        assert!(n.process_at(T, Site::Central, &mut first).forwards());
        let mut second = p.clone();
        assert!(
            !n.process_at(T, Site::Central, &mut second).forwards(),
            "cid {cid}"
        );
    }
}

#[test]
fn an_abort_reaches_the_end_system_as_a_precise_error() {
    let mut n = node(1);
    let ep = Endpoint::new(3, V4A).with_loc(Loc::OUTPUT);
    let collect = Instruction::Collect {
        value: Tag(1),
        val: Value(5),
        counter: Tag(2),
        op: CombineOp::Add,
    };
    let mut p = ep.packet_to(V4B, &collect, &[]).unwrap();
    assert_eq!(
        n.process_at(T, Site::Output(0), &mut p),
        Outcome::Ran(Processed {
            verdict: Verdict::Forward,
            abort: Some(Abort::MissingState)
        })
    );
    // Later routers leave it alone.
    let before = p.clone();
    assert_eq!(n.process_at(T, Site::Output(1), &mut p), Outcome::Skipped);
    assert_eq!(p, before);
    let got = Endpoint::new(3, V4B).receive(&p).unwrap();
    let err = got.error().expect("Err is set");
    assert_eq!(err.code, ErrCode::MissingState);
    assert_eq!(err.instr, collect);
    assert!(got.loc.is_empty());
    assert_eq!(
        err.to_string(),
        "COLLECT aborted: state it needed was missing at a router (never set up or expired)"
    );
    // Another computation's endpoint refuses it.
    assert!(Endpoint::new(4, V4B).receive(&p).is_err());
}

#[test]
fn reflected_packets_are_processed_only_on_the_way_back() {
    let mut n = node(1);
    n.set_iface_params(1, 0, 42);
    // A asks for the largest queue on the path: RB set, so routers toward B skip it.
    let ep = Endpoint::new(5, V4A)
        .with_loc(Loc::OUTPUT)
        .with_reflect(true);
    let ask = Instruction::Param {
        param: Param::QueueLen,
        op: CombineOp::Max,
        value: Value(0),
    };
    let mut p = ep.packet_to(V4B, &ask, &[]).unwrap();
    assert_eq!(n.process_at(T, Site::Output(1), &mut p), Outcome::Skipped);
    // B's ESP layer reflects it: addresses swapped, RB cleared.
    assert_eq!(host_receive(&mut p).unwrap(), HostAction::Reflect);
    assert_eq!(addresses(&p).unwrap(), (V4B, V4A));
    // On the way back it is processed.
    assert!(n.process_at(T, Site::Output(1), &mut p).forwards());
    assert_eq!(host_receive(&mut p).unwrap(), HostAction::Deliver);
    let got = Endpoint::new(5, V4A).receive(&p).unwrap();
    assert_eq!(
        got.instr,
        Instruction::Param {
            param: Param::QueueLen,
            op: CombineOp::Max,
            value: Value(42)
        }
    );
    assert!(locate(&p).unwrap().is_some());
}

#[test]
fn large_instructions_are_refused_as_ipv4_options() {
    let ep = Endpoint::new(1, V4A);
    let udp4 = udp4(b"x");
    let rchld = Instruction::Rchld {
        children: Tag(1),
        counter: Tag(2),
        robust: esp_proto::instr::Robust {
            thresh: 1,
            k: 3,
            idmap: esp_proto::idmap::IdMap::from_words(&[1]).unwrap(),
        },
    };
    assert!(!rchld.fits_ipv4_option());
    let err = ep.piggyback(&udp4, &rchld).unwrap_err();
    assert!(err.to_string().contains("option"), "{err}");
    // Everything that claims to fit does.
    let cswap = Instruction::Cswap {
        tag: Tag(1),
        expect: Value(2),
        new: Value(3),
    };
    assert!(cswap.fits_ipv4_option());
    assert!(ep.piggyback(&udp4, &cswap).is_ok());
}

#[test]
fn sites_switched_off_skip_what_their_loc_selects() {
    use esp_proto::endpoint::Endpoint;
    use esp_proto::instr::Instruction;
    use esp_proto::node::{EspNode, NodeConfig};
    use esp_proto::wire::Loc;
    use ess::{EssConfig, HashKey, Instant, Tag};
    let mut n = EspNode::new(NodeConfig {
        ifaces: 2,
        store: EssConfig::new(4, 1_000, 1, HashKey::from_seed(1)).unwrap(),
        shards: 1,
        node_id: 1,
        idmap_key: HashKey::from_seed(2),
        timestamp_shift: 0,
    });
    n.set_sites(Loc::CENTRAL);
    assert_eq!(n.sites(), Loc::CENTRAL);
    let ep = Endpoint::new(1, [10, 0, 0, 1].into()).with_loc(Loc::ALL);
    let mut p = ep
        .packet_to(
            [10, 0, 0, 2].into(),
            &Instruction::Count {
                counter: Tag(1),
                thresh: 9,
            },
            &[],
        )
        .unwrap();
    let t = Instant::from_ticks(0);
    assert!(n.ingress(t, 0, &mut p) && n.egress(t, 1, &mut p));
    let s = n.stats();
    // Only the central context ran it; input and output were skipped.
    assert_eq!((s.executed, s.skipped), (1, 2));
}
