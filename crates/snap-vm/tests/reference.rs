//! A reference SNAP interpreter for differential testing, written from the instruction table
//! (`src/op_table.md`) and the interpreter's documented rules, sharing none of its code: the
//! stack is a `Vec` of words, the heap a `Vec` of words (the packet's, then allocations), a
//! child is described by the values it carries rather than built, and nothing happens in
//! place. `tests/properties.rs` and the `snap_program` fuzz target run it beside `Vm::run`.
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

// Included as a module by `properties.rs` and the fuzz target, and built alone as a test
// target too: each user calls a different part of it.
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

struct Machine<'p> {
    p: &'p Program,
    node: &'p Node,
    code: Vec<u32>,
    heap: Vec<u32>,
    stack: Vec<u32>,
    rb: u16,
    pc: usize,
    mktup_until: usize,
    /// Most values on the stack.
    stack_limit: usize,
    /// Most heap words allocated.
    alloc_limit: usize,
    /// Most bytes of a child packet.
    max_len: usize,
    out: Outcome,
}

type Step<T> = Result<T, Fault>;

impl Machine<'_> {
    fn push(&mut self, w: u32) -> Step<()> {
        if self.stack.len() >= self.stack_limit {
            return Err(Fault::BufferLimit);
        }
        self.stack.push(w);
        self.out.max_depth = self.out.max_depth.max(self.stack.len() as u32);
        Ok(())
    }

    fn pop(&mut self) -> Step<u32> {
        self.stack.pop().ok_or(Fault::StackUnderflow)
    }

    fn pop_int(&mut self) -> Step<i32> {
        Ok(int_of(self.pop()?))
    }

    fn nth_from_top(&self, n: u32) -> Step<usize> {
        (self.stack.len())
            .checked_sub(n as usize + 1)
            .ok_or(Fault::StackUnderflow)
    }

    fn alloc(&mut self, tag: u32, len: u32, payload: &[u32]) -> Step<u32> {
        let words = 1 + payload.len();
        let off = self.heap.len();
        if off + words > DATA_MASK as usize {
            return Err(Fault::BufferLimit);
        }
        let allocated = self.heap.len() - self.p.heap.len();
        if allocated + words > self.alloc_limit {
            return Err(Fault::BufferLimit);
        }
        self.heap.push((tag << DATA_BITS) | (len & DATA_MASK));
        self.heap.extend_from_slice(payload);
        self.out.allocated += words as u32;
        Ok(boxed(tag, off as u32))
    }

    fn obj(&self, w: u32) -> Step<(u32, u32, u32)> {
        self.obj_at(data_of(w))
    }

    fn obj_at(&self, off: u32) -> Step<(u32, u32, u32)> {
        let h = *self.heap.get(off as usize).ok_or(Fault::HeapBounds)?;
        if tag_of(h) > BYTES {
            return Err(Fault::BadObject);
        }
        object(&self.heap, off).ok_or(Fault::HeapBounds)
    }

    fn word(&self, off: u32) -> Step<u32> {
        self.heap
            .get(off as usize)
            .copied()
            .ok_or(Fault::HeapBounds)
    }

    /// The one-word payload behind a value of tag `want` (0 behind any other tag).
    fn boxed_word(&self, w: u32, want: u32) -> Step<u32> {
        if tag_of(w) != want {
            return Ok(0);
        }
        let (_, _, p) = self.obj(w)?;
        self.word(p)
    }

    fn pop_addr(&mut self) -> Step<[u8; 4]> {
        let w = self.pop()?;
        Ok(self.boxed_word(w, ADDR)?.to_be_bytes())
    }

    fn pop_float(&mut self) -> Step<f32> {
        let w = self.pop()?;
        Ok(f32::from_bits(self.boxed_word(w, FLOAT)?))
    }

    fn wide_of(&self, w: u32) -> Step<i64> {
        if tag_of(w) != WIDE {
            return Ok(i64::from(int_of(w)));
        }
        let (_, _, p) = self.obj(w)?;
        let (hi, lo) = (self.word(p)?, self.word(p + 1)?);
        Ok(((u64::from(hi) << 32) | u64::from(lo)) as i64)
    }

    fn pop_wide(&mut self) -> Step<i64> {
        let w = self.pop()?;
        self.wide_of(w)
    }

    fn push_addr(&mut self, a: [u8; 4]) -> Step<()> {
        let v = self.alloc(ADDR, 1, &[u32::from_be_bytes(a)])?;
        self.push(v)
    }

    fn push_wide(&mut self, x: i64) -> Step<()> {
        let v = self.alloc(WIDE, 2, &[(x as u64 >> 32) as u32, x as u32])?;
        self.push(v)
    }

    fn push_float(&mut self, f: f32) -> Step<()> {
        let v = self.alloc(FLOAT, 1, &[f.to_bits()])?;
        self.push(v)
    }

    fn jump(&mut self, at: usize, off: i64) -> Step<()> {
        let target = at as i64 + off;
        if off <= 0 || target > self.code.len() as i64 {
            return Err(Fault::BadBranch {
                pc: at as u32,
                offset: off,
            });
        }
        self.pc = target as usize;
        Ok(())
    }

    fn sent(&mut self) -> Step<()> {
        if self.out.transmits.len() as u32 >= self.node.ifaces {
            return Err(Fault::SendLimit);
        }
        Ok(())
    }

    /// Words of the heap a child carrying `values` gets: the packet heap as it is if
    /// nothing was allocated, else each object its values and the code's heap immediates
    /// reach (through tuples), once.
    fn child_heap_words(&self, values: &[u32]) -> usize {
        if self.heap.len() == self.p.heap.len() {
            return self.heap.len();
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut todo: Vec<u32> = values
            .iter()
            .filter(|&&w| is_pointer(w))
            .map(|&w| data_of(w))
            .collect();
        todo.extend(self.code.iter().filter_map(|&w| {
            let op = Op::from_code((w >> DATA_BITS) as u8)?;
            (op.info().imm == Imm::Heap).then_some(data_of(w))
        }));
        let mut words = 0;
        while let Some(off) = todo.pop() {
            let Some((tag, len, p)) = object(&self.heap, off) else {
                continue;
            };
            if !seen.insert(off) {
                continue;
            }
            let n = payload_words(tag, len);
            words += 1 + n as usize;
            if tag == TUPLE {
                todo.extend(
                    (p..p + n)
                        .map(|i| self.heap[i as usize])
                        .filter(|&w| is_pointer(w))
                        .map(data_of),
                );
            }
        }
        words
    }

    fn child(&self, dst: [u8; 4], rb: u16, entry: u16, values: &[u32]) -> Step<Child> {
        let heap_words = self.child_heap_words(values);
        if heap_words > 2 * self.heap.len()
            || 24 + 4 * (self.code.len() + heap_words + values.len()) > self.max_len
        {
            return Err(Fault::BufferLimit);
        }
        Ok(Child {
            dst,
            rb,
            entry,
            stack: values.iter().map(|&w| deep(&self.heap, w, 0)).collect(),
            code_refs: code_refs(&self.code, &self.heap),
        })
    }

    fn forward(&mut self, dst: [u8; 4]) -> Step<End> {
        self.sent()?;
        let c = self.child(dst, self.rb, self.p.entry, &self.stack)?;
        self.rb = 0;
        self.out.transmits.push(c);
        Ok(End::Forwarded)
    }

    fn deliver(&self, w: u32, nesting: u32, budget: &mut usize) -> Step<Delivered> {
        if nesting > NESTING || *budget == 0 {
            return Err(Fault::BadObject);
        }
        *budget -= 1;
        Ok(match tag_of(w) {
            ADDR => Delivered::Addr(self.boxed_word(w, ADDR)?.to_be_bytes()),
            FLOAT => Delivered::Float(f32::from_bits(self.boxed_word(w, FLOAT)?)),
            WIDE => Delivered::Wide(self.wide_of(w)?),
            BYTES => {
                let (_, len, p) = self.obj(w)?;
                let mut out = Vec::new();
                for i in 0..payload_words(BYTES, len) {
                    out.extend_from_slice(&self.word(p + i)?.to_be_bytes());
                }
                out.truncate(len as usize);
                Delivered::Bytes(out)
            }
            TUPLE => {
                let (_, len, p) = self.obj(w)?;
                let mut out = Vec::new();
                for i in 0..len {
                    out.push(self.deliver(self.word(p + i)?, nesting + 1, budget)?);
                }
                Delivered::Tuple(out)
            }
            _ => Delivered::Int(int_of(w)),
        })
    }

    fn int2(&mut self, f: impl FnOnce(i64, i64) -> Step<i64>) -> Step<()> {
        let b = i64::from(self.pop_int()?);
        let a = i64::from(self.pop_int()?);
        let r = f(a, b)?;
        self.push(int(r))
    }

    fn int1(&mut self, f: impl FnOnce(i64) -> Step<i64>) -> Step<()> {
        let a = i64::from(self.pop_int()?);
        let r = f(a)?;
        self.push(int(r))
    }

    fn step(&mut self) -> Step<Option<End>> {
        let at = self.pc;
        let Some(&w) = self.code.get(at) else {
            return Ok(Some(End::Exit));
        };
        let opcode = (w >> DATA_BITS) as u8;
        let Some(op) = Op::from_code(opcode) else {
            return Err(Fault::UnknownOpcode {
                pc: at as u32,
                opcode,
            });
        };
        self.out.executed += 1;
        self.pc = at + 1;
        let imm = i64::from(int_of(w));
        let uimm = data_of(w);
        use Op::*;
        match op {
            Exit => return Ok(Some(End::Exit)),
            Nop => {}
            Ji => self.jump(at, imm)?,
            Bez | Bne => {
                let zero = self.pop_int()? == 0;
                let taken = if op == Bez { zero } else { !zero };
                self.jump(at, if taken { imm } else { 1 })?;
            }
            Paj => {
                let s0 = i64::from(self.pop_int()?);
                self.jump(at, imm + s0)?;
            }
            Tpaj => {
                let s0 = self.pop_int()?;
                let s1 = i64::from(self.pop_int()?);
                self.jump(at, if s0 == 0 { imm + s1 } else { 1 })?;
            }
            Forw => {
                if self.p.dst != self.node.address {
                    return self.forward(self.p.dst).map(Some);
                }
            }
            Forwto => {
                let d = self.pop_addr()?;
                if d != self.node.address {
                    return self.forward(d).map(Some);
                }
            }
            Send => {
                let d = self.pop_addr()?;
                let r = self.pop_int()?;
                let s = self.pop_int()?;
                let n = self.pop_int()?;
                self.sent()?;
                if r < 0 || r > i32::from(self.rb) {
                    return Err(Fault::ResourceBound);
                }
                if n < 0 || n as usize >= self.code.len() {
                    return Err(Fault::BadEntry);
                }
                let s = usize::try_from(s).map_err(|_| Fault::StackUnderflow)?;
                let from = self
                    .stack
                    .len()
                    .checked_sub(s)
                    .ok_or(Fault::StackUnderflow)?;
                let c = self.child(d, r as u16, n as u16, &self.stack[from..])?;
                self.rb -= r as u16;
                self.out.transmits.push(c);
                self.push(int(1))?;
            }
            Demux => {
                let port = self.pop_int()?;
                let v = self.pop()?;
                let mut budget = 8 * (self.heap.len() + 1);
                let value = self.deliver(v, 0, &mut budget)?;
                self.out.delivery = Some((port, value, self.p.src));
                return Ok(Some(End::Delivered));
            }
            Push => self.push(int(imm))?,
            Pushh => {
                let (tag, _, _) = self.obj_at(uimm)?;
                self.push(boxed(tag, uimm))?;
            }
            Pop => {
                self.pop()?;
            }
            Popi => {
                let keep = self
                    .stack
                    .len()
                    .checked_sub(uimm as usize)
                    .ok_or(Fault::StackUnderflow)?;
                self.stack.truncate(keep);
            }
            Pull => {
                let i = self.nth_from_top(uimm)?;
                self.push(self.stack[i])?;
            }
            Dup => {
                let i = self.nth_from_top(0)?;
                self.push(self.stack[i])?;
            }
            Store => {
                // s[imm] counted before the pop: the value lands imm − 1 below the new top.
                let v = self.pop()?;
                if uimm > 0 {
                    let i = self.nth_from_top(uimm - 1)?;
                    self.stack[i] = v;
                }
            }
            Swap => {
                let i = self.nth_from_top(1)?;
                self.stack.swap(i, i + 1);
            }
            Rot => {
                let i = self.nth_from_top(2)?;
                let v = self.stack.remove(i);
                self.stack.push(v);
            }
            Depth => self.push(int(self.stack.len() as i64))?,
            Getsrc => self.push_addr(self.p.src)?,
            Getdst => self.push_addr(self.p.dst)?,
            Here => self.push_addr(self.node.address)?,
            Getrb => self.push(int(i64::from(self.rb)))?,
            Getep => self.push(int(i64::from(self.p.entry)))?,
            Getport => self.push(int(i64::from(self.p.port)))?,
            Ishere => {
                let a = self.pop_addr()?;
                self.push(int(i64::from(a == self.node.address)))?;
            }
            Getifc => self.push(int(i64::from(self.node.iface)))?,
            Nifc => self.push(int(i64::from(self.node.ifaces)))?,
            Getlen => self.push(int(self.p.packet_len() as i64))?,
            Add => self.int2(|a, b| Ok(a + b))?,
            Addi => self.int1(|a| Ok(a + imm))?,
            Sub => self.int2(|a, b| Ok(a - b))?,
            Subi => self.int1(|a| Ok(a - imm))?,
            Mul => self.int2(|a, b| Ok(a * b))?,
            Muli => self.int1(|a| Ok(a * imm))?,
            Div => self.int2(|a, b| divide(a, b, |a, b| a / b))?,
            Divi => self.int1(|a| divide(a, imm, |a, b| a / b))?,
            Mod => self.int2(|a, b| divide(a, b, |a, b| a % b))?,
            Modi => self.int1(|a| divide(a, imm, |a, b| a % b))?,
            Neg => self.int1(|a| Ok(-a))?,
            Min => self.int2(|a, b| Ok(a.min(b)))?,
            Max => self.int2(|a, b| Ok(a.max(b)))?,
            Abs => self.int1(|a| Ok(a.abs()))?,
            And => self.int2(|a, b| Ok(a & b))?,
            Andi => self.int1(|a| Ok(a & imm))?,
            Or => self.int2(|a, b| Ok(a | b))?,
            Ori => self.int1(|a| Ok(a | imm))?,
            Xor => self.int2(|a, b| Ok(a ^ b))?,
            Xori => self.int1(|a| Ok(a ^ imm))?,
            Not => self.int1(|a| Ok(!a))?,
            Lnot => self.int1(|a| Ok(i64::from(a == 0)))?,
            Lsl => self.int2(|a, b| Ok(shl(a, b)))?,
            Lsli => self.int1(|a| Ok(shl(a, imm)))?,
            Lsr => self.int2(|a, b| Ok(lshr(a, b)))?,
            Lsri => self.int1(|a| Ok(lshr(a, imm)))?,
            Asr => self.int2(|a, b| Ok(a >> (b & 31)))?,
            Asri => self.int1(|a| Ok(a >> (imm & 31)))?,
            Eq | Neq => {
                let b = self.pop()?;
                let a = self.pop()?;
                self.push(int(i64::from((a == b) == (op == Eq))))?;
            }
            Eqi => self.int1(|a| Ok(i64::from(a == imm)))?,
            Neqi => self.int1(|a| Ok(i64::from(a != imm)))?,
            Lt => self.int2(|a, b| Ok(i64::from(a < b)))?,
            Lti => self.int1(|a| Ok(i64::from(a < imm)))?,
            Le => self.int2(|a, b| Ok(i64::from(a <= b)))?,
            Lei => self.int1(|a| Ok(i64::from(a <= imm)))?,
            Gt => self.int2(|a, b| Ok(i64::from(a > b)))?,
            Gti => self.int1(|a| Ok(i64::from(a > imm)))?,
            Ge => self.int2(|a, b| Ok(i64::from(a >= b)))?,
            Gei => self.int1(|a| Ok(i64::from(a >= imm)))?,
            Fadd | Fsub | Fmul | Fdiv | Flt | Feq => {
                let bw = self.pop()?;
                let aw = self.pop()?;
                let a = f32::from_bits(self.boxed_word(aw, FLOAT)?);
                let b = f32::from_bits(self.boxed_word(bw, FLOAT)?);
                match op {
                    Fadd => self.push_float(a + b)?,
                    Fsub => self.push_float(a - b)?,
                    Fmul => self.push_float(a * b)?,
                    Fdiv => self.push_float(a / b)?,
                    Flt => self.push(int(i64::from(a < b)))?,
                    _ => self.push(int(i64::from(a == b)))?,
                }
            }
            Itof => {
                let a = self.pop_int()?;
                self.push_float(a as f32)?;
            }
            Ftoi => {
                let f = self.pop_float()?;
                self.push(int(i64::from(f as i32)))?;
            }
            Mkaddr => {
                let lo = self.pop_int()? as u32 & 0xFFFF;
                let hi = self.pop_int()? as u32 & 0xFFFF;
                self.push_addr(((hi << 16) | lo).to_be_bytes())?;
            }
            Aeq => {
                let b = self.pop_addr()?;
                let a = self.pop_addr()?;
                self.push(int(i64::from(a == b)))?;
            }
            Snet => {
                let bits = self.pop_int()?.clamp(0, 32);
                let a = u32::from_be_bytes(self.pop_addr()?);
                self.push_addr((a & prefix_mask(bits)).to_be_bytes())?;
            }
            Insnet => {
                let bits = self.pop_int()?.clamp(0, 32);
                let prefix = u32::from_be_bytes(self.pop_addr()?);
                let a = u32::from_be_bytes(self.pop_addr()?);
                let m = prefix_mask(bits);
                self.push(int(i64::from(a & m == prefix & m)))?;
            }
            Towide => {
                let a = self.pop_int()?;
                self.push_wide(i64::from(a))?;
            }
            Wadd | Wsub | Wmul | Wlt | Weq => {
                let b = self.pop_wide()?;
                let a = self.pop_wide()?;
                match op {
                    Wadd => self.push_wide(a.wrapping_add(b))?,
                    Wsub => self.push_wide(a.wrapping_sub(b))?,
                    Wmul => self.push_wide(a.wrapping_mul(b))?,
                    Wlt => self.push(int(i64::from(a < b)))?,
                    _ => self.push(int(i64::from(a == b)))?,
                }
            }
            Narrow => {
                let a = self.pop_wide()?;
                self.push(int(a))?;
            }
            Mktup => {
                if at < self.mktup_until {
                    return Err(Fault::MktupSpacing { pc: at as u32 });
                }
                self.mktup_until = at + uimm as usize;
                let from = self
                    .stack
                    .len()
                    .checked_sub(uimm as usize)
                    .ok_or(Fault::StackUnderflow)?;
                let items: Vec<u32> = self.stack.drain(from..).collect();
                let v = self.alloc(TUPLE, uimm, &items)?;
                self.push(v)?;
            }
            Nth => {
                let t = self.pop()?;
                let (_, len, p) = self.obj(t)?;
                if uimm >= len {
                    return Err(Fault::HeapBounds);
                }
                self.push(self.word(p + uimm)?)?;
            }
            Length => {
                let t = self.pop()?;
                let (_, len, _) = self.obj(t)?;
                self.push(int(i64::from(len)))?;
            }
            Bget => {
                let i = self.pop_int()?;
                let b = self.pop()?;
                let (_, len, p) = self.obj(b)?;
                let i = u32::try_from(i)
                    .ok()
                    .filter(|&i| i < len)
                    .ok_or(Fault::HeapBounds)?;
                let byte = self.word(p + i / 4)?.to_be_bytes()[(i % 4) as usize];
                self.push(int(i64::from(byte)))?;
            }
            Istag => {
                let v = self.pop()?;
                self.push(int(i64::from(tag_of(v) == uimm)))?;
            }
            Gettag => {
                let v = self.pop()?;
                self.push(int(i64::from(tag_of(v))))?;
            }
            Calls => {
                // No services here: the name is checked, then nothing answers.
                let (tag, len, _) = self.obj_at(uimm)?;
                let _ = (tag, len);
                return Err(Fault::NoService);
            }
        }
        Ok(None)
    }
}

fn divide(a: i64, b: i64, f: impl FnOnce(i64, i64) -> i64) -> Step<i64> {
    if b == 0 {
        Err(Fault::DivideByZero)
    } else {
        Ok(f(a, b))
    }
}

fn shl(a: i64, b: i64) -> i64 {
    ((a as u32) << (b & 31)) as i64
}

fn lshr(a: i64, b: i64) -> i64 {
    i64::from((a as u32 & DATA_MASK) >> (b & 31))
}

fn prefix_mask(bits: i32) -> u32 {
    if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    }
}

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
