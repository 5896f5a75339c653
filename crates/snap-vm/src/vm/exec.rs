//! The interpreter loop: one execution's registers and every instruction's effect.

use alloc::vec::Vec;
use core::net::IpAddr;

use super::frame::Frame;
use super::send::{ChildHeader, child, deliver, heap_unchanged};
use super::services::ServiceSet;
use super::{Delivery, End, Fault, NodeConfig, Outcome, Stop, Transmit};
use crate::op::{MAX_SERVICE_ALLOC, Op};
use crate::value::{DATA_MASK, Tag, Value, Word};

/// One execution's registers.
pub(super) struct Exec<'v> {
    pub(super) out: &'v mut Outcome,
    pub(super) config: &'v NodeConfig,
    pub(super) services: &'v mut dyn ServiceSet,
    pub(super) now: u64,
    pub(super) iface: u32,
    pub(super) rb: u16,
    pub(super) entry: u16,
    /// The packet's destination (its family is the packet's).
    pub(super) dst: IpAddr,
    /// The node's address in the packet's family (`here`; `forw` stops there).
    pub(super) here: IpAddr,
    /// The node's IPv6 address, if it has one (`ishere` knows both).
    pub(super) here6: Option<[u8; 16]>,
    pub(super) code_len: u32,
    pub(super) pc: u32,
    pub(super) mktup_until: u32,
    /// A bare run ([`MicroProgram::run`](super::MicroProgram::run)): no packet to send or deliver, so
    /// `forw`, `forwto`, `send` and `demux` fault.
    pub(super) bare: bool,
}

/// Where an execution runs: the registers a packet's header and the node give it.
pub(super) struct Registers {
    /// The interface it arrived on.
    pub(super) iface: u32,
    /// Resource bound left (already decremented on arrival).
    pub(super) rb: u16,
    /// Entry point.
    pub(super) entry: u16,
    /// The packet's destination (its family is the packet's).
    pub(super) dst: IpAddr,
    /// The node's address in the packet's family.
    pub(super) here: IpAddr,
    /// The node's IPv6 address, if it has one.
    pub(super) here6: Option<[u8; 16]>,
}

/// `a`'s first `bits` bits (clamped to its length), the rest zero.
fn masked(a: IpAddr, bits: i32) -> IpAddr {
    match a {
        IpAddr::V4(a) => {
            let bits = bits.clamp(0, 32) as u32;
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            core::net::Ipv4Addr::from(u32::from(a) & mask).into()
        }
        IpAddr::V6(a) => {
            let bits = bits.clamp(0, 128) as u32;
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            core::net::Ipv6Addr::from(u128::from(a) & mask).into()
        }
    }
}

fn bool_value(b: bool) -> Value {
    Value::int(i32::from(b))
}

