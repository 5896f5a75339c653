//! The compiler end to end: PLAN text to a verified program, run on the VM.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};

use super::*;
use crate::paper;
use crate::value::Value;
use crate::vm::{Delivered, End, Outcome, Vm};

const FIG2: &str = "
fun r(w:blob, n:int) =
  deliverUDP(w, n)
fun p(w:blob, n:int) =
  OnRemote(|r|(w, n), getSrc(),
           getRB(), defaultRoute)
";

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

fn opts(entry: &str, fold_bound: u32) -> Options {
    Options {
        fold_bound,
        services: ServiceSig::ess(),
        entry: entry.to_string(),
    }
}

fn node(address: [u8; 4]) -> Vm {
    Vm::new(NodeConfig {
        address,
        ifaces: 2,
        mtu: 1500,
    })
}

/// Runs the compiled program at A, addressed to A, with `args` below the entry index.
fn run_here(
    c: &Compiled,
    args: Vec<Value>,
    heap: impl FnOnce(&mut Program) -> Vec<Value>,
) -> Outcome {
    let mut p = c.program.clone();
    (p.src, p.dst, p.rb) = (A, A, 4);
    let mut stack = heap(&mut p);
    stack.extend(args);
    stack.push(Value::int(i32::from(c.entry_index)));
    p.stack = stack;
    node(A).run(0, 0, p.to_bytes().unwrap())
}

/// An int list on the heap, for [`run_here`]: nil is 0, a cell the tuple (head, tail).
fn heap_list(xs: &[i32]) -> impl FnOnce(&mut Program) -> Vec<Value> + '_ {
    move |p: &mut Program| {
        let mut l = Value::int(0);
        for &x in xs.iter().rev() {
            l = p.heap_tuple(&[Value::int(x), l]);
        }
        vec![l]
    }
}

/// A delivered tuple of ints.
fn ints(v: &[i32]) -> Delivered {
    Delivered::Tuple(v.iter().map(|&i| Delivered::Int(i)).collect())
}

fn delivered_int(out: &Outcome) -> Option<i32> {
    match out.delivery.as_ref()?.value {
        Delivered::Int(v) => Some(v),
        _ => None,
    }
}

#[test]
fn fig2_ping_compiles_verifies_and_is_close_to_the_papers_listing() {
    let c = compile(FIG2, &opts("p", 4)).unwrap();
    let hand = paper::plan_ping(A, B, 7, b"x", 8);
    std::println!(
        "Fig. 2 ping: compiled {} instructions, hand-written (paper) {}\n{}",
        c.program.code.len(),
        hand.code.len(),
        c.assembly
    );
    assert!(c.program.code.len() <= 2 * hand.code.len());
    assert_eq!(c.bounds.sends, 2);
    assert!(c.bounds.delivers);
    // The paper's layout: the preamble first.
    assert!(c.assembly.contains("forw\n        paj -1"));
}

#[test]
fn compiled_ping_goes_out_and_comes_back_with_the_payload() {
    let c = compile(FIG2, &opts("p", 4)).unwrap();
    let mut ping = c.program.clone();
    (ping.src, ping.dst, ping.rb) = (A, B, 8);
    let w = ping.heap_bytes(b"hello");
    ping.stack = vec![w, Value::int(7), Value::int(i32::from(c.entry_index))];

    // Injected at A, it moves on toward B.
    let out = node(A).run(0, 0, ping.to_bytes().unwrap());
    assert_eq!(out.end, End::Forwarded);
    assert_eq!(out.transmits[0].dst, B);
    // At B, p sends r home.
    let out = node(B).run(0, 0, out.transmits[0].packet.clone());
    assert_eq!(out.transmits.len(), 1);
    assert_eq!(out.transmits[0].dst, A);
    assert!(out.delivery.is_none());
    // At A, r delivers.
    let back = node(A).run(1, 0, out.transmits[0].packet.clone());
    let d = back.delivery.unwrap();
    assert_eq!((d.port, d.value), (7, Delivered::Bytes(b"hello".to_vec())));
}

