//! The interpreter instruction by instruction, and its safety rules (paper §III, §IV, §VI).

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::service::EssService;
use snap_vm::value::{Tag, Value, Word};
use snap_vm::verify::verify;
use snap_vm::vm::{Delivered, End, Fault, NodeConfig, Outcome, Vm};
use snap_vm::wire::Packet;

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const C: [u8; 4] = [10, 0, 0, 3];

fn node(addr: [u8; 4]) -> Vm {
    Vm::new(NodeConfig {
        address: addr,
        ifaces: 3,
        mtu: 1500,
    })
}

fn prog(code: &[(Op, i32)]) -> Program {
    Program {
        src: A,
        dst: B,
        port: 9,
        rb: 5,
        code: code
            .iter()
            .map(|&(op, imm)| Word::new(op as u8, imm))
            .collect(),
        ..Program::default()
    }
}

/// Runs `p` at B (its destination) and returns the outcome.
fn run(p: &Program) -> Outcome {
    node(B).run(0, 0, p.to_bytes().unwrap())
}

/// Runs `code` then delivers s[0] to port 1; returns the delivered value.
fn eval(stack: &[Value], code: &[(Op, i32)]) -> Delivered {
    let mut code = code.to_vec();
    code.extend([(Op::Push, 1), (Op::Demux, 0)]);
    let mut p = prog(&code);
    p.stack = stack.to_vec();
    let out = run(&p);
    assert_eq!(out.end, End::Delivered, "{out:?}");
    out.delivery.unwrap().value
}

fn int(i: i32) -> Delivered {
    Delivered::Int(i)
}

#[test]
fn arithmetic_logic_and_comparisons() {
    use Op::*;
    let v = Value::int;
    assert_eq!(eval(&[v(7), v(5)], &[(Sub, 0)]), int(2));
    assert_eq!(eval(&[v(7)], &[(Subi, 10)]), int(-3));
    assert_eq!(eval(&[v(-7), v(2)], &[(Div, 0)]), int(-3));
    assert_eq!(eval(&[v(7), v(3)], &[(Mod, 0)]), int(1));
    assert_eq!(eval(&[v(6)], &[(Muli, 7)]), int(42));
    assert_eq!(eval(&[v(0b1100), v(0b1010)], &[(Xor, 0)]), int(0b0110));
    assert_eq!(eval(&[v(1)], &[(Lsli, 24)]), int(-(1 << 24)), "25-bit wrap");
    assert_eq!(
        eval(&[v(-1)], &[(Lsri, 20)]),
        int(31),
        "logical shift of 25 bits"
    );
    assert_eq!(eval(&[v(-8)], &[(Asri, 2)]), int(-2));
    assert_eq!(eval(&[v(3), v(4)], &[(Lt, 0)]), int(1));
    assert_eq!(eval(&[v(4)], &[(Gei, 4)]), int(1));
    assert_eq!(eval(&[v(0)], &[(Lnot, 0)]), int(1));
    assert_eq!(eval(&[v(-5)], &[(Abs, 0)]), int(5));
    assert_eq!(eval(&[v(2), v(9)], &[(Min, 0)]), int(2));
    assert_eq!(
        eval(&[v(1 << 23)], &[(Addi, 1 << 23)]),
        int(-(1 << 24)),
        "wraps"
    );
}

#[test]
fn stack_operations() {
    use Op::*;
    let v = Value::int;
    assert_eq!(eval(&[v(1), v(2), v(3)], &[(Pull, 2)]), int(1));
    assert_eq!(eval(&[v(1), v(2), v(3)], &[(Rot, 0)]), int(1));
    assert_eq!(eval(&[v(1), v(2)], &[(Swap, 0)]), int(1));
    assert_eq!(eval(&[v(1), v(2), v(3)], &[(Popi, 2)]), int(1));
    assert_eq!(eval(&[v(1), v(2), v(3)], &[(Store, 2), (Pop, 0)]), int(3));
    assert_eq!(eval(&[v(1), v(2), v(3)], &[(Depth, 0)]), int(3));
    assert_eq!(eval(&[v(4)], &[(Dup, 0), (Add, 0)]), int(8));
}

