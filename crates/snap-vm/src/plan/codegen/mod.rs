//! Code generation: typed PLAN to SNAP assembly text (paper §V.A).
//!
//! * Every PLAN function call is inlined (the call graph is acyclic): its arguments are
//!   pushed, the body is compiled with the parameters bound to those stack slots, and the
//!   result slides down over them (`store k; popi k-1`).
//! * `foldl` is unrolled: exactly for a list literal, else `fold_bound` times, each step
//!   guarded by a test for the empty list (`istag tuple; bez done`). A list still not empty
//!   after the last step ends the packet (`exit`). `foldr` first reverses the list the same
//!   way, then folds it from the left with the iterator's arguments swapped.
//! * A tuple is its fields pushed in order and one `mktup n` (padded with `nop`s so the
//!   next `mktup` is at least `n` instructions later, as the VM requires); `#i` is
//!   `nth i−1`.
//! * Service calls become `calls "name"`.
//! * `OnRemote(|f|(args), dest, rb, defaultRoute)` pushes `args`, `f`'s index, then `send`s
//!   a child entering `defaultRoute` with those `n + 1` values: the per-hop preamble
//!   `forw; paj -1` at the top of the code forwards it until it arrives, then jumps to the
//!   index on top of its stack (Fig. 2).
//! * With a routing function `r` of the program's own, the child's stack is `args`, `f`'s
//!   index and the final destination; it is sent to `r(dest)` and enters `r`'s per-hop
//!   block (placed before every function block, so its `paj` jumps forward): at the
//!   destination `pop; paj`, elsewhere `r` inlined and `forwto` its next hop.
//! * `RetransOnRemote(…, k)` is `k` such sends, each with `rb div k`, of arguments,
//!   share and destination computed once.
//! * `OnNeighbor(|f|(args), neighbor, rb)` is `send` of a child with just `args` that enters
//!   `f`'s block directly: no preamble, so `f` runs at the first SNAP node the child
//!   reaches, which is `neighbor` when it is adjacent (PLAN's requirement, not checked: SNAP
//!   has no neighbour-table instruction).
//! * Every branch is forward by construction: `if`, `andalso`, `orelse` and the fold guards
//!   jump to labels emitted after them.
//!
//! Values: ints and bools are small integers (bools 0 and 1, unit 0); hosts and blobs are
//! boxed; the empty list is 0 and a cell `h :: t` the tuple `(h, t)`; words are wide
//! integers, `+ - *` on them `wadd wsub wmul`, `=` `weq`, and `<` `wlt` on both sides
//! biased by 2^63 (one `.wide` heap constant), which makes SNAP's signed order unsigned.
//!
//! Microcode ([`compile_micro`](super::compile_micro)) is the entry function's block alone,
//! entered directly: no routing preamble (a bare run has no packet to forward), its
//! arguments the operands already on the stack, its result the verdict left on top of
//! them (sends and deliveries are refused before code is generated).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::Options;
use super::ast::{BinOp, Expr, ExprKind, FunDef, Pos, WordOp};
use super::error::PlanError;
use crate::asm::bytes_literal;

mod fold;
mod send;

/// Most instructions a packet's code holds.
const MAX_CODE: u32 = 65_535;
/// Deepest recursion of the generator (expression nesting times inlining depth).
const MAX_DEPTH: u32 = 400;

/// The generated assembly and each code block's instruction index.
pub(crate) struct Generated {
    pub(crate) assembly: String,
    pub(crate) entry_index: u16,
}

