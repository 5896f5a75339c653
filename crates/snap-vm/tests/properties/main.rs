//! The paper's safety invariants (§IV) as properties of the interpreter on random programs,
//! and a differential test against the reference interpreter in `reference/`; the seven
//! bugs they found are pinned in `regressions.rs`.
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

mod cases;
mod regressions;

use cases::*;

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
            prop_assert_eq!(pkt.as_ref().map(|p| p.dst()).ok(), Some(t.dst));
            // A packet never changes family.
            prop_assert_eq!(pkt.as_ref().map(|p| p.is_ipv6()).ok(), Some(case.v6));
            prop_assert_eq!(pkt.map(|p| p.dst_addr()).ok(), Some(t.destination()));
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
        v6 in any::<bool>(),
    ) {
        let mut p = Program { src: ADDRS[0], dst: ADDRS[1], port: 3, rb: 4, ..Program::default() };
        if v6 {
            p.set_addrs(ADDRS6[0].into(), ADDRS6[1].into()).unwrap();
        }
        let vals = heap(&mut p, &objs, v6);
        let child_to = if v6 { p.heap_ip(ADDRS6[2].into()) } else { p.heap_addr(ADDRS[2]) };
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
        let want = dual(here.clone()).run(0, 0, direct.to_bytes().unwrap());
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
        let out = dual(here).run(0, 0, p.to_bytes().unwrap());
        prop_assert_eq!(out.end, End::Exit, "{:?}", out);
        prop_assert_eq!(out.transmits.len(), 1);
        let child = out.transmits[0].packet.clone();
        let c = NodeConfig { address: ADDRS[2], ifaces: 2, mtu: 1500 };
        let got = dual(c).run(1, 0, child);
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
    // The reference speaks IPv4 only.
    let case = &Case {
        v6: false,
        ..case.clone()
    };
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
