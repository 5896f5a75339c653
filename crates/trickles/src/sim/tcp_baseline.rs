//! The TCP baseline: smoltcp's TCP socket fetching the same object over the same
//! simulated links as [`run`](super::run), so Trickles can be compared with TCP.
//!
//! Two hosts, each an [`Interface`] (`Medium::Ip`) with a [`SocketSet`] holding one
//! [`tcp::Socket`], driven through [`SimDevice`], a [`Device`](smoltcp::phy::Device) over in-memory queues.
//! Frames on the links are whole IPv4 packets as smoltcp emits them (20-byte IP header,
//! TCP header, data), not the Trickles hosts' 8-byte address prefix: the two TCP hosts only
//! talk to each other.
//!
//! ```text
//!   server (listens on :80, writes the object)      client (connects, reads, checks)
//!   Interface + socket ── iface 0: first link (fwd loss) ──► Interface + socket
//!                     ◄── iface 1: second link (rev loss) ──
//! ```
//!
//! The topology mirrors [`run`](super::run) exactly: two links, the server sends on its
//! interface 0 (the first link, carrying [`Transfer::loss_fwd_ppm`]), the client on its
//! interface 1 (the second, carrying [`Transfer::loss_rev_ppm`]); both links are
//! [`Transfer::link`], bottleneck and queue included.
//!
//! The TCP is smoltcp 0.14's: Reno with a byte-counted window, no SACK (fast retransmit
//! resends one segment; a partial ACK ends fast recovery), go-back-N after a timeout, a
//! 1 s minimum retransmit timeout, window scaling, at most four out-of-order holes in the
//! receiver. Settings ([`TcpConfig`]):
//!
//! * Every segment is acknowledged at once (smoltcp's delayed ACK off), as every Trickles
//!   response draws a request; this also makes slow start double per round trip.
//! * Nagle stays on. With it off, smoltcp sends a sliver segment whenever the byte-counted
//!   window opens by less than an MSS (in congestion avoidance, on nearly every ACK);
//!   with it on, a bulk sender sends only full segments while data is in flight. The
//!   server closes the socket once at most one segment is left unsent, and the FIN
//!   releases the short last segment.
//! * 8 MiB socket buffers: the window never limits (see [`TcpConfig::rx_buffer`]).
//! * The MSS is the MTU's: 1460 bytes on a 1500-byte MTU, against Trickles' 1362 in a
//!   1480-byte frame. TCP's lower per-packet overhead is part of what Trickles has to
//!   match; [`TcpConfig::mss`] can lower it for comparison.
//!
//! Unlike Trickles, which sends its request in the SYN, TCP's server writes after the
//! three-way handshake, so its first data byte arrives half a round trip later. With
//! [`TcpConfig::request_len`] set, the client instead sends a request of that many bytes
//! once the connection is established and the server writes only after reading it, as an
//! HTTP exchange does. The request leaves with the handshake's last ACK, so the data
//! comes no later than without it, but still a whole round trip after what Trickles' SYN
//! with data achieves (§2.6, §6.1).

use alloc::vec;
use alloc::vec::Vec;

use netsim::{Instant, Node, Outbox, Simulator};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp::{self, CongestionControl};
use smoltcp::time::Instant as SmolInstant;
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr, Ipv4Packet, TcpPacket};

use super::{CLIENT_ADDR, Outcome, SERVER_ADDR, ServerStats, Transfer, UPLOAD_BASE, object_byte};
use crate::client::ClientStats;

/// The server's TCP port.
pub const SERVER_PORT: u16 = 80;
/// The client's TCP port.
pub const CLIENT_PORT: u16 = 40000;
/// TCP's MSS on a 1500-byte MTU: 1500 − 20 (IPv4) − 20 (TCP).
pub const TCP_MSS: u16 = 1460;
/// IPv4 and TCP headers without options.
const HEADERS: usize = 40;

