//! A reference evaluator for well-typed PLAN expressions of the subset — ints, bools, int
//! lists and `(int * bool)` tuples; `let`, `if`, arithmetic with `div`/`mod`, comparisons,
//! `andalso`/`orelse`/`not`, list literals, `::`, `hd`/`tl`/`null`, `foldl`/`foldr`,
//! projections and inlined calls — and the property that compiled to SNAP and run on the
//! VM they give the same result, or both fail (`hd []`, division by zero, a fold over a
//! list longer than the bound), within the verifier's bounds.
use super::*;
use proptest::prelude::*;

/// The bound every generated program is compiled with.
const BOUND: u32 = 3;

/// The functions generated expressions call: inlined, folded with.
const PRELUDE: &str = "
fun add(acc:int, x:int) = acc + x
fun count(n:int, x:int) = n + 1
fun rsub(x:int, acc:int) = x - acc
fun rcons(acc:int list, x:int) = x :: acc
fun consf(x:int, acc:int list) = x :: acc
fun mix(x:int, y:int) = x * 3 - y
";

#[derive(Clone, Debug)]
pub(super) enum I {
    Lit(i32),
    Var(&'static str),
    Bin(&'static str, Box<I>, Box<I>),
    Neg(Box<I>),
    If(Box<B>, Box<I>, Box<I>),
    Let(&'static str, Box<I>, Box<I>),
    Mix(Box<I>, Box<I>),
    Hd(Box<L>),
    Sum(Box<I>, Box<L>),
    Count(Box<L>),
    Rsub(Box<I>, Box<L>),
    Fst(Box<P>),
}

#[derive(Clone, Debug)]
pub(super) enum B {
    Lit(bool),
    Cmp(&'static str, Box<I>, Box<I>),
    And(Box<B>, Box<B>),
    Or(Box<B>, Box<B>),
    Not(Box<B>),
    Null(Box<L>),
    Snd(Box<P>),
}

#[derive(Clone, Debug)]
pub(super) enum L {
    Xs,
    Lit(Vec<I>),
    Cons(Box<I>, Box<L>),
    Tl(Box<L>),
    If(Box<B>, Box<L>, Box<L>),
    /// `foldl(rcons, [], l)`: reversed.
    Rev(Box<L>),
    /// `foldr(consf, [], l)`: copied.
    Copy(Box<L>),
}

#[derive(Clone, Debug)]
pub(super) enum P {
    Lit(Box<I>, Box<B>),
    If(Box<B>, Box<P>, Box<P>),
}

/// Variables in scope, the list argument `xs`.
struct Env {
    ints: Vec<(&'static str, i32)>,
    xs: Vec<i32>,
}

/// `None`: the packet fails (ends without delivering).
type R<T> = Option<T>;

fn wrap(x: i32) -> i32 {
    (x << 7) >> 7
}

/// The fold bound at run time: a longer list ends the packet.
fn bounded(l: Vec<i32>) -> R<Vec<i32>> {
    (l.len() <= BOUND as usize).then_some(l)
}

fn eval(e: &I, env: &mut Env) -> R<i32> {
    Some(match e {
        I::Lit(n) => *n,
        I::Var(x) => env.ints.iter().rev().find(|(y, _)| y == x)?.1,
        I::Bin(op, a, b) => {
            let (a, b) = (eval(a, env)?, eval(b, env)?);
            wrap(match *op {
                "+" => a.wrapping_add(b),
                "-" => a.wrapping_sub(b),
                "*" => a.wrapping_mul(b),
                "div" => a.checked_div(b)?,
                _ => a.checked_rem(b)?,
            })
        }
        I::Neg(a) => wrap(eval(a, env)?.wrapping_neg()),
        I::If(c, t, f) => {
            if test(c, env)? {
                eval(t, env)?
            } else {
                eval(f, env)?
            }
        }
        I::Let(x, v, body) => {
            let v = eval(v, env)?;
            env.ints.push((x, v));
            let r = eval(body, env);
            env.ints.pop();
            r?
        }
        I::Mix(a, b) => {
            let (a, b) = (eval(a, env)?, eval(b, env)?);
            wrap(wrap(a.wrapping_mul(3)).wrapping_sub(b))
        }
        I::Hd(l) => *list(l, env)?.first()?,
        I::Sum(init, l) => {
            let init = eval(init, env)?;
            let l = bounded(list(l, env)?)?;
            l.iter().fold(init, |acc, x| wrap(acc.wrapping_add(*x)))
        }
        I::Count(l) => bounded(list(l, env)?)?.len() as i32,
        I::Rsub(init, l) => {
            let init = eval(init, env)?;
            let l = bounded(list(l, env)?)?;
            l.iter()
                .rev()
                .fold(init, |acc, x| wrap(x.wrapping_sub(acc)))
        }
        I::Fst(p) => pair(p, env)?.0,
    })
}

fn test(e: &B, env: &mut Env) -> R<bool> {
    Some(match e {
        B::Lit(b) => *b,
        B::Cmp(op, a, b) => {
            let (a, b) = (eval(a, env)?, eval(b, env)?);
            match *op {
                "=" => a == b,
                "<>" => a != b,
                "<" => a < b,
                "<=" => a <= b,
                ">" => a > b,
                _ => a >= b,
            }
        }
        B::And(a, b) => test(a, env)? && test(b, env)?,
        B::Or(a, b) => test(a, env)? || test(b, env)?,
        B::Not(a) => !test(a, env)?,
        B::Null(l) => list(l, env)?.is_empty(),
        B::Snd(p) => pair(p, env)?.1,
    })
}

fn list(e: &L, env: &mut Env) -> R<Vec<i32>> {
    Some(match e {
        L::Xs => env.xs.clone(),
        L::Lit(items) => items
            .iter()
            .map(|i| eval(i, env))
            .collect::<Option<Vec<_>>>()?,
        L::Cons(h, t) => {
            let h = eval(h, env)?;
            let mut t = list(t, env)?;
            t.insert(0, h);
            t
        }
        L::Tl(l) => {
            let l = list(l, env)?;
            l.get(1..)?.to_vec()
        }
        L::If(c, t, f) => {
            if test(c, env)? {
                list(t, env)?
            } else {
                list(f, env)?
            }
        }
        L::Rev(l) => {
            let mut l = bounded(list(l, env)?)?;
            l.reverse();
            l
        }
        L::Copy(l) => bounded(list(l, env)?)?,
    })
}

fn pair(e: &P, env: &mut Env) -> R<(i32, bool)> {
    match e {
        P::Lit(i, b) => Some((eval(i, env)?, test(b, env)?)),
        P::If(c, t, f) => {
            if test(c, env)? {
                pair(t, env)
            } else {
                pair(f, env)
            }
        }
    }
}

pub(super) fn show(e: &I) -> String {
    match e {
        I::Lit(n) if *n < 0 => format!("~{}", -n),
        I::Lit(n) => format!("{n}"),
        I::Var(x) => String::from(*x),
        I::Bin(op, a, b) => format!("({} {op} {})", show(a), show(b)),
        I::Neg(a) => format!("~({})", show(a)),
        I::If(c, t, f) => format!("(if {} then {} else {})", show_b(c), show(t), show(f)),
        I::Let(x, v, b) => format!("let val {x} = {} in {} end", show(v), show(b)),
        I::Mix(a, b) => format!("mix({}, {})", show(a), show(b)),
        I::Hd(l) => format!("hd({})", show_l(l)),
        I::Sum(i, l) => format!("foldl(add, {}, {})", show(i), show_l(l)),
        I::Count(l) => format!("foldl(count, 0, {})", show_l(l)),
        I::Rsub(i, l) => format!("foldr(rsub, {}, {})", show(i), show_l(l)),
        I::Fst(p) => format!("#1 {}", show_p(p)),
    }
}

fn show_b(e: &B) -> String {
    match e {
        B::Lit(b) => format!("{b}"),
        B::Cmp(op, a, b) => format!("({} {op} {})", show(a), show(b)),
        B::And(a, b) => format!("({} andalso {})", show_b(a), show_b(b)),
        B::Or(a, b) => format!("({} orelse {})", show_b(a), show_b(b)),
        B::Not(a) => format!("not({})", show_b(a)),
        B::Null(l) => format!("null({})", show_l(l)),
        B::Snd(p) => format!("#2 {}", show_p(p)),
    }
}

fn show_l(e: &L) -> String {
    match e {
        L::Xs => "xs".into(),
        L::Lit(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        L::Cons(h, t) => format!("({} :: {})", show(h), show_l(t)),
        L::Tl(l) => format!("tl({})", show_l(l)),
        L::If(c, t, f) => format!("(if {} then {} else {})", show_b(c), show_l(t), show_l(f)),
        L::Rev(l) => format!("foldl(rcons, [], {})", show_l(l)),
        L::Copy(l) => format!("foldr(consf, [], {})", show_l(l)),
    }
}

fn show_p(e: &P) -> String {
    match e {
        P::Lit(i, b) => format!("({}, {})", show(i), show_b(b)),
        P::If(c, t, f) => format!("(if {} then {} else {})", show_b(c), show_p(t), show_p(f)),
    }
}

const VARS: [&str; 2] = ["a", "b"];

fn int_s(d: u32) -> BoxedStrategy<I> {
    let leaf = prop_oneof![
        (-3000i32..3000).prop_map(I::Lit),
        prop::sample::select(&VARS[..]).prop_map(I::Var),
    ];
    if d == 0 {
        return leaf.boxed();
    }
    let (i, b, l, p) = (int_s(d - 1), bool_s(d - 1), list_s(d - 1), pair_s(d - 1));
    prop_oneof![
        3 => leaf,
        3 => (
            prop::sample::select(&["+", "-", "*", "div", "mod"][..]),
            i.clone(),
            i.clone()
        )
            .prop_map(|(op, a, b)| I::Bin(op, Box::new(a), Box::new(b))),
        1 => i.clone().prop_map(|a| I::Neg(Box::new(a))),
        1 => (b, i.clone(), i.clone())
            .prop_map(|(c, t, f)| I::If(Box::new(c), Box::new(t), Box::new(f))),
        1 => (prop::sample::select(&VARS[..]), i.clone(), i.clone())
            .prop_map(|(x, v, b)| I::Let(x, Box::new(v), Box::new(b))),
        1 => (i.clone(), i.clone()).prop_map(|(a, b)| I::Mix(Box::new(a), Box::new(b))),
        1 => l.clone().prop_map(|l| I::Hd(Box::new(l))),
        1 => (i.clone(), l.clone()).prop_map(|(i, l)| I::Sum(Box::new(i), Box::new(l))),
        1 => l.clone().prop_map(|l| I::Count(Box::new(l))),
        1 => (i, l).prop_map(|(i, l)| I::Rsub(Box::new(i), Box::new(l))),
        1 => p.prop_map(|p| I::Fst(Box::new(p))),
    ]
    .boxed()
}

fn bool_s(d: u32) -> BoxedStrategy<B> {
    let leaf = any::<bool>().prop_map(B::Lit);
    if d == 0 {
        return leaf.boxed();
    }
    let (i, b) = (int_s(d - 1), bool_s(d - 1));
    prop_oneof![
        leaf,
        (
            prop::sample::select(&["=", "<>", "<", "<=", ">", ">="][..]),
            i.clone(),
            i
        )
            .prop_map(|(op, a, b)| B::Cmp(op, Box::new(a), Box::new(b))),
        (b.clone(), b.clone()).prop_map(|(a, b)| B::And(Box::new(a), Box::new(b))),
        (b.clone(), b.clone()).prop_map(|(a, b)| B::Or(Box::new(a), Box::new(b))),
        b.prop_map(|a| B::Not(Box::new(a))),
        list_s(d - 1).prop_map(|l| B::Null(Box::new(l))),
        pair_s(d - 1).prop_map(|p| B::Snd(Box::new(p))),
    ]
    .boxed()
}

fn list_s(d: u32) -> BoxedStrategy<L> {
    let leaf = prop_oneof![
        Just(L::Xs),
        prop::collection::vec((-50i32..50).prop_map(I::Lit), 0..=BOUND as usize).prop_map(L::Lit),
    ];
    if d == 0 {
        return leaf.boxed();
    }
    let l = list_s(d - 1);
    prop_oneof![
        2 => leaf,
        1 => prop::collection::vec(int_s(d - 1), 0..=BOUND as usize).prop_map(L::Lit),
        1 => (int_s(d - 1), l.clone()).prop_map(|(h, t)| L::Cons(Box::new(h), Box::new(t))),
        1 => l.clone().prop_map(|l| L::Tl(Box::new(l))),
        1 => (bool_s(d - 1), l.clone(), l.clone())
            .prop_map(|(c, t, f)| L::If(Box::new(c), Box::new(t), Box::new(f))),
        1 => l.clone().prop_map(|l| L::Rev(Box::new(l))),
        1 => l.prop_map(|l| L::Copy(Box::new(l))),
    ]
    .boxed()
}

fn pair_s(d: u32) -> BoxedStrategy<P> {
    let lit = (int_s(d.saturating_sub(1)), bool_s(d.saturating_sub(1)))
        .prop_map(|(i, b)| P::Lit(Box::new(i), Box::new(b)));
    if d == 0 {
        return lit.boxed();
    }
    let p = pair_s(d - 1);
    prop_oneof![
        3 => lit,
        1 => (bool_s(d - 1), p.clone(), p)
            .prop_map(|(c, t, f)| P::If(Box::new(c), Box::new(t), Box::new(f))),
    ]
    .boxed()
}

/// A delivered int list: nested pairs ending in 0.
fn delivered_list(v: &Delivered) -> Option<Vec<i32>> {
    let mut out = Vec::new();
    let mut v = v;
    loop {
        match v {
            Delivered::Int(0) => return Some(out),
            Delivered::Tuple(cell) => match cell.as_slice() {
                [Delivered::Int(h), t] => {
                    out.push(*h);
                    v = t;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

const SOUP: [&str; 52] = [
    "fun ",
    "f",
    "g",
    "x",
    "(",
    ")",
    "[",
    "]",
    ",",
    ";",
    ":",
    "int",
    "bool",
    "host",
    "list",
    "=",
    "<>",
    "<",
    "+",
    "*",
    "~",
    "::",
    "1",
    "true",
    "if ",
    " then ",
    " else ",
    "let ",
    "val ",
    " in ",
    " end",
    "hd",
    "foldl",
    "OnRemote",
    "|",
    "getSrc()",
    "deliverUDP",
    "defaultRoute",
    "via",
    "OnNeighbor",
    "fun via(d:host) = ",
    "10.0.0.3",
    "1.2.",
    "andalso",
    " ",
    "#",
    "#2 ",
    " div ",
    "foldr",
    "RetransOnRemote",
    "3",
    "ess.count",
];

proptest! {
    #[test]
    fn token_soup_never_panics(toks in prop::collection::vec(prop::sample::select(&SOUP[..]), 0..60)) {
        let src: String = toks.concat();
        for entry in ["f", "g"] {
            if let Ok(c) = compile(&src, &opts(entry, 2)) {
                prop_assert_eq!(asm::assemble(&c.assembly), Ok(c.program));
            }
        }
    }

    #[test]
    fn compiled_expressions_agree_with_the_evaluator(
        i in int_s(3),
        b in bool_s(2),
        l in list_s(2),
        a in -100i32..100,
        bv in -100i32..100,
        xs in prop::collection::vec(-100i32..100, 0..5),
    ) {
        let src = format!(
            "{PRELUDE}\nfun main(xs:int list, a:int, b:int, port:int) =\n  deliverUDP(({}, {}, {}), port)",
            show(&i), show_b(&b), show_l(&l)
        );
        let c = compile(&src, &opts("main", BOUND))
            .map_err(|err| TestCaseError::fail(format!("{err}\n{src}")))?;
        let out = run_here(&c, vec![Value::int(a), Value::int(bv), Value::int(5)], heap_list(&xs));
        let mut env = Env { ints: vec![("a", a), ("b", bv)], xs };
        let want = (|| Some((eval(&i, &mut env)?, test(&b, &mut env)?, list(&l, &mut env)?)))();
        let got = out.delivery.as_ref().and_then(|d| match &d.value {
            Delivered::Tuple(t) => match t.as_slice() {
                [Delivered::Int(i), Delivered::Int(b), l] => {
                    Some((*i, *b != 0, delivered_list(l)?))
                }
                _ => None,
            },
            _ => None,
        });
        prop_assert_eq!(got, want, "{}\n{:?}\n{}", src, out.end, c.assembly);
        prop_assert!(out.stats.executed <= c.bounds.instructions);
        prop_assert!(out.stats.allocated <= c.bounds.heap_words);
        prop_assert!(out.stats.sends <= c.bounds.sends);
        // The bounds are for the code alone: the stack's above the caller's five values.
        prop_assert!(out.stats.max_depth <= 5 + c.bounds.stack_depth, "{:?} {:?}", out.stats, c.bounds);
    }
}
