//! Type checking, and the rules that make a PLAN program compilable to SNAP: no recursion
//! (direct or mutual), list literals no longer than the fold bound, integers that fit
//! SNAP's 25 bits, calls only to PLAN functions, primitives and known services.
//!
//! Functions are checked callees first (the call graph is acyclic), so each function's
//! result type is known where it is called. The checker also rewrites `=` / `<>` on hosts
//! to [`BinOp::HostEq`] / [`BinOp::HostNe`], which compile to `aeq`, and arithmetic and
//! comparisons on words to [`BinOp::Word`].

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::Options;
use super::ast::{BinOp, Expr, ExprKind, FunDef, Pos, Ty, WordOp};
use super::error::{PlanError, type_err};
use crate::value::{INT_MAX, INT_MIN};

/// The primitives and their `(parameter types, result)`; `None` parameters are checked by
/// hand (`hd`, `tl`, `null`, `deliverUDP`).
pub(crate) fn primitive(name: &str) -> Option<Option<(Vec<Ty>, Ty)>> {
    Some(match name {
        "getSrc" | "getDst" | "thisHost" => Some((Vec::new(), Ty::Host)),
        "getRB" => Some((Vec::new(), Ty::Int)),
        "toWord" => Some((alloc::vec![Ty::Int], Ty::Word)),
        "hd" | "tl" | "null" | "deliverUDP" => None,
        _ => return None,
    })
}

/// Whether `a` and `b` fit, and the more precise of the two.
fn unify(a: &Ty, b: &Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Any, t) | (t, Ty::Any) => Some(t.clone()),
        (Ty::List(a), Ty::List(b)) => unify(a, b).map(|t| Ty::List(Box::new(t))),
        (Ty::Tuple(a), Ty::Tuple(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .map(|(a, b)| unify(a, b))
            .collect::<Option<Vec<_>>>()
            .map(Ty::Tuple),
        (a, b) if a == b => Some(a.clone()),
        _ => None,
    }
}

/// Rejects recursion: a call-graph cycle (calls and `foldl` iterators; `OnRemote` only
/// sends, it does not call) is reported with its names. Returns callees-first order.
fn order(funs: &[FunDef]) -> Result<Vec<usize>, PlanError> {
    let index: BTreeMap<&str, usize> = funs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let mut edges: Vec<Vec<usize>> = Vec::new();
    for f in funs {
        let mut out = Vec::new();
        calls(&f.body, &mut |name| {
            if let Some(&j) = index.get(name) {
                out.push(j);
            }
        });
        edges.push(out);
    }
    // Iterative depth-first search: 0 unvisited, 1 on the path, 2 done.
    let mut state = alloc::vec![0u8; funs.len()];
    let mut order = Vec::new();
    for root in 0..funs.len() {
        if state.get(root) != Some(&0) {
            continue;
        }
        let mut path: Vec<(usize, usize)> = alloc::vec![(root, 0)];
        if let Some(s) = state.get_mut(root) {
            *s = 1;
        }
        while let Some(&mut (node, ref mut next)) = path.last_mut() {
            let succ = edges.get(node).and_then(|e| e.get(*next)).copied();
            *next += 1;
            match succ {
                Some(s) if state.get(s) == Some(&1) => {
                    let start = path.iter().position(|&(n, _)| n == s).unwrap_or(0);
                    let mut cycle: Vec<String> = path
                        .get(start..)
                        .unwrap_or(&[])
                        .iter()
                        .filter_map(|&(n, _)| funs.get(n).map(|f| f.name.clone()))
                        .collect();
                    let first = funs.get(s);
                    cycle.push(first.map(|f| f.name.clone()).unwrap_or_default());
                    let pos = first.map_or(Pos::default(), |f| f.pos);
                    return Err(PlanError::Recursion {
                        line: pos.line,
                        col: pos.col,
                        cycle,
                    });
                }
                Some(s) if state.get(s) == Some(&0) => {
                    if let Some(st) = state.get_mut(s) {
                        *st = 1;
                    }
                    path.push((s, 0));
                }
                Some(_) => {}
                None => {
                    if let Some(st) = state.get_mut(node) {
                        *st = 2;
                    }
                    order.push(node);
                    path.pop();
                }
            }
        }
    }
    Ok(order)
}

