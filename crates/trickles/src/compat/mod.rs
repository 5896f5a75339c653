//! Transparent TCP fallback for the client (§2.6, "Compatibility with TCP").
//!
//! A [`Connection`] opens as a Trickles client: its SYN carries the Trickles TCP option and
//! the data queued before and with [`Connection::connect`]. What the first answer is
//! decides the mode ([`Mode`]):
//!
//! * a Trickles response (the server speaks Trickles): the connection stays a Trickles
//!   [`Client`], whose request was answered from the SYN;
//! * a TCP SYN-ACK without the Trickles option (a TCP-only server, which ignored the SYN's
//!   data): the connection continues as ordinary TCP on smoltcp's
//!   [`tcp::Socket`](smoltcp::socket::tcp::Socket), sends the queued bytes again over
//!   it, and from then on [`Connection::read`] returns the TCP byte stream;
//! * a TCP RST acknowledging the SYN (nothing listens): the connection is reset.
//!
//! The application sees the same calls and the same bytes either way.
//!
//! ```text
//!                 SYN + option 253 + queued data
//!   Connection ──────────────────────────────────────►  server
//!     │  ◄── Trickles response ───  Trickles server:  Mode::Trickles (Client)
//!     │  ◄── SYN-ACK, no option ──  TCP-only server:  Mode::Tcp (smoltcp socket, data resent)
//! ```
//!
//! ## On the wire: whole IP packets
//!
//! In both modes [`Connection::poll_transmit`] returns whole IP packets (IPv4 or IPv6, as
//! the [`FourTuple`]'s addresses are) and [`Connection::handle_packet`] takes them: in
//! Trickles mode the [`Client`]'s segments get a plain IP header ([`ip::wrap`]); in TCP
//! mode the packets are smoltcp's own. So a shell hands the packets to a TUN device or a
//! raw socket unchanged, whatever the mode.
//!
//! ## The SYN
//!
//! The SYN must open a connection on a standard TCP stack too, and the TCP connection
//! must be able to go on from the server's SYN-ACK. So the smoltcp socket is opened at
//! [`Connection::connect`] and its SYN captured (never sent): the Trickles SYN carries its
//! initial sequence number (the client's ISN, drawn from smoltcp's generator seeded with
//! the connection's seed), its window and its options (MSS, window scale, SACK
//! permitted), then the Trickles option. A TCP server thus negotiates the MSS and window
//! scaling the socket expects, and the socket, still in SYN-SENT, takes the server's
//! SYN-ACK as the answer to its own SYN. (The [`Client`]'s own SYN, with only the
//! Trickles option, is accepted by smoltcp too, but a server answering it would use the
//! default 536-byte MSS and no window scaling.) A Trickles server skips the extra
//! options.
//!
//! ## Data written before `connect`
//!
//! [`Connection::request`] and [`Connection::send_data`] may be called before
//! [`Connection::connect`]: the bytes ride in the SYN to a Trickles server, as
//! [`Client::connect`] describes, and are sent again over TCP to a TCP-only server. The
//! TCP stream is the Trickles stream byte for byte: everything written with `send_data`
//! and the first `request` before `connect`, then `connect`'s data, then the later
//! `request`s made before `connect`, then everything written after.

mod device;
mod tcp_conn;

pub use device::MemDevice;

use alloc::boxed::Box;
use alloc::vec::Vec;

use sansio::Instant;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{TcpControl, TcpPacket, TcpRepr};

use crate::client::{Client, ClientConfig, ClientError};
use crate::conn::FourTuple;
use crate::ip;
use crate::wire::WireError;
use tcp_conn::smol_addr;
use tcp_conn::{SynShape, TcpLeg};

/// The most sequence space a SYN with data covers: the SYN and a whole segment.
const MAX_SYN_SPAN: u32 = 1 + crate::wire::MAX_SEGMENT_LEN as u32;

/// Settings of a [`Connection`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompatConfig {
    /// The Trickles client's settings.
    pub client: ClientConfig,
    /// The TCP socket's receive buffer, bytes (its largest window).
    pub tcp_rx_buffer: usize,
    /// The TCP socket's send buffer, bytes.
    pub tcp_tx_buffer: usize,
    /// The IP MTU: the TCP socket's MSS is this less the IP and TCP headers.
    pub mtu: usize,
}

impl Default for CompatConfig {
    fn default() -> Self {
        CompatConfig {
            client: ClientConfig::default(),
            tcp_rx_buffer: 256 << 10,
            tcp_tx_buffer: 64 << 10,
            mtu: 1500,
        }
    }
}

