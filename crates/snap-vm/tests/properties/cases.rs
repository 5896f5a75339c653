//! Random programs, nodes and the helpers the properties share.

use super::*;

pub(crate) const ADDRS: [[u8; 4]; 4] = [[10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3], [10, 0, 0, 4]];
/// The nodes' IPv6 addresses, fd00::1 … fd00::4, beside [`ADDRS`] (every node is dual-stack).
pub(crate) const ADDRS6: [[u8; 16]; 4] = [
    [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3],
    [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4],
];
pub(crate) const NAMES: [&[u8]; 3] = [b"ess.get", b"ess.put", b"ess.count"];

/// A heap object to generate.
#[derive(Clone, Debug)]
pub(crate) enum Obj {
    Addr(usize),
    Float(f32),
    Wide(i64),
    Bytes(Vec<u8>),
    /// A service name.
    Name(usize),
    Tuple(Vec<Elem>),
}

/// A small value, or a pointer to an (earlier) object.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Elem {
    Int(i32),
    Ref(usize),
}

/// A piece of code.
#[derive(Clone, Debug)]
pub(crate) enum Piece {
    /// An instruction; the immediate is drawn from the number to suit the opcode.
    Op(Op, u32),
    /// `push n; push s; push r; pushh addr | here; send`.
    Send {
        entry: u16,
        s: i32,
        r: i32,
        to: usize,
    },
    /// Any word at all.
    Raw(u32),
}

#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub(crate) objs: Vec<Obj>,
    pub(crate) stack: Vec<Elem>,
    pub(crate) code: Vec<Piece>,
    pub(crate) src: usize,
    pub(crate) dst: usize,
    pub(crate) port: u16,
    pub(crate) rb: u16,
    pub(crate) entry: u16,
    pub(crate) node: usize,
    pub(crate) ifaces: u32,
    pub(crate) mtu: usize,
    pub(crate) iface: u32,
    /// The packet travels in IPv6: its header's addresses and its heap's are IPv6.
    pub(crate) v6: bool,
}

/// The value an [`Elem`] stands for, given the objects built so far.
pub(crate) fn resolve(e: Elem, objs: &[Value]) -> Value {
    match e {
        Elem::Int(i) => Value::int(i),
        Elem::Ref(k) if objs.is_empty() => Value::int(k as i32),
        Elem::Ref(k) => objs[k % objs.len()],
    }
}

/// The immediate of `op` drawn from `r`.
pub(crate) fn imm_for(op: Op, r: u32, offsets: &[u32]) -> i32 {
    let hi = r >> 4;
    match op.info().imm {
        Imm::None if r.is_multiple_of(32) => (hi % 3) as i32,
        Imm::None => 0,
        Imm::Int if r % 4 == 3 => hi as i32,
        Imm::Int => (hi % 11) as i32 - 3,
        Imm::Branch => match r % 16 {
            0 => -((hi % 3) as i32),
            1 => 5 + (hi % 40) as i32,
            _ => 1 + (hi % 4) as i32,
        },
        Imm::Count => (r % 4) as i32,
        Imm::Heap if !offsets.is_empty() && !r.is_multiple_of(8) => {
            offsets[hi as usize % offsets.len()] as i32
        }
        Imm::Heap => (hi % 16) as i32,
        Imm::Tag => (r % 8) as i32,
    }
}

/// Appends `objs` to `p`'s heap (addresses IPv6 if `v6`); returns pointers to them.
pub(crate) fn heap(p: &mut Program, objs: &[Obj], v6: bool) -> Vec<Value> {
    let mut vals = Vec::new();
    for o in objs {
        let v = match o {
            Obj::Addr(i) if v6 => p.heap_ip(ADDRS6[i % ADDRS6.len()].into()),
            Obj::Addr(i) => p.heap_addr(ADDRS[i % ADDRS.len()]),
            Obj::Float(f) => {
                let off = p.heap.len() as u32;
                p.heap.push(((Tag::Float as u32) << DATA_BITS) | 1);
                p.heap.push(f.to_bits());
                Value::boxed(Tag::Float, off)
            }
            Obj::Wide(x) => p.heap_wide(*x),
            Obj::Bytes(b) => p.heap_bytes(b),
            Obj::Name(i) => p.heap_bytes(NAMES[i % NAMES.len()]),
            Obj::Tuple(items) => {
                let items: Vec<Value> = items.iter().map(|&e| resolve(e, &vals)).collect();
                p.heap_tuple(&items)
            }
        };
        vals.push(v);
    }
    vals
}

impl Case {
    pub(crate) fn config(&self) -> NodeConfig {
        NodeConfig {
            address: ADDRS[self.node],
            ifaces: self.ifaces,
            mtu: self.mtu,
        }
    }

    pub(crate) fn program(&self) -> Program {
        let mut p = Program {
            src: ADDRS[self.src],
            dst: ADDRS[self.dst],
            port: self.port,
            rb: self.rb,
            ..Program::default()
        };
        if self.v6 {
            let (src, dst) = (ADDRS6[self.src].into(), ADDRS6[self.dst].into());
            p.set_addrs(src, dst).unwrap();
        }
        let vals = heap(&mut p, &self.objs, self.v6);
        let offsets: Vec<u32> = vals.iter().map(|v| v.data()).collect();
        let addrs: Vec<u32> = vals
            .iter()
            .filter(|v| v.tag() == Some(Tag::Addr))
            .map(|v| v.data())
            .collect();
        p.stack = self.stack.iter().map(|&e| resolve(e, &vals)).collect();
        let len: usize = self
            .code
            .iter()
            .map(|c| {
                if matches!(c, Piece::Send { .. }) {
                    5
                } else {
                    1
                }
            })
            .sum();
        let w = |op: Op, imm: i32| Word::new(op as u8, imm);
        for c in &self.code {
            match *c {
                Piece::Op(op, r) => p.code.push(w(op, imm_for(op, r, &offsets))),
                Piece::Raw(x) => p.code.push(Word(x)),
                Piece::Send { entry, s, r, to } => {
                    p.code.extend([
                        w(Op::Push, i32::from(entry) % len as i32),
                        w(Op::Push, s),
                        w(Op::Push, r),
                    ]);
                    p.code.push(match addrs.get(to) {
                        Some(&off) => w(Op::Pushh, off as i32),
                        None => w(Op::Here, 0),
                    });
                    p.code.push(w(Op::Send, 0));
                }
            }
        }
        p.entry = self.entry % len as u16;
        p
    }
}

