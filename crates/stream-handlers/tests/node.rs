//! The stream node against what its handlers say: cut-through and whole messages, control
//! at message boundaries, admission to the host with the same output, overruns.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use proptest::prelude::*;
use stream_handlers::control::ControlMessage;
use stream_handlers::envelope::{Envelope, Request, Status};
use stream_handlers::node::{Admission, Event, NodeConfig, Output, Placement, StreamNode};
use stream_handlers::rudp::{Header, fragment};
use stream_handlers::spec::Spec;
use stream_handlers::{Field, Message, Predicate};

const PUB: &str = "10.1.0.10:40000";
const HOST: &str = "10.9.0.10";
const NOW: sansio::Instant = sansio::Instant::ZERO;

fn sa(s: &str) -> SocketAddr {
    s.parse().expect("an address")
}

/// A meter that advances `step` ns per reading: every run "costs" `step`.
fn meter(step: u64) -> impl FnMut() -> u64 {
    let mut t = 0u64;
    move || {
        t += step;
        t
    }
}

fn free() -> NodeConfig {
    NodeConfig {
        admission: None,
        ..NodeConfig::default()
    }
}

fn outputs(n: &mut StreamNode) -> Vec<Output> {
    std::iter::from_fn(|| n.poll_output()).collect()
}

/// Message `id`: `len` bytes, first byte `key`, the rest from the id.
fn message(id: u32, key: u8, len: usize) -> Vec<u8> {
    let mut m: Vec<u8> = (0..len).map(|i| (i as u32 ^ id) as u8).collect();
    if let Some(b) = m.first_mut() {
        *b = key;
    }
    m
}

/// Fragments received per destination, reassembled by message id (order of arrival
/// ignored): destination → message id → bytes.
fn delivered(outs: &[Output]) -> BTreeMap<SocketAddr, BTreeMap<u32, Vec<u8>>> {
    let mut frags: BTreeMap<(SocketAddr, u32), BTreeMap<u16, Vec<u8>>> = BTreeMap::new();
    for o in outs {
        let h = Header::parse(&o.payload).expect("a fragment");
        let prev = frags
            .entry((o.dst, h.message))
            .or_default()
            .insert(h.index, o.payload[24..].to_vec());
        assert!(
            prev.is_none(),
            "fragment {} of {} sent twice to {}",
            h.index,
            h.message,
            o.dst
        );
    }
    let mut out: BTreeMap<SocketAddr, BTreeMap<u32, Vec<u8>>> = BTreeMap::new();
    for ((dst, id), parts) in frags {
        out.entry(dst)
            .or_default()
            .insert(id, parts.into_values().flatten().collect());
    }
    out
}

#[test]
fn cut_through_multicast_sends_every_fragment_where_fragment_zero_decided() {
    let mut n = StreamNode::new(free());
    let spec: Spec =
        "to 10.3.0.1:7400 10.3.0.2:7400 10.3.0.3:7400 | multicast 0=u8@0<10 1=u8@0>=10 2=all"
            .parse()
            .expect("a spec");
    n.deploy(5, spec.clone(), &mut meter(1)).expect("admitted");
    let mut expect: BTreeMap<SocketAddr, BTreeMap<u32, Vec<u8>>> = BTreeMap::new();
    for id in 0..6u32 {
        let m = message(id, (id * 4) as u8, 3000);
        let mut frags = fragment(5, id, id * 3, &m, 1000).expect("fragments");
        // The last fragment first: it waits for fragment 0.
        frags.rotate_right(1);
        for f in &frags {
            n.handle_datagram(NOW, sa(PUB), 7400, f, &mut meter(1));
        }
        for out in spec.deployment().run(Message::new(0, m.clone())) {
            expect
                .entry(spec.dests[usize::from(out.dest)])
                .or_default()
                .insert(id, out.payload);
        }
    }
    let outs = outputs(&mut n);
    assert!(outs.iter().all(|o| o.src_port == 7400));
    assert_eq!(delivered(&outs), expect);
    let st = n.stats();
    assert_eq!(st.messages, 6);
    assert_eq!(st.fragments_in, 18);
    assert_eq!(st.fragments_out, outs.len() as u64);
    assert_eq!(
        n.streams().next().map(|s| s.mode),
        Some(stream_handlers::node::Mode::CutThrough)
    );
}

