//! The node in the [`netsim`] simulator: the very code a daemon runs, behind
//! [`netsim::Node`], plus end hosts, so simulations, tests and reproductions exercise it.
//!
//! A simulator tick is a microsecond. [`SimNode`] is a router ([`Node`]) or an ESP-aware
//! end host (`esp_proto::sim::Host`: sends packets at set times, reflects RB packets, keeps
//! what arrives).

use alloc::boxed::Box;
use alloc::vec::Vec;

use esp_proto::sim::Host;
use netsim::Outbox;

use crate::node::{Delivery, Node};

impl netsim::Node for Node {
    fn handle_packet(
        &mut self,
        now: netsim::Instant,
        iface: usize,
        mut frame: Vec<u8>,
        out: &mut Outbox,
    ) {
        if let Some(t) = Node::handle_packet(self, now.into(), iface, &mut frame) {
            frame.truncate(t.range.end);
            frame.drain(..t.range.start);
            out.send(t.iface, frame);
        }
        while let Some((i, f)) = self.poll_transmit_owned() {
            out.send(i, f);
        }
    }

    fn handle_timeout(&mut self, now: netsim::Instant, out: &mut Outbox) {
        Node::handle_timeout(self, now.into());
        while let Some((i, f)) = self.poll_transmit_owned() {
            out.send(i, f);
        }
    }

    fn poll_timeout(&self) -> Option<netsim::Instant> {
        Node::poll_timeout(self).map(Into::into)
    }
}

/// A node of a simulated network: a router or an end host.
#[derive(Debug)]
pub enum SimNode {
    /// A router (boxed: its contexts make it much larger than a host).
    Router(Box<Node>),
    /// An end host.
    Host(Host),
}

impl SimNode {
    /// The router, if it is one.
    pub fn router(&self) -> Option<&Node> {
        match self {
            SimNode::Router(r) => Some(r),
            SimNode::Host(_) => None,
        }
    }

    /// The router, mutably.
    pub fn router_mut(&mut self) -> Option<&mut Node> {
        match self {
            SimNode::Router(r) => Some(r),
            SimNode::Host(_) => None,
        }
    }

    /// The host, if it is one.
    pub fn host(&self) -> Option<&Host> {
        match self {
            SimNode::Host(h) => Some(h),
            SimNode::Router(_) => None,
        }
    }

    /// The host, mutably.
    pub fn host_mut(&mut self) -> Option<&mut Host> {
        match self {
            SimNode::Host(h) => Some(h),
            SimNode::Router(_) => None,
        }
    }

    /// What the router holds for itself (drained).
    pub fn take_deliveries(&mut self) -> Vec<Delivery> {
        let mut v = Vec::new();
        if let SimNode::Router(r) = self {
            while let Some(d) = r.poll_deliver() {
                v.push(d);
            }
        }
        v
    }
}

impl netsim::Node for SimNode {
    fn handle_packet(
        &mut self,
        now: netsim::Instant,
        iface: usize,
        packet: Vec<u8>,
        out: &mut Outbox,
    ) {
        match self {
            SimNode::Router(r) => netsim::Node::handle_packet(r.as_mut(), now, iface, packet, out),
            SimNode::Host(h) => h.handle_packet(now, iface, packet, out),
        }
    }

    fn handle_timeout(&mut self, now: netsim::Instant, out: &mut Outbox) {
        match self {
            SimNode::Router(r) => netsim::Node::handle_timeout(r.as_mut(), now, out),
            SimNode::Host(h) => h.handle_timeout(now, out),
        }
    }

    fn poll_timeout(&self) -> Option<netsim::Instant> {
        match self {
            SimNode::Router(r) => netsim::Node::poll_timeout(r.as_ref()),
            SimNode::Host(h) => netsim::Node::poll_timeout(h),
        }
    }
}
