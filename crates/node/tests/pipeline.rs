//! Each stage of the pipeline with literal byte vectors, one node at a time.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::IpAddr;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use ess::{HashKey, Tag};
use fastpath::threaded::Label;
use waist_ip::icmp::read;
use waist_ip::{IpHeader, emit_header};
use waist_node::frame::emit_label_frame;
use waist_node::routes::prefix;
use waist_node::{Config, Delivery, EspConfig, IfaceConfig, InPlace, Instant, MAX_FRAME, Node};

const T0: Instant = Instant::ZERO;

/// 10.1.0.1 → 10.2.0.7, UDP, TTL 64, DF, 8 bytes of data.
const UDP_IN: [u8; 28] = [
    0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0xc7, 10, 1, 0, 1, 10, 2, 0,
    7, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0,
];
/// The same after one hop: TTL 63, checksum 0x27c7.
const UDP_OUT: [u8; 28] = [
    0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x00, 0x3f, 0x11, 0x27, 0xc7, 10, 1, 0, 1, 10, 2, 0,
    7, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0,
];

fn p(a: [u8; 4], l: u8) -> fastpath::lpm::IpPrefix {
    prefix(a.into(), l).unwrap()
}

/// A node at 10.0.0.254 with interfaces 0 (toward 10.1/16) and 1 (toward 10.2/16).
fn router(config: impl FnOnce(&mut Config)) -> Node {
    let mut c = Config::router([10, 0, 0, 254].into(), 2);
    config(&mut c);
    let mut n = Node::new(c, T0).unwrap();
    n.add_route(p([10, 1, 0, 0], 16), 0);
    n.add_route(p([10, 2, 0, 0], 16), 1);
    n
}

fn drain(n: &mut Node) -> Vec<(usize, Vec<u8>)> {
    let mut buf = vec![0u8; MAX_FRAME];
    let mut v = Vec::new();
    while let Some(t) = n.poll_transmit(&mut buf) {
        v.push((t.iface, buf[..t.len].to_vec()));
    }
    v
}

#[test]
fn plain_ipv4_forwarding_in_place() {
    let mut n = router(|_| ());
    let mut f = UDP_IN;
    let out = n.handle_packet(T0, 0, &mut f);
    assert_eq!(
        out,
        Some(InPlace {
            iface: 1,
            range: 0..28
        })
    );
    assert_eq!(f, UDP_OUT);
    assert!(drain(&mut n).is_empty());
    let s = n.stats();
    assert_eq!((s.received, s.forwarded, s.copies), (1, 1, 1));
    assert!(s.balanced());
}

#[test]
fn link_padding_is_trimmed() {
    let mut n = router(|_| ());
    let mut f = [UDP_IN.as_slice(), &[0xAA; 6]].concat();
    let out = n.handle_packet(T0, 0, &mut f).unwrap();
    assert_eq!(out.range, 0..28);
    assert_eq!(f[..28], UDP_OUT);
}

#[test]
fn bad_checksum_version_and_length_are_counted_drops() {
    let mut n = router(|_| ());
    let mut bad = UDP_IN;
    bad[11] ^= 1;
    assert_eq!(n.handle_packet(T0, 0, &mut bad), None);
    assert_eq!(n.handle_packet(T0, 0, &mut UDP_IN[..27].to_vec()), None);
    assert_eq!(n.handle_packet(T0, 0, &mut [0x55, 0, 0, 0]), None);
    assert_eq!(n.handle_packet(T0, 9, &mut UDP_IN.clone()), None);
    assert_eq!(n.handle_packet(T0, 0, &mut []), None);
    let s = n.stats();
    assert_eq!(
        (
            s.dropped.malformed,
            s.dropped.bad_frame,
            s.dropped.bad_iface
        ),
        (2, 2, 1)
    );
    assert_eq!(s.forwarded, 0);
    assert!(s.balanced());
    assert!(drain(&mut n).is_empty(), "no ICMP about malformed packets");
}