/// A routing function with a fixed next hop: everything goes by way of C.
const VIA_C: &str = "
fun via(d: host) = if thisHost() = 10.0.0.3 then d else 10.0.0.3
fun r(n:int) = deliverUDP(n, 9)
fun p(n:int) = OnRemote(|r|(n), getSrc(), getRB(), via)
";

const C: [u8; 4] = [10, 0, 0, 3];

#[test]
fn a_user_routing_function_picks_every_hop_and_the_entry_runs_at_the_destination() {
    let c = compile(VIA_C, &opts("p", 4)).unwrap();
    assert!(c.assembly.contains("forwto") && c.assembly.contains("ishere"));
    let mut p = c.program.clone();
    (p.src, p.dst, p.rb) = (A, B, 8);
    p.stack = vec![Value::int(7), Value::int(i32::from(c.entry_index))];
    // At B, p sends r toward A by way of C: the routing function chose the first hop.
    let out = node(B).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.transmits.len(), 1);
    assert_eq!(out.transmits[0].dst, C);
    let child = out.transmits[0].packet.clone();
    // A node on the way that is neither C nor A sends it on to C, not to A.
    let out = node([10, 0, 0, 4]).run(0, 0, child.clone());
    assert_eq!((out.end, out.transmits[0].dst), (End::Forwarded, C));
    assert!(out.delivery.is_none());
    // At C, the next hop is A itself.
    let out = node(C).run(0, 0, child);
    assert_eq!((out.end, out.transmits[0].dst), (End::Forwarded, A));
    assert!(out.delivery.is_none());
    // At A, the destination, the preamble jumps to r.
    let out = node(A).run(0, 0, out.transmits[0].packet.clone());
    assert!(out.transmits.is_empty());
    let d = out.delivery.unwrap();
    assert_eq!((d.port, d.value), (9, Delivered::Int(7)));
}

#[test]
fn on_neighbor_sends_one_hop_entering_the_function_itself() {
    let src = "
fun r(n:int, m:int) = deliverUDP(n - m, 9)
fun p(n:int) = OnNeighbor(|r|(n, 2), getSrc(), getRB())";
    let c = compile(src, &opts("p", 4)).unwrap();
    let mut p = c.program.clone();
    (p.src, p.dst, p.rb) = (A, B, 8);
    p.stack = vec![Value::int(7), Value::int(i32::from(c.entry_index))];
    let out = node(B).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.transmits.len(), 1);
    assert_eq!(out.transmits[0].dst, A);
    // At the neighbour, r runs at once on its two arguments.
    let out = node(A).run(0, 0, out.transmits[0].packet.clone());
    assert!(out.transmits.is_empty());
    let d = out.delivery.unwrap();
    assert_eq!((d.port, d.value), (9, Delivered::Int(5)));
    let e = compile(
        "fun p(n:int) = OnNeighbor(|p|(true), getSrc(), 1)",
        &opts("p", 4),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("1:"), "{e}");
}

#[test]
fn recursion_is_rejected_naming_the_cycle() {
    let e = compile("fun f(x:int) = f(x)", &opts("f", 3)).unwrap_err();
    assert_eq!(
        e,
        PlanError::Recursion {
            line: 1,
            col: 1,
            cycle: vec!["f".into(), "f".into()]
        }
    );
    let src = "fun main(x:int) = g(x)\nfun g(x:int) = h(x) + 1\nfun h(x:int) = if x > 0 then g(x - 1) else 0";
    let e = compile(src, &opts("main", 3)).unwrap_err();
    assert_eq!(e.to_string(), "2:1: recursion is not allowed: g -> h -> g");
    // Through foldl too; OnRemote only sends, which is allowed (Fig. 2's p sends r).
    let src = "fun s(a:int, x:int) = foldl(s, a, [x])";
    assert!(matches!(
        compile(src, &opts("s", 3)),
        Err(PlanError::Recursion { .. })
    ));
    let src = "fun p(n:int) = OnRemote(|p|(n), getSrc(), getRB(), defaultRoute)";
    compile(src, &opts("p", 3)).unwrap();
}

