//! Tuples, `foldr`, `div`/`mod`, `RetransOnRemote` and typed service signatures.

use super::*;

fn deliver(src: &str, entry: &str, args: Vec<Value>) -> Option<Delivered> {
    let c = compile(src, &opts(entry, 3)).unwrap_or_else(|e| panic!("{e}\n{src}"));
    run_here(&c, args, |_| vec![]).delivery.map(|d| d.value)
}

#[test]
fn tuples_are_built_projected_and_passed() {
    let src = "
fun swap(p: int * bool) = (#2 p, #1 p)
fun main(port:int) =
  let val t = (7, true, [1, 2]) in
  let val s = swap((#1 t + 1, #2 t)) in
    deliverUDP((#1 s, #2 s, hd(tl(#3 t))), port)
  end end";
    assert_eq!(
        deliver(src, "main", vec![Value::int(3)]),
        Some(Delivered::Tuple(vec![
            Delivered::Int(1),
            Delivered::Int(8),
            Delivered::Int(2)
        ]))
    );
    // A list of pairs, folded: the sum of the products.
    let src = "
fun dot(acc:int, p: int * int) = acc + #1 p * #2 p
fun main(l: (int * int) list, port:int) = deliverUDP(foldl(dot, 0, l), port)";
    let c = compile(src, &opts("main", 3)).unwrap();
    let out = run_here(&c, vec![Value::int(3)], |p| {
        let a = p.heap_tuple(&[Value::int(2), Value::int(5)]);
        let b = p.heap_tuple(&[Value::int(3), Value::int(4)]);
        let nil = Value::int(0);
        let cell = p.heap_tuple(&[b, nil]);
        vec![p.heap_tuple(&[a, cell])]
    });
    assert_eq!(delivered_int(&out), Some(22));
}

#[test]
fn wide_tuples_space_their_mktup() {
    // `mktup 5` wants four instructions before the next `mktup`: the generator pads.
    let src = "fun main(port:int) = deliverUDP(((1, 2, 3, 4, 5), (6, 7)), port)";
    let c = compile(src, &opts("main", 3)).unwrap();
    assert!(c.assembly.contains("nop"), "{}", c.assembly);
    let d = run_here(&c, vec![Value::int(3)], |_| vec![])
        .delivery
        .unwrap();
    assert_eq!(
        d.value,
        Delivered::Tuple(vec![ints(&[1, 2, 3, 4, 5]), ints(&[6, 7])])
    );
}

#[test]
fn tuple_type_errors_say_what_is_wrong() {
    for (src, want) in [
        (
            "fun main(p: int * int) = #3 p",
            "1:26: type error: `#3` of a tuple of 2 fields",
        ),
        (
            "fun main(x:int) = #1 x",
            "1:22: type error: `#1` needs a tuple of known type, found int",
        ),
        (
            "fun main(x:int) = (1, 2) = (1, 2)",
            "1:19: type error: `=` on (int * int) is not supported (only int, bool, host, word)",
        ),
        (
            "fun f(p: int * bool) = 1\nfun main(x:int) = f((true, 1))",
            "2:21: type error: argument 1 of `f` must be (int * bool), found (bool * int)",
        ),
    ] {
        let e = compile(src, &opts("main", 3)).unwrap_err();
        assert_eq!(e.to_string(), want, "{src}");
    }
}

#[test]
fn foldr_folds_from_the_right() {
    let src = "
fun rsub(x:int, acc:int) = x - acc
fun lsub(acc:int, x:int) = acc - x
fun main(l:int list, port:int) =
  deliverUDP((foldr(rsub, 0, [1, 2, 3]), foldl(lsub, 0, [1, 2, 3]), foldr(rsub, 0, l)), port)";
    let c = compile(src, &opts("main", 3)).unwrap();
    let list = heap_list;
    // 1 - (2 - (3 - 0)) = 2; ((0 - 1) - 2) - 3 = -6; 10 - (20 - 0) = -10.
    let out = run_here(&c, vec![Value::int(3)], list(&[10, 20]));
    assert_eq!(out.delivery.map(|d| d.value), Some(ints(&[2, -6, -10])));
    // A list argument longer than the bound ends the packet.
    let out = run_here(&c, vec![Value::int(3)], list(&[1, 2, 3, 4]));
    assert_eq!((out.end, out.delivery), (End::Exit, None));
    // `foldr` checks its iterator's argument order.
    let e = compile(
        "fun lsub(acc:int list, x:int) = acc\nfun main(x:int) = foldr(lsub, [], [1])",
        &opts("main", 3),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("2:19: type error"), "{e}");
}

#[test]
fn div_and_mod_truncate_and_division_by_zero_ends_the_packet() {
    let src = "fun main(a:int, b:int, port:int) = deliverUDP((a div b, a mod b, a div 2), port)";
    assert_eq!(
        deliver(
            src,
            "main",
            vec![Value::int(-7), Value::int(2), Value::int(3)]
        ),
        Some(ints(&[-3, -1, -3]))
    );
    assert_eq!(
        deliver(
            src,
            "main",
            vec![Value::int(7), Value::int(0), Value::int(3)]
        ),
        None
    );
}

const RETRANS: &str = "
fun r(n:int) = deliverUDP(n, 9)
fun p(n:int) = RetransOnRemote(|r|(n), getSrc(), getRB(), defaultRoute, 3)
";

#[test]
fn retrans_on_remote_sends_its_tries_up_front_sharing_the_bound() {
    let c = compile(RETRANS, &opts("p", 4)).unwrap();
    assert_eq!(c.assembly.matches("send").count(), 3, "{}", c.assembly);
    let mut p = c.program.clone();
    (p.src, p.dst, p.rb) = (A, B, 10);
    p.stack = vec![Value::int(7), Value::int(i32::from(c.entry_index))];
    // A node lets a packet send at most one packet per interface (§III.C): three copies
    // need three interfaces, so on B with two the third `send` ends the packet.
    let out = node(B).run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.end, End::Fault(crate::vm::Fault::SendLimit));
    assert_eq!(c.bounds.sends, 2, "the verifier's node has two interfaces");
    // At B with four interfaces: three copies toward A, each with a third of what was
    // left after B's unit.
    let mut b4 = Vm::new(NodeConfig {
        address: B,
        ifaces: 4,
        mtu: 1500,
    });
    let out = b4.run(0, 0, p.to_bytes().unwrap());
    assert_eq!(out.transmits.len(), 3, "{:?}", out.end);
    for t in &out.transmits {
        assert_eq!(t.dst, A);
        let child = crate::wire::Packet::new_checked(&t.packet[..]).unwrap();
        assert_eq!(child.rb(), 3);
        // Each copy alone delivers at A: at-least-once, no duplicate suppression.
        let d = node(A).run(0, 0, t.packet.clone()).delivery.unwrap();
        assert_eq!((d.port, d.value), (9, Delivered::Int(7)));
    }
    // Routed by a function of the program's own, each copy takes its first hop from it.
    let src = "
fun via(d: host) = if thisHost() = 10.0.0.3 then d else 10.0.0.3
fun r(n:int) = deliverUDP(n, 9)
fun p(n:int) = RetransOnRemote(|r|(n), getSrc(), getRB(), via, 2)";
    let c = compile(src, &opts("p", 4)).unwrap();
    let mut p = c.program.clone();
    (p.src, p.dst, p.rb) = (A, B, 10);
    p.stack = vec![Value::int(7), Value::int(i32::from(c.entry_index))];
    let out = node(B).run(0, 0, p.to_bytes().unwrap());
    let dsts: Vec<_> = out.transmits.iter().map(|t| t.dst).collect();
    assert_eq!(dsts, vec![C, C]);
}

#[test]
fn retrans_on_remote_tries_are_a_literal_within_the_bound() {
    let e = compile(&RETRANS.replace(", 3)", ", 5)"), &opts("p", 4)).unwrap_err();
    assert!(
        e.to_string()
            .contains("`RetransOnRemote` with 5 tries: more than the bound 4"),
        "{e}"
    );
    let e = compile(&RETRANS.replace(", 3)", ", n)"), &opts("p", 4)).unwrap_err();
    assert!(
        e.to_string().starts_with("3:73: syntax error")
            && e.to_string().contains("positive integer literal"),
        "{e}"
    );
}

#[test]
fn services_are_typed_by_their_signatures() {
    let sig = ServiceSig::parse("route.lookup(host, int): host").unwrap();
    assert_eq!(
        (sig.name.as_str(), sig.params.as_slice(), &sig.result),
        (
            "route.lookup",
            &[ast::Ty::Host, ast::Ty::Int][..],
            &ast::Ty::Host
        )
    );
    assert_eq!(
        ServiceSig::parse("ess.put(int, int): int list * bool")
            .unwrap()
            .result,
        ast::Ty::Tuple(vec![
            ast::Ty::List(alloc::boxed::Box::new(ast::Ty::Int)),
            ast::Ty::Bool
        ])
    );
    for bad in [
        "f(int)",
        "f(int): ",
        "(int): int",
        "f(int): int extra",
        "f(nat): int",
    ] {
        assert!(
            matches!(ServiceSig::parse(bad), Err(PlanError::Syntax { .. })),
            "{bad}"
        );
    }
    // Arguments and results are checked against the signature.
    let mut o = opts("main", 3);
    o.services.push(sig);
    let e = compile("fun main(x:int) = ess.count(true)", &o).unwrap_err();
    assert!(
        e.to_string()
            .contains("argument 1 of `ess.count` must be int, found bool"),
        "{e}"
    );
    let e = compile("fun main(x:int) = route.lookup(getSrc(), x) + 1", &o).unwrap_err();
    assert!(
        e.to_string()
            .contains("an operand of `+` must be int, found host"),
        "{e}"
    );
    let c = compile(
        "fun main(x:int) = OnRemote(|main|(x), route.lookup(getSrc(), x), 1, defaultRoute)",
        &o,
    )
    .unwrap();
    assert!(c.assembly.contains("calls \"route.lookup\""));
}

#[test]
fn without_a_bound_only_folds_over_literals_compile() {
    let add = "fun add(acc:int, x:int) = acc + x\n";
    let lit = "fun lit(port:int) = deliverUDP(foldl(add, 0, [1, 2, 3, 4, 5]), port)";
    let c = compile(&format!("{add}{lit}"), &opts("lit", 0)).unwrap();
    assert_eq!(
        delivered_int(&run_here(&c, vec![Value::int(3)], |_| vec![])),
        Some(15)
    );
    let arg = "fun arg(l:int list, port:int) = deliverUDP(foldl(add, 0, l), port)";
    let e = compile(&format!("{add}{arg}"), &opts("arg", 0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "2:58: not supported: unbounded `foldl`: its list's length is not known here, and no fold bound was \
         given (SNAP cannot loop; unrolling needs one)"
    );
}
