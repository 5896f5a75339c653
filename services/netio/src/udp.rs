//! An unconnected UDP socket for servers that answer many peers: batched receive
//! (recvmmsg, GRO) with each datagram's source, and batched send (GSO) of runs of equal-size
//! datagrams to one peer, all through quinn-udp.
//!
//! A server that answers a request with a window of same-size packets to one client hands
//! them to an [`Outbox`], which cuts them into runs for one `sendmsg` each (UDP GSO: the
//! kernel splits the run into datagrams), falling back to one datagram per call where the
//! kernel cannot segment. Receiving, [`UdpIo::try_recv_batch`] reads up to
//! [`BATCH`] `recvmmsg` slots, each possibly a GRO run of datagrams
//! from one source, and [`Batch::datagrams`] splits them back.

use std::io;
use std::net::SocketAddr;

use quinn_udp::{Transmit, UdpSocketState};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use crate::link::{BATCH, Batch};

/// Most datagrams one GSO run carries. Longer runs save syscalls but land at the receiver
/// as one burst: with a thousand Trickles connections behind one client socket, runs of
/// 64 overflowed it often enough that a tenth of the transfers stalled in timeouts; 16 kept
/// them flowing (tests/memory.rs of trickles-web).
pub const MAX_RUN: usize = 16;

/// Counters of a [`UdpIo`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpCounters {
    /// Datagrams received.
    pub rx_datagrams: u64,
    /// Datagrams sent (a GSO run counts its segments).
    pub tx_datagrams: u64,
    /// `sendmsg` calls made.
    pub tx_calls: u64,
    /// Datagrams dropped because the socket was full or the send failed.
    pub tx_dropped: u64,
}

/// An unconnected UDP socket with quinn-udp's batched I/O.
#[derive(Debug)]
pub struct UdpIo {
    sock: UdpSocket,
    state: UdpSocketState,
    counters: UdpCounters,
}

impl UdpIo {
    /// Binds `addr`, asking for `buffer` bytes of send and receive buffer (the kernel caps
    /// them at `net.core.{w,r}mem_max`).
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub fn bind(addr: SocketAddr, buffer: usize) -> io::Result<UdpIo> {
        use socket2::{Domain, Protocol, Socket, Type};
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        let _ = s.set_recv_buffer_size(buffer);
        let _ = s.set_send_buffer_size(buffer);
        s.set_nonblocking(true)?;
        s.bind(&addr.into())?;
        let sock = UdpSocket::from_std(s.into())?;
        let state = UdpSocketState::new((&sock).into())?;
        Ok(UdpIo {
            sock,
            state,
            counters: UdpCounters::default(),
        })
    }

    /// The bound address.
    ///
    /// # Errors
    ///
    /// The socket's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Waits until a datagram may be read.
    ///
    /// # Errors
    ///
    /// The socket's error.
    pub async fn readable(&self) -> io::Result<()> {
        self.sock.readable().await
    }

    /// Waits until a datagram may be sent.
    ///
    /// # Errors
    ///
    /// The socket's error.
    pub async fn writable(&self) -> io::Result<()> {
        self.sock.writable().await
    }

    /// Sends one datagram to `dest` if the socket has room (tokio's readiness: after
    /// `WouldBlock`, await [`UdpIo::writable`]).
    ///
    /// # Errors
    ///
    /// `WouldBlock` when the socket is full; the socket's error.
    pub fn try_send_to(&mut self, packet: &[u8], dest: SocketAddr) -> io::Result<usize> {
        let r = self.sock.try_send_to(packet, dest);
        if r.is_ok() {
            self.counters.tx_calls += 1;
            self.counters.tx_datagrams += 1;
        }
        r
    }

    /// Most segments one GSO send may carry here (1 without GSO).
    pub fn max_segments(&self) -> usize {
        self.state.max_gso_segments()
    }

    /// The counters.
    pub fn counters(&self) -> UdpCounters {
        self.counters
    }

