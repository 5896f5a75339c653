//! Trickles over `netsim` (feature `sim`): a bulk-object server and its clients on
//! simulated links, for tests and reproductions.
//!
//! The simulated links carry whole IPv4 packets ([`crate::ip`]), as a TUN device or an
//! IP-in-UDP link does. One tick is one microsecond.
//!
//! The application is the simplest stateless one: the SYN's data is the object length
//! (8 bytes, big-endian), the user continuation carries it back and forth, and byte `i` of
//! the object is [`object_byte`]`(i)`, so any response can be regenerated at any time.

pub mod app;
pub mod compat;
mod pipeline;
/// smoltcp's TCP over the same links, the baseline. It lives in [`tcp_baseline`] now; this
/// path re-exports it.
pub mod tcp {
    pub use super::tcp_baseline::*;
}
pub mod tcp_baseline;
use alloc::vec::Vec;

pub use netsim::LinkConfig;
use netsim::{Instant, Node, Outbox, Simulator};

use crate::client::{Client, ClientConfig, ClientStats};
use crate::conn::{Addr, FourTuple};
use crate::crypto::KeyConfig;
use crate::server::{Event, EventKind, PlannedResponse, Rejected, Server, ServerConfig};
use crate::wire::continuation::CONTINUATION_LEN;

pub use crate::app::object::object_byte;

/// Fixed keys for simulations (never use constant keys outside one).
pub fn sim_keys() -> KeyConfig {
    KeyConfig {
        mac_keys: [[0x11; 16], [0x22; 16]],
        current_epoch: 0,
        nonce_key: [0x33; 16],
        rtx_nonce_key: [0x44; 16],
    }
}

/// Server-side counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Segments received.
    pub segments: u64,
    /// Segments answered.
    pub accepted: u64,
    /// Rejected as replays (or Bloom false positives).
    pub replays: u64,
    /// Rejected for any other reason.
    pub rejected: u64,
    /// Of those, rejected because the continuation's MAC did not verify.
    pub mac_rejections: u64,
    /// Response segments sent.
    pub responses: u64,
    /// Bytes of those segments (TCP header and payload).
    pub response_bytes: u64,
    /// Bytes of transport continuation in them: 54 per full one, the encoded length of
    /// each delta.
    pub continuation_bytes: u64,
    /// Responses whose continuation went out delta-encoded.
    pub deltas: u64,
    /// CLOSE events seen.
    pub closes: u64,
}

/// A simulated host: the object server or one client.
pub enum Host {
    /// The stateless server, answering on whichever interface a request came in.
    Server {
        /// The engine.
        server: alloc::boxed::Box<Server>,
        /// Its address.
        addr: [u8; 4],
        /// Interface to answer on (`None`: the one the request came in on).
        reply_iface: Option<usize>,
        /// Counters.
        stats: ServerStats,
        /// Client data received with a stream offset: `(offset, bytes)`, repeats included.
        inbox: Vec<(u64, Vec<u8>)>,
        /// Every frame addressed to the server, with its arrival time, when recording
        /// (see [`run_recorded`]).
        log: Option<Vec<(u64, Vec<u8>)>>,
    },
    /// A client fetching one object.
    Client {
        /// The engine.
        client: alloc::boxed::Box<Client>,
        /// Interface it sends on.
        iface: usize,
        /// The object it must receive, checked as it is read.
        received: Vec<u8>,
    },
}

fn frame(src: &Addr, dst: &Addr, tcp: &[u8]) -> Vec<u8> {
    crate::ip::wrap(src, dst, tcp).unwrap_or_default()
}

/// The length of the object a request of the simulations' application names: the SYN's
/// data, then the user continuation that echoes it (8 bytes, big-endian each); `None` for
/// a CLOSE or anything else.
fn object_len(event: &Event<'_>) -> Option<u64> {
    let bytes = match event.kind {
        EventKind::Open => event.data,
        EventKind::Request => event.user_continuation,
        EventKind::Close => return None,
    };
    bytes.first_chunk::<8>().map(|b| u64::from_be_bytes(*b))
}

/// Fills `data` (cleared first) with the bytes of an object of `len` bytes that `resp`
/// may carry; returns whether they end the object.
fn object_data(resp: &PlannedResponse, len: u64, data: &mut Vec<u8>) -> bool {
    data.clear();
    let Some(r) = resp.range else {
        return false;
    };
    let end = r.start.saturating_add(resp.allowed() as u64).min(len);
    data.extend((r.start.min(end)..end).map(object_byte));
    end >= len
}

/// Sends everything `client` has queued on `iface`, framed.
fn flush_client(client: &mut Client, iface: usize, out: &mut Outbox) {
    while let Some(seg) = client.poll_transmit() {
        let t = *client.tuple();
        out.send(iface, frame(&t.client_addr, &t.server_addr, &seg));
    }
}