#[test]
fn type_errors_carry_positions() {
    let cases = [
        (
            "fun f(x:int) = x + true",
            "1:20: type error: an operand of `+` must be int, found bool",
        ),
        (
            "fun f(x:int) =\n  if x then 1 else 2",
            "2:6: type error: the condition of `if` must be bool, found int",
        ),
        (
            "fun f(x:int) = if true then 1 else false",
            "1:36: type error: `if` branches differ: int and bool",
        ),
        ("fun f(x:int) = y", "1:16: unknown variable \"y\""),
        (
            "fun g(h:host) = 0\nfun f(x:int) = g(x)",
            "2:18: type error: argument 1 of `g` must be host, found int",
        ),
        (
            "fun f(x:blob) = x = x",
            "1:17: type error: `=` on blob is not supported (only int, bool, host, word)",
        ),
        (
            "fun f(x:int) = hd(x)",
            "1:19: type error: `hd` needs a list, found int",
        ),
        (
            "fun f(x:int) = OnRemote(|f|(x), getSrc(), 3, myRoute)",
            "1:46: not supported: routing function `myRoute`: neither defaultRoute nor a PLAN function",
        ),
        (
            "fun r(d:int) = d\nfun f(x:int) = OnRemote(|f|(x), getSrc(), 3, r)",
            "2:46: type error: routing function `r` must take one host and return a host",
        ),
        (
            "fun r(d:host) = 1\nfun f(x:int) = OnRemote(|f|(x), getSrc(), 3, r)",
            "2:46: type error: routing function `r` must take one host and return a host",
        ),
        (
            "fun r(d:host) = OnRemote(|r|(d), d, 1, r)",
            "1:1: recursion is not allowed: r -> r",
        ),
        (
            "fun f(x:int) = 1.2.3",
            "1:16: syntax error: a host literal has four parts",
        ),
        (
            "fun f(x:int) = 16777216",
            "1:16: not supported: 16777216 does not fit SNAP's 25-bit integers",
        ),
    ];
    for (src, want) in cases {
        let e = compile(src, &opts("f", 3)).unwrap_err();
        assert_eq!(e.to_string(), want, "{src}");
    }
    assert_eq!(
        compile("fun f(x:int) = x", &opts("main", 3)).unwrap_err(),
        PlanError::NoEntry {
            name: "main".into()
        }
    );
}

const SUM: &str = "
fun add(acc:int, x:int) = acc + x
fun main(a:int, b:int, c:int, port:int) = deliverUDP(foldl(add, 0, [a, b, c]), port)
fun sum(l:int list, port:int) = deliverUDP(foldl(add, 100, l), port)
";

#[test]
fn a_fold_over_a_literal_list_unrolls_and_runs() {
    let c = compile(SUM, &opts("main", 3)).unwrap();
    let out = run_here(
        &c,
        vec![Value::int(5), Value::int(-7), Value::int(40), Value::int(9)],
        |_| vec![],
    );
    assert_eq!(
        delivered_int(&out),
        Some(38),
        "{:?}\n{}",
        out.end,
        c.assembly
    );
    assert_eq!(out.delivery.unwrap().port, 9);
}

#[test]
fn a_fold_over_a_list_argument_is_guarded_up_to_the_bound() {
    let c = compile(SUM, &opts("sum", 3)).unwrap();
    let list = heap_list;
    for (xs, want) in [
        (&[][..], Some(100)),
        (&[1], Some(101)),
        (&[1, 2], Some(103)),
        (&[1, 2, 3], Some(106)),
    ] {
        let out = run_here(&c, vec![Value::int(3)], list(xs));
        assert_eq!(delivered_int(&out), want, "{xs:?}: {:?}", out.end);
    }
    // Longer than the bound: the packet ends without a result.
    let out = run_here(&c, vec![Value::int(3)], list(&[1, 2, 3, 4]));
    assert_eq!((out.end, out.delivery), (End::Exit, None));
}

#[test]
fn list_literals_longer_than_the_bound_are_rejected() {
    let e = compile(SUM, &opts("main", 2)).unwrap_err();
    assert_eq!(
        e,
        PlanError::ListTooLong {
            line: 3,
            col: 68,
            len: 3,
            bound: 2
        }
    );
}

