//! The reference machine: registers and every instruction's effect, one step at a time.

use super::*;

pub(super) struct Machine<'p> {
    pub(super) p: &'p Program,
    pub(super) node: &'p Node,
    pub(super) code: Vec<u32>,
    pub(super) heap: Vec<u32>,
    pub(super) stack: Vec<u32>,
    pub(super) rb: u16,
    pub(super) pc: usize,
    pub(super) mktup_until: usize,
    /// Most values on the stack.
    pub(super) stack_limit: usize,
    /// Most heap words allocated.
    pub(super) alloc_limit: usize,
    /// Most bytes of a child packet.
    pub(super) max_len: usize,
    pub(super) out: Outcome,
}

pub(super) type Step<T> = Result<T, Fault>;

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
        // Only a pointer (a known tag other than int) names an object.
        if tag_of(w) == INT || tag_of(w) > BYTES {
            return Err(Fault::BadObject);
        }
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

    pub(super) fn step(&mut self) -> Step<Option<End>> {
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
