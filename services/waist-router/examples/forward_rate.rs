//! Forwarding rate on loopback UDP: a generator, the device under test, a sink.
//!
//! ```text
//! forward_rate relay  IN_LOCAL IN_PEER OUT_LOCAL OUT_PEER [--plain]
//!     the ceiling: recv → send without looking, until killed. Default: recvmmsg + GRO in,
//!     each received run out again as one GSO sendmsg (the I/O a good router does);
//!     --plain: one recv and one send a datagram. Socket buffers as the router's links
//!     (`netio::link::SOCKET_BUFFER`).
//! forward_rate gen    TO LOCAL SIZE SECONDS [udp|esp|snap] [--pps RATE] [--burst N]
//!     IPv4 packets of SIZE bytes for SECONDS, N datagrams a GSO sendmsg (default: as many
//!     as GSO takes, up to 64), paced to RATE packets a second (absent or 0: flat out);
//!     prints `sent PACKETS secs S pps P burst B`.
//! forward_rate sink   LOCAL SECONDS
//!     recvmmsg + GRO; counts every datagram from the first until none came for 0.5 s
//!     (at most SECONDS + 5 s; gives up after 5 s without a first); prints
//!     `total PACKETS secs S pps P drops D` (S from the first datagram to the last; D the
//!     datagrams the kernel dropped at the sink's full queue, from `/proc/net/udp`).
//! ```
//!
//! The router under test is the real `waist-router` binary with two UDP links and a static
//! route (`benches/forward_rate.sh` writes its config and runs every combination pinned with
//! `taskset`: device under test on one core, generator and sink on the other, and reads the
//! device's CPU time around each run).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // measurement driver

use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use quinn_udp::{RecvMeta, Transmit, UdpSocketState};

/// recvmmsg slots, each big enough for a whole GRO run (64 KiB).
const SLOTS: usize = 32;
const SLOT_BYTES: usize = 65_536;
/// The sink stops after this long without a datagram.
const IDLE: Duration = Duration::from_millis(500);

/// The command line: positional arguments, and the value of `--name VALUE` flags.
struct Args {
    positional: Vec<String>,
    flags: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse() -> Args {
        let (mut positional, mut flags) = (Vec::new(), Vec::new());
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            match a.as_str() {
                "--pps" | "--burst" => flags.push((a, Some(it.next().expect("flag value")))),
                _ if a.starts_with("--") => flags.push((a, None)),
                _ => positional.push(a),
            }
        }
        Args { positional, flags }
    }

    fn get(&self, i: usize) -> &str {
        self.positional
            .get(i)
            .unwrap_or_else(|| panic!("missing argument {i}; see the module docs"))
    }

    fn addr(&self, i: usize) -> SocketAddr {
        self.get(i).parse().unwrap()
    }

    fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| n == name)
    }

    fn number(&self, name: &str) -> u64 {
        self.flags
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
            .map_or(0, |v| v.replace('_', "").parse().expect("a number"))
    }
}

fn main() {
    let args = Args::parse();
    match args.get(0) {
        "relay" => relay(
            [args.addr(1), args.addr(2), args.addr(3), args.addr(4)],
            args.flag("--plain"),
        ),
        "gen" => generate(
            args.addr(1),
            args.addr(2),
            args.get(3).parse().unwrap(),
            args.get(4).parse().unwrap(),
            args.positional.get(5).map_or("udp", String::as_str),
            args.number("--pps"),
            args.number("--burst") as usize,
        ),
        "sink" => sink(args.addr(1), args.get(2).parse().unwrap()),
        other => panic!("unknown mode {other}"),
    }
}

/// The socket, or a one-line error and exit (the script shows that line).
fn bound<S>(addr: SocketAddr, r: std::io::Result<S>) -> S {
    r.unwrap_or_else(|e| {
        eprintln!("Error: cannot bind {addr}: {e}");
        std::process::exit(1)
    })
}

