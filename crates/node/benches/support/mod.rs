//! Fixtures shared by the criterion bench (`benches/node.rs`) and the callgrind driver
//! (`examples/node_per_packet.rs`): one router, one packet template per case, and the plain
//! baseline a user would otherwise write.

use std::hint::black_box;

use esp_micro::Microcode;
use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use esp_proto::wire::{HeaderRepr, Loc, dedicated_ipv4_len, emit_dedicated_ipv4};
use ess::{HashKey, Tag};
use fastpath::lpm::{CompiledLpm, LpmTable, Prefix};
use fastpath::threaded::Label;
use waist_node::frame::emit_label_frame;
use waist_node::routes::prefix;
use waist_node::{Config, EspConfig, IfaceConfig, Instant, Node};

/// The shipped microcoded COUNT (`examples/esp-microcode/count.snap`).
pub(crate) const COUNT_SNAP: &str = esp_micro::shipped::COUNT;

/// The opcode the microcoded COUNT is installed under (the first of `INSTALLED`).
pub(crate) const OP_COUNT: u8 = 64;

/// The counter and threshold every COUNT case carries (never over its threshold).
const COUNT_OPERANDS: [u64; 2] = [0xC0FFEE, u64::MAX];

/// A dedicated ESP packet 10.1.0.1 → 10.2.7.7 (computation 7, central context) with
/// `opcode` and `operands`, 16 bytes of payload.
fn esp_packet(opcode: u8, operands: &[u8]) -> Vec<u8> {
    let repr = HeaderRepr {
        loc: Loc::CENTRAL,
        err: false,
        rb: false,
        opcode,
        cid: 7,
        operand_len: u8::try_from(operands.len()).unwrap(),
    };
    let mut esp = vec![0u8; repr.buffer_len()];
    repr.emit(&mut esp).unwrap();
    esp[esp_proto::consts::HEADER_LEN..].copy_from_slice(operands);
    let payload = [0u8; 16];
    let mut out = vec![0u8; dedicated_ipv4_len(esp.len(), payload.len())];
    emit_dedicated_ipv4([10, 1, 0, 1], [10, 2, 7, 7], 64, &esp, &payload, &mut out).unwrap();
    out
}

/// Prefixes in every table (a small ISP edge: 256 /24s and a default).
pub(crate) const ROUTES: u8 = 255;

/// 10.1.0.1 → 10.2.7.7, UDP, 64 bytes.
pub(crate) fn udp() -> Vec<u8> {
    let mut p = vec![0u8; 64];
    waist_ip::emit_header(
        &mut p,
        [10, 1, 0, 1].into(),
        [10, 2, 7, 7].into(),
        17,
        64,
        44,
    )
    .unwrap();
    p
}

fn add_routes(n: &mut Node) {
    for i in 0..=ROUTES {
        n.add_route(prefix([10, 2, i, 0].into(), 24).unwrap(), 1);
    }
    n.add_route(prefix([0, 0, 0, 0].into(), 0).unwrap(), 0);
}

/// The baseline: parse and check the IPv4 header (version, IHL, lengths, checksum),
/// decrement the TTL with an incremental checksum update, look the destination up in the
/// same compiled LPM table the node uses (`CompiledLpm`, from issue 30 on; before it, the
/// unibit trie of `LpmTable`). Written plainly, as a user would.
pub(crate) struct Baseline {
    table: CompiledLpm<u16>,
    template: Vec<u8>,
    buf: Vec<u8>,
}

impl Baseline {
    pub(crate) fn new() -> Baseline {
        let mut table = LpmTable::new();
        for i in 0..=ROUTES {
            table.insert(Prefix::new([10, 2, i, 0], 24).unwrap(), 1u16);
        }
        table.insert(Prefix::new([0, 0, 0, 0], 0).unwrap(), 0);
        let template = udp();
        Baseline {
            table: table.compile(),
            buf: template.clone(),
            template,
        }
    }

