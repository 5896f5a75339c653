//! What the `node_packet` fuzz target builds from structured input: an address palette
//! (so routes, groups and the node's own addresses get hit), and well-formed frames to
//! reach deep stages: plain IPv4/IPv6 packets, ICMP echo requests, ESP packets (dedicated
//! and piggybacked, every instruction kind), SNAP packets (Fig. 1 ping, PLAN ping, random
//! code over real opcodes), threaded-label shims and distance-vector messages, each then
//! bent a little (TTL, DF, a source-hash option, a flipped byte, trailing bytes) with the
//! IPv4 header checksum filled afresh or not.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::Arbitrary;
use esp_proto::endpoint::Endpoint;
use esp_proto::instr::{CombineOp, CompareOp, Instruction, Param};
use esp_proto::wire::Loc;
use ess::{Tag, Value};
use fastpath::dv::wire::{AdvEntry, Advertisement, MessageKind, PrefixEntry};
use fastpath::flow::SourceHash;
use fastpath::lpm::IpPrefix;
use fastpath::threaded::Label;
use fastpath::wire::{SourceHashOption, insert_ipv4_option};
use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::value::Word;
use waist_ip::emit_header;
use waist_ip::rewrite::fill_ipv4_checksum;
use waist_node::frame::{LABEL_SHIM_LEN, emit_label_frame};
use waist_node::routes::prefix;

pub const OWN4: [u8; 4] = [10, 0, 0, 254];
pub const OWN6: [u16; 8] = [0xfd00, 0, 0, 0, 0, 0, 0, 0xfe];
pub const GROUP4: [u8; 4] = [224, 1, 1, 1];
pub const GROUP6: [u16; 8] = [0xff0e, 0, 0, 0, 0, 0, 0, 1];

/// An IPv4 address from a small palette (so routes, groups and own addresses get hit).
pub fn addr4(sel: u8) -> Ipv4Addr {
    let k = sel % 16;
    let a = match k {
        0 => OWN4,
        1 => GROUP4,
        2 | 3 => [10, 9, 9, k - 1],
        4..=12 => [10, (k - 4) / 3, 0, (k - 4) % 3 + 1],
        13 => [10, 3, 0, sel >> 4],
        14 => [192, 168, 0, sel],
        _ => [sel, sel >> 1, 7, 1],
    };
    a.into()
}

/// An IPv6 address from the palette that mirrors [`addr4`].
pub fn addr6(sel: u8) -> Ipv6Addr {
    let k = u16::from(sel % 16);
    let s = u16::from(sel);
    let a = match k {
        0 => OWN6,
        1 => GROUP6,
        2 | 3 => [0xfd09, 0, 0, 0, 0, 0, 0, k - 1],
        4..=12 => [0xfd00, (k - 4) / 3 + 1, 0, 0, 0, 0, 0, (k - 4) % 3 + 1],
        13 => [0xfd00, 4, 0, 0, 0, 0, 0, s >> 4],
        14 => [0x2001, 0xdb8, 0, 0, 0, 0, 0, s],
        _ => [0xfe80, 0, 0, 0, 0, 0, 0, s],
    };
    a.into()
}

pub fn addr(v6: bool, sel: u8) -> IpAddr {
    if v6 {
        addr6(sel).into()
    } else {
        addr4(sel).into()
    }
}

/// The prefix of `addr` of a length picked by `len` (host bits cleared).
pub fn masked(addr: IpAddr, len: u8) -> IpPrefix {
    let p = match addr {
        IpAddr::V4(a) => {
            let len = [0u8, 8, 16, 24, 32][usize::from(len % 5)];
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            prefix(Ipv4Addr::from(u32::from(a) & mask).into(), len)
        }
        IpAddr::V6(a) => {
            let len = [0u8, 16, 32, 64, 128][usize::from(len % 5)];
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            prefix(Ipv6Addr::from(u128::from(a) & mask).into(), len)
        }
    };
    p.expect("a masked prefix is valid")
}

#[derive(Arbitrary, Debug)]
pub enum LabelSpec {
    Threaded { index: u8, hop_limit: u8 },
    Random { index: u32, hop_limit: u8 },
}

