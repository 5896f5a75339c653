//! Time on the data path: the source-to-destination latency of one message (Fig. 4) and
//! the throughput an intermediate node sustains with a deployment (Fig. 5).
//!
//! ```text
//!  source host ──100 Mb/s──▶ intermediate (IXP or host) ──100 Mb/s──▶ destination host(s)
//!   user RUDP                 Rx ─ handlers ─ Tx                         user RUDP
//! ```
//!
//! Messages travel as RUDP packets of at most [`PathParams::rudp_payload`] bytes. On the
//! IXP, Rx-side handlers run during receive processing and each packet is forwarded once its
//! last mpacket is in SDRAM (per-packet store and forward); in-transit handlers run on the
//! assembled message. On the host, RUDP runs at user level over raw sockets and handlers run
//! once the message is assembled (paper §4), so the host forwards whole messages. Every cost
//! comes from [`HandlerCosts`], [`HostParams`] and [`PathParams`].

use alloc::vec::Vec;

use crate::costs::{HandlerCosts, NpCycles};
use crate::host::HostParams;
use stream_handlers::deploy::{Deployment, Point, PointWork};
use stream_handlers::rudp::HEADER_LEN;

/// Protocol and topology parameters of the path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathParams {
    /// Application bytes per RUDP packet (1400: a 1500-byte MTU less IP and RUDP headers,
    /// rounded down).
    pub rudp_payload: u64,
    /// IP header bytes (20).
    pub ip_header: u64,
    /// Ethernet header and FCS bytes (18); preamble and gap come from `Params`.
    pub ethernet_header: u64,
    /// Data packets per acknowledgement (2: a delayed cumulative ack).
    pub ack_every: u64,
    /// Ports towards destinations (the IXP's four less the input; the host's NICs alike).
    pub output_ports: u64,
}

impl PathParams {
    /// The paper's setup (§4): 100 Mb/s Ethernet, 1500-byte MTU, one input and three
    /// output ports.
    pub const PAPER: PathParams = PathParams {
        rudp_payload: 1400,
        ip_header: 20,
        ethernet_header: 18,
        ack_every: 2,
        output_ports: 3,
    };

    /// RUDP packets a `len`-byte message takes (at least one).
    pub fn packet_count(&self, len: u64) -> u64 {
        len.div_ceil(self.rudp_payload.max(1)).max(1)
    }

    /// Payload bytes of each RUDP packet of a `len`-byte message (one entry per packet:
    /// the path models' time and memory are linear in the packet count).
    pub fn packets(&self, len: u64) -> Vec<u64> {
        let p = self.rudp_payload.max(1);
        let n = len.div_ceil(p).max(1);
        (0..n).map(|i| len.saturating_sub(i * p).min(p)).collect()
    }

    /// Frame bytes (Ethernet header to FCS) carrying `payload` application bytes.
    pub fn frame(&self, payload: u64) -> u64 {
        payload + HEADER_LEN as u64 + self.ip_header + self.ethernet_header
    }
}

impl Default for PathParams {
    fn default() -> Self {
        Self::PAPER
    }
}

/// The machines on the path.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Machines {
    /// The IXP.
    pub np: HandlerCosts,
    /// The hosts (source, destination, and the intermediate host when it is one).
    pub host: HostParams,
    /// Protocol and ports.
    pub path: PathParams,
}

impl Machines {
    /// Serialization time of a frame of `frame` bytes at the port rate, ns (preamble,
    /// gap and minimum frame from `Params`).
    pub fn wire_ns(&self, frame: u64) -> f64 {
        let p = &self.np.params;
        let bytes = frame.max(u64::from(p.min_frame_bytes)) + u64::from(p.ethernet_overhead_bytes);
        bytes as f64 * 8.0 * 1e9 / self.np.port_bps()
    }

    /// NP receive-thread cycles for one packet of `payload` bytes.
    pub fn np_rx_packet_cycles(&self, payload: u64) -> u64 {
        self.np.mpackets(self.path.frame(payload)) * self.np.rx_mpacket_cycles()
            + self.np.rudp_packet_cycles()
    }