    #[inline(never)]
    pub(crate) fn forward(&mut self) -> Option<u16> {
        self.buf.copy_from_slice(&self.template);
        let p = black_box(&mut self.buf[..]);
        if p.len() < 20 || p[0] >> 4 != 4 {
            return None;
        }
        let ihl = usize::from(p[0] & 0xF) * 4;
        let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
        if ihl < 20 || total < ihl || total > p.len() {
            return None;
        }
        let mut sum = 0u32;
        for w in p[..ihl].chunks_exact(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xFFFF {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        if sum != 0xFFFF || p[8] <= 1 {
            return None;
        }
        p[8] -= 1;
        let c = u32::from(!u16::from_be_bytes([p[10], p[11]])) + 0xFEFF;
        let c = !(((c & 0xFFFF) + (c >> 16)) as u16);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        let dst = [p[16], p[17], p[18], p[19]];
        self.table.lookup(dst).map(|(_, &i)| i)
    }
}

/// What a case sends through the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Case {
    /// Plain IPv4 forwarding by longest-prefix match.
    Ipv4,
    /// ESP COUNT (dedicated IPv4, central context, never over its threshold).
    EspCount,
    /// The same COUNT as installed microcode (`count.snap` under opcode 64).
    EspCountInstalled,
    /// The same COUNT as inline microcode (opcode 32, the program in the packet).
    EspCountInline,
    /// SNAP ping in transit (one `forw`: runs, re-framed, routed, queued).
    SnapPing,
    /// A source-hash cache hit (IPv4 option 94).
    SourceHashHit,
    /// A threaded label (0xF1 frame).
    Label,
}

impl Case {
    pub(crate) const ALL: [Case; 7] = [
        Case::Ipv4,
        Case::EspCount,
        Case::EspCountInstalled,
        Case::EspCountInline,
        Case::SnapPing,
        Case::SourceHashHit,
        Case::Label,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Case::Ipv4 => "ipv4_lpm",
            Case::EspCount => "esp_count",
            Case::EspCountInstalled => "esp_count_installed",
            Case::EspCountInline => "esp_count_inline",
            Case::SnapPing => "snap_ping",
            Case::SourceHashHit => "source_hash_hit",
            Case::Label => "threaded_label",
        }
    }
}

/// A router set up for one case and the frame it forwards each iteration.
pub(crate) struct PerPacket {
    node: Node,
    template: Vec<u8>,
    buf: Vec<u8>,
}