#[test]
fn ttl_one_expires_with_icmp_time_exceeded() {
    let mut n = router(|_| ());
    let mut f = UDP_IN;
    f[8] = 1;
    f[10..12].copy_from_slice(&[0x65, 0xc7]);
    assert_eq!(n.handle_packet(T0, 0, &mut f), None);
    let out = drain(&mut n);
    assert_eq!(out.len(), 1);
    let (iface, icmp) = &out[0];
    assert_eq!(*iface, 0);
    let (ip, m) = read(icmp).unwrap();
    assert_eq!(
        (ip.src, ip.dst),
        (IpAddr::from([10, 0, 0, 254]), IpAddr::from([10, 1, 0, 1]))
    );
    assert_eq!((m.kind, m.code), (11, 0));
    // The quoted packet is the one that arrived, TTL already at 0.
    assert_eq!(&m.body[..8], &[0x45, 0, 0, 0x1c, 0, 0, 0x40, 0]);
    assert_eq!(m.body[8], 0);
    let s = n.stats();
    assert_eq!((s.dropped.ttl_expired, s.icmp_sent), (1, 1));
    assert!(s.balanced());
}

#[test]
fn no_route_answers_net_unreachable_and_icmp_off_stays_silent() {
    for icmp in [true, false] {
        let mut n = router(|c| c.icmp = icmp);
        let mut f = UDP_IN;
        waist_ip::rewrite::set_address(&mut f, true, [10, 3, 0, 1].into()).unwrap();
        assert_eq!(n.handle_packet(T0, 0, &mut f), None);
        let out = drain(&mut n);
        assert_eq!(out.len(), usize::from(icmp));
        if icmp {
            let (_, m) = read(&out[0].1).unwrap();
            assert_eq!((m.kind, m.code), (3, 0));
        }
        assert_eq!(n.stats().dropped.no_route, 1);
    }
}

#[test]
fn echo_request_to_the_node_is_answered() {
    let mut n = router(|_| ());
    let mut buf = [0u8; 64];
    let len = waist_ip::icmp::emit_echo_request(
        [10, 1, 0, 1].into(),
        [10, 0, 0, 254].into(),
        0x1234,
        1,
        b"abc",
        &mut buf,
    )
    .unwrap();
    assert_eq!(n.handle_packet(T0, 0, &mut buf[..len]), None);
    let out = drain(&mut n);
    assert_eq!(out.len(), 1);
    let (ip, m) = read(&out[0].1).unwrap();
    assert_eq!(
        (out[0].0, ip.dst, m.kind, m.rest, m.body),
        (
            0,
            IpAddr::from([10, 1, 0, 1]),
            0,
            [0x12, 0x34, 0, 1],
            &b"abc"[..]
        )
    );
    assert_eq!(n.stats().delivered, 1);
}

#[test]
fn other_packets_for_the_node_are_delivered() {
    let mut n = router(|_| ());
    let mut f = UDP_IN;
    waist_ip::rewrite::set_address(&mut f, true, [10, 0, 0, 254].into()).unwrap();
    assert_eq!(n.handle_packet(T0, 0, &mut f), None);
    match n.poll_deliver() {
        Some(Delivery::Packet { iface: 0, packet }) => assert_eq!(packet, f),
        other => panic!("{other:?}"),
    }
    assert!(n.poll_deliver().is_none());
}

#[test]
fn too_big_with_df_answers_frag_needed_and_without_df_fragments() {
    let mut n = router(|c| c.ifaces[1].mtu = 576);
    let mut big = vec![0u8; 1000];
    emit_header(
        &mut big,
        [10, 1, 0, 1].into(),
        [10, 2, 0, 7].into(),
        17,
        64,
        980,
    )
    .unwrap();
    let mut df = big.clone();
    assert_eq!(n.handle_packet(T0, 0, &mut df), None);
    let out = drain(&mut n);
    let (_, m) = read(&out[0].1).unwrap();
    assert_eq!((m.kind, m.code, m.rest), (3, 4, [0, 0, 0x02, 0x40]));
    // Clear DF: fragments instead.
    waist_ip::rewrite::rewrite(&mut big, 6, &[0, 0]).unwrap();
    assert_eq!(n.handle_packet(T0, 0, &mut big), None);
    let frags = drain(&mut n);
    assert_eq!(frags.len(), 2);
    for (i, f) in &frags {
        assert_eq!(*i, 1);
        assert!(f.len() <= 576);
        let (h, _) = etherparse::Ipv4Header::from_slice(f).unwrap();
        assert_eq!(
            (h.header_checksum, h.time_to_live),
            (h.calc_header_checksum(), 63)
        );
    }
    let s = n.stats();
    assert_eq!((s.dropped.too_big, s.fragments, s.forwarded), (1, 2, 1));
    assert!(s.balanced());
}