/// Compiles the checked `funs`, entering at `opts.entry`: a packet program, or with
/// `micro` the entry function's block alone (see the module docs).
pub(crate) fn generate(
    funs: &[FunDef],
    opts: &Options,
    micro: bool,
) -> Result<Generated, PlanError> {
    let fns: BTreeMap<&str, &FunDef> = funs.iter().map(|f| (f.name.as_str(), f)).collect();
    let entry = *fns
        .get(opts.entry.as_str())
        .ok_or_else(|| PlanError::NoEntry {
            name: opts.entry.clone(),
        })?;
    let mut g = Gen {
        fns: &fns,
        opts,
        code: String::new(),
        data: String::new(),
        strings: 0,
        count: 0,
        mktup_until: 0,
        labels: 0,
        depth: 0,
        env: Vec::new(),
        nest: 0,
        blocks: Vec::new(),
        routes: BTreeMap::new(),
        bias: false,
    };
    if micro {
        let label = g.block_label(entry.name.as_str());
        let _ = writeln!(g.code, "        .entry {label}");
    } else {
        g.preamble(funs)?;
    }
    g.block_label(entry.name.as_str());
    let mut entry_index = 0;
    let mut done = 0;
    while let Some((name, label)) = g.blocks.get(done).cloned() {
        done += 1;
        let Some(f) = fns.get(name.as_str()) else {
            continue;
        };
        if name == entry.name {
            entry_index = u16::try_from(g.count).unwrap_or(u16::MAX);
        }
        let params: Vec<&str> = f.params.iter().map(|p| p.0.as_str()).collect();
        let _ = writeln!(
            g.code,
            "{label}:                             ; fun {name}({})",
            params.join(", ")
        );
        g.env = params
            .iter()
            .enumerate()
            .map(|(i, p)| (String::from(*p), i as u32))
            .collect();
        g.depth = params.len() as u32;
        g.expr(&f.body)?;
        g.op("exit", "");
    }
    let mut assembly = g.data;
    assembly.push_str(&g.code);
    Ok(Generated {
        assembly,
        entry_index,
    })
}

struct Gen<'a> {
    fns: &'a BTreeMap<&'a str, &'a FunDef>,
    opts: &'a Options,
    code: String,
    data: String,
    strings: u32,
    /// Instructions emitted.
    count: u32,
    /// No `mktup` before this index (the `n − 1` instructions after a `mktup n`).
    mktup_until: u32,
    labels: u32,
    /// Stack values above the block's base.
    depth: u32,
    /// Variables and their stack slots (from the base), innermost last.
    env: Vec<(String, u32)>,
    nest: u32,
    /// Code blocks to emit: (function, label), in order.
    blocks: Vec<(String, String)>,
    /// Routing functions' per-hop blocks: function to label.
    routes: BTreeMap<String, String>,
    /// Whether the 2^63 bias of unsigned word comparisons is in the heap yet.
    bias: bool,
}

/// Every routing function named by an `OnRemote` in `e`.
fn route_names(e: &Expr, out: &mut Vec<String>) {
    if let ExprKind::OnRemote { route, .. } = &e.kind {
        out.push(route.clone());
    }
    e.for_each_child(&mut |c| route_names(c, out));
}

