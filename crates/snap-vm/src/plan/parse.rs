//! The parser: tokens to [`FunDef`]s, by recursive descent with a nesting limit (so no
//! input can overflow the stack, here or in the passes after).
//!
//! Precedence, loosest first: `orelse`, `andalso`, comparisons (`= <> < <= > >=`), `::`
//! (right-associative), `+ -`, `*`, prefix `not` / `~` / `-`, then atoms and calls. `if`
//! and `let` are atoms whose last part reaches as far right as it can.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::ast::{BinOp, Expr, ExprKind, FunDef, Pos, Ty};
use super::error::{PlanError, syntax};
use super::lex::{Tok, lex};

/// Deepest nesting the parser accepts (each level of brackets, operators chained or
/// `val`s counts one).
pub(crate) const MAX_NESTING: u32 = 64;

/// Parses a whole program: one or more `fun` definitions.
pub(crate) fn parse(src: &str) -> Result<Vec<FunDef>, PlanError> {
    let mut p = Parser {
        toks: lex(src)?,
        i: 0,
        depth: 0,
    };
    let mut funs = Vec::new();
    while p.peek() != &Tok::Eof {
        funs.push(p.fun()?);
    }
    if funs.is_empty() {
        return Err(syntax(p.pos(), "expected `fun`"));
    }
    Ok(funs)
}

/// A service signature `name(ty, …): ty`: its name, parameter types and result.
pub(crate) fn service(src: &str) -> Result<(String, Vec<Ty>, Ty), PlanError> {
    let mut p = Parser {
        toks: lex(src)?,
        i: 0,
        depth: 0,
    };
    let (name, _) = p.ident()?;
    p.expect("(")?;
    let mut params = Vec::new();
    if !p.is(")") {
        loop {
            params.push(p.ty()?);
            if !p.eat(",") {
                break;
            }
        }
    }
    p.expect(")")?;
    p.expect(":")?;
    let result = p.ty()?;
    if p.peek() != &Tok::Eof {
        return Err(syntax(
            p.pos(),
            format!("expected the end, found {}", describe(p.peek())),
        ));
    }
    Ok((name, params, result))
}

struct Parser {
    toks: Vec<(Tok, Pos)>,
    i: usize,
    depth: u32,
}

const KEYWORDS: [&str; 20] = [
    "fun",
    "val",
    "let",
    "in",
    "end",
    "if",
    "then",
    "else",
    "andalso",
    "orelse",
    "not",
    "true",
    "false",
    "foldl",
    "foldr",
    "OnRemote",
    "OnNeighbor",
    "RetransOnRemote",
    "div",
    "mod",
];

