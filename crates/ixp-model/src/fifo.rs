//! Receive and transmit FIFOs, the IX bus and the ports.
//!
//! Packets reach the IXP1200 from four 100 Mb/s Ethernet ports over the IX bus and move
//! through the receive FIFO (RFIFO) and transmit FIFO (TFIFO) in 64-byte **mpackets**
//! (stream-handlers paper §2). [`Fifo`] is one such FIFO: a bounded queue of mpacket
//! elements that refuses a push when full. [`IxBus`] is the bus as a timing resource, like
//! a [`crate::mem::MemoryUnit`]: one mpacket occupies it for
//! [`Params::ix_bus_mpacket_cycles`]. [`Port`] gives arrival times at line rate.

use alloc::collections::VecDeque;
use core::fmt;

use crate::mem::Timeline;
use crate::params::Params;

/// One mpacket in a FIFO: which packet it belongs to and its place in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mpacket {
    /// The packet's sequence number.
    pub packet: u64,
    /// Index of this mpacket within the packet (0 = start of packet).
    pub index: u32,
    /// Whether this is the packet's last mpacket (end of packet).
    pub last: bool,
    /// Payload bytes in this mpacket (1 ..= `mpacket_bytes`).
    pub bytes: u32,
}

/// A push onto a full FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FifoFull;

impl fmt::Display for FifoFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FIFO has no free element")
    }
}

impl core::error::Error for FifoFull {}

/// A receive or transmit FIFO of mpacket elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fifo {
    elements: VecDeque<Mpacket>,
    capacity: usize,
    dropped: u64,
}

impl Fifo {
    /// The IXP1200's receive FIFO ([`Params::rfifo_elements`]).
    pub fn receive(params: &Params) -> Self {
        Fifo::with_capacity(params.rfifo_elements as usize)
    }

    /// The IXP1200's transmit FIFO ([`Params::tfifo_elements`]).
    pub fn transmit(params: &Params) -> Self {
        Fifo::with_capacity(params.tfifo_elements as usize)
    }

    /// A FIFO of `capacity` elements.
    pub fn with_capacity(capacity: usize) -> Self {
        Fifo {
            elements: VecDeque::with_capacity(capacity),
            capacity,
            dropped: 0,
        }
    }

    /// Appends an mpacket.
    ///
    /// # Errors
    ///
    /// [`FifoFull`] when every element is taken; the mpacket is counted as dropped.
    pub fn push(&mut self, m: Mpacket) -> Result<(), FifoFull> {
        if self.elements.len() >= self.capacity {
            self.dropped += 1;
            return Err(FifoFull);
        }
        self.elements.push_back(m);
        Ok(())
    }

    /// Takes the oldest mpacket.
    pub fn pop(&mut self) -> Option<Mpacket> {
        self.elements.pop_front()
    }

    /// Elements in use.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    /// Whether no element is in use.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// Elements the FIFO holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Mpackets refused because the FIFO was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Pushes the mpackets of packet `packet` of `len` bytes; all or none.
    ///
    /// # Errors
    ///
    /// [`FifoFull`] if they do not all fit (nothing is pushed; one drop is counted).
    pub fn push_packet(&mut self, params: &Params, packet: u64, len: u32) -> Result<u32, FifoFull> {
        let n = params.mpackets(len);
        if self.elements.len() + n as usize > self.capacity {
            self.dropped += 1;
            return Err(FifoFull);
        }
        let size = params.mpacket_bytes.max(1);
        for index in 0..n {
            let bytes = if index + 1 == n {
                len.saturating_sub(index * size).clamp(1, size)
            } else {
                size
            };
            self.elements.push_back(Mpacket {
                packet,
                index,
                last: index + 1 == n,
                bytes,
            });
        }
        Ok(n)
    }
}

/// The IX bus as a timing resource: one mpacket per [`Params::ix_bus_mpacket_cycles`], in
/// the earliest free slot (a [`Timeline`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IxBus {
    cycles_per_mpacket: u64,
    bus: Timeline,
    busy_cycles: u64,
    mpackets: u64,
}

