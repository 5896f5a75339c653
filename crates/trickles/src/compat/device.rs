//! An in-memory smoltcp [`Device`]: the TCP leg's (and the simulations') link to the
//! outside, as two queues of whole IP packets.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant as SmolInstant;

/// A [`Device`] over two in-memory queues: packets handed in wait in `rx` for the
/// interface; packets the interface emits collect in `tx` for the caller.
#[derive(Debug, Default)]
pub struct MemDevice {
    rx: VecDeque<Vec<u8>>,
    tx: VecDeque<Vec<u8>>,
    mtu: usize,
}

impl MemDevice {
    /// An empty device carrying IP packets of at most `mtu` bytes.
    pub fn new(mtu: usize) -> Self {
        MemDevice {
            mtu,
            ..MemDevice::default()
        }
    }

    /// Queues `packet` for the interface, as if it had arrived.
    pub fn push_received(&mut self, packet: Vec<u8>) {
        self.rx.push_back(packet);
    }

    /// Takes the packets the interface emitted, oldest first.
    pub fn take_transmitted(&mut self) -> Vec<Vec<u8>> {
        self.tx.drain(..).collect()
    }

    /// Takes the oldest packet the interface emitted.
    pub fn pop_transmitted(&mut self) -> Option<Vec<u8>> {
        self.tx.pop_front()
    }

    /// The packets emitted and not yet taken, oldest first.
    pub fn transmitted(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.tx.iter()
    }
}

/// Hands one received packet to the interface.
#[derive(Debug)]
pub struct RxToken(Vec<u8>);

/// Lets the interface write one packet into the device's transmit queue.
#[derive(Debug)]
pub struct TxToken<'a>(&'a mut VecDeque<Vec<u8>>);

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut packet = vec![0; len];
        let r = f(&mut packet);
        self.0.push_back(packet);
        r
    }
}

impl Device for MemDevice {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _: SmolInstant) -> Option<(RxToken, TxToken<'_>)> {
        let packet = self.rx.pop_front()?;
        Some((RxToken(packet), TxToken(&mut self.tx)))
    }

    fn transmit(&mut self, _: SmolInstant) -> Option<TxToken<'_>> {
        Some(TxToken(&mut self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ip;
        caps.max_transmission_unit = self.mtu;
        caps
    }
}
