//! Forwarding rate on loopback UDP: a generator, the device under test, a sink.
//!
//! ```text
//! forward_rate relay  IN_LOCAL IN_PEER OUT_LOCAL OUT_PEER [--batch]   the ceiling: recv → send, no look
//! forward_rate gen    TO LOCAL SIZE SECONDS [udp|esp|snap]            send IPv4 packets flat out
//! forward_rate sink   LOCAL SECONDS                                   count what arrives; print pps
//! ```
//!
//! The router under test is the real `waist-router` binary with two UDP links and a static
//! route (`benches/forward_rate.sh` writes its config and runs every combination pinned with
//! `taskset`: device under test on one core, generator and sink on the other).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // measurement driver

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

fn arg(i: usize) -> String {
    std::env::args()
        .nth(i)
        .unwrap_or_else(|| panic!("missing argument {i}; see the module docs"))
}

fn addr(i: usize) -> SocketAddr {
    arg(i).parse().unwrap()
}

fn main() {
    match arg(1).as_str() {
        "relay" => relay(
            addr(2),
            addr(3),
            addr(4),
            addr(5),
            std::env::args().any(|a| a == "--batch"),
        ),
        "gen" => generate(
            addr(2),
            addr(3),
            arg(4).parse().unwrap(),
            arg(5).parse().unwrap(),
            std::env::args().nth(6).unwrap_or_else(|| "udp".into()),
        ),
        "sink" => sink(addr(2), arg(3).parse().unwrap()),
        other => panic!("unknown mode {other}"),
    }
}

/// The plain relay: what the I/O path costs with no decision at all.
fn relay(
    in_local: SocketAddr,
    in_peer: SocketAddr,
    out_local: SocketAddr,
    out_peer: SocketAddr,
    batch: bool,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let a = tokio::net::UdpSocket::bind(in_local).await.unwrap();
        a.connect(in_peer).await.unwrap();
        let b = tokio::net::UdpSocket::bind(out_local).await.unwrap();
        b.connect(out_peer).await.unwrap();
        let mut buf = vec![0u8; 65_536];
        if batch {
            let state = quinn_udp::UdpSocketState::new((&a).into()).unwrap();
            let mut bufs: Vec<Vec<u8>> = (0..32).map(|_| vec![0u8; 65_536]).collect();
            let mut meta = vec![quinn_udp::RecvMeta::default(); 32];
            loop {
                a.readable().await.unwrap();
                loop {
                    let r = a.try_io(tokio::io::Interest::READABLE, || {
                        let mut slices: Vec<std::io::IoSliceMut<'_>> = bufs
                            .iter_mut()
                            .map(|b| std::io::IoSliceMut::new(b))
                            .collect();
                        state.recv((&a).into(), &mut slices, &mut meta)
                    });
                    let Ok(n) = r else { break };
                    for (m, buf) in meta.iter().zip(&bufs).take(n) {
                        for d in buf[..m.len].chunks(m.stride.max(1)) {
                            let _ = b.try_send(d);
                        }
                    }
                }
            }
        } else {
            loop {
                let Ok(n) = a.recv(&mut buf).await else {
                    continue;
                };
                let _ = b.try_send(&buf[..n]);
                while let Ok(n) = a.try_recv(&mut buf) {
                    let _ = b.try_send(&buf[..n]);
                }
            }
        }
    });
}

/// IPv4 UDP datagrams of `size` bytes (IP header included) 10.1.0.1 → 10.2.0.1, flat out:
/// with UDP GSO (quinn-udp) a few dozen datagrams a system call, so the generator outruns
/// the device under test.
fn generate(to: SocketAddr, local: SocketAddr, size: usize, seconds: f64, kind: String) {
    let s = UdpSocket::bind(local).unwrap();
    s.connect(to).unwrap();
    let state = quinn_udp::UdpSocketState::new((&s).into()).unwrap();
    s.set_nonblocking(false).unwrap();
    let p = packet(&kind, size);
    let size = p.len();
    let segments = state
        .max_gso_segments()
        .clamp(1, 64)
        .min(65_000 / size)
        .max(1);
    let contents: Vec<u8> = p.iter().copied().cycle().take(size * segments).collect();
    let t = quinn_udp::Transmit {
        destination: to,
        ecn: None,
        contents: &contents,
        segment_size: (segments > 1).then_some(size),
        src_ip: None,
    };
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut sent, mut errors) = (0u64, 0u64);
    let mut last_error = None;
    while Instant::now() < end {
        match state.try_send((&s).into(), &t) {
            Ok(()) => sent += segments as u64,
            Err(e) => {
                errors += 1;
                last_error = Some(e);
            }
        }
    }
    if let Some(e) = last_error {
        eprintln!("{errors} send errors, the last: {e}");
    }
    println!("sent {sent} ({segments} a call)");
}

/// A packet of `kind` 10.1.0.1 → 10.2.0.1 of about `size` bytes: plain UDP; ESP COUNT
/// (dedicated, central context, never over its threshold) padded with payload; SNAP's Fig. 1
/// ping with a payload (in transit at the router: `forw`).
fn packet(kind: &str, size: usize) -> Vec<u8> {
    let (src, dst) = ([10, 1, 0, 1], [10, 2, 0, 1]);
    match kind {
        "esp" => {
            let ep = esp_proto::endpoint::Endpoint::new(7, src.into())
                .with_loc(esp_proto::wire::Loc::CENTRAL);
            let count = esp_proto::instr::Instruction::Count {
                counter: ess::Tag(1),
                thresh: u64::MAX,
            };
            let pad = size.saturating_sub(44);
            ep.packet_to(dst.into(), &count, &vec![0u8; pad]).unwrap()
        }
        "snap" => {
            let pad = size.saturating_sub(120).max(4);
            let ping = snap_vm::paper::ping(src, dst, 7, &vec![0u8; pad], 60_000);
            snap_vm::ip::encapsulate(&ping.to_bytes().unwrap()).unwrap()
        }
        _ => {
            let size = size.max(28);
            let mut p = vec![0u8; size];
            waist_ip::emit_header(&mut p, src.into(), dst.into(), 17, 64, size - 20).unwrap();
            p
        }
    }
}

/// Counts datagrams for `seconds` after the first (recvmmsg and GRO, so the sink is not the
/// bottleneck); prints packets per second.
fn sink(local: SocketAddr, seconds: f64) {
    let s = UdpSocket::bind(local).unwrap();
    let state = quinn_udp::UdpSocketState::new((&s).into()).unwrap();
    // quinn-udp leaves the socket non-blocking; block with a timeout instead.
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut bufs: Vec<Vec<u8>> = (0..32).map(|_| vec![0u8; 65_536]).collect();
    let mut meta = vec![quinn_udp::RecvMeta::default(); 32];
    let mut recv = |timeout: Duration| -> Option<u64> {
        s.set_read_timeout(Some(timeout)).ok()?;
        let mut slices: Vec<std::io::IoSliceMut<'_>> = bufs
            .iter_mut()
            .map(|b| std::io::IoSliceMut::new(b))
            .collect();
        let n = state.recv((&s).into(), &mut slices, &mut meta).ok()?;
        Some(
            meta.iter()
                .take(n)
                .map(|m| m.len.div_ceil(m.stride.max(1)) as u64)
                .sum(),
        )
    };
    if recv(Duration::from_secs(5)).is_none() {
        println!("pps 0");
        return;
    }
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    while Instant::now() < end {
        n += recv(Duration::from_millis(200)).unwrap_or(0);
    }
    let secs = start.elapsed().as_secs_f64();
    println!("pps {:.0}", n as f64 / secs);
}
