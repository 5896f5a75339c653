//! The publisher and the subscribers: sockets in this process playing hosts on the
//! router's IP-in-UDP links (as `tests/streams.rs` does), control requests, and timed
//! blocks of messages with a bounded window in flight.

use std::collections::{HashMap, VecDeque};
use std::io::IoSliceMut;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
use stream_handlers::Message;
use stream_handlers::control::ControlMessage;
use stream_handlers::envelope::{Envelope, Request, Status};
use stream_handlers::format::shipped::FlightRecord;
use stream_handlers::rudp::{Header, fragment};
use stream_handlers::spec::Spec;
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// The router's address (its stream node's).
pub(crate) const ROUTER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The publisher's address.
pub(crate) const PUBLISHER: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 10);
/// The stream host's address.
pub(crate) const HOST: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 10);
/// Fragment payload size, bytes.
pub(crate) const FRAGMENT: u16 = 1400;

/// Subscriber `i`'s address.
pub(crate) fn sub_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 3, 0, 1 + i as u8)
}

/// A loopback socket with the router links' buffers (4 MiB asked for), and its quinn-udp
/// state (which turns GRO on).
pub(crate) fn socket() -> anyhow::Result<(UdpSocket, UdpSocketState)> {
    let s = std::net::UdpSocket::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    s.set_nonblocking(true)?;
    let s = UdpSocket::from_std(s)?;
    let state = UdpSocketState::new((&s).into())?;
    let _ = state.set_recv_buffer_size((&s).into(), netio::link::SOCKET_BUFFER);
    let _ = state.set_send_buffer_size((&s).into(), netio::link::SOCKET_BUFFER);
    Ok((s, state))
}

/// recvmmsg slots of a subscriber, each big enough for a whole GRO run.
const SLOTS: usize = 32;
const SLOT_BYTES: usize = 65_536;

