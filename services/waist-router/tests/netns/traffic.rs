//! Traffic for the netns test: the kernel's ping and curl run in a namespace, a one-shot
//! HTTP server in a namespace, and a flood of random datagrams onto routers' UDP links.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Output;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn, sendto, socket,
};

use crate::env::{Env, in_ns, run};

/// What one run of `ping` said.
#[derive(Debug)]
pub(crate) struct Ping {
    pub(crate) transmitted: u32,
    pub(crate) received: u32,
    /// The TTL of each reply.
    pub(crate) ttls: Vec<u8>,
    /// The loss and rtt summary lines.
    pub(crate) summary: String,
    /// The whole output.
    pub(crate) text: String,
}

/// `ping -c COUNT -i 0.2 -W WAIT DST` from namespace `ns` (a failing ping is a result).
pub(crate) fn ping(ns: &str, dst: &str, count: u32, wait: &str) -> Ping {
    let out = Env::exec(ns, "ping")
        .args(["-n", "-c", &count.to_string(), "-i", "0.2", "-W", wait, dst])
        .output()
        .unwrap_or_else(|e| panic!("cannot run ping: {e}"));
    parse_ping(&out)
}

/// Reads ping's output.
pub(crate) fn parse_ping(out: &Output) -> Ping {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut p = Ping {
        transmitted: 0,
        received: 0,
        ttls: Vec::new(),
        summary: String::new(),
        text: text.clone(),
    };
    for line in text.lines() {
        if let Some(t) = line.split(" ttl=").nth(1) {
            let t = t.split(' ').next().unwrap_or("");
            p.ttls.push(t.parse().unwrap_or(0));
        }
        if line.contains("packets transmitted") {
            let n: Vec<u32> = line
                .split(", ")
                .filter_map(|f| f.split(' ').next()?.parse().ok())
                .collect();
            if let [t, r, ..] = n[..] {
                (p.transmitted, p.received) = (t, r);
            }
            p.summary.push_str(line);
        }
        if line.starts_with("rtt ") {
            p.summary.push_str("; ");
            p.summary.push_str(line);
        }
    }
    p
}

/// `curl URL` from namespace `ns` into a file under `dir`; returns the bytes.
pub(crate) fn curl(ns: &str, url: &str, dir: &Path) -> Vec<u8> {
    curl_within(ns, url, dir, 10)
}

/// [`curl`] allowed `max_secs` for the whole transfer.
pub(crate) fn curl_within(ns: &str, url: &str, dir: &Path, max_secs: u32) -> Vec<u8> {
    let file = dir.join("fetched");
    run(Env::exec(ns, "curl")
        .args(["-sS", "--fail", "--connect-timeout", "10", "--max-time"])
        .arg(max_secs.to_string())
        .arg("-o")
        .arg(&file)
        .arg(url));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// An HTTP/1.0 server in namespace `ns` on `port` that answers one GET with `body`;
/// returns whether it did (accepted within 15 s, then wrote it all).
pub(crate) fn serve_once(
    ns: &str,
    port: u16,
    body: impl AsRef<[u8]> + Send + 'static,
) -> JoinHandle<bool> {
    let listener = in_ns(ns, move || {
        TcpListener::bind(("0.0.0.0", port)).unwrap_or_else(|e| panic!("bind :{port}: {e}"))
    });
    std::thread::spawn(move || {
        listener.set_nonblocking(true).ok();
        let Some((mut s, _)) = crate::env::poll(Duration::from_secs(15), || listener.accept().ok())
        else {
            return false;
        };
        s.set_nonblocking(false).ok();
        s.set_read_timeout(Some(Duration::from_secs(5))).ok();
        let mut req = Vec::new();
        let mut buf = [0u8; 1024];
        while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 16 * 1024 {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return false,
                Ok(n) => req.extend_from_slice(&buf[..n]),
            }
        }
        if !req.starts_with(b"GET ") {
            return false;
        }
        let body = body.as_ref();
        let head = format!(
            "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).is_ok() && s.write_all(body).is_ok()
    })
}

/// One random frame: random bytes, a bogus IPv4 header, a well-formed IPv4 packet to a
/// random address with a random TTL and protocol, a bogus waist shim, or bogus IPv6.
fn random_frame(rng: &mut netsim::Rng) -> Vec<u8> {
    let len = 1 + rng.below(1400) as usize;
    let mut f: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    match rng.below(5) {
        0 => {}
        1 => f[0] = 0x45,
        2 => {
            let payload = rng.below(1000) as usize;
            f.resize(20 + payload, 0);
            let r = rng.next_u64();
            let (src, dst) = (Ipv4Addr::from(r as u32), Ipv4Addr::from((r >> 32) as u32));
            let (proto, ttl) = (rng.next_u64() as u8, rng.next_u64() as u8);
            waist_ip::emit_header(&mut f, src.into(), dst.into(), proto, ttl, payload)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        3 => f[0] = 0xF0 | (f[0] & 0x0F),
        _ => f[0] = 0x60 | (f[0] & 0x0F),
    }
    f
}

/// `frame` as a UDP datagram from `src` to `dst` inside an IPv4 packet (UDP checksum 0).
fn udp_packet(src: SocketAddrV4, dst: SocketAddrV4, frame: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 28 + frame.len()];
    let (s, d): (IpAddr, IpAddr) = ((*src.ip()).into(), (*dst.ip()).into());
    waist_ip::emit_header(&mut p, s, d, 17, 64, 8 + frame.len()).unwrap_or_else(|e| panic!("{e}"));
    let udp_len = (8 + frame.len()) as u16;
    p[20..22].copy_from_slice(&src.port().to_be_bytes());
    p[22..24].copy_from_slice(&dst.port().to_be_bytes());
    p[24..26].copy_from_slice(&udp_len.to_be_bytes());
    p[28..].copy_from_slice(frame);
    p
}

/// Sends `n` random frames to each `(namespace, router's socket, its peer's socket)`, as
/// datagrams from the peer's address and port (a raw socket in the router's namespace:
/// a link's socket takes datagrams from its peer only), and `n` more over the `tool`
/// socket, interleaved and paced at about 7 frames a millisecond. Returns how many went.
pub(crate) fn flood(
    targets: &[(&String, SocketAddrV4, SocketAddrV4)],
    tool: &UdpSocket,
    n: usize,
    seed: u64,
) -> usize {
    let raws: Vec<(OwnedFd, SocketAddrV4, SocketAddrV4)> = targets
        .iter()
        .map(|&(ns, local, peer)| {
            let fd = in_ns(ns, || {
                socket(
                    AddressFamily::Inet,
                    SockType::Raw,
                    SockFlag::empty(),
                    SockProtocol::Raw,
                )
                .unwrap_or_else(|e| panic!("raw socket: {e}"))
            });
            (fd, local, peer)
        })
        .collect();
    let mut rng = netsim::Rng::new(seed);
    let mut sent = 0;
    let start = Instant::now();
    for round in 0..n {
        for (fd, local, peer) in &raws {
            let p = udp_packet(*peer, *local, &random_frame(&mut rng));
            let to = SockaddrIn::from(*local);
            if sendto(fd.as_raw_fd(), &p, &to, MsgFlags::empty()).is_ok() {
                sent += 1;
            }
        }
        if tool.send(&random_frame(&mut rng)).is_ok() {
            sent += 1;
        }
        // Pace: round r goes out no earlier than r ms after the start.
        let due = Duration::from_millis(round as u64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    sent
}