#[test]
fn control_flow_follows_the_language_reference() {
    use Op::*;
    let v = Value::int;
    // bez/bne pop their test; offsets count from the branch.
    assert_eq!(eval(&[v(0)], &[(Bez, 2), (Push, 99), (Push, 5)]), int(5));
    assert_eq!(eval(&[v(1)], &[(Bez, 2), (Push, 99)]), int(99));
    assert_eq!(eval(&[v(1)], &[(Bne, 2), (Push, 99), (Push, 5)]), int(5));
    // paj n: off = n + s[0].
    assert_eq!(
        eval(&[v(2)], &[(Paj, 1), (Push, 99), (Push, 98), (Push, 5)]),
        int(5)
    );
    // tpaj n: if s[0] = 0 then off = n + s[1] else 1; pops two.
    assert_eq!(
        eval(
            &[v(2), v(0)],
            &[(Tpaj, 1), (Push, 99), (Push, 98), (Push, 5)]
        ),
        int(5)
    );
    assert_eq!(eval(&[v(2), v(1)], &[(Tpaj, 1), (Push, 99)]), int(99));
    assert_eq!(eval(&[], &[(Ji, 2), (Push, 99), (Push, 5)]), int(5));
    // Running past the end exits.
    assert_eq!(run(&prog(&[(Nop, 0)])).end, End::Exit);
}

#[test]
fn computed_branches_that_do_not_go_forward_fault() {
    use Op::*;
    for (stack, code) in [
        (vec![Value::int(-1)], vec![(Paj, 1)]),
        (vec![Value::int(0)], vec![(Paj, 0)]),
        (vec![Value::int(-5), Value::int(0)], vec![(Tpaj, 2)]),
        (vec![Value::int(40)], vec![(Paj, 0)]),
    ] {
        let mut p = prog(&code);
        p.stack = stack;
        assert!(
            matches!(run(&p).end, End::Fault(Fault::BadBranch { .. })),
            "{code:?}"
        );
    }
    // An immediate backward branch faults at run time too (the verifier rejects it).
    let p = prog(&[(Nop, 0), (Ji, -1)]);
    assert!(matches!(
        run(&p).end,
        End::Fault(Fault::BadBranch { pc: 1, offset: -1 })
    ));
    assert!(verify(&p, &node(B).config().clone()).is_err());
}

#[test]
fn tuples_bytes_and_the_mktup_rule() {
    use Op::*;
    let v = Value::int;
    assert_eq!(
        eval(&[v(1), v(2), v(3)], &[(Mktup, 3), (Nop, 0), (Nop, 0)]),
        Delivered::Tuple(vec![int(1), int(2), int(3)])
    );
    assert_eq!(eval(&[v(1), v(2)], &[(Mktup, 2), (Nth, 1)]), int(2));
    assert_eq!(eval(&[v(1), v(2)], &[(Mktup, 2), (Length, 0)]), int(2));
    let mut p = prog(&[(Pushh, 0), (Push, 2), (Bget, 0), (Push, 1), (Demux, 0)]);
    p.heap_bytes(b"snap");
    assert_eq!(run(&p).delivery.unwrap().value, int(i32::from(b'a')));
    // mktup inside an earlier mktup's span faults.
    let mut p = prog(&[(Mktup, 2), (Mktup, 1)]);
    p.stack = vec![v(1), v(2)];
    assert_eq!(run(&p).end, End::Fault(Fault::MktupSpacing { pc: 1 }));
    // Out-of-range reads fault instead of reading elsewhere.
    let mut p = prog(&[(Mktup, 1), (Nth, 1)]);
    p.stack = vec![v(1)];
    assert_eq!(run(&p).end, End::Fault(Fault::HeapBounds));
}

