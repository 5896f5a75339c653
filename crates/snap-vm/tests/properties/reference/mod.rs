//! A reference SNAP interpreter for differential testing, written from the instruction table
//! (`src/op_table.md`) and the interpreter's documented rules, sharing none of its code: the
//! stack is a `Vec` of words, the heap a `Vec` of words (the packet's, then allocations), a
//! child is described by the values it carries rather than built, and nothing happens in
//! place. the `properties` test and the `snap_program` fuzz target run it beside `Vm::run`.
//!
//! Rules it takes from the interpreter's docs where the table is silent: a value is read as
//! an integer whatever its tag; a pointer is followed to the object at its offset, whose
//! header (not the pointer) gives tag and length, checked to lie inside the heap; addresses
//! and floats read as 0 through a value of another tag; `tpaj` pops s[0] then s[1]; shift
//! counts are taken modulo 32; division truncates; `getlen` is the length the packet arrived
//! with. Limits, with M = max(packet, 4 × MTU) bytes: the stack may hold its initial values
//! plus one per instruction and one more, at most 65535, and with the packet at most M;
//! allocations may total M; a child may not pass M bytes, nor its heap (the objects its
//! values reach, once each) twice the parent's; a delivery may produce 8 values per heap
//! word (and 8 more), nested at most 8 deep.

// Included as a module by the `properties` test and the `snap_program` fuzz target: each
// uses a different part of it.
#![allow(dead_code)]

use snap_vm::op::{Imm, Op};
use snap_vm::program::Program;
use snap_vm::value::{DATA_BITS, DATA_MASK};
use snap_vm::vm::{Delivered, Fault};

const NESTING: u32 = 8;
const INT: u32 = 0;
const ADDR: u32 = 1;
const FLOAT: u32 = 2;
const WIDE: u32 = 3;
const TUPLE: u32 = 4;
const BYTES: u32 = 5;

/// The node a packet runs at.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// Its address.
    pub(crate) address: [u8; 4],
    /// Interfaces (the send limit).
    pub(crate) ifaces: u32,
    /// MTU.
    pub(crate) mtu: usize,
    /// The interface the packet arrived on.
    pub(crate) iface: u32,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum End {
    /// `exit` or past the code.
    Exit,
    /// `forw` / `forwto` sent it on.
    Forwarded,
    /// `demux`.
    Delivered,
    /// A rule broken.
    Fault(Fault),
    /// No resource bound on arrival.
    NoResource,
}

/// A value as a child would carry it: followed through the heap, offsets forgotten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Deep {
    /// Not a pointer: the word itself.
    Word(u32),
    /// A pointer (its tag) to an object: header word and payload (tuple items followed).
    Obj(u32, u32, Vec<Deep>),
    /// A pointer to nothing valid (its tag).
    Dangling(u32),
    /// Nested past the decoder's limit.
    Truncated,
}

/// What a child packet holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Child {
    /// Destination.
    pub(crate) dst: [u8; 4],
    /// Resource bound.
    pub(crate) rb: u16,
    /// Entry point.
    pub(crate) entry: u16,
    /// Stack, bottom first.
    pub(crate) stack: Vec<Deep>,
    /// What each heap-offset immediate of the code names, in code order.
    pub(crate) code_refs: Vec<Deep>,
}

/// Everything a run did.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// How it ended.
    pub(crate) end: End,
    /// The delivery: port, value, source.
    pub(crate) delivery: Option<(i32, Delivered, [u8; 4])>,
    /// Children, in order.
    pub(crate) transmits: Vec<Child>,
    /// Instructions executed.
    pub(crate) executed: u32,
    /// Deepest stack.
    pub(crate) max_depth: u32,
    /// Heap words allocated.
    pub(crate) allocated: u32,
}

fn tag_of(w: u32) -> u32 {
    w >> DATA_BITS
}

fn data_of(w: u32) -> u32 {
    w & DATA_MASK
}

fn int_of(w: u32) -> i32 {
    let d = data_of(w) as i32;
    if d >= 1 << (DATA_BITS - 1) {
        d - (1 << DATA_BITS)
    } else {
        d
    }
}

fn int(i: i64) -> u32 {
    (i as u32) & DATA_MASK
}

fn boxed(tag: u32, off: u32) -> u32 {
    (tag << DATA_BITS) | (off & DATA_MASK)
}

fn is_pointer(w: u32) -> bool {
    (ADDR..=BYTES).contains(&tag_of(w))
}

fn payload_words(tag: u32, len: u32) -> u32 {
    if tag == BYTES { len.div_ceil(4) } else { len }
}

/// The object at `off` in `heap`: header tag, length and payload offset.
fn object(heap: &[u32], off: u32) -> Option<(u32, u32, u32)> {
    let h = *heap.get(off as usize)?;
    let tag = tag_of(h);
    if tag > BYTES {
        return None;
    }
    let end = u64::from(off) + 1 + u64::from(payload_words(tag, data_of(h)));
    (end <= heap.len() as u64).then_some((tag, data_of(h), off + 1))
}