#[test]
fn ipv6_forwarding_hop_limit_and_packet_too_big() {
    let me: IpAddr = [0xfd00, 0, 0, 0, 0, 0, 0, 0xfe].into();
    let mut c = Config::router(me, 2);
    c.ifaces[1].mtu = 1280;
    let mut n = Node::new(c, T0).unwrap();
    n.add_route(prefix([0xfd00, 1, 0, 0, 0, 0, 0, 0].into(), 32).unwrap(), 0);
    n.add_route(prefix([0xfd00, 2, 0, 0, 0, 0, 0, 0].into(), 32).unwrap(), 1);
    let (s, d): (IpAddr, IpAddr) = (
        [0xfd00, 1, 0, 0, 0, 0, 0, 1].into(),
        [0xfd00, 2, 0, 0, 0, 0, 0, 7].into(),
    );
    let mut f = vec![0u8; 48];
    emit_header(&mut f, s, d, 17, 2, 8).unwrap();
    let out = n.handle_packet(T0, 0, &mut f).unwrap();
    assert_eq!((out.iface, f[7]), (1, 1));
    let mut big = vec![0u8; 1400];
    emit_header(&mut big, s, d, 17, 9, 1360).unwrap();
    assert_eq!(n.handle_packet(T0, 0, &mut big), None);
    let icmp = drain(&mut n);
    let (ip, m) = read(&icmp[0].1).unwrap();
    assert_eq!(
        (ip.src, ip.dst, m.kind, m.rest),
        (me, s, 2, [0, 0, 0x05, 0x00])
    );
    assert_eq!(icmp[0].1.len(), 1280);
}

fn esp_router(count_thresh_node: bool) -> Node {
    router(|c| {
        if count_thresh_node {
            c.esp = Some(EspConfig::new(0x0A00_00FE, 8, HashKey::from_seed(7)).unwrap());
        }
    })
}

#[test]
fn esp_count_runs_once_per_packet_and_drops_past_its_threshold() {
    let ep = Endpoint::new(42, [10, 1, 0, 1].into()).with_dest([10, 2, 0, 7].into());
    let count = Instruction::Count {
        counter: Tag(0xC0FFEE),
        thresh: 2,
    };
    let pkt = ep.packet(&count).unwrap();
    let mut esp = esp_router(true);
    let mut plain = esp_router(false);
    let mut passed = 0;
    for _ in 0..4 {
        let mut f = pkt.clone();
        passed += usize::from(esp.handle_packet(T0, 0, &mut f).is_some());
        // A node without ESP forwards every one untouched but for the TTL.
        let mut g = pkt.clone();
        let out = plain.handle_packet(T0, 0, &mut g).unwrap();
        assert_eq!(g[20..], pkt[20..]);
        assert_eq!(out.iface, 1);
    }
    assert_eq!(passed, 2);
    let s = esp.stats();
    // COUNT runs at the input port, the central context and the output port (Loc = all):
    // three executions per packet that reaches egress, two for those dropped centrally.
    assert!(s.esp_executed >= 4 * 2, "{s:?}");
    assert_eq!((s.dropped.esp, s.forwarded), (2, 2));
    assert_eq!(plain.stats().esp_executed, 0);
}

