//! Three routers in one process, joined by IP-in-UDP links on loopback, with two hosts at
//! the ends played by plain UDP sockets: distance vector learns the hosts' networks, a
//! datagram crosses with its TTL decremented once per router, a router answers ping.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::UdpSocket;
use waist_ip::{IpHeader, emit_header};
use waist_router::embed::Embedded;

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn link(name: &str, local: SocketAddr, peer: SocketAddr, cost: bool) -> String {
    let cost = if cost { "cost = 1\n" } else { "" };
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{cost}\n"
    )
}

fn start(text: String) -> Embedded {
    Embedded::start("test.toml", text, false).unwrap()
}

#[tokio::test]
async fn a_chain_of_three_routers_forwards_and_answers() {
    // host A ─ R1 ─ R2 ─ R3 ─ host B
    let (a, r1a, r1b, r2a, r2b, r3a, r3b, b) = (
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
    );
    let dv = "[dv]\ntriggered_ms = 20\nupdate_ms = 200\n";
    let r1 = format!(
        "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n{dv}originate = [\"10.1.0.0/16\"]\n{}{}[[route]]\nprefix = \"10.1.0.0/16\"\nlink = \"host\"\n",
        link("host", r1a, a, false),
        link("r2", r1b, r2a, true)
    );
    let r2 = format!(
        "[node]\nname = \"r2\"\naddresses = [\"10.0.0.2\"]\n{dv}{}{}",
        link("r1", r2a, r1b, true),
        link("r3", r2b, r3a, true)
    );
    let r3 = format!(
        "[node]\nname = \"r3\"\naddresses = [\"10.0.0.3\"]\n{dv}originate = [\"10.3.0.0/16\"]\n{}{}[[route]]\nprefix = \"10.3.0.0/16\"\nlink = \"host\"\n",
        link("r2", r3a, r2b, true),
        link("host", r3b, b, false)
    );
    let host_a = UdpSocket::bind(a).await.unwrap();
    host_a.connect(r1a).await.unwrap();
    let host_b = UdpSocket::bind(b).await.unwrap();
    host_b.connect(r3b).await.unwrap();
    let routers = vec![start(r1), start(r2), start(r3)];
    // Let distance vector converge (triggered updates every 20 ms).
    tokio::time::sleep(Duration::from_millis(600)).await;

    let mut p = vec![0u8; 28];
    emit_header(
        &mut p,
        [10, 1, 0, 5].into(),
        [10, 3, 0, 5].into(),
        17,
        64,
        8,
    )
    .unwrap();
    host_a.send(&p).await.unwrap();
    let mut buf = [0u8; 2048];
    let n = tokio::time::timeout(Duration::from_secs(2), host_b.recv(&mut buf))
        .await
        .expect("delivered")
        .unwrap();
    let h = IpHeader::parse(&buf[..n]).unwrap();
    assert_eq!(
        (h.src, h.dst, h.ttl),
        ([10, 1, 0, 5].into(), [10, 3, 0, 5].into(), 61)
    );

    // Ping R2 from host A: the echo reply comes back through R1.
    let mut ping = [0u8; 40];
    let len = waist_ip::icmp::emit_echo_request(
        [10, 1, 0, 5].into(),
        [10, 0, 0, 2].into(),
        9,
        1,
        b"hello",
        &mut ping,
    )
    .unwrap();
    host_a.send(&ping[..len]).await.unwrap();
    let n = tokio::time::timeout(Duration::from_secs(2), host_a.recv(&mut buf))
        .await
        .expect("echo reply")
        .unwrap();
    let (ip, m) = waist_ip::icmp::read(&buf[..n]).unwrap();
    assert_eq!(
        (ip.src, m.kind, m.body),
        ([10, 0, 0, 2].into(), 0, &b"hello"[..])
    );

    let mut summaries = Vec::new();
    for r in routers {
        summaries.push(r.stop().unwrap());
    }
    for s in &summaries {
        assert!(s.node.balanced(), "{:?}", s.node);
        assert!(s.node.routing > 0, "distance vector spoke: {:?}", s.node);
    }
    // R2 forwarded the datagram and answered the ping itself (delivered, one ICMP sent).
    let r2 = summaries[1].node;
    assert_eq!(
        (r2.forwarded, r2.delivered, r2.icmp_sent),
        (1, 1, 1),
        "{r2:?}"
    );
}
