//! Failover by packet redirection (the Trickles paper's "instantaneous failover"): a router
//! whose next hop's process died notices at the first refused packet (ICMP port
//! unreachable on its connected UDP link) and sends the rest another way, through a backup
//! static route or through distance vector's next best path, long before any timeout.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use waist_ip::{IpHeader, emit_header};
use waist_router::embed::Embedded;

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn link(name: &str, local: SocketAddr, peer: SocketAddr, extra: &str) -> String {
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{extra}\n"
    )
}

/// A socket at `local` connected to `peer`, reads timing out after `ms`.
fn socket(local: SocketAddr, peer: SocketAddr, ms: u64) -> UdpSocket {
    let s = UdpSocket::bind(local).unwrap();
    s.connect(peer).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
    s
}

/// UDP 10.1.0.5 → `dst` carrying `seq`.
fn packet(dst: [u8; 4], seq: u32) -> Vec<u8> {
    let mut p = vec![0u8; 32];
    emit_header(&mut p, [10, 1, 0, 5].into(), dst.into(), 17, 64, 12).unwrap();
    p[28..32].copy_from_slice(&seq.to_be_bytes());
    p
}

/// The sequence number and TTL of a packet `packet` made, if `s` has one within its timeout.
fn recv(s: &UdpSocket) -> Option<(u32, u8)> {
    let mut buf = [0u8; 2048];
    let n = s.recv(&mut buf).ok()?;
    let h = IpHeader::parse(&buf[..n]).ok()?;
    let seq = u32::from_be_bytes(buf.get(28..32)?.try_into().ok()?);
    Some((seq, h.ttl))
}

/// Whether packet `want` arrives at `s` (older ones still in flight are skipped).
fn recv_seq(s: &UdpSocket, want: u32) -> bool {
    while let Some((got, _)) = recv(s) {
        if got == want {
            return true;
        }
        if got > want {
            return false;
        }
    }
    false
}

