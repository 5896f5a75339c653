//! A whole stateless server host: IP packets in, IP packets out.
//!
//! [`Service`] is what a daemon drives: the [`Server`] engine, its [`EventQueue`] and an
//! [`Application`]. [`Service::handle_packet`] takes one IP packet as it came off the link
//! (a TUN device, an IP-in-UDP datagram), checks it ([`ip::parse`]), runs the transport
//! checks and queues the event; [`Service::serve`] lets the application answer every
//! queued event and hands each response out as a whole IP packet, from the address the
//! request was sent to, back to its client.
//!
//! Each queued event remembers one value of the caller's choosing, `P` (for an IP-in-UDP
//! link, the UDP address the datagram came from), and gets it back with each of its
//! response packets: transient like the minisocket itself, gone when the event is
//! answered. Nothing outlives an event, so memory is bounded by the queue's capacity,
//! whatever the number of connections ([`Service::memory_bytes`]).
//!
//! Calling order: [`Service::handle_packet`] for each packet that arrives,
//! [`Service::serve`] (or [`Service::serve_parts`]) to answer, and
//! [`Service::handle_timeout`] when [`Service::poll_timeout`] comes: the end of the key
//! period, when the service rotates its server's keys ([`Service::rotate_with`]; `None`
//! otherwise).
//!
//! ```
//! use trickles::app::object::ObjectApp;
//! use trickles::app::Service;
//! use trickles::client::{ClientConfig, Demux};
//! use trickles::conn::Addr;
//! use trickles::crypto::KeySchedule;
//! use trickles::server::{Server, ServerConfig};
//! use trickles::Instant;
//!
//! let keys = KeySchedule::new(&[5; 16]);
//! let server = Server::new(ServerConfig::new(keys.key_config(0)));
//! let mut service = Service::new(server, ObjectApp::new(&keys.derive(b"ucont", 0)), 64);
//! let (c, s) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
//! let mut clients = Demux::new(ClientConfig::default(), c, 99);
//! // The synthetic object app's request: the object's length.
//! let id = clients.open(Instant::ZERO, s, 80, &3000u64.to_be_bytes()).unwrap();
//! let mut now = Instant::ZERO;
//! while !clients.get(id).unwrap().is_complete() {
//!     now = now.saturating_add(1_000);
//!     while let Some((_, packet)) = clients.poll_transmit() {
//!         // "peer" 7: where the answers go (here: nowhere in particular).
//!         let _ = service.handle_packet(now, &packet, 7u8);
//!     }
//!     let mut answers = Vec::new();
//!     service.serve(&mut |packet, peer| {
//!         assert_eq!(peer, 7);
//!         answers.push(packet.to_vec());
//!     });
//!     for a in answers {
//!         clients.handle_packet(now, &a).unwrap();
//!     }
//! }
//! let mut got = vec![0; 4000];
//! assert_eq!(clients.read(id, &mut got), 3000);
//! ```

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;

use super::{Application, EventQueue, PushError};
use crate::conn::Addr;
use crate::crypto::{Rotation, ServerKeys};
use crate::ip::{self, PacketError};
use crate::server::{Rejected, Server};
use sansio::Instant;

/// Why [`Service::handle_packet`] queued nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceError {
    /// Not an IP packet carrying an unfragmented TCP segment.
    Packet(PacketError),
    /// The transport refused the segment, or the queue was full.
    Push(PushError),
    /// The packet names another destination than the one address the host serves
    /// ([`Service::serve_only`]).
    OtherAddress,
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::Packet(e) => write!(f, "packet refused: {e}"),
            ServiceError::Push(e) => write!(f, "segment refused: {e}"),
            ServiceError::OtherAddress => f.write_str("addressed to another destination"),
        }
    }
}

impl core::error::Error for ServiceError {}

/// Packets refused by the transport, by reason ([`Rejected`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RejectedCounts {
    /// Unparsable segments or messages ([`Rejected::Wire`]).
    pub wire: u64,
    /// Request kind and continuation disagree ([`Rejected::Malformed`]).
    pub malformed: u64,
    /// Continuation MACs that did not verify ([`Rejected::Mac`]).
    pub mac: u64,
    /// Continuations older than the horizon ([`Rejected::Stale`]).
    pub stale: u64,
    /// Replays stopped by the Bloom filters ([`Rejected::Replay`]).
    pub replay: u64,
    /// Continuations of another site ([`Rejected::OtherSite`]).
    pub other_site: u64,
    /// Bad SACK proofs ([`Rejected::Proof`]).
    pub proof: u64,
    /// Requests inconsistent with their proof ([`Rejected::Plan`]).
    pub plan: u64,
    /// Requests retransmitted too often ([`Rejected::TooManyRetries`]).
    pub too_many_retries: u64,
}