#[test]
fn whole_messages_are_reassembled_handled_and_fragmented_again() {
    let mut n = StreamNode::new(free());
    let spec: Spec = "to 10.3.0.1:7400 | delta 20 3 | byteswap"
        .parse()
        .expect("a spec");
    n.deploy(9, spec.clone(), &mut meter(1)).expect("admitted");
    let m = message(4, 1, 2500);
    for f in fragment(9, 4, 0, &m, 700).expect("fragments").iter().rev() {
        n.handle_datagram(NOW, sa(PUB), 7400, f, &mut meter(1));
    }
    let want = spec.deployment().run(Message::new(0, m)).remove(0).payload;
    let got = delivered(&outputs(&mut n));
    assert_eq!(got[&sa("10.3.0.1:7400")][&4], want);
    // Other streams and broken datagrams are counted, not sent.
    n.handle_datagram(
        NOW,
        sa(PUB),
        7400,
        &fragment(8, 0, 0, b"x", 10).expect("f")[0],
        &mut meter(1),
    );
    n.handle_datagram(NOW, sa(PUB), 7400, b"junk", &mut meter(1));
    assert!(outputs(&mut n).is_empty());
    assert_eq!((n.stats().unknown_stream, n.stats().malformed), (1, 1));
}

fn control(n: &mut StreamNode, stream: u16, request: Request) -> (Status, String) {
    let (s, d, _) = control_costing(n, stream, request, 1);
    (s, d)
}

/// A control envelope from the publisher, each handler run timed at `step` ns: the
/// reply's status and detail, and what else the node sent.
fn control_costing(
    n: &mut StreamNode,
    stream: u16,
    request: Request,
    step: u64,
) -> (Status, String, Vec<Output>) {
    let mut b = Vec::new();
    Envelope {
        stream,
        id: 77,
        request,
    }
    .emit(&mut b);
    n.handle_datagram(NOW, sa(PUB), 7401, &b, &mut meter(step));
    let (replies, others): (Vec<Output>, Vec<Output>) =
        outputs(n).into_iter().partition(|o| o.dst == sa(PUB));
    let [reply] = &replies[..] else {
        panic!("one reply to the sender: {replies:?}");
    };
    assert_eq!(reply.src_port, 7401);
    match Envelope::parse(&reply.payload).map(|e| (e.id, e.request)) {
        Ok((77, Request::Reply(s, d))) => (s, d, others),
        other => panic!("not a reply: {other:?}"),
    }
}