/// How the TCP hosts are set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    /// Largest segment payload; the hosts' IP MTU is this plus 40, capped by the link's
    /// MTU. Default [`TCP_MSS`].
    pub mss: u16,
    /// Receive buffer of each socket, bytes: the largest window the client advertises
    /// (with window scaling). The default, 8 MiB, exceeds twice the bandwidth-delay
    /// product of 100 Mb/s at 200 ms, so it never limits; a smaller one caps TCP's window
    /// below what overflows a queue.
    pub rx_buffer: usize,
    /// Send buffer of each socket, bytes (default 8 MiB): the most data in flight.
    pub tx_buffer: usize,
    /// smoltcp's delayed-ACK timer (`None`, the default: every segment is acknowledged
    /// at once; smoltcp's own default is 10 ms).
    pub ack_delay_us: Option<u64>,
    /// Nagle's algorithm (default on; see the module documentation).
    pub nagle: bool,
    /// Bytes of request the client sends after the handshake and the server reads before
    /// it writes the object (default 0: the server writes as soon as it accepts).
    pub request_len: usize,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: TCP_MSS,
            rx_buffer: 8 << 20,
            tx_buffer: 8 << 20,
            ack_delay_us: None,
            nagle: true,
            request_len: 0,
        }
    }
}

/// The simulations' smoltcp device: two in-memory queues of whole IP packets (the TCP
/// fallback's [`MemDevice`](crate::compat::MemDevice)).
pub use crate::compat::MemDevice as SimDevice;

/// What a TCP host does above its socket.
#[derive(Debug)]
enum Role {
    /// Writes `len` bytes of the object, then closes.
    Server {
        len: u64,
        /// Request bytes still to read before writing.
        awaiting: u64,
        written: u64,
        /// Sequence-space end of the data sent so far, relative to the first data byte,
        /// and the first data segment's sequence number.
        sent_end: u64,
        isn: Option<i32>,
        retransmitted: u64,
    },
    /// Reads and checks the object.
    Client {
        len: u64,
        /// Request bytes still to send (byte `i` is `object_byte(UPLOAD_BASE + i)`).
        request_left: u64,
        request_len: u64,
        received: u64,
        byte_exact: bool,
        done_at: Option<u64>,
    },
}

/// One simulated TCP host: an interface, its device, one socket and the application.
struct TcpHost {
    iface: Interface,
    device: SimDevice,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    send_iface: usize,
    role: Role,
    next_poll: Option<u64>,
    segments_in: u64,
    segments_out: u64,
    /// Largest segment payload (the IP MTU less 40).
    mss: u64,
}

fn smol_now(now: Instant) -> SmolInstant {
    SmolInstant::from_micros(i64::try_from(now.ticks()).unwrap_or(i64::MAX))
}