impl RejectedCounts {
    /// Counts one rejection.
    pub fn count(&mut self, r: &Rejected) {
        let c = match r {
            Rejected::Wire(_) => &mut self.wire,
            Rejected::Malformed => &mut self.malformed,
            Rejected::Mac => &mut self.mac,
            Rejected::Stale => &mut self.stale,
            Rejected::Replay => &mut self.replay,
            Rejected::OtherSite => &mut self.other_site,
            Rejected::Proof(_) => &mut self.proof,
            Rejected::Plan(_) => &mut self.plan,
            Rejected::TooManyRetries => &mut self.too_many_retries,
        };
        *c += 1;
    }

    /// Each reason's count, named as logs and metrics name it (`wire`, `malformed`, `mac`,
    /// `stale`, `replay`, `other_site`, `proof`, `plan`, `too_many_retries`).
    pub fn by_reason(&self) -> [(&'static str, u64); 9] {
        [
            ("wire", self.wire),
            ("malformed", self.malformed),
            ("mac", self.mac),
            ("stale", self.stale),
            ("replay", self.replay),
            ("other_site", self.other_site),
            ("proof", self.proof),
            ("plan", self.plan),
            ("too_many_retries", self.too_many_retries),
        ]
    }

    /// Every rejection.
    pub fn total(&self) -> u64 {
        self.by_reason().iter().map(|&(_, n)| n).sum()
    }
}

/// A [`Service`]'s counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceStats {
    /// Packets given to [`Service::handle_packet`].
    pub packets: u64,
    /// Malformed IP packets ([`PacketError::Ip`]).
    pub bad_ip: u64,
    /// IP packets carrying something else than TCP.
    pub not_tcp: u64,
    /// IP fragments.
    pub fragments: u64,
    /// Packets for another destination than the one served ([`Service::serve_only`]).
    pub other_address: u64,
    /// Segments the transport refused, by reason.
    pub rejected: RejectedCounts,
    /// Segments not examined because the event queue was full.
    pub queue_full: u64,
    /// Events queued.
    pub events: u64,
    /// Events the application answered.
    pub answered: u64,
    /// Response packets handed out.
    pub responses: u64,
    /// Bytes of those packets (IP headers included).
    pub response_bytes: u64,
    /// MAC key rotations ([`Service::handle_timeout`]; a jump over several periods
    /// counts one).
    pub key_rotations: u64,
}

/// One line for a log: `1200 packets, 400 events, 400 answered, 1210 responses (1650000
/// bytes), 3 refused (mac 2, replay 1)`, then the other counters that are not 0
/// (`queue_full`, `bad_ip`, `not_tcp`, `fragments`, `other_address`, `key_rotations`).
impl fmt::Display for ServiceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} packets, {} events, {} answered, {} responses ({} bytes), {} refused",
            self.packets,
            self.events,
            self.answered,
            self.responses,
            self.response_bytes,
            self.rejected.total()
        )?;
        let mut first = true;
        for (name, n) in self
            .rejected
            .by_reason()
            .into_iter()
            .filter(|&(_, n)| n != 0)
        {
            f.write_str(if first { " (" } else { ", " })?;
            write!(f, "{name} {n}")?;
            first = false;
        }
        if !first {
            f.write_str(")")?;
        }
        let rest = [
            ("queue_full", self.queue_full),
            ("bad_ip", self.bad_ip),
            ("not_tcp", self.not_tcp),
            ("fragments", self.fragments),
            ("other_address", self.other_address),
            ("key_rotations", self.key_rotations),
        ];
        for (name, n) in rest.into_iter().filter(|&(_, n)| n != 0) {
            write!(f, ", {name} {n}")?;
        }
        Ok(())
    }
}

/// Where [`Service::serve_parts`] hands each response: its IP header, its TCP segment
/// and its event's `P`.
pub type PartsSink<'a, P> = dyn FnMut(&[u8], &[u8], P) + 'a;

