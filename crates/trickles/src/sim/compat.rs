//! The client's TCP fallback on `netsim` links: one [`Connection`] fetching an object
//! from a Trickles server or from a TCP-only server (smoltcp's socket), over whole IPv4
//! packets.
//!
//! The application is the one of [`run`](super::run): the client's stream starts with
//! the object's length (8 bytes, big-endian) and byte `i` of the object is
//! [`object_byte`]`(i)`. Both servers record the client's stream as they received it, so
//! a run shows whether the bytes written before and after `connect` arrived.
//!
//! ```text
//!   server (Trickles or TCP) ── first link (fwd loss) ──► client (Connection)
//!                            ◄── second link (rev loss) ──
//! ```

use alloc::vec;
use alloc::vec::Vec;

use netsim::{Instant, Node, Outbox, Simulator};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::Instant as SmolInstant;
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr};

use super::tcp_baseline::SimDevice;
use super::{CLIENT_ADDR, SERVER_ADDR, Transfer, object_byte, sim_keys};
use crate::compat::{CompatConfig, Connection, Mode};
use crate::conn::{Addr, FourTuple};
use crate::ip;
use crate::server::{EventKind, Server, ServerConfig};
use crate::wire::WireError;

/// The server's port.
const SERVER_PORT: u16 = 80;
/// The client's port.
const CLIENT_PORT: u16 = 40000;

/// Which server the client meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// The stateless Trickles server.
    Trickles,
    /// smoltcp's TCP socket listening on port 80, with no idea of Trickles.
    Tcp,
}

/// One write of the client application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// [`Connection::send_data`].
    Data(Vec<u8>),
    /// [`Connection::request`].
    Request(Vec<u8>),
}

/// What the client application writes: `before` connecting, with
/// [`Connection::connect`], and `after` it. The stream must start with the object's
/// length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// Writes before `connect`.
    pub before: Vec<Write>,
    /// `connect`'s data.
    pub connect: Vec<u8>,
    /// Writes right after `connect`.
    pub after: Vec<Write>,
}

impl Script {
    /// Fetches `len` bytes: the first three bytes of the length are written with
    /// `send_data` before `connect`, the other five with `connect`, and `upload` bytes
    /// (byte `i` is `object_byte(UPLOAD_BASE + i)`) follow after it.
    pub fn fetch(len: u64, upload: u64) -> Script {
        let len = len.to_be_bytes();
        let upload = (0..upload)
            .map(|i| object_byte(super::UPLOAD_BASE + i))
            .collect();
        Script {
            before: vec![Write::Data(len[..3].to_vec())],
            connect: len[3..].to_vec(),
            after: vec![Write::Data(upload)],
        }
    }
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct FallbackOutcome {
    /// The client's mode at the end.
    pub mode: Mode,
    /// Whether the client received the whole object.
    pub complete: bool,
    /// Whether the bytes read were exactly the object's.
    pub byte_exact: bool,
    /// Bytes read.
    pub received: u64,
    /// Simulated time when the last byte was read (or the limit).
    pub elapsed_us: u64,
    /// Simulated time when the first byte was read.
    pub first_byte_us: Option<u64>,
    /// The client's stream as the server application received it (gaps as zeros).
    pub server_stream: Vec<u8>,
    /// The data of the SYN the Trickles server opened the connection with (empty for the
    /// TCP server).
    pub syn_data: Vec<u8>,
    /// Segments the Trickles server ignored as not Trickles (plain TCP).
    pub plain_tcp_at_server: u64,
    /// Whether the client saw a reset.
    pub reset: bool,
}

/// The Trickles object server, speaking whole IPv4 packets.
struct TricklesHost {
    server: alloc::boxed::Box<Server>,
    /// Client data received with a stream offset, repeats included.
    inbox: Vec<(u64, Vec<u8>)>,
    syn_data: Vec<u8>,
    plain: u64,
}

impl TricklesHost {
    fn serve(&mut self, now: Instant, packet: &[u8], out: &mut Outbox) {
        let Some((src, dst, segment)) = ip::unwrap(packet) else {
            return;
        };
        let reply = match self.server.handle_request(now, src, dst, segment) {
            Ok(r) => r,
            Err(crate::server::Rejected::Wire(WireError::NotTrickles)) => {
                self.plain += 1;
                return;
            }
            Err(_) => return,
        };
        if let Some(offset) = reply.event.data_offset {
            self.inbox.push((offset, reply.event.data.to_vec()));
        }
        if reply.event.kind == EventKind::Open && self.syn_data.is_empty() {
            self.syn_data = reply.event.data.to_vec();
        }
        let Some(len) = super::object_len(&reply.event) else {
            return;
        };
        let tuple = reply.event.tuple;
        let mut buf = vec![0u8; 2048];
        let ucont = len.to_be_bytes();
        let mut data = Vec::new();
        for resp in &reply.responses {
            let eos = super::object_data(resp, len, &mut data);
            if let Ok(n) = self.server.emit(&tuple, resp, &ucont, &data, eos, &mut buf)
                && let Some(p) = ip::wrap(
                    &tuple.server_addr,
                    &tuple.client_addr,
                    buf.get(..n).unwrap_or_default(),
                )
            {
                out.send(0, p);
            }
        }
    }

