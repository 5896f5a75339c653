//! The interpreter (paper §VI.C–E): executes a received packet in place and returns what
//! it sends and delivers, never performing I/O itself.
//!
//! On arrival the resource bound is decremented (a packet with none left is dropped), then
//! instructions run from the entry point. Safety checks are interleaved with execution, as
//! the paper does, rather than verified up front: branch offsets (including computed ones)
//! must be positive, `mktup n` must be followed by `n − 1` non-`mktup` positions, a packet
//! may send at most as many packets as the node has interfaces and deliver at most once
//! (then it exits), a child gets only resource bound its parent gives up, and every heap
//! reference is checked to lie inside the packet's heap. A broken rule is a [`Fault`]: the
//! packet stops; what it already sent stands. Types are not checked where safety does not
//! need it: confusing an integer for a pointer gives a wrong answer, never an unsafe one.

mod frame;
mod send;

use alloc::vec::Vec;
use core::fmt;

pub use frame::Frame;
pub(crate) use frame::header as frame_header;
pub(crate) use frame::payload_words as payload_words_of;
use send::{ChildHeader, child, deliver};

use crate::op::Op;
use crate::service::{MAX_SERVICE_ALLOC, Services};
use crate::value::{DATA_MASK, Tag, Value, Word};
use crate::wire::{HEADER_LEN, Packet, WireError};

/// What a node tells its VM about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    /// The node's address (`here`, `ishere`, and where `forw` stops).
    pub address: [u8; 4],
    /// Interfaces: the most packets one packet may send here.
    pub ifaces: u32,
    /// Link MTU; the working buffer may grow to 4 × MTU.
    pub mtu: usize,
}

/// Why a packet stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// An opcode no instruction has.
    UnknownOpcode {
        /// The instruction index.
        pc: u32,
        /// The opcode byte.
        opcode: u8,
    },
    /// A branch (immediate or computed) that does not go forward, or lands past the code.
    BadBranch {
        /// The instruction index.
        pc: u32,
        /// The offset.
        offset: i64,
    },
    /// `mktup` inside the `n − 1` positions after an earlier `mktup n`.
    MktupSpacing {
        /// The instruction index.
        pc: u32,
    },
    /// Popped or read below the stack's bottom.
    StackUnderflow,
    /// A heap reference outside the heap.
    HeapBounds,
    /// A heap object with an unknown tag, or a tuple nested too deep to deliver.
    BadObject,
    /// Integer division or remainder by zero.
    DivideByZero,
    /// More sends than the node has interfaces.
    SendLimit,
    /// A child asked for more resource bound than the packet has.
    ResourceBound,
    /// A child entry point outside the code.
    BadEntry,
    /// The working buffer would pass 4 × MTU.
    BufferLimit,
    /// `calls` named no service the node has.
    NoService,
    /// A service failed.
    Service,
    /// A service pushed more than one value.
    ServicePush,
    /// A service allocated more than its allowance.
    ServiceAlloc,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::UnknownOpcode { pc, opcode } => {
                write!(f, "instruction {pc}: unknown opcode {opcode}")
            }
            Fault::BadBranch { pc, offset } => {
                write!(
                    f,
                    "instruction {pc}: branch offset {offset} does not go forward inside the code"
                )
            }
            Fault::MktupSpacing { pc } => {
                write!(f, "instruction {pc}: mktup too soon after another mktup")
            }
            Fault::StackUnderflow => f.write_str("stack underflow"),
            Fault::HeapBounds => f.write_str("heap reference outside the heap"),
            Fault::BadObject => f.write_str("malformed heap object"),
            Fault::DivideByZero => f.write_str("division by zero"),
            Fault::SendLimit => f.write_str("more sends than the node has interfaces"),
            Fault::ResourceBound => f.write_str("child asked for more resource bound than left"),
            Fault::BadEntry => f.write_str("child entry point outside the code"),
            Fault::BufferLimit => f.write_str("working buffer would pass 4 × MTU"),
            Fault::NoService => f.write_str("no such service"),
            Fault::Service => f.write_str("service failed"),
            Fault::ServicePush => f.write_str("service pushed more than one value"),
            Fault::ServiceAlloc => f.write_str("service allocated past its allowance"),
        }
    }
}

