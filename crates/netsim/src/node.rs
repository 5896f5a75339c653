//! What runs at a simulated node.

use alloc::vec::Vec;

use crate::Instant;

/// A sans-IO protocol core placed at a simulated node: a host, a router, anything that
/// exchanges whole packets over numbered interfaces.
///
/// The simulator calls [`handle_packet`](Node::handle_packet) when a packet arrives and
/// [`handle_timeout`](Node::handle_timeout) when the deadline from
/// [`poll_timeout`](Node::poll_timeout) comes; the node answers by putting packets in the
/// [`Outbox`]. After every call the simulator asks `poll_timeout` again.
pub trait Node {
    /// `packet` arrived on interface `iface` at `now`.
    fn handle_packet(&mut self, now: Instant, iface: usize, packet: Vec<u8>, out: &mut Outbox);

    /// The deadline the node reported has come (`now` ≥ that deadline).
    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        let _ = (now, out);
    }

    /// When the node next wants [`handle_timeout`](Node::handle_timeout), if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

/// Packets a node hands to the simulator to send, each on one of its interfaces.
#[derive(Debug, Default)]
pub struct Outbox {
    pub(crate) sends: Vec<(usize, Vec<u8>)>,
}

impl Outbox {
    /// Sends `packet` out of interface `iface`. A packet on an interface that does not
    /// exist is dropped and counted (see [`Simulator::misrouted`](crate::Simulator::misrouted)).
    pub fn send(&mut self, iface: usize, packet: Vec<u8>) {
        self.sends.push((iface, packet));
    }

    /// Packets queued so far.
    pub fn len(&self) -> usize {
        self.sends.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty()
    }
}