    /// NP transmit-thread cycles for one packet of `payload` bytes.
    pub fn np_tx_packet_cycles(&self, payload: u64) -> u64 {
        self.np.mpackets(self.path.frame(payload)) * self.np.tx_mpacket_cycles()
            + self.np.rudp_packet_cycles()
    }

    /// A user-level source host sending packet `payload`, ns.
    fn src_packet_ns(&self, payload: u64) -> f64 {
        self.host.send_packet_ns(payload, true)
    }

    /// A user-level destination host receiving packet `payload`, ns.
    fn dst_packet_ns(&self, payload: u64) -> f64 {
        self.host.recv_packet_ns(payload, true)
    }
}

/// Which machine the intermediate node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// The IXP forwards; handlers run at its points.
    Np,
    /// A host forwards at user level.
    Host,
}

/// Source-to-destination latency of one `len`-byte message through `node` running
/// `work`, ns: the time from the source's send call to the destination's delivery.
pub fn latency_ns(m: &Machines, node: Node, work: &PointWork, len: u64) -> f64 {
    let pkts = m.path.packets(len);
    let mut src = m.host.message_ns;
    let mut l1 = 0.0f64;
    let mut arrivals = Vec::with_capacity(pkts.len());
    for &p in &pkts {
        src += m.src_packet_ns(p);
        l1 = l1.max(src) + m.wire_ns(m.path.frame(p));
        arrivals.push(l1);
    }
    // Departure times from the intermediate node.
    let mut departs = Vec::with_capacity(pkts.len());
    match node {
        Node::Np => {
            let rx_handlers = work.at(Point::RxSide).np_cycles(&m.np);
            let transit = work.at(Point::InTransit).np_cycles(&m.np);
            let tx_handlers = work.at(Point::TxSide).np_cycles(&m.np);
            let mut rx = 0.0f64;
            let mut tx = 0.0f64;
            let last = arrivals.last().copied().unwrap_or(0.0);
            for (i, (&p, &a)) in pkts.iter().zip(&arrivals).enumerate() {
                let first = if i == 0 { rx_handlers + tx_handlers } else { 0 };
                rx = rx.max(a) + m.np.ns(m.np_rx_packet_cycles(p) + first);
                // An in-transit handler needs the whole message before anything leaves.
                let ready = if transit > 0 {
                    last + m.np.ns(transit)
                } else {
                    rx
                };
                tx = tx.max(ready)
                    + m.np
                        .ns(m.np.rudp_packet_cycles() + m.np.tx_mpacket_cycles());
                departs.push(tx);
            }
        }
        Node::Host => {
            let mut cpu = 0.0f64;
            for (&p, &a) in pkts.iter().zip(&arrivals) {
                cpu = cpu.max(a) + m.host.recv_packet_ns(p, true);
            }
            let w = work.at(Point::HostUser).plus(work.at(Point::HostKernel));
            cpu += m.host.message_ns + m.host.handler_ns(&w);
            for &p in &pkts {
                cpu += m.host.send_packet_ns(p, true);
                departs.push(cpu);
            }
        }
    }
    let mut l2 = 0.0f64;
    let mut dst = 0.0f64;
    for (&p, &d) in pkts.iter().zip(&departs) {
        l2 = l2.max(d) + m.wire_ns(m.path.frame(p));
        dst = dst.max(l2) + m.dst_packet_ns(p);
    }
    dst + m.host.message_ns
}

/// Per-message busy time of each resource of an intermediate node, ns. The node's
/// throughput is set by the largest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodeLoad {
    /// The input port's wire.
    pub wire_in: f64,
    /// The busiest output port's wire.
    pub wire_out: f64,
    /// The NP receive thread of the input port (with Rx-side handlers).
    pub np_rx: f64,
    /// The NP context running in-transit handlers.
    pub np_transit: f64,
    /// The busiest NP transmit thread (with Tx-side handlers).
    pub np_tx: f64,
    /// The host CPU.
    pub host: f64,
}

