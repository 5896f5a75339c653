//! SNAP packets whose addresses are IPv6 (`wire::FLAG_IPV6`): the header round trip, the
//! ping of Fig. 1 executed in place between IPv6 nodes, address values of both families,
//! the rule that a packet never changes family, and the verifier's bounds for them.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{IpAddr, Ipv6Addr};

use snap_vm::asm::{assemble, disassemble};
use snap_vm::op::Op;
use snap_vm::paper;
use snap_vm::program::{Ipv6Addrs, Program};
use snap_vm::value::{Value, Word};
use snap_vm::verify::verify;
use snap_vm::vm::{Delivered, End, Fault, NodeConfig, Vm};
use snap_vm::wire::{FLAG_IPV6, HEADER_LEN_V6, HeaderRepr, Packet};

const A4: [u8; 4] = [10, 0, 0, 1];
const B4: [u8; 4] = [10, 0, 0, 2];

fn six(last: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, last)
}

/// A dual-stack node: 10.0.0.`n` and fd00::`n`.
fn node(n: u8) -> Vm {
    let mut vm = Vm::new(NodeConfig {
        address: [10, 0, 0, n],
        ifaces: 3,
        mtu: 1500,
    });
    vm.set_address6(Some(six(n.into()).octets()));
    vm
}

/// `code` in a packet from fd00::1 to fd00::2.
fn prog(code: &[(Op, i32)]) -> Program {
    let mut p = Program {
        port: 9,
        rb: 5,
        code: code
            .iter()
            .map(|&(op, imm)| Word::new(op as u8, imm))
            .collect(),
        ..Program::default()
    };
    p.set_addrs(six(1).into(), six(2).into()).unwrap();
    p
}

/// Runs `code` at fd00::2 then delivers s[0] to port 1.
fn eval(code: &[(Op, i32)]) -> Delivered {
    let mut code = code.to_vec();
    code.extend([(Op::Push, 1), (Op::Demux, 0)]);
    let out = node(2).run(0, 0, prog(&code).to_bytes().unwrap());
    assert_eq!(out.end, End::Delivered, "{out:?}");
    out.delivery.unwrap().value
}

#[test]
fn the_ipv6_header_round_trips() {
    let mut p = prog(&[(Op::Exit, 0)]);
    p.stack = vec![Value::int(3)];
    let bytes = p.to_bytes().unwrap();
    assert_eq!(bytes.len(), HEADER_LEN_V6 + 8);
    assert_eq!(bytes[0], 0x10 | FLAG_IPV6);
    assert_eq!(&bytes[4..12], &[0; 8], "the IPv4 words are zero");
    assert_eq!(&bytes[24..40], &six(1).octets());
    assert_eq!(&bytes[40..56], &six(2).octets());
    let pkt = Packet::new_checked(&bytes[..]).unwrap();
    assert!(pkt.is_ipv6());
    assert_eq!(
        (pkt.src_addr(), pkt.dst_addr()),
        (six(1).into(), six(2).into())
    );
    assert_eq!((pkt.heap_offset(), pkt.stack_offset()), (60, 60));
    assert_eq!(HeaderRepr::parse(&pkt).packet_len(), bytes.len());
    assert_eq!(Program::from_bytes(&bytes).unwrap(), p);
    // A header cut inside its IPv6 addresses is truncated.
    assert!(Packet::new_checked(&bytes[..40]).is_err());
    // Mixed families are refused when set, and cannot be written.
    let mut q = p.clone();
    assert!(q.set_addrs(IpAddr::from(A4), six(2).into()).is_err());
    assert_eq!(q, p);
    let mut h = HeaderRepr::parse(&pkt);
    h.dst = B4.into();
    assert!(h.emit(&mut [0u8; 64]).is_err());
    // Assembler text names them, and reads them back.
    let text = disassemble(&p);
    assert!(text.contains(".src fd00::1\n.dst fd00::2"), "{text}");
    assert_eq!(assemble(&text).unwrap(), p);
}

#[test]
fn fig1_ping_turns_round_in_place_between_ipv6_nodes() {
    let mut p = paper::ping(A4, B4, 7, b"hello", 8);
    p.set_addrs(six(1).into(), six(2).into()).unwrap();
    let bytes = p.to_bytes().unwrap();
    // On the way: an IPv6 node in between forwards it on the fast path, untouched but for
    // the resource bound.
    let fast = node(3).try_forward(bytes.clone()).unwrap();
    assert_eq!(fast.destination(), IpAddr::from(six(2)));
    assert_eq!(fast.dst, [0; 4]);
    assert_eq!(Packet::new_checked(&fast.packet[..]).unwrap().rb(), 7);
    assert_eq!(
        node(3).run(0, 0, bytes).transmits,
        std::slice::from_ref(&fast)
    );
    // At B it turns round in its own buffer (getsrc allocated an address forwto popped).
    let at = fast.packet.as_ptr();
    let out = node(2).run(0, 0, fast.packet);
    assert_eq!(out.end, End::Forwarded, "{out:?}");
    let back = &out.transmits[0];
    assert_eq!(back.packet.as_ptr(), at, "executed in place");
    assert_eq!(back.destination(), IpAddr::from(six(1)));
    let pkt = Packet::new_checked(&back.packet[..]).unwrap();
    assert!(pkt.is_ipv6());
    assert_eq!(pkt.src_addr(), IpAddr::from(six(1)));
    // Home again, it delivers the payload.
    let home = node(1).run(0, 1, back.packet.clone());
    let d = home.delivery.expect("delivered");
    assert_eq!(d.source(), IpAddr::from(six(1)));
    assert_eq!(
        (d.port, &d.value),
        (7, &Delivered::Bytes(b"hello".to_vec()))
    );
    assert_eq!((d.src, d.src6), ([0; 4], Some(six(1).octets())));
}

