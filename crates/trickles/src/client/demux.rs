//! Many client connections behind one address: the client side's demultiplexer.
//!
//! A client host (a downloader with parallel connections, a proxy relaying many TCP
//! connections) runs one [`Client`] per connection. [`Demux`] owns them: it gives each a
//! local port of its own (ephemeral range 49152–65535, next fit, freed on
//! [`Demux::close`]), hands their requests out as whole IP packets
//! ([`Demux::poll_transmit`]), routes every incoming IP packet to its connection by the
//! four-tuple ([`Demux::handle_packet`]), and runs their timers. Nothing here looks at
//! the server's identity beyond its address and port: which replica a packet goes to (and
//! comes from) is the caller's business, so a transfer moves between replicas sharing
//! keys without the connection noticing.
//!
//! Initial sequence numbers come from a SplitMix64 stream of the caller's seed; seed it
//! from the operating system's randomness (the ISN and tuple name the connection).

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::fmt;

use sansio::{Instant, SplitMix64};

use super::{Client, ClientConfig, ClientError};
use crate::conn::{Addr, FourTuple};
use crate::ip::{self, PacketError};

/// First local port [`Demux`] allocates (IANA's dynamic range).
pub const EPHEMERAL_FIRST: u16 = 49152;

/// A connection of a [`Demux`]: stable for its life, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Why a [`Demux`] call did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemuxError {
    /// Every local port is taken.
    PortsExhausted,
    /// The server's address family differs from the local address's.
    MixedFamilies,
    /// Not an IP packet carrying an unfragmented TCP segment.
    Packet(PacketError),
    /// The segment is too short to name its ports.
    Truncated,
    /// No connection has this four-tuple (a late packet of a closed connection, or
    /// somebody else's).
    NoConnection,
    /// The connection refused the segment.
    Client(ClientError),
}

impl fmt::Display for DemuxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemuxError::PortsExhausted => f.write_str("no local port left"),
            DemuxError::MixedFamilies => f.write_str("server and local address families differ"),
            DemuxError::Packet(e) => write!(f, "packet refused: {e}"),
            DemuxError::Truncated => f.write_str("segment too short for its ports"),
            DemuxError::NoConnection => f.write_str("no connection with this four-tuple"),
            DemuxError::Client(e) => write!(f, "segment refused: {e}"),
        }
    }
}

impl core::error::Error for DemuxError {}

/// One connection and its bookkeeping.
#[derive(Debug)]
struct Conn {
    client: Client,
    /// Whether it sits in the transmit queue already.
    queued: bool,
}

/// Client connections sharing one local address; see the module docs.
#[derive(Debug)]
pub struct Demux {
    cfg: ClientConfig,
    local: Addr,
    conns: BTreeMap<ConnId, Conn>,
    /// Local port → connection.
    ports: BTreeMap<u16, ConnId>,
    /// Connections that may have packets to send, each at most once.
    ready: VecDeque<ConnId>,
    next_id: u64,
    next_port: u16,
    rng: SplitMix64,
}

impl Demux {
    /// No connections yet; each will use `cfg`, the local address `local`, and ISNs drawn
    /// from `seed`.
    pub fn new(cfg: ClientConfig, local: Addr, seed: u64) -> Demux {
        Demux {
            cfg,
            local,
            conns: BTreeMap::new(),
            ports: BTreeMap::new(),
            ready: VecDeque::new(),
            next_id: 0,
            next_port: EPHEMERAL_FIRST,
            rng: SplitMix64::new(seed),
        }
    }

    /// The local address.
    pub fn local(&self) -> Addr {
        self.local
    }

    /// The low 32 bits of the next SplitMix64 draw.
    fn next_isn(&mut self) -> u32 {
        self.rng.next_u64() as u32
    }

    /// The next free local port, next fit from the last one given.
    fn allocate_port(&mut self) -> Option<u16> {
        let span = u32::from(u16::MAX - EPHEMERAL_FIRST) + 1;
        for _ in 0..span {
            let port = self.next_port;
            self.next_port = if port == u16::MAX {
                EPHEMERAL_FIRST
            } else {
                port + 1
            };
            if !self.ports.contains_key(&port) {
                return Some(port);
            }
        }
        None
    }

    /// Opens a connection to `server`:`port` at `now` whose SYN carries `request` (and
    /// [`Demux::get_mut`] queues more). Its packets come out of [`Demux::poll_transmit`].
    pub fn open(
        &mut self,
        now: Instant,
        server: Addr,
        port: u16,
        request: &[u8],
    ) -> Result<ConnId, DemuxError> {
        if core::mem::discriminant(&server) != core::mem::discriminant(&self.local) {
            return Err(DemuxError::MixedFamilies);
        }
        let local_port = self.allocate_port().ok_or(DemuxError::PortsExhausted)?;
        let tuple = FourTuple {
            client_addr: self.local,
            client_port: local_port,
            server_addr: server,
            server_port: port,
        };
        let isn = self.next_isn();
        let mut client = Client::new(self.cfg, tuple, isn);
        client.connect(now, request);
        let id = ConnId(self.next_id);
        self.next_id += 1;
        self.ports.insert(local_port, id);
        self.conns.insert(
            id,
            Conn {
                client,
                queued: true,
            },
        );
        self.ready.push_back(id);
        Ok(id)
    }