#[test]
fn esp_reflection_at_the_node() {
    let ep = Endpoint::new(9, [10, 1, 0, 1].into())
        .with_dest([10, 0, 0, 254].into())
        .with_reflect(true);
    let mut f = ep
        .packet(&Instruction::Count {
            counter: Tag(1),
            thresh: 9,
        })
        .unwrap();
    let mut n = router(|_| ());
    assert_eq!(n.handle_packet(T0, 0, &mut f), None);
    let out = drain(&mut n);
    let h = IpHeader::parse(&out[0].1).unwrap();
    assert_eq!((out[0].0, h.dst), (0, IpAddr::from([10, 1, 0, 1])));
}

#[test]
fn threaded_label_is_rewritten_in_place_and_falls_back_to_ip() {
    // Two nodes joined by DV on interface 1 of A and 0 of B; B originates 10.2/16.
    let mut a = dv_node([10, 0, 0, 1]);
    let mut b = dv_node([10, 0, 0, 2]);
    assert!(b.originate(T0, p([10, 2, 0, 0], 16)));
    exchange(&mut a, &mut b, 1, 0, 0);
    let index = a.dv().unwrap().index_of_dest(p([10, 2, 0, 0], 16)).unwrap();
    let mut f = vec![0u8; 5 + 28];
    emit_label_frame(Label::threaded(index, 20), &UDP_IN, &mut f).unwrap();
    let out = a.handle_packet(T0, 0, &mut f).unwrap();
    assert_eq!((out.iface, out.range.clone()), (1, 0..33));
    let next = b.dv().unwrap().index_of_dest(p([10, 2, 0, 0], 16)).unwrap();
    assert_eq!(Label::parse(&f[1..5]).unwrap(), Label::threaded(next, 19));
    assert_eq!(f[5..], UDP_IN, "the label path leaves the IP header alone");
    assert_eq!(a.stats().label_forwarded, 1);
    // At B the label says "here": the packet goes on by its IP header (static route).
    b.add_route(p([10, 2, 0, 0], 16), 1);
    let out = b.handle_packet(T0, 0, &mut f).unwrap();
    assert_eq!((out.iface, &f[out.range]), (1, &UDP_OUT[..]));
    // A bad index falls back to the IP header too.
    let mut g = vec![0u8; 33];
    emit_label_frame(Label::threaded(99_999, 20), &UDP_IN, &mut g).unwrap();
    let out = a.handle_packet(T0, 0, &mut g).unwrap();
    assert_eq!((out.iface, &g[out.range]), (1, &UDP_OUT[..]));
    assert_eq!(a.stats().label_fallback, 1);
    // An exhausted hop limit is a counted drop.
    let mut h = vec![0u8; 33];
    emit_label_frame(Label::threaded(index, 0), &UDP_IN, &mut h).unwrap();
    assert_eq!(a.handle_packet(T0, 0, &mut h), None);
    assert_eq!(a.stats().dropped.label_hop_limit, 1);
    assert!(a.stats().balanced() && b.stats().balanced());
}

/// A router whose distance-vector id is its address (the id names a /32 destination).
fn dv_node(addr: [u8; 4]) -> Node {
    let mut c = Config::router(addr.into(), 2);
    c.dv = Some(fastpath::dv::Config::new(u32::from_be_bytes(addr)));
    c.ifaces[0] = IfaceConfig::new(1500).with_dv(1);
    c.ifaces[1] = IfaceConfig::new(1500).with_dv(1);
    Node::new(c, T0).unwrap()
}

/// Runs the routing exchange between A's interface `ia` and B's `ib` for 40 s from `from_ms`.
fn exchange(a: &mut Node, b: &mut Node, ia: usize, ib: usize, from_ms: u64) {
    for round in 0..20u64 {
        let now = Instant::from_millis(from_ms + round * 2_000);
        a.handle_timeout(now);
        b.handle_timeout(now);
        for (i, mut f) in drain(a) {
            if i == ia {
                b.handle_packet(now, ib, &mut f);
            }
        }
        for (i, mut f) in drain(b) {
            if i == ib {
                a.handle_packet(now, ia, &mut f);
            }
        }
    }
}