#[test]
fn addresses_of_the_packets_family() {
    use Op::*;
    assert_eq!(eval(&[(Getsrc, 0)]), Delivered::Addr6(six(1).octets()));
    assert_eq!(eval(&[(Getdst, 0)]), Delivered::Addr6(six(2).octets()));
    assert_eq!(eval(&[(Here, 0)]), Delivered::Addr6(six(2).octets()));
    assert_eq!(eval(&[(Here, 0), (Ishere, 0)]), Delivered::Int(1));
    assert_eq!(eval(&[(Getsrc, 0), (Ishere, 0)]), Delivered::Int(0));
    // `ishere` knows both of a dual-stack node's addresses; `mkaddr` makes IPv4 ones.
    assert_eq!(
        eval(&[(Push, 0x0A00), (Push, 2), (Mkaddr, 0), (Ishere, 0)]),
        Delivered::Int(1)
    );
    assert_eq!(
        eval(&[(Getsrc, 0), (Getsrc, 0), (Aeq, 0)]),
        Delivered::Int(1)
    );
    assert_eq!(
        eval(&[(Getsrc, 0), (Getdst, 0), (Aeq, 0)]),
        Delivered::Int(0)
    );
    // fd00::2 in fd00::/16 (and in fd00::/126), not in fd00::1/128.
    let net = |bits| eval(&[(Getdst, 0), (Getsrc, 0), (Push, bits), (Insnet, 0)]);
    assert_eq!(
        (net(16), net(126), net(128)),
        (Delivered::Int(1), Delivered::Int(1), Delivered::Int(0))
    );
    let mut masked = six(0).octets();
    masked[15] = 0;
    assert_eq!(
        eval(&[(Getdst, 0), (Push, 120), (Snet, 0)]),
        Delivered::Addr6(masked)
    );
}

#[test]
fn a_packet_never_changes_family() {
    use Op::*;
    // An IPv6 packet told to go to an IPv4 address faults; so does a send there.
    let mut p = prog(&[(Pushh, 0), (Forwto, 0)]);
    let v4 = p.heap_addr(A4);
    assert_eq!(v4.data(), 0);
    let out = node(2).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Fault(Fault::AddressFamily));
    assert!(out.transmits.is_empty());
    let mut p = prog(&[(Push, 0), (Push, 0), (Push, 1), (Pushh, 0), (Send, 0)]);
    p.heap_addr(A4);
    let out = node(2).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Fault(Fault::AddressFamily));
    // An IPv4 packet sending to an IPv6 address faults too.
    let mut p = prog(&[(Pushh, 0), (Forwto, 0)]);
    p.set_addrs(A4.into(), B4.into()).unwrap();
    p.heap_ip(six(3).into());
    let out = node(2).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Fault(Fault::AddressFamily));
    // To an IPv6 address of its own family it goes, as a child with an IPv6 header.
    let mut p = prog(&[(Push, 0), (Push, 0), (Push, 1), (Pushh, 0), (Send, 0)]);
    p.heap_ip(six(3).into());
    let out = node(2).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Exit, "{out:?}");
    let child = Packet::new_checked(&out.transmits[0].packet[..]).unwrap();
    assert_eq!(
        (child.src_addr(), child.dst_addr(), child.rb()),
        (six(1).into(), six(3).into(), 1)
    );
}

#[test]
fn the_verifier_counts_ipv6_addresses_at_their_size() {
    use Op::*;
    let p = prog(&[(Getsrc, 0), (Here, 0), (Push, 1), (Demux, 0)]);
    let config = NodeConfig {
        address: B4,
        ifaces: 3,
        mtu: 1500,
    };
    let b = verify(&p, &config).unwrap();
    assert_eq!(b.heap_words, 10, "two boxed IPv6 addresses of 1 + 4 words");
    let out = node(2).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.stats.allocated, 10);
    let mut v4 = p.clone();
    v4.ipv6 = None;
    v4.src = A4;
    v4.dst = B4;
    assert_eq!(verify(&v4, &config).unwrap().heap_words, 4);
    // After the copying collection the child still holds its address intact.
    let mut send = prog(&[
        (Getsrc, 0),
        (Push, 0),
        (Push, 1),
        (Push, 1),
        (Pushh, 0),
        (Send, 0),
    ]);
    send.heap_ip(six(3).into());
    let out = node(2).run(0, 0, send.to_bytes().unwrap());
    let child = Program::from_bytes(&out.transmits[0].packet).unwrap();
    assert_eq!(
        child.ipv6,
        Some(Ipv6Addrs {
            src: six(1).octets(),
            dst: six(3).octets()
        })
    );
    let at = child.stack[0].data() as usize;
    let words: Vec<u32> = six(1)
        .octets()
        .chunks(4)
        .map(|w| u32::from_be_bytes(w.try_into().unwrap()))
        .collect();
    assert_eq!(child.heap[at], 0x0200_0004, "a boxed address of four words");
    assert_eq!(child.heap[at + 1..at + 5], words[..]);
}

#[test]
fn little_endian_ipv6_bodies_are_normalized() {
    let mut p = prog(&[(Op::Push, 5), (Op::Push, 1), (Op::Demux, 0)]);
    p.rb = 2;
    let mut le = p.to_bytes().unwrap();
    le[0] |= snap_vm::wire::FLAG_LITTLE_ENDIAN;
    for w in le[HEADER_LEN_V6..].chunks_exact_mut(4) {
        w.reverse();
    }
    let out = node(2).run(0, 0, le);
    assert_eq!(out.delivery.unwrap().value, Delivered::Int(5));
}