#[derive(Arbitrary, Debug)]
pub enum RoutingSpec {
    Raw(Vec<u8>),
    Request {
        sender: u8,
    },
    Update {
        sender: u8,
        entries: Vec<(u8, u8, u8)>,
    },
    Prefixes {
        sender: u8,
        entries: Vec<(bool, u8, u8, u8, u8)>,
    },
}

#[derive(Arbitrary, Debug)]
pub struct PacketSpec {
    v6: bool,
    src: u8,
    dst: u8,
    body: Body,
    ttl: Option<u8>,
    df_off: bool,
    source_hash: Option<u32>,
    flip: Option<(u16, u8)>,
    trailing: u8,
    fix_checksum: bool,
}

#[derive(Arbitrary, Debug)]
pub enum Body {
    Plain {
        protocol: u8,
        len: u16,
    },
    Echo {
        ident: u16,
        len: u8,
    },
    Esp {
        instr: InstrSpec,
        cid: u8,
        loc: u8,
        reflect: bool,
        piggyback: bool,
        len: u8,
    },
    Snap(SnapSpec),
}

#[derive(Arbitrary, Debug)]
pub enum InstrSpec {
    Count {
        tag: u8,
        thresh: u8,
    },
    Compare {
        tag: u8,
        current: u64,
        op: u8,
    },
    Collect {
        value: u8,
        val: u64,
        counter: u8,
        op: u8,
    },
    Get {
        tag: u8,
    },
    Put {
        tag: u8,
        value: u64,
    },
    Update {
        tag: u8,
        value: u64,
        op: u8,
    },
    Mark {
        tag: u8,
    },
    LastMark {
        tag: u8,
        node: u64,
    },
    Subcast {
        tag: u8,
    },
    Param {
        param: u8,
        op: u8,
        value: u64,
    },
    PutParam {
        tag: u8,
        param: u8,
    },
    Test {
        tag: u8,
        value: u64,
        op: u8,
    },
    Exists {
        tag: u8,
    },
    Absent {
        tag: u8,
    },
    Cswap {
        tag: u8,
        expect: u64,
        new: u64,
    },
}

#[derive(Arbitrary, Debug)]
pub struct SnapSpec {
    rb: u8,
    port: u16,
    kind: SnapKind,
}

#[derive(Arbitrary, Debug)]
pub enum SnapKind {
    Ping(Vec<u8>),
    PlanPing(Vec<u8>),
    Code {
        entry: u8,
        code: Vec<(u8, i8)>,
        stack: Vec<StackValue>,
    },
}

#[derive(Arbitrary, Debug)]
pub enum StackValue {
    Int(i16),
    Addr(u8),
}

pub fn tag(t: u8) -> Tag {
    Tag(u64::from(t % 8))
}