#[test]
fn distance_vector_learns_prefixes_and_withdraws_them_on_link_loss() {
    let mut a = dv_node([10, 0, 0, 1]);
    let mut b = dv_node([10, 0, 0, 2]);
    b.originate(T0, p([10, 2, 0, 0], 16));
    b.originate(
        T0,
        prefix([0xfd00, 2, 0, 0, 0, 0, 0, 0].into(), 32).unwrap(),
    );
    exchange(&mut a, &mut b, 1, 0, 0);
    assert_eq!(a.routes().route([10, 2, 3, 4].into()), Some(1));
    assert_eq!(
        a.routes().route([0xfd00, 2, 0, 0, 0, 0, 0, 9].into()),
        Some(1)
    );
    assert_eq!(
        a.routes().route([10, 0, 0, 2].into()),
        Some(1),
        "B's router id as a /32"
    );
    assert!(a.stats().routing > 0 && a.stats().balanced());
    a.set_link(Instant::from_millis(45_000), 1, false);
    assert_eq!(a.routes().route([10, 2, 3, 4].into()), None);
    // The link comes back: A asks B for its table and re-learns the routes.
    a.set_link(Instant::from_millis(61_000), 1, true);
    exchange(&mut a, &mut b, 1, 0, 61_000);
    assert_eq!(a.routes().route([10, 2, 3, 4].into()), Some(1));
    assert_eq!(
        a.routes().route([0xfd00, 2, 0, 0, 0, 0, 0, 9].into()),
        Some(1)
    );
    // A static route outlives it, and beats a learned one.
    a.add_route(p([10, 2, 0, 0], 16), 0);
    assert_eq!(a.routes().route([10, 2, 3, 4].into()), Some(0));
}

#[test]
fn source_hash_cache_hits_after_the_first_packet() {
    let mut n = router(|c| c.route_cache_log2 = Some(8));
    let opt = fastpath::wire::SourceHashOption {
        hash: fastpath::flow::SourceHash::new(0xBEEF),
        flow_id: None,
    };
    let pkt = fastpath::wire::insert_ipv4_option(&UDP_IN, &opt).unwrap();
    for _ in 0..3 {
        let mut f = pkt.clone();
        assert_eq!(n.handle_packet(T0, 0, &mut f).map(|o| o.iface), Some(1));
        assert!(IpHeader::parse(&f).is_ok());
    }
    let s = n.stats();
    assert_eq!((s.cache_misses, s.cache_hits), (1, 2));
    // Packets without a source hash go straight to the LPM.
    n.handle_packet(T0, 0, &mut UDP_IN.clone());
    assert_eq!(n.stats().cache_misses, 1);
}

#[test]
fn multicast_copies_never_go_back_the_input_interface() {
    let mut c = Config::router([10, 0, 0, 254].into(), 4);
    c.esp = Some(EspConfig::new(1, 8, HashKey::from_seed(3)).unwrap());
    let mut n = Node::new(c, T0).unwrap();
    n.add_group([224, 1, 1, 1].into(), &[0, 1, 2, 3]);
    let mut f = UDP_IN;
    waist_ip::rewrite::set_address(&mut f, true, [224, 1, 1, 1].into()).unwrap();
    assert_eq!(n.handle_packet(T0, 2, &mut f), None);
    let out = drain(&mut n);
    assert_eq!(out.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1, 3]);
    for (_, c) in &out {
        assert_eq!(IpHeader::parse(c).unwrap().ttl, 63);
    }
    let s = n.stats();
    assert_eq!((s.forwarded, s.copies), (1, 3));
}

