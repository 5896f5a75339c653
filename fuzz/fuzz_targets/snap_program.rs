//! Structured SNAP programs: instructions with in-range immediates, `send`s with their
//! arguments set up, a heap of a few objects, a stack; verified, run, and run again by the
//! reference interpreter (`crates/snap-vm/tests/properties/reference/`).
//!
//! Asserts: a verified program stays within the verifier's bounds; the children's resource
//! bounds sum to less than the packet's; every transmit parses; and the interpreter and the
//! reference agree on how the run ended (fault included), what it delivered, what it sent
//! (each child's destination, bound, entry point and values followed through its heap) and
//! what it used (instructions, deepest stack, heap words).
#![no_main]

#[path = "../../crates/snap-vm/tests/properties/reference/mod.rs"]
mod reference;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use snap_vm::op::{Imm, Op};
use snap_vm::program::Program;
use snap_vm::value::{DATA_BITS, Tag, Value, Word};
use snap_vm::verify::verify;
use snap_vm::vm::{End, NodeConfig, Vm};
use snap_vm::wire::Packet;

const ADDRS: [[u8; 4]; 4] = [[10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3], [10, 0, 0, 4]];

#[derive(Arbitrary, Debug)]
enum Obj {
    Addr(u8),
    Float(u32),
    Wide(i64),
    Bytes(Vec<u8>),
    Tuple(Vec<Elem>),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Elem {
    Int(i16),
    Ref(u8),
}

#[derive(Arbitrary, Debug)]
enum Ins {
    /// Opcode index (into `Op::ALL`) and a number to draw the immediate from.
    Op(u8, u16),
    /// `push n; push s; push r; pushh addr | here; send`.
    Send { entry: u8, s: u8, r: i8, to: u8 },
    /// Any word.
    Raw(u32),
}

#[derive(Arbitrary, Debug)]
struct Input {
    objs: Vec<Obj>,
    stack: Vec<Elem>,
    code: Vec<Ins>,
    entry: u8,
    rb: u8,
    ends: u8,
    node: u8,
    port: u8,
    iface: u8,
}

fn resolve(e: Elem, vals: &[Value]) -> Value {
    match e {
        Elem::Int(i) => Value::int(i.into()),
        Elem::Ref(k) if vals.is_empty() => Value::int(k.into()),
        Elem::Ref(k) => vals[usize::from(k) % vals.len()],
    }
}

fn imm_for(op: Op, r: u16, offsets: &[u32]) -> i32 {
    let (lo, hi) = (u32::from(r) & 15, u32::from(r) >> 4);
    match op.info().imm {
        Imm::None => 0,
        Imm::Int => i32::from(r as i16),
        Imm::Branch => 1 + (hi % 8) as i32,
        Imm::Count => (lo % 5) as i32,
        Imm::Heap if !offsets.is_empty() => offsets[hi as usize % offsets.len()] as i32,
        Imm::Heap => 0,
        Imm::Tag => (lo % 6) as i32,
    }
}

impl Input {
    fn build(&self) -> Option<(Program, NodeConfig, u32)> {
        let mut p = Program {
            src: ADDRS[usize::from(self.ends & 3)],
            dst: ADDRS[usize::from((self.ends >> 2) & 3)],
            port: self.port.into(),
            rb: u16::from(self.rb % 16),
            ..Program::default()
        };
        let mut vals = Vec::new();
        for o in self.objs.iter().take(8) {
            let v = match o {
                Obj::Addr(i) => p.heap_addr(ADDRS[usize::from(i & 3)]),
                Obj::Float(bits) => {
                    let off = p.heap.len() as u32;
                    p.heap.push(((Tag::Float as u32) << DATA_BITS) | 1);
                    p.heap.push(*bits);
                    Value::boxed(Tag::Float, off)
                }
                Obj::Wide(x) => p.heap_wide(*x),
                Obj::Bytes(b) => p.heap_bytes(&b[..b.len().min(16)]),
                Obj::Tuple(items) => {
                    let items: Vec<Value> =
                        items.iter().take(6).map(|&e| resolve(e, &vals)).collect();
                    p.heap_tuple(&items)
                }
            };
            vals.push(v);
        }
        let offsets: Vec<u32> = vals.iter().map(|v| v.data()).collect();
        let addrs: Vec<u32> = vals
            .iter()
            .filter(|v| v.tag() == Some(Tag::Addr))
            .map(|v| v.data())
            .collect();
        p.stack = self
            .stack
            .iter()
            .take(16)
            .map(|&e| resolve(e, &vals))
            .collect();
        let code = &self.code[..self.code.len().min(48)];
        let len: usize = code
            .iter()
            .map(|c| if matches!(c, Ins::Send { .. }) { 5 } else { 1 })
            .sum();
        if len == 0 {
            return None;
        }
        let w = |op: Op, imm: i32| Word::new(op as u8, imm);
        for c in code {
            match *c {
                Ins::Op(i, r) => {
                    let op = Op::ALL[usize::from(i) % Op::ALL.len()];
                    p.code.push(w(op, imm_for(op, r, &offsets)));
                }
                Ins::Raw(x) => p.code.push(Word(x)),
                Ins::Send { entry, s, r, to } => {
                    p.code.extend([
                        w(Op::Push, i32::from(entry) % len as i32),
                        w(Op::Push, i32::from(s % 5)),
                        w(Op::Push, i32::from(r)),
                    ]);
                    p.code.push(match addrs.get(usize::from(to)) {
                        Some(&off) => w(Op::Pushh, off as i32),
                        None => w(Op::Here, 0),
                    });
                    p.code.push(w(Op::Send, 0));
                }
            }
        }
        p.entry = u16::from(self.entry) % len as u16;
        let config = NodeConfig {
            address: ADDRS[usize::from(self.node & 3)],
            ifaces: u32::from((self.node >> 2) & 3) + 1,
            mtu: [68, 576, 1500, 9000][usize::from((self.node >> 4) & 3)],
        };
        Some((p, config, u32::from(self.iface & 3)))
    }
}

fuzz_target!(|input: Input| {
    let Some((p, config, iface)) = input.build() else {
        return;
    };
    let out = Vm::new(config.clone()).run(3, iface, p.to_bytes().expect("small program"));
    if let Ok(b) = verify(&p, &config) {
        let s = out.stats;
        assert!(s.executed <= b.instructions, "{s:?} {b:?}");
        assert!(s.max_depth <= b.stack_depth, "{s:?} {b:?}");
        assert!(s.allocated <= b.heap_words, "{s:?} {b:?}");
        assert!(s.sends <= b.sends, "{s:?} {b:?}");
        assert!(out.delivery.is_none() || b.delivers, "{b:?}");
    }
    let mut given = 0u32;
    for t in &out.transmits {
        let packet = Packet::new_checked(&t.packet[..]).expect("a transmit parses");
        given += u32::from(packet.rb());
    }
    assert!(
        out.transmits.is_empty() || given < u32::from(p.rb),
        "{given} of {}",
        p.rb
    );

    // The reference, side by side.
    let node = reference::Node {
        address: config.address,
        ifaces: config.ifaces,
        mtu: config.mtu,
        iface,
    };
    let want = reference::run(&p, &node);
    let end = match out.end {
        End::Exit => reference::End::Exit,
        End::Forwarded => reference::End::Forwarded,
        End::Delivered => reference::End::Delivered,
        End::Fault(f) => reference::End::Fault(f),
        End::NoResource => reference::End::NoResource,
        End::Malformed(e) => panic!("a built program is malformed: {e}"),
    };
    assert_eq!(end, want.end, "{p:?}\n{want:?}\n{out:?}");
    match (&out.delivery, &want.delivery) {
        (Some(d), Some((port, value, src))) => {
            assert!(d.port == *port && d.src == *src && reference::same(&d.value, value));
        }
        (None, None) => {}
        _ => panic!("deliveries differ: {want:?} {out:?}"),
    }
    assert_eq!(out.transmits.len(), want.transmits.len());
    for (t, c) in out.transmits.iter().zip(&want.transmits) {
        assert_eq!(reference::child_of(&t.packet).as_ref(), Some(c), "{p:?}");
    }
    let s = out.stats;
    assert_eq!(
        (s.executed, s.max_depth, s.allocated),
        (want.executed, want.max_depth, want.allocated)
    );
});
