//! Arbitrary datagrams into a stream node (`stream_handlers::node`): data fragments and
//! control envelopes, from a few sources, to its data and control ports, with a few
//! streams deployed, admission on, a host configured, and an arbitrary meter.
//!
//! Asserts, for any input: nothing panics; every datagram the node sends goes to a
//! destination of a deployed spec, to the host, or back to a control sender, from the
//! node's data or control port; every fragment it sends parses as RUDP data; control
//! replies parse as envelope replies; counters only grow, and fragments handled
//! (`fragments_in`) never exceed the data datagrams that parsed as RUDP; and a spec the node
//! runs prints as text that parses back to itself.
#![no_main]

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use libfuzzer_sys::fuzz_target;
use stream_handlers::envelope::{Envelope, Request};
use stream_handlers::node::{Admission, NodeConfig, StreamNode};
use stream_handlers::rudp::{Header, Kind};
use stream_handlers::spec::Spec;

const SPECS: [&str; 3] = [
    "to 10.3.0.1:7400 10.3.0.2:7400 | multicast 0=u8@0<128 1=all",
    "to 10.3.0.3:7400 | delta 20 1 | byteswap",
    "to 10.3.0.4:7400 10.3.0.5:7400 | route u8@1 1=0 2=1 default=0",
];

fuzz_target!(|data: &[u8]| {
    let host: IpAddr = [10, 9, 0, 10].into();
    let mut node = StreamNode::new(NodeConfig {
        admission: Some(Admission {
            rate_pps: 1_000_000,
            share_percent: 50,
            overrun_messages: 2,
            trials: 1,
        }),
        host: Some(host),
        max_held: 8,
        ..NodeConfig::default()
    });
    let mut clock = 0u64;
    let mut step = u64::from(data.first().copied().unwrap_or(1)) * 7;
    let mut allowed: BTreeSet<SocketAddr> = BTreeSet::new();
    allowed.insert(SocketAddr::new(host, 7400));
    allowed.insert(SocketAddr::new(host, 7401));
    for (i, s) in SPECS.iter().enumerate() {
        let spec: Spec = s.parse().expect("shipped specs parse");
        allowed.extend(spec.dests.iter().copied());
        let _ = node.deploy(i as u16, spec, &mut || {
            clock += step;
            clock
        });
    }
    let mut rudp_in = 0u64;
    let mut before = node.stats();
    // Records: [len, source, port bit, …bytes].
    let mut rest = data.get(1..).unwrap_or_default();
    while let Some((&len, tail)) = rest.split_first() {
        let Some((&meta, tail)) = tail.split_first() else {
            break;
        };
        let n = usize::from(len).min(tail.len());
        let (bytes, tail) = tail.split_at(n);
        rest = tail;
        let src = SocketAddr::new([10, 1, 0, meta & 3].into(), 40_000 + u16::from(meta >> 4));
        let port = if meta & 8 == 0 { 7400 } else { 7401 };
        if port == 7400 && Header::parse(bytes).is_ok_and(|h| h.kind == Kind::Data) {
            rudp_in += 1;
        }
        step = step.wrapping_add(u64::from(meta));
        let now = sansio::Instant::from_micros(clock / 1000);
        node.handle_datagram(now, src, port, bytes, &mut || {
            clock = clock.wrapping_add(step);
            clock
        });
        if meta & 0x40 != 0 {
            node.handle_timeout(sansio::Instant::from_micros(clock / 1000 + 3_000_000));
        }
        if port == 7401 {
            allowed.insert(src);
            // A deployment may add destinations: allow what the node now runs.
            for st in node.streams() {
                let spec: Spec = st
                    .spec
                    .parse()
                    .expect("a running spec prints in its grammar");
                assert_eq!(spec.to_string(), st.spec);
                allowed.extend(spec.dests.iter().copied());
            }
        }
        while let Some(o) = node.poll_output() {
            assert!(
                allowed.contains(&o.dst),
                "sent to {} which nothing named",
                o.dst
            );
            match o.src_port {
                7400 => {
                    let h = Header::parse(&o.payload).expect("a fragment");
                    assert_eq!(h.kind, Kind::Data);
                }
                7401 => {
                    let e = Envelope::parse(&o.payload).expect("an envelope");
                    if o.dst.ip() != host {
                        assert!(matches!(e.request, Request::Reply(..)));
                    }
                }
                p => panic!("sent from port {p}"),
            }
        }
        while node.poll_event().is_some() {}
        let now = node.stats();
        for ((name, _, a), (_, _, b)) in before.named().iter().zip(now.named().iter()) {
            assert!(b >= a, "{name} went down");
        }
        before = now;
    }
    assert!(node.stats().fragments_in <= rudp_in);
});