#[test]
fn snap_ping_runs_at_the_node_and_is_routed() {
    let mut c = Config::router([10, 0, 0, 254].into(), 2);
    c.snap = true;
    let mut n = Node::new(c, T0).unwrap();
    n.add_route(p([10, 1, 0, 0], 16), 0);
    n.add_route(p([10, 2, 0, 0], 16), 1);
    // The paper's Fig. 1 ping, exactly.
    let ping = snap_vm::paper::ping([10, 1, 0, 1], [10, 2, 0, 7], 7, b"hi", 8);
    let mut f = snap_vm::ip::encapsulate(&ping.to_bytes().unwrap()).unwrap();
    // It only routes from here: forwarded in the frame it came in (the transit fast path).
    let sent = n.handle_packet(T0, 0, &mut f).expect("forwarded in place");
    assert!(drain(&mut n).is_empty());
    let (iface, ip) = (&sent.iface, &f[sent.range.clone()]);
    let h = IpHeader::parse(ip).unwrap();
    assert_eq!(
        (*iface, h.protocol, h.ttl, h.dst),
        (1, 254, 64, IpAddr::from([10, 2, 0, 7]))
    );
    let snap = snap_vm::wire::Packet::new_checked(snap_vm::ip::decapsulate(ip).unwrap()).unwrap();
    assert_eq!(snap.rb(), 7, "one unit of resource bound spent here");
    let s = n.stats();
    assert_eq!((s.snap_executed, s.snap_sent, s.forwarded), (1, 1, 1));
    // With SNAP off the same packet is plain IP: TTL decremented, payload untouched.
    let mut plain = router(|_| ());
    let mut g = snap_vm::ip::encapsulate(&ping.to_bytes().unwrap()).unwrap();
    let before = g.clone();
    let out = plain.handle_packet(T0, 0, &mut g).unwrap();
    assert_eq!((out.iface, g[8], &g[20..]), (1, 63, &before[20..]));
    assert_eq!(plain.stats().snap_executed, 0);
}

#[test]
fn bad_routing_frames_are_counted() {
    let mut a = dv_node([10, 0, 0, 1]);
    assert_eq!(a.handle_packet(T0, 0, &mut [0xF2, 1, 2, 3]), None);
    let mut plain = router(|_| ());
    assert_eq!(
        plain.handle_packet(T0, 0, &mut [0xF2, 1, 1, 0, 0, 0, 0, 0, 9]),
        None
    );
    assert_eq!(
        (a.stats().dropped.routing, plain.stats().dropped.routing),
        (1, 1)
    );
    assert!(a.stats().balanced() && plain.stats().balanced());
}

#[test]
fn config_errors_name_the_problem() {
    let mut c = Config::router([10, 0, 0, 1].into(), 2);
    c.ifaces[1].mtu = 10;
    assert_eq!(
        Node::new(c.clone(), T0).err(),
        Some(waist_node::ConfigError::Mtu { iface: 1, mtu: 10 })
    );
    c.ifaces[1].mtu = 1500;
    c.ifaces[0].dv_cost = Some(1);
    assert_eq!(
        Node::new(c.clone(), T0).err(),
        Some(waist_node::ConfigError::NoRouting { iface: 0 })
    );
    // An IPv6 address names a node to SNAP as well as an IPv4 one; no address does not.
    let mut v6 = Config::router([0xfd00, 0, 0, 0, 0, 0, 0, 1].into(), 1);
    v6.snap = true;
    assert!(Node::new(v6.clone(), T0).is_ok());
    v6.addrs.clear();
    assert_eq!(
        Node::new(v6, T0).err(),
        Some(waist_node::ConfigError::SnapNeedsAddress)
    );
}

#[test]
fn esp_in_the_ipv4_option_leaves_a_valid_header_checksum() {
    use esp_proto::instr::{CombineOp, Param};
    use ess::Value;
    let ep = Endpoint::new(5, [10, 1, 0, 1].into());
    let instrs = [
        Instruction::Collect {
            value: Tag(1),
            val: Value(9),
            counter: Tag(2),
            op: CombineOp::Add,
        },
        Instruction::Param {
            param: Param::NodeId,
            op: CombineOp::Max,
            value: Value(3),
        },
        Instruction::Count {
            counter: Tag(3),
            thresh: 5,
        },
    ];
    let mut n = esp_router(true);
    for instr in instrs {
        let pkt = ep.piggyback(&UDP_IN, &instr).unwrap();
        let (h, _) = etherparse::Ipv4Header::from_slice(&pkt).unwrap();
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        let mut f = pkt.clone();
        if let Some(out) = n.handle_packet(T0, 0, &mut f) {
            let (h, _) = etherparse::Ipv4Header::from_slice(&f[out.range]).unwrap();
            assert_eq!(h.header_checksum, h.calc_header_checksum(), "{instr:?}");
            if !matches!(instr, Instruction::Count { .. }) {
                // The bytes did change inside the header: the checksum was really at stake.
                assert_ne!(
                    &f[20..h.header_len()],
                    &pkt[20..h.header_len()],
                    "{instr:?}"
                );
            }
        }
        for (_, o) in drain(&mut n) {
            let (h, _) = etherparse::Ipv4Header::from_slice(&o).unwrap();
            assert_eq!(h.header_checksum, h.calc_header_checksum());
        }
    }
}