/// Which protocol a [`Connection`] speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No answer yet (or not connected yet): the SYN offers Trickles.
    Connecting,
    /// The server answered with Trickles.
    Trickles,
    /// The server answered with a plain TCP SYN-ACK: standard TCP from then on.
    Tcp,
}

/// Why [`Connection::new`] refused a tuple, or a packet was ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompatError {
    /// The tuple mixes IPv4 and IPv6, or has a zero port.
    BadTuple,
    /// Not an IP packet carrying TCP from the server to the client.
    NotOurs,
    /// [`Connection::connect`] has not been called.
    NotConnected,
    /// The Trickles client ignored the segment.
    Client(ClientError),
    /// A plain TCP segment that is not an answer to the SYN (while the mode is
    /// [`Mode::Connecting`] or [`Mode::Trickles`]).
    UnexpectedTcp,
}

impl core::fmt::Display for CompatError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CompatError::BadTuple => f.write_str("mixed address families or a zero port"),
            CompatError::NotOurs => f.write_str("not a TCP packet of this connection"),
            CompatError::NotConnected => f.write_str("not connected"),
            CompatError::Client(e) => write!(f, "Trickles client: {e}"),
            CompatError::UnexpectedTcp => f.write_str("plain TCP segment not answering the SYN"),
        }
    }
}

impl core::error::Error for CompatError {}

impl From<ClientError> for CompatError {
    fn from(e: ClientError) -> Self {
        CompatError::Client(e)
    }
}

/// A write made before [`Connection::connect`].
#[derive(Debug)]
enum Write {
    Data(Vec<u8>),
    Request(Vec<u8>),
}

/// Where the connection is.
#[derive(Debug)]
enum State {
    /// Before `connect`: the writes, in order.
    Unconnected(Vec<Write>),
    /// The SYN is out and nothing answered: both legs are ready.
    Probing {
        client: Box<Client>,
        tcp: Box<TcpLeg>,
        /// Every byte written so far, in stream order, to send again over TCP.
        stream: Vec<u8>,
    },
    /// Trickles from here on.
    Trickles(Box<Client>),
    /// TCP from here on.
    Tcp(Box<TcpLeg>),
    /// A TCP RST answered the SYN, or smoltcp refused to open the socket.
    Refused,
}

/// A client connection that speaks Trickles to Trickles servers and falls back to TCP
/// with the rest (§2.6). See the [module documentation](self).
///
/// Calling order, as for [`Client`]: [`Connection::connect`] (writes may come first),
/// then feed [`Connection::handle_packet`] and [`Connection::handle_timeout`], drain
/// [`Connection::poll_transmit`], re-read [`Connection::poll_timeout`], and
/// [`Connection::read`] the server's output. Packets in and out are whole IP packets.
#[derive(Debug)]
pub struct Connection {
    cfg: CompatConfig,
    tuple: FourTuple,
    seed: u64,
    state: State,
    /// The SYN's sequence number, window and options (set by `connect`).
    syn: Option<SynShape>,
}

impl Connection {
    /// A connection for `tuple`. `seed` seeds smoltcp's generator, which draws the
    /// initial sequence number (choose it at random: with the tuple, the ISN names the
    /// connection to a Trickles server). Returns [`CompatError::BadTuple`] if the
    /// addresses are of different families or a port is zero.
    pub fn new(cfg: CompatConfig, tuple: FourTuple, seed: u64) -> Result<Connection, CompatError> {
        if ip::wrap(&tuple.client_addr, &tuple.server_addr, &[]).is_none()
            || tuple.client_port == 0
            || tuple.server_port == 0
        {
            return Err(CompatError::BadTuple);
        }
        Ok(Connection {
            cfg,
            tuple,
            seed,
            state: State::Unconnected(Vec::new()),
            syn: None,
        })
    }

    /// Sends the SYN at `now`, carrying the writes made so far and `data` (see
    /// [`Client::connect`]). Calling it again does nothing.
    pub fn connect(&mut self, now: Instant, data: &[u8]) {
        let State::Unconnected(writes) = &mut self.state else {
            return;
        };
        let writes = core::mem::take(writes);
        let Some((leg, shape)) = TcpLeg::open(now.micros(), &self.tuple, &self.cfg, self.seed)
        else {
            self.state = State::Refused;
            return;
        };
        let mut client = Client::new(self.cfg.client, self.tuple, shape.isn);
        // The stream as the client will number it: `send_data` bytes and the first
        // request ahead of `data`, later requests after it (see `Client::connect`).
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        for w in &writes {
            match w {
                Write::Data(d) => {
                    client.send_data(d);
                    head.extend_from_slice(d);
                }
                Write::Request(d) => {
                    if head.is_empty() {
                        head.extend_from_slice(d);
                    } else {
                        tail.extend_from_slice(d);
                    }
                    client.request(d);
                }
            }
        }
        client.connect(now, data);
        head.extend_from_slice(data);
        head.extend_from_slice(&tail);
        self.syn = Some(shape);
        self.state = State::Probing {
            client: Box::new(client),
            tcp: Box::new(leg),
            stream: head,
        };
    }