pub fn instruction(spec: &InstrSpec) -> Instruction {
    let cmp = |op: u8| CompareOp::ALL[usize::from(op) % CompareOp::ALL.len()];
    let comb = |op: u8| CombineOp::ALL[usize::from(op) % CombineOp::ALL.len()];
    let param = |p: u8| Param::ALL[usize::from(p) % Param::ALL.len()];
    match *spec {
        InstrSpec::Count { tag: t, thresh } => Instruction::Count {
            counter: tag(t),
            thresh: u64::from(thresh % 8),
        },
        InstrSpec::Compare {
            tag: t,
            current,
            op,
        } => Instruction::Compare {
            value: tag(t),
            current: Value(current),
            op: cmp(op),
        },
        InstrSpec::Collect {
            value,
            val,
            counter,
            op,
        } => Instruction::Collect {
            value: tag(value),
            val: Value(val),
            counter: tag(counter),
            op: comb(op),
        },
        InstrSpec::Get { tag: t } => Instruction::Get {
            tag: tag(t),
            value: Value(0),
        },
        InstrSpec::Put { tag: t, value } => Instruction::Put {
            tag: tag(t),
            value: Value(value),
        },
        InstrSpec::Update { tag: t, value, op } => Instruction::Update {
            tag: tag(t),
            value: Value(value),
            op: comb(op),
        },
        InstrSpec::Mark { tag: t } => Instruction::Mark { tag: tag(t) },
        InstrSpec::LastMark { tag: t, node } => Instruction::LastMark {
            tag: tag(t),
            node: Value(node),
        },
        InstrSpec::Subcast { tag: t } => Instruction::Subcast { tag: tag(t) },
        InstrSpec::Param {
            param: p,
            op,
            value,
        } => Instruction::Param {
            param: param(p),
            op: comb(op),
            value: Value(value),
        },
        InstrSpec::PutParam { tag: t, param: p } => Instruction::PutParam {
            tag: tag(t),
            param: param(p),
        },
        InstrSpec::Test { tag: t, value, op } => Instruction::Test {
            tag: tag(t),
            value: Value(value),
            op: cmp(op),
        },
        InstrSpec::Exists { tag: t } => Instruction::Exists { tag: tag(t) },
        InstrSpec::Absent { tag: t } => Instruction::Absent { tag: tag(t) },
        InstrSpec::Cswap {
            tag: t,
            expect,
            new,
        } => Instruction::Cswap {
            tag: tag(t),
            expect: Value(expect),
            new: Value(new),
        },
    }
}

/// A plain IP packet of `protocol` with `len` zero bytes of payload.
pub fn plain(src: IpAddr, dst: IpAddr, protocol: u8, len: usize) -> Vec<u8> {
    let hl = waist_ip::header_len_for(src);
    let mut p = vec![0u8; hl + len];
    emit_header(&mut p, src, dst, protocol, 64, len).expect("the header fits");
    p
}

/// The program `spec` describes, between `src` and `dst` (IPv4 or IPv6, one family).
pub fn snap_program(src: IpAddr, dst: IpAddr, spec: &SnapSpec) -> Program {
    let mut p = snap_program_at(spec, src.is_ipv6());
    p.set_addrs(src, dst).expect("one family");
    p
}

/// The program with zero addresses; addresses on its stack of the family `v6` says.
fn snap_program_at(spec: &SnapSpec, v6: bool) -> Program {
    let (src, dst) = ([0; 4], [0; 4]);
    let rb = u16::from(spec.rb % 32);
    match &spec.kind {
        SnapKind::Ping(payload) => {
            snap_vm::paper::ping(src, dst, spec.port, &payload[..payload.len().min(64)], rb)
        }
        SnapKind::PlanPing(payload) => {
            snap_vm::paper::plan_ping(src, dst, spec.port, &payload[..payload.len().min(64)], rb)
        }
        SnapKind::Code { entry, code, stack } => {
            let mut p = Program {
                src,
                dst,
                port: spec.port,
                rb,
                ..Program::default()
            };
            p.code = code
                .iter()
                .take(64)
                .map(|&(op, imm)| {
                    Word::new(
                        Op::ALL[usize::from(op) % Op::ALL.len()] as u8,
                        i32::from(imm),
                    )
                })
                .collect();
            p.entry = u16::from(*entry) % (p.code.len().max(1) as u16);
            for v in stack.iter().take(16) {
                let v = match *v {
                    StackValue::Int(i) => snap_vm::value::Value::int(i32::from(i)),
                    StackValue::Addr(sel) => p.heap_ip(addr(v6, sel)),
                };
                p.stack.push(v);
            }
            p
        }
    }
}

