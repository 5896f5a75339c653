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
    stack: Vec<u32>,
}

impl Vm {
    /// A VM for a node.
    pub fn new(config: NodeConfig) -> Vm {
        Vm {
            config,
            services: Services::new(),
            extra: Vec::new(),
            stack: Vec::new(),
        }
    }

    /// The node's config.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// Runs `packet`, which arrived on interface `iface` at `now` (time only services use).
    pub fn run(&mut self, now: u64, iface: u32, packet: Vec<u8>) -> Outcome {
        let mut out = Outcome::ended(End::Exit);
        self.run_into(now, iface, packet, &mut out);
        out
    }

    /// The forwarding fast path alone (§VI.E: most packets only route): a well-formed
    /// packet whose entry instruction is `forw` and that is not at this node leaves at once,
    /// in its own buffer, with its resource bound decremented — exactly what
    /// [`run`](Self::run) would do with it, without building an [`Outcome`]. Any other packet
    /// (including one with no resource bound left) comes back untouched, for `run`.
    ///
    /// # Errors
    ///
    /// The packet itself, when it needs the interpreter.
    #[inline]
    pub fn try_forward(&self, mut packet: Vec<u8>) -> Result<Transmit, Vec<u8>> {
        let Some(h) = packet.first_chunk::<HEADER_LEN>() else {
            return Err(packet);
        };
        let be16 = |i: usize| usize::from(u16::from_be_bytes([h[i], h[i + 1]]));
        let (code, entry, rb) = (be16(16), be16(14), be16(12));
        let len = HEADER_LEN + 4 * (code + be16(18) + be16(20));
        let dst = [h[8], h[9], h[10], h[11]];
        let at = HEADER_LEN + 4 * entry;
        let first = packet.get(at..at + 4);
        if h[0] != crate::wire::VERSION << 4
            || len != packet.len()
            || entry >= code
            || rb == 0
            || first != Some(&Word::new(Op::Forw as u8, 0).0.to_be_bytes()[..])
            || dst == self.config.address
            || self.config.ifaces == 0
        {
            return Err(packet);
        }
        if let Some(f) = packet.get_mut(12..14) {
            f.copy_from_slice(&(rb as u16 - 1).to_be_bytes());
        }
        Ok(Transmit { dst, packet })
    }

    /// [`run`](Self::run), writing into `out` (cleared first) so a node that reuses one
    /// `Outcome` allocates nothing per packet on the forwarding path.
    pub fn run_into(&mut self, now: u64, iface: u32, mut packet: Vec<u8>, out: &mut Outcome) {
        out.transmits.clear();
        out.delivery = None;
        out.stats = Stats::default();
        out.rb_in = 0;
        let Some(Arrival {
            rb,
            entry,
            port,
            src,
            dst,
            heap_at,
            stack_at,
        }) = arrive(&mut packet, out)
        else {
            return;
        };
        // The common case first (§VI.E): a packet whose first instruction is `forw` and that
        // is not yet at its destination leaves at once, in its own buffer, untouched but for
        // the resource bound already decremented.
        let first = packet
            .get(HEADER_LEN + 4 * usize::from(entry)..)
            .and_then(|b| b.first_chunk::<4>())
            .map(|w| u32::from_be_bytes(*w));
        if first == Some(Word::new(Op::Forw as u8, 0).0)
            && dst != self.config.address
            && self.config.ifaces > 0
        {
            out.stats = Stats {
                executed: 1,
                max_depth: ((packet.len() - stack_at) / 4) as u32,
                allocated: 0,
                sends: 1,
            };
            out.end = End::Forwarded;
            out.transmits.push(Transmit { dst, packet });
            return;
        }
        self.extra.clear();
        self.stack.clear();
        let (front, stack_bytes) = packet.split_at(stack_at);
        let code = front
            .get(HEADER_LEN..heap_at)
            .unwrap_or_default()
            .as_chunks::<4>()
            .0;
        let heap = front.get(heap_at..).unwrap_or_default().as_chunks::<4>().0;
        self.stack.extend(
            stack_bytes
                .as_chunks::<4>()
                .0
                .iter()
                .map(|w| u32::from_be_bytes(*w)),
        );
        // Each instruction pushes at most one value, and runs at most once; the stack must
        // also fit the 16-bit length field and, with the packet, the 4 × MTU buffer.
        let max_len = (4 * self.config.mtu).max(packet.len());
        let stack_limit = (self.stack.len() + code.len() + 1)
            .min(usize::from(u16::MAX))
            .min(self.stack.len() + (max_len - packet.len()) / 4);
        self.stack.reserve(code.len() + 1);
        let mut frame = Frame {
            code,
            heap,
            stack_limit,
            dirty: false,
            extra_limit: max_len / 4,
            max_len,
            max_depth: self.stack.len() as u32,
            packet_len: packet.len(),
            stack: &mut self.stack,
            extra: &mut self.extra,
            src,
            port,
        };
        let mut exec = Exec {
            out,
            config: &self.config,
            services: &mut self.services,
            now,
            iface,
            rb,
            entry,
            dst,
            code_len: 0,
            pc: u32::from(entry),
            mktup_until: 0,
        };
        let end = exec.run(&mut frame);
        let (dirty, max_depth, allocated) = (frame.dirty, frame.max_depth, frame.extra.len());
        out.stats.max_depth = max_depth;
        out.stats.allocated = allocated as u32;
        out.end = match end {
            Ok(Stop::End(end)) => end,
            Ok(Stop::Reuse(to, rb)) => {
                // §VI.D's best case: the packet leaves in its own buffer; only the header
                // changes, and the stack if the program changed it.
                if dirty {
                    packet.truncate(stack_at);
                    for w in self.stack.iter() {
                        packet.extend_from_slice(&w.to_be_bytes());
                    }
                }
                let mut p = Packet::wrap(&mut packet[..]);
                p.set_dst(to);
                // All that is left: less than arrived if the program sent children.
                p.set_rb(rb);
                p.set_stack_len(self.stack.len() as u16);
                out.transmits.push(Transmit { dst: to, packet });
                End::Forwarded
            }
            Err(fault) => End::Fault(fault),
        };
    }
}