/// A stateless server host: engine, event queue and application, speaking whole IP
/// packets. `P` travels with each event back to its responses (see the module docs).
pub struct Service<A, P = ()> {
    server: Server,
    queue: EventQueue,
    /// The `P` of each queued event, in queue order.
    peers: VecDeque<P>,
    app: A,
    stats: ServiceStats,
    /// Scratch for the response being wrapped, its allocation reused.
    packet: Vec<u8>,
    /// The one destination served, if set.
    address: Option<Addr>,
    /// When the server's keys rotate, if they do.
    rotation: Option<Rotation>,
}

impl<A: Application, P: Copy> Service<A, P> {
    /// A host running `app` on `server`, with room for `queue_capacity` unanswered events.
    pub fn new(server: Server, app: A, queue_capacity: usize) -> Service<A, P> {
        Service {
            server,
            queue: EventQueue::new(queue_capacity),
            peers: VecDeque::new(),
            app,
            stats: ServiceStats::default(),
            packet: Vec::new(),
            address: None,
            rotation: None,
        }
    }

    /// Rotates the server's MAC keys by `rotation` (`None`, the default: the keys never
    /// change): installs the keys of its period now, and makes the end of each period the
    /// service's deadline ([`Service::poll_timeout`]). Replicas given the same schedule,
    /// interval and clock rotate together.
    pub fn rotate_with(&mut self, rotation: Option<Rotation>) {
        if let Some(r) = &rotation {
            *self.server.keys_mut() = ServerKeys::new(&r.key_config());
        }
        self.rotation = rotation;
    }

    /// The key rotation, if the keys rotate ([`Service::rotate_with`]).
    pub fn rotation(&self) -> Option<&Rotation> {
        self.rotation.as_ref()
    }

    /// Serves only packets addressed to `address` (`None`, the default: every destination,
    /// each answered as itself). Replicas given one address and one key are an anycast
    /// service; packets naming another destination are refused
    /// ([`ServiceError::OtherAddress`]) and counted.
    pub fn serve_only(&mut self, address: Option<Addr>) {
        self.address = address;
    }

    /// Takes one IP packet that arrived at `now` from `peer` and queues its event. A
    /// refused packet leaves nothing behind but a counter.
    pub fn handle_packet(
        &mut self,
        now: Instant,
        packet: &[u8],
        peer: P,
    ) -> Result<(), ServiceError> {
        self.stats.packets += 1;
        let p = ip::parse(packet).map_err(|e| {
            match e {
                PacketError::Ip(_) => self.stats.bad_ip += 1,
                PacketError::NotTcp => self.stats.not_tcp += 1,
                PacketError::Fragment => self.stats.fragments += 1,
            }
            ServiceError::Packet(e)
        })?;
        if self.address.is_some_and(|a| a != p.dst) {
            self.stats.other_address += 1;
            return Err(ServiceError::OtherAddress);
        }
        match self
            .queue
            .push_segment(&mut self.server, now, p.src, p.dst, p.segment)
        {
            Ok(()) => {
                self.peers.push_back(peer);
                self.stats.events += 1;
                Ok(())
            }
            Err(e) => {
                match &e {
                    PushError::Rejected(r) => self.stats.rejected.count(r),
                    PushError::Full => self.stats.queue_full += 1,
                }
                Err(ServiceError::Push(e))
            }
        }
    }

    /// Lets the application answer every queued event, handing each response packet and
    /// its event's `P` to `sink`. Returns the number of events answered.
    pub fn serve(&mut self, sink: &mut dyn FnMut(&[u8], P)) -> usize {
        let mut packet = core::mem::take(&mut self.packet);
        let answered = self.serve_parts(&mut |header, segment, peer| {
            packet.clear();
            packet.extend_from_slice(header);
            packet.extend_from_slice(segment);
            sink(&packet, peer);
        });
        self.packet = packet;
        answered
    }

    /// [`serve`](Service::serve), each response packet handed over as its two parts, the
    /// IP header and the TCP segment (`header ‖ segment` is the packet `serve` gives), so
    /// a link that gathers them copies the segment once.
    pub fn serve_parts(&mut self, sink: &mut PartsSink<'_, P>) -> usize {
        let mut answered = 0;
        let mut header = [0u8; ip::MAX_HEADER_LEN];
        while let Some(msk) = self.queue.pop() {
            let Some(peer) = self.peers.pop_front() else {
                break;
            };
            answered += 1;
            let t = *msk.tuple();
            let stats = &mut self.stats;
            let mut wrap = |segment: &[u8]| {
                if let Some(n) =
                    ip::header_into(&t.server_addr, &t.client_addr, segment.len(), &mut header)
                {
                    stats.responses += 1;
                    stats.response_bytes += (n + segment.len()) as u64;
                    sink(header.get(..n).unwrap_or_default(), segment, peer);
                }
            };
            self.app.handle(msk, &self.server, &mut wrap);
        }
        self.stats.answered += answered as u64;
        answered
    }