#[test]
fn a_static_route_moves_to_its_backup_and_back() {
    // host ─ R ─┬─ replica A (first choice)
    //           └─ replica B (backup)
    let (host, r_in, r_a, a, r_b, b) = (free(), free(), free(), free(), free(), free());
    let holddown = 1000;
    let conf = format!(
        "[node]\nname = \"r\"\naddresses = [\"10.0.0.1\"]\n{}{}{}[[route]]\nprefix = \"10.2.0.80/32\"\nlinks = [\"a\", \"b\"]\n",
        link("host", r_in, host, ""),
        link("a", r_a, a, &format!("holddown_ms = {holddown}")),
        link("b", r_b, b, ""),
    );
    let h = socket(host, r_in, 100);
    let replica_a = socket(a, r_a, 200);
    let replica_b = socket(b, r_b, 100);
    let r = Embedded::start("failover.toml", conf, true).unwrap();
    let dst = [10, 2, 0, 80];

    // Traffic goes to the first link.
    for seq in 0..10 {
        h.send(&packet(dst, seq)).unwrap();
        assert_eq!(recv(&replica_a), Some((seq, 63)), "packet {seq} at A");
    }
    assert_eq!(recv(&replica_b), None);

    // A dies: its first packet is refused by the kernel (port unreachable), the next
    // send reports it and the link goes down; later packets go to B.
    drop(replica_a);
    let mut first_at_b = None;
    for seq in 10..60 {
        h.send(&packet(dst, seq)).unwrap();
        if let Some((got, _)) = recv(&replica_b) {
            first_at_b = Some(got);
            break;
        }
    }
    let first_at_b = first_at_b.expect("traffic moved to B");
    let lost = first_at_b - 10;
    println!("switch to the backup: {lost} packets lost (first at B: {first_at_b})");
    assert!(lost <= 3, "{lost} packets lost in the switch");
    for seq in first_at_b + 1..first_at_b + 10 {
        h.send(&packet(dst, seq)).unwrap();
        assert!(recv_seq(&replica_b, seq), "packet {seq} at B");
    }

    // A starts again on the same port: after the hold-down the link is tried again and
    // traffic returns to it.
    let replica_a = socket(a, r_a, 5);
    let back_from = Instant::now();
    let mut seq = first_at_b + 10;
    let back_after = loop {
        h.send(&packet(dst, seq)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        if let Some((got, _)) = recv(&replica_a) {
            assert!(got <= seq);
            break back_from.elapsed();
        }
        assert!(
            back_from.elapsed() < Duration::from_millis(holddown + 2000),
            "traffic did not return to A"
        );
        let _ = recv(&replica_b);
        seq += 1;
    };
    println!("back to the first choice after {back_after:?} (hold-down {holddown} ms)");
    replica_a
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    for s in seq + 1..seq + 5 {
        h.send(&packet(dst, s)).unwrap();
        assert!(recv_seq(&replica_a, s), "packet {s} back at A");
    }

    let metrics = r.metrics().unwrap();
    let page = {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(metrics).unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        s
    };
    assert!(page.contains("waist_link_up{link=\"a\"} 1"), "{page}");
    assert!(
        page.contains("waist_route{prefix=\"10.2.0.80/32\",link=\"b\",source=\"static\",rank=\"1\",state=\"backup\"}"),
        "{page}"
    );
    let s = r.stop().unwrap();
    let (_, a_counters) = s.links.iter().find(|(n, _)| n == "a").unwrap();
    assert!(a_counters.refused >= 1, "{a_counters:?}");
    assert!(s.node.balanced(), "{:?}", s.node);
}

#[test]
fn distance_vector_reroutes_around_a_dead_router_before_its_timeout() {
    // host A ─ R1 ─ R2 ─ R3 ─ host B, and R1 ─ R3 directly at cost 5: the path through R2
    // (cost 2) is preferred until R2's process dies.
    let (ha, r1h, r1_2, r1_3, r2_1, r2_3, r3_2, r3_1, r3h, hb) = (
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
        free(),
    );
    let timeout_ms = 5000;
    let dv = format!("[dv]\ntriggered_ms = 20\nupdate_ms = 200\ntimeout_ms = {timeout_ms}\n");
    let r1 = format!(
        "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n{dv}{}{}{}",
        link("host", r1h, ha, ""),
        link("r2", r1_2, r2_1, "cost = 1"),
        link("r3", r1_3, r3_1, "cost = 5"),
    );
    let r2 = format!(
        "[node]\nname = \"r2\"\naddresses = [\"10.0.0.2\"]\n{dv}{}{}",
        link("r1", r2_1, r1_2, "cost = 1"),
        link("r3", r2_3, r3_2, "cost = 1"),
    );
    let r3 = format!(
        "[node]\nname = \"r3\"\naddresses = [\"10.0.0.3\"]\n{dv}originate = [\"10.3.0.0/16\"]\n{}{}{}[[route]]\nprefix = \"10.3.0.0/16\"\nlink = \"host\"\n",
        link("r2", r3_2, r2_3, "cost = 1"),
        link("r1", r3_1, r1_3, "cost = 5"),
        link("host", r3h, hb, ""),
    );
    let host_a = socket(ha, r1h, 100);
    let host_b = socket(hb, r3h, 5);
    let (r1, r2, r3) = (
        Embedded::start("r1.toml", r1, false).unwrap(),
        Embedded::start("r2.toml", r2, false).unwrap(),
        Embedded::start("r3.toml", r3, false).unwrap(),
    );
    let dst = [10, 3, 0, 5];
    // Converged: through R2 (three hops, TTL 61).
    let start = Instant::now();
    let mut seq = 0;
    loop {
        host_a.send(&packet(dst, seq)).unwrap();
        seq += 1;
        if recv(&host_b).is_some_and(|(_, ttl)| ttl == 61) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no path through R2"
        );
    }

    let killed = Instant::now();
    let r2_summary = r2.stop().unwrap();
    let stopped = killed.elapsed();
    let rerouted = loop {
        host_a.send(&packet(dst, seq)).unwrap();
        seq += 1;
        if recv(&host_b).is_some_and(|(_, ttl)| ttl == 62) {
            break killed.elapsed();
        }
        assert!(
            killed.elapsed() < Duration::from_millis(timeout_ms),
            "not rerouted before the DV timeout"
        );
    };
    println!(
        "R2 stopped in {stopped:?}; R1 reached R3's prefix directly {rerouted:?} after the kill (DV timeout {timeout_ms} ms)"
    );
    assert!(
        rerouted < Duration::from_millis(timeout_ms / 10),
        "reroute took {rerouted:?}"
    );
    // And it stays there.
    host_b
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    for _ in 0..5 {
        host_a.send(&packet(dst, seq)).unwrap();
        seq += 1;
        assert_eq!(recv(&host_b).map(|x| x.1), Some(62));
    }
    let s1 = r1.stop().unwrap();
    let _ = r3.stop().unwrap();
    let (_, to_r2) = s1.links.iter().find(|(n, _)| n == "r2").unwrap();
    assert!(to_r2.refused >= 1, "{to_r2:?}");
    assert!(r2_summary.node.routing > 0);
}
