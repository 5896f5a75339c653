//! The assembler and disassembler: the paper's figures, every directive, every error, and
//! the round trip `assemble(disassemble(p)) == p` for arbitrary programs.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use snap_vm::asm::{AsmError, AsmErrorKind, assemble, disassemble, instruction, summary};
use snap_vm::op::Op;
use snap_vm::paper;
use snap_vm::program::Program;
use snap_vm::value::{Tag, Value, Word};

fn w(op: Op, imm: i32) -> Word {
    Word::new(op as u8, imm)
}

fn kind(text: &str) -> (usize, AsmErrorKind) {
    let AsmError { line, kind } = assemble(text).unwrap_err();
    (line, kind)
}

fn round_trips(p: &Program) {
    let text = disassemble(p);
    let back = assemble(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(&back, p, "{text}");
}

#[test]
fn fig2_as_printed_assembles_to_the_compiled_ping() {
    let p = assemble(
        "defaultRoute:\n forw\n paj -1\nr: pull 0\n pull 2\n demux\np: pull 0\n pull 2\n push r\n \
         push defaultRoute\n push 3\n getrb\n getsrc\n send\n pop\n popi 3\n exit\n",
    )
    .unwrap();
    assert_eq!(p.code.len(), 16);
    assert_eq!(p.code[1], w(Op::Paj, -1));
    assert_eq!(p.code[7], w(Op::Push, 2)); // r's index: paj -1 at 1 lands on s[0]
    assert_eq!(p.code[8], w(Op::Push, 0)); // defaultRoute, the child's entry point
    assert_eq!(p.code[14], w(Op::Popi, 3));
    // The other spellings of the same thing.
    let q = assemble("a: nop\npaj -.\nb: push b - a\npush . - 1\nji end - .\nend:").unwrap();
    assert_eq!(
        q.code,
        [
            w(Op::Nop, 0),
            w(Op::Paj, -1),
            w(Op::Push, 2),
            w(Op::Push, 2),
            w(Op::Ji, 1)
        ]
    );
}

#[test]
fn every_directive() {
    let p = assemble(
        r#"
        .src 192.168.1.1
        .dst 10.0.0.2       ; comments everywhere
        .port 0x1f90
        .rb 65535
        .entry start
        .bytes s "a;b\"\\\x01"
        .bytes h 0x00ff
        .addr a 1.2.3.4
        .float f -2.5
        .wide big 0x7fffffffffffffff
        .wide neg -3
        .tuple t (@a, -1, start, word:0x12345678, @s)
        .tuple empty ()
        .word 0xdeadbeef 7
        .stack 1, -2 @t
        .stack start word:0xffffffff
        nop
start:  istag bytes
        pushh @big
        calls "ess.get"
        calls "a;b\"\\\x01"
        .inst 0xfe000001
        "#,
    )
    .unwrap();
    assert_eq!((p.src, p.dst), ([192, 168, 1, 1], [10, 0, 0, 2]));
    assert_eq!((p.port, p.rb, p.entry), (8080, 65535, 1));
    let s_len = 1 + 2; // 6 bytes
    let offs = [
        0,
        s_len,
        s_len + 2,
        s_len + 4,
        s_len + 6,
        s_len + 9,
        s_len + 12,
    ];
    let (a, big, t) = (offs[2], offs[4], offs[6]);
    assert_eq!(
        &p.heap[..3],
        &[0x0A00_0006, u32::from_be_bytes(*b"a;b\""), 0x5C01_0000]
    );
    assert_eq!(&p.heap[3..5], &[0x0A00_0002, 0x00FF_0000]);
    assert_eq!(
        &p.heap[a as usize..a as usize + 2],
        &[0x0200_0001, 0x0102_0304]
    );
    assert_eq!(p.heap[offs[3] as usize + 1], (-2.5f32).to_bits());
    assert_eq!(
        &p.heap[big as usize..big as usize + 3],
        &[0x0600_0002, 0x7FFF_FFFF, 0xFFFF_FFFF]
    );
    assert_eq!(
        &p.heap[offs[5] as usize + 1..offs[5] as usize + 3],
        &[u32::MAX, (-3i32) as u32]
    );
    let tuple = &p.heap[t as usize..t as usize + 6];
    assert_eq!(
        tuple,
        &[
            0x0800_0005,
            Value::boxed(Tag::Addr, a).0,
            Value::int(-1).0,
            1,
            0x1234_5678,
            Value::boxed(Tag::Bytes, 0).0
        ]
    );
    let empty = t as usize + 6;
    assert_eq!(&p.heap[empty..empty + 3], &[0x0800_0000, 0xDEAD_BEEF, 7]);
    // The one new literal goes after the declared objects; the other reuses `s`.
    assert_eq!(
        &p.heap[empty + 3..],
        &[0x0A00_0007, u32::from_be_bytes(*b"ess."), 0x6765_7400]
    );
    assert_eq!(
        p.stack,
        [
            Value::int(1),
            Value::int(-2),
            Value::boxed(Tag::Tuple, t),
            Value::int(1),
            Value(u32::MAX)
        ]
    );
    assert_eq!(
        p.code,
        [
            w(Op::Nop, 0),
            w(Op::Istag, Tag::Bytes as i32),
            w(Op::Pushh, big as i32),
            w(Op::Calls, empty as i32 + 3),
            w(Op::Calls, 0),
            Word(0xFE00_0001),
        ]
    );
    round_trips(&p);
}

#[test]
fn errors_name_the_line_and_what_is_wrong() {
    let cases: &[(&str, usize, &str)] = &[
        ("nop\n frob", 2, r#"unknown mnemonic "frob""#),
        (
            "top:\n nop\n bne top",
            3,
            r#"branch to label "top" does not go forward (offset -1)"#,
        ),
        ("here: ji here", 1, "offset 0"),
        ("ji nowhere", 1, r#"unknown label "nowhere""#),
        ("pushh @nothing", 1, r#"no heap object named "nothing""#),
        ("a: nop\na: nop", 2, r#"label "a" defined twice"#),
        (
            ".addr x 1.2.3.4\n.wide x 5",
            2,
            r#"heap object "x" defined twice"#,
        ),
        ("push 12z", 1, r#"bad number "12z""#),
        (
            "push 16777216",
            1,
            "16777216 is outside -16777216..=16777215",
        ),
        ("popi -1", 1, "-1 is outside 0..=33554431"),
        (".port 65536", 1, "65536 is outside 0..=65535"),
        (".src 10.0.0", 1, r#"bad IP address "10.0.0""#),
        (
            ".src fd00::1\n.dst 10.0.0.2",
            2,
            ".src and .dst of different address families",
        ),
        (".bytes b \"open", 1, "bad string or byte literal"),
        (".bytes b 0xabc", 1, "bad string or byte literal 0xabc"),
        (".bytes b \"\\q\"", 1, "bad string or byte literal"),
        (".frob 1", 1, r#"unknown directive ".frob""#),
        ("push 1 +", 1, r#"bad immediate or value "1 +""#),
        ("push @x", 1, "bad immediate or value"),
        (
            ".tuple t 1, 2",
            1,
            "expected a parenthesised list of values",
        ),
        (".stack @", 1, "expected an object name after @"),
        (".stack .", 1, r#"bad immediate or value ".""#),
        ("\n\n.entry missing", 3, r#"unknown label "missing""#),
    ];
    for &(text, line, msg) in cases {
        let e = assemble(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.to_string().contains(msg), "{text:?}: {e}");
        assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
    }
    assert_eq!(
        kind("x: ji x"),
        (
            1,
            AsmErrorKind::NotForward {
                label: "x".into(),
                offset: 0
            }
        )
    );
    // A label two lines ahead is fine; a raw backward offset assembles (the verifier rejects).
    assert_eq!(assemble("ji end\nnop\nend:").unwrap().code[0], w(Op::Ji, 2));
    assert_eq!(assemble("ji -1").unwrap().code[0], w(Op::Ji, -1));
}

#[test]
fn the_disassembly_labels_branch_targets_and_names_objects() {
    let p = paper::ping([10, 0, 0, 1], [10, 0, 0, 2], 7, b"ping", 8);
    let text = disassemble(&p);
    assert!(
        text.contains(".src 10.0.0.1\n.dst 10.0.0.2\n.port 7\n.rb 8\n.entry 0\n"),
        "{text}"
    );
    assert!(
        text.contains(".bytes h0 \"ping\"\n.stack @h0 7 0"),
        "{text}"
    );
    assert!(text.contains("    bne L6"), "{text}");
    assert!(text.contains("L6:\n    demux"), "{text}");
    round_trips(&p);
    // A calls by name prints as its string.
    let c = assemble(".bytes x 0x01\ncalls \"ess.get\"\ncalls @x").unwrap();
    let text = disassemble(&c);
    assert!(text.contains("calls \"ess.get\""), "{text}");
    assert!(text.contains("calls @h0"), "{text}");
    round_trips(&c);
}

#[test]
fn oddities_round_trip_as_raw_words() {
    let mut p = Program {
        code: vec![
            Word(0xFE00_0003), // unknown opcode
            w(Op::Ji, 0),      // a branch that does not go forward
            w(Op::Bne, 40),    // past the end
            w(Op::Pop, 9),     // a stray immediate
            w(Op::Istag, 77),  // no such tag
            w(Op::Pushh, 3),   // into the middle of an object
            w(Op::Bez, 1),     // to the end
        ],
        heap: vec![
            0x0A00_0003,
            0x6162_63FF, // bytes with non-zero padding
            0x0000_0002,
            5,
            6, // an Int-tagged "object"
            0x0400_0001,
            (f32::NAN.to_bits() | 1), // a float NaN with a payload
            0x0800_0009,              // a tuple running off the heap
        ],
        stack: vec![
            Value::boxed(Tag::Addr, 0),
            Value(0xFFFF_FFFF),
            Value::boxed(Tag::Bytes, 99),
        ],
        entry: 3,
        ..Program::default()
    };
    round_trips(&p);
    let text = disassemble(&p);
    assert!(text.contains(".inst 0xfe000003"), "{text}");
    assert!(
        text.contains("ji 0") && text.contains("bne 40") && text.contains("istag 77"),
        "{text}"
    );
    assert!(text.contains(".word 0x0a000003"), "{text}");
    assert!(text.contains("    bez L7"), "{text}");
    assert!(text.ends_with("L7:\n"), "{text}");
    p.heap.clear();
    round_trips(&p);
}

#[test]
fn every_fixture_round_trips() {
    for (name, text) in paper::examples() {
        let p = assemble(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        round_trips(&p);
    }
}

#[test]
fn instruction_and_summary_lines() {
    assert_eq!(instruction(w(Op::Bne, 5)), "bne 5");
    assert_eq!(instruction(w(Op::Paj, -1)), "paj -1");
    assert_eq!(instruction(w(Op::Forw, 0)), "forw");
    assert_eq!(instruction(Word(0xFE00_0000)), ".inst 0xfe000000");
    let p = paper::ping([10, 0, 0, 1], [10, 0, 0, 2], 7, b"hi", 8);
    assert_eq!(
        summary(&p),
        "10.0.0.1 → 10.0.0.2 port 7 rb 8 entry 0 (forw), 7 instructions, 2 heap words, stack [@h0 7 0]"
    );
    let long = Program {
        code: vec![w(Op::Exit, 0)],
        stack: (0..10).map(Value::int).collect(),
        ..Program::default()
    };
    assert!(
        summary(&long).ends_with("stack [… 2 3 4 5 6 7 8 9]"),
        "{}",
        summary(&long)
    );
}

fn arb_word() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        (prop::sample::select(Op::ALL), any::<u32>())
            .prop_map(|(op, imm)| Word::new(op as u8, imm as i32).0),
        (prop::sample::select(Op::ALL), -3i32..12).prop_map(|(op, imm)| Word::new(op as u8, imm).0),
    ]
}

fn arb_heap() -> impl Strategy<Value = Vec<u32>> {
    let object = prop_oneof![
        any::<u32>().prop_map(|w| vec![w]),
        prop::collection::vec(any::<u8>(), 0..9).prop_map(|b| {
            let mut p = Program::default();
            p.heap_bytes(&b);
            p.heap
        }),
        any::<[u8; 4]>().prop_map(|a| {
            let mut p = Program::default();
            p.heap_addr(a);
            p.heap
        }),
        any::<[u8; 16]>().prop_map(|a| {
            let mut p = Program::default();
            p.heap_ip(a.into());
            p.heap
        }),
        any::<i64>().prop_map(|x| {
            let mut p = Program::default();
            p.heap_wide(x);
            p.heap
        }),
        prop::collection::vec(any::<u32>(), 0..4).prop_map(|v| {
            let mut p = Program::default();
            let vals: Vec<Value> = v.iter().map(|&x| Value(x % 64)).collect();
            p.heap_tuple(&vals);
            p.heap
        }),
        any::<u32>().prop_map(|bits| vec![0x0400_0001, bits]),
    ];
    prop::collection::vec(object, 0..6).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_program_round_trips(
        code in prop::collection::vec(arb_word(), 0..20),
        heap in arb_heap(),
        stack in prop::collection::vec(prop_oneof![any::<u32>(), 0u32..0x0C00_0010], 0..6),
        src in any::<[u8; 4]>(),
        dst in any::<[u8; 4]>(),
        port in any::<u16>(),
        rb in any::<u16>(),
        entry in any::<u16>(),
        six in proptest::option::of(any::<([u8; 16], [u8; 16])>()),
    ) {
        // IPv6 addresses (the IPv4 fields then zero, as a packet reads back).
        let (src, dst) = if six.is_some() { ([0; 4], [0; 4]) } else { (src, dst) };
        let ipv6 = six.map(|(src, dst)| snap_vm::program::Ipv6Addrs { src, dst });
        let p = Program {
            src, dst, ipv6, port, rb, entry,
            code: code.into_iter().map(Word).collect(),
            heap,
            stack: stack.into_iter().map(Value).collect(),
        };
        let text = disassemble(&p);
        let back = assemble(&text);
        prop_assert_eq!(back.as_ref(), Ok(&p), "{}", text);
    }
}

fn arb_line() -> impl Strategy<Value = String> {
    let mnemonic = prop::sample::select(vec![
        "push", "ji", "bne", "paj", "pushh", "calls", "istag", "mktup", "forw", ".stack",
        ".tuple t", ".bytes b", ".addr a", ".word", ".inst", ".entry", ".wide w", ".float f", "x:",
        "frob",
    ]);
    (mnemonic, "[a-z0-9 .:@\"\\\\;,()+x-]{0,12}").prop_map(|(m, rest)| format!("{m} {rest}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any text assembles or is an error naming one of its lines; never a panic.
    #[test]
    fn arbitrary_text_never_panics(lines in prop::collection::vec(arb_line(), 0..8)) {
        let text = lines.join("\n");
        match assemble(&text) {
            Ok(p) => prop_assert_eq!(assemble(&disassemble(&p)), Ok(p)),
            Err(e) => prop_assert!(e.line >= 1 && e.line <= lines.len().max(1), "{}", e),
        }
    }
}