#[test]
fn boxed_floats_wides_and_addresses() {
    use Op::*;
    let v = Value::int;
    assert_eq!(
        eval(
            &[v(3), v(4)],
            &[(Itof, 0), (Swap, 0), (Itof, 0), (Fdiv, 0), (Ftoi, 0)]
        ),
        int(1)
    );
    assert_eq!(
        eval(&[v(1 << 20)], &[(Towide, 0), (Dup, 0), (Wmul, 0)]),
        Delivered::Wide(1 << 40)
    );
    assert_eq!(
        eval(&[v(0x0A00), v(0x0105)], &[(Mkaddr, 0)]),
        Delivered::Addr([10, 0, 1, 5])
    );
    assert_eq!(
        eval(&[v(0x0A00), v(0x0105), v(24)], &[(Snet, 0)]).clone(),
        // snet pops the mask length first: the address is s[1]
        eval(&[v(0x0A00), v(0x0105), v(24)], &[(Snet, 0)])
    );
    let mut p = prog(&[(Pushh, 0), (Push, 24), (Snet, 0), (Push, 1), (Demux, 0)]);
    p.heap_addr([192, 168, 7, 9]);
    assert_eq!(
        run(&p).delivery.unwrap().value,
        Delivered::Addr([192, 168, 7, 0])
    );
    let mut p = prog(&[
        (Pushh, 0),
        (Pushh, 2),
        (Push, 16),
        (Insnet, 0),
        (Push, 1),
        (Demux, 0),
    ]);
    p.heap_addr([192, 168, 7, 9]);
    p.heap_addr([192, 168, 0, 0]);
    assert_eq!(run(&p).delivery.unwrap().value, int(1));
    // here, ishere, getsrc.
    let p = prog(&[
        (Here, 0),
        (Ishere, 0),
        (Getsrc, 0),
        (Ishere, 0),
        (Add, 0),
        (Push, 1),
        (Demux, 0),
    ]);
    assert_eq!(run(&p).delivery.unwrap().value, int(1));
}

#[test]
fn division_by_zero_and_underflow_fault() {
    use Op::*;
    let mut p = prog(&[(Divi, 0)]);
    p.stack = vec![Value::int(1)];
    assert_eq!(run(&p).end, End::Fault(Fault::DivideByZero));
    assert_eq!(
        run(&prog(&[(Pop, 0)])).end,
        End::Fault(Fault::StackUnderflow)
    );
    assert_eq!(
        run(&prog(&[(Pull, 3)])).end,
        End::Fault(Fault::StackUnderflow)
    );
}

#[test]
fn resource_bound_is_decremented_on_arrival_and_conserved() {
    use Op::*;
    let mut p = prog(&[(Getrb, 0), (Push, 1), (Demux, 0)]);
    p.rb = 5;
    assert_eq!(run(&p).delivery.unwrap().value, int(4));
    p.rb = 0;
    let out = run(&p);
    assert_eq!((out.end, out.delivery), (End::NoResource, None));
    // send gives a child what it asks for, taken from the parent.
    let mut p = prog(&[
        (Push, 0),  // entry
        (Push, 0),  // stack count
        (Push, 3),  // rb for the child
        (Pushh, 0), // destination
        (Send, 0),
        (Pop, 0),
        (Getrb, 0),
        (Push, 1),
        (Demux, 0),
    ]);
    p.heap_addr(C);
    p.rb = 10;
    let out = run(&p);
    assert_eq!(
        out.delivery.unwrap().value,
        int(6),
        "9 after arrival, 3 given"
    );
    let child = Packet::new_checked(&out.transmits[0].packet[..]).unwrap();
    assert_eq!((child.rb(), child.dst(), out.transmits[0].dst), (3, C, C));
    // Asking for more than is left faults, sending nothing.
    p.rb = 3;
    let out = run(&p);
    assert_eq!(out.end, End::Fault(Fault::ResourceBound));
    assert!(out.transmits.is_empty());
}

#[test]
fn sends_are_limited_to_the_interface_count_and_demux_exits() {
    use Op::*;
    let mut code = Vec::new();
    for _ in 0..4 {
        code.extend([
            (Push, 0),
            (Push, 0),
            (Push, 0),
            (Pushh, 0),
            (Send, 0),
            (Pop, 0),
        ]);
    }
    let mut p = prog(&code);
    p.heap_addr(C);
    let out = run(&p);
    assert_eq!(out.end, End::Fault(Fault::SendLimit));
    assert_eq!(out.transmits.len(), 3, "the node has 3 interfaces");
    let mut p = prog(&[
        (Push, 1),
        (Push, 2),
        (Demux, 0),
        (Push, 3),
        (Push, 4),
        (Demux, 0),
    ]);
    p.stack.clear();
    let out = run(&p);
    assert_eq!(out.end, End::Delivered);
    assert_eq!(out.stats.executed, 3, "demux exits");
}

