//! Two `waist-router` processes with IPv6 addresses only, named to distance vector by
//! `[dv] router_id`, joined by an IP-in-UDP link on loopback; a host at each end played by
//! a UDP socket. Each learns the other's IPv6 network, and an IPv6 datagram from one host
//! reaches the other with its hop limit decremented once per router.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use waist_ip::{IpHeader, emit_header};

const BIN: &str = env!("CARGO_BIN_EXE_waist-router");

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

/// A router process, stopped when dropped (a failing test leaves none behind).
struct Router(Child);

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(dir: &Path, name: &str, text: &str) -> Router {
    let p: PathBuf = dir.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    let check = Command::new(BIN)
        .args(["--check", "--config"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(check.status.success(), "{name}: {check:?}");
    Router(
        Command::new(BIN)
            .arg("--config")
            .arg(&p)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

fn link(name: &str, local: SocketAddr, peer: SocketAddr, cost: bool) -> String {
    let cost = if cost { "cost = 1\n" } else { "" };
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{cost}\n"
    )
}

fn router(
    name: &str,
    (addr, id, lan): (&str, &str, &str),
    host: (SocketAddr, SocketAddr),
    peer: (SocketAddr, SocketAddr),
) -> String {
    format!(
        "[node]\nname = \"{name}\"\naddresses = [\"{addr}\"]\n\n[dv]\nrouter_id = \"{id}\"\n\
         originate = [\"{lan}\"]\ntriggered_ms = 20\nupdate_ms = 200\n\n{}{}\
         [[route]]\nprefix = \"{lan}\"\nlink = \"host\"\n",
        link("host", host.0, host.1, false),
        link("peer", peer.0, peer.1, true),
    )
}

#[test]
fn ipv6_only_routers_named_by_router_id_route_an_ipv6_datagram() {
    let dir = std::env::temp_dir().join(format!("waist-router-ipv6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // host A ─ R1 ─ R2 ─ host B
    let (a, r1a, r1b, r2a, r2b, b) = (free(), free(), free(), free(), free(), free());
    let host_a = UdpSocket::bind(a).unwrap();
    host_a.connect(r1a).unwrap();
    let host_b = UdpSocket::bind(b).unwrap();
    host_b.connect(r2b).unwrap();
    host_b
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let r1 = router(
        "r1",
        ("fd00::1", "1.1.1.1", "fd00:a::/64"),
        (r1a, a),
        (r1b, r2a),
    );
    let r2 = router(
        "r2",
        ("fd00::2", "2.2.2.2", "fd00:b::/64"),
        (r2b, b),
        (r2a, r1b),
    );
    let _routers = [start(&dir, "r1", &r1), start(&dir, "r2", &r2)];

    let (src, dst): (Ipv6Addr, Ipv6Addr) =
        ("fd00:a::5".parse().unwrap(), "fd00:b::9".parse().unwrap());
    let mut p = vec![0u8; 40 + 8];
    emit_header(&mut p, src.into(), dst.into(), 17, 64, 8).unwrap();
    // Until distance vector has converged the datagram is unroutable at R1: send again
    // until one arrives (generous, for a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 2048];
    let n = loop {
        assert!(Instant::now() < deadline, "no IPv6 datagram crossed");
        host_a.send(&p).unwrap();
        if let Ok(n) = host_b.recv(&mut buf) {
            break n;
        }
    };
    let h = IpHeader::parse(&buf[..n]).unwrap();
    assert_eq!((h.src, h.dst, h.ttl), (src.into(), dst.into(), 62));
    let _ = std::fs::remove_dir_all(&dir);
}
