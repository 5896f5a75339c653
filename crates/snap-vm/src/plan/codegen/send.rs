//! Sending: `OnRemote` (per-hop routing preamble or a routing function's block),
//! `RetransOnRemote`'s copies and `OnNeighbor`.

use alloc::format;
use alloc::vec::Vec;
use core::fmt::Write;

use super::Gen;
use crate::plan::ast::{Expr, ExprKind, FunDef};
use crate::plan::error::PlanError;

impl Gen<'_> {
    /// The per-hop block of routing function `r` (paper §V): the child's stack is the
    /// target's arguments, its block index, then the final destination on top. At the
    /// destination, drop it and jump to the block; elsewhere push `r(destination)` and
    /// `forwto` it, which rewrites the header's destination, hence the copy on the stack.
    /// A next hop that is this node itself (but not the destination) ends the packet.
    pub(super) fn route_block(&mut self, r: &FunDef) -> Result<(), PlanError> {
        let label = format!("R{}", self.routes.len());
        let _ = writeln!(
            self.code,
            "{label}:                             ; per-hop preamble routing by {}",
            r.name
        );
        self.routes.insert(r.name.clone(), label);
        let fwd = self.label();
        self.env = Vec::new();
        self.depth = 2; // [entry dest]
        self.op("pull", 0);
        self.op("ishere", "");
        self.op("bez", &fwd);
        self.op("pop", "");
        let here = self.count;
        self.op("paj", format!("-{here}")); // pc = here + (-here + entry) = entry
        self.place(&fwd);
        self.op("pull", 0);
        self.depth += 1;
        self.inline(r)?; // [entry dest next]
        self.op("forwto", "");
        self.op("exit", "");
        Ok(())
    }

    #[inline(never)]
    fn on_remote(
        &mut self,
        func: &str,
        args: &[Expr],
        dest: &Expr,
        rb: &Expr,
        route: &str,
    ) -> Result<(), PlanError> {
        self.chunk(func, args)?;
        if let (Some(r), Some(entry)) = (self.fns.get(route).copied(), self.routes.get(route)) {
            // [args f dest], entering the routing block, sent to r(dest): the routing
            // function picks the first hop too. Stack for `send`: entry, count, bound, hop.
            let entry = entry.clone();
            self.expr(dest)?;
            self.push(entry);
            let n = args.len() + 2;
            self.push(n);
            // The first hop before the bound, so what the routing function itself sends
            // is already spent when `rb` (say `getRB()`) is read.
            self.op("pull", 2);
            self.depth += 1;
            self.inline(r)?;
            self.expr(rb)?;
            self.op("swap", "");
            self.send_dropping(n as u32);
            return Ok(());
        }
        self.push("defaultRoute");
        let n = args.len() + 1;
        self.push(n);
        self.expr(rb)?;
        self.expr(dest)?;
        self.send_dropping(n as u32);
        Ok(())
    }

    /// `RetransOnRemote(|f|(args), dest, rb, route, k)`: SNAP nodes have no timer, so the
    /// `k` tries are sent up front, each with `rb div k`. The arguments, the share and the
    /// destination are computed once (in that order) and copied into each send.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn on_remote_copies(
        &mut self,
        func: &str,
        args: &[Expr],
        dest: &Expr,
        rb: &Expr,
        route: &str,
        copies: u32,
    ) -> Result<(), PlanError> {
        let base = self.depth;
        for a in args {
            self.expr(a)?;
        }
        self.expr(rb)?;
        self.op("divi", copies);
        self.expr(dest)?; // [args share dest]
        let n = args.len() as u32;
        let (share, dst) = (base + n, base + n + 1);
        let label = self.block_label(func);
        let routed = match (self.fns.get(route).copied(), self.routes.get(route)) {
            (Some(r), Some(entry)) => Some((r, entry.clone())),
            _ => None,
        };
        for _ in 0..copies {
            for i in 0..n {
                self.pull_slot(base + i);
            }
            self.push(&label);
            let count = if let Some((r, entry)) = &routed {
                // As `on_remote`: [args f dest entry count r(dest) share], then swapped.
                self.pull_slot(dst);
                self.push(entry);
                self.push(n + 2);
                self.pull_slot(dst);
                self.inline(r)?;
                self.pull_slot(share);
                self.op("swap", "");
                n + 2
            } else {
                self.push("defaultRoute");
                self.push(n + 1);
                self.pull_slot(share);
                self.pull_slot(dst);
                n + 1
            };
            self.op("send", "");
            self.depth -= 3;
            self.op("popi", count + 1);
            self.depth -= count + 1;
        }
        self.push(0);
        self.slide(n + 2);
        Ok(())
    }

    /// `send` (its four operands on top), then drops the `n` stack values below its result
    /// (the child's copy). The result (1) stands for unit, which nothing compares: the
    /// checker refuses `=` on unit.
    fn send_dropping(&mut self, n: u32) {
        self.op("send", "");
        self.depth -= 3;
        self.slide(n);
    }

    /// PLAN's chunk `|f|(args)` on the stack: the arguments, then `f`'s block index.
    fn chunk(&mut self, func: &str, args: &[Expr]) -> Result<(), PlanError> {
        for a in args {
            self.expr(a)?;
        }
        let label = self.block_label(func);
        self.push(label);
        Ok(())
    }

    /// `OnRemote` or `OnNeighbor` (out of line: `expr_inner`'s frame stays small).
    #[inline(never)]
    pub(super) fn send(&mut self, kind: &ExprKind) -> Result<(), PlanError> {
        match kind {
            ExprKind::OnRemote {
                func,
                args,
                dest,
                rb,
                route,
                copies,
                ..
            } if *copies > 1 => self.on_remote_copies(func, args, dest, rb, route, *copies),
            ExprKind::OnRemote {
                func,
                args,
                dest,
                rb,
                route,
                ..
            } => self.on_remote(func, args, dest, rb, route),
            ExprKind::OnNeighbor {
                func,
                args,
                dest,
                rb,
            } => self.on_neighbor(func, args, dest, rb),
            _ => Ok(()),
        }
    }

    /// One hop: a child with just `args`, entering `f`'s block itself (no preamble, no
    /// index on its stack), `send` to the neighbour.
    #[inline(never)]
    fn on_neighbor(
        &mut self,
        func: &str,
        args: &[Expr],
        dest: &Expr,
        rb: &Expr,
    ) -> Result<(), PlanError> {
        self.chunk(func, args)?;
        let n = args.len();
        self.push(n);
        self.expr(rb)?;
        self.expr(dest)?;
        self.send_dropping(n as u32);
        Ok(())
    }
}