#[test]
fn forw_reuses_the_buffer_and_send_collects_only_what_the_child_reaches() {
    use Op::*;
    // Not at its destination: forw sends the very same bytes (but the decremented bound).
    let mut p = prog(&[(Forw, 0), (Push, 1), (Demux, 0)]);
    p.stack = vec![Value::int(4), Value::int(5)];
    let bytes = p.to_bytes().unwrap();
    let out = node(A).run(0, 0, bytes.clone());
    assert_eq!(out.end, End::Forwarded);
    let mut expect = bytes.clone();
    expect[13] -= 1;
    assert_eq!(out.transmits[0].packet, expect);
    assert_eq!(out.stats.allocated, 0);

    // After an allocation, a child gets only the objects its stack reaches, offsets fixed.
    let mut p = prog(&[
        (Getsrc, 0), // garbage for the child
        (Pop, 0),
        (Push, 7),
        (Push, 8),
        (Mktup, 2), // reachable tuple, allocated after the garbage
        (Pushh, 0), // reachable: the packet heap's bytes
        (Mktup, 2),
        (Push, 2),  // entry: the child runs `demux` below after pushing the port
        (Push, 1),  // stack count
        (Push, 1),  // rb
        (Pushh, 3), // destination
        (Send, 0),
        (Exit, 0),
    ]);
    p.heap_bytes(b"abc");
    p.heap_addr(C);
    let out = run(&p);
    assert_eq!(out.end, End::Exit, "{out:?}");
    let child = snap_vm::program::Program::from_bytes(&out.transmits[0].packet).unwrap();
    // Child heap: the outer tuple, the inner tuple, the bytes, the destination address
    // (a code immediate); not the garbage address.
    assert_eq!(child.heap.len(), 3 + 3 + 2 + 2, "{:?}", child.heap);
    // Make the child deliver its stack top and compare with the original structure.
    let mut c = child.clone();
    c.code = vec![Word::new(Push as u8, 1), Word::new(Demux as u8, 0)];
    c.entry = 0;
    c.dst = B;
    let d = node(B).run(0, 0, c.to_bytes().unwrap()).delivery.unwrap();
    assert_eq!(
        d.value,
        Delivered::Tuple(vec![
            Delivered::Tuple(vec![int(7), int(8)]),
            Delivered::Bytes(b"abc".to_vec())
        ])
    );
}

#[test]
fn malformed_and_little_endian_packets() {
    let out = node(B).run(0, 0, vec![1, 2, 3]);
    assert!(matches!(out.end, End::Malformed(_)));
    // A little-endian body runs the same after conversion.
    let mut p = prog(&[(Op::Push, 3), (Op::Push, 1), (Op::Demux, 0)]);
    p.stack.clear();
    let mut bytes = p.to_bytes().unwrap();
    bytes[0] |= snap_vm::wire::FLAG_LITTLE_ENDIAN;
    for w in bytes[24..].chunks_exact_mut(4) {
        w.reverse();
    }
    assert_eq!(node(B).run(0, 0, bytes).delivery.unwrap().value, int(3));
    // Unknown opcodes fault at the instruction.
    let mut p = prog(&[(Op::Nop, 0)]);
    p.code.push(Word::new(120, 0));
    assert_eq!(
        run(&p).end,
        End::Fault(Fault::UnknownOpcode { pc: 1, opcode: 120 })
    );
}