    /// When [`Service::handle_timeout`] wants to be called: the end of the key period
    /// ([`Rotation::poll_timeout`]); `None` when the keys never rotate.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.rotation.as_ref().map(Rotation::poll_timeout)
    }

    /// Rotates the server's keys to the period `now` falls in, if its time has come
    /// ([`Rotation::handle_timeout`]: one rotation per period passed, the period's keys
    /// at once after a jump of more than two, nothing when the clock went back), counting
    /// rotations in [`ServiceStats::key_rotations`].
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(r) = &mut self.rotation {
            self.stats.key_rotations += r.handle_timeout(now, self.server.keys_mut());
        }
    }

    /// Events waiting for [`Service::serve`].
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The counters.
    pub fn stats(&self) -> ServiceStats {
        self.stats
    }

    /// The engine (its cache and replay statistics, its configuration).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The engine, mutably (its keys: [`Server::keys_mut`]; with a rotation
    /// ([`Service::rotate_with`]) the service rotates them at [`Service::handle_timeout`]).
    pub fn server_mut(&mut self) -> &mut Server {
        &mut self.server
    }

    /// The application.
    pub fn app(&self) -> &A {
        &self.app
    }

    /// The application, mutably.
    pub fn app_mut(&mut self) -> &mut A {
        &mut self.app
    }

    /// Bytes of memory the host holds: the engine's (fixed) plus the queued events', never
    /// a function of the number of connections.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.server.memory_bytes()
            + self.queue.memory_bytes()
            + self.peers.capacity() * core::mem::size_of::<P>()
            + self.packet.capacity()
    }
}

impl<A, P> fmt::Debug for Service<A, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("queued", &self.queue.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::object::ObjectApp;
    use crate::crypto::KeySchedule;
    use crate::server::ServerConfig;

    #[test]
    fn stats_read_as_one_line() {
        let s = ServiceStats {
            packets: 1200,
            events: 400,
            answered: 400,
            responses: 1210,
            response_bytes: 1_650_000,
            rejected: RejectedCounts {
                mac: 2,
                replay: 1,
                ..RejectedCounts::default()
            },
            key_rotations: 1,
            ..ServiceStats::default()
        };
        assert_eq!(
            alloc::format!("{s}"),
            "1200 packets, 400 events, 400 answered, 1210 responses (1650000 bytes), \
             3 refused (mac 2, replay 1), key_rotations 1"
        );
    }

    #[test]
    fn the_key_period_is_the_deadline_and_rotations_are_counted() {
        let schedule = KeySchedule::new(&[3; 16]);
        let app = ObjectApp::new(&schedule.derive(b"ucont", 0));
        // Built with other keys: the rotation installs its period's.
        let server = Server::new(ServerConfig::new(schedule.key_config(2)));
        let mut service: Service<_, ()> = Service::new(server, app, 8);
        assert_eq!(service.poll_timeout(), None, "no rotation: no deadline");
        service.handle_timeout(Instant::from_micros(u64::MAX));
        assert_eq!(service.stats().key_rotations, 0);
        let start = Instant::from_micros(10_000_500);
        service.rotate_with(Some(Rotation::new(schedule.clone(), 1_000_000, start)));
        assert_eq!(service.server_mut().keys_mut().current_epoch(), 10);
        assert_eq!(
            service.poll_timeout(),
            Some(Instant::from_micros(11_000_000))
        );
        service.handle_timeout(Instant::from_micros(10_999_999));
        assert_eq!(service.stats().key_rotations, 0);
        service.handle_timeout(Instant::from_micros(12_000_000));
        assert_eq!(service.stats().key_rotations, 2);
        assert_eq!(service.rotation().map(Rotation::period), Some(12));
        assert_eq!(service.server_mut().keys_mut().current_epoch(), 12);
        assert_eq!(
            service.poll_timeout(),
            Some(Instant::from_micros(13_000_000))
        );
        service.rotate_with(None);
        assert_eq!(service.poll_timeout(), None);
    }
}