impl TcpHost {
    fn new(
        addr: [u8; 4],
        cfg: &TcpConfig,
        mtu: usize,
        seed: u64,
        send_iface: usize,
        role: Role,
    ) -> Self {
        let mut device = SimDevice::new(mtu);
        let mut config = Config::new(HardwareAddress::Ip);
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut device, SmolInstant::ZERO);
        iface.update_ip_addrs(|addrs| {
            let _ = addrs.push(IpCidr::new(
                IpAddress::v4(addr[0], addr[1], addr[2], addr[3]),
                24,
            ));
        });
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; cfg.rx_buffer]),
            tcp::SocketBuffer::new(vec![0; cfg.tx_buffer]),
        );
        socket.set_congestion_control(CongestionControl::Reno);
        socket.set_nagle_enabled(cfg.nagle);
        socket.set_ack_delay(cfg.ack_delay_us.map(smoltcp::time::Duration::from_micros));
        let mut sockets = SocketSet::new(Vec::new());
        let handle = sockets.add(socket);
        TcpHost {
            iface,
            device,
            sockets,
            handle,
            send_iface,
            role,
            next_poll: None,
            segments_in: 0,
            segments_out: 0,
            mss: mtu.saturating_sub(HEADERS) as u64,
        }
    }

    /// Moves the object between the application and the socket; returns whether
    /// anything moved (so the interface should be polled again).
    fn app(&mut self, now: Instant) -> bool {
        let socket = self.sockets.get_mut::<tcp::Socket<'static>>(self.handle);
        let mss = self.mss;
        match &mut self.role {
            Role::Server {
                len,
                awaiting,
                written,
                sent_end,
                ..
            } => {
                let mut moved = false;
                while *awaiting > 0 && socket.can_recv() {
                    let n = socket
                        .recv(|buf| {
                            let n = buf
                                .len()
                                .min(usize::try_from(*awaiting).unwrap_or(usize::MAX));
                            (n, n)
                        })
                        .unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    *awaiting -= n as u64;
                    moved = true;
                }
                while *awaiting == 0 && *written < *len && socket.can_send() {
                    let start = *written;
                    let n = socket
                        .send(|buf| {
                            let n = buf
                                .len()
                                .min(usize::try_from(*len - start).unwrap_or(usize::MAX));
                            for (i, b) in buf.iter_mut().take(n).enumerate() {
                                *b = object_byte(start + i as u64);
                            }
                            (n, n)
                        })
                        .unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    *written += n as u64;
                    moved = true;
                }
                // Close (a FIN lets Nagle release a short last segment) once no more than
                // one segment of the object is left unsent; closing earlier would switch
                // Nagle off for the rest of the transfer.
                if *awaiting == 0
                    && *written == *len
                    && socket.may_send()
                    && *len - (*sent_end).min(*len) < mss
                {
                    socket.close();
                }
                moved
            }
            Role::Client {
                len,
                request_left,
                request_len,
                received,
                byte_exact,
                done_at,
            } => {
                let mut moved = false;
                while *request_left > 0 && socket.can_send() {
                    let start = *request_len - *request_left;
                    let n = socket
                        .send(|buf| {
                            let n = buf
                                .len()
                                .min(usize::try_from(*request_left).unwrap_or(usize::MAX));
                            for (i, b) in buf.iter_mut().take(n).enumerate() {
                                *b = object_byte(UPLOAD_BASE + start + i as u64);
                            }
                            (n, n)
                        })
                        .unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    *request_left -= n as u64;
                    moved = true;
                }
                loop {
                    let start = *received;
                    let (n, exact) = socket
                        .recv(|buf| {
                            let exact = buf
                                .iter()
                                .enumerate()
                                .all(|(i, &b)| b == object_byte(start + i as u64));
                            (buf.len(), (buf.len(), exact))
                        })
                        .unwrap_or((0, true));
                    if n == 0 {
                        break;
                    }
                    *received += n as u64;
                    *byte_exact &= exact;
                    moved = true;
                }
                if done_at.is_none() && *received >= *len {
                    *done_at = Some(now.ticks());
                }
                moved
            }
        }
    }

    /// Counts retransmitted data segments among the server's outgoing packets.
    fn inspect(role: &mut Role, packet: &[u8]) {
        let Role::Server {
            sent_end,
            isn,
            retransmitted,
            ..
        } = role
        else {
            return;
        };
        let Ok(ip) = Ipv4Packet::new_checked(packet) else {
            return;
        };
        let Ok(seg) = TcpPacket::new_checked(ip.payload()) else {
            return;
        };
        let data = seg.payload().len() as u64;
        if data == 0 {
            return;
        }
        let seq = seg.seq_number().0;
        let base = *isn.get_or_insert(seq);
        let offset = u64::from(seq.wrapping_sub(base) as u32);
        if offset < *sent_end {
            *retransmitted += 1;
        }
        *sent_end = (*sent_end).max(offset + data);
    }

    /// Polls the interface and runs the application until neither has more to do, then
    /// sends what the interface emitted and records its next deadline.
    fn drive(&mut self, now: Instant, out: &mut Outbox) {
        let ts = smol_now(now);
        for _ in 0..16 {
            self.iface.poll(ts, &mut self.device, &mut self.sockets);
            if !self.app(now) {
                break;
            }
        }
        for packet in self.device.take_transmitted() {
            TcpHost::inspect(&mut self.role, &packet);
            self.segments_out += 1;
            out.send(self.send_iface, packet);
        }
        // A deadline already due after a full poll would spin the clock; wait a tick.
        self.next_poll = self.iface.poll_at(ts, &self.sockets).map(|at| {
            u64::try_from(at.total_micros())
                .unwrap_or(0)
                .max(now.ticks() + 1)
        });
    }
}

impl Node for TcpHost {
    fn handle_packet(&mut self, now: Instant, _iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        self.segments_in += 1;
        self.device.push_received(packet);
        self.drive(now, out);
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.drive(now, out);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_poll.map(Instant::from_ticks)
    }
}

/// Runs smoltcp's TCP over the conditions of `t` with the default [`TcpConfig`].
pub fn run_tcp(t: &Transfer) -> Outcome {
    run_tcp_with(t, &TcpConfig::default())
}