impl core::error::Error for Fault {}

/// How a packet's execution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `exit`, or it ran past the last instruction.
    Exit,
    /// `forw` or `forwto` sent it on.
    Forwarded,
    /// `demux` delivered it.
    Delivered,
    /// A safety rule stopped it.
    Fault(Fault),
    /// It arrived with no resource bound left and was dropped unexecuted.
    NoResource,
    /// It is not a well-formed SNAP packet.
    Malformed(WireError),
}

/// A packet to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Where to (the packet's destination field).
    pub dst: [u8; 4],
    /// The whole SNAP packet.
    pub packet: Vec<u8>,
}

/// A value delivered to a local port.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivered {
    /// A small integer.
    Int(i32),
    /// An address.
    Addr([u8; 4]),
    /// A float.
    Float(f32),
    /// A wide integer.
    Wide(i64),
    /// A byte array.
    Bytes(Vec<u8>),
    /// A tuple.
    Tuple(Vec<Delivered>),
}

/// What `demux` handed to the node.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The local port.
    pub port: i32,
    /// The value.
    pub value: Delivered,
    /// The packet's source.
    pub src: [u8; 4],
}

/// What an execution used, to compare with the verifier's bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions executed.
    pub executed: u32,
    /// Deepest stack.
    pub max_depth: u32,
    /// Heap words allocated.
    pub allocated: u32,
    /// Packets sent (forw, forwto, send).
    pub sends: u32,
}

/// Everything a packet did at this node.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// How it ended.
    pub end: End,
    /// Packets to send, in order.
    pub transmits: Vec<Transmit>,
    /// At most one delivery.
    pub delivery: Option<Delivery>,
    /// What it used.
    pub stats: Stats,
    /// Resource bound it arrived with.
    pub rb_in: u16,
}

impl Outcome {
    fn ended(end: End) -> Outcome {
        Outcome {
            end,
            transmits: Vec::new(),
            delivery: None,
            stats: Stats::default(),
            rb_in: 0,
        }
    }
}

/// A node's SNAP virtual machine: its config and services, and reusable scratch space.
#[derive(Debug)]
pub struct Vm {
    config: NodeConfig,
    /// The node's services.
    pub services: Services,
    extra: Vec<u32>,
}

impl Vm {
    /// A VM for a node.
    pub fn new(config: NodeConfig) -> Vm {
        Vm {
            config,
            services: Services::new(),
            extra: Vec::new(),
        }
    }

    /// The node's config.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// Runs `packet`, which arrived on interface `iface` at `now` (time only services use).
    pub fn run(&mut self, now: u64, iface: u32, mut packet: Vec<u8>) -> Outcome {
        let (rb, entry, code_words, port, src, dst, heap_at, heap_words, stack_at) = {
            let mut p = match Packet::new_checked(&mut packet[..]) {
                Ok(p) => p,
                Err(e) => return Outcome::ended(End::Malformed(e)),
            };
            p.normalize();
            let rb = p.rb();
            if rb == 0 {
                return Outcome::ended(End::NoResource);
            }
            p.set_rb(rb - 1);
            (
                rb - 1,
                p.entry(),
                p.code_len(),
                p.port(),
                p.src(),
                p.dst(),
                p.heap_offset(),
                u32::from(p.heap_len()),
                p.stack_offset(),
            )
        };
        self.extra.clear();
        let max_len = packet.len().max(4 * self.config.mtu);
        let mut frame = Frame {
            buf: &mut packet,
            heap_at,
            heap_words,
            stack_at,
            extra: &mut self.extra,
            max_len,
            alloc_left: u32::MAX,
            push_left: u32::MAX,
            max_depth: 0,
            src,
            port,
        };
        frame.max_depth = frame.depth();
        let mut exec = Exec {
            config: &self.config,
            services: &mut self.services,
            now,
            iface,
            rb,
            code_words,
            dst,
            pc: u32::from(entry),
            mktup_until: 0,
            out: Outcome {
                end: End::Exit,
                transmits: Vec::new(),
                delivery: None,
                stats: Stats::default(),
                rb_in: rb + 1,
            },
        };
        let end = match exec.run(&mut frame) {
            Ok(end) => end,
            Err(fault) => End::Fault(fault),
        };
        let mut out = exec.out;
        out.end = end;
        out.stats.max_depth = frame.max_depth;
        out.stats.allocated = frame.extra.len() as u32;
        out
    }
}