#[test]
fn a_predicate_changed_mid_message_applies_from_the_next_message_and_loses_nothing() {
    let mut n = StreamNode::new(free());
    let (s, _) = control(
        &mut n,
        3,
        Request::Deploy("to 10.3.0.1:7400 10.3.0.2:7400 | multicast 0=u8@0<100 1=all".into()),
    );
    assert_eq!(s, Status::OnNode);
    let f = Field::new(0, 1);
    let msgs: Vec<Vec<Vec<u8>>> = (0..4u32)
        .map(|id| fragment(3, id, 0, &message(id, 50, 2000), 500).expect("f"))
        .collect();
    let mut outs = Vec::new();
    // Message 1's first half, then subscriber 0 loses everything below 100 … from the
    // next message on; message 1's second half still follows its first.
    for f in &msgs[0] {
        n.handle_datagram(NOW, sa(PUB), 7400, f, &mut meter(1));
    }
    for f in &msgs[1][..2] {
        n.handle_datagram(NOW, sa(PUB), 7400, f, &mut meter(1));
    }
    outs.extend(outputs(&mut n));
    let set = ControlMessage::SetDestPredicate {
        handler: 0,
        dest: 0,
        predicate: Predicate::Ge(f, 100),
    };
    let (s, spec) = control(&mut n, 3, Request::Control(set));
    assert_eq!(s, Status::Applied, "{spec}");
    assert!(spec.contains("0=u8@0>=100 1=all"), "{spec}");
    for m in &msgs[1..] {
        for f in m.iter().skip(if m == &msgs[1] { 2 } else { 0 }) {
            n.handle_datagram(NOW, sa(PUB), 7400, f, &mut meter(1));
        }
    }
    outs.extend(outputs(&mut n));
    let got = delivered(&outs);
    assert_eq!(
        got[&sa("10.3.0.1:7400")]
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(
        got[&sa("10.3.0.2:7400")]
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    for (id, body) in &got[&sa("10.3.0.1:7400")] {
        assert_eq!(body, &message(*id, 50, 2000), "message {id} whole");
    }
    assert!(matches!(
        n.poll_event(),
        Some(Event::Deployed { stream: 3, .. })
    ));
    assert!(matches!(
        n.poll_event(),
        Some(Event::Changed { stream: 3, .. })
    ));
}

#[test]
fn not_admitted_runs_on_the_host_with_the_same_output() {
    let host: IpAddr = HOST.parse().expect("an address");
    let tight = Admission {
        rate_pps: 1_000_000,
        share_percent: 10,
        ..Admission::default()
    };
    let mut router = StreamNode::new(NodeConfig {
        admission: Some(tight),
        host: Some(host),
        ..NodeConfig::default()
    });
    let spec = "to 10.3.0.1:7400 10.3.0.2:7400 | fields flight | size 3000 | multicast 0=status==2 1=status<2";
    // Trials "cost" 5 µs per run: over a 100 ns headroom.
    let (s, detail, deploy) = control_costing(&mut router, 4, Request::Deploy(spec.into()), 5000);
    assert_eq!(s, Status::OnHost, "{detail}");
    assert!(detail.contains("headroom 100 ns"), "{detail}");
    let mut host_node = StreamNode::new(free());
    let mut direct = StreamNode::new(free());
    direct
        .deploy(4, spec.parse().expect("a spec"), &mut meter(1))
        .expect("admitted");
    let mut via_host = Vec::new();
    let router_addr = SocketAddr::new("10.0.0.1".parse().expect("an address"), 7401);
    let [d] = &deploy[..] else {
        panic!("one deploy for the host: {deploy:?}")
    };
    assert_eq!(d.dst, SocketAddr::new(host, 7401));
    host_node.handle_datagram(NOW, router_addr, 7401, &d.payload, &mut meter(1));
    assert_eq!(
        host_node.streams().count(),
        1,
        "the host took the deployment"
    );
    let mut straight = Vec::new();
    for id in 0..5u32 {
        let m =
            stream_handlers::format::shipped::FlightRecord::generate(id, 0, 9, 3000).expect("m");
        for f in fragment(4, id, 0, &m, 1400).expect("f") {
            router.handle_datagram(NOW, sa(PUB), 7400, &f, &mut meter(1));
            direct.handle_datagram(NOW, sa(PUB), 7400, &f, &mut meter(1));
        }
        straight.extend(outputs(&mut direct));
        for o in outputs(&mut router) {
            assert_eq!(o.dst.ip(), host, "everything goes to the host");
            host_node.handle_datagram(
                NOW,
                SocketAddr::new("10.0.0.1".parse().expect("a"), o.src_port),
                o.dst.port(),
                &o.payload,
                &mut meter(1),
            );
        }
        via_host.extend(
            outputs(&mut host_node)
                .into_iter()
                .filter(|o| o.dst.port() == 7400),
        );
    }
    assert!(!straight.is_empty());
    assert_eq!(delivered(&via_host), delivered(&straight));
    assert_eq!(router.stats().deployed_host, 1);
    assert_eq!(router.stats().messages, 0);
    assert_eq!(router.stats().to_host, 15);
}

#[test]
fn the_host_learns_the_deployment_before_the_data() {
    let host: IpAddr = HOST.parse().expect("an address");
    let mut router = StreamNode::new(NodeConfig {
        admission: Some(Admission {
            rate_pps: 1_000_000,
            share_percent: 10,
            ..Admission::default()
        }),
        host: Some(host),
        ..NodeConfig::default()
    });
    let (p, _) = router
        .deploy(
            4,
            "to 10.3.0.1:7400 | mirror".parse().expect("s"),
            &mut meter(5000),
        )
        .expect("placed");
    assert_eq!(p, Placement::Host);
    let first = router.poll_output().expect("the deploy");
    assert_eq!(first.dst, SocketAddr::new(host, 7401));
    assert!(matches!(
        Envelope::parse(&first.payload).map(|e| e.request),
        Ok(Request::Deploy(_))
    ));
}

#[test]
fn without_a_host_a_costly_deployment_is_refused_and_the_reason_named() {
    let mut n = StreamNode::new(NodeConfig {
        admission: Some(Admission {
            rate_pps: 1_000_000,
            share_percent: 10,
            ..Admission::default()
        }),
        ..NodeConfig::default()
    });
    let (s, why, _) = control_costing(
        &mut n,
        1,
        Request::Deploy("to 10.3.0.1:7400 | byteswap".into()),
        5000,
    );
    assert_eq!(s, Status::Refused);
    assert!(why.contains("exceeds the headroom of 100 ns"), "{why}");
    assert!(matches!(
        n.poll_event(),
        Some(Event::Refused { stream: 1, .. })
    ));
    let (s, why) = control(&mut n, 1, Request::Deploy("to nowhere".into()));
    assert_eq!(s, Status::Refused);
    assert!(why.contains("not an address"), "{why}");
    let (s, _) = control(
        &mut n,
        1,
        Request::Control(ControlMessage::Terminate { stream: 1 }),
    );
    assert_eq!(s, Status::Refused);
    assert_eq!(n.stats().control_refused, 3);
}

#[test]
fn an_overrunning_stream_moves_to_the_host_at_a_message_boundary() {
    let host: IpAddr = HOST.parse().expect("an address");
    let mut n = StreamNode::new(NodeConfig {
        admission: Some(Admission {
            rate_pps: 100_000,
            share_percent: 50,
            overrun_messages: 3,
            trials: 1,
        }),
        host: Some(host),
        ..NodeConfig::default()
    });
    // Cheap trials (10 ns): admitted on the node, 5000 ns of headroom.
    n.deploy(
        2,
        "to 10.3.0.1:7400 | mirror".parse().expect("s"),
        &mut meter(10),
    )
    .expect("admitted");
    let mut to_host_from = None;
    for id in 0..12u32 {
        for f in fragment(2, id, 0, &message(id, 0, 100), 1400).expect("f") {
            // Now every run costs 1 ms.
            n.handle_datagram(NOW, sa(PUB), 7400, &f, &mut meter(1_000_000));
        }
        if to_host_from.is_none()
            && outputs(&mut n)
                .iter()
                .any(|o| o.dst.ip() == host && o.dst.port() == 7400)
        {
            to_host_from = Some(id);
        }
    }
    // The average passes 5000 ns at once (1 ms per message); three in a row move it after
    // message 2; message 3 is the first on the host.
    assert_eq!(to_host_from, Some(3));
    let moved = std::iter::from_fn(|| n.poll_event()).find(|e| matches!(e, Event::Overrun { .. }));
    assert!(
        matches!(
            moved,
            Some(Event::Overrun {
                stream: 2,
                moved: true,
                allowance_ns: 5000,
                ..
            })
        ),
        "{moved:?}"
    );
    assert_eq!(n.stats().overruns, 1);
    assert_eq!(
        n.streams().next().map(|s| s.placement),
        Some(Placement::Host)
    );
}

#[test]
fn control_from_others_is_refused() {
    let mut n = StreamNode::new(NodeConfig {
        control_from: Some(vec!["10.1.0.99".parse().expect("a")]),
        ..free()
    });
    let (s, why) = control(
        &mut n,
        1,
        Request::Deploy("to 10.3.0.1:7400 | mirror".into()),
    );
    assert_eq!(s, Status::Refused);
    assert!(why.contains("not allowed"), "{why}");
    assert_eq!(n.streams().count(), 0);
}

fn arb_pred() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        (0u16..64).prop_map(|o| format!("u8@{o}")),
        (0u16..64).prop_map(|o| format!("u16@{o}")),
        (0u16..64).prop_map(|o| format!("u32@{o}")),
        Just("seq".to_string()),
        Just("status".to_string()),
    ];
    prop_oneof![
        Just("all".to_string()),
        (
            field.clone(),
            prop_oneof![Just("=="), Just("<"), Just(">="), Just("<="), Just(">")],
            any::<u32>()
        )
            .prop_map(|(f, op, v)| format!("{f}{op}{v}")),
        (field, any::<u32>(), any::<u32>()).prop_map(|(f, a, b)| format!("{f} in {a}..{b}")),
    ]
}

