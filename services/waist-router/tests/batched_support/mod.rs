//! What the tests in `batched.rs` share: routers started in-process, IPv4 packets that
//! say which they are, a GSO generator, sinks that keep every datagram (with GRO or
//! without), a flood, and the metrics page.

use std::collections::BTreeMap;
use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netio::link::LinkCounters;
use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
use waist_ip::{IpHeader, emit_header};
use waist_router::Summary;
use waist_router::embed::Embedded;

/// How long any wait for traffic may take before the test gives up (a loaded 2-core
/// machine is slow, but not this slow).
pub(crate) const PATIENCE: Duration = Duration::from_secs(15);

/// The generator's source and the sink's destination (routed `out` by 10.2.0.0/16).
pub(crate) const SRC: [u8; 4] = [10, 1, 0, 1];
pub(crate) const DST: [u8; 4] = [10, 2, 0, 1];
/// The shortest packet [`packet`] makes: IPv4 and UDP headers and the sequence number.
pub(crate) const MIN_PACKET: usize = 32;

/// A free loopback UDP address, never the same one twice in this process.
pub(crate) fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

/// A `[[link]]` section; `batch = true` as older configs have it.
pub(crate) fn link(name: &str, local: SocketAddr, peer: SocketAddr, extra: &str) -> String {
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\nbatch = true\n{extra}\n"
    )
}

/// A router with `links` and a route for each `(prefix, link)`, serving metrics.
pub(crate) fn router(links: &[String], routes: &[(&str, &str)]) -> Embedded {
    let mut text = "[node]\nname = \"r\"\naddresses = [\"10.0.0.1\"]\n\n".to_string();
    for l in links {
        text.push_str(l);
    }
    for (prefix, link) in routes {
        text.push_str(&format!(
            "[[route]]\nprefix = \"{prefix}\"\nlink = \"{link}\"\n\n"
        ));
    }
    Embedded::start("batched.toml", text, true).unwrap()
}

/// A valid IPv4 UDP packet 10.1.0.1 → 10.2.0.1 of `len` bytes (at least [`MIN_PACKET`])
/// carrying `seq` after the UDP header, the rest of its payload a pattern of `seq`.
pub(crate) fn packet(seq: u32, len: usize) -> Vec<u8> {
    assert!(
        (MIN_PACKET..=65_535).contains(&len),
        "packet of {len} bytes"
    );
    let mut p = vec![0u8; len];
    emit_header(&mut p, SRC.into(), DST.into(), 17, 64, len - 20).unwrap();
    let udp_len = u16::try_from(len - 20).unwrap();
    p[20..22].copy_from_slice(&4000u16.to_be_bytes());
    p[22..24].copy_from_slice(&5000u16.to_be_bytes());
    p[24..26].copy_from_slice(&udp_len.to_be_bytes());
    // p[26..28]: UDP checksum 0, "none" in IPv4.
    p[28..32].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p[32..].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_mul(31).wrapping_add(i) as u8;
    }
    p
}

/// The sequence number of `got`, a packet the router forwarded, if it is the packet sent
/// with that number (`sent`) with its TTL one lower, a valid header checksum and every
/// other byte as sent; what is wrong with it if not.
pub(crate) fn forwarded(got: &[u8], sent: &BTreeMap<u32, Vec<u8>>) -> Result<u32, String> {
    let head = &got[..got.len().min(40)];
    let h = IpHeader::parse(got).map_err(|e| format!("{e:?}: {head:02x?}"))?;
    if h.total_len != got.len() {
        return Err(format!(
            "IP length {} in a datagram of {} bytes: {head:02x?}",
            h.total_len,
            got.len()
        ));
    }
    let seq = u32::from_be_bytes(got[28..32].try_into().unwrap());
    let orig = sent
        .get(&seq)
        .ok_or_else(|| format!("sequence number {seq} never sent: {head:02x?}"))?;
    if orig.len() != got.len() {
        return Err(format!(
            "packet {seq}: {} bytes, sent {}",
            got.len(),
            orig.len()
        ));
    }
    if got[8] != orig[8] - 1 {
        return Err(format!("packet {seq}: TTL {}, sent {}", got[8], orig[8]));
    }
    if got[..8] != orig[..8] || got[9] != orig[9] || got[12..] != orig[12..] {
        return Err(format!("packet {seq}: bytes changed: {head:02x?}"));
    }
    Ok(seq)
}

/// A connected loopback socket that sends with quinn-udp (UDP GSO), non-blocking.
pub(crate) fn generator(to: SocketAddr) -> (UdpSocket, UdpSocketState) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let state = UdpSocketState::new((&s).into()).unwrap();
    s.connect(to).unwrap();
    (s, state)
}

/// Sends `packets` (all of one length but the last, which may be shorter) in ONE
/// `sendmsg`: with UDP GSO when there are several. Waits out a full socket.
pub(crate) fn send_run(s: &UdpSocket, state: &UdpSocketState, packets: &[Vec<u8>]) {
    let contents = packets.concat();
    let t = Transmit {
        destination: s.peer_addr().unwrap(),
        ecn: None,
        contents: &contents,
        segment_size: (packets.len() > 1).then_some(packets[0].len()),
        src_ip: None,
    };
    let start = Instant::now();
    loop {
        match state.try_send(s.into(), &t) {
            Ok(()) => return,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && start.elapsed() < PATIENCE => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("sending a run of {}: {e}", packets.len()),
        }
    }
}