#[test]
fn lists_hd_tl_null_and_cons() {
    let src = "fun main(port:int) =
      let val l = 4 :: [5, 6] in
        deliverUDP(if null(tl(tl(tl(l)))) andalso not(null(l)) then hd(tl(l)) * 10 + hd(l) else 0, port)
      end";
    let c = compile(src, &opts("main", 3)).unwrap();
    assert_eq!(
        delivered_int(&run_here(&c, vec![Value::int(1)], |_| vec![])),
        Some(54)
    );
}

#[test]
fn services_are_checked_and_called_by_name() {
    let e = compile("fun f(x:int) = frob(x)", &opts("f", 3)).unwrap_err();
    assert_eq!(
        e,
        PlanError::UnknownService {
            line: 1,
            col: 16,
            name: "frob".into()
        }
    );
    let c = compile("fun f(x:int) = ess.count(x) + 1", &opts("f", 3)).unwrap();
    assert!(c.assembly.contains("calls \"ess.count\""), "{}", c.assembly);
}

#[test]
fn hosts_compare_by_address_and_sequences_discard() {
    let src =
        "fun main(port:int) = (getSrc(); deliverUDP(if thisHost() = getSrc() then 1 else 2, port))";
    let c = compile(src, &opts("main", 1)).unwrap();
    assert!(c.assembly.contains("aeq"));
    assert_eq!(
        delivered_int(&run_here(&c, vec![Value::int(1)], |_| vec![])),
        Some(1)
    );
}

#[test]
fn strings_are_blobs_on_the_heap() {
    let src = "fun main(port:int) = deliverUDP(if getDst() = thisHost() then \"yes \\\"here\\\"\" else \"no\", port)";
    let c = compile(src, &opts("main", 1)).unwrap();
    let out = run_here(&c, vec![Value::int(2)], |_| vec![]);
    assert_eq!(
        out.delivery.unwrap().value,
        Delivered::Bytes(b"yes \"here\"".to_vec())
    );
}

#[test]
fn no_input_panics() {
    let junk = [
        "",
        "fun",
        "fun f(",
        "fun f() =",
        "fun f(x:int list list) = x",
        "fun f() = [1,]",
        "fun f() = let in 1 end",
        "fun f() = OnRemote(|g|(1), 2, 3, defaultRoute)",
        "fun f() = foldl(g, 1, [])",
        "fun f() = hd([])",
        "fun f() = deliverUDP(1)",
        "fun f() = ()",
        "fun f() = (1;2;3)",
    ];
    for s in junk {
        let _ = compile(s, &opts("f", 2));
    }
}

#[test]
fn inlining_blowup_is_an_error_not_a_hang() {
    let mut src = String::from("fun f0(x:int) = x + 1\n");
    for i in 1..40 {
        src.push_str(&format!("fun f{i}(x:int) = f{j}(x) + f{j}(x)\n", j = i - 1));
    }
    src.push_str("fun main(x:int) = f39(x)");
    assert!(matches!(
        compile(&src, &opts("main", 2)),
        Err(PlanError::TooLarge { .. })
    ));
}

#[test]
fn deep_programs_fail_cleanly_on_a_small_stack() {
    // Each function nests its call 60 deep, 40 functions in a chain: inlining goes 2400
    // levels deep, past the generator's limit, on a test thread's 2 MiB stack.
    let mut src = String::from("fun f0(x:int) = x\n");
    for i in 1..40 {
        let j = i - 1;
        src.push_str(&format!(
            "fun f{i}(x:int) = {}f{j}(x){}\n",
            "(1 + ".repeat(30),
            ")".repeat(30)
        ));
    }
    src.push_str("fun main(x:int) = f39(x)");
    let r = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || compile(&src, &opts("main", 2)))
        .unwrap()
        .join()
        .unwrap();
    assert!(matches!(r, Err(PlanError::TooLarge { .. })), "{r:?}");
}

mod data;
mod reference;