    /// Receives what is waiting, up to [`BATCH`] slots, into `batch`; returns the number of
    /// datagrams ([`Batch::datagrams`] lists them with their sources).
    ///
    /// # Errors
    ///
    /// `WouldBlock` when nothing waits; the socket's error.
    pub fn try_recv_batch(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let n = batch.fill(|bufs, meta| {
            self.sock.try_io(Interest::READABLE, || {
                let mut it = bufs.iter_mut();
                let mut slices: [io::IoSliceMut<'_>; BATCH] = std::array::from_fn(|_| {
                    io::IoSliceMut::new(it.next().map_or(&mut [][..], |b| &mut b[..]))
                });
                self.state.recv((&self.sock).into(), &mut slices, meta)
            })
        })?;
        self.counters.rx_datagrams += n as u64;
        Ok(n)
    }

    /// Sends `contents` to `dest` at once: one datagram, or with `segment_size` a GSO run
    /// of datagrams of that size (the last may be shorter). Never waits: a full socket
    /// drops the run and counts it.
    pub fn send(&mut self, dest: SocketAddr, contents: &[u8], segment_size: Option<usize>) {
        let segments = segment_size.map_or(1, |s| contents.len().div_ceil(s.max(1)));
        let t = Transmit {
            destination: dest,
            ecn: None,
            contents,
            segment_size: segment_size.filter(|_| segments > 1),
            src_ip: None,
        };
        // Straight to the non-blocking socket, not through tokio's readiness (nobody
        // awaits writability here: a full socket drops, as a router's queue does).
        let r = self.state.try_send((&self.sock).into(), &t);
        self.counters.tx_calls += 1;
        match r {
            Ok(()) => self.counters.tx_datagrams += segments as u64,
            Err(_) => self.counters.tx_dropped += segments as u64,
        }
    }
}

/// Packets waiting to go out of a [`UdpIo`], cut into GSO runs: consecutive packets to one
/// destination, all of one size but the last, at most the socket's segment limit.
#[derive(Debug, Default)]
pub struct Outbox {
    dest: Option<SocketAddr>,
    segment: usize,
    count: usize,
    /// The last packet was shorter than the run's size: the run is closed.
    closed: bool,
    buf: Vec<u8>,
}

impl Outbox {
    /// An empty outbox.
    pub fn new() -> Outbox {
        Outbox::default()
    }

    /// Queues `packet` for `dest`, sending the run before it when it cannot join it.
    pub fn push(&mut self, io: &mut UdpIo, dest: SocketAddr, packet: &[u8]) {
        let joins = self.dest == Some(dest)
            && !self.closed
            && packet.len() <= self.segment
            && self.count < io.max_segments().min(MAX_RUN);
        if !joins {
            self.flush(io);
            self.dest = Some(dest);
            self.segment = packet.len();
        }
        self.buf.extend_from_slice(packet);
        self.count += 1;
        self.closed = packet.len() < self.segment;
    }

    /// Sends the run in progress.
    pub fn flush(&mut self, io: &mut UdpIo) {
        if let Some(dest) = self.dest.take()
            && !self.buf.is_empty()
        {
            let seg = (self.count > 1).then_some(self.segment);
            io.send(dest, &self.buf, seg);
        }
        self.buf.clear();
        self.count = 0;
        self.closed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_arrive_as_the_datagrams_they_were() {
        let mut a = UdpIo::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        let mut b = UdpIo::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let mut out = Outbox::new();
        // Three of 100 bytes and one of 40 (a run), then 100 to another run after a
        // destination change, then a single one.
        let sizes = [100usize, 100, 100, 40, 100, 7];
        for (i, &n) in sizes.iter().enumerate() {
            let dest = if i == 5 { a_addr } else { b_addr };
            out.push(&mut a, dest, &vec![i as u8; n]);
        }
        out.flush(&mut a);
        // b gets five datagrams of the right sizes and bytes, from a.
        let mut got = Vec::new();
        let mut batch = Batch::new();
        while got.len() < 5 {
            b.readable().await.unwrap();
            if b.try_recv_batch(&mut batch).is_ok() {
                for (from, d) in batch.datagrams() {
                    assert_eq!(from, a_addr);
                    got.push(d.to_vec());
                }
            }
        }
        assert_eq!(
            got.iter().map(Vec::len).collect::<Vec<_>>(),
            [100, 100, 100, 40, 100]
        );
        for (i, d) in got.iter().enumerate() {
            assert!(d.iter().all(|&x| usize::from(x) == i), "datagram {i}");
        }
        a.readable().await.unwrap();
        assert_eq!(a.try_recv_batch(&mut batch).unwrap(), 1);
        assert_eq!(a.counters().tx_datagrams, 6);
        assert!(a.counters().tx_calls <= 4, "{:?}", a.counters());
    }
}