impl<'v> Exec<'v> {
    /// An execution starting at the entry point, recording into `out`.
    pub(super) fn new(
        out: &'v mut Outcome,
        config: &'v NodeConfig,
        services: &'v mut dyn ServiceSet,
        now: u64,
        at: Registers,
        bare: bool,
    ) -> Exec<'v> {
        Exec {
            out,
            config,
            services,
            now,
            iface: at.iface,
            rb: at.rb,
            entry: at.entry,
            dst: at.dst,
            here: at.here,
            here6: at.here6,
            code_len: 0,
            pc: u32::from(at.entry),
            mktup_until: 0,
            bare,
        }
    }

    /// Faults in a bare run: `forw`, `forwto`, `send` and `demux` need a packet.
    #[inline]
    fn network(&self) -> Result<(), Fault> {
        if self.bare {
            return Err(Fault::Network);
        }
        Ok(())
    }

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

    fn addr(frame: &mut Frame<'_>, a: IpAddr) -> Result<Value, Fault> {
        let (words, n) = crate::value::addr_payload(a);
        frame.alloc(Tag::Addr, n as u32, words.get(..n).unwrap_or_default())
    }

    #[inline]
    fn pop_addr(frame: &mut Frame<'_>) -> Result<IpAddr, Fault> {
        let v = frame.pop()?;
        frame.addr_of(v)
    }

    /// Pops an address a packet sends to or computes with: of the packet's own family.
    fn pop_own_family(&self, frame: &mut Frame<'_>) -> Result<IpAddr, Fault> {
        let a = Self::pop_addr(frame)?;
        if a.is_ipv6() != self.dst.is_ipv6() {
            return Err(Fault::AddressFamily);
        }
        Ok(a)
    }

    /// Whether `a` is one of the node's addresses.
    fn is_here(&self, a: IpAddr) -> bool {
        match a {
            IpAddr::V4(a) => a.octets() == self.config.address,
            IpAddr::V6(a) => Some(a.octets()) == self.here6,
        }
    }

    fn count_send(&mut self) -> Result<(), Fault> {
        if self.out.stats.sends >= self.config.ifaces {
            return Err(Fault::SendLimit);
        }
        self.out.stats.sends += 1;
        Ok(())
    }

    /// `forw` / `forwto` to `dst`: the whole stack and all the resource bound.
    fn forward(&mut self, frame: &mut Frame<'_>, dst: IpAddr) -> Result<Stop, Fault> {
        self.count_send()?;
        let rb = core::mem::take(&mut self.rb);
        if frame.extra.is_empty() {
            return Ok(Stop::Reuse(dst, rb));
        }
        // Nothing allocated is reachable and the packet heap would be copied as it is: the
        // child is the packet with its stack and a fresh header, in its own buffer.
        if heap_unchanged(frame) {
            return Ok(Stop::ReuseAsChild(dst, rb));
        }
        let h = ChildHeader {
            src: frame.src,
            dst,
            port: frame.port,
            rb,
            entry: self.entry,
        };
        let depth = frame.depth();
        let packet = child(frame, depth, &h)?;
        self.out.transmits.push(Transmit::to(dst, packet));
        Ok(Stop::End(End::Forwarded))
    }

    /// Runs from `self.pc`, `executed` instructions already counted.
    pub(super) fn run(&mut self, frame: &mut Frame<'_>, executed: u32) -> Result<Stop, Fault> {
        self.code_len = frame.code.len() as u32;
        let mut executed = executed;
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
                    self.network()?;
                    if self.dst != self.here {
                        return self.forward(frame, self.dst);
                    }
                }
                Op::Forwto => {
                    self.network()?;
                    let d = self.pop_own_family(frame)?;
                    if d != self.here {
                        return self.forward(frame, d);
                    }
                }
                Op::Send => {
                    self.network()?;
                    let d = self.pop_own_family(frame)?;
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
                    self.out.transmits.push(Transmit::to(d, packet));
                    frame.push(Value::int(1))?;
                }
                Op::Demux => {
                    self.network()?;
                    let p = frame.pop()?.as_int();
                    let v = frame.pop()?;
                    // A byte array inside the packet heap (a ping's payload): what `deliver`
                    // would copy out lies in the packet, which stays here, so the caller
                    // moves it to the front of the packet's own buffer instead.
                    if v.tag() == Some(Tag::Bytes) {
                        let (_, len, at) = frame.object(v)?;
                        if (at as usize).saturating_add(len.div_ceil(4) as usize)
                            <= frame.heap.len()
                        {
                            return Ok(Stop::DeliverBytes {
                                port: p,
                                at: 4 * at as usize,
                                len: len as usize,
                            });
                        }
                    }
                    // Linear in the packet: honest sharing fits, exponential sharing does not.
                    let mut budget = 8 * (frame.heap_len() + 1);
                    let value = deliver(frame, v, 0, &mut budget)?;
                    self.out.delivery = Some(Delivery {
                        port: p,
                        value,
                        src: super::ipv4_or_zero(frame.src),
                        src6: super::ipv6_of(frame.src),
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
                    let v = Self::addr(frame, self.here)?;
                    frame.push(v)?;
                }
                Op::Getrb => frame.push(Value::int(i32::from(self.rb)))?,
                Op::Getep => frame.push(Value::int(i32::from(self.entry)))?,
                Op::Getport => frame.push(Value::int(i32::from(frame.port)))?,
                Op::Ishere => {
                    let a = Self::pop_addr(frame)?;
                    frame.push(bool_value(self.is_here(a)))?;
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
                    let v = Self::addr(frame, core::net::Ipv4Addr::from((hi << 16) | lo).into())?;
                    frame.push(v)?;
                }
                Op::Aeq => {
                    let b = Self::pop_addr(frame)?;
                    let a = Self::pop_addr(frame)?;
                    frame.push(bool_value(a == b))?;
                }
                Op::Snet => {
                    let bits = frame.pop()?.as_int();
                    // It allocates an address: of the packet's family, the size the
                    // verifier counts.
                    let a = self.pop_own_family(frame)?;
                    let v = Self::addr(frame, masked(a, bits))?;
                    frame.push(v)?;
                }
                Op::Insnet => {
                    let bits = frame.pop()?.as_int();
                    let prefix = Self::pop_addr(frame)?;
                    let a = Self::pop_addr(frame)?;
                    frame.push(bool_value(masked(a, bits) == masked(prefix, bits)))?;
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
        let (depth, heap) = (frame.depth(), frame.extra.len());
        self.services.call(name, self.now, frame)?;
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
