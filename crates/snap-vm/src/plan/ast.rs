//! The syntax tree of the PLAN subset, every node with its source position.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// A source position: line and column, both counting from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column (in characters), from 1.
    pub col: u32,
}

/// A PLAN type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A 25-bit integer (SNAP's small integer).
    Int,
    /// A boolean (0 or 1 on the stack).
    Bool,
    /// A host address (a boxed SNAP address).
    Host,
    /// A byte array; `string` is the same type.
    Blob,
    /// The unit value (0 on the stack).
    Unit,
    /// A list (nil is 0, a cell is the tuple `(head, tail)`).
    List(Box<Ty>),
    /// A tuple `t1 * t2 * …` of two or more fields (a SNAP heap tuple).
    Tuple(Vec<Ty>),
    /// The element type of `[]`, compatible with every type.
    Any,
    /// A 64-bit unsigned word (a SNAP wide integer): an ESP tag or value, as microcode's
    /// operands and the `ess.*` services carry them ([`compile_micro`](super::compile_micro)).
    Word,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int => f.write_str("int"),
            Ty::Bool => f.write_str("bool"),
            Ty::Host => f.write_str("host"),
            Ty::Blob => f.write_str("blob"),
            Ty::Unit => f.write_str("unit"),
            Ty::List(t) => write!(f, "{t} list"),
            Ty::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" * ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
            Ty::Any => f.write_str("'a"),
            Ty::Word => f.write_str("word"),
        }
    }
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `div` (truncating toward zero, as SNAP's `div`; by zero ends the packet).
    Div,
    /// `mod` (the remainder of `div`, sign of the dividend).
    Mod,
    /// `=` on ints and bools.
    Eq,
    /// `<>` on ints and bools.
    Ne,
    /// `=` on hosts (the type checker rewrites `Eq` to it).
    HostEq,
    /// `<>` on hosts.
    HostNe,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `andalso` (short-circuit)
    And,
    /// `orelse` (short-circuit)
    Or,
    /// `::`
    Cons,
    /// An arithmetic or comparison operator on words (the type checker rewrites `+`, `-`,
    /// `*`, `=`, `<>`, `<`, `<=`, `>`, `>=` on words to it).
    Word(WordOp),
}

/// An operator on 64-bit words: arithmetic wraps (mod 2^64), comparisons are unsigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordOp {
    /// `+` (`wadd`)
    Add,
    /// `-` (`wsub`)
    Sub,
    /// `*` (`wmul`)
    Mul,
    /// `=` (`weq`)
    Eq,
    /// `<>`
    Ne,
    /// `<` (`wlt` on both sides biased by 2^63: unsigned)
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl WordOp {
    /// The word operator for `op` on words, if there is one.
    pub fn of(op: BinOp) -> Option<WordOp> {
        Some(match op {
            BinOp::Add => WordOp::Add,
            BinOp::Sub => WordOp::Sub,
            BinOp::Mul => WordOp::Mul,
            BinOp::Eq => WordOp::Eq,
            BinOp::Ne => WordOp::Ne,
            BinOp::Lt => WordOp::Lt,
            BinOp::Le => WordOp::Le,
            BinOp::Gt => WordOp::Gt,
            BinOp::Ge => WordOp::Ge,
            _ => return None,
        })
    }

    /// Whether it compares (a bool result) rather than computes (a word).
    pub fn compares(self) -> bool {
        !matches!(self, WordOp::Add | WordOp::Sub | WordOp::Mul)
    }
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "div",
            BinOp::Mod => "mod",
            BinOp::Eq | BinOp::HostEq => "=",
            BinOp::Ne | BinOp::HostNe => "<>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "andalso",
            BinOp::Or => "orelse",
            BinOp::Cons => "::",
            BinOp::Word(w) => match w {
                WordOp::Add => "+",
                WordOp::Sub => "-",
                WordOp::Mul => "*",
                WordOp::Eq => "=",
                WordOp::Ne => "<>",
                WordOp::Lt => "<",
                WordOp::Le => "<=",
                WordOp::Gt => ">",
                WordOp::Ge => ">=",
            },
        }
    }
}