fn unframe(f: &[u8]) -> Option<(Addr, Addr, &[u8])> {
    crate::ip::unwrap(f)
}

impl Host {
    /// The object server at [`SERVER_ADDR`], answering on `reply_iface` (or, if `None`,
    /// on the interface each request came in on).
    pub fn server(cfg: ServerConfig, reply_iface: Option<usize>) -> Host {
        Host::Server {
            server: alloc::boxed::Box::new(Server::new(cfg)),
            addr: SERVER_ADDR,
            reply_iface,
            stats: ServerStats::default(),
            inbox: Vec::new(),
            log: None,
        }
    }

    fn serve(
        server: &mut Server,
        stats: &mut ServerStats,
        inbox: &mut Vec<(u64, Vec<u8>)>,
        now: Instant,
        iface: usize,
        packet: &[u8],
        out: &mut Outbox,
    ) {
        stats.segments += 1;
        let Some((src, dst, tcp)) = unframe(packet) else {
            stats.rejected += 1;
            return;
        };
        let reply = match server.handle_request(now, src, dst, tcp) {
            Ok(r) => r,
            Err(Rejected::Replay) => {
                stats.replays += 1;
                return;
            }
            Err(e) => {
                stats.rejected += 1;
                stats.mac_rejections += u64::from(e == Rejected::Mac);
                return;
            }
        };
        stats.accepted += 1;
        if let Some(offset) = reply.event.data_offset {
            inbox.push((offset, reply.event.data.to_vec()));
        }
        stats.closes += u64::from(reply.event.kind == EventKind::Close);
        let Some(len) = object_len(&reply.event) else {
            return;
        };
        let ucont = len.to_be_bytes();
        let mut data = Vec::new();
        let mut buf = alloc::vec![0u8; 2048];
        for resp in &reply.responses {
            let eos = object_data(resp, len, &mut data);
            if let Ok(n) = server.emit(&reply.event.tuple, resp, &ucont, &data, eos, &mut buf) {
                stats.responses += 1;
                stats.response_bytes += n as u64;
                stats.continuation_bytes += match (resp.delta, resp.continuation) {
                    (Some(d), _) => d.buffer_len() as u64,
                    (None, Some(_)) => CONTINUATION_LEN as u64,
                    (None, None) => 0,
                };
                stats.deltas += u64::from(resp.delta.is_some());
                out.send(
                    iface,
                    frame(
                        &reply.event.tuple.server_addr,
                        &reply.event.tuple.client_addr,
                        buf.get(..n).unwrap_or_default(),
                    ),
                );
            }
        }
    }
}

impl Node for Host {
    fn handle_packet(&mut self, now: Instant, iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        match self {
            Host::Server {
                server,
                stats,
                addr,
                reply_iface,
                inbox,
                log,
            } => {
                if unframe(&packet).is_some_and(|(_, dst, _)| dst == Addr::V4(*addr)) {
                    if let Some(log) = log {
                        log.push((now.ticks(), packet.clone()));
                    }
                    Host::serve(
                        server,
                        stats,
                        inbox,
                        now,
                        reply_iface.unwrap_or(iface),
                        &packet,
                        out,
                    );
                }
            }
            Host::Client {
                client,
                iface: send_iface,
                received,
            } => {
                if let Some((_, _, tcp)) = unframe(&packet) {
                    let _ = client.handle_segment(now, tcp);
                }
                let mut buf = [0u8; 4096];
                loop {
                    let n = client.read(&mut buf);
                    if n == 0 {
                        break;
                    }
                    received.extend_from_slice(buf.get(..n).unwrap_or_default());
                }
                flush_client(client, *send_iface, out);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        if let Host::Client { client, iface, .. } = self {
            client.handle_timeout(now);
            flush_client(client, *iface, out);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Host::Client { client, .. } => client.poll_timeout(),
            Host::Server { .. } => None,
        }
    }
}

/// One transfer's conditions.
#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    /// Object size in bytes.
    pub object_len: u64,
    /// The link (one-way delay in µs, jitter, MTU); its loss applies to both directions
    /// unless overridden.
    pub link: LinkConfig,
    /// Loss on the server-to-client direction, in parts per million.
    pub loss_fwd_ppm: u32,
    /// Loss on the client-to-server direction, in parts per million.
    pub loss_rev_ppm: u32,
    /// Seed of the simulator.
    pub seed: u64,
    /// Give up after this much simulated time.
    pub time_limit_us: u64,
    /// Bytes the client uploads after its request (byte `i` is `object_byte(UPLOAD_BASE + i)`).
    pub upload_len: u64,
    /// Sample the client's window in flight every this many µs (0: no trace).
    pub trace_us: u64,
}

/// Where the simulated upload's bytes start in the [`object_byte`] pattern (so uploaded and
/// downloaded bytes differ).
pub const UPLOAD_BASE: u64 = 1 << 40;

impl Transfer {
    /// A loss-free transfer of `object_len` bytes over a link of one-way `delay_us`.
    pub fn new(object_len: u64, delay_us: u64) -> Transfer {
        Transfer {
            object_len,
            link: LinkConfig::with_delay(delay_us),
            loss_fwd_ppm: 0,
            loss_rev_ppm: 0,
            seed: 1,
            time_limit_us: 600_000_000,
            upload_len: 0,
            trace_us: 0,
        }
    }
}

/// What a transfer did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Whether the client received the whole object.
    pub complete: bool,
    /// Whether every byte it received was the object's.
    pub byte_exact: bool,
    /// Bytes received in order.
    pub received: u64,
    /// Simulated time until the last byte arrived (or the limit).
    pub elapsed_us: u64,
    /// The client's counters.
    pub client: ClientStats,
    /// The server's counters.
    pub server: ServerStats,
    /// The server's memory, bytes.
    pub server_memory: usize,
    /// Whether the upload (if any) arrived whole and exact at the server application.
    pub upload_exact: bool,
    /// `(µs, packets in flight)` samples of the client's window, if asked for.
    pub trace: Vec<(u64, u32)>,
}

