//! Deterministic regressions: one per bug the properties and fuzzing found.

use super::*;

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