/// Header fields of an arrived packet, its resource bound already decremented.
struct Arrival {
    rb: u16,
    entry: u16,
    port: u16,
    src: [u8; 4],
    dst: [u8; 4],
    heap_at: usize,
    stack_at: usize,
}

/// Checks the packet's structure, converts a little-endian body, and decrements the
/// resource bound; `None` (with `out.end` set) if the packet goes no further.
#[inline]
fn arrive(packet: &mut [u8], out: &mut Outcome) -> Option<Arrival> {
    // Fast path: a big-endian packet, every field read from one fixed-size header copy.
    if let Some(h) = packet.first_chunk::<HEADER_LEN>() {
        let h = *h;
        let be16 = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        let (code, heap, stack) = (
            usize::from(be16(16)),
            usize::from(be16(18)),
            usize::from(be16(20)),
        );
        let entry = be16(14);
        if h[0] == crate::wire::VERSION << 4
            && HEADER_LEN + 4 * (code + heap + stack) == packet.len()
            && usize::from(entry) < code
        {
            let rb = be16(12);
            out.rb_in = rb;
            if rb == 0 {
                out.end = End::NoResource;
                return None;
            }
            if let Some(f) = packet.get_mut(12..14) {
                f.copy_from_slice(&(rb - 1).to_be_bytes());
            }
            return Some(Arrival {
                rb: rb - 1,
                entry,
                port: be16(2),
                src: [h[4], h[5], h[6], h[7]],
                dst: [h[8], h[9], h[10], h[11]],
                heap_at: HEADER_LEN + 4 * code,
                stack_at: HEADER_LEN + 4 * (code + heap),
            });
        }
    }
    // Everything else: the checked view names the error, or converts the body's order.
    let mut p = match Packet::new_checked(&mut packet[..]) {
        Ok(p) => p,
        Err(e) => {
            out.end = End::Malformed(e);
            return None;
        }
    };
    p.normalize();
    let rb = p.rb();
    out.rb_in = rb;
    if rb == 0 {
        out.end = End::NoResource;
        return None;
    }
    p.set_rb(rb - 1);
    Some(Arrival {
        rb: rb - 1,
        entry: p.entry(),
        port: p.port(),
        src: p.src(),
        dst: p.dst(),
        heap_at: p.heap_offset(),
        stack_at: p.stack_offset(),
    })
}

