//! The TCP leg of a [`Connection`](super::Connection): smoltcp's [`tcp::Socket`] on its own
//! [`Interface`] (`Medium::Ip`) over an in-memory device, and the shape of the SYN it
//! would have sent.
//!
//! The socket is opened (`connect`) when the connection opens, and its SYN is captured
//! but never sent: the Trickles SYN goes out instead, with the socket's initial sequence
//! number, window and options (see [`SynShape`]). So when a TCP-only server answers that
//! SYN with a SYN-ACK, the socket, still in SYN-SENT, takes the SYN-ACK as the answer to
//! its own SYN, and the connection continues as ordinary TCP from there.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp::{self, CongestionControl, State};
use smoltcp::time::Instant as SmolInstant;
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr, TcpOption, TcpPacket};

use super::CompatConfig;
use super::device::MemDevice;
use crate::conn::{Addr, FourTuple};
use crate::ip;
use crate::wire::{TRICKLES_EXID, TRICKLES_OPTION_KIND};
use smoltcp::wire::{Ipv4Address, Ipv6Address};

/// Longest TCP options field.
const MAX_OPTIONS: usize = 40;
/// The fixed TCP header.
const TCP_FIXED: usize = 20;
/// Polls per drive before giving up on the application moving more bytes.
const MAX_ROUNDS: usize = 16;

/// Microseconds as smoltcp's instant.
fn smol_now(now_us: u64) -> SmolInstant {
    SmolInstant::from_micros(i64::try_from(now_us).unwrap_or(i64::MAX))
}

/// What the socket's own SYN looked like: its sequence number, window and options
/// (MSS, window scale, SACK permitted). The Trickles SYN is rewritten to carry them, so
/// the server sees exactly the SYN the socket believes it sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SynShape {
    /// The initial sequence number.
    pub(crate) isn: u32,
    /// The window field.
    pub(crate) window: u16,
    /// The options other than padding, each as on the wire, followed by the Trickles
    /// option and padded with end-of-list bytes to a multiple of four.
    pub(crate) options: Vec<u8>,
}

impl SynShape {
    /// The shape of the SYN in `packet` (an IP packet), or `None` if it is not a SYN or
    /// its options leave no room for the Trickles option.
    pub(crate) fn capture(packet: &[u8]) -> Option<SynShape> {
        let (_, _, segment) = ip::unwrap(packet)?;
        let tcp = TcpPacket::new_checked(segment).ok()?;
        if !tcp.syn() || tcp.ack() {
            return None;
        }
        let mut options = Vec::new();
        let mut rest = tcp.options();
        while !rest.is_empty() {
            let (next, option) = TcpOption::parse(rest).ok()?;
            let used = rest.len() - next.len();
            match option {
                TcpOption::EndOfList => break,
                TcpOption::NoOperation => {}
                _ => options.extend_from_slice(rest.get(..used)?),
            }
            rest = next;
        }
        let exid = TRICKLES_EXID.to_be_bytes();
        options.extend_from_slice(&[TRICKLES_OPTION_KIND, 4, exid[0], exid[1]]);
        while options.len() % 4 != 0 {
            options.push(0);
        }
        (options.len() <= MAX_OPTIONS).then(|| SynShape {
            isn: u32::from_be_bytes(tcp.seq_number().0.to_be_bytes()),
            window: tcp.window_len(),
            options,
        })
    }

    /// `segment`, a Trickles SYN from `src` to `dst`, with this shape's window and
    /// options in place of its own header's (ports, sequence number and payload kept,
    /// checksum recomputed); `None` if `segment` is not a SYN.
    pub(crate) fn rewrite(&self, src: &Addr, dst: &Addr, segment: &[u8]) -> Option<Vec<u8>> {
        let syn = TcpPacket::new_checked(segment).ok()?;
        if !syn.syn() {
            return None;
        }
        let header = TCP_FIXED + self.options.len();
        let mut out = vec![0u8; header + syn.payload().len()];
        out.get_mut(TCP_FIXED..header)?
            .copy_from_slice(&self.options);
        out.get_mut(header..)?.copy_from_slice(syn.payload());
        // `out` holds `header` bytes, and the header length is set before anything that
        // reads it, so no accessor below can panic.
        let mut packet = TcpPacket::new_unchecked(&mut out[..]);
        packet.set_src_port(syn.src_port());
        packet.set_dst_port(syn.dst_port());
        packet.set_seq_number(syn.seq_number());
        packet.set_ack_number(smoltcp::wire::TcpSeqNumber(0));
        packet.set_header_len(u8::try_from(header).ok()?);
        packet.clear_flags();
        packet.set_syn(true);
        packet.set_window_len(self.window);
        packet.set_urgent_at(0);
        packet.fill_checksum(&smol_addr(src), &smol_addr(dst));
        Some(out)
    }
}

