//! Stream handlers in a running router: a publisher and three subscribers played by plain
//! UDP sockets on the router's IP-in-UDP links, a stream host (the `waist stream host`
//! config) on a fourth. Customised multicast runs in the router, a subscriber's filter is
//! changed by a control message while the stream runs, and a deployment the router has no
//! headroom for runs on the host with the same output.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stream_handlers::control::ControlMessage;
use stream_handlers::envelope::{Envelope, Request, Status};
use stream_handlers::format::shipped::FlightRecord;
use stream_handlers::rudp::{Header, fragment};
use stream_handlers::spec::Spec;
use stream_handlers::{Message, Predicate};
use tokio::net::UdpSocket;
use waist_router::embed::Embedded;

fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn link(name: &str, local: SocketAddr, peer: SocketAddr) -> String {
    format!("[[link]]\nname = \"{name}\"\non = \"udp:{local}={peer}\"\n\n")
}

fn route(prefix: &str, link: &str) -> String {
    format!("[[route]]\nprefix = \"{prefix}\"\nlink = \"{link}\"\n\n")
}

const ROUTER: [u8; 4] = [10, 0, 0, 1];
const PUBLISHER: [u8; 4] = [10, 1, 0, 10];
const HOST: &str = "10.9.0.10";
const SUBS: [&str; 3] = ["10.3.0.1", "10.3.0.2", "10.3.0.3"];

/// A host at the end of a router link: a socket that sends and receives IP packets.
struct End {
    sock: UdpSocket,
}

impl End {
    async fn new(local: SocketAddr, router: SocketAddr) -> End {
        let sock = UdpSocket::bind(local).await.unwrap();
        sock.connect(router).await.unwrap();
        End { sock }
    }

    async fn send_udp(&self, src: IpAddr, dst: IpAddr, dport: u16, data: &[u8]) {
        let mut buf = vec![0u8; 64 + data.len()];
        let n = waist_ip::udp::emit_datagram(src, dst, 64, 40_000, dport, data, &mut buf).unwrap();
        self.sock.send(&buf[..n]).await.unwrap();
    }

    /// UDP payloads that arrive within `wait` of each other.
    async fn drain(&self, wait: Duration) -> Vec<(u16, Vec<u8>)> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 70_000];
        while let Ok(Ok(n)) = tokio::time::timeout(wait, self.sock.recv(&mut buf)).await {
            if let Some(d) = waist_ip::udp::parse_datagram(&buf[..n]) {
                out.push((d.sport, d.data.to_vec()));
            }
        }
        out
    }
}

/// Message id → bytes, from fragments (each must arrive once).
fn messages(frags: &[(u16, Vec<u8>)]) -> BTreeMap<u32, Vec<u8>> {
    let mut parts: BTreeMap<u32, BTreeMap<u16, Vec<u8>>> = BTreeMap::new();
    for (_, f) in frags {
        let h = Header::parse(f).unwrap();
        assert!(
            parts
                .entry(h.message)
                .or_default()
                .insert(h.index, f[24..].to_vec())
                .is_none()
        );
    }
    parts
        .into_iter()
        .map(|(id, p)| (id, p.into_values().flatten().collect()))
        .collect()
}

struct Net {
    _routers: Vec<Embedded>,
    publisher: End,
    subs: Vec<End>,
}

/// The router (with `streams` as its `[streams]` body) and the stream host.
async fn net(streams: &str, stream: &str) -> Net {
    let (p, rp) = (free(), free());
    let (h, rh) = (free(), free());
    let subs: Vec<(SocketAddr, SocketAddr)> = SUBS.iter().map(|_| (free(), free())).collect();
    let mut r = format!(
        "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n\n[streams]\nhost = \"{HOST}\"\n{streams}\n{stream}\n"
    );
    r += &link("pub", rp, p);
    r += &link("host", rh, h);
    for (i, (s, rs)) in subs.iter().enumerate() {
        r += &link(&format!("s{i}"), *rs, *s);
    }
    r += &route("10.1.0.10/32", "pub");
    r += &route(&format!("{HOST}/32"), "host");
    for (i, a) in SUBS.iter().enumerate() {
        r += &route(&format!("{a}/32"), &format!("s{i}"));
    }
    let host =
        waist_router::streams::host_config("sh", HOST.parse().unwrap(), &format!("udp:{h}={rh}"));
    let routers = vec![
        Embedded::start("r1.toml", r, false).unwrap(),
        Embedded::start("host.toml", host, false).unwrap(),
    ];
    let publisher = End::new(p, rp).await;
    let mut ends = Vec::new();
    for (s, rs) in subs {
        ends.push(End::new(s, rs).await);
    }
    Net {
        _routers: routers,
        publisher,
        subs: ends,
    }
}