/// Every name `e` calls (or folds with).
fn calls(e: &Expr, f: &mut dyn FnMut(&str)) {
    match &e.kind {
        ExprKind::Call(name, _) => f(name),
        // The routing function is inlined at the send, so it is a callee.
        ExprKind::OnRemote { route, .. } => f(route),
        ExprKind::Fold { func, .. } => f(func),
        _ => {}
    }
    e.for_each_child(&mut |c| calls(c, f));
}

/// Checks every function (rewriting host comparisons in place); returns the result types.
pub(crate) fn check(
    funs: &mut [FunDef],
    opts: &Options,
) -> Result<BTreeMap<String, Ty>, PlanError> {
    let mut seen: BTreeMap<&str, ()> = BTreeMap::new();
    for f in funs.iter() {
        if seen.insert(&f.name, ()).is_some() || primitive(&f.name).is_some() {
            return Err(PlanError::Unsupported {
                line: f.pos.line,
                col: f.pos.col,
                message: format!("function `{}` defined twice, or a primitive's name", f.name),
            });
        }
    }
    let order = order(funs)?;
    let sigs: BTreeMap<String, Vec<Ty>> = funs
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                f.params.iter().map(|p| p.1.clone()).collect(),
            )
        })
        .collect();
    let mut results = BTreeMap::new();
    for i in order {
        let Some(f) = funs.get_mut(i) else { continue };
        let mut c = Checker {
            sigs: &sigs,
            results: &results,
            opts,
            env: f.params.clone(),
        };
        let t = c.expr(&mut f.body)?;
        results.insert(f.name.clone(), t);
    }
    Ok(results)
}

struct Checker<'a> {
    sigs: &'a BTreeMap<String, Vec<Ty>>,
    results: &'a BTreeMap<String, Ty>,
    opts: &'a Options,
    env: Vec<(String, Ty)>,
}