#[test]
fn the_ess_service_isolates_computations() {
    use Op::*;
    let mut vm = node(B);
    let config = ess::EssConfig::new(8, 10_000, 1, ess::HashKey::from_seed(1)).unwrap();
    for s in EssService::trio(config, ess::HashKey::from_seed(2)) {
        vm.services.register(Box::new(s));
    }
    // ess.count twice under tag 5, then deliver the count.
    let program = |src: [u8; 4]| {
        let mut p = prog(&[
            (Push, 5),
            (Calls, 0),
            (Pop, 0),
            (Push, 5),
            (Calls, 0),
            (Push, 1),
            (Demux, 0),
        ]);
        p.src = src;
        p.heap_bytes(b"ess.count");
        p
    };
    let got = vm.run(0, 0, program(A).to_bytes().unwrap());
    assert_eq!(got.end, End::Delivered, "{got:?}");
    assert_eq!(got.delivery.unwrap().value, int(2));
    let again = vm.run(1, 0, program(A).to_bytes().unwrap());
    assert_eq!(
        again.delivery.unwrap().value,
        int(4),
        "the same computation's state"
    );
    let other = vm.run(2, 0, program(C).to_bytes().unwrap());
    assert_eq!(
        other.delivery.unwrap().value,
        int(2),
        "another computation starts afresh"
    );
    // put then get.
    let mut p = prog(&[
        (Push, 9),
        (Push, 1234),
        (Calls, 0),
        (Pop, 0),
        (Push, 9),
        (Calls, 3), // "ess.put" takes a header and two words
        (Push, 1),
        (Demux, 0),
    ]);
    p.heap_bytes(b"ess.put");
    p.heap_bytes(b"ess.get");
    assert_eq!(
        vm.run(3, 0, p.to_bytes().unwrap()).delivery.unwrap().value,
        Delivered::Wide(1234)
    );
    // An unknown service faults.
    let mut p = prog(&[(Calls, 0)]);
    p.heap_bytes(b"nope");
    assert_eq!(
        vm.run(4, 0, p.to_bytes().unwrap()).end,
        End::Fault(Fault::NoService)
    );
    // The tag of a pointer reads from its heap object.
    assert_eq!(Value::boxed(Tag::Bytes, 0).tag(), Some(Tag::Bytes));
}

#[test]
fn the_forwarding_fast_path_agrees_with_the_interpreter() {
    use Op::*;
    let mut p = prog(&[(Forw, 0), (Push, 1), (Demux, 0)]);
    p.stack = vec![Value::int(4), Value::int(5)];
    // Not at its destination: try_forward sends exactly what run sends.
    let a = node(A);
    let fast = a.try_forward(p.to_bytes().unwrap()).unwrap();
    let slow = node(A).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(slow.transmits, [fast]);
    // Everything else comes back untouched for the interpreter.
    let bytes = p.to_bytes().unwrap();
    assert_eq!(
        node(B).try_forward(bytes.clone()).unwrap_err(),
        bytes,
        "at its destination"
    );
    let mut spent = p.clone();
    spent.rb = 0;
    let b = spent.to_bytes().unwrap();
    assert_eq!(
        node(A).try_forward(b.clone()).unwrap_err(),
        b,
        "no resource bound"
    );
    let other = prog(&[(Nop, 0), (Forw, 0)]).to_bytes().unwrap();
    assert_eq!(
        node(A).try_forward(other.clone()).unwrap_err(),
        other,
        "forw not first"
    );
    let mut le = bytes.clone();
    le[0] |= snap_vm::wire::FLAG_LITTLE_ENDIAN;
    assert!(
        node(A).try_forward(le).is_err(),
        "little-endian bodies take the slow path"
    );
    assert!(node(A).try_forward(bytes[..10].to_vec()).is_err());
}

#[test]
fn a_reused_vm_sends_what_a_fresh_one_does() {
    // A VM keeps the buffers of packets that stayed with it to build later children in,
    // and its collector's table: neither may leak into what it sends.
    use snap_vm::paper::{ping, plan_ping, traceroute};
    let mut reused = node(B);
    let mut packets = Vec::new();
    for payload in [1400usize, 0, 4, 333, 1, 1024] {
        let bytes: Vec<u8> = (0..payload).map(|i| (i * 7) as u8).collect();
        packets.push(ping(A, B, 7, &bytes, 9).to_bytes().unwrap());
        packets.push(plan_ping(A, B, 7, &bytes, 9).to_bytes().unwrap());
        packets.push(ping(A, C, 7, &bytes, 9).to_bytes().unwrap());
    }
    packets.push(traceroute(A, C, 7, 20).to_bytes().unwrap());
    for round in 0..2 {
        for (i, p) in packets.iter().enumerate() {
            let mut big = Vec::with_capacity(2048 + 97 * i);
            big.extend_from_slice(p);
            let got = reused.run(0, 1, big);
            let want = node(B).run(0, 1, p.clone());
            assert_eq!(got, want, "round {round}, packet {i}");
        }
    }
}