impl Net {
    async fn control(&self, stream: u16, request: Request) -> (Status, String) {
        let mut b = Vec::new();
        Envelope {
            stream,
            id: 5,
            request,
        }
        .emit(&mut b);
        self.publisher
            .send_udp(PUBLISHER.into(), ROUTER.into(), 7401, &b)
            .await;
        for (sport, data) in self.publisher.drain(Duration::from_millis(500)).await {
            assert_eq!(sport, 7401);
            if let Ok(Envelope {
                id: 5,
                request: Request::Reply(s, d),
                ..
            }) = Envelope::parse(&data)
            {
                return (s, d);
            }
        }
        panic!("no reply");
    }

    async fn publish(&self, stream: u16, ids: std::ops::Range<u32>) -> Vec<Vec<u8>> {
        let mut sent = Vec::new();
        for id in ids {
            let m = FlightRecord::generate(id, 0, 3, 4000).unwrap();
            for f in fragment(stream, id, id * 3, &m, 1400).unwrap() {
                self.publisher
                    .send_udp(PUBLISHER.into(), ROUTER.into(), 7400, &f)
                    .await;
            }
            sent.push(m);
        }
        sent
    }

    async fn received(&self) -> Vec<BTreeMap<u32, Vec<u8>>> {
        let mut out = Vec::new();
        for s in &self.subs {
            out.push(messages(&s.drain(Duration::from_millis(300)).await));
        }
        out
    }
}

const SPEC: &str = "to 10.3.0.1:7400 10.3.0.2:7400 10.3.0.3:7400 | fields flight | multicast 0=status==2 1=status<2 2=all";

/// What each subscriber should get from `sent` under `spec` (the handlers run natively).
fn expected(spec: &str, sent: &[Vec<u8>], first: u32) -> Vec<BTreeMap<u32, Vec<u8>>> {
    let spec: Spec = spec.parse().unwrap();
    let mut out = vec![BTreeMap::new(); spec.dests.len()];
    let mut d = spec.deployment();
    for (i, m) in sent.iter().enumerate() {
        for o in d.run(Message::new(0, m.clone())) {
            out[usize::from(o.dest)].insert(first + i as u32, o.payload);
        }
    }
    out
}

#[tokio::test]
async fn customised_multicast_in_the_router_re_parameterised_while_it_runs() {
    // 1000 packets a second: a millisecond each, room for a debug build's handlers.
    let n = net(
        "rate_pps = 1000\n",
        &format!("[[stream]]\nid = 7\nspec = \"{SPEC}\"\n"),
    )
    .await;
    let sent = n.publish(7, 0..20).await;
    let got = n.received().await;
    assert_eq!(got, expected(SPEC, &sent, 0));
    assert!(
        got[0].len() < 20 && got[2].len() == 20,
        "the filters filter"
    );
    // Subscriber 0 now wants the airborne and the landed (status 2 or 3); the others keep theirs.
    let set = ControlMessage::SetDestPredicate {
        handler: 0,
        dest: 0,
        predicate: Predicate::Range(stream_handlers::Field::new(30, 1), 2, 3),
    };
    let (s, now) = n.control(7, Request::Control(set)).await;
    assert_eq!(s, Status::Applied, "{now}");
    let sent = n.publish(7, 20..40).await;
    let got = n.received().await;
    let changed = "to 10.3.0.1:7400 10.3.0.2:7400 10.3.0.3:7400 | fields flight | multicast 0=status in 2..3 1=status<2 2=all";
    assert_eq!(got, expected(changed, &sent, 20));
}

#[tokio::test]
async fn a_stream_without_headroom_runs_on_the_host_with_the_same_output() {
    // 10 million packets a second at 1 %: a nanosecond of headroom, which no handler fits.
    let n = net("rate_pps = 10000000\nshare_percent = 1\n", "").await;
    let spec = "to 10.3.0.1:7400 10.3.0.2:7400 10.3.0.3:7400 | fields flight | delta 20 1 | multicast 0=status==2 1=status<2 2=all";
    let (s, detail) = n.control(9, Request::Deploy(spec.into())).await;
    assert_eq!(s, Status::OnHost, "{detail}");
    // Give the host its deployment before the data.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent = n.publish(9, 0..10).await;
    let got = n.received().await;
    assert_eq!(got, expected(spec, &sent, 0));
    assert!(!got[2].is_empty());
}