    /// Routes one IP packet that arrived at `now` to its connection and returns which.
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) -> Result<ConnId, DemuxError> {
        let p = ip::parse(packet).map_err(DemuxError::Packet)?;
        let ports = p.segment.get(..4).ok_or(DemuxError::Truncated)?;
        let src_port = u16::from_be_bytes([ports[0], ports[1]]);
        let dst_port = u16::from_be_bytes([ports[2], ports[3]]);
        let id = *self.ports.get(&dst_port).ok_or(DemuxError::NoConnection)?;
        let conn = self.conns.get_mut(&id).ok_or(DemuxError::NoConnection)?;
        let t = conn.client.tuple();
        if p.dst != t.client_addr || p.src != t.server_addr || src_port != t.server_port {
            return Err(DemuxError::NoConnection);
        }
        let result = conn.client.handle_segment(now, p.segment);
        Self::mark(&mut self.ready, id, conn);
        result.map(|()| id).map_err(DemuxError::Client)
    }

    fn mark(ready: &mut VecDeque<ConnId>, id: ConnId, conn: &mut Conn) {
        if !conn.queued {
            conn.queued = true;
            ready.push_back(id);
        }
    }

    /// The next request of any connection, as a whole IP packet.
    pub fn poll_transmit(&mut self) -> Option<(ConnId, Vec<u8>)> {
        while let Some(&id) = self.ready.front() {
            let Some(conn) = self.conns.get_mut(&id) else {
                self.ready.pop_front();
                continue;
            };
            if let Some(segment) = conn.client.poll_transmit() {
                let t = *conn.client.tuple();
                if let Some(packet) = ip::wrap(&t.client_addr, &t.server_addr, &segment) {
                    return Some((id, packet));
                }
                continue;
            }
            conn.queued = false;
            self.ready.pop_front();
        }
        None
    }

    /// The earliest deadline of any connection (see [`Client::poll_timeout`]). Costs one
    /// look at each connection.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.conns
            .values()
            .filter_map(|c| c.client.poll_timeout())
            .min()
    }

    /// Runs the timers of every connection whose deadline has come by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        for (&id, conn) in &mut self.conns {
            if conn.client.poll_timeout().is_some_and(|d| d <= now) {
                conn.client.handle_timeout(now);
                Self::mark(&mut self.ready, id, conn);
            }
        }
    }

    /// A connection.
    pub fn get(&self, id: ConnId) -> Option<&Client> {
        self.conns.get(&id).map(|c| &c.client)
    }

    /// A connection, mutably (to queue requests or data; its packets are picked up by the
    /// next [`Demux::poll_transmit`]).
    pub fn get_mut(&mut self, id: ConnId) -> Option<&mut Client> {
        let conn = self.conns.get_mut(&id)?;
        Self::mark(&mut self.ready, id, conn);
        Some(&mut conn.client)
    }

    /// Reads connection `id`'s in-order output into `buf` (0 for an unknown connection).
    pub fn read(&mut self, id: ConnId, buf: &mut [u8]) -> usize {
        self.conns.get_mut(&id).map_or(0, |c| c.client.read(buf))
    }

    /// Connection `id`'s in-order output waiting to be read, in place ([`Client::peek`];
    /// empty for an unknown id).
    pub fn peek(&self, id: ConnId) -> &[u8] {
        self.conns.get(&id).map_or(&[], |c| c.client.peek())
    }

    /// Drops the first `n` bytes of [`Demux::peek`] ([`Client::consume`]).
    pub fn consume(&mut self, id: ConnId, n: usize) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.client.consume(n);
        }
    }

    /// Removes a connection, freeing its port; its late packets then meet
    /// [`DemuxError::NoConnection`].
    pub fn close(&mut self, id: ConnId) -> Option<Client> {
        let conn = self.conns.remove(&id)?;
        self.ports.remove(&conn.client.tuple().client_port);
        Some(conn.client)
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// The open connections, in opening order.
    pub fn ids(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.conns.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demux() -> Demux {
        Demux::new(ClientConfig::default(), Addr::V4([10, 0, 0, 1]), 1)
    }

    #[test]
    fn ports_are_allocated_next_fit_and_freed() {
        let mut d = demux();
        let s = Addr::V4([10, 0, 0, 2]);
        let a = d.open(Instant::ZERO, s, 80, b"a").unwrap();
        let b = d.open(Instant::ZERO, s, 80, b"b").unwrap();
        assert_eq!(d.get(a).unwrap().tuple().client_port, EPHEMERAL_FIRST);
        assert_eq!(d.get(b).unwrap().tuple().client_port, EPHEMERAL_FIRST + 1);
        assert_ne!(d.get(a).unwrap().tuple(), d.get(b).unwrap().tuple());
        assert!(d.close(a).is_some());
        assert!(d.get(a).is_none());
        assert_eq!(d.len(), 1);
        // Next fit: the freed port is used again only after the range wraps.
        let c = d.open(Instant::ZERO, s, 80, b"c").unwrap();
        assert_eq!(d.get(c).unwrap().tuple().client_port, EPHEMERAL_FIRST + 2);
        assert_eq!(
            d.open(Instant::ZERO, Addr::V6([0; 16]), 80, b""),
            Err(DemuxError::MixedFamilies)
        );
    }

    #[test]
    fn every_port_once_then_exhausted() {
        let mut d = demux();
        let s = Addr::V4([10, 0, 0, 2]);
        let n = usize::from(u16::MAX - EPHEMERAL_FIRST) + 1;
        for _ in 0..n {
            d.open(Instant::ZERO, s, 80, b"").unwrap();
        }
        assert_eq!(
            d.open(Instant::ZERO, s, 80, b""),
            Err(DemuxError::PortsExhausted)
        );
        let first = d.ids().next().unwrap();
        d.close(first);
        let again = d.open(Instant::ZERO, s, 80, b"").unwrap();
        assert_eq!(d.get(again).unwrap().tuple().client_port, EPHEMERAL_FIRST);
    }

    #[test]
    fn syns_come_out_as_ip_packets_once() {
        let mut d = demux();
        let s = Addr::V4([10, 0, 0, 2]);
        let a = d.open(Instant::ZERO, s, 80, b"GET /").unwrap();
        let b = d.open(Instant::ZERO, s, 81, b"GET /").unwrap();
        let (ia, pa) = d.poll_transmit().unwrap();
        let (ib, pb) = d.poll_transmit().unwrap();
        assert_eq!((ia, ib), (a, b));
        assert!(d.poll_transmit().is_none());
        let p = ip::parse(&pa).unwrap();
        assert_eq!((p.src, p.dst), (Addr::V4([10, 0, 0, 1]), s));
        assert_eq!(&p.segment[2..4], &80u16.to_be_bytes());
        assert_eq!(&ip::parse(&pb).unwrap().segment[2..4], &81u16.to_be_bytes());
    }

    #[test]
    fn strangers_are_refused() {
        let mut d = demux();
        let s = Addr::V4([10, 0, 0, 2]);
        let a = d.open(Instant::ZERO, s, 80, b"x").unwrap();
        let port = d.get(a).unwrap().tuple().client_port;
        // A segment from the right server to an unknown port, from the wrong port, from
        // the wrong address.
        let mut seg = [0u8; 24];
        seg[..2].copy_from_slice(&80u16.to_be_bytes());
        seg[2..4].copy_from_slice(&(port + 1).to_be_bytes());
        let local = Addr::V4([10, 0, 0, 1]);
        let p = ip::wrap(&s, &local, &seg).unwrap();
        assert_eq!(
            d.handle_packet(Instant::ZERO, &p),
            Err(DemuxError::NoConnection)
        );
        seg[2..4].copy_from_slice(&port.to_be_bytes());
        seg[..2].copy_from_slice(&81u16.to_be_bytes());
        let p = ip::wrap(&s, &local, &seg).unwrap();
        assert_eq!(
            d.handle_packet(Instant::ZERO, &p),
            Err(DemuxError::NoConnection)
        );
        seg[..2].copy_from_slice(&80u16.to_be_bytes());
        let p = ip::wrap(&Addr::V4([10, 0, 0, 3]), &local, &seg).unwrap();
        assert_eq!(
            d.handle_packet(Instant::ZERO, &p),
            Err(DemuxError::NoConnection)
        );
        // The right tuple reaches the client, which checks the segment itself.
        let p = ip::wrap(&s, &local, &seg).unwrap();
        assert!(matches!(
            d.handle_packet(Instant::ZERO, &p),
            Err(DemuxError::Client(_))
        ));
        assert!(matches!(
            d.handle_packet(Instant::ZERO, &p[..3]),
            Err(DemuxError::Packet(_))
        ));
        let short = ip::wrap(&s, &local, &seg[..3]).unwrap();
        assert_eq!(
            d.handle_packet(Instant::ZERO, &short),
            Err(DemuxError::Truncated)
        );
    }
}