/// Runs one TCP client fetching `t.object_len` bytes from a TCP server over the same
/// two-link network as [`run`](super::run); time is to the object's last byte.
///
/// The [`Outcome`]'s counters mean, for TCP: `client.requests` segments the client sent
/// (ACKs), `client.responses` segments it received, `client.retransmissions` data
/// segments the server sent again (counted at the server); `client.timeouts` and
/// `client.losses` stay 0 (smoltcp does not count them). `server.segments` and
/// `server.accepted` segments the server received, `server.responses` segments it sent;
/// the rest stay 0. `server_memory` is the server socket's structure plus both buffers.
/// The baseline only downloads: `t.upload_len` is ignored and `upload_exact` stays false.
pub fn run_tcp_with(t: &Transfer, cfg: &TcpConfig) -> Outcome {
    let mtu = (usize::from(cfg.mss) + HEADERS).min(t.link.mtu);
    let mut sim: Simulator<TcpHost> = Simulator::new(t.seed);
    let server_role = Role::Server {
        len: t.object_len,
        awaiting: cfg.request_len as u64,
        written: 0,
        sent_end: 0,
        isn: None,
        retransmitted: 0,
    };
    let srv = sim.add_node(TcpHost::new(
        SERVER_ADDR,
        cfg,
        mtu,
        t.seed ^ 0x5e7e,
        0,
        server_role,
    ));
    let client_role = Role::Client {
        len: t.object_len,
        request_left: cfg.request_len as u64,
        request_len: cfg.request_len as u64,
        received: 0,
        byte_exact: true,
        done_at: None,
    };
    let cli = sim.add_node(TcpHost::new(
        CLIENT_ADDR,
        cfg,
        mtu,
        t.seed ^ 0xc11e,
        1,
        client_role,
    ));
    // As in `run`: the server sends on its interface 0 (the first link), the client on
    // its interface 1 (the second).
    sim.connect(srv, cli, t.link.loss_ppm(t.loss_fwd_ppm));
    sim.connect(cli, srv, t.link.loss_ppm(t.loss_rev_ppm));
    sim.act(srv, |h, now, out| {
        let socket = h.sockets.get_mut::<tcp::Socket<'static>>(h.handle);
        let _ = socket.listen(SERVER_PORT);
        h.drive(now, out);
    });
    sim.act(cli, |h, now, out| {
        let socket = h.sockets.get_mut::<tcp::Socket<'static>>(h.handle);
        let server = IpAddress::v4(
            SERVER_ADDR[0],
            SERVER_ADDR[1],
            SERVER_ADDR[2],
            SERVER_ADDR[3],
        );
        let _ = socket.connect(h.iface.context(), (server, SERVER_PORT), CLIENT_PORT);
        h.drive(now, out);
    });
    let limit = Instant::from_ticks(t.time_limit_us);
    while let Some(now) = sim.step() {
        if now > limit {
            break;
        }
        if let Role::Client {
            done_at: Some(_), ..
        } = sim.node(cli).role
        {
            break;
        }
    }
    let mut outcome = Outcome {
        complete: false,
        byte_exact: false,
        received: 0,
        elapsed_us: t.time_limit_us,
        client: ClientStats::default(),
        server: ServerStats::default(),
        server_memory: core::mem::size_of::<tcp::Socket<'static>>() + cfg.rx_buffer + cfg.tx_buffer,
        upload_exact: false,
        trace: Vec::new(),
    };
    let c = sim.node(cli);
    if let Role::Client {
        len,
        received,
        byte_exact,
        done_at,
        ..
    } = c.role
    {
        outcome.complete = received >= len;
        outcome.byte_exact = byte_exact && received <= len;
        outcome.received = received;
        outcome.elapsed_us = done_at.unwrap_or(t.time_limit_us);
    }
    outcome.client.requests = c.segments_out;
    outcome.client.responses = c.segments_in;
    let s = sim.node(srv);
    if let Role::Server { retransmitted, .. } = s.role {
        outcome.client.retransmissions = retransmitted;
    }
    outcome.server.segments = s.segments_in;
    outcome.server.accepted = s.segments_in;
    outcome.server.responses = s.segments_out;
    outcome
}