/// The object at `off`, followed (tuple items too) up to `depth` levels.
pub(crate) fn deep_at(heap: &[u32], tag: u32, off: u32, depth: u32) -> Deep {
    if depth > 16 {
        return Deep::Truncated;
    }
    let Some((htag, len, p)) = object(heap, off) else {
        return Deep::Dangling(tag);
    };
    let words = (p..p + payload_words(htag, len)).map(|i| heap[i as usize]);
    let items = if htag == TUPLE {
        words.map(|w| deep(heap, w, depth + 1)).collect()
    } else {
        words.map(Deep::Word).collect()
    };
    Deep::Obj(tag, heap[off as usize], items)
}

/// The value `w` followed through `heap`.
pub(crate) fn deep(heap: &[u32], w: u32, depth: u32) -> Deep {
    if is_pointer(w) {
        deep_at(heap, tag_of(w), data_of(w), depth)
    } else {
        Deep::Word(w)
    }
}

/// What each heap-offset immediate in `code` names.
fn code_refs(code: &[u32], heap: &[u32]) -> Vec<Deep> {
    code.iter()
        .filter(|&&w| {
            Op::from_code((w >> DATA_BITS) as u8).is_some_and(|o| o.info().imm == Imm::Heap)
        })
        .map(|&w| deep_at(heap, 0, data_of(w), 0))
        .collect()
}

/// The [`Child`] a SNAP packet holds (as the VM built it).
pub(crate) fn child_of(packet: &[u8]) -> Option<Child> {
    let p = Program::from_bytes(packet).ok()?;
    let code: Vec<u32> = p.code.iter().map(|w| w.0).collect();
    Some(Child {
        dst: p.dst,
        rb: p.rb,
        entry: p.entry,
        stack: p.stack.iter().map(|v| deep(&p.heap, v.0, 0)).collect(),
        code_refs: code_refs(&code, &p.heap),
    })
}

/// Whether two delivered values are the same (floats by their bits).
pub(crate) fn same(a: &Delivered, b: &Delivered) -> bool {
    match (a, b) {
        (Delivered::Float(x), Delivered::Float(y)) => x.to_bits() == y.to_bits(),
        (Delivered::Tuple(x), Delivered::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

mod machine;

use machine::Machine;

/// Runs `p` at `node` (it must be well-formed: entry inside the code, sections that fit).
pub(crate) fn run(p: &Program, node: &Node) -> Outcome {
    let max_len = p.packet_len().max(4 * node.mtu);
    let mut m = Machine {
        p,
        node,
        code: p.code.iter().map(|w| w.0).collect(),
        heap: p.heap.clone(),
        stack: p.stack.iter().map(|v| v.0).collect(),
        rb: p.rb.saturating_sub(1),
        pc: usize::from(p.entry),
        mktup_until: 0,
        stack_limit: (p.stack.len() + p.code.len() + 1)
            .min(usize::from(u16::MAX))
            .min(p.stack.len() + (max_len - p.packet_len()) / 4),
        alloc_limit: max_len / 4,
        max_len,
        out: Outcome {
            end: End::Exit,
            delivery: None,
            transmits: Vec::new(),
            executed: 0,
            max_depth: p.stack.len() as u32,
            allocated: 0,
        },
    };
    if p.rb == 0 {
        m.out.end = End::NoResource;
        m.out.max_depth = 0;
        return m.out;
    }
    m.out.end = loop {
        match m.step() {
            Ok(None) => {}
            Ok(Some(end)) => break end,
            Err(f) => break End::Fault(f),
        }
    };
    m.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use snap_vm::value::{Value, Word};

    fn node(address: [u8; 4]) -> Node {
        Node {
            address,
            ifaces: 2,
            mtu: 1500,
            iface: 0,
        }
    }

    #[test]
    fn the_reference_runs_ping_both_ways() {
        let mut p = Program {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            rb: 4,
            ..Program::default()
        };
        p.code = [
            (Op::Forw, 0),
            (Op::Bne, 5),
            (Op::Push, 1),
            (Op::Getsrc, 0),
            (Op::Forwto, 0),
            (Op::Pop, 0),
            (Op::Demux, 0),
        ]
        .map(|(op, imm)| Word::new(op as u8, imm))
        .to_vec();
        let payload = p.heap_bytes(b"ref");
        p.stack = vec![payload, Value::int(7), Value::int(0)];
        let there = run(&p, &node([10, 0, 0, 2]));
        assert_eq!(there.end, End::Forwarded);
        let back = &there.transmits[0];
        assert_eq!((back.dst, back.rb), ([10, 0, 0, 1], 3));
        assert_eq!(back.stack[2], Deep::Word(1));
        assert_eq!(back.stack[0], deep(&p.heap, payload.0, 0));
        let at_a = run(&p, &node([10, 0, 0, 1]));
        assert_eq!(at_a.end, End::Forwarded);
        p.dst = [10, 0, 0, 1];
        p.stack[2] = Value::int(1);
        let home = run(&p, &node([10, 0, 0, 1]));
        assert_eq!(home.end, End::Delivered);
        assert_eq!(
            home.delivery,
            Some((7, Delivered::Bytes(b"ref".to_vec()), [10, 0, 0, 1]))
        );
    }
}