/// recvmmsg slots for quinn-udp's `recv`.
fn slots() -> (Vec<Vec<u8>>, Vec<RecvMeta>) {
    (
        (0..SLOTS).map(|_| vec![0u8; SLOT_BYTES]).collect(),
        vec![RecvMeta::default(); SLOTS],
    )
}

fn io_slices(bufs: &mut [Vec<u8>]) -> Vec<IoSliceMut<'_>> {
    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect()
}

/// Datagrams in one received slot (a GRO run holds `len / stride`, the last maybe short).
fn datagrams(m: &RecvMeta) -> u64 {
    m.len.div_ceil(m.stride.max(1)) as u64
}

/// The relay: what the I/O path costs with no decision at all, on tokio like the router and
/// with the router's socket buffers.
fn relay([in_local, in_peer, out_local, out_peer]: [SocketAddr; 4], plain: bool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let a = bound(in_local, tokio::net::UdpSocket::bind(in_local).await);
        a.connect(in_peer).await.unwrap();
        let b = bound(out_local, tokio::net::UdpSocket::bind(out_local).await);
        b.connect(out_peer).await.unwrap();
        // The socket buffers the router's links ask for (the kernel caps them at
        // net.core.{r,w}mem_max).
        for s in [&a, &b] {
            use nix::sys::socket::{setsockopt, sockopt};
            let _ = setsockopt(s, sockopt::RcvBuf, &netio::link::SOCKET_BUFFER);
            let _ = setsockopt(s, sockopt::SndBuf, &netio::link::SOCKET_BUFFER);
        }
        if plain {
            let mut buf = vec![0u8; SLOT_BYTES];
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
        // quinn-udp turns GRO on for `a`; `b` only sends.
        let rx = UdpSocketState::new((&a).into()).unwrap();
        let tx = UdpSocketState::new((&b).into()).unwrap();
        let (mut bufs, mut meta) = slots();
        loop {
            a.readable().await.unwrap();
            loop {
                let r = a.try_io(tokio::io::Interest::READABLE, || {
                    rx.recv((&a).into(), &mut io_slices(&mut bufs), &mut meta)
                });
                let Ok(n) = r else { break };
                for (m, buf) in meta.iter().zip(&bufs).take(n) {
                    let stride = m.stride.clamp(1, m.len.max(1));
                    // One sendmsg per received run (cut at what GSO takes in one call).
                    let run = stride * tx.max_gso_segments().max(1);
                    for contents in buf[..m.len].chunks(run) {
                        let t = Transmit {
                            destination: out_peer,
                            ecn: None,
                            contents,
                            segment_size: (contents.len() > stride).then_some(stride),
                            src_ip: None,
                        };
                        // Dropped when the socket is full or the sink is not there.
                        let _ = tx.try_send((&b).into(), &t);
                    }
                }
            }
        }
    });
}

