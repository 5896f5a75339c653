//! Stream handlers on the node: UDP datagrams for the stream ports on the node's own
//! address go to its stream node, what it sends is routed like the node's own packets, and
//! everything else is delivered as before.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{IpAddr, SocketAddr};

use stream_handlers::node::NodeConfig;
use stream_handlers::rudp::{Header, fragment};
use waist_ip::udp;
use waist_node::routes::prefix;
use waist_node::{Config, Delivery, Instant, Node, StreamsConfig};

const ME: [u8; 4] = [10, 0, 0, 1];

fn node() -> Node {
    node_with(false)
}

fn node_with(through: bool) -> Node {
    let mut c = Config::router(IpAddr::from(ME), 3);
    let spec = "to 10.3.0.1:7400 10.4.0.1:7500 | multicast 0=u8@0<10 1=all"
        .parse()
        .unwrap();
    c.streams = Some(StreamsConfig {
        node: NodeConfig::default(),
        deploy: vec![(7, spec)],
        through,
    });
    let mut n = Node::new(c, Instant::ZERO).unwrap();
    n.add_route(prefix([10, 3, 0, 0].into(), 16).unwrap(), 1);
    n.add_route(prefix([10, 4, 0, 0].into(), 16).unwrap(), 2);
    n
}

fn datagram(dport: u16, data: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 64 + data.len()];
    let n = udp::emit_datagram(
        [10, 1, 0, 10].into(),
        ME.into(),
        64,
        40_000,
        dport,
        data,
        &mut b,
    )
    .unwrap();
    b.truncate(n);
    b
}

fn meter() -> impl FnMut() -> u64 {
    let mut t = 0;
    move || {
        t += 1;
        t
    }
}

#[test]
fn stream_datagrams_run_through_the_handlers_and_leave_routed() {
    let mut n = node();
    let body: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    for f in fragment(7, 1, 0, &body, 1400).unwrap() {
        let mut frame = datagram(7400, &f);
        assert_eq!(n.handle_packet(Instant::ZERO, 0, &mut frame), None);
    }
    assert!(
        n.poll_deliver().is_none(),
        "stream datagrams are the stream node's"
    );
    n.run_streams(Instant::ZERO, &mut meter());
    let mut buf = vec![0u8; 70_000];
    let mut sent = Vec::new();
    while let Some(t) = n.poll_transmit(&mut buf) {
        let d = udp::parse_datagram(&buf[..t.len]).unwrap();
        assert_eq!((d.src, d.sport), (IpAddr::from(ME), 7400));
        let h = Header::parse(d.data).unwrap();
        sent.push((t.iface, SocketAddr::new(d.dst, d.dport), h.index));
    }
    // First byte 0 < 10: both destinations, three fragments each, each by its route.
    assert_eq!(sent.len(), 6, "{sent:?}");
    assert!(
        sent.iter()
            .filter(|s| s.0 == 1)
            .all(|s| s.1 == "10.3.0.1:7400".parse().unwrap())
    );
    assert!(
        sent.iter()
            .filter(|s| s.0 == 2)
            .all(|s| s.1 == "10.4.0.1:7500".parse().unwrap())
    );
    let st = n.streams().unwrap().stats();
    assert_eq!((st.fragments_in, st.fragments_out, st.messages), (3, 6, 1));
}

#[test]
fn other_datagrams_are_delivered_and_a_node_without_streams_delivers_stream_ports() {
    let mut n = node();
    let mut frame = datagram(9999, b"hello");
    n.handle_packet(Instant::ZERO, 0, &mut frame);
    assert!(matches!(n.poll_deliver(), Some(Delivery::Packet { .. })));
    let mut plain = Node::new(Config::router(IpAddr::from(ME), 1), Instant::ZERO).unwrap();
    let mut frame = datagram(7400, b"x");
    plain.handle_packet(Instant::ZERO, 0, &mut frame);
    assert!(matches!(
        plain.poll_deliver(),
        Some(Delivery::Packet { .. })
    ));
    plain.run_streams(Instant::ZERO, &mut meter());
    assert!(plain.streams().is_none());
}

#[test]
fn a_full_inbox_drops_and_counts() {
    let mut n = node();
    let f = fragment(7, 1, 0, b"tiny", 1400).unwrap().remove(0);
    for _ in 0..4100 {
        let mut frame = datagram(7400, &f);
        n.handle_packet(Instant::ZERO, 0, &mut frame);
    }
    assert_eq!(n.stats().dropped.local, 4);
    assert!(n.stats().balanced());
}

/// A datagram from 10.1.0.10 to `dst:7400` carrying `data`.
fn datagram_to(dst: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 64 + data.len()];
    let n = udp::emit_datagram(
        [10, 1, 0, 10].into(),
        dst.into(),
        64,
        40_000,
        7400,
        data,
        &mut b,
    )
    .unwrap();
    b.truncate(n);
    b
}

#[test]
fn with_through_a_deployed_stream_passing_through_runs_its_handlers_others_pass() {
    let body = vec![3u8; 500];
    let f7 = fragment(7, 1, 0, &body, 1400).unwrap().remove(0);
    let f8 = fragment(8, 1, 0, &body, 1400).unwrap().remove(0);
    // Addressed to a host behind the node, not to the node.
    let to = [10, 3, 0, 9];
    for (through, stream, forwarded) in [(true, &f7, false), (true, &f8, true), (false, &f7, true)]
    {
        let mut n = node_with(through);
        let mut frame = datagram_to(to, stream);
        let fwd = n.handle_packet(Instant::ZERO, 0, &mut frame);
        assert_eq!(fwd.is_some(), forwarded, "through {through}");
        n.run_streams(Instant::ZERO, &mut meter());
        let mut buf = vec![0u8; 70_000];
        let mut sent = Vec::new();
        while let Some(t) = n.poll_transmit(&mut buf) {
            let d = udp::parse_datagram(&buf[..t.len]).unwrap();
            sent.push((d.src, SocketAddr::new(d.dst, d.dport)));
        }
        if forwarded {
            assert!(sent.is_empty());
        } else {
            // Both destinations of the spec, from the node's address.
            assert_eq!(
                sent,
                vec![
                    (IpAddr::from(ME), "10.3.0.1:7400".parse().unwrap()),
                    (IpAddr::from(ME), "10.4.0.1:7500".parse().unwrap()),
                ]
            );
        }
    }
}