pub(crate) fn elem() -> impl Strategy<Value = Elem> {
    prop_oneof![
        3 => (-20i32..20).prop_map(Elem::Int),
        1 => any::<i32>().prop_map(Elem::Int),
        3 => (0usize..8).prop_map(Elem::Ref),
    ]
}

pub(crate) fn obj() -> impl Strategy<Value = Obj> {
    prop_oneof![
        2 => (0usize..4).prop_map(Obj::Addr),
        1 => any::<f32>().prop_map(Obj::Float),
        1 => any::<i64>().prop_map(Obj::Wide),
        1 => vec(any::<u8>(), 0..10).prop_map(Obj::Bytes),
        1 => (0usize..3).prop_map(Obj::Name),
        2 => vec(elem(), 0..4).prop_map(Obj::Tuple),
    ]
}

/// Opcodes worth extra weight: control flow, the network, allocation, the heap.
pub(crate) const FAVOURITES: &[Op] = &[
    Op::Forw,
    Op::Forwto,
    Op::Demux,
    Op::Getsrc,
    Op::Here,
    Op::Mktup,
    Op::Pushh,
    Op::Push,
    Op::Bne,
    Op::Bez,
    Op::Paj,
    Op::Tpaj,
    Op::Ji,
    Op::Calls,
    Op::Nth,
    Op::Pull,
    Op::Towide,
    Op::Itof,
];

pub(crate) fn piece(sends: bool) -> impl Strategy<Value = Piece> {
    let keep = move |op: &Op| sends || *op != Op::Send;
    let all: Vec<Op> = Op::ALL.iter().copied().filter(keep).collect();
    let fav: Vec<Op> = FAVOURITES.iter().copied().filter(keep).collect();
    let r = prop_oneof![8 => 0i32..3, 1 => Just(-1), 1 => 3i32..20];
    let send = (any::<u16>(), 0i32..4, r, 0usize..3).prop_map(|(entry, s, r, to)| Piece::Send {
        entry,
        s,
        r,
        to,
    });
    prop_oneof![
        6 => (prop::sample::select(all), any::<u32>()).prop_map(|(op, r)| Piece::Op(op, r)),
        4 => (prop::sample::select(fav), any::<u32>()).prop_map(|(op, r)| Piece::Op(op, r)),
        if sends { 2 } else { 0 } => send,
        1 => any::<u32>().prop_map(Piece::Raw),
    ]
}

pub(crate) fn case(sends: bool) -> impl Strategy<Value = Case> {
    (
        (
            vec(obj(), 0..5),
            vec(elem(), 0..8),
            vec(piece(sends), 1..24),
        ),
        (
            0usize..4,
            0usize..4,
            0u16..4,
            prop_oneof![1 => Just(0u16), 8 => 1u16..12, 1 => any::<u16>()],
        ),
        (
            prop_oneof![3 => Just(0u16), 1 => any::<u16>()],
            0usize..3,
            0u32..5,
        ),
        (
            prop::sample::select(vec![68usize, 576, 1500]),
            0u32..4,
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (objs, stack, code),
                (src, dst, port, rb),
                (entry, node, ifaces),
                (mtu, iface, v6),
            )| {
                Case {
                    objs,
                    stack,
                    code,
                    src,
                    dst,
                    port,
                    rb,
                    entry,
                    node,
                    ifaces,
                    mtu,
                    iface,
                    v6,
                }
            },
        )
}

/// A VM for `config`, dual-stack: the IPv6 address beside its IPv4 one in [`ADDRS`].
pub(crate) fn dual(config: NodeConfig) -> Vm {
    let six = ADDRS
        .iter()
        .position(|&a| a == config.address)
        .map(|i| ADDRS6[i]);
    let mut vm = Vm::new(config);
    vm.set_address6(six);
    vm
}

/// A [`dual`]-stack VM for `config` offering the ESS services.
pub(crate) fn vm_with_ess(config: NodeConfig) -> Vm {
    let mut vm = dual(config);
    let store = ess::EssConfig::new(6, 1_000, 1, ess::HashKey::from_seed(1)).unwrap();
    for s in EssService::trio(store, ess::HashKey::from_seed(2)) {
        vm.services.register(Box::new(s));
    }
    vm
}

pub(crate) fn run(case: &Case, program: &Program) -> Outcome {
    vm_with_ess(case.config()).run(7, case.iface, program.to_bytes().unwrap())
}

pub(crate) fn rb_of(packet: &[u8]) -> u16 {
    Packet::new_checked(packet).map_or(u16::MAX, |p| p.rb())
}

/// The most bytes a packet sent by a run of `p` at a node with `mtu` may have (§IV.A.2,
/// linear in the packet): the packet, a stack grown by at most one value per instruction,
/// and the allocations, at most max(packet, 4 × MTU) bytes.
pub(crate) fn child_limit(p: &Program, mtu: usize) -> usize {
    p.packet_len() + 4 * (p.code.len() + 1) + p.packet_len().max(4 * mtu)
}