impl Outcome {
    /// Goodput in megabits per second of simulated time.
    pub fn goodput_mbps(&self) -> f64 {
        if self.elapsed_us == 0 {
            return 0.0;
        }
        self.received as f64 * 8.0 / self.elapsed_us as f64
    }
}

/// Addresses of the simulated server and client.
pub const SERVER_ADDR: [u8; 4] = [10, 0, 0, 2];
/// The client's address.
pub const CLIENT_ADDR: [u8; 4] = [10, 0, 0, 1];

/// Runs one client fetching one object from the server over a two-node network.
pub fn run(t: &Transfer, server_cfg: ServerConfig, client_cfg: ClientConfig) -> Outcome {
    run_inner(t, server_cfg, client_cfg, false).0
}

/// [`run`], also returning every frame that reached the server, in order, with its
/// arrival time in µs: frames are whole IPv4 packets (read them with
/// [`ip::unwrap`](crate::ip::unwrap)). Feeding them to a fresh [`Server`] with the same configuration at
/// those times reproduces the server's part of the transfer request by request.
pub fn run_recorded(
    t: &Transfer,
    server_cfg: ServerConfig,
    client_cfg: ClientConfig,
) -> (Outcome, Vec<(u64, Vec<u8>)>) {
    run_inner(t, server_cfg, client_cfg, true)
}

fn run_inner(
    t: &Transfer,
    server_cfg: ServerConfig,
    client_cfg: ClientConfig,
    record: bool,
) -> (Outcome, Vec<(u64, Vec<u8>)>) {
    let mut sim: Simulator<Host> = Simulator::new(t.seed);
    let mut server = Host::server(server_cfg, Some(0));
    if let Host::Server { log, .. } = &mut server
        && record
    {
        *log = Some(Vec::new());
    }
    let srv = sim.add_node(server);
    let tuple = FourTuple {
        client_addr: Addr::V4(CLIENT_ADDR),
        client_port: 40000,
        server_addr: Addr::V4(SERVER_ADDR),
        server_port: 80,
    };
    let cli = sim.add_node(Host::Client {
        client: alloc::boxed::Box::new(Client::new(client_cfg, tuple, t.seed as u32 ^ 0x5eed)),
        iface: 1,
        received: Vec::new(),
    });
    // Two links so each direction has its own loss: the server answers on its interface
    // 0 (the first link), the client sends on its interface 1 (the second).
    sim.connect(srv, cli, t.link.loss_ppm(t.loss_fwd_ppm));
    sim.connect(cli, srv, t.link.loss_ppm(t.loss_rev_ppm));
    sim.act(cli, |h, now, out| {
        if let Host::Client { client, iface, .. } = h {
            client.connect(now, &t.object_len.to_be_bytes());
            let upload: Vec<u8> = (0..t.upload_len)
                .map(|i| object_byte(UPLOAD_BASE + i))
                .collect();
            client.send_data(&upload);
            flush_client(client, *iface, out);
        }
    });
    let limit = Instant::from_ticks(t.time_limit_us);
    let mut finished_at = None;
    let mut trace = Vec::new();
    let mut next_sample = 0;
    while let Some(now) = sim.step() {
        if now > limit {
            break;
        }
        if t.trace_us > 0
            && now.ticks() >= next_sample
            && let Host::Client { client, .. } = sim.node(cli)
        {
            trace.push((now.ticks(), client.in_flight() as u32));
            next_sample = now.ticks() + t.trace_us;
        }
        if finished_at.is_none()
            && let Host::Client { client, .. } = sim.node(cli)
            && client.is_complete()
            && client.sent_all()
        {
            finished_at = Some(now.ticks());
            break;
        }
    }
    let mut outcome = Outcome {
        complete: false,
        byte_exact: false,
        received: 0,
        elapsed_us: finished_at.unwrap_or(t.time_limit_us),
        client: ClientStats::default(),
        server: ServerStats::default(),
        server_memory: 0,
        upload_exact: false,
        trace,
    };
    if let Host::Client {
        client, received, ..
    } = sim.node(cli)
    {
        outcome.complete = client.is_complete();
        outcome.received = client.delivered();
        outcome.client = client.stats();
        outcome.byte_exact = received.len() as u64 == client.delivered()
            && received
                .iter()
                .enumerate()
                .all(|(i, &b)| b == object_byte(i as u64));
    }
    let mut frames = Vec::new();
    if let Host::Server {
        server,
        stats,
        inbox,
        log,
        ..
    } = sim.node_mut(srv)
    {
        outcome.server = *stats;
        outcome.server_memory = server.memory_bytes();
        outcome.upload_exact = upload_matches(inbox, t.upload_len);
        frames = log.take().unwrap_or_default();
    }
    (outcome, frames)
}