impl Gen<'_> {
    /// The per-hop routing preamble at index 0, then the routing blocks, before every
    /// function block so their `paj` jumps forward.
    fn preamble(&mut self, funs: &[FunDef]) -> Result<(), PlanError> {
        self.code.push_str(
            "        .entry defaultRoute\n\
             defaultRoute:                   ; per-hop preamble: forward until at dest,\n\
             \x20       forw\n\
             \x20       paj -1                  ; then jump to the block whose index is on top\n",
        );
        self.count = 2;
        let mut routes = Vec::new();
        for f in funs {
            route_names(&f.body, &mut routes);
        }
        routes.retain(|r| r != "defaultRoute" && self.fns.contains_key(r.as_str()));
        routes.sort();
        routes.dedup();
        for r in routes {
            if let Some(f) = self.fns.get(r.as_str()).copied() {
                self.route_block(f)?;
            }
        }
        Ok(())
    }

    fn op(&mut self, mnemonic: &str, imm: impl core::fmt::Display) {
        let imm = format!("{imm}");
        if mnemonic == "mktup" {
            // `mktup n` wants n − 1 instructions before the next `mktup` (paper §III.A).
            while self.count < self.mktup_until {
                self.code.push_str("        nop\n");
                self.count += 1;
            }
            self.mktup_until = self.count + imm.parse::<u32>().unwrap_or(1);
        }
        if imm.is_empty() {
            let _ = writeln!(self.code, "        {mnemonic}");
        } else {
            let _ = writeln!(self.code, "        {mnemonic} {imm}");
        }
        self.count += 1;
    }

    fn label(&mut self) -> String {
        self.labels += 1;
        format!("L{}", self.labels)
    }

    fn place(&mut self, label: &str) {
        let _ = writeln!(self.code, "{label}:");
    }

    /// The label of `f`'s code block, queueing the block if it is new.
    fn block_label(&mut self, f: &str) -> String {
        if let Some((_, l)) = self.blocks.iter().find(|(n, _)| n == f) {
            return l.clone();
        }
        let l = format!("F{}", self.blocks.len());
        self.blocks.push((String::from(f), l.clone()));
        l
    }

    fn push(&mut self, v: impl core::fmt::Display) {
        self.op("push", v);
        self.depth += 1;
    }

    /// Pushes a copy of the value in stack slot `slot` (from the block's base).
    fn pull_slot(&mut self, slot: u32) {
        self.op("pull", self.depth - 1 - slot);
        self.depth += 1;
    }

    /// Drops the `k` values under the top one.
    fn slide(&mut self, k: u32) {
        if k > 0 {
            self.op("store", k);
            if k > 1 {
                self.op("popi", k - 1);
            }
            self.depth -= k;
        }
    }

    fn too_large(pos: Pos) -> PlanError {
        PlanError::TooLarge {
            line: pos.line,
            col: pos.col,
        }
    }

    /// Compiles `e`: one more value on the stack.
    fn expr(&mut self, e: &Expr) -> Result<(), PlanError> {
        if self.count > MAX_CODE || self.nest >= MAX_DEPTH {
            return Err(Self::too_large(e.pos));
        }
        self.nest += 1;
        let before = self.depth;
        let r = self.expr_inner(e);
        self.nest -= 1;
        r?;
        debug_assert_eq!(self.depth, before + 1, "{e:?}");
        Ok(())
    }

    fn expr_inner(&mut self, e: &Expr) -> Result<(), PlanError> {
        match &e.kind {
            ExprKind::Int(n) => self.push(n),
            ExprKind::Bool(b) => self.push(u8::from(*b)),
            ExprKind::Unit => self.push(0),
            ExprKind::Str(s) => self.string(s),
            ExprKind::Host(h) => self.host(*h),
            ExprKind::Var(x) => self.var(x, e.pos)?,
            ExprKind::Let(x, v, body) => self.let_in(x, v, body)?,
            ExprKind::If(c, t, f) => self.if_else(c, t, f)?,
            ExprKind::Bin(op, l, r) => self.bin(*op, l, r)?,
            ExprKind::Not(a) => {
                self.expr(a)?;
                self.op("lnot", "");
            }
            ExprKind::Neg(a) => {
                self.expr(a)?;
                self.op("neg", "");
            }
            ExprKind::List(items) => self.list(items)?,
            ExprKind::Seq(items) => self.seq(items)?,
            ExprKind::Call(name, args) => self.call(name, args, e.pos)?,
            ExprKind::OnRemote { .. } | ExprKind::OnNeighbor { .. } => self.send(&e.kind)?,
            ExprKind::Fold { .. } => self.fold(&e.kind, e.pos)?,
            ExprKind::Tuple(items) => self.tuple(items)?,
            ExprKind::Proj(i, t) => self.proj(*i, t)?,
        }
        Ok(())
    }

    // Each construct in its own small frame: the generator recurses as deep as expressions
    // nest times functions inline, and unoptimised builds give one big match's arms each
    // their own stack slots.
    #[inline(never)]
    fn string(&mut self, s: &[u8]) {
        self.strings += 1;
        let _ = writeln!(self.data, ".bytes s{} {}", self.strings, bytes_literal(s));
        self.op("pushh", format!("@s{}", self.strings));
        self.depth += 1;
    }

    /// A host literal: its two 16-bit halves, then `mkaddr`.
    #[inline(never)]
    fn host(&mut self, h: [u8; 4]) {
        let [a, b, c, d] = h.map(u32::from);
        self.push((a << 8) | b);
        self.push((c << 8) | d);
        self.op("mkaddr", "");
        self.depth -= 1;
    }

    #[inline(never)]
    fn var(&mut self, x: &str, pos: Pos) -> Result<(), PlanError> {
        let slot = self
            .env
            .iter()
            .rev()
            .find(|(y, _)| y == x)
            .map(|(_, s)| *s)
            .ok_or_else(|| PlanError::UnknownVariable {
                line: pos.line,
                col: pos.col,
                name: String::from(x),
            })?;
        self.pull_slot(slot);
        Ok(())
    }

    #[inline(never)]
    fn let_in(&mut self, x: &str, v: &Expr, body: &Expr) -> Result<(), PlanError> {
        self.expr(v)?;
        self.env.push((String::from(x), self.depth - 1));
        let r = self.expr(body);
        self.env.pop();
        r?;
        self.slide(1);
        Ok(())
    }

    #[inline(never)]
    fn if_else(&mut self, c: &Expr, t: &Expr, f: &Expr) -> Result<(), PlanError> {
        self.expr(c)?;
        let (l_else, l_end) = (self.label(), self.label());
        self.op("bez", &l_else);
        self.depth -= 1;
        self.expr(t)?;
        self.op("ji", &l_end);
        self.depth -= 1;
        self.place(&l_else);
        self.expr(f)?;
        self.place(&l_end);
        Ok(())
    }

    #[inline(never)]
    fn list(&mut self, items: &[Expr]) -> Result<(), PlanError> {
        for item in items {
            self.expr(item)?;
        }
        self.push(0);
        for _ in items {
            self.op("mktup", 2);
            self.depth -= 1;
        }
        Ok(())
    }

    /// `(a, b, …)`: the fields in order, then one `mktup` (field 1 pushed first).
    #[inline(never)]
    fn tuple(&mut self, items: &[Expr]) -> Result<(), PlanError> {
        for item in items {
            self.expr(item)?;
        }
        let n = items.len() as u32;
        self.op("mktup", n);
        self.depth = self.depth + 1 - n;
        Ok(())
    }

    /// `#i t`: `nth i − 1`.
    #[inline(never)]
    fn proj(&mut self, i: u32, t: &Expr) -> Result<(), PlanError> {
        self.expr(t)?;
        self.op("nth", i.saturating_sub(1));
        Ok(())
    }

    #[inline(never)]
    fn seq(&mut self, items: &[Expr]) -> Result<(), PlanError> {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.op("pop", "");
                self.depth -= 1;
            }
            self.expr(item)?;
        }
        if items.is_empty() {
            self.push(0);
        }
        Ok(())
    }

    #[inline(never)]
    fn bin(&mut self, op: BinOp, l: &Expr, r: &Expr) -> Result<(), PlanError> {
        if let BinOp::Word(w) = op {
            return self.word(w, l, r);
        }
        let (mnemonic, imm_form) = match op {
            BinOp::And | BinOp::Or => {
                let (l_other, l_end) = (self.label(), self.label());
                self.expr(l)?;
                self.op("bez", &l_other);
                self.depth -= 1;
                if op == BinOp::And {
                    self.expr(r)?;
                    self.op("ji", &l_end);
                    self.depth -= 1;
                    self.place(&l_other);
                    self.push(0);
                } else {
                    self.push(1);
                    self.op("ji", &l_end);
                    self.depth -= 1;
                    self.place(&l_other);
                    self.expr(r)?;
                }
                self.place(&l_end);
                return Ok(());
            }
            BinOp::Cons => {
                self.expr(l)?;
                self.expr(r)?;
                self.op("mktup", 2);
                self.depth -= 1;
                return Ok(());
            }
            BinOp::HostEq | BinOp::HostNe => {
                self.expr(l)?;
                self.expr(r)?;
                self.op("aeq", "");
                if op == BinOp::HostNe {
                    self.op("lnot", "");
                }
                self.depth -= 1;
                return Ok(());
            }
            // Compiled above.
            BinOp::Word(_) => return Ok(()),
            BinOp::Add => ("add", true),
            BinOp::Sub => ("sub", true),
            BinOp::Mul => ("mul", true),
            BinOp::Div => ("div", true),
            BinOp::Mod => ("mod", true),
            BinOp::Eq => ("eq", true),
            BinOp::Ne => ("neq", true),
            BinOp::Lt => ("lt", true),
            BinOp::Le => ("le", true),
            BinOp::Gt => ("gt", true),
            BinOp::Ge => ("ge", true),
        };
        self.expr(l)?;
        match &r.kind {
            // `x + 1` as `addi 1`: the immediate forms take a 25-bit integer, as literals are.
            ExprKind::Int(n) if imm_form => self.op(&format!("{mnemonic}i"), n),
            ExprKind::Bool(b) if matches!(op, BinOp::Eq | BinOp::Ne) => {
                self.op(&format!("{mnemonic}i"), u8::from(*b));
            }
            _ => {
                self.expr(r)?;
                self.op(mnemonic, "");
                self.depth -= 1;
            }
        }
        Ok(())
    }

    /// `l w r` on words (see the module docs).
    #[inline(never)]
    fn word(&mut self, w: WordOp, l: &Expr, r: &Expr) -> Result<(), PlanError> {
        let unsigned = matches!(w, WordOp::Lt | WordOp::Le | WordOp::Gt | WordOp::Ge);
        self.expr(l)?;
        if unsigned {
            self.bias();
        }
        self.expr(r)?;
        if unsigned {
            self.bias();
        }
        let ops: &[&str] = match w {
            WordOp::Add => &["wadd"],
            WordOp::Sub => &["wsub"],
            WordOp::Mul => &["wmul"],
            WordOp::Eq => &["weq"],
            WordOp::Ne => &["weq", "lnot"],
            WordOp::Lt => &["wlt"],
            WordOp::Gt => &["swap", "wlt"],
            WordOp::Le => &["swap", "wlt", "lnot"],
            WordOp::Ge => &["wlt", "lnot"],
        };
        for op in ops {
            self.op(op, "");
        }
        self.depth -= 1;
        Ok(())
    }

    /// Adds 2^63 (mod 2^64) to the word on top.
    fn bias(&mut self) {
        if !self.bias {
            self.data
                .push_str(".wide wbias 0x8000000000000000 ; 2^63\n");
            self.bias = true;
        }
        self.op("pushh", "@wbias");
        self.op("wadd", "");
    }

    /// Compiles `f`'s body with its parameters in the top `params.len()` slots, then
    /// slides the result over them.
    fn inline(&mut self, f: &FunDef) -> Result<(), PlanError> {
        let n = f.params.len() as u32;
        let base = self.depth - n;
        let env = f
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.0.clone(), base + i as u32))
            .collect();
        let saved = core::mem::replace(&mut self.env, env);
        let r = self.expr(&f.body);
        self.env = saved;
        r?;
        self.slide(n);
        Ok(())
    }

    #[inline(never)]
    fn call(&mut self, name: &str, args: &[Expr], pos: Pos) -> Result<(), PlanError> {
        for a in args {
            self.expr(a)?;
        }
        let n = args.len() as u32;
        if let Some(f) = self.fns.get(name).copied() {
            return self.inline(f);
        }
        let (mnemonic, imm) = match name {
            "getSrc" => ("getsrc", String::new()),
            "getDst" => ("getdst", String::new()),
            "thisHost" => ("here", String::new()),
            "getRB" => ("getrb", String::new()),
            "toWord" => ("towide", String::new()),
            "hd" => ("nth", String::from("0")),
            "tl" => ("nth", String::from("1")),
            "null" => {
                self.op("istag", "tuple");
                ("lnot", String::new())
            }
            // demux ends the packet; what follows is never run, so count a result anyway.
            "deliverUDP" => ("demux", String::new()),
            _ if self.opts.services.iter().any(|s| s.name == name) => (
                "calls",
                String::from(bytes_literal(name.as_bytes()).as_str()),
            ),
            _ => {
                return Err(PlanError::UnknownService {
                    line: pos.line,
                    col: pos.col,
                    name: String::from(name),
                });
            }
        };
        self.op(mnemonic, imm);
        self.depth = self.depth - n + 1;
        Ok(())
    }
}