fn describe(t: &Tok) -> String {
    match t {
        Tok::Int(n) => n.to_string(),
        Tok::Str(_) => "a string".into(),
        Tok::Host(h) => format!("{}.{}.{}.{}", h[0], h[1], h[2], h[3]),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Eof => "the end of the text".into(),
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.i).map_or(&Tok::Eof, |t| &t.0)
    }

    fn pos(&self) -> Pos {
        self.toks
            .get(self.i)
            .or(self.toks.last())
            .map_or(Pos::default(), |t| t.1)
    }

    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.i < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
            || matches!(self.peek(), Tok::Ident(s) if s == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        let yes = self.is(p);
        if yes {
            self.bump();
        }
        yes
    }

    fn expect(&mut self, p: &str) -> Result<(), PlanError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(syntax(
                self.pos(),
                format!("expected `{p}`, found {}", describe(self.peek())),
            ))
        }
    }

    fn ident(&mut self) -> Result<(String, Pos), PlanError> {
        let pos = self.pos();
        match self.peek() {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                let s = s.clone();
                self.bump();
                Ok((s, pos))
            }
            t => Err(syntax(
                pos,
                format!("expected a name, found {}", describe(t)),
            )),
        }
    }

    fn nest(&mut self) -> Result<(), PlanError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(PlanError::TooLarge {
                line: self.pos().line,
                col: self.pos().col,
            });
        }
        Ok(())
    }

    fn fun(&mut self) -> Result<FunDef, PlanError> {
        let pos = self.pos();
        self.expect("fun")?;
        let (name, _) = self.ident()?;
        self.expect("(")?;
        let mut params = Vec::new();
        if !self.is(")") {
            loop {
                let (x, _) = self.ident()?;
                self.expect(":")?;
                params.push((x, self.ty()?));
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect(")")?;
        self.expect("=")?;
        let body = self.expr()?;
        Ok(FunDef {
            name,
            pos,
            params,
            body,
        })
    }

    /// `t1 * t2 * …` (a tuple type when there are two or more).
    pub(crate) fn ty(&mut self) -> Result<Ty, PlanError> {
        let saved = self.depth;
        self.nest()?;
        let mut fields = alloc::vec![self.ty_atom()?];
        while self.eat("*") {
            fields.push(self.ty_atom()?);
        }
        self.depth = saved;
        Ok(if fields.len() == 1 {
            fields.pop().unwrap_or(Ty::Unit)
        } else {
            Ty::Tuple(fields)
        })
    }

    /// A base type or `(ty)`, then any number of `list`s.
    fn ty_atom(&mut self) -> Result<Ty, PlanError> {
        let pos = self.pos();
        let mut t = match self.bump() {
            Tok::Punct("(") => {
                let t = self.ty()?;
                self.expect(")")?;
                t
            }
            Tok::Ident(s) => match s.as_str() {
                "int" => Ty::Int,
                "bool" => Ty::Bool,
                "host" => Ty::Host,
                "blob" | "string" => Ty::Blob,
                "unit" => Ty::Unit,
                "word" => Ty::Word,
                _ => return Err(syntax(pos, format!("unknown type `{s}`"))),
            },
            t => {
                return Err(syntax(
                    pos,
                    format!("expected a type, found {}", describe(&t)),
                ));
            }
        };
        while self.eat("list") {
            self.nest()?;
            t = Ty::List(Box::new(t));
        }
        Ok(t)
    }

    /// A full expression (with nesting counted).
    fn expr(&mut self) -> Result<Expr, PlanError> {
        let saved = self.depth;
        self.nest()?;
        let e = self.orelse();
        self.depth = saved;
        e
    }

    fn chain(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Parser) -> Result<Expr, PlanError>,
    ) -> Result<Expr, PlanError> {
        let saved = self.depth;
        let mut l = next(self)?;
        'outer: loop {
            for &(sym, op) in ops {
                if self.is(sym) {
                    self.nest()?;
                    self.bump();
                    let r = next(self)?;
                    let pos = l.pos;
                    l = bin(op, l, r, pos);
                    continue 'outer;
                }
            }
            break;
        }
        self.depth = saved;
        Ok(l)
    }

    fn orelse(&mut self) -> Result<Expr, PlanError> {
        self.chain(&[("orelse", BinOp::Or)], Parser::andalso)
    }

    fn andalso(&mut self) -> Result<Expr, PlanError> {
        self.chain(&[("andalso", BinOp::And)], Parser::compare)
    }

    fn compare(&mut self) -> Result<Expr, PlanError> {
        let l = self.cons()?;
        let ops = [
            ("=", BinOp::Eq),
            ("<>", BinOp::Ne),
            ("<=", BinOp::Le),
            (">=", BinOp::Ge),
            ("<", BinOp::Lt),
            (">", BinOp::Gt),
        ];
        for (sym, op) in ops {
            if self.is(sym) {
                self.bump();
                let r = self.cons()?;
                let pos = l.pos;
                return Ok(bin(op, l, r, pos));
            }
        }
        Ok(l)
    }

    fn cons(&mut self) -> Result<Expr, PlanError> {
        let saved = self.depth;
        let mut items = alloc::vec![self.additive()?];
        while self.eat("::") {
            self.nest()?;
            items.push(self.additive()?);
        }
        self.depth = saved;
        let mut e = items
            .pop()
            .ok_or_else(|| syntax(self.pos(), "expected an expression"))?;
        while let Some(h) = items.pop() {
            let pos = h.pos;
            e = bin(BinOp::Cons, h, e, pos);
        }
        Ok(e)
    }

    fn additive(&mut self) -> Result<Expr, PlanError> {
        self.chain(
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            Parser::multiplicative,
        )
    }

    fn multiplicative(&mut self) -> Result<Expr, PlanError> {
        self.chain(
            &[("*", BinOp::Mul), ("div", BinOp::Div), ("mod", BinOp::Mod)],
            Parser::unary,
        )
    }

    fn unary(&mut self) -> Result<Expr, PlanError> {
        let pos = self.pos();
        if self.eat("not") {
            self.nest()?;
            let e = self.unary()?;
            return Ok(Expr {
                kind: ExprKind::Not(Box::new(e)),
                pos,
            });
        }
        if self.eat("~") || self.eat("-") {
            self.nest()?;
            let e = self.unary()?;
            return Ok(Expr {
                kind: ExprKind::Neg(Box::new(e)),
                pos,
            });
        }
        self.atom()
    }

    fn args(&mut self) -> Result<Vec<Expr>, PlanError> {
        self.expect("(")?;
        let mut args = Vec::new();
        if !self.is(")") {
            loop {
                args.push(self.expr()?);
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect(")")?;
        Ok(args)
    }

    fn atom(&mut self) -> Result<Expr, PlanError> {
        let pos = self.pos();
        let kind = match self.peek() {
            Tok::Int(n) => {
                let n = *n;
                self.bump();
                ExprKind::Int(n)
            }
            Tok::Host(h) => {
                let h = *h;
                self.bump();
                ExprKind::Host(h)
            }
            Tok::Str(_) => match self.bump() {
                Tok::Str(s) => ExprKind::Str(s),
                _ => ExprKind::Unit,
            },
            Tok::Punct("(") => return self.paren(pos),
            Tok::Punct("#") => self.proj()?,
            Tok::Punct("[") => self.list()?,
            Tok::Ident(s) => match s.as_str() {
                "true" | "false" => {
                    let b = s == "true";
                    self.bump();
                    ExprKind::Bool(b)
                }
                "if" => self.if_expr()?,
                "let" => return self.let_expr(),
                "foldl" | "foldr" => self.fold()?,
                "OnRemote" | "RetransOnRemote" => self.on_remote()?,
                "OnNeighbor" => self.on_neighbor()?,
                _ => self.call_or_var()?,
            },
            t => {
                return Err(syntax(
                    pos,
                    format!("expected an expression, found {}", describe(t)),
                ));
            }
        };
        Ok(Expr { kind, pos })
    }

    // The atoms apart, so each frame of the descent stays small (unoptimised builds give
    // every arm of one big match its own stack slots).
    #[inline(never)]
    fn paren(&mut self, pos: Pos) -> Result<Expr, PlanError> {
        self.bump();
        if self.eat(")") {
            return Ok(Expr {
                kind: ExprKind::Unit,
                pos,
            });
        }
        let mut items = alloc::vec![self.expr()?];
        let tuple = self.is(",");
        let sep = if tuple { "," } else { ";" };
        while self.eat(sep) {
            items.push(self.expr()?);
        }
        self.expect(")")?;
        Ok(Expr {
            kind: match items.len() {
                1 => {
                    return items
                        .pop()
                        .ok_or_else(|| syntax(pos, "expected an expression"));
                }
                _ if tuple => ExprKind::Tuple(items),
                _ => ExprKind::Seq(items),
            },
            pos,
        })
    }

    /// `#i e`: a tuple's field `i`, from 1.
    #[inline(never)]
    fn proj(&mut self) -> Result<ExprKind, PlanError> {
        self.bump();
        let pos = self.pos();
        let i = match self.bump() {
            Tok::Int(i) if (1..=i64::from(u16::MAX)).contains(&i) => i as u32,
            t => {
                return Err(syntax(
                    pos,
                    format!("expected a field number after `#`, found {}", describe(&t)),
                ));
            }
        };
        self.nest()?;
        let e = self.atom()?;
        Ok(ExprKind::Proj(i, Box::new(e)))
    }

    #[inline(never)]
    fn list(&mut self) -> Result<ExprKind, PlanError> {
        self.bump();
        let mut items = Vec::new();
        if !self.is("]") {
            loop {
                items.push(self.expr()?);
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect("]")?;
        Ok(ExprKind::List(items))
    }

    #[inline(never)]
    fn if_expr(&mut self) -> Result<ExprKind, PlanError> {
        self.bump();
        let c = self.expr()?;
        self.expect("then")?;
        let t = self.expr()?;
        self.expect("else")?;
        let f = self.expr()?;
        Ok(ExprKind::If(Box::new(c), Box::new(t), Box::new(f)))
    }

    #[inline(never)]
    fn let_expr(&mut self) -> Result<Expr, PlanError> {
        self.bump();
        let saved = self.depth;
        let mut vals = Vec::new();
        while self.is("val") {
            self.nest()?;
            let vpos = self.pos();
            self.bump();
            let (x, _) = self.ident()?;
            self.expect("=")?;
            vals.push((x, self.expr()?, vpos));
        }
        if vals.is_empty() {
            return Err(syntax(self.pos(), "expected `val`"));
        }
        self.expect("in")?;
        let mut body = self.expr()?;
        self.expect("end")?;
        self.depth = saved;
        while let Some((x, v, vpos)) = vals.pop() {
            body = Expr {
                kind: ExprKind::Let(x, Box::new(v), Box::new(body)),
                pos: vpos,
            };
        }
        Ok(body)
    }

    #[inline(never)]
    fn fold(&mut self) -> Result<ExprKind, PlanError> {
        let right = self.bump() == Tok::Ident("foldr".into());
        self.expect("(")?;
        let (func, _) = self.ident()?;
        self.expect(",")?;
        let init = self.expr()?;
        self.expect(",")?;
        let list = self.expr()?;
        self.expect(")")?;
        Ok(ExprKind::Fold {
            func,
            init: Box::new(init),
            list: Box::new(list),
            right,
        })
    }

    /// What `OnRemote` and `OnNeighbor` share, after their name: `(|f|(args), dest, rb`.
    fn send_args(&mut self) -> Result<(String, Vec<Expr>, Expr, Expr), PlanError> {
        self.bump();
        self.expect("(")?;
        self.expect("|")?;
        let (func, _) = self.ident()?;
        self.expect("|")?;
        let args = self.args()?;
        self.expect(",")?;
        let dest = self.expr()?;
        self.expect(",")?;
        let rb = self.expr()?;
        Ok((func, args, dest, rb))
    }

    #[inline(never)]
    fn on_neighbor(&mut self) -> Result<ExprKind, PlanError> {
        let (func, args, dest, rb) = self.send_args()?;
        self.expect(")")?;
        Ok(ExprKind::OnNeighbor {
            func,
            args,
            dest: Box::new(dest),
            rb: Box::new(rb),
        })
    }

    /// `OnRemote(|f|(args), dest, rb, route)` or `RetransOnRemote(…, route, tries)`, whose
    /// tries are a literal (the copies are unrolled).
    #[inline(never)]
    fn on_remote(&mut self) -> Result<ExprKind, PlanError> {
        let retrans = self.is("RetransOnRemote");
        let (func, args, dest, rb) = self.send_args()?;
        self.expect(",")?;
        let (route, route_pos) = self.ident()?;
        let mut copies = 1;
        if retrans {
            self.expect(",")?;
            let pos = self.pos();
            copies = match self.bump() {
                Tok::Int(n) if (1..=i64::from(u16::MAX)).contains(&n) => n as u32,
                t => {
                    return Err(syntax(
                        pos,
                        format!(
                            "`RetransOnRemote` takes its tries as a positive integer literal, found {}",
                            describe(&t)
                        ),
                    ));
                }
            };
        }
        self.expect(")")?;
        Ok(ExprKind::OnRemote {
            func,
            args,
            dest: Box::new(dest),
            rb: Box::new(rb),
            route,
            route_pos,
            copies,
        })
    }

    #[inline(never)]
    fn call_or_var(&mut self) -> Result<ExprKind, PlanError> {
        let (name, _) = self.ident()?;
        if self.is("(") {
            Ok(ExprKind::Call(name, self.args()?))
        } else {
            Ok(ExprKind::Var(name))
        }
    }
}

fn bin(op: BinOp, l: Expr, r: Expr, pos: Pos) -> Expr {
    Expr {
        kind: ExprKind::Bin(op, Box::new(l), Box::new(r)),
        pos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_associativity() {
        let f = parse("fun f(x:int) = 1 + x * 2 :: 3 :: [] = [] orelse true").unwrap();
        let ExprKind::Bin(BinOp::Or, l, _) = &f[0].body.kind else {
            panic!("{:?}", f[0].body)
        };
        let ExprKind::Bin(BinOp::Eq, l, _) = &l.kind else {
            panic!()
        };
        let ExprKind::Bin(BinOp::Cons, h, t) = &l.kind else {
            panic!()
        };
        assert!(matches!(h.kind, ExprKind::Bin(BinOp::Add, _, _)));
        assert!(matches!(t.kind, ExprKind::Bin(BinOp::Cons, _, _)));
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse("fun f(x:int) =\n  if x then 1 2").unwrap_err();
        assert_eq!(
            e,
            PlanError::Syntax {
                line: 2,
                col: 15,
                message: "expected `else`, found 2".into()
            }
        );
        let e = parse("fun f(x:real) = x").unwrap_err();
        assert!(
            matches!(
                e,
                PlanError::Syntax {
                    line: 1,
                    col: 9,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = alloc::format!("fun f() = {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(matches!(parse(&deep), Err(PlanError::TooLarge { .. })));
        let long = alloc::format!("fun f() = 1{}", " + 1".repeat(5000));
        assert!(matches!(parse(&long), Err(PlanError::TooLarge { .. })));
        let conses = alloc::format!("fun f() = {}[]", "1 :: ".repeat(5000));
        assert!(matches!(parse(&conses), Err(PlanError::TooLarge { .. })));
    }
}