/// Reads `s` with recvmmsg/GRO, each datagram's fragment header to `tx` as subscriber `sub`.
async fn subscriber(
    sub: u8,
    s: UdpSocket,
    state: UdpSocketState,
    tx: mpsc::UnboundedSender<Arrival>,
) {
    let mut bufs: Vec<Vec<u8>> = (0..SLOTS).map(|_| vec![0u8; SLOT_BYTES]).collect();
    let mut meta = vec![RecvMeta::default(); SLOTS];
    while s.readable().await.is_ok() {
        loop {
            let r = s.try_io(Interest::READABLE, || {
                let mut slices: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                state.recv((&s).into(), &mut slices, &mut meta)
            });
            let Ok(n) = r else { break };
            let at = Instant::now();
            for (m, buf) in meta.iter().zip(&bufs).take(n) {
                let stride = m.stride.clamp(1, m.len.max(1));
                for d in buf[..m.len].chunks(stride) {
                    let Some(d) = waist_ip::udp::parse_datagram(d) else {
                        continue;
                    };
                    let Ok(h) = Header::parse(d.data) else {
                        continue;
                    };
                    let a = Arrival {
                        sub,
                        stream: h.stream,
                        message: h.message,
                        count: h.count,
                        at,
                    };
                    if tx.send(a).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// How long a block waits without any arrival before it counts what is under way as lost.
const STALL: Duration = Duration::from_millis(300);

/// A fragment that reached a subscriber.
struct Arrival {
    sub: u8,
    stream: u16,
    message: u32,
    count: u16,
    at: Instant,
}

/// One message ready to send: its IP packets, and the subscribers that should get it.
pub(crate) struct Prepared {
    id: u32,
    /// Runs of packets for one sendmsg each, and their stride.
    runs: Vec<(Vec<u8>, usize)>,
    dests: Vec<u8>,
}

/// What a block of messages did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Block {
    /// Messages sent.
    pub(crate) sent: usize,
    /// Messages every subscriber they were for got whole.
    pub(crate) completed: usize,
    /// Messages some subscriber did not get whole.
    pub(crate) lost: usize,
    /// Fragments a subscriber got that the handlers would not have sent it.
    pub(crate) unexpected: usize,
    /// Copies delivered (a message to two subscribers counts twice).
    pub(crate) copies: usize,
    /// From the first send to the last completion.
    pub(crate) elapsed: Duration,
    /// Per completed message, from its first send to its last fragment's arrival.
    pub(crate) latencies: Vec<Duration>,
    /// CPU time used meanwhile by the harness, the router and the host, ns.
    pub(crate) cpu_ns: [u64; 3],
}

impl Block {
    /// Adds `other`'s counts and times to this one.
    pub(crate) fn add(&mut self, other: Block) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.lost += other.lost;
        self.unexpected += other.unexpected;
        self.copies += other.copies;
        self.elapsed += other.elapsed;
        self.latencies.extend(other.latencies);
        for (a, b) in self.cpu_ns.iter_mut().zip(other.cpu_ns) {
            *a += b;
        }
    }
}

/// The publisher (which also sends control requests) and the subscribers.
pub(crate) struct Bench {
    publisher: UdpSocket,
    state: UdpSocketState,
    router: SocketAddr,
    /// Most datagrams in one GSO sendmsg (1: no GSO).
    segments: usize,
    arrivals: mpsc::UnboundedReceiver<Arrival>,
    next_message: HashMap<u16, u32>,
    next_request: u32,
}

impl Bench {
    /// Uses `publisher` (connected to `router`) and starts a reader for each of `subs`;
    /// `gso`: send each message in as few sendmsg calls as UDP GSO allows (else one
    /// datagram a call).
    pub(crate) fn new(
        publisher: (UdpSocket, UdpSocketState),
        router: SocketAddr,
        subs: Vec<(UdpSocket, UdpSocketState)>,
        gso: bool,
    ) -> Bench {
        let (tx, arrivals) = mpsc::unbounded_channel();
        for (i, (s, state)) in subs.into_iter().enumerate() {
            tokio::spawn(subscriber(i as u8, s, state, tx.clone()));
        }
        let segments = if gso {
            publisher.1.max_gso_segments().max(1)
        } else {
            1
        };
        Bench {
            publisher: publisher.0,
            state: publisher.1,
            router,
            segments,
            arrivals,
            next_message: HashMap::new(),
            next_request: 1,
        }
    }

    /// Sends one run of equal-sized datagrams (the last may be shorter) in one sendmsg.
    async fn send_run(&self, contents: &[u8], stride: usize) -> anyhow::Result<()> {
        let t = Transmit {
            destination: self.router,
            ecn: None,
            contents,
            segment_size: (contents.len() > stride).then_some(stride),
            src_ip: None,
        };
        loop {
            self.publisher.writable().await?;
            match self.publisher.try_io(Interest::WRITABLE, || {
                self.state.try_send((&self.publisher).into(), &t)
            }) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn send_udp(&self, dport: u16, data: &[u8]) -> anyhow::Result<()> {
        let p = packet(dport, data)?;
        self.publisher.send(&p).await?;
        Ok(())
    }

    /// Sends `request` for `stream` to the router's control port; the reply.
    pub(crate) async fn request(
        &mut self,
        stream: u16,
        request: Request,
    ) -> anyhow::Result<(Status, String)> {
        let id = self.next_request;
        self.next_request += 1;
        let mut b = Vec::new();
        Envelope {
            stream,
            id,
            request,
        }
        .emit(&mut b);
        self.send_udp(7401, &b).await?;
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut buf = vec![0u8; 70_000];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let n = tokio::time::timeout(left, self.publisher.recv(&mut buf))
                .await
                .context("no reply from the router's control port within 2 s")??;
            let Some(d) = waist_ip::udp::parse_datagram(&buf[..n]) else {
                continue;
            };
            if let Ok(Envelope {
                id: got,
                request: Request::Reply(s, detail),
                ..
            }) = Envelope::parse(d.data)
                && got == id
            {
                return Ok((s, detail));
            }
        }
    }

    /// Sets the provisioned rate of the router's admission (its headroom).
    pub(crate) async fn set_rate(&mut self, rate: u32) -> anyhow::Result<String> {
        let (s, d) = self
            .request(0, Request::Control(ControlMessage::SetRate { rate }))
            .await?;
        if s != Status::Applied {
            bail!("SetRate {rate}: {s:?} {d}");
        }
        Ok(d)
    }

    /// Deploys `spec` on `stream`; fails unless the reply is `want`.
    pub(crate) async fn deploy(
        &mut self,
        stream: u16,
        spec: &str,
        want: Status,
    ) -> anyhow::Result<String> {
        let (s, d) = self.request(stream, Request::Deploy(spec.into())).await?;
        if s != want {
            bail!("deploying stream {stream} ({spec}): wanted {want:?}, got {s:?} ({d})");
        }
        Ok(d)
    }

    /// `count` flight records of `size` bytes for `stream`, fragmented and addressed, with
    /// the subscribers `spec`'s handlers (run here) send each to.
    pub(crate) fn prepare(
        &mut self,
        stream: u16,
        spec: &Spec,
        size: usize,
        count: usize,
    ) -> anyhow::Result<Vec<Prepared>> {
        let mut d = spec.deployment();
        let next = self.next_message.entry(stream).or_insert(1);
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let id = *next;
            *next += 1;
            let m = FlightRecord::generate(id, 0, 3, size)?;
            let mut dests: Vec<u8> = d
                .run(Message::new(0, m.clone()))
                .iter()
                .map(|o| o.dest as u8)
                .collect();
            dests.sort_unstable();
            dests.dedup();
            let packets = fragment(stream, id, id.wrapping_mul(128), &m, FRAGMENT)?
                .iter()
                .map(|f| packet(7400, f))
                .collect::<anyhow::Result<Vec<_>>>()?;
            // A GSO run stays under 64 KiB.
            let stride = packets.first().map_or(1, Vec::len);
            let per_run = self.segments.min(65_000 / stride).max(1);
            let runs = packets
                .chunks(per_run)
                .map(|c| (c.concat(), stride))
                .collect();
            out.push(Prepared { id, runs, dests });
        }
        Ok(out)
    }

    /// Sends `msgs` on `stream` with at most `window` of them under way (sent, and not yet
    /// whole at every subscriber they are for; one for no subscriber is under way until a
    /// later message arrives whole, the link being in order); messages still under way
    /// after [`STALL`] without any arrival count as lost.
    pub(crate) async fn run(
        &mut self,
        stream: u16,
        msgs: &[Prepared],
        window: usize,
    ) -> anyhow::Result<Block> {
        struct Pending {
            sent: Instant,
            /// (subscriber, fragments got, done)
            need: Vec<(u8, u16, bool)>,
            left: usize,
        }
        while self.arrivals.try_recv().is_ok() {}
        let mut b = Block {
            sent: msgs.len(),
            ..Block::default()
        };
        let mut pending: HashMap<u32, Pending> = HashMap::new();
        // Sent for no subscriber, in order.
        let mut quiet: VecDeque<u32> = VecDeque::new();
        let start = Instant::now();
        let mut last = start;
        let mut next = 0;
        let mut stalls = 0;
        loop {
            if pending.is_empty() {
                // Nothing can arrive to show the quiet ones through.
                b.completed += quiet.len();
                quiet.clear();
            }
            while next < msgs.len() && pending.len() + quiet.len() < window.max(1) {
                let m = &msgs[next];
                next += 1;
                let sent = Instant::now();
                for (run, stride) in &m.runs {
                    self.send_run(run, *stride).await?;
                }
                if m.dests.is_empty() {
                    quiet.push_back(m.id);
                    continue;
                }
                pending.insert(
                    m.id,
                    Pending {
                        sent,
                        need: m.dests.iter().map(|&d| (d, 0, false)).collect(),
                        left: m.dests.len(),
                    },
                );
            }
            if pending.is_empty() && next == msgs.len() {
                break;
            }
            let a = match tokio::time::timeout(STALL, self.arrivals.recv()).await {
                Ok(Some(a)) => a,
                Ok(None) => bail!("the subscribers' readers stopped"),
                Err(_) => {
                    stalls += 1;
                    if stalls >= 3 {
                        bail!(
                            "stream {stream}: nothing arrived for {:?} with {} messages under way \
                             (has a daemon stopped?)",
                            STALL * 3,
                            pending.len() + quiet.len()
                        );
                    }
                    b.lost += pending.len();
                    pending.clear();
                    b.completed += quiet.len();
                    quiet.clear();
                    continue;
                }
            };
            if a.stream != stream {
                continue;
            }
            let Some(p) = pending.get_mut(&a.message) else {
                continue;
            };
            let Some(n) = p.need.iter_mut().find(|n| n.0 == a.sub) else {
                b.unexpected += 1;
                continue;
            };
            n.1 += 1;
            if !n.2 && n.1 >= a.count {
                n.2 = true;
                p.left -= 1;
                b.copies += 1;
                if p.left == 0 {
                    stalls = 0;
                    b.latencies.push(a.at.saturating_duration_since(p.sent));
                    b.completed += 1;
                    while quiet.front().is_some_and(|&q| q < a.message) {
                        quiet.pop_front();
                        b.completed += 1;
                    }
                    last = last.max(a.at);
                    pending.remove(&a.message);
                }
            }
        }
        b.elapsed = last.saturating_duration_since(start);
        Ok(b)
    }
}

/// A UDP datagram from the publisher to the router's `dport`, as an IP packet.
fn packet(dport: u16, data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut buf = vec![0u8; 64 + data.len()];
    let n = waist_ip::udp::emit_datagram(
        IpAddr::V4(PUBLISHER),
        IpAddr::V4(ROUTER),
        64,
        40_000,
        dport,
        data,
        &mut buf,
    )
    .map_err(|e| anyhow::anyhow!("building a datagram: {e:?}"))?;
    buf.truncate(n);
    Ok(buf)
}
