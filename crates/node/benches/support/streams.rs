//! A stream of RUDP fragments through a node with stream handlers (`StreamCase`), shared by
//! `benches/streams.rs` and the callgrind driver `examples/stream_per_fragment.rs`.

use std::net::IpAddr;

use stream_handlers::node::NodeConfig;
use stream_handlers::rudp::fragment;
use waist_node::routes::prefix;
use waist_node::{Config, Instant, MAX_FRAME, Node, StreamsConfig};

const ME: [u8; 4] = [10, 0, 0, 1];

fn node(spec: &str) -> Node {
    let mut c = Config::router(IpAddr::from(ME), 3);
    c.streams = Some(StreamsConfig {
        node: NodeConfig {
            admission: None,
            ..NodeConfig::default()
        },
        deploy: vec![(7, spec.parse().unwrap())],
        through: false,
    });
    let mut n = Node::new(c, Instant::ZERO).unwrap();
    n.add_route(prefix([10, 3, 0, 0].into(), 16).unwrap(), 1);
    n.add_route(prefix([10, 4, 0, 0].into(), 16).unwrap(), 2);
    n.add_route(prefix([10, 1, 0, 0].into(), 16).unwrap(), 0);
    n
}

/// The datagrams of one `len`-byte message to `dst`, UDP checksum 0 (none, IPv4), so the
/// message id can be patched in place: (frame, offset of the RUDP header).
fn frames(dst: [u8; 4], len: usize) -> Vec<(Vec<u8>, usize)> {
    let body: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
    fragment(7, 0, 0, &body, 1400)
        .unwrap()
        .into_iter()
        .map(|f| {
            let mut b = vec![0u8; 64 + f.len()];
            let n = waist_ip::udp::emit_datagram(
                [10, 1, 0, 10].into(),
                dst.into(),
                64,
                40_000,
                7400,
                &f,
                &mut b,
            )
            .unwrap();
            b.truncate(n);
            b[26] = 0;
            b[27] = 0;
            (b, 28)
        })
        .collect()
}

/// One case: a node, the frames of one message, the next message id.
pub(crate) struct StreamCase {
    node: Node,
    /// The frames of one message and where their RUDP header starts.
    pub(crate) frames: Vec<(Vec<u8>, usize)>,
    id: u32,
    out: Vec<u8>,
    clock: u64,
}

impl StreamCase {
    /// Messages of `len` bytes to `dst` through a node running `spec` as stream 7.
    pub(crate) fn new(spec: &str, dst: [u8; 4], len: usize) -> Self {
        StreamCase {
            node: node(spec),
            frames: frames(dst, len),
            id: 0,
            out: vec![0; MAX_FRAME],
            clock: 0,
        }
    }

    /// One message through; frames sent.
    pub(crate) fn run(&mut self) -> usize {
        self.id = self.id.wrapping_add(1);
        let mut sent = 0;
        let mut buf = Vec::with_capacity(2048);
        for (f, at) in &self.frames {
            buf.clear();
            buf.extend_from_slice(f);
            buf[at + 4..at + 8].copy_from_slice(&self.id.to_be_bytes());
            if self
                .node
                .handle_packet(Instant::ZERO, 0, &mut buf)
                .is_some()
            {
                sent += 1;
            }
        }
        let clock = &mut self.clock;
        self.node.run_streams(Instant::ZERO, &mut || {
            *clock += 1;
            *clock
        });
        while self.node.poll_transmit(&mut self.out).is_some() {
            sent += 1;
        }
        sent
    }
}

/// The cases: (group, name, case, frames out per message).
pub(crate) fn cases() -> Vec<(&'static str, &'static str, StreamCase, usize)> {
    vec![
        (
            "baseline",
            "forward",
            StreamCase::new("to 10.3.0.1:7400 | mirror", [10, 3, 0, 9], 1400),
            1,
        ),
        (
            "streams",
            "mirror1",
            StreamCase::new("to 10.3.0.1:7400 | mirror", ME, 1400),
            1,
        ),
        (
            "streams",
            "multicast2",
            StreamCase::new(
                "to 10.3.0.1:7400 10.4.0.1:7400 | multicast 0=u8@0<200 1=all",
                ME,
                1400,
            ),
            2,
        ),
        (
            "streams",
            "delta_whole",
            StreamCase::new("to 10.3.0.1:7400 | delta 20 1", ME, 14 * 1400),
            14,
        ),
    ]
}