    fn stream(&self) -> Vec<u8> {
        let end = self
            .inbox
            .iter()
            .map(|(o, d)| o + d.len() as u64)
            .max()
            .unwrap_or(0);
        let mut stream = vec![0u8; usize::try_from(end).unwrap_or(0)];
        for (offset, data) in &self.inbox {
            let start = usize::try_from(*offset).unwrap_or(usize::MAX);
            if let Some(dst) = stream.get_mut(start..start.saturating_add(data.len())) {
                dst.copy_from_slice(data);
            }
        }
        stream
    }
}

/// smoltcp's TCP socket serving the object: reads the stream, writes the object once the
/// length has arrived, closes when it has written it.
struct TcpServerHost {
    iface: Interface,
    device: SimDevice,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    stream: Vec<u8>,
    written: u64,
    next_poll: Option<u64>,
}

impl TcpServerHost {
    fn new(seed: u64) -> Self {
        let mut device = SimDevice::new(1500);
        let mut config = Config::new(HardwareAddress::Ip);
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut device, SmolInstant::ZERO);
        let [a, b, c, d] = SERVER_ADDR;
        iface.update_ip_addrs(|addrs| {
            let _ = addrs.push(IpCidr::new(IpAddress::v4(a, b, c, d), 24));
        });
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 256 << 10]),
            tcp::SocketBuffer::new(vec![0; 256 << 10]),
        );
        socket.set_congestion_control(tcp::CongestionControl::Reno);
        let _ = socket.listen(SERVER_PORT);
        let mut sockets = SocketSet::new(Vec::new());
        let handle = sockets.add(socket);
        TcpServerHost {
            iface,
            device,
            sockets,
            handle,
            stream: Vec::new(),
            written: 0,
            next_poll: None,
        }
    }

    /// Moves the stream in and the object out; returns whether anything moved.
    fn app(&mut self) -> bool {
        let socket = self.sockets.get_mut::<tcp::Socket<'static>>(self.handle);
        let mut moved = false;
        while socket.can_recv() {
            let stream = &mut self.stream;
            let n = socket
                .recv(|buf| {
                    stream.extend_from_slice(buf);
                    (buf.len(), buf.len())
                })
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            moved = true;
        }
        let Some(len) = self
            .stream
            .first_chunk::<8>()
            .map(|b| u64::from_be_bytes(*b))
        else {
            return moved;
        };
        while self.written < len && socket.can_send() {
            let start = self.written;
            let n = socket
                .send(|buf| {
                    let n = buf
                        .len()
                        .min(usize::try_from(len - start).unwrap_or(usize::MAX));
                    for (i, b) in buf.iter_mut().take(n).enumerate() {
                        *b = object_byte(start + i as u64);
                    }
                    (n, n)
                })
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            self.written += n as u64;
            moved = true;
        }
        if self.written == len && socket.may_send() {
            socket.close();
            moved = true;
        }
        moved
    }

    fn drive(&mut self, now: Instant, out: &mut Outbox) {
        let ts = SmolInstant::from_micros(i64::try_from(now.ticks()).unwrap_or(i64::MAX));
        for _ in 0..16 {
            self.iface.poll(ts, &mut self.device, &mut self.sockets);
            if !self.app() {
                break;
            }
        }
        for packet in self.device.take_transmitted() {
            out.send(0, packet);
        }
        self.next_poll = self.iface.poll_at(ts, &self.sockets).map(|at| {
            u64::try_from(at.total_micros())
                .unwrap_or(0)
                .max(now.ticks() + 1)
        });
    }
}