/// One execution's registers.
struct Exec<'v> {
    config: &'v NodeConfig,
    services: &'v mut Services,
    now: u64,
    iface: u32,
    rb: u16,
    code_words: u16,
    dst: [u8; 4],
    pc: u32,
    mktup_until: u32,
    out: Outcome,
}

fn bool_value(b: bool) -> Value {
    Value::int(i32::from(b))
}

impl Exec<'_> {
    fn code(&self, frame: &Frame<'_>, pc: u32) -> u32 {
        let at = HEADER_LEN + 4 * pc as usize;
        match frame.buf.get(at..at + 4) {
            Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
            _ => 0,
        }
    }

    fn branch(&mut self, offset: i64) -> Result<(), Fault> {
        let target = i64::from(self.pc) + offset;
        if offset <= 0 || target > i64::from(self.code_words) {
            return Err(Fault::BadBranch {
                pc: self.pc,
                offset,
            });
        }
        self.pc = target as u32;
        Ok(())
    }

    fn int2(
        frame: &mut Frame<'_>,
        f: impl FnOnce(i32, i32) -> Result<i32, Fault>,
    ) -> Result<(), Fault> {
        let b = frame.pop()?.as_int();
        let a = frame.pop()?.as_int();
        frame.push(Value::int(f(a, b)?))
    }

    fn int1(frame: &mut Frame<'_>, f: impl FnOnce(i32) -> Result<i32, Fault>) -> Result<(), Fault> {
        let a = frame.pop()?.as_int();
        frame.push(Value::int(f(a)?))
    }

    fn float2(frame: &mut Frame<'_>) -> Result<(f32, f32), Fault> {
        let b = frame.pop()?;
        let a = frame.pop()?;
        Ok((
            f32::from_bits(frame.word_of(a, Tag::Float)?),
            f32::from_bits(frame.word_of(b, Tag::Float)?),
        ))
    }

    fn wide2(frame: &mut Frame<'_>) -> Result<(i64, i64), Fault> {
        let b = frame.pop_wide()?;
        let a = frame.pop_wide()?;
        Ok((a, b))
    }

    fn addr(frame: &mut Frame<'_>, a: [u8; 4]) -> Result<Value, Fault> {
        frame.alloc(Tag::Addr, 1, &[u32::from_be_bytes(a)])
    }

    fn pop_addr(frame: &mut Frame<'_>) -> Result<[u8; 4], Fault> {
        let v = frame.pop()?;
        Ok(frame.word_of(v, Tag::Addr)?.to_be_bytes())
    }

    fn count_send(&mut self) -> Result<(), Fault> {
        if self.out.stats.sends >= self.config.ifaces {
            return Err(Fault::SendLimit);
        }
        self.out.stats.sends += 1;
        Ok(())
    }

    /// `forw` / `forwto` to `dst`: the whole stack and all the resource bound.
    fn forward(&mut self, frame: &mut Frame<'_>, dst: [u8; 4]) -> Result<End, Fault> {
        self.count_send()?;
        let depth = frame.depth();
        let packet = if frame.extra.is_empty() {
            // Reuse the buffer: only the header changes (§VI.D's best case).
            let mut buf = core::mem::take(frame.buf);
            let mut p = Packet::new_unchecked_len(&mut buf[..]);
            p.set_dst(dst);
            p.set_stack_len(depth as u16);
            buf
        } else {
            let h = ChildHeader {
                src: frame.src,
                dst,
                port: frame.port,
                rb: self.rb,
                entry: self.entry_of_packet(frame),
            };
            child(frame, self.code_words, depth, &h)?
        };
        self.rb = 0;
        self.out.transmits.push(Transmit { dst, packet });
        Ok(End::Forwarded)
    }

    fn entry_of_packet(&self, frame: &Frame<'_>) -> u16 {
        match frame.buf.get(14..16) {
            Some(&[a, b]) => u16::from_be_bytes([a, b]),
            _ => 0,
        }
    }

    fn run(&mut self, frame: &mut Frame<'_>) -> Result<End, Fault> {
        loop {
            let pc = self.pc;
            if pc >= u32::from(self.code_words) {
                return Ok(End::Exit);
            }
            let word = Word(self.code(frame, pc));
            let op = Op::from_code(word.opcode()).ok_or(Fault::UnknownOpcode {
                pc,
                opcode: word.opcode(),
            })?;
            self.out.stats.executed += 1;
            self.pc = pc + 1;
            let imm = word.imm();
            match op {
                Op::Exit => return Ok(End::Exit),
                Op::Nop => {}
                Op::Ji => {
                    self.pc = pc;
                    self.branch(i64::from(imm))?;
                }
                Op::Bez | Op::Bne => {
                    let zero = frame.pop()?.as_int() == 0;
                    self.pc = pc;
                    let take = zero == (op == Op::Bez);
                    self.branch(if take { i64::from(imm) } else { 1 })?;
                }
                Op::Paj => {
                    let off = i64::from(imm) + i64::from(frame.pop()?.as_int());
                    self.pc = pc;
                    self.branch(off)?;
                }
                Op::Tpaj => {
                    let test = frame.pop()?.as_int();
                    let s1 = frame.pop()?.as_int();
                    let off = if test == 0 {
                        i64::from(imm) + i64::from(s1)
                    } else {
                        1
                    };
                    self.pc = pc;
                    self.branch(off)?;
                }
                Op::Forw => {
                    if self.dst != self.config.address {
                        return self.forward(frame, self.dst);
                    }
                }
                Op::Forwto => {
                    let d = Self::pop_addr(frame)?;
                    if d != self.config.address {
                        return self.forward(frame, d);
                    }
                }
                Op::Send => {
                    let d = Self::pop_addr(frame)?;
                    let r = frame.pop()?.as_int();
                    let s = frame.pop()?.as_int();
                    let n = frame.pop()?.as_int();
                    self.count_send()?;
                    if r < 0 || r > i32::from(self.rb) {
                        return Err(Fault::ResourceBound);
                    }
                    if n < 0 || n >= i32::from(self.code_words) {
                        return Err(Fault::BadEntry);
                    }
                    let s = u32::try_from(s).map_err(|_| Fault::StackUnderflow)?;
                    let h = ChildHeader {
                        src: frame.src,
                        dst: d,
                        port: frame.port,
                        rb: r as u16,
                        entry: n as u16,
                    };
                    let packet = child(frame, self.code_words, s, &h)?;
                    self.rb -= r as u16;
                    self.out.transmits.push(Transmit { dst: d, packet });
                    frame.push(Value::int(1))?;
                }
                Op::Demux => {
                    let p = frame.pop()?.as_int();
                    let v = frame.pop()?;
                    let value = deliver(frame, v, 0)?;
                    self.out.delivery = Some(Delivery {
                        port: p,
                        value,
                        src: frame.src,
                    });
                    return Ok(End::Delivered);
                }
                Op::Push => frame.push(Value::int(imm))?,
                Op::Pushh => {
                    let (tag, _, _) = frame.object_at(word.uimm())?;
                    frame.push(Value::boxed(tag, word.uimm()))?;
                }
                Op::Pop => {
                    frame.pop()?;
                }
                Op::Popi => frame.drop_n(word.uimm())?,
                Op::Pull => {
                    let v = frame.peek(word.uimm())?;
                    frame.push(v)?;
                }
                Op::Dup => {
                    let v = frame.peek(0)?;
                    frame.push(v)?;
                }
                Op::Store => {
                    // s[imm] counts from the top before the pop.
                    let v = frame.pop()?;
                    if let Some(n) = word.uimm().checked_sub(1) {
                        frame.set(n, v)?;
                    }
                }
                Op::Swap => {
                    let a = frame.peek(0)?;
                    let b = frame.peek(1)?;
                    frame.set(0, b)?;
                    frame.set(1, a)?;
                }
                Op::Rot => {
                    let (a, b, c) = (frame.peek(0)?, frame.peek(1)?, frame.peek(2)?);
                    frame.set(0, c)?;
                    frame.set(1, a)?;
                    frame.set(2, b)?;
                }
                Op::Depth => frame.push(Value::int(frame.depth() as i32))?,
                Op::Getsrc => {
                    let v = Self::addr(frame, frame.src)?;
                    frame.push(v)?;
                }
                Op::Getdst => {
                    let v = Self::addr(frame, self.dst)?;
                    frame.push(v)?;
                }
                Op::Here => {
                    let v = Self::addr(frame, self.config.address)?;
                    frame.push(v)?;
                }
                Op::Getrb => frame.push(Value::int(i32::from(self.rb)))?,
                Op::Getep => {
                    let e = self.entry_of_packet(frame);
                    frame.push(Value::int(i32::from(e)))?;
                }
                Op::Getport => frame.push(Value::int(i32::from(frame.port)))?,
                Op::Ishere => {
                    let a = Self::pop_addr(frame)?;
                    frame.push(bool_value(a == self.config.address))?;
                }
                Op::Getifc => frame.push(Value::int(self.iface as i32))?,
                Op::Nifc => frame.push(Value::int(self.config.ifaces as i32))?,
                Op::Getlen => frame.push(Value::int(frame.buf.len() as i32))?,
                Op::Add => Self::int2(frame, |a, b| Ok(a.wrapping_add(b)))?,
                Op::Addi => Self::int1(frame, |a| Ok(a.wrapping_add(imm)))?,
                Op::Sub => Self::int2(frame, |a, b| Ok(a.wrapping_sub(b)))?,
                Op::Subi => Self::int1(frame, |a| Ok(a.wrapping_sub(imm)))?,
                Op::Mul => Self::int2(frame, |a, b| Ok(a.wrapping_mul(b)))?,
                Op::Muli => Self::int1(frame, |a| Ok(a.wrapping_mul(imm)))?,
                Op::Div => Self::int2(frame, |a, b| a.checked_div(b).ok_or(Fault::DivideByZero))?,
                Op::Divi => Self::int1(frame, |a| a.checked_div(imm).ok_or(Fault::DivideByZero))?,
                Op::Mod => Self::int2(frame, |a, b| a.checked_rem(b).ok_or(Fault::DivideByZero))?,
                Op::Modi => Self::int1(frame, |a| a.checked_rem(imm).ok_or(Fault::DivideByZero))?,
                Op::Neg => Self::int1(frame, |a| Ok(a.wrapping_neg()))?,
                Op::Min => Self::int2(frame, |a, b| Ok(a.min(b)))?,
                Op::Max => Self::int2(frame, |a, b| Ok(a.max(b)))?,
                Op::Abs => Self::int1(frame, |a| Ok(a.wrapping_abs()))?,
                Op::And => Self::int2(frame, |a, b| Ok(a & b))?,
                Op::Andi => Self::int1(frame, |a| Ok(a & imm))?,
                Op::Or => Self::int2(frame, |a, b| Ok(a | b))?,
                Op::Ori => Self::int1(frame, |a| Ok(a | imm))?,
                Op::Xor => Self::int2(frame, |a, b| Ok(a ^ b))?,
                Op::Xori => Self::int1(frame, |a| Ok(a ^ imm))?,
                Op::Not => Self::int1(frame, |a| Ok(!a))?,
                Op::Lnot => Self::int1(frame, |a| Ok(i32::from(a == 0)))?,
                Op::Lsl => Self::int2(frame, |a, b| Ok(a.wrapping_shl(b as u32)))?,
                Op::Lsli => Self::int1(frame, |a| Ok(a.wrapping_shl(imm as u32)))?,
                Op::Lsr => Self::int2(frame, |a, b| {
                    Ok(((a as u32 & DATA_MASK).wrapping_shr(b as u32)) as i32)
                })?,
                Op::Lsri => Self::int1(frame, |a| {
                    Ok(((a as u32 & DATA_MASK).wrapping_shr(imm as u32)) as i32)
                })?,
                Op::Asr => Self::int2(frame, |a, b| Ok(a.wrapping_shr(b as u32)))?,
                Op::Asri => Self::int1(frame, |a| Ok(a.wrapping_shr(imm as u32)))?,
                Op::Eq | Op::Neq => {
                    let b = frame.pop()?;
                    let a = frame.pop()?;
                    frame.push(bool_value((a == b) == (op == Op::Eq)))?;
                }
                Op::Eqi => Self::int1(frame, |a| Ok(i32::from(a == imm)))?,
                Op::Neqi => Self::int1(frame, |a| Ok(i32::from(a != imm)))?,
                Op::Lt => Self::int2(frame, |a, b| Ok(i32::from(a < b)))?,
                Op::Lti => Self::int1(frame, |a| Ok(i32::from(a < imm)))?,
                Op::Le => Self::int2(frame, |a, b| Ok(i32::from(a <= b)))?,
                Op::Lei => Self::int1(frame, |a| Ok(i32::from(a <= imm)))?,
                Op::Gt => Self::int2(frame, |a, b| Ok(i32::from(a > b)))?,
                Op::Gti => Self::int1(frame, |a| Ok(i32::from(a > imm)))?,
                Op::Ge => Self::int2(frame, |a, b| Ok(i32::from(a >= b)))?,
                Op::Gei => Self::int1(frame, |a| Ok(i32::from(a >= imm)))?,
                Op::Fadd | Op::Fsub | Op::Fmul | Op::Fdiv => {
                    let (a, b) = Self::float2(frame)?;
                    let r = match op {
                        Op::Fadd => a + b,
                        Op::Fsub => a - b,
                        Op::Fmul => a * b,
                        _ => a / b,
                    };
                    let v = frame.alloc(Tag::Float, 1, &[r.to_bits()])?;
                    frame.push(v)?;
                }
                Op::Flt | Op::Feq => {
                    let (a, b) = Self::float2(frame)?;
                    frame.push(bool_value(if op == Op::Flt { a < b } else { a == b }))?;
                }
                Op::Itof => {
                    let a = frame.pop()?.as_int() as f32;
                    let v = frame.alloc(Tag::Float, 1, &[a.to_bits()])?;
                    frame.push(v)?;
                }
                Op::Ftoi => {
                    let v = frame.pop()?;
                    let f = f32::from_bits(frame.word_of(v, Tag::Float)?);
                    frame.push(Value::int(f as i32))?;
                }
                Op::Mkaddr => {
                    let lo = frame.pop()?.as_int() as u32 & 0xFFFF;
                    let hi = frame.pop()?.as_int() as u32 & 0xFFFF;
                    let v = Self::addr(frame, ((hi << 16) | lo).to_be_bytes())?;
                    frame.push(v)?;
                }
                Op::Aeq => {
                    let b = Self::pop_addr(frame)?;
                    let a = Self::pop_addr(frame)?;
                    frame.push(bool_value(a == b))?;
                }
                Op::Snet => {
                    let bits = frame.pop()?.as_int().clamp(0, 32) as u32;
                    let a = u32::from_be_bytes(Self::pop_addr(frame)?);
                    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
                    let v = Self::addr(frame, (a & mask).to_be_bytes())?;
                    frame.push(v)?;
                }
                Op::Insnet => {
                    let bits = frame.pop()?.as_int().clamp(0, 32) as u32;
                    let prefix = u32::from_be_bytes(Self::pop_addr(frame)?);
                    let a = u32::from_be_bytes(Self::pop_addr(frame)?);
                    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
                    frame.push(bool_value(a & mask == prefix & mask))?;
                }
                Op::Towide => {
                    let a = frame.pop()?.as_int();
                    let v = frame.alloc_wide(i64::from(a))?;
                    frame.push(v)?;
                }
                Op::Wadd | Op::Wsub | Op::Wmul => {
                    let (a, b) = Self::wide2(frame)?;
                    let r = match op {
                        Op::Wadd => a.wrapping_add(b),
                        Op::Wsub => a.wrapping_sub(b),
                        _ => a.wrapping_mul(b),
                    };
                    let v = frame.alloc_wide(r)?;
                    frame.push(v)?;
                }
                Op::Wlt | Op::Weq => {
                    let (a, b) = Self::wide2(frame)?;
                    frame.push(bool_value(if op == Op::Wlt { a < b } else { a == b }))?;
                }
                Op::Narrow => {
                    let a = frame.pop_wide()?;
                    frame.push(Value::int(a as i32))?;
                }
                Op::Mktup => {
                    if pc < self.mktup_until {
                        return Err(Fault::MktupSpacing { pc });
                    }
                    let n = word.uimm();
                    self.mktup_until = pc.saturating_add(n);
                    if n > frame.depth() {
                        return Err(Fault::StackUnderflow);
                    }
                    let mut vals = Vec::with_capacity(n as usize);
                    for i in (0..n).rev() {
                        vals.push(frame.peek(i)?.0);
                    }
                    frame.drop_n(n)?;
                    let v = frame.alloc(Tag::Tuple, n, &vals)?;
                    frame.push(v)?;
                }
                Op::Nth => {
                    let t = frame.pop()?;
                    let (_, len, p) = frame.object(t)?;
                    if word.uimm() >= len {
                        return Err(Fault::HeapBounds);
                    }
                    let v = Value(frame.heap_word(p + word.uimm())?);
                    frame.push(v)?;
                }
                Op::Length => {
                    let t = frame.pop()?;
                    let (_, len, _) = frame.object(t)?;
                    frame.push(Value::int(len as i32))?;
                }
                Op::Bget => {
                    let i = frame.pop()?.as_int();
                    let b = frame.pop()?;
                    let (_, len, p) = frame.object(b)?;
                    let i = u32::try_from(i)
                        .ok()
                        .filter(|&i| i < len)
                        .ok_or(Fault::HeapBounds)?;
                    let w = frame.heap_word(p + i / 4)?.to_be_bytes();
                    frame.push(Value::int(i32::from(w[(i % 4) as usize])))?;
                }
                Op::Istag => {
                    let v = frame.pop()?;
                    frame.push(bool_value(u32::from(v.tag_code()) == word.uimm()))?;
                }
                Op::Gettag => {
                    let v = frame.pop()?;
                    frame.push(Value::int(i32::from(v.tag_code())))?;
                }
                Op::Calls => self.calls(frame, word.uimm())?,
            }
        }
    }

    fn calls(&mut self, frame: &mut Frame<'_>, name_at: u32) -> Result<(), Fault> {
        let (tag, len, p) = frame.object_at(name_at)?;
        if tag != Tag::Bytes || len > 64 {
            return Err(Fault::NoService);
        }
        let mut name = [0u8; 64];
        for i in 0..len.div_ceil(4) {
            let w = frame.heap_word(p + i)?.to_be_bytes();
            for (j, b) in w.iter().enumerate() {
                if let Some(slot) = name.get_mut((4 * i) as usize + j) {
                    *slot = *b;
                }
            }
        }
        let name = name.get(..len as usize).unwrap_or(&[]);
        let service = self.services.get_mut(name).ok_or(Fault::NoService)?;
        frame.alloc_left = MAX_SERVICE_ALLOC;
        // A service may push at most one value (the VM's per-instruction rule).
        frame.push_left = 1;
        let r = service.call(self.now, frame);
        frame.alloc_left = u32::MAX;
        frame.push_left = u32::MAX;
        r
    }
}

impl Packet<&mut [u8]> {
    /// Wraps a buffer already checked, for header rewrites on the forwarding fast path.
    fn new_unchecked_len(buffer: &mut [u8]) -> Packet<&mut [u8]> {
        Packet::wrap(buffer)
    }
}