    /// Queues `data` for the server (see [`Client::send_data`]; over TCP, it is simply
    /// appended to the stream).
    pub fn send_data(&mut self, data: &[u8]) {
        self.write(data, false);
    }

    /// Queues one application request (see [`Client::request`]; over TCP, it is simply
    /// appended to the stream).
    pub fn request(&mut self, data: &[u8]) {
        self.write(data, true);
    }

    fn write(&mut self, data: &[u8], request: bool) {
        match &mut self.state {
            State::Unconnected(writes) => writes.push(if request {
                Write::Request(data.to_vec())
            } else {
                Write::Data(data.to_vec())
            }),
            State::Probing { client, stream, .. } => {
                stream.extend_from_slice(data);
                if request {
                    client.request(data);
                } else {
                    client.send_data(data);
                }
            }
            State::Trickles(client) if request => client.request(data),
            State::Trickles(client) => client.send_data(data),
            State::Tcp(leg) => leg.write(data),
            State::Refused => {}
        }
    }

    /// The protocol the connection speaks.
    pub fn mode(&self) -> Mode {
        match self.state {
            State::Trickles(_) => Mode::Trickles,
            State::Tcp(_) => Mode::Tcp,
            _ => Mode::Connecting,
        }
    }

    /// Whether the connection fell back to TCP.
    pub fn is_tcp(&self) -> bool {
        self.mode() == Mode::Tcp
    }

    /// The connection's addresses and ports.
    pub fn tuple(&self) -> &FourTuple {
        &self.tuple
    }

    /// The initial sequence number of the SYN, once [`Connection::connect`] was called.
    pub fn isn(&self) -> Option<u32> {
        self.syn.as_ref().map(|s| s.isn)
    }

    /// The Trickles client, while the mode is [`Mode::Connecting`] (after `connect`) or
    /// [`Mode::Trickles`]: its statistics and state.
    pub fn client(&self) -> Option<&Client> {
        match &self.state {
            State::Probing { client, .. } | State::Trickles(client) => Some(client),
            _ => None,
        }
    }

    /// Whether the server output has arrived whole: the Trickles server marked its end, or
    /// the TCP server's FIN arrived.
    pub fn is_complete(&self) -> bool {
        match &self.state {
            State::Trickles(client) => client.is_complete(),
            State::Tcp(leg) => leg.is_complete(),
            _ => false,
        }
    }

    /// Whether the connection was refused or reset (a Trickles reset, a TCP RST).
    pub fn is_reset(&self) -> bool {
        match &self.state {
            State::Probing { client, .. } | State::Trickles(client) => client.is_reset(),
            State::Tcp(leg) => leg.is_reset(),
            State::Refused => true,
            State::Unconnected(_) => false,
        }
    }

    /// Whether everything written has reached the server (acknowledged by it).
    pub fn sent_all(&self) -> bool {
        match &self.state {
            State::Trickles(client) => client.sent_all(),
            State::Tcp(leg) => leg.sent_all(),
            _ => false,
        }
    }

    /// In-order server output waiting for [`Connection::read`].
    pub fn readable(&self) -> usize {
        match &self.state {
            State::Probing { client, .. } | State::Trickles(client) => client.readable(),
            State::Tcp(leg) => leg.readable(),
            _ => 0,
        }
    }