#[test]
fn esp_sweeps_and_routing_updates_are_timed() {
    let mut c = Config::router([10, 0, 0, 1].into(), 1);
    c.esp = Some(EspConfig::new(1, 8, HashKey::from_seed(3)).unwrap());
    let mut n = Node::new(c, T0).unwrap();
    assert_eq!(n.poll_timeout(), Some(Instant::from_millis(100)));
    n.handle_timeout(Instant::from_millis(100));
    assert_eq!(n.poll_timeout(), Some(Instant::from_millis(200)));
    let mut d = dv_node([10, 0, 0, 9]);
    let t = d.poll_timeout().unwrap();
    assert!(t > T0);
    d.handle_timeout(t);
    assert!(d.poll_timeout().unwrap() > t);
    assert!(
        Node::new(Config::router([10, 0, 0, 1].into(), 1), T0)
            .unwrap()
            .poll_timeout()
            .is_none()
    );
}

#[test]
fn routes_and_groups_name_only_interfaces_the_node_has() {
    let mut n = router(|_| ());
    assert!(!n.add_route(p([10, 3, 0, 0], 16), 2));
    assert!(n.add_route(p([10, 3, 0, 0], 16), 1));
    n.add_group([224, 1, 1, 1].into(), &[1, 7, 9]);
    assert_eq!(n.routes().group([224, 1, 1, 1].into()), Some(&[1u16][..]));
}

#[test]
fn a_labelled_packet_too_big_for_its_link_takes_the_ip_path() {
    let mut a = dv_node([10, 0, 0, 1]);
    let mut b = dv_node([10, 0, 0, 2]);
    b.originate(T0, p([10, 2, 0, 0], 16));
    exchange(&mut a, &mut b, 1, 0, 0);
    let index = a.dv().unwrap().index_of_dest(p([10, 2, 0, 0], 16)).unwrap();
    a.add_route(p([10, 1, 0, 0], 16), 0);
    let mut big = vec![0u8; 1600];
    emit_header(
        &mut big,
        [10, 1, 0, 1].into(),
        [10, 2, 0, 7].into(),
        17,
        64,
        1580,
    )
    .unwrap();
    let mut f = vec![0u8; 5 + 1600];
    emit_label_frame(Label::threaded(index, 20), &big, &mut f).unwrap();
    assert_eq!(a.handle_packet(T0, 0, &mut f), None);
    let out = drain(&mut a);
    // DF set: ICMP fragmentation needed back toward the source, nothing over 1500 out.
    assert_eq!(out.len(), 1);
    let (_, m) = read(&out[0].1).unwrap();
    assert_eq!((m.kind, m.code), (3, 4));
    let s = a.stats();
    assert_eq!((s.dropped.too_big, s.label_forwarded), (1, 0));
}

#[test]
fn node_made_packets_never_exceed_their_link() {
    // A 68-byte link back toward the source: a 576-byte ICMP error cannot go.
    let mut n = router(|c| c.ifaces[0].mtu = 68);
    let mut f = vec![0u8; 200];
    emit_header(
        &mut f,
        [10, 1, 0, 1].into(),
        [10, 2, 0, 7].into(),
        17,
        1,
        180,
    )
    .unwrap();
    n.handle_packet(T0, 0, &mut f);
    let out = drain(&mut n);
    assert!(out.is_empty(), "{out:?} {:?}", n.stats());
    assert_eq!(n.stats().icmp_suppressed, 1);
}