/// IPv4 packets of `size` bytes (IP header included) 10.1.0.1 → 10.2.0.1 for `seconds`,
/// `burst` datagrams a sendmsg with UDP GSO (quinn-udp; 0: as many as GSO takes, up to 64),
/// paced to `pps` packets a second (0: flat out). Pacing sleeps, never spins: the generator
/// shares its core with the sink. Each run is due at its slot on a fixed schedule, so a
/// late wake-up sends the runs it owes at once and the average rate stays `pps`; after a
/// stall of over 1 ms (the generator's core taken away) the schedule restarts instead of
/// bursting to catch up, so no burst is longer than 1 ms of traffic.
fn generate(
    to: SocketAddr,
    local: SocketAddr,
    size: usize,
    seconds: f64,
    kind: &str,
    pps: u64,
    burst: usize,
) {
    let s = bound(local, UdpSocket::bind(local));
    s.connect(to).unwrap();
    let state = UdpSocketState::new((&s).into()).unwrap();
    s.set_nonblocking(false).unwrap();
    let p = packet(kind, size);
    let size = p.len();
    let most = state
        .max_gso_segments()
        .clamp(1, 64)
        .min(65_000 / size)
        .max(1);
    let segments = if burst == 0 { most } else { burst.min(most) };
    let contents: Vec<u8> = p.iter().copied().cycle().take(size * segments).collect();
    let t = Transmit {
        destination: to,
        ecn: None,
        contents: &contents,
        segment_size: (segments > 1).then_some(size),
        src_ip: None,
    };
    let interval = (pps > 0).then(|| Duration::from_secs_f64(segments as f64 / pps as f64));
    // Wake on time: the default timer slack (50 µs) would make the runs come in pairs.
    let _ = std::fs::write("/proc/self/timerslack_ns", "1");
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut due = start;
    let (mut sent, mut errors) = (0u64, 0u64);
    let mut last_error = None;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if let Some(interval) = interval {
            if now < due {
                std::thread::sleep(due - now);
                continue;
            }
            if now - due > Duration::from_millis(1) {
                due = now;
            }
            due += interval;
        }
        match state.try_send((&s).into(), &t) {
            Ok(()) => sent += segments as u64,
            Err(e) => {
                errors += 1;
                last_error = Some(e);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    if let Some(e) = last_error {
        eprintln!("{errors} send errors, the last: {e}");
    }
    println!(
        "sent {sent} secs {secs:.3} pps {:.0} burst {segments}",
        sent as f64 / secs
    );
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
        "udp" => {
            let size = size.max(28);
            let mut p = vec![0u8; size];
            waist_ip::emit_header(&mut p, src.into(), dst.into(), 17, 64, size - 20).unwrap();
            p
        }
        other => panic!("unknown packet kind {other}: udp, esp or snap"),
    }
}

/// Counts datagrams from the first until none came for [`IDLE`] (recvmmsg and GRO, so the
/// sink is not the bottleneck; non-blocking, so each call returns what is queued and the
/// last datagram's time is when it came); prints the total and the rate between the first
/// and the last.
fn sink(local: SocketAddr, seconds: f64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let s = bound(local, tokio::net::UdpSocket::bind(local).await);
        let state = UdpSocketState::new((&s).into()).unwrap();
        // A deep queue: the sink shares its core with the generator and must not drop.
        let _ = state.set_recv_buffer_size((&s).into(), 4 << 20);
        let (mut bufs, mut meta) = slots();
        let (mut total, mut first, mut last) = (0u64, None, Instant::now());
        let mut wait = Duration::from_secs(5);
        let mut cap = Instant::now() + wait;
        while Instant::now() < cap {
            if tokio::time::timeout(wait, s.readable()).await.is_err() {
                break; // idle
            }
            while let Ok(n) = s.try_io(tokio::io::Interest::READABLE, || {
                state.recv((&s).into(), &mut io_slices(&mut bufs), &mut meta)
            }) {
                total += meta.iter().take(n).map(datagrams).sum::<u64>();
                last = Instant::now();
                if first.is_none() {
                    first = Some(last);
                    cap = last + Duration::from_secs_f64(seconds + 5.0);
                    wait = IDLE;
                }
            }
        }
        let secs = first.map_or(0.0, |f| (last - f).as_secs_f64());
        let pps = if secs > 0.0 { total as f64 / secs } else { 0.0 };
        let drops = udp_drops(s.local_addr().unwrap().port());
        println!("total {total} secs {secs:.3} pps {pps:.0} drops {drops}");
    });
}

/// What the kernel dropped for want of room in the queue of the IPv4 UDP socket bound to
/// `port` (the last column of `/proc/net/udp`; 0 if not found).
fn udp_drops(port: u16) -> u64 {
    let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    let local = format!(":{port:04X}");
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(1).is_some_and(|a| a.ends_with(&local)))
        .and_then(|f| f.last()?.parse().ok())
        .unwrap_or(0)
}