/// The user-space TCP connection a [`Connection`](super::Connection) falls back to.
pub(crate) struct TcpLeg {
    iface: Interface,
    device: MemDevice,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    /// Server output taken from the socket, waiting for `read`.
    received: VecDeque<u8>,
    /// Application bytes not yet accepted by the socket's send buffer.
    unsent: VecDeque<u8>,
    /// The server closed its half (its FIN arrived).
    fin_received: bool,
    /// The connection reached ESTABLISHED.
    established: bool,
    /// The connection ended without the server's FIN (a reset).
    reset: bool,
    /// When the interface next wants polling.
    deadline: Option<u64>,
    /// The last time the leg was driven.
    last_now: u64,
}

impl core::fmt::Debug for TcpLeg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TcpLeg")
            .field("state", &self.state())
            .field("received", &self.received.len())
            .field("unsent", &self.unsent.len())
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl TcpLeg {
    /// Opens the socket for `tuple` at `now_us` (state SYN-SENT) and returns it with the
    /// shape of the SYN it emitted, which is discarded. `None` if smoltcp refuses the
    /// tuple (a zero port, mixed families) or emits no SYN.
    pub(crate) fn open(
        now_us: u64,
        tuple: &FourTuple,
        cfg: &CompatConfig,
        seed: u64,
    ) -> Option<(TcpLeg, SynShape)> {
        let ts = smol_now(now_us);
        let mut device = MemDevice::new(cfg.mtu);
        let mut config = Config::new(HardwareAddress::Ip);
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut device, ts);
        let (local, remote) = (smol_addr(&tuple.client_addr), smol_addr(&tuple.server_addr));
        iface.update_ip_addrs(|addrs| {
            let prefix = match local {
                IpAddress::Ipv4(_) => 32,
                IpAddress::Ipv6(_) => 128,
            };
            let _ = addrs.push(IpCidr::new(local, prefix));
        });
        // With `Medium::Ip` the route only has to exist: every packet goes to the device.
        let routed = match remote {
            IpAddress::Ipv4(a) => iface.routes_mut().add_default_ipv4_route(a).is_ok(),
            IpAddress::Ipv6(a) => iface.routes_mut().add_default_ipv6_route(a).is_ok(),
        };
        if !routed {
            return None;
        }
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; cfg.tcp_rx_buffer]),
            tcp::SocketBuffer::new(vec![0; cfg.tcp_tx_buffer]),
        );
        socket.set_congestion_control(CongestionControl::Reno);
        socket
            .connect(
                iface.context(),
                (remote, tuple.server_port),
                (local, tuple.client_port),
            )
            .ok()?;
        let mut sockets = SocketSet::new(Vec::new());
        let handle = sockets.add(socket);
        iface.poll(ts, &mut device, &mut sockets);
        let shape = device.transmitted().find_map(|p| SynShape::capture(p))?;
        let _ = device.take_transmitted();
        let leg = TcpLeg {
            iface,
            device,
            sockets,
            handle,
            received: VecDeque::new(),
            unsent: VecDeque::new(),
            fin_received: false,
            established: false,
            reset: false,
            deadline: None,
            last_now: now_us,
        };
        Some((leg, shape))
    }

    fn socket(&mut self) -> &mut tcp::Socket<'static> {
        self.sockets.get_mut::<tcp::Socket<'static>>(self.handle)
    }

    /// The socket's TCP state.
    pub(crate) fn state(&self) -> State {
        self.sockets
            .get::<tcp::Socket<'static>>(self.handle)
            .state()
    }

    /// Queues `data` for the server; it goes out at the next drive, which
    /// [`TcpLeg::poll_timeout`] asks for at once.
    pub(crate) fn write(&mut self, data: &[u8]) {
        self.unsent.extend(data);
        self.deadline = Some(self.last_now);
    }

    /// Handles one IP packet from the server.
    pub(crate) fn handle_packet(&mut self, now_us: u64, packet: &[u8]) {
        self.device.push_received(packet.to_vec());
        self.drive(now_us);
    }

    /// Runs smoltcp's timers if their deadline has come.
    pub(crate) fn handle_timeout(&mut self, now_us: u64) {
        if self.deadline.is_some_and(|d| now_us >= d) {
            self.drive(now_us);
        }
    }

    /// When [`TcpLeg::handle_timeout`] wants to be called.
    pub(crate) fn poll_timeout(&self) -> Option<u64> {
        self.deadline
    }

    /// The next IP packet to send.
    pub(crate) fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.device.pop_transmitted()
    }

    /// Reads received bytes into `buf`; returns how many.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.received.len());
        for (dst, src) in buf.iter_mut().zip(self.received.drain(..n)) {
            *dst = src;
        }
        n
    }

    /// Bytes waiting for [`TcpLeg::read`].
    pub(crate) fn readable(&self) -> usize {
        self.received.len()
    }

    /// Whether the server's FIN arrived (everything before it is in the read buffer).
    pub(crate) fn is_complete(&self) -> bool {
        self.fin_received
    }

    /// Whether the connection ended without the server's FIN.
    pub(crate) fn is_reset(&self) -> bool {
        self.reset
    }

    /// Whether every byte written has been acknowledged by the server.
    pub(crate) fn sent_all(&self) -> bool {
        self.unsent.is_empty()
            && self.established
            && self
                .sockets
                .get::<tcp::Socket<'static>>(self.handle)
                .send_queue()
                == 0
    }

    /// Polls the interface and moves bytes between the socket and the connection's
    /// buffers until neither has more to do, then records the next deadline.
    fn drive(&mut self, now_us: u64) {
        let ts = smol_now(now_us);
        self.last_now = now_us;
        for _ in 0..MAX_ROUNDS {
            self.iface.poll(ts, &mut self.device, &mut self.sockets);
            if !self.shuttle() {
                break;
            }
        }
        // A deadline already due after a full poll would spin the caller; wait a tick.
        self.deadline = self.iface.poll_at(ts, &self.sockets).map(|at| {
            u64::try_from(at.total_micros())
                .unwrap_or(0)
                .max(now_us.saturating_add(1))
        });
    }

    /// Moves received bytes out of the socket and unsent ones in, notes the states that
    /// matter, and closes our half once the server closed its and everything is written.
    /// Returns whether anything changed.
    fn shuttle(&mut self) -> bool {
        let mut moved = false;
        let socket = self.sockets.get_mut::<tcp::Socket<'static>>(self.handle);
        while socket.can_recv() {
            let received = &mut self.received;
            let n = socket
                .recv(|buf| {
                    received.extend(buf.iter().copied());
                    (buf.len(), buf.len())
                })
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            moved = true;
        }
        while !self.unsent.is_empty() && socket.can_send() {
            let (front, _) = self.unsent.as_slices();
            let n = socket.send_slice(front).unwrap_or(0);
            if n == 0 {
                break;
            }
            self.unsent.drain(..n);
            moved = true;
        }
        let state = socket.state();
        match state {
            State::Established | State::FinWait1 | State::FinWait2 => self.established = true,
            State::CloseWait | State::LastAck | State::Closing | State::TimeWait => {
                self.established = true;
                self.fin_received = true;
            }
            State::Closed if !self.fin_received => self.reset = true,
            _ => {}
        }
        if state == State::CloseWait && self.unsent.is_empty() {
            self.socket().close();
            moved = true;
        }
        moved
    }
}

/// `addr` as smoltcp's address type.
pub(crate) fn smol_addr(addr: &crate::conn::Addr) -> IpAddress {
    match *addr {
        crate::conn::Addr::V4(a) => IpAddress::Ipv4(Ipv4Address::from(a)),
        crate::conn::Addr::V6(a) => IpAddress::Ipv6(Ipv6Address::from(a)),
    }
}