/// The IP packet `spec` describes.
pub fn build_packet(spec: &PacketSpec) -> Vec<u8> {
    let (src, dst) = (addr(spec.v6, spec.src), addr(spec.v6, spec.dst));
    let mut p = match &spec.body {
        Body::Plain { protocol, len } => plain(src, dst, *protocol, usize::from(len % 9100)),
        Body::Echo { ident, len } => {
            let data = vec![0x5Au8; usize::from(*len)];
            let mut out = vec![0u8; 40 + 8 + data.len()];
            let n = waist_ip::icmp::emit_echo_request(src, dst, *ident, 1, &data, &mut out)
                .expect("an echo request fits");
            out.truncate(n);
            out
        }
        Body::Esp {
            instr,
            cid,
            loc,
            reflect,
            piggyback,
            len,
        } => {
            let instr = instruction(instr);
            let ep = Endpoint::new(u32::from(*cid % 4), src)
                .with_loc(Loc::from_bits(*loc))
                .with_reflect(*reflect);
            let payload = vec![0xA5u8; usize::from(*len)];
            let piggybacked = if *piggyback {
                ep.piggyback(&plain(src, dst, 17, payload.len()), &instr)
                    .ok()
            } else {
                None
            };
            match piggybacked {
                Some(p) => p,
                None => ep
                    .packet_to(dst, &instr, &payload)
                    .expect("a dedicated ESP packet builds"),
            }
        }
        Body::Snap(s) => {
            // In the spec's family: IPv6 next header 254 or IPv4 protocol 254.
            let program = snap_program(src, dst, s);
            match program
                .to_bytes()
                .ok()
                .and_then(|b| snap_vm::ip::encapsulate(&b).ok())
            {
                Some(p) => p,
                None => plain(src, dst, 254, 0),
            }
        }
    };
    let v4 = p.first().is_some_and(|b| b >> 4 == 4);
    if let (Some(h), true) = (spec.source_hash, v4) {
        let opt = SourceHashOption {
            hash: SourceHash::new(h),
            flow_id: None,
        };
        if let Ok(q) = insert_ipv4_option(&p, &opt) {
            p = q;
        }
    }
    if let Some(ttl) = spec.ttl {
        p[if v4 { 8 } else { 7 }] = ttl;
    }
    if spec.df_off && v4 {
        p[6] &= !0x40;
    }
    if let Some((at, x)) = spec.flip {
        let at = usize::from(at) % p.len();
        p[at] ^= x;
    }
    p.extend(std::iter::repeat_n(0xEE, usize::from(spec.trailing % 8)));
    if spec.fix_checksum {
        fill_ipv4_checksum(&mut p);
    }
    p
}

pub fn routing_message(spec: &RoutingSpec) -> Vec<u8> {
    let id = |sel: u8| u32::from(addr4(sel));
    let mut out = Vec::new();
    match spec {
        RoutingSpec::Raw(bytes) => out.extend_from_slice(bytes),
        RoutingSpec::Request { sender } => {
            Advertisement::emit(MessageKind::Request, id(*sender), &[], &mut out)
        }
        RoutingSpec::Update { sender, entries } => {
            let entries: Vec<AdvEntry> = entries
                .iter()
                .take(32)
                .map(|&(dest, cost, index)| AdvEntry {
                    dest: id(dest),
                    cost: u16::from(cost % 18),
                    index: u32::from(index),
                })
                .collect();
            Advertisement::emit(MessageKind::Update, id(*sender), &entries, &mut out);
        }
        RoutingSpec::Prefixes { sender, entries } => {
            let entries: Vec<PrefixEntry> = entries
                .iter()
                .take(32)
                .map(|&(v6, sel, len, cost, index)| PrefixEntry {
                    prefix: masked(addr(v6, sel), len),
                    cost: u16::from(cost % 18),
                    index: u32::from(index),
                })
                .collect();
            Advertisement::emit_prefixes(
                MessageKind::PrefixUpdate,
                id(*sender),
                &entries,
                &mut out,
            );
        }
    }
    out
}

/// `ip` behind the label `spec` describes, or alone.
pub fn label_frame(spec: Option<&LabelSpec>, ip: &[u8]) -> Vec<u8> {
    let label = match spec {
        None => return ip.to_vec(),
        Some(&LabelSpec::Threaded { index, hop_limit }) => {
            Label::threaded(u32::from(index % 16), hop_limit)
        }
        Some(&LabelSpec::Random { index, hop_limit }) => {
            Label::random(index & 0xFF_FFFF, hop_limit)
        }
    };
    let mut f = vec![0u8; LABEL_SHIM_LEN + ip.len()];
    emit_label_frame(label, ip, &mut f).expect("the label frame fits");
    f
}