/// An expression and where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it starts.
    pub pos: Pos,
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExprKind {
    /// An integer literal.
    Int(i64),
    /// `true` or `false`.
    Bool(bool),
    /// A string literal (a blob).
    Str(Vec<u8>),
    /// A host literal `a.b.c.d`.
    Host([u8; 4]),
    /// `()`
    Unit,
    /// A variable.
    Var(String),
    /// `let val x = e in body end` (several `val`s nest).
    Let(String, Box<Expr>, Box<Expr>),
    /// `if c then t else e`
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A binary operation.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `not e`
    Not(Box<Expr>),
    /// `~e` or `-e`
    Neg(Box<Expr>),
    /// `f(e, …)`: a PLAN function, a primitive or a service.
    Call(String, Vec<Expr>),
    /// `OnRemote(|f|(args), dest, rb, route)`
    OnRemote {
        /// The function run at `dest`.
        func: String,
        /// Its arguments.
        args: Vec<Expr>,
        /// Where.
        dest: Box<Expr>,
        /// How much resource bound to give.
        rb: Box<Expr>,
        /// The routing function's name: `defaultRoute`, or a PLAN function from the
        /// destination (`host`) to the next hop (`host`).
        route: String,
        /// Where the routing function is named.
        route_pos: Pos,
        /// Copies sent: 1 for `OnRemote`; `RetransOnRemote`'s tries, each sent up front
        /// with an equal share of `rb` (SNAP nodes keep no timer to retransmit by).
        copies: u32,
    },
    /// `OnNeighbor(|f|(args), neighbor, rb)`: one hop, no routing.
    OnNeighbor {
        /// The function run at `neighbor`.
        func: String,
        /// Its arguments.
        args: Vec<Expr>,
        /// The adjacent node.
        dest: Box<Expr>,
        /// How much resource bound to give.
        rb: Box<Expr>,
    },
    /// `foldl(f, init, list)` with `f(acc, x)`, or `foldr(f, init, list)` with `f(x, acc)`
    /// (from the last element).
    Fold {
        /// The iterator function.
        func: String,
        /// The initial accumulator.
        init: Box<Expr>,
        /// The list.
        list: Box<Expr>,
        /// `foldr`: from the right, the iterator's arguments swapped.
        right: bool,
    },
    /// `[e, …]`
    List(Vec<Expr>),
    /// `(e, e, …)`: a tuple of two or more fields.
    Tuple(Vec<Expr>),
    /// `#i e`: field `i` (from 1) of tuple `e`.
    Proj(u32, Box<Expr>),
    /// `(e; e; …)`
    Seq(Vec<Expr>),
}

/// `fun name(x: ty, …) = body`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunDef {
    /// Its name.
    pub name: String,
    /// Where `fun` stands.
    pub pos: Pos,
    /// Parameters and their types.
    pub params: Vec<(String, Ty)>,
    /// The body.
    pub body: Expr,
}

impl Expr {
    /// Calls `f` on each direct subexpression, in source order.
    pub(crate) fn for_each_child(&self, f: &mut dyn FnMut(&Expr)) {
        match &self.kind {
            ExprKind::Int(_)
            | ExprKind::Bool(_)
            | ExprKind::Str(_)
            | ExprKind::Host(_)
            | ExprKind::Unit
            | ExprKind::Var(_) => {}
            ExprKind::Let(_, a, b) | ExprKind::Bin(_, a, b) => {
                f(a);
                f(b);
            }
            ExprKind::If(a, b, c) => {
                f(a);
                f(b);
                f(c);
            }
            ExprKind::Not(a) | ExprKind::Neg(a) | ExprKind::Proj(_, a) => f(a),
            ExprKind::Call(_, items)
            | ExprKind::List(items)
            | ExprKind::Tuple(items)
            | ExprKind::Seq(items) => {
                items.iter().for_each(f);
            }
            ExprKind::OnRemote { args, dest, rb, .. }
            | ExprKind::OnNeighbor { args, dest, rb, .. } => {
                args.iter().for_each(&mut *f);
                f(dest);
                f(rb);
            }
            ExprKind::Fold { init, list, .. } => {
                f(init);
                f(list);
            }
        }
    }
}
