//! The paper's safety invariants (§IV) as properties of the interpreter on random programs,
//! and a differential test against the reference interpreter in `reference.rs`.
//!
//! Programs are generated from opcode/immediate sequences biased toward valid ones (forward
//! branches, small counts, heap offsets that name objects, `send` with its four arguments
//! set up), over a heap of a few objects and a random initial stack, at random nodes.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod reference;

use proptest::collection::vec;
use proptest::prelude::*;
use snap_vm::op::{Imm, Op};
use snap_vm::program::Program;
use snap_vm::service::EssService;
use snap_vm::value::{DATA_BITS, Tag, Value, Word};
use snap_vm::verify::verify;
use snap_vm::vm::{Delivered, End, NodeConfig, Outcome, Vm};
use snap_vm::wire::Packet;

const ADDRS: [[u8; 4]; 4] = [[10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3], [10, 0, 0, 4]];
const NAMES: [&[u8]; 3] = [b"ess.get", b"ess.put", b"ess.count"];

/// A heap object to generate.
#[derive(Clone, Debug)]
enum Obj {
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
enum Elem {
    Int(i32),
    Ref(usize),
}

/// A piece of code.
#[derive(Clone, Debug)]
enum Piece {
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
struct Case {
    objs: Vec<Obj>,
    stack: Vec<Elem>,
    code: Vec<Piece>,
    src: usize,
    dst: usize,
    port: u16,
    rb: u16,
    entry: u16,
    node: usize,
    ifaces: u32,
    mtu: usize,
    iface: u32,
}

/// The value an [`Elem`] stands for, given the objects built so far.
fn resolve(e: Elem, objs: &[Value]) -> Value {
    match e {
        Elem::Int(i) => Value::int(i),
        Elem::Ref(k) if objs.is_empty() => Value::int(k as i32),
        Elem::Ref(k) => objs[k % objs.len()],
    }
}

/// The immediate of `op` drawn from `r`.
fn imm_for(op: Op, r: u32, offsets: &[u32]) -> i32 {
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

/// Appends `objs` to `p`'s heap; returns pointers to them.
fn heap(p: &mut Program, objs: &[Obj]) -> Vec<Value> {
    let mut vals = Vec::new();
    for o in objs {
        let v = match o {
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
    fn config(&self) -> NodeConfig {
        NodeConfig {
            address: ADDRS[self.node],
            ifaces: self.ifaces,
            mtu: self.mtu,
        }
    }

    fn program(&self) -> Program {
        let mut p = Program {
            src: ADDRS[self.src],
            dst: ADDRS[self.dst],
            port: self.port,
            rb: self.rb,
            ..Program::default()
        };
        let vals = heap(&mut p, &self.objs);
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

fn elem() -> impl Strategy<Value = Elem> {
    prop_oneof![
        3 => (-20i32..20).prop_map(Elem::Int),
        1 => any::<i32>().prop_map(Elem::Int),
        3 => (0usize..8).prop_map(Elem::Ref),
    ]
}

fn obj() -> impl Strategy<Value = Obj> {
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
const FAVOURITES: &[Op] = &[
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

fn piece(sends: bool) -> impl Strategy<Value = Piece> {
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

fn case(sends: bool) -> impl Strategy<Value = Case> {
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
        (prop::sample::select(vec![68usize, 576, 1500]), 0u32..4),
    )
        .prop_map(
            |((objs, stack, code), (src, dst, port, rb), (entry, node, ifaces), (mtu, iface))| {
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
                }
            },
        )
}

/// A VM for `config` offering the ESS services.
fn vm_with_ess(config: NodeConfig) -> Vm {
    let mut vm = Vm::new(config);
    let store = ess::EssConfig::new(6, 1_000, 1, ess::HashKey::from_seed(1)).unwrap();
    for s in EssService::trio(store, ess::HashKey::from_seed(2)) {
        vm.services.register(Box::new(s));
    }
    vm
}

fn run(case: &Case, program: &Program) -> Outcome {
    vm_with_ess(case.config()).run(7, case.iface, program.to_bytes().unwrap())
}

fn rb_of(packet: &[u8]) -> u16 {
    Packet::new_checked(packet).map_or(u16::MAX, |p| p.rb())
}

/// The most bytes a packet sent by a run of `p` at a node with `mtu` may have (§IV.A.2,
/// linear in the packet): the packet, a stack grown by at most one value per instruction,
/// and the allocations, at most max(packet, 4 × MTU) bytes.
fn child_limit(p: &Program, mtu: usize) -> usize {
    p.packet_len() + 4 * (p.code.len() + 1) + p.packet_len().max(4 * mtu)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// §IV.A: a verified program stays within the bounds the verifier printed.
    #[test]
    fn verified_programs_stay_within_their_bounds(case in case(true)) {
        let p = case.program();
        let Ok(b) = verify(&p, &case.config()) else { return Ok(()) };
        let out = run(&case, &p);
        let s = out.stats;
        prop_assert!(s.executed <= b.instructions, "{s:?} {b:?} {out:?}");
        prop_assert!(s.max_depth <= b.stack_depth, "{s:?} {b:?} {out:?}");
        prop_assert!(s.allocated <= b.heap_words, "{s:?} {b:?} {out:?}");
        prop_assert!(s.sends <= b.sends, "{s:?} {b:?} {out:?}");
        prop_assert!(out.delivery.is_none() || b.delivers, "{b:?} {out:?}");
        prop_assert!(out.transmits.len() as u32 <= b.sends);
    }

    /// §IV.A.3: children share the bound the packet has left after its own hop.
    #[test]
    fn resource_bound_is_conserved(case in case(true)) {
        let p = case.program();
        let out = run(&case, &p);
        let given: u32 = out.transmits.iter().map(|t| u32::from(rb_of(&t.packet))).sum();
        if p.rb == 0 {
            prop_assert!(out.transmits.is_empty());
        } else {
            prop_assert!(given < u32::from(p.rb), "gave {given} of {}: {out:?}", p.rb);
        }
    }

    /// Every packet a node sends is well-formed, within [`child_limit`], and running it
    /// (and what it sends) never panics.
    #[test]
    fn every_transmit_parses_and_runs_again(case in case(true)) {
        let p = case.program();
        let out = run(&case, &p);
        let limit = child_limit(&p, case.mtu);
        for t in &out.transmits {
            let pkt = Packet::new_checked(&t.packet[..]);
            prop_assert!(pkt.is_ok(), "{:?}", pkt.err());
            prop_assert!(Program::from_bytes(&t.packet).is_ok());
            prop_assert!(t.packet.len() <= limit, "{} > {limit}", t.packet.len());
            prop_assert_eq!(pkt.map(|p| p.dst()).ok(), Some(t.dst));
            for node in ADDRS {
                let config = NodeConfig { address: node, ..case.config() };
                let again = vm_with_ess(config.clone()).run(8, 0, t.packet.clone());
                for u in again.transmits {
                    prop_assert!(Program::from_bytes(&u.packet).is_ok());
                    let _ = vm_with_ess(config.clone()).run(9, 1, u.packet);
                }
            }
        }
    }

    /// Node integrity: any bytes at all, and valid packets with bytes changed.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..400), ifaces in 0u32..4) {
        let config = NodeConfig { address: ADDRS[1], ifaces, mtu: 100 };
        let _ = vm_with_ess(config).run(0, 0, bytes);
    }

    #[test]
    fn mutated_packets_never_panic(
        case in case(true),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = case.program().to_bytes().unwrap();
        for (i, b) in edits {
            let i = i.index(bytes.len());
            bytes[i] = b;
        }
        let out = vm_with_ess(case.config()).run(0, case.iface, bytes);
        for t in out.transmits {
            prop_assert!(Program::from_bytes(&t.packet).is_ok());
        }
    }
}

/// Code that pushes values, allocating or not, for the send test.
#[derive(Clone, Copy, Debug)]
enum Maker {
    Int(i32),
    /// `pushh` of packet heap object `k` (mod their number).
    Pushh(usize),
    Getsrc,
    Here,
    Wide(i32),
    Float(i32),
    Addr(i32, i32),
    /// `mktup n` of the values on top.
    Tuple(u32),
}

fn maker() -> impl Strategy<Value = Maker> {
    prop_oneof![
        (-9i32..9).prop_map(Maker::Int),
        (0usize..8).prop_map(Maker::Pushh),
        Just(Maker::Getsrc),
        Just(Maker::Here),
        any::<i32>().prop_map(Maker::Wide),
        (-9i32..9).prop_map(Maker::Float),
        (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Maker::Addr(a.into(), b.into())),
        (0u32..4).prop_map(Maker::Tuple),
    ]
}

/// Code for `makers` (skipping tuples of more values than are there); returns it with the
/// number of values it leaves.
fn make(makers: &[Maker], objs: &[Value]) -> (Vec<(Op, i32)>, u32) {
    let mut code = Vec::new();
    let mut depth = 0u32;
    for &m in makers {
        match m {
            Maker::Int(i) => code.push((Op::Push, i)),
            Maker::Pushh(k) if !objs.is_empty() => {
                code.push((Op::Pushh, objs[k % objs.len()].data() as i32));
            }
            Maker::Pushh(k) => code.push((Op::Push, k as i32)),
            Maker::Getsrc => code.push((Op::Getsrc, 0)),
            Maker::Here => code.push((Op::Here, 0)),
            Maker::Wide(i) => code.extend([(Op::Push, i), (Op::Towide, 0)]),
            Maker::Float(i) => code.extend([(Op::Push, i), (Op::Itof, 0)]),
            Maker::Addr(a, b) => code.extend([(Op::Push, a), (Op::Push, b), (Op::Mkaddr, 0)]),
            Maker::Tuple(n) if n <= depth => {
                code.push((Op::Mktup, n as i32));
                code.extend((1..n).map(|_| (Op::Nop, 0)));
                depth -= n;
            }
            Maker::Tuple(_) => code.push((Op::Push, 0)),
        }
        depth += 1;
    }
    (code, depth)
}

fn words(code: &[(Op, i32)]) -> Vec<Word> {
    code.iter()
        .map(|&(op, imm)| Word::new(op as u8, imm))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// §VI.D: `send` after allocations (a copying collection) or without them (a plain
    /// copy) gives a child whose values, followed through its heap, are the parent's.
    #[test]
    fn send_carries_its_values_intact(
        objs in vec(obj(), 0..5),
        makers in vec(maker(), 1..12),
        k in 1u32..4,
    ) {
        let mut p = Program { src: ADDRS[0], dst: ADDRS[1], port: 3, rb: 4, ..Program::default() };
        let vals = heap(&mut p, &objs);
        let child_to = p.heap_addr(ADDRS[2]);
        let (mut code, depth) = make(&makers, &vals);
        let k = k.min(depth);
        // The tail both runs share: gather the top k values in a tuple and deliver it.
        let mut tail = vec![(Op::Mktup, k as i32)];
        tail.extend((1..k).map(|_| (Op::Nop, 0)));
        tail.extend([(Op::Push, 5), (Op::Demux, 0)]);

        // The parent delivers them itself.
        let mut direct = p.clone();
        direct.code = words(&[code.clone(), tail.clone()].concat());
        let here = NodeConfig { address: ADDRS[1], ifaces: 2, mtu: 1500 };
        let want = Vm::new(here.clone()).run(0, 0, direct.to_bytes().unwrap());
        prop_assert_eq!(want.end, End::Delivered, "{:?}", want);

        // Or sends them to C, where the child delivers them.
        let entry = (code.len() + 6) as i32;
        code.extend([
            (Op::Push, entry),
            (Op::Push, k as i32),
            (Op::Push, 1),
            (Op::Pushh, child_to.data() as i32),
            (Op::Send, 0),
            (Op::Exit, 0),
        ]);
        code.extend(tail);
        p.code = words(&code);
        let out = Vm::new(here).run(0, 0, p.to_bytes().unwrap());
        prop_assert_eq!(out.end, End::Exit, "{:?}", out);
        prop_assert_eq!(out.transmits.len(), 1);
        let child = out.transmits[0].packet.clone();
        let c = NodeConfig { address: ADDRS[2], ifaces: 2, mtu: 1500 };
        let got = Vm::new(c).run(1, 0, child);
        prop_assert_eq!(got.end, End::Delivered, "{:?}", got);
        let (w, g) = (want.delivery.unwrap(), got.delivery.unwrap());
        prop_assert!(reference::same(&w.value, &g.value), "{:?} != {:?}", w.value, g.value);
    }

    /// The interpreter and the reference agree on programs without `send`: how they end,
    /// what they deliver and send (values followed through the heap), and what they use.
    #[test]
    fn the_reference_agrees_without_sends(case in case(false)) {
        differential(&case)?;
    }

    /// … and with sends, where children carry values followed through the heap.
    #[test]
    fn the_reference_agrees_with_sends(case in case(true)) {
        differential(&case)?;
    }
}

fn differential(case: &Case) -> Result<(), TestCaseError> {
    let p = case.program();
    let node = reference::Node {
        address: ADDRS[case.node],
        ifaces: case.ifaces,
        mtu: case.mtu,
        iface: case.iface,
    };
    let want = reference::run(&p, &node);
    let got = Vm::new(case.config()).run(7, case.iface, p.to_bytes().unwrap());
    let end = match got.end {
        End::Exit => reference::End::Exit,
        End::Forwarded => reference::End::Forwarded,
        End::Delivered => reference::End::Delivered,
        End::Fault(f) => reference::End::Fault(f),
        End::NoResource => reference::End::NoResource,
        End::Malformed(e) => return Err(TestCaseError::fail(format!("malformed: {e}"))),
    };
    let ctx = || format!("{p:?}\nreference {want:?}\nvm {got:?}");
    prop_assert_eq!(&end, &want.end, "{}", ctx());
    match (&got.delivery, &want.delivery) {
        (Some(d), Some((port, value, src))) => {
            prop_assert!(d.port == *port && d.src == *src, "{}", ctx());
            prop_assert!(reference::same(&d.value, value), "{}", ctx());
        }
        (None, None) => {}
        _ => prop_assert!(false, "deliveries differ: {}", ctx()),
    }
    prop_assert_eq!(got.transmits.len(), want.transmits.len(), "{}", ctx());
    for (t, c) in got.transmits.iter().zip(&want.transmits) {
        let child = reference::child_of(&t.packet);
        prop_assert_eq!(child.as_ref(), Some(c), "{}", ctx());
    }
    let s = got.stats;
    prop_assert_eq!(
        (s.executed, s.max_depth, s.allocated),
        (want.executed, want.max_depth, want.allocated),
        "{}",
        ctx()
    );
    Ok(())
}

/// Integer, logic and comparison instructions on random operands, against the reference.
#[derive(Clone, Copy, Debug)]
enum Operand {
    Edge(usize),
    Any(i32),
}

const EDGES: [i32; 9] = [0, 1, -1, 2, 24, 25, 31, (1 << 24) - 1, -(1 << 24)];

fn operand() -> impl Strategy<Value = i32> {
    prop_oneof![
        (0usize..EDGES.len()).prop_map(Operand::Edge),
        any::<i32>().prop_map(Operand::Any),
    ]
    .prop_map(|o| match o {
        Operand::Edge(i) => EDGES[i],
        Operand::Any(x) => Value::int(x).as_int(),
    })
}

const INT_OPS: &[Op] = &[
    Op::Add,
    Op::Addi,
    Op::Sub,
    Op::Subi,
    Op::Mul,
    Op::Muli,
    Op::Div,
    Op::Divi,
    Op::Mod,
    Op::Modi,
    Op::Neg,
    Op::Min,
    Op::Max,
    Op::Abs,
    Op::And,
    Op::Andi,
    Op::Or,
    Op::Ori,
    Op::Xor,
    Op::Xori,
    Op::Not,
    Op::Lnot,
    Op::Lsl,
    Op::Lsli,
    Op::Lsr,
    Op::Lsri,
    Op::Asr,
    Op::Asri,
    Op::Eq,
    Op::Eqi,
    Op::Neq,
    Op::Neqi,
    Op::Lt,
    Op::Lti,
    Op::Le,
    Op::Lei,
    Op::Gt,
    Op::Gti,
    Op::Ge,
    Op::Gei,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    #[test]
    fn int_logic_and_compare_agree_with_the_reference(
        op in prop::sample::select(INT_OPS),
        a in operand(),
        b in operand(),
        imm in operand(),
    ) {
        let p = Program {
            src: ADDRS[0],
            dst: ADDRS[1],
            rb: 1,
            code: words(&[(op, imm), (Op::Push, 1), (Op::Demux, 0)]),
            stack: vec![Value::int(a), Value::int(b)],
            ..Program::default()
        };
        let node = reference::Node { address: ADDRS[1], ifaces: 1, mtu: 1500, iface: 0 };
        let want = reference::run(&p, &node);
        let got = Vm::new(NodeConfig { address: ADDRS[1], ifaces: 1, mtu: 1500 })
            .run(0, 0, p.to_bytes().unwrap());
        let value = |d: Option<&snap_vm::vm::Delivery>| d.map(|d| d.value.clone());
        prop_assert_eq!(
            value(got.delivery.as_ref()),
            want.delivery.map(|d| d.1),
            "{:?} a={} b={} imm={}: {:?}", op, a, b, imm, got.end
        );
    }
}

/// Regression: `forw` after a `send` reuses the buffer, whose header still holds the bound
/// the packet arrived with less one; it must carry only what the send left.
#[test]
fn forw_after_send_carries_only_the_bound_left() {
    let mut p = Program {
        src: ADDRS[0],
        dst: ADDRS[3],
        rb: 5,
        ..Program::default()
    };
    let to = p.heap_addr(ADDRS[2]);
    p.code = words(&[
        (Op::Push, 0),
        (Op::Push, 0),
        (Op::Push, 1),
        (Op::Pushh, to.data() as i32),
        (Op::Send, 0),
        (Op::Pop, 0),
        (Op::Forw, 0),
    ]);
    let config = NodeConfig {
        address: ADDRS[0],
        ifaces: 2,
        mtu: 1500,
    };
    let out = Vm::new(config).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Forwarded);
    let rbs: Vec<u16> = out.transmits.iter().map(|t| rb_of(&t.packet)).collect();
    // Arrived with 5, keeps 4, gives 1 to the child: 3 left for the forwarded packet.
    assert_eq!(rbs, [1, 3]);
}

/// Regression: the copying collection copies every distinct object offset the child's
/// values reach, and objects may overlap, so a 1.2 kB packet could make a 180 kB child —
/// quadratic, past the linear bound of §IV.A ([`child_limit`]).
#[test]
fn a_collected_child_is_linear_in_the_packet() {
    let n = 300u32;
    let mut p = Program {
        src: ADDRS[0],
        dst: ADDRS[1],
        rb: 2,
        ..Program::default()
    };
    // Word i is the header of a tuple running to the end of the heap; read as a value, it
    // points at word n − 1 − i, another such tuple.
    p.heap = (0..n)
        .map(|i| ((Tag::Tuple as u32) << DATA_BITS) | (n - 1 - i))
        .collect();
    p.stack = vec![Value::boxed(Tag::Tuple, 0)];
    // `here` allocates, so the forw collects.
    p.code = words(&[(Op::Here, 0), (Op::Pop, 0), (Op::Forw, 0)]);
    let mtu = 1500;
    let config = NodeConfig {
        address: ADDRS[0],
        ifaces: 2,
        mtu,
    };
    let out = Vm::new(config).run(0, 0, p.to_bytes().unwrap());
    let limit = child_limit(&p, mtu);
    for t in &out.transmits {
        assert!(
            t.packet.len() <= limit,
            "{:?}: child {} bytes from a {}-byte packet",
            out.end,
            t.packet.len(),
            p.packet_len()
        );
    }
}

/// Regression: `demux` copies a tuple once per path to it, so sharing (a DAG, which the
/// packet heap may hold) makes delivery exponential in the nesting: k items per level and
/// 8 levels give k⁸ values from a packet of about 36·k bytes (k = 16: 4·10⁹ values, 600
/// bytes). §IV.A wants delivery linear in the packet.
#[test]
fn demux_of_a_shared_tuple_is_linear_in_the_packet() {
    let mut p = Program {
        src: ADDRS[0],
        dst: ADDRS[1],
        rb: 1,
        ..Program::default()
    };
    let mut t = p.heap_tuple(&[Value::int(1); 3]);
    for _ in 0..7 {
        t = p.heap_tuple(&[t; 3]);
    }
    p.stack = vec![t, Value::int(3)];
    p.code = words(&[(Op::Demux, 0)]);
    let config = NodeConfig {
        address: ADDRS[1],
        ifaces: 1,
        mtu: 1500,
    };
    let out = Vm::new(config).run(0, 0, p.to_bytes().unwrap());
    fn values(d: &Delivered) -> usize {
        match d {
            Delivered::Tuple(items) => 1 + items.iter().map(values).sum::<usize>(),
            _ => 1,
        }
    }
    let n = out.delivery.as_ref().map_or(0, |d| values(&d.value));
    assert!(
        n <= p.packet_len(),
        "{n} values delivered from a {}-byte packet",
        p.packet_len()
    );
}

/// Regression: with an MTU past 64 kB the stack may grow past 65535 values; the packet
/// `forw` then emits must still describe its stack (the 16-bit length field is truncated).
#[test]
fn a_forwarded_stack_deeper_than_the_length_field_is_not_emitted_malformed() {
    let p = Program {
        src: ADDRS[0],
        dst: ADDRS[1],
        rb: 2,
        code: words(&[(Op::Dup, 0), (Op::Forw, 0)]),
        stack: vec![Value::int(1); 65_535],
        ..Program::default()
    };
    let config = NodeConfig {
        address: ADDRS[0],
        ifaces: 2,
        mtu: 70_000,
    };
    let out = Vm::new(config).run(0, 0, p.to_bytes().unwrap());
    for t in &out.transmits {
        assert!(
            Packet::new_checked(&t.packet[..]).is_ok(),
            "{:?}: {:?}",
            out.end,
            Packet::new_checked(&t.packet[..]).err()
        );
    }
}

/// Regression: without allocations `forw` copies the stack as it is, a value whose tag says
/// pointer but which points at nothing included; after an allocation the copying collection
/// faults on that same value. So does it on a packet-heap tuple reached only through an
/// immediate of code that never runs. The same packet should not forward or fault depending
/// on whether it allocated: a dangling reference could stay dangling in the child, as the
/// collector already does for code immediates that name nothing.
#[test]
fn forw_treats_a_dangling_reference_alike_with_and_without_allocation() {
    let config = NodeConfig {
        address: ADDRS[0],
        ifaces: 2,
        mtu: 1500,
    };
    let mut p = Program {
        src: ADDRS[0],
        dst: ADDRS[1],
        rb: 2,
        stack: vec![Value::boxed(Tag::Addr, 100)],
        ..Program::default()
    };
    for code in [
        &[(Op::Forw, 0)][..],
        &[(Op::Here, 0), (Op::Pop, 0), (Op::Forw, 0)],
    ] {
        p.code = words(code);
        let out = Vm::new(config.clone()).run(0, 0, p.to_bytes().unwrap());
        assert_eq!(out.end, End::Forwarded, "{code:?}");
    }
    // A verified program: the `pushh` after the forw names a tuple holding a stale pointer.
    let mut p = Program {
        src: ADDRS[0],
        dst: ADDRS[1],
        rb: 2,
        code: words(&[(Op::Here, 0), (Op::Pop, 0), (Op::Forw, 0), (Op::Pushh, 0)]),
        ..Program::default()
    };
    p.heap_tuple(&[Value::boxed(Tag::Addr, 50)]);
    assert!(verify(&p, &config).is_ok());
    let out = Vm::new(config).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Forwarded);
}

/// Regression: a delivery may share a tuple among several places (here one `pushh`ed three
/// times): an honest heap can deliver more values than it has words, so a linear budget
/// must leave room for that.
#[test]
fn demux_of_an_honestly_shared_tuple_delivers() {
    let mut p = Program {
        src: ADDRS[0],
        dst: ADDRS[1],
        rb: 1,
        ..Program::default()
    };
    let t = p.heap_tuple(&[Value::int(0), Value::int(0)]);
    let at = t.data() as i32;
    p.code = words(&[
        (Op::Pushh, at),
        (Op::Pushh, at),
        (Op::Pushh, at),
        (Op::Mktup, 3),
        (Op::Nop, 0),
        (Op::Nop, 0),
        (Op::Push, 1),
        (Op::Demux, 0),
    ]);
    let config = NodeConfig {
        address: ADDRS[1],
        ifaces: 1,
        mtu: 1500,
    };
    let out = Vm::new(config).run(0, 0, p.to_bytes().unwrap());
    let pair = Delivered::Tuple(vec![Delivered::Int(0), Delivered::Int(0)]);
    assert_eq!(out.end, End::Delivered, "{out:?}");
    assert_eq!(
        out.delivery.map(|d| d.value),
        Some(Delivered::Tuple(vec![pair.clone(), pair.clone(), pair]))
    );
}

/// Regression: a forwarded child's code names the same objects as its parent's, or the
/// forw faults; a heap immediate is not silently left naming nothing. Here the second
/// `pushh` names a one-word object inside the float the first names (a packet may overlap
/// objects), so the collected heap would outgrow the parent's.
#[test]
fn a_collected_childs_code_names_what_the_parents_did() {
    let p = Program {
        src: ADDRS[0],
        dst: ADDRS[2],
        rb: 1,
        stack: vec![Value::int(0), Value::int(0)],
        // fadd allocates a float at offset 0, whose payload word (0.0) reads as an empty
        // object at offset 1.
        code: words(&[(Op::Fadd, 0), (Op::Pushh, 0), (Op::Forw, 0), (Op::Pushh, 1)]),
        ..Program::default()
    };
    let config = NodeConfig {
        address: ADDRS[0],
        ifaces: 1,
        mtu: 68,
    };
    let out = Vm::new(config).run(0, 0, p.to_bytes().unwrap());
    if out.end == End::Forwarded {
        let child = reference::child_of(&out.transmits[0].packet).unwrap();
        assert!(
            !child
                .code_refs
                .iter()
                .any(|r| matches!(r, reference::Deep::Dangling(_))),
            "{child:?}"
        );
    }
}