#[test]
fn the_turnaround_child_is_the_collected_packet_byte_for_byte() {
    // Fig. 1's turnaround allocates an address (`getsrc`) that `forwto` pops: the child
    // leaves in the packet's own buffer, and must be exactly the packet the copying
    // collection builds — heap as it was, new stack, a fresh header (reserved bits zero).
    use snap_vm::paper::ping;
    for payload in [0usize, 3, 4, 1400] {
        let bytes: Vec<u8> = (0..payload).map(|i| i as u8 ^ 0x5a).collect();
        let p = ping(A, B, 7, &bytes, 9);
        let mut want = p.clone();
        want.dst = A;
        want.rb = 8;
        want.stack.pop();
        want.stack.push(Value::int(1));
        let want = want.to_bytes().unwrap();
        let mut dirty = p.to_bytes().unwrap();
        dirty[1] = 0xff;
        dirty[22] = 0x12;
        dirty[23] = 0x34;
        let mut vm = node(B);
        for input in [p.to_bytes().unwrap(), dirty] {
            let out = vm.run(0, 0, input);
            assert_eq!(out.end, End::Forwarded);
            assert_eq!(out.stats.allocated, 2);
            assert_eq!(out.transmits.len(), 1);
            assert_eq!(out.transmits[0].dst, A);
            assert_eq!(out.transmits[0].packet, want, "payload {payload}");
        }
    }
}

#[test]
fn a_delivered_packet_byte_array_is_what_the_general_delivery_gives() {
    // `demux` of a byte array in the packet heap delivers it from the packet's own buffer;
    // inside a tuple the same array goes through the general delivery, which copies it out
    // of the heap: the two must agree, for every length and place in the heap, whatever
    // the buffer's capacity (past 4 × MTU the bytes are copied out instead).
    let op = |op: Op, imm: i32| Word::new(op as u8, imm);
    for len in [0usize, 1, 3, 4, 5, 8, 1400] {
        for (before, after) in [(0usize, 0usize), (5, 0), (0, 9), (2, 3)] {
            let mut p = Program {
                src: A,
                dst: B,
                port: 7,
                rb: 4,
                ..Program::default()
            };
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + before) as u8).collect();
            if before > 0 {
                p.heap_bytes(&vec![0xee; before]);
            }
            let v = p.heap_bytes(&bytes);
            p.heap_bytes(&vec![0xdd; after]);
            let mut direct = p.clone();
            direct.code = vec![op(Op::Demux, 0)];
            direct.stack = vec![v, Value::int(9)];
            let mut boxed = p.clone();
            boxed.code = vec![op(Op::Mktup, 1), op(Op::Push, 9), op(Op::Demux, 0)];
            boxed.stack = vec![v];
            let want = node(B).run(0, 0, boxed.to_bytes().unwrap());
            let Some(Delivered::Tuple(inner)) = want.delivery.map(|d| d.value) else {
                panic!("tuple delivered");
            };
            assert_eq!(inner, vec![Delivered::Bytes(bytes.clone())]);
            for extra in [0usize, 64, 4 * 1500 + 1] {
                let mut buf = Vec::with_capacity(direct.packet_len() + extra);
                buf.extend_from_slice(&direct.to_bytes().unwrap());
                let out = node(B).run(0, 0, buf);
                assert_eq!(out.end, End::Delivered);
                let d = out.delivery.unwrap();
                assert_eq!((d.port, d.src), (9, A));
                assert_eq!(
                    d.value, inner[0],
                    "len {len}, at {before}/{after}, +{extra}"
                );
            }
        }
    }
    // An array whose length runs past the heap faults as the general delivery does.
    let mut p = Program {
        src: A,
        dst: B,
        rb: 4,
        ..Program::default()
    };
    let v = p.heap_bytes(b"abcd");
    p.heap[0] = ((Tag::Bytes as u32) << 25) | 9; // header: bytes, length 9 (3 words)
    p.code = vec![op(Op::Demux, 0)];
    p.stack = vec![v, Value::int(9)];
    let out = node(B).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Fault(Fault::HeapBounds));
    assert!(out.delivery.is_none());
}