/// How the interpreter loop stopped.
enum Stop {
    /// Done; transmits and delivery already recorded.
    End(End),
    /// `forw`/`forwto` with nothing allocated: send the packet's own buffer to this address
    /// with this resource bound.
    Reuse([u8; 4], u16),
}

/// One execution's registers.
struct Exec<'v> {
    out: &'v mut Outcome,
    config: &'v NodeConfig,
    services: &'v mut Services,
    now: u64,
    iface: u32,
    rb: u16,
    entry: u16,
    dst: [u8; 4],
    code_len: u32,
    pc: u32,
    mktup_until: u32,
}

fn bool_value(b: bool) -> Value {
    Value::int(i32::from(b))
}

impl Exec<'_> {
    fn branch(&mut self, offset: i64) -> Result<(), Fault> {
        let target = i64::from(self.pc) + offset;
        if offset <= 0 || target > i64::from(self.code_len) {
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
    fn forward(&mut self, frame: &mut Frame<'_>, dst: [u8; 4]) -> Result<Stop, Fault> {
        self.count_send()?;
        let rb = core::mem::take(&mut self.rb);
        if frame.extra.is_empty() {
            return Ok(Stop::Reuse(dst, rb));
        }
        let h = ChildHeader {
            src: frame.src,
            dst,
            port: frame.port,
            rb,
            entry: self.entry,
        };
        let packet = child(frame, frame.depth(), &h)?;
        self.out.transmits.push(Transmit { dst, packet });
        Ok(Stop::End(End::Forwarded))
    }

    fn run(&mut self, frame: &mut Frame<'_>) -> Result<Stop, Fault> {
        self.code_len = frame.code.len() as u32;
        let mut executed = 0;
        let r = self.run_loop(frame, &mut executed);
        self.out.stats.executed = executed;
        r
    }

    fn run_loop(&mut self, frame: &mut Frame<'_>, executed: &mut u32) -> Result<Stop, Fault> {
        let code = frame.code;
        loop {
            let pc = self.pc;
            let Some(w) = code.get(pc as usize) else {
                return Ok(Stop::End(End::Exit));
            };
            let word = Word(u32::from_be_bytes(*w));
            let op = Op::from_code(word.opcode()).ok_or(Fault::UnknownOpcode {
                pc,
                opcode: word.opcode(),
            })?;
            *executed += 1;
            self.pc = pc + 1;
            let imm = word.imm();
            match op {
                Op::Exit => return Ok(Stop::End(End::Exit)),
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
                    if n < 0 || n as u32 >= self.code_len {
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
                    let packet = child(frame, s, &h)?;
                    self.rb -= r as u16;
                    self.out.transmits.push(Transmit { dst: d, packet });
                    frame.push(Value::int(1))?;
                }
                Op::Demux => {
                    let p = frame.pop()?.as_int();
                    let v = frame.pop()?;
                    // Linear in the packet: honest sharing fits, exponential sharing does not.
                    let mut budget = 8 * (frame.heap_len() + 1);
                    let value = deliver(frame, v, 0, &mut budget)?;
                    self.out.delivery = Some(Delivery {
                        port: p,
                        value,
                        src: frame.src,
                    });
                    return Ok(Stop::End(End::Delivered));
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
                Op::Getep => frame.push(Value::int(i32::from(self.entry)))?,
                Op::Getport => frame.push(Value::int(i32::from(frame.port)))?,
                Op::Ishere => {
                    let a = Self::pop_addr(frame)?;
                    frame.push(bool_value(a == self.config.address))?;
                }
                Op::Getifc => frame.push(Value::int(self.iface as i32))?,
                Op::Nifc => frame.push(Value::int(self.config.ifaces as i32))?,
                Op::Getlen => frame.push(Value::int(frame.packet_len as i32))?,
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
        let (depth, heap) = (frame.depth(), frame.extra.len());
        service.call(self.now, frame)?;
        // A service, like an instruction, may grow the stack by one value and the heap by
        // a constant: the verifier's bounds rely on it.
        if frame.depth() > depth + 1 {
            return Err(Fault::ServicePush);
        }
        if frame.extra.len() > heap + MAX_SERVICE_ALLOC as usize {
            return Err(Fault::ServiceAlloc);
        }
        Ok(())
    }
}