/// Whether `done` holds within `timeout` (checked every millisecond).
pub(crate) fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What a [`Sink`] received.
#[derive(Debug, Default)]
pub(crate) struct Received {
    /// Every datagram, in order (a GRO message split by its stride).
    pub(crate) datagrams: Vec<Vec<u8>>,
    /// Messages the kernel handed over (a GRO run is one).
    pub(crate) messages: usize,
}

/// A loopback socket that collects every datagram sent to it, on its own thread: with GRO
/// on (quinn-udp's `recvmmsg`, each message split by its stride) or a plain socket (the
/// kernel segments GSO runs for it).
pub(crate) struct Sink {
    pub(crate) addr: SocketAddr,
    got: Arc<Mutex<Received>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sink {
    pub(crate) fn start(gro: bool) -> Sink {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        // quinn-udp turns GRO on (and makes the socket non-blocking).
        let state = gro.then(|| UdpSocketState::new((&sock).into()).unwrap());
        sock.set_nonblocking(true).unwrap();
        let addr = sock.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Received::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, st) = (got.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let s = tokio::net::UdpSocket::from_std(sock).unwrap();
                let mut bufs = vec![vec![0u8; 65_536]; 32];
                let mut meta = vec![RecvMeta::default(); 32];
                while !st.load(Ordering::Relaxed) {
                    let ready = tokio::time::timeout(Duration::from_millis(20), s.readable());
                    if ready.await.is_err() {
                        continue;
                    }
                    loop {
                        let r = match &state {
                            Some(state) => s.try_io(tokio::io::Interest::READABLE, || {
                                let mut slices: Vec<IoSliceMut<'_>> =
                                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                                state.recv((&s).into(), &mut slices, &mut meta)
                            }),
                            None => s.try_recv(&mut bufs[0]).map(|len| {
                                meta[0].len = len;
                                meta[0].stride = len;
                                1
                            }),
                        };
                        let Ok(n) = r else { break };
                        let mut got = g.lock().unwrap();
                        for (m, buf) in meta.iter().zip(&bufs).take(n) {
                            got.messages += 1;
                            if m.len == 0 {
                                got.datagrams.push(Vec::new());
                                continue;
                            }
                            for d in buf[..m.len].chunks(m.stride.clamp(1, m.len)) {
                                got.datagrams.push(d.to_vec());
                            }
                        }
                    }
                }
            });
        });
        Sink {
            addr,
            got,
            stop,
            thread: Some(thread),
        }
    }

    /// Datagrams received so far.
    pub(crate) fn count(&self) -> usize {
        self.got.lock().unwrap().datagrams.len()
    }

    /// Whether it has `n` datagrams within [`PATIENCE`].
    pub(crate) fn wait_for(&self, n: usize) -> bool {
        wait_until(PATIENCE, || self.count() >= n)
    }

    /// Stops it; what it received.
    pub(crate) fn finish(mut self) -> Received {
        self.halt();
        std::mem::take(&mut *self.got.lock().unwrap())
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Link `name`'s counters in `s`.
pub(crate) fn counters(s: &Summary, name: &str) -> LinkCounters {
    s.links
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, c)| *c)
        .unwrap_or_else(|| panic!("no link {name} in {s:?}"))
}

/// The metrics page at `addr`, if it answers within `timeout`.
pub(crate) fn try_scrape(addr: SocketAddr, timeout: Duration) -> io::Result<String> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr)?;
    c.set_read_timeout(Some(timeout))?;
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")?;
    let mut s = String::new();
    c.read_to_string(&mut s)?;
    Ok(s)
}

/// The metrics page of `r`.
pub(crate) fn scrape(r: &Embedded) -> String {
    try_scrape(r.metrics().unwrap(), PATIENCE).unwrap()
}

/// The value of sample `key` (name with labels, as rendered) on a metrics `page`.
pub(crate) fn metric(page: &str, key: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A thread sending GSO runs of 1400-byte packets (10.1.0.1 → 10.2.0.1) on a connected
/// socket as fast as it takes them, until stopped.
pub(crate) struct Flood {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Flood {
    pub(crate) fn start(sock: UdpSocket, state: UdpSocketState) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let (st, n) = (stop.clone(), sent.clone());
        let thread = std::thread::spawn(move || {
            let size = 1400;
            let segments = state.max_gso_segments().clamp(1, 64).min(65_000 / size);
            let contents: Vec<u8> = (0..segments as u32).flat_map(|k| packet(k, size)).collect();
            let t = Transmit {
                destination: sock.peer_addr().unwrap(),
                ecn: None,
                contents: &contents,
                segment_size: (segments > 1).then_some(size),
                src_ip: None,
            };
            while !st.load(Ordering::Relaxed) {
                match state.try_send((&sock).into(), &t) {
                    Ok(()) => {
                        n.fetch_add(segments as u64, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                    Err(e) => panic!("flood: {e}"),
                }
            }
        });
        Flood {
            stop,
            sent,
            thread: Some(thread),
        }
    }

    /// Stops it; the packets it sent.
    pub(crate) fn stop(mut self) -> u64 {
        self.halt();
        self.sent.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.halt();
    }
}