impl Checker<'_> {
    fn want(&mut self, e: &mut Expr, t: &Ty, what: &str) -> Result<Ty, PlanError> {
        let got = self.expr(e)?;
        unify(&got, t).ok_or_else(|| type_err(e.pos, format!("{what} must be {t}, found {got}")))
    }

    fn args(
        &mut self,
        name: &str,
        pos: Pos,
        params: &[Ty],
        args: &mut [Expr],
    ) -> Result<(), PlanError> {
        if params.len() != args.len() {
            return Err(type_err(
                pos,
                format!(
                    "`{name}` takes {} arguments, given {}",
                    params.len(),
                    args.len()
                ),
            ));
        }
        for (k, (p, a)) in params.iter().zip(args.iter_mut()).enumerate() {
            self.want(a, p, &format!("argument {} of `{name}`", k + 1))?;
        }
        Ok(())
    }

    fn list_elem(&mut self, e: &mut Expr, name: &str) -> Result<Ty, PlanError> {
        match self.expr(e)? {
            Ty::List(t) => Ok(*t),
            Ty::Any => Ok(Ty::Any),
            t => Err(type_err(e.pos, format!("`{name}` needs a list, found {t}"))),
        }
    }

    /// Checks that `route` is a routing function: a PLAN function `(d: host)` whose result
    /// is a host, the next hop toward `d`.
    fn route(&self, route: &str, pos: Pos) -> Result<(), PlanError> {
        let params = self.sigs.get(route).ok_or_else(|| PlanError::Unsupported {
            line: pos.line,
            col: pos.col,
            message: format!(
                "routing function `{route}`: neither defaultRoute nor a PLAN function"
            ),
        })?;
        let res = self.results.get(route).cloned().unwrap_or(Ty::Any);
        if params.as_slice() != [Ty::Host] || unify(&res, &Ty::Host).is_none() {
            return Err(type_err(
                pos,
                format!("routing function `{route}` must take one host and return a host"),
            ));
        }
        Ok(())
    }

    fn expr(&mut self, e: &mut Expr) -> Result<Ty, PlanError> {
        let pos = e.pos;
        Ok(match &mut e.kind {
            ExprKind::Int(n) => {
                if *n < i64::from(INT_MIN) || *n > i64::from(INT_MAX) {
                    return Err(PlanError::Unsupported {
                        line: pos.line,
                        col: pos.col,
                        message: format!("{n} does not fit SNAP's 25-bit integers"),
                    });
                }
                Ty::Int
            }
            ExprKind::Bool(_) => Ty::Bool,
            ExprKind::Str(_) => Ty::Blob,
            ExprKind::Host(_) => Ty::Host,
            ExprKind::Unit => Ty::Unit,
            ExprKind::Var(x) => self
                .env
                .iter()
                .rev()
                .find(|(y, _)| y == x)
                .map(|(_, t)| t.clone())
                .ok_or_else(|| PlanError::UnknownVariable {
                    line: pos.line,
                    col: pos.col,
                    name: x.clone(),
                })?,
            ExprKind::Let(x, v, body) => {
                let t = self.expr(v)?;
                self.env.push((x.clone(), t));
                let r = self.expr(body);
                self.env.pop();
                r?
            }
            ExprKind::If(c, t, f) => {
                self.want(c, &Ty::Bool, "the condition of `if`")?;
                let a = self.expr(t)?;
                let b = self.expr(f)?;
                unify(&a, &b)
                    .ok_or_else(|| type_err(f.pos, format!("`if` branches differ: {a} and {b}")))?
            }
            ExprKind::Bin(op, l, r) => {
                let op0 = *op;
                match op0 {
                    BinOp::Add
                    | BinOp::Sub
                    | BinOp::Mul
                    | BinOp::Div
                    | BinOp::Mod
                    | BinOp::Lt
                    | BinOp::Le
                    | BinOp::Gt
                    | BinOp::Ge => {
                        let what = format!("an operand of `{}`", op0.symbol());
                        let left = self.expr(l)?;
                        if let (Ty::Word, Some(w)) = (&left, WordOp::of(op0)) {
                            let what = format!("the right operand of `{}` on words", op0.symbol());
                            self.want(r, &Ty::Word, &what)?;
                            *op = BinOp::Word(w);
                            return Ok(if w.compares() { Ty::Bool } else { Ty::Word });
                        }
                        unify(&left, &Ty::Int).ok_or_else(|| {
                            type_err(l.pos, format!("{what} must be int, found {left}"))
                        })?;
                        self.want(r, &Ty::Int, &what)?;
                        if matches!(
                            op0,
                            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod
                        ) {
                            Ty::Int
                        } else {
                            Ty::Bool
                        }
                    }
                    BinOp::And | BinOp::Or => {
                        let what = format!("an operand of `{}`", op0.symbol());
                        self.want(l, &Ty::Bool, &what)?;
                        self.want(r, &Ty::Bool, &what)?;
                        Ty::Bool
                    }
                    BinOp::Eq | BinOp::Ne | BinOp::HostEq | BinOp::HostNe => {
                        let a = self.expr(l)?;
                        let b = self.expr(r)?;
                        let t = unify(&a, &b).ok_or_else(|| {
                            type_err(r.pos, format!("`{}` compares {a} with {b}", op0.symbol()))
                        })?;
                        let eq = matches!(op0, BinOp::Eq | BinOp::HostEq);
                        match t {
                            Ty::Int | Ty::Bool => {}
                            Ty::Word => {
                                *op = BinOp::Word(if eq { WordOp::Eq } else { WordOp::Ne });
                            }
                            Ty::Host => *op = if eq { BinOp::HostEq } else { BinOp::HostNe },
                            t => {
                                return Err(type_err(
                                    pos,
                                    format!(
                                        "`{}` on {t} is not supported (only int, bool, host, word)",
                                        op0.symbol()
                                    ),
                                ));
                            }
                        }
                        Ty::Bool
                    }
                    // Only the checker makes these, from the operators above.
                    BinOp::Word(w) => {
                        self.want(l, &Ty::Word, "an operand")?;
                        self.want(r, &Ty::Word, "an operand")?;
                        if w.compares() { Ty::Bool } else { Ty::Word }
                    }
                    BinOp::Cons => {
                        let h = self.expr(l)?;
                        let t = self.want(r, &Ty::List(Box::new(h.clone())), "the tail of `::`")?;
                        unify(&t, &Ty::List(Box::new(h))).unwrap_or(t)
                    }
                }
            }
            ExprKind::Not(a) => {
                self.want(a, &Ty::Bool, "the operand of `not`")?;
                Ty::Bool
            }
            ExprKind::Neg(a) => {
                self.want(a, &Ty::Int, "the operand of `~`")?;
                Ty::Int
            }
            ExprKind::List(items) => {
                if self.opts.fold_bound > 0 && items.len() > self.opts.fold_bound as usize {
                    return Err(PlanError::ListTooLong {
                        line: pos.line,
                        col: pos.col,
                        len: items.len(),
                        bound: self.opts.fold_bound,
                    });
                }
                let mut t = Ty::Any;
                for item in items.iter_mut() {
                    t = self.want(item, &t.clone(), "a list element")?;
                }
                Ty::List(Box::new(t))
            }
            ExprKind::Seq(items) => {
                let mut t = Ty::Unit;
                for item in items.iter_mut() {
                    t = self.expr(item)?;
                }
                t
            }
            ExprKind::Tuple(items) => {
                let mut ts = Vec::new();
                for item in items.iter_mut() {
                    ts.push(self.expr(item)?);
                }
                Ty::Tuple(ts)
            }
            ExprKind::Proj(i, t) => match self.expr(t)? {
                Ty::Tuple(ts) => (*i as usize)
                    .checked_sub(1)
                    .and_then(|k| ts.get(k))
                    .cloned()
                    .ok_or_else(|| {
                        type_err(pos, format!("`#{i}` of a tuple of {} fields", ts.len()))
                    })?,
                other => {
                    return Err(type_err(
                        t.pos,
                        format!("`#{i}` needs a tuple of known type, found {other}"),
                    ));
                }
            },
            ExprKind::Fold {
                func,
                init,
                list,
                right,
            } => self.fold(func, init, list, *right, pos)?,
            ExprKind::OnRemote {
                func,
                args,
                dest,
                rb,
                route,
                route_pos,
                copies,
            } => {
                if *copies > self.opts.fold_bound.max(1) {
                    return Err(type_err(
                        pos,
                        format!(
                            "`RetransOnRemote` with {copies} tries: more than the bound {} (the copies are unrolled)",
                            self.opts.fold_bound.max(1)
                        ),
                    ));
                }
                if route != "defaultRoute" {
                    self.route(route, *route_pos)?;
                }
                let Some(params) = self.sigs.get(func.as_str()) else {
                    return Err(type_err(
                        pos,
                        format!("`OnRemote` needs a PLAN function, `{func}` is none"),
                    ));
                };
                let name = func.clone();
                self.args(&name, pos, params, args)?;
                self.want(dest, &Ty::Host, "the destination of `OnRemote`")?;
                self.want(rb, &Ty::Int, "the resource bound of `OnRemote`")?;
                Ty::Unit
            }
            ExprKind::OnNeighbor {
                func,
                args,
                dest,
                rb,
            } => {
                let Some(params) = self.sigs.get(func.as_str()) else {
                    return Err(type_err(
                        pos,
                        format!("`OnNeighbor` needs a PLAN function, `{func}` is none"),
                    ));
                };
                let name = func.clone();
                self.args(&name, pos, params, args)?;
                self.want(dest, &Ty::Host, "the neighbour of `OnNeighbor`")?;
                self.want(rb, &Ty::Int, "the resource bound of `OnNeighbor`")?;
                Ty::Unit
            }
            ExprKind::Call(name, args) => {
                let name = name.clone();
                if let Some(params) = self.sigs.get(&name) {
                    self.args(&name, pos, params, args)?;
                    return Ok(self.results.get(&name).cloned().unwrap_or(Ty::Any));
                }
                match primitive(&name) {
                    Some(Some((params, res))) => {
                        self.args(&name, pos, &params, args)?;
                        res
                    }
                    Some(None) => self.special(&name, pos, args)?,
                    None => match self.opts.services.iter().find(|s| s.name == name) {
                        Some(sig) => {
                            self.args(&name, pos, &sig.params, args)?;
                            sig.result.clone()
                        }
                        None => {
                            return Err(PlanError::UnknownService {
                                line: pos.line,
                                col: pos.col,
                                name,
                            });
                        }
                    },
                }
            }
        })
    }

    /// `foldl(f, init, l)` with `f(acc: 'a, x: 'b): 'a`, or `foldr` with `f(x, acc)`.
    fn fold(
        &mut self,
        func: &str,
        init: &mut Expr,
        list: &mut Expr,
        right: bool,
        pos: Pos,
    ) -> Result<Ty, PlanError> {
        let name = if right { "foldr" } else { "foldl" };
        if self.opts.fold_bound == 0 && !matches!(list.kind, ExprKind::List(_)) {
            return Err(PlanError::Unsupported {
                line: list.pos.line,
                col: list.pos.col,
                message: format!(
                    "unbounded `{name}`: its list's length is not known here, and no fold bound was given (SNAP cannot loop; unrolling needs one)"
                ),
            });
        }
        let Some(params) = self.sigs.get(func) else {
            return Err(type_err(
                pos,
                format!("`{name}` needs a PLAN function, `{func}` is none"),
            ));
        };
        let (acc, x) = match (params.as_slice(), right) {
            ([acc, x], false) | ([x, acc], true) => (acc.clone(), x.clone()),
            _ => {
                return Err(type_err(
                    pos,
                    format!("`{name}`'s function `{func}` must take two arguments"),
                ));
            }
        };
        let res = self.results.get(func).cloned().unwrap_or(Ty::Any);
        unify(&res, &acc).ok_or_else(|| {
            type_err(
                pos,
                format!("`{func}` returns {res} but its accumulator is {acc}"),
            )
        })?;
        self.want(init, &acc, &format!("the initial value of `{name}`"))?;
        self.want(
            list,
            &Ty::List(Box::new(x)),
            &format!("the list of `{name}`"),
        )?;
        Ok(acc)
    }

    /// `hd`, `tl`, `null`, `deliverUDP`.
    fn special(&mut self, name: &str, pos: Pos, args: &mut [Expr]) -> Result<Ty, PlanError> {
        let want = if name == "deliverUDP" { 2 } else { 1 };
        if args.len() != want {
            return Err(type_err(
                pos,
                format!("`{name}` takes {want} arguments, given {}", args.len()),
            ));
        }
        Ok(match (name, args) {
            ("hd", [l]) => self.list_elem(l, name)?,
            ("tl", [l]) => Ty::List(Box::new(self.list_elem(l, name)?)),
            ("null", [l]) => {
                self.list_elem(l, name)?;
                Ty::Bool
            }
            (_, [v, port]) => {
                self.expr(v)?;
                self.want(port, &Ty::Int, "the port of `deliverUDP`")?;
                Ty::Unit
            }
            _ => return Err(type_err(pos, format!("bad call of `{name}`"))),
        })
    }
}