impl IxBus {
    /// An idle bus.
    pub fn new(params: &Params) -> Self {
        IxBus {
            cycles_per_mpacket: u64::from(params.ix_bus_mpacket_cycles()),
            bus: Timeline::default(),
            busy_cycles: 0,
            mpackets: 0,
        }
    }

    /// Moves one mpacket requested at cycle `at`; returns the cycle the transfer ends.
    pub fn transfer(&mut self, at: u64) -> u64 {
        let start = self.bus.book(at, self.cycles_per_mpacket);
        self.busy_cycles += self.cycles_per_mpacket;
        self.mpackets += 1;
        start + self.cycles_per_mpacket
    }

    /// Forgets bookings that ended by `now`; the simulator calls it as time advances.
    pub fn forget_before(&mut self, now: u64) {
        self.bus.forget_before(now);
    }

    /// Core cycles the bus has been occupied.
    pub fn busy_cycles(&self) -> u64 {
        self.busy_cycles
    }

    /// Mpackets moved.
    pub fn mpackets(&self) -> u64 {
        self.mpackets
    }
}

/// One Ethernet port: frames arrive back to back at line rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    params: Params,
}

impl Port {
    /// A port of the machine `params` describes.
    pub fn new(params: &Params) -> Self {
        Port { params: *params }
    }

    /// The cycle at which the `i`-th of back-to-back frames of `frame_bytes` has fully
    /// arrived (store and forward), the first starting at cycle 0.
    pub fn arrival(&self, frame_bytes: u32, i: u64) -> u64 {
        self.params
            .wire_cycles(frame_bytes)
            .saturating_mul(i.saturating_add(1))
    }

    /// Frames of `frame_bytes` per second at line rate.
    pub fn rate_pps(&self, frame_bytes: u32) -> u64 {
        self.params.line_rate_pps(frame_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Params = Params::IXP1200;

    #[test]
    fn fifo_is_bounded_and_ordered() {
        let mut f = Fifo::receive(&P);
        assert_eq!(f.capacity(), 16);
        // A 1000-byte packet is 16 mpackets: it fills the FIFO exactly.
        assert_eq!(f.push_packet(&P, 7, 1000), Ok(16));
        assert_eq!(f.len(), 16);
        let m = Mpacket {
            packet: 8,
            index: 0,
            last: true,
            bytes: 1,
        };
        assert_eq!(f.push(m), Err(FifoFull));
        assert_eq!(f.push_packet(&P, 8, 1), Err(FifoFull));
        assert_eq!(f.dropped(), 2);
        let first = f.pop();
        assert_eq!(
            first.map(|m| (m.packet, m.index, m.last)),
            Some((7, 0, false))
        );
        let mut last = None;
        while let Some(m) = f.pop() {
            last = Some(m);
        }
        // 1000 = 15 × 64 + 40.
        assert_eq!(
            last.map(|m| (m.index, m.last, m.bytes)),
            Some((15, true, 40))
        );
        assert!(f.is_empty());
    }

    #[test]
    fn ix_bus_serialises_mpackets() {
        let mut bus = IxBus::new(&P);
        assert_eq!(bus.transfer(0), 18);
        assert_eq!(bus.transfer(0), 36);
        assert_eq!(bus.transfer(100), 118);
        assert_eq!(bus.mpackets(), 3);
        assert_eq!(bus.busy_cycles(), 54);
    }

    #[test]
    fn port_line_rate() {
        let port = Port::new(&P);
        assert_eq!(port.rate_pps(64), 148_809);
        assert_eq!(port.arrival(64, 0), 1560);
        assert_eq!(port.arrival(64, 9), 15_600);
        // 1500-byte frames: 1520 bytes on the wire = 121.6 µs = 28,211.2 cycles, rounded up.
        assert_eq!(port.arrival(1500, 0), P.ns_to_cycles(121_600) + 1);
    }
}