fn arb_clause(dests: usize) -> impl Strategy<Value = String> {
    let d = 0..dests;
    prop_oneof![
        arb_pred().prop_map(|p| format!("filter {p}")),
        prop::collection::btree_map(d.clone(), arb_pred(), 1..=dests).prop_map(|m| {
            let parts: Vec<String> = m.iter().map(|(d, p)| format!("{d}={p}")).collect();
            format!("multicast {}", parts.join(" "))
        }),
        prop::collection::btree_map(d.clone(), arb_pred(), 1..=dests).prop_map(|m| {
            let parts: Vec<String> = m.iter().map(|(d, p)| format!("{d}={p}")).collect();
            format!("dest-filter {}", parts.join(" "))
        }),
        prop::collection::vec(d.clone(), 1..4).prop_map(|v| {
            let parts: Vec<String> = v.iter().map(ToString::to_string).collect();
            format!("mirror {}", parts.join(","))
        }),
        (
            prop::collection::vec((any::<u32>(), d.clone()), 0..4),
            prop::option::of(d)
        )
            .prop_map(|(r, def)| {
                let mut s = "route u16@2".to_string();
                for (v, d) in r {
                    s += &format!(" {v}={d}");
                }
                if let Some(d) = def {
                    s += &format!(" default={d}");
                }
                s
            }),
        (0u8..=100, any::<u8>()).prop_map(|(p, s)| format!("delta {p} {s}")),
        Just("byteswap".to_string()),
    ]
}