/// Whether the pieces the application received rebuild the upload exactly (the SYN's
/// 8-byte request sits at offset 0, the upload after it; repeats must agree).
fn upload_matches(inbox: &[(u64, Vec<u8>)], len: u64) -> bool {
    let mut seen = alloc::vec![false; len as usize];
    for (offset, data) in inbox {
        for (j, &b) in data.iter().enumerate() {
            // The first 8 bytes of the stream are the request (the object's length).
            let Some(i) = (offset + j as u64).checked_sub(8) else {
                continue;
            };
            if i >= len || b != object_byte(UPLOAD_BASE + i) {
                return false;
            }
            if let Some(s) = seen.get_mut(i as usize) {
                *s = true;
            }
        }
    }
    seen.iter().all(|&s| s)
}

/// What many simultaneous clients did.
#[derive(Clone, Debug)]
pub struct ManyOutcome {
    /// Clients that received their whole object.
    pub complete: usize,
    /// Whether every client's bytes were exact.
    pub byte_exact: bool,
    /// Simulated time until the last client finished (or the limit).
    pub elapsed_us: u64,
    /// The server's memory at the end, bytes.
    pub server_memory: usize,
    /// The server's counters.
    pub server: ServerStats,
}

/// Runs `n` clients, each on its own link to one server, all fetching `object_len` bytes
/// at once; client `i` starts `i * stagger_us` after the first.
pub fn run_clients(
    n: u32,
    object_len: u64,
    link: LinkConfig,
    stagger_us: u64,
    seed: u64,
    time_limit_us: u64,
) -> ManyOutcome {
    let mut sim: Simulator<Host> = Simulator::new(seed);
    let srv = sim.add_node(Host::server(ServerConfig::new(sim_keys()), None));
    let mut clients = Vec::new();
    for i in 0..n {
        let tuple = FourTuple {
            client_addr: Addr::V4([10, 1 + (i >> 16) as u8, (i >> 8) as u8, i as u8]),
            client_port: 40000,
            server_addr: Addr::V4(SERVER_ADDR),
            server_port: 80,
        };
        let id = sim.add_node(Host::Client {
            client: alloc::boxed::Box::new(Client::new(
                ClientConfig::default(),
                tuple,
                seed as u32 ^ i,
            )),
            iface: 0,
            received: Vec::new(),
        });
        sim.connect(id, srv, link);
        clients.push(id);
    }
    for (i, &id) in clients.iter().enumerate() {
        sim.run_until(Instant::from_ticks(i as u64 * stagger_us));
        sim.act(id, |h, now, out| {
            if let Host::Client { client, iface, .. } = h {
                client.connect(now, &object_len.to_be_bytes());
                flush_client(client, *iface, out);
            }
        });
    }
    let limit = Instant::from_ticks(time_limit_us);
    let mut last = 0;
    while let Some(now) = sim.step() {
        if now > limit {
            break;
        }
        last = now.ticks();
    }
    let mut outcome = ManyOutcome {
        complete: 0,
        byte_exact: true,
        elapsed_us: last,
        server_memory: 0,
        server: ServerStats::default(),
    };
    for &id in &clients {
        if let Host::Client {
            client, received, ..
        } = sim.node(id)
        {
            outcome.complete += usize::from(client.is_complete());
            outcome.byte_exact &= received.len() as u64 == client.delivered()
                && received
                    .iter()
                    .enumerate()
                    .all(|(i, &b)| b == object_byte(i as u64));
        }
    }
    if let Host::Server { server, stats, .. } = sim.node(srv) {
        outcome.server = *stats;
        outcome.server_memory = server.memory_bytes();
    }
    outcome
}
