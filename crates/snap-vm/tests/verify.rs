//! The verifier's rules and bounds on hand-made programs (paper §IV.A).

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::value::{Value, Word};
use snap_vm::verify::{Bounds, Rule, VerifyError, verify};
use snap_vm::vm::{NodeConfig, Vm};

fn node() -> NodeConfig {
    NodeConfig {
        address: [10, 0, 0, 2],
        ifaces: 2,
        mtu: 1500,
    }
}

fn prog(code: &[(Op, i32)]) -> Program {
    Program {
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        rb: 4,
        code: code
            .iter()
            .map(|&(op, imm)| Word::new(op as u8, imm))
            .collect(),
        ..Program::default()
    }
}

fn rejected(code: &[(Op, i32)]) -> VerifyError {
    verify(&prog(code), &node()).unwrap_err()
}

#[test]
fn ping_bounds() {
    use Op::*;
    let mut p = prog(&[
        (Forw, 0),
        (Bne, 5),
        (Push, 1),
        (Getsrc, 0),
        (Forwto, 0),
        (Pop, 0),
        (Demux, 0),
    ]);
    let payload = p.heap_bytes(b"0123456789");
    p.stack = vec![payload, Value::int(7), Value::int(0)];
    let b = verify(&p, &node()).unwrap();
    assert_eq!(
        b,
        Bounds {
            instructions: 7,
            stack_depth: 3 + 2, // push, getsrc
            heap_words: 2,      // getsrc's address
            sends: 2,           // forw, forwto (the node has 2 interfaces)
            delivers: true,
            bandwidth: p.packet_len() as u64 * 4,
        }
    );
    // And the interpreter stays inside them at the destination.
    let out = Vm::new(node()).run(0, 0, p.to_bytes().unwrap());
    assert!(out.stats.executed <= b.instructions);
    assert!(out.stats.max_depth <= b.stack_depth);
    assert!(out.stats.allocated <= b.heap_words);
}

#[test]
fn each_rule_names_the_instruction() {
    use Op::*;
    let e = rejected(&[(Nop, 0), (Bez, 0)]);
    assert_eq!(
        (e.pc, e.op, e.rule),
        (1, Some(Bez), Rule::BackwardBranch(0))
    );
    assert_eq!(
        e.to_string(),
        "instruction 1 (`bez`): branch offset 0 must be positive (branches only go forward)"
    );
    assert_eq!(rejected(&[(Ji, 3)]).rule, Rule::BranchPastEnd(3));
    assert!(
        verify(&prog(&[(Ji, 1)]), &node()).is_ok(),
        "landing on the end exits"
    );
    assert_eq!(rejected(&[(Mktup, 2), (Mktup, 1)]).rule, Rule::MktupSpacing);
    assert_eq!(
        rejected(&[(Nop, 0), (Mktup, 3), (Nop, 0)]).rule,
        Rule::MktupAtEnd
    );
    assert!(verify(&prog(&[(Mktup, 2), (Nop, 0), (Mktup, 1)]), &node()).is_ok());
    assert_eq!(rejected(&[(Pop, 1)]).rule, Rule::StrayImmediate);
    assert_eq!(rejected(&[(Pushh, 0)]).rule, Rule::BadHeapReference);
    assert_eq!(rejected(&[(Istag, 9)]).rule, Rule::BadTag);
    let mut p = prog(&[(Nop, 0)]);
    p.code.push(Word::new(0, 0));
    let e = verify(&p, &node()).unwrap_err();
    assert_eq!((e.pc, e.rule), (1, Rule::UnknownOpcode(0)));
    assert_eq!(verify(&prog(&[]), &node()).unwrap_err().rule, Rule::Empty);
    let mut p = prog(&[(Nop, 0)]);
    p.entry = 1;
    assert_eq!(verify(&p, &node()).unwrap_err().rule, Rule::EntryPoint);
    // calls must name a byte array.
    let mut p = prog(&[(Calls, 0)]);
    p.heap_addr([1, 2, 3, 4]);
    assert_eq!(
        verify(&p, &node()).unwrap_err().rule,
        Rule::BadHeapReference
    );
}

#[test]
fn bounds_count_only_what_can_run_from_the_entry_point() {
    use Op::*;
    let mut p = prog(&[
        (Mktup, 3),
        (Nop, 0),
        (Nop, 0),
        (Push, 1),
        (Send, 0),
        (Send, 0),
        (Send, 0),
    ]);
    let b = verify(&p, &node()).unwrap();
    assert_eq!(b.heap_words, 4, "mktup 3: a header and three values");
    assert_eq!(b.sends, 2, "three sends, two interfaces");
    assert_eq!(b.instructions, 7);
    p.entry = 3;
    let b = verify(&p, &node()).unwrap();
    assert_eq!((b.instructions, b.heap_words, b.stack_depth), (4, 0, 1));
}