#[test]
fn a_routing_cost_at_infinity_is_a_config_error() {
    let mut c = Config::router([10, 0, 0, 1].into(), 1);
    c.dv = Some(fastpath::dv::Config::new(1));
    c.ifaces[0] = IfaceConfig::new(1500).with_dv(16);
    assert_eq!(
        Node::new(c, T0).err(),
        Some(waist_node::ConfigError::CostTooHigh { iface: 0, cost: 16 })
    );
}

proptest::proptest! {
    /// The SNAP transit fast path forwards exactly what the general path would send: the
    /// VM's own fast path (`try_forward`) framed by `encapsulate`, on the interface the
    /// route names; packets it cannot take (addressed here, no resource bound left, too
    /// big for the link, IP options) go the general way with the same counters.
    #[test]
    fn snap_transit_in_place_is_the_general_path(
        payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1500),
        rb in 0u16..4,
        to in 0usize..4,
        options in proptest::prelude::any::<bool>(),
    ) {
        let dst = [[10, 2, 0, 7], [10, 1, 0, 9], [10, 0, 0, 254], [192, 168, 0, 1]][to];
        let mut n = router(|c| {
            c.snap = true;
            c.ifaces[1].mtu = 1200;
        });
        let ping = snap_vm::paper::ping([10, 1, 0, 1], dst, 7, &payload, rb);
        let snap = ping.to_bytes().unwrap();
        let mut frame = snap_vm::ip::encapsulate(&snap).unwrap();
        // As a neighbour might send it: another TTL and identification, so the header the
        // node writes is visibly its own.
        frame[8] = 9;
        frame[4..6].copy_from_slice(&[0x12, 0x34]);
        frame[10..12].copy_from_slice(&[0, 0]);
        let c = waist_ip::checksum::checksum(&frame[..20]);
        frame[10..12].copy_from_slice(&c.to_be_bytes());
        if options {
            // Four bytes of NOP options: a 24-byte header, which the fast path leaves alone.
            let mut h = frame[..20].to_vec();
            h.extend_from_slice(&[1, 1, 1, 1]);
            h[0] = 0x46;
            let total = (frame.len() + 4) as u16;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            h[10..12].copy_from_slice(&[0, 0]);
            let c = waist_ip::checksum::checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            h.extend_from_slice(&frame[20..]);
            frame = h;
        }
        // The expected transmit, from the VM and the framing alone.
        let vm = snap_vm::vm::Vm::new(snap_vm::vm::NodeConfig {
            address: [10, 0, 0, 254],
            ifaces: 2,
            mtu: 1500,
        });
        let expected = vm.try_forward(snap.clone()).ok().and_then(|t| {
            let iface = match t.dst {
                [10, 1, ..] => 0,
                [10, 2, ..] => 1,
                _ => return None,
            };
            let ip = snap_vm::ip::encapsulate(&t.packet).unwrap();
            (ip.len() <= [1500, 1200][iface]).then_some((iface, ip))
        });
        let sent = n.handle_packet(T0, 0, &mut frame);
        let queued = drain(&mut n);
        let got: Vec<(usize, Vec<u8>)> = sent
            .map(|s| (s.iface, frame[s.range].to_vec()))
            .into_iter()
            .chain(queued)
            .collect();
        let s = n.stats();
        let transit = vm.try_forward(snap.clone()).is_ok();
        if let Some(e) = &expected {
            proptest::prop_assert_eq!(&got, &vec![e.clone()]);
            proptest::prop_assert_eq!((s.snap_executed, s.snap_sent, s.copies), (1, 1, 1));
        } else if transit {
            // Routed nowhere, or too big for the link: dropped, counted, nothing sent.
            proptest::prop_assert!(got.is_empty());
            proptest::prop_assert_eq!((s.snap_executed, s.snap_sent, s.snap_no_route), (1, 0, 1));
        }
    }
}