impl NodeLoad {
    /// The bottleneck's busy time per message, ns.
    pub fn bottleneck_ns(&self) -> f64 {
        [
            self.wire_in,
            self.wire_out,
            self.np_rx,
            self.np_transit,
            self.np_tx,
            self.host,
        ]
        .into_iter()
        .fold(0.0, f64::max)
    }

    /// Input data the node sustains, Mb/s, for `len`-byte messages.
    pub fn throughput_mbps(&self, len: u64) -> f64 {
        let t = self.bottleneck_ns();
        if t > 0.0 {
            len as f64 * 8.0 * 1e3 / t
        } else {
            0.0
        }
    }
}

/// What the intermediate node's resources spend per `len`-byte message with `work` placed
/// as given. Host work in an NP deployment runs on the host behind the NP (kernel or user
/// level), paying its receive and send paths there.
pub fn node_load(m: &Machines, node: Node, work: &PointWork, len: u64) -> NodeLoad {
    let pkts = m.path.packets(len);
    let n = pkts.len() as u64;
    let acks = n.div_ceil(m.path.ack_every.max(1));
    let outputs = work.outputs;
    let per_port = outputs.div_ceil(m.path.output_ports.max(1));
    let wire: f64 = pkts.iter().map(|&p| m.wire_ns(m.path.frame(p))).sum();
    let mut load = NodeLoad {
        wire_in: wire,
        wire_out: wire * per_port as f64,
        ..NodeLoad::default()
    };
    let host_work = work.at(Point::HostUser).plus(work.at(Point::HostKernel));
    let user = work.at(Point::HostUser) != stream_handlers::Work::default();
    let host_path = |user: bool| -> f64 {
        let recv: f64 = pkts.iter().map(|&p| m.host.recv_packet_ns(p, user)).sum();
        let send: f64 = pkts.iter().map(|&p| m.host.send_packet_ns(p, user)).sum();
        let ack_in = acks as f64 * m.host.recv_packet_ns(0, user);
        let ack_out = acks as f64 * m.host.send_packet_ns(0, user);
        recv + ack_out
            + m.host.message_ns
            + m.host.handler_ns(&host_work)
            + outputs as f64 * (send + ack_in + m.host.message_ns)
    };
    match node {
        Node::Host => load.host = host_path(user || host_work == stream_handlers::Work::default()),
        Node::Np => {
            let rx: u64 = pkts.iter().map(|&p| m.np_rx_packet_cycles(p)).sum::<u64>()
                + work.at(Point::RxSide).np_cycles(&m.np)
                + acks * m.np.rudp_packet_cycles();
            load.np_rx = m.np.ns(rx);
            load.np_transit = m.np.ns(work.at(Point::InTransit).np_cycles(&m.np));
            let tx_one: u64 = pkts.iter().map(|&p| m.np_tx_packet_cycles(p)).sum::<u64>()
                + acks * (m.np.rx_mpacket_cycles() + m.np.rudp_packet_cycles());
            let tx_handlers = work.at(Point::TxSide).np_cycles(&m.np);
            load.np_tx =
                m.np.ns(per_port * tx_one + tx_handlers.div_ceil(m.path.output_ports.max(1)));
            if host_work != stream_handlers::Work::default() || work.uses_host() {
                load.host = host_path(user);
            }
        }
    }
    load
}

/// Per-message time of a back-to-back stream of `len`-byte messages from source to
/// destination, ns: the busiest of the source host's CPU, the intermediate node's resources
/// and the destination host's CPU (a pipeline moves one message per bottleneck time).
pub fn stream_ns(m: &Machines, node: Node, work: &PointWork, len: u64) -> f64 {
    let pkts = m.path.packets(len);
    let acks = (pkts.len() as u64).div_ceil(m.path.ack_every.max(1)) as f64;
    let src: f64 = pkts.iter().map(|&p| m.src_packet_ns(p)).sum::<f64>()
        + acks * m.host.recv_packet_ns(0, true)
        + m.host.message_ns;
    let dst: f64 = pkts.iter().map(|&p| m.dst_packet_ns(p)).sum::<f64>()
        + acks * m.host.send_packet_ns(0, true)
        + m.host.message_ns;
    node_load(m, node, work, len)
        .bottleneck_ns()
        .max(src)
        .max(dst)
}

