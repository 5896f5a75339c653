//! An unconnected UDP socket for servers that answer many peers: batched receive
//! (recvmmsg, GRO) with each datagram's source, and batched send (GSO) of runs of equal-size
//! datagrams to one peer, all through quinn-udp.
//!
//! A server that answers a request with a window of same-size packets to one client hands
//! them to an [`Outbox`], which cuts them into runs for one `sendmsg` each (UDP GSO: the
//! kernel splits the run into datagrams), falling back to one datagram per call where the
//! kernel cannot segment. Receiving, [`UdpIo::try_recv_batch`] reads up to
//! [`BATCH`](crate::link::BATCH) `recvmmsg` slots, each possibly a GRO run of datagrams
//! from one source, and [`Batch::datagrams`] splits them back.

use std::io;
use std::net::SocketAddr;

use quinn_udp::UdpSocketState;
use tokio::io::Interest;
use tokio::net::UdpSocket;

use crate::link::{Batch, TxQueue};

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
    /// Send calls made (`sendmsg` for a GSO run, `sendmmsg` for the rest).
    pub tx_calls: u64,
    /// Datagrams dropped because the socket was full or the send failed.
    pub tx_dropped: u64,
}

/// An unconnected UDP socket with batched I/O: recvmmsg with GRO in, GSO runs and
/// sendmmsg out (the link layer's own code, see [`crate::link`]).
#[derive(Debug)]
pub struct UdpIo {
    sock: UdpSocket,
    state: UdpSocketState,
    counters: UdpCounters,
    queue: TxQueue,
    max_run: usize,
}

impl UdpIo {
    /// Binds `addr`, asking for `buffer` bytes of send and receive buffer (the kernel caps
    /// them at `net.core.{w,r}mem_max`).
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub fn bind(addr: SocketAddr, buffer: usize) -> io::Result<UdpIo> {
        let sock = crate::link::udp_socket(addr, buffer)?;
        let state = UdpSocketState::new((&sock).into())?;
        Ok(UdpIo {
            sock,
            state,
            counters: UdpCounters::default(),
            queue: TxQueue::default(),
            max_run: MAX_RUN,
        })
    }

    /// Caps GSO runs at `n` datagrams (default [`MAX_RUN`]; at most the kernel's limit).
    pub fn set_max_run(&mut self, n: usize) {
        self.max_run = n.max(1);
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

    /// Sends one datagram to `dest` now if the socket has room (tokio's readiness: after
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

    /// Receives what is waiting, up to [`BATCH`](crate::link::BATCH) slots, into `batch`; returns the number of
    /// datagrams ([`Batch::datagrams`] lists them with their sources).
    ///
    /// # Errors
    ///
    /// `WouldBlock` when nothing waits; the socket's error.
    pub fn try_recv_batch(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (sock, state) = (&self.sock, &self.state);
        let f = batch.fill_udp(usize::MAX, |slices, meta| {
            sock.try_io(Interest::READABLE, || state.recv(sock.into(), slices, meta))
        })?;
        self.counters.rx_datagrams += f.datagrams as u64;
        Ok(f.delivered())
    }

    /// Queues `packet` for `dest`; it leaves at the next [`flush`](UdpIo::flush), in a GSO
    /// run with its neighbours where it can.
    pub fn queue(&mut self, dest: SocketAddr, packet: &[u8]) {
        self.queue.push(Some(dest), packet);
    }

    /// Sends everything queued: GSO runs of up to [`set_max_run`](UdpIo::set_max_run)
    /// datagrams, the rest in `sendmmsg`. Never waits: a full socket drops and counts.
    pub fn flush(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        let s = crate::link::flush_udp(
            &self.sock,
            &self.state,
            None,
            &self.queue,
            self.max_run,
            |_| {},
        );
        self.queue.clear();
        self.counters.tx_calls += s.calls;
        self.counters.tx_datagrams += s.sent;
        self.counters.tx_dropped += s.full + s.errors + s.refused;
    }

    /// Sends `contents` to `dest` at once: one datagram, or with `segment_size` a GSO run
    /// of datagrams of that size (the last may be shorter). Never waits: a full socket
    /// drops the run and counts it.
    pub fn send(&mut self, dest: SocketAddr, contents: &[u8], segment_size: Option<usize>) {
        let seg = segment_size.unwrap_or(contents.len()).max(1);
        for d in contents.chunks(seg) {
            self.queue.push(Some(dest), d);
        }
        self.flush();
    }
}

/// Packets waiting to go out of a [`UdpIo`], cut into GSO runs at flush: kept for callers
/// written before [`UdpIo::queue`] (it is now a name for that queue).
#[derive(Debug, Default)]
pub struct Outbox;

impl Outbox {
    /// An empty outbox.
    pub fn new() -> Outbox {
        Outbox
    }

    /// Queues `packet` for `dest` ([`UdpIo::queue`]).
    pub fn push(&mut self, io: &mut UdpIo, dest: SocketAddr, packet: &[u8]) {
        io.queue(dest, packet);
    }

    /// Sends what is queued ([`UdpIo::flush`]).
    pub fn flush(&mut self, io: &mut UdpIo) {
        io.flush();
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