    /// Reads in-order server output into `buf`; returns how many bytes.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        match &mut self.state {
            State::Probing { client, .. } | State::Trickles(client) => client.read(buf),
            State::Tcp(leg) => leg.read(buf),
            _ => 0,
        }
    }

    /// The next IP packet to send.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        let client = match &mut self.state {
            State::Probing { client, .. } | State::Trickles(client) => client,
            State::Tcp(leg) => return leg.poll_transmit(),
            _ => return None,
        };
        let (src, dst) = (self.tuple.client_addr, self.tuple.server_addr);
        loop {
            let segment = client.poll_transmit()?;
            // The SYN goes out in the TCP socket's shape (see the module docs).
            let segment = match &self.syn {
                Some(shape) if is_syn(&segment) => shape.rewrite(&src, &dst, &segment),
                _ => Some(segment),
            };
            if let Some(packet) = segment.and_then(|s| ip::wrap(&src, &dst, &s)) {
                return Some(packet);
            }
        }
    }

    /// When [`Connection::handle_timeout`] wants to be called (possibly already past:
    /// call it at once).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.state {
            State::Probing { client, .. } | State::Trickles(client) => client.poll_timeout(),
            State::Tcp(leg) => leg.poll_timeout().map(Instant::from_micros),
            _ => None,
        }
    }

    /// Runs the timers due at `now` (retransmissions in either mode).
    pub fn handle_timeout(&mut self, now: Instant) {
        match &mut self.state {
            State::Probing { client, .. } | State::Trickles(client) => {
                client.handle_timeout(now);
            }
            State::Tcp(leg) => leg.handle_timeout(now.micros()),
            _ => {}
        }
    }

    /// Handles one IP packet from the server that arrived at `now`.
    ///
    /// While no answer has come, a Trickles response settles the mode on
    /// [`Mode::Trickles`], and a TCP SYN-ACK without the Trickles option that
    /// acknowledges the SYN switches to [`Mode::Tcp`] (the queued bytes are sent again over
    /// TCP); a TCP RST acknowledging the SYN resets the connection. Returns why a packet
    /// was ignored.
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) -> Result<(), CompatError> {
        let now_us = now.micros();
        let (src, dst, segment) = ip::unwrap(packet).ok_or(CompatError::NotOurs)?;
        if src != self.tuple.server_addr || dst != self.tuple.client_addr {
            return Err(CompatError::NotOurs);
        }
        match &mut self.state {
            State::Unconnected(_) | State::Refused => Err(CompatError::NotConnected),
            State::Tcp(leg) => {
                leg.handle_packet(now_us, packet);
                Ok(())
            }
            State::Trickles(client) => match client.handle_segment(now, segment) {
                Ok(()) => Ok(()),
                Err(ClientError::Wire(WireError::NotTrickles)) => Err(CompatError::UnexpectedTcp),
                Err(e) => Err(e.into()),
            },
            State::Probing { client, .. } => {
                let result = client.handle_segment(now, segment);
                if let Err(ClientError::Wire(WireError::NotTrickles)) = result {
                    return self.plain_answer(now_us, packet, segment);
                }
                if client.stats().responses > 0 || client.is_reset() {
                    self.settle_trickles();
                }
                result.map_err(CompatError::from)
            }
        }
    }

    /// The server spoke Trickles: drop the TCP leg and the copy of the stream.
    fn settle_trickles(&mut self) {
        let state = core::mem::replace(&mut self.state, State::Refused);
        self.state = match state {
            State::Probing { client, .. } => State::Trickles(client),
            other => other,
        };
    }

    /// A segment without the Trickles option while probing: a SYN-ACK for our SYN
    /// switches to TCP, a RST for it refuses the connection, anything else is ignored.
    fn plain_answer(
        &mut self,
        now_us: u64,
        packet: &[u8],
        segment: &[u8],
    ) -> Result<(), CompatError> {
        let isn = self.isn().ok_or(CompatError::NotConnected)?;
        let (src, dst) = (
            smol_addr(&self.tuple.server_addr),
            smol_addr(&self.tuple.client_addr),
        );
        let tcp = TcpPacket::new_checked(segment).map_err(|_| CompatError::UnexpectedTcp)?;
        let repr = TcpRepr::parse(&tcp, &src, &dst, &ChecksumCapabilities::default())
            .map_err(|_| CompatError::UnexpectedTcp)?;
        let ours =
            repr.src_port == self.tuple.server_port && repr.dst_port == self.tuple.client_port;
        // How far past the SYN's sequence number the answer acknowledges.
        let acked = repr
            .ack_number
            .map(|a| u32::from_be_bytes(a.0.to_be_bytes()).wrapping_sub(isn));
        match repr.control {
            // A SYN-ACK acknowledges the SYN alone: the server ignored its data.
            TcpControl::Syn if ours && acked == Some(1) => {
                let state = core::mem::replace(&mut self.state, State::Refused);
                if let State::Probing {
                    mut tcp, stream, ..
                } = state
                {
                    tcp.write(&stream);
                    tcp.handle_packet(now_us, packet);
                    self.state = State::Tcp(tcp);
                }
                Ok(())
            }
            // A RST acknowledges the SYN and, as RFC 9293 has it, its data too (smoltcp
            // and Linux answer a SYN to a closed port with ack = seq + 1 + data).
            TcpControl::Rst if ours && acked.is_some_and(|a| (1..=MAX_SYN_SPAN).contains(&a)) => {
                self.state = State::Refused;
                Ok(())
            }
            _ => Err(CompatError::UnexpectedTcp),
        }
    }
}

/// Whether `segment` has the SYN flag.
fn is_syn(segment: &[u8]) -> bool {
    TcpPacket::new_checked(segment).is_ok_and(|p| p.syn())
}