/// [`node_load`] for a deployment: the IXP if it has any NP stage, else the host.
pub fn deployment_load(m: &Machines, dep: &Deployment, len: u64) -> NodeLoad {
    let node = if dep.stages.iter().any(|s| s.point.on_np()) || dep.stages.is_empty() {
        Node::Np
    } else {
        Node::Host
    };
    node_load(m, node, &dep.work_by_point(len), len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;
    use stream_handlers::handlers::{ByteSwap, ContentRouter, Mirror};
    use stream_handlers::{Field, StreamHandler};

    fn route_work(point: Point) -> PointWork {
        Deployment::single(
            point,
            Box::new(ContentRouter::new(Field::new(0, 2), Some(1), 8)),
        )
        .work_by_point(1000)
    }

    #[test]
    fn packets_cover_the_message() {
        let p = PathParams::PAPER;
        assert_eq!(p.packets(0), vec![0]);
        assert_eq!(p.packets(2900), vec![1400, 1400, 100]);
        assert_eq!(p.packet_count(2900), 3);
        assert_eq!(p.packet_count(0), 1);
        assert_eq!(p.frame(1400), 1400 + 24 + 20 + 18);
    }

    #[test]
    fn latency_is_at_least_the_wire_and_grows_with_size() {
        let m = Machines::default();
        for node in [Node::Np, Node::Host] {
            let point = if node == Node::Np {
                Point::RxSide
            } else {
                Point::HostUser
            };
            let w = route_work(point);
            let small = latency_ns(&m, node, &w, 100);
            let big = latency_ns(&m, node, &w, 100_000);
            assert!(small > 2.0 * m.wire_ns(m.path.frame(100)));
            assert!(big > m.wire_ns(m.path.frame(1400)) * 71.0);
            assert!(big > small);
        }
        // The host forwards whole messages, the IXP packets: the IXP wins on large ones.
        let ixp = latency_ns(&m, Node::Np, &route_work(Point::RxSide), 100_000);
        let host = latency_ns(&m, Node::Host, &route_work(Point::HostUser), 100_000);
        assert!(ixp < host);
    }

    #[test]
    fn mirroring_loads_the_host_cpu_per_destination_and_the_ixp_per_port() {
        let m = Machines::default();
        let one = Deployment::single(Point::HostUser, Box::new(Mirror::new(vec![1])));
        let two = Deployment::single(Point::HostUser, Box::new(Mirror::new(vec![1, 2])));
        let h1 = deployment_load(&m, &one, 50_000);
        let h2 = deployment_load(&m, &two, 50_000);
        assert!(h2.host > 1.3 * h1.host, "{h1:?} {h2:?}");
        let np2 = Deployment::single(Point::RxSide, Box::new(Mirror::new(vec![1, 2])));
        let n2 = deployment_load(&m, &np2, 50_000);
        assert_eq!(n2.host, 0.0);
        assert!((n2.wire_out - n2.wire_in).abs() < 1e-9);
        assert!(n2.throughput_mbps(50_000) <= 100.0);
        // In the kernel the host skips crossings and copies.
        let k2 = Deployment::single(Point::HostKernel, Box::new(Mirror::new(vec![1, 2])));
        let k = deployment_load(&m, &k2, 50_000);
        assert!(k.host < h2.host, "{k:?} {h2:?}");
    }

    #[test]
    fn format_on_the_np_is_bound_by_its_context() {
        let m = Machines::default();
        let f = Deployment::single(Point::InTransit, Box::new(ByteSwap));
        let l = deployment_load(&m, &f, 50_000);
        assert!(l.np_transit > l.wire_in, "{l:?}");
        assert_eq!(
            l.np_transit,
            m.np.ns(ByteSwap.work(50_000).np_cycles(&m.np))
        );
    }
}