proptest! {
    /// A spec prints in its own grammar: what it prints parses back to the same spec.
    #[test]
    fn specs_parse_back_what_they_print(
        dests in 1usize..5,
        clauses in prop::collection::vec(arb_clause(4), 0..5),
        size in prop::option::of(any::<u32>()),
    ) {
        let to: Vec<String> = (0..dests).map(|i| format!("10.0.0.{}:{}", i + 1, 7400 + i)).collect();
        let mut text = format!("to {} | fields flight", to.join(" "));
        if let Some(n) = size {
            text += &format!(" | size {n}");
        }
        for c in &clauses {
            text += " | ";
            text += c;
        }
        match text.parse::<Spec>() {
            Ok(spec) => {
                let again: Spec = spec.to_string().parse().expect("prints in its grammar");
                prop_assert_eq!(&again, &spec);
                prop_assert_eq!(spec.handlers.len(), clauses.len());
            }
            // A clause naming a destination past the list is refused, and named.
            Err(e) => prop_assert!(e.why.contains("past the `to` list"), "{}: {}", text, e),
        }
    }
}

#[test]
fn a_publisher_starting_again_from_id_zero_is_decided_afresh_once_its_old_fates_are_over() {
    let mut n = StreamNode::new(free());
    let spec: Spec = "to 10.3.0.1:7400 | filter u8@0<10".parse().expect("a spec");
    n.deploy(1, spec, &mut meter(1)).expect("admitted");
    let send = |n: &mut StreamNode, at: u64| {
        let now = sansio::Instant::from_micros(at);
        for f in fragment(1, 0, 0, &message(0, 50, 100), 1400).expect("f") {
            n.handle_datagram(now, sa(PUB), 7400, &f, &mut meter(1));
        }
        outputs(n).len()
    };
    assert_eq!(send(&mut n, 0), 0, "50 is not below 10");
    let p = stream_handlers::control::ControlMessage::SetPredicate {
        handler: 0,
        predicate: Predicate::All,
    };
    let (s, _) = control(&mut n, 1, Request::Control(p));
    assert_eq!(s, Status::Applied);
    // Within the reassembly timeout the id is the same message: its fate holds.
    assert_eq!(send(&mut n, 1_000_000), 0);
    // Past it, id 0 is a new message, decided by the new filter.
    assert_eq!(send(&mut n, 3_000_000), 1);
}
