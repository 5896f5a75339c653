//! Stream handlers on the router (the network-processor paper's overlay node): UDP
//! datagrams for the stream node's data and control ports on the node's own addresses
//! are taken from the delivery path into an inbox; [`Node::run_streams`] runs them through
//! the [`StreamNode`] with the caller's meter (it times the handlers) and routes what it
//! sends like any packet the node originates.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::net::{IpAddr, SocketAddr};

use stream_handlers::node::{Event, Meter, StreamNode};
use stream_handlers::spec::Spec;
use waist_ip::udp;

use super::Node;
use crate::{Instant, StreamsConfig};

/// Datagrams that may wait for [`Node::run_streams`]; past this they are dropped and
/// counted (`dropped.local`).
pub(crate) const MAX_INBOX: usize = 4096;

/// The node's stream handlers and what waits for them.
pub(crate) struct Streams {
    pub(crate) node: StreamNode,
    /// Deployments from the config, admitted at the first run (admission needs the meter).
    pending: Vec<(u16, Spec)>,
    /// (source, port it came to, UDP payload).
    inbox: VecDeque<(SocketAddr, u16, Vec<u8>)>,
    ports: [u16; 2],
}

impl core::fmt::Debug for Streams {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Streams")
            .field("node", &self.node)
            .field("inbox", &self.inbox.len())
            .finish_non_exhaustive()
    }
}

impl Streams {
    pub(crate) fn new(cfg: &StreamsConfig) -> Self {
        Self {
            ports: [cfg.node.data_port, cfg.node.control_port],
            node: StreamNode::new(cfg.node.clone()),
            pending: cfg.deploy.clone(),
            inbox: VecDeque::new(),
        }
    }
}

impl Streams {
    /// Queues datagram `d` for the stream node: whether there was room.
    fn queue(&mut self, d: &udp::Datagram<'_>) -> bool {
        if self.inbox.len() >= MAX_INBOX {
            return false;
        }
        self.inbox
            .push_back((SocketAddr::new(d.src, d.sport), d.dport, d.data.to_vec()));
        true
    }

    /// Whether `stream` is deployed, or waits in the config to be at the first run.
    fn deploys(&self, stream: u16) -> bool {
        self.node.deploys(stream) || self.pending.iter().any(|(id, _)| *id == stream)
    }
}

impl Node {
    /// Takes `packet` (for the node) into the streams' inbox if it is a UDP datagram for
    /// their ports; whether it did (`Some(false)`: it was theirs but the inbox is full).
    pub(crate) fn take_stream(&mut self, packet: &[u8]) -> Option<bool> {
        let s = self.streams.as_mut()?;
        let d = udp::parse_datagram(packet)?;
        s.ports.contains(&d.dport).then(|| s.queue(&d))
    }

    /// A datagram passing through (`packet`, a UDP packet for another address): taken
    /// into the inbox if it is a fragment of a stream deployed here, for the data port
    /// (the fate: delivered, or dropped with a full inbox); `None`: forward it.
    pub(crate) fn take_stream_through(&mut self, packet: &[u8]) -> Option<super::Fate> {
        let s = self.streams.as_mut()?;
        let d = udp::parse_datagram(packet)?;
        if d.dport != s.ports[0] {
            return None;
        }
        let h = stream_handlers::rudp::Header::parse(d.data).ok()?;
        if !s.deploys(h.stream) {
            return None;
        }
        Some(match s.queue(&d) {
            true => super::Fate::Delivered,
            false => super::Fate::Dropped(super::Reason::Local),
        })
    }

    /// Runs the stream handlers on what arrived for them (admitting the config's
    /// deployments first, on the first call), timing each handler with `meter`; what they
    /// send is routed and waits in [`poll_transmit`](Node::poll_transmit). Call after each
    /// batch of frames, before draining the transmit queue. Nothing happens without
    /// [`Config::streams`](crate::Config::streams).
    pub fn run_streams(&mut self, now: Instant, meter: &mut dyn Meter) {
        let Some(s) = self.streams.as_mut() else {
            return;
        };
        for (stream, spec) in core::mem::take(&mut s.pending) {
            // A refusal is an event the caller logs; the node runs on without the stream.
            let _ = s.node.deploy(stream, spec, meter);
        }
        while let Some((src, port, data)) = s.inbox.pop_front() {
            s.node.handle_datagram(now, src, port, &data, meter);
        }
        let mut sends = Vec::new();
        while let Some(o) = s.node.poll_output() {
            sends.push(o);
        }
        for o in sends {
            let Some(src) = self.source_for(o.dst.ip()) else {
                self.stats.dropped.local += 1;
                continue;
            };
            let mut buf = alloc::vec![0u8; 48 + o.payload.len()];
            match udp::emit_datagram(
                src,
                o.dst.ip(),
                64,
                o.src_port,
                o.dst.port(),
                &o.payload,
                &mut buf,
            ) {
                Ok(n) => {
                    buf.truncate(n);
                    self.send(now, buf);
                }
                Err(_) => self.stats.dropped.local += 1,
            }
        }
    }

    /// The node's address of `dst`'s family.
    fn source_for(&self, dst: IpAddr) -> Option<IpAddr> {
        self.config
            .addrs
            .iter()
            .find(|a| a.is_ipv4() == dst.is_ipv4())
            .copied()
    }

    /// The stream node, if stream handlers run here.
    pub fn streams(&self) -> Option<&StreamNode> {
        self.streams.as_ref().map(|s| &s.node)
    }

    /// The stream node, to deploy or measure from outside the data path.
    pub fn streams_mut(&mut self) -> Option<&mut StreamNode> {
        self.streams.as_mut().map(|s| &mut s.node)
    }

    /// The next stream event to log (a deployment, a refusal, an overrun moving a stream
    /// to the host, a control change).
    pub fn poll_stream_event(&mut self) -> Option<Event> {
        self.streams.as_mut()?.node.poll_event()
    }
}