/// A host of the fallback network.
enum FallbackHost {
    Trickles(TricklesHost),
    Tcp(alloc::boxed::Box<TcpServerHost>),
    Client {
        conn: alloc::boxed::Box<Connection>,
        received: Vec<u8>,
        first_byte_at: Option<u64>,
    },
}

impl FallbackHost {
    fn flush(conn: &mut Connection, out: &mut Outbox) {
        while let Some(packet) = conn.poll_transmit() {
            out.send(1, packet);
        }
    }

    fn read(conn: &mut Connection, received: &mut Vec<u8>, first: &mut Option<u64>, now: u64) {
        let mut buf = [0u8; 4096];
        loop {
            let n = conn.read(&mut buf);
            if n == 0 {
                break;
            }
            first.get_or_insert(now);
            received.extend_from_slice(buf.get(..n).unwrap_or_default());
        }
    }
}

impl Node for FallbackHost {
    fn handle_packet(&mut self, now: Instant, _iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        match self {
            FallbackHost::Trickles(h) => h.serve(now, &packet, out),
            FallbackHost::Tcp(h) => {
                h.device.push_received(packet);
                h.drive(now, out);
            }
            FallbackHost::Client {
                conn,
                received,
                first_byte_at,
            } => {
                let _ = conn.handle_packet(now, &packet);
                FallbackHost::read(conn, received, first_byte_at, now.ticks());
                FallbackHost::flush(conn, out);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        match self {
            FallbackHost::Tcp(h) => h.drive(now, out),
            FallbackHost::Client {
                conn,
                received,
                first_byte_at,
            } => {
                conn.handle_timeout(now);
                FallbackHost::read(conn, received, first_byte_at, now.ticks());
                FallbackHost::flush(conn, out);
            }
            FallbackHost::Trickles(_) => {}
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            FallbackHost::Tcp(h) => h.next_poll.map(Instant::from_ticks),
            FallbackHost::Client { conn, .. } => conn.poll_timeout(),
            FallbackHost::Trickles(_) => None,
        }
    }
}

fn apply(conn: &mut Connection, writes: &[Write]) {
    for w in writes {
        match w {
            Write::Data(d) => conn.send_data(d),
            Write::Request(d) => conn.request(d),
        }
    }
}

/// Runs one [`Connection`] (default [`CompatConfig`]) writing `script` to `peer` over the
/// two lossy links of `t` (`t.object_len` and `t.upload_len` are ignored: the script
/// says what is fetched and uploaded). The run ends when the client has the whole object
/// and has delivered everything it wrote, or at `t.time_limit_us`.
pub fn run_fallback(t: &Transfer, peer: Peer, script: &Script) -> FallbackOutcome {
    let mut sim: Simulator<FallbackHost> = Simulator::new(t.seed);
    let srv = sim.add_node(match peer {
        Peer::Trickles => FallbackHost::Trickles(TricklesHost {
            server: alloc::boxed::Box::new(Server::new(ServerConfig::new(sim_keys()))),
            inbox: Vec::new(),
            syn_data: Vec::new(),
            plain: 0,
        }),
        Peer::Tcp => FallbackHost::Tcp(alloc::boxed::Box::new(TcpServerHost::new(t.seed ^ 0x5e7e))),
    });
    let tuple = FourTuple {
        client_addr: Addr::V4(CLIENT_ADDR),
        client_port: CLIENT_PORT,
        server_addr: Addr::V4(SERVER_ADDR),
        server_port: SERVER_PORT,
    };
    let Ok(mut conn) = Connection::new(CompatConfig::default(), tuple, t.seed ^ 0xc11e) else {
        return FallbackOutcome {
            mode: Mode::Connecting,
            complete: false,
            byte_exact: false,
            received: 0,
            elapsed_us: t.time_limit_us,
            first_byte_us: None,
            server_stream: Vec::new(),
            syn_data: Vec::new(),
            plain_tcp_at_server: 0,
            reset: true,
        };
    };
    apply(&mut conn, &script.before);
    let cli = sim.add_node(FallbackHost::Client {
        conn: alloc::boxed::Box::new(conn),
        received: Vec::new(),
        first_byte_at: None,
    });
    // The server sends on its interface 0 (the first link), the client on its interface
    // 1 (the second), as in `run`.
    sim.connect(srv, cli, t.link.loss_ppm(t.loss_fwd_ppm));
    sim.connect(cli, srv, t.link.loss_ppm(t.loss_rev_ppm));
    sim.act(cli, |h, now, out| {
        if let FallbackHost::Client { conn, .. } = h {
            conn.connect(now, &script.connect);
            apply(conn, &script.after);
            FallbackHost::flush(conn, out);
        }
    });
    let limit = Instant::from_ticks(t.time_limit_us);
    let mut finished_at = None;
    while let Some(now) = sim.step() {
        if now > limit {
            break;
        }
        if let FallbackHost::Client { conn, .. } = sim.node(cli)
            && conn.is_complete()
            && conn.sent_all()
        {
            finished_at = Some(now.ticks());
            break;
        }
    }
    let expected_len = stream_of(script)
        .first_chunk::<8>()
        .map_or(0, |b| u64::from_be_bytes(*b));
    let mut outcome = FallbackOutcome {
        mode: Mode::Connecting,
        complete: false,
        byte_exact: false,
        received: 0,
        elapsed_us: finished_at.unwrap_or(t.time_limit_us),
        first_byte_us: None,
        server_stream: Vec::new(),
        syn_data: Vec::new(),
        plain_tcp_at_server: 0,
        reset: false,
    };
    if let FallbackHost::Client {
        conn,
        received,
        first_byte_at,
    } = sim.node(cli)
    {
        outcome.mode = conn.mode();
        outcome.complete = conn.is_complete() && received.len() as u64 == expected_len;
        outcome.received = received.len() as u64;
        outcome.byte_exact = received.len() as u64 <= expected_len
            && received
                .iter()
                .enumerate()
                .all(|(i, &b)| b == object_byte(i as u64));
        outcome.first_byte_us = *first_byte_at;
        outcome.reset = conn.is_reset();
    }
    match sim.node(srv) {
        FallbackHost::Trickles(h) => {
            outcome.server_stream = h.stream();
            outcome.syn_data = h.syn_data.clone();
            outcome.plain_tcp_at_server = h.plain;
        }
        FallbackHost::Tcp(h) => outcome.server_stream = h.stream.clone(),
        FallbackHost::Client { .. } => {}
    }
    outcome
}

/// The client's stream `script` writes, in the order [`Connection`] numbers it (see
/// [`crate::compat`], "Data written before `connect`").
pub fn stream_of(script: &Script) -> Vec<u8> {
    let (mut head, mut tail) = (Vec::new(), Vec::new());
    for w in &script.before {
        match w {
            Write::Data(d) => head.extend_from_slice(d),
            Write::Request(d) if head.is_empty() => head.extend_from_slice(d),
            Write::Request(d) => tail.extend_from_slice(d),
        }
    }
    head.extend_from_slice(&script.connect);
    head.extend_from_slice(&tail);
    for w in &script.after {
        match w {
            Write::Data(d) | Write::Request(d) => head.extend_from_slice(d),
        }
    }
    head
}