impl PerPacket {
    pub(crate) fn new(case: Case) -> PerPacket {
        let mut c = Config::router([10, 0, 0, 254].into(), 2);
        match case {
            Case::EspCount | Case::EspCountInline => {
                c.esp = Some(EspConfig::new(1, 16, HashKey::from_seed(5)).unwrap());
            }
            Case::EspCountInstalled => {
                let mut esp = EspConfig::new(1, 16, HashKey::from_seed(5)).unwrap();
                let count = Microcode::assemble(COUNT_SNAP).unwrap();
                esp.microcode.installed = vec![(OP_COUNT, "count".into(), count)];
                c.esp = Some(esp);
            }
            Case::SnapPing => c.snap = true,
            Case::SourceHashHit => c.route_cache_log2 = Some(12),
            Case::Label => {
                c.dv = Some(fastpath::dv::Config::new(0x0A00_00FE));
                c.ifaces[1] = IfaceConfig::new(1500).with_dv(1);
            }
            Case::Ipv4 => {}
        }
        let mut node = Node::new(c, Instant::ZERO).unwrap();
        add_routes(&mut node);
        let template = match case {
            Case::Ipv4 => udp(),
            Case::EspCount => {
                let ep = Endpoint::new(7, [10, 1, 0, 1].into()).with_loc(Loc::CENTRAL);
                let count = Instruction::Count {
                    counter: Tag(COUNT_OPERANDS[0]),
                    thresh: COUNT_OPERANDS[1],
                };
                ep.packet_to([10, 2, 7, 7].into(), &count, &[0; 16])
                    .unwrap()
            }
            Case::EspCountInstalled => {
                let operands: Vec<u8> = COUNT_OPERANDS
                    .iter()
                    .flat_map(|w| w.to_be_bytes())
                    .collect();
                esp_packet(OP_COUNT, &operands)
            }
            Case::EspCountInline => {
                let program = snap_vm::asm::assemble(COUNT_SNAP).unwrap();
                let body = esp_micro::body::encode(&program, &COUNT_OPERANDS).unwrap();
                esp_packet(esp_micro::OP_MICRO, &body)
            }
            Case::SnapPing => {
                let ping =
                    snap_vm::paper::ping([10, 1, 0, 1], [10, 2, 7, 7], 7, b"ping payload", 60_000);
                snap_vm::ip::encapsulate(&ping.to_bytes().unwrap()).unwrap()
            }
            Case::SourceHashHit => {
                let opt = fastpath::wire::SourceHashOption {
                    hash: fastpath::flow::SourceHash::new(0x5EED),
                    flow_id: None,
                };
                fastpath::wire::insert_ipv4_option(&udp(), &opt).unwrap()
            }
            Case::Label => {
                // A neighbour on interface 1 that originates 10.2.7.0/24 tells us its index.
                let mut nc = Config::router([10, 0, 0, 1].into(), 1);
                nc.dv = Some(fastpath::dv::Config::new(0x0A00_0001));
                nc.ifaces[0] = IfaceConfig::new(1500).with_dv(1);
                let mut peer = Node::new(nc, Instant::ZERO).unwrap();
                peer.originate(Instant::ZERO, prefix([10, 2, 7, 0].into(), 24).unwrap());
                for round in 0..10u64 {
                    let now = Instant::from_millis(round * 2_000);
                    node.handle_timeout(now);
                    peer.handle_timeout(now);
                    while let Some((i, mut f)) = node.poll_transmit_owned() {
                        if i == 1 {
                            peer.handle_packet(now, 0, &mut f);
                        }
                    }
                    while let Some((_, mut f)) = peer.poll_transmit_owned() {
                        node.handle_packet(now, 1, &mut f);
                    }
                }
                let index = node
                    .dv()
                    .unwrap()
                    .index_of_dest(Prefix::new([10, 2, 7, 0], 24).unwrap())
                    .unwrap();
                let ip = udp();
                let mut f = vec![0u8; 5 + ip.len()];
                emit_label_frame(Label::threaded(index, 64), &ip, &mut f).unwrap();
                f
            }
        };
        PerPacket {
            node,
            buf: template.clone(),
            template,
        }
    }

    /// One frame through the node, and what it queued drained.
    #[inline(never)]
    pub(crate) fn forward(&mut self) -> usize {
        self.buf.copy_from_slice(&self.template);
        let out = self
            .node
            .handle_packet(Instant::ZERO, 0, black_box(&mut self.buf));
        let mut n = out.map_or(0, |o| o.iface + 1);
        while let Some((i, f)) = self.node.poll_transmit_owned() {
            n += i + black_box(f).len();
        }
        n
    }

    pub(crate) fn node(&self) -> &Node {
        &self.node
    }

    /// Panics unless the frames forwarded so far ran as `case` means them to: ESP cases
    /// executed their instruction every time, the microcoded ones as microcode that never
    /// failed nor was refused.
    pub(crate) fn check(&self, case: Case, frames: u64) {
        let s = self.node.stats();
        assert!(s.balanced(), "{s:?}");
        let m = self.node.micro().stats();
        let (inline, installed) = match case {
            Case::EspCountInstalled => (0, frames),
            Case::EspCountInline => (frames, 0),
            _ => (0, 0),
        };
        assert_eq!(
            (m.inline_runs, m.installed_runs),
            (inline, installed),
            "{m:?}"
        );
        assert_eq!(m.aborted + m.failed + m.unknown_opcode, 0, "{m:?}");
        if matches!(
            case,
            Case::EspCount | Case::EspCountInstalled | Case::EspCountInline
        ) {
            assert_eq!(s.esp_executed, frames, "{s:?}");
        }
    }
}
