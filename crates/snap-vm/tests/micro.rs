//! Bare runs (`MicroProgram`): operands in, stack out, no sends or deliveries, limits and
//! services honoured, the verifier's micro rules.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use snap_vm::asm::assemble;
use snap_vm::program::Program;
use snap_vm::value::Value;
use snap_vm::verify::{Rule, verify_micro};
use snap_vm::vm::{End, Fault, Frame, Limits, MicroProgram, Scratch, ServiceSet, Services};

const ROOMY: Limits = Limits {
    instructions: 64,
    stack: 64,
    heap_words: 256,
};

fn asm(text: &str) -> Program {
    assemble(text).expect("assembles")
}

fn run(p: &MicroProgram, operands: &[u64], limits: Limits) -> snap_vm::vm::MicroOutcome {
    p.run(
        &mut Scratch::new(),
        &mut Services::new(),
        0,
        operands,
        limits,
    )
}

#[test]
fn operands_are_wide_and_operand_zero_is_deepest() {
    // a b -> a - b, then a small 7 on top.
    let p = MicroProgram::new(&asm("wsub\npush 7\nexit")).unwrap();
    let big = (1u64 << 40) + 5;
    let out = run(&p, &[big, 3], ROOMY);
    assert_eq!(out.end, End::Exit);
    assert_eq!(out.stack, vec![(1i64 << 40) + 2, 7]);
    assert_eq!(out.executed, 3);
    // Untouched operands come back as they went in, all 64 bits (u64 → i64 bit pattern).
    let out = run(&p, &[u64::MAX, 1, 2], ROOMY);
    assert_eq!(out.stack, vec![-1, -1, 7]);
}

#[test]
fn sends_and_deliveries_fault_even_unverified() {
    // `forw` at "its destination" would fall through in a packet (dst = here = 0.0.0.0
    // here): a bare run must fault all the same.
    for text in [
        "forw\npush 1",
        "here\nforwto",
        "push 0\npush 0\npush 0\nhere\nsend",
        "push 1\npush 7\ndemux",
    ] {
        let p = MicroProgram::unverified(&asm(text));
        let out = run(&p, &[], ROOMY);
        assert_eq!(out.end, End::Fault(Fault::Network), "{text}");
        let e = verify_micro(&asm(text)).unwrap_err();
        assert_eq!(e.rule, Rule::Network, "{text}");
        assert!(MicroProgram::new(&asm(text)).is_err());
    }
}

#[test]
fn verify_micro_keeps_verifier_rules_and_bounds() {
    let e = verify_micro(&asm("ji 0")).unwrap_err();
    assert_eq!(e.rule, Rule::BackwardBranch(0));
    // The stack directive is not part of a bare program: bounds count code alone.
    let b = verify_micro(&asm(".stack 1 2 3\npush 1\npush 2\nadd")).unwrap();
    assert_eq!(
        (b.instructions, b.stack_depth, b.sends, b.delivers),
        (3, 2, 0, false)
    );
    let limits = Limits::from_bounds(&b, 2);
    assert_eq!((limits.stack, limits.heap_words), (4, 6));
}

#[test]
fn limits_are_enforced() {
    let p = MicroProgram::new(&asm("push 1\npush 2\npush 3\nexit")).unwrap();
    let tight = Limits {
        instructions: 3,
        ..ROOMY
    };
    let out = run(&p, &[], tight);
    assert_eq!(
        (out.end, out.executed),
        (End::Fault(Fault::ResourceBound), 0)
    );
    let shallow = Limits { stack: 2, ..ROOMY };
    assert_eq!(run(&p, &[], shallow).end, End::Fault(Fault::BufferLimit));
    // Each operand takes 3 heap words.
    let small_heap = Limits {
        heap_words: 5,
        ..ROOMY
    };
    assert_eq!(
        run(&p, &[1, 2], small_heap).end,
        End::Fault(Fault::BufferLimit)
    );
    assert_eq!(run(&p, &[1], small_heap).end, End::Exit);
}

/// A service set of one: `twice` doubles the top of the stack, counting its calls.
struct Twice(u32);

impl ServiceSet for Twice {
    fn call(&mut self, name: &[u8], _now: u64, frame: &mut Frame<'_>) -> Result<(), Fault> {
        if name != b"twice" {
            return Err(Fault::NoService);
        }
        self.0 += 1;
        let x = frame.pop_wide()?;
        let v = frame.alloc_wide(x * 2)?;
        frame.push(v)
    }
}

#[test]
fn calls_reach_the_callers_services() {
    let p = MicroProgram::new(&asm("calls \"twice\"\ncalls \"twice\"")).unwrap();
    let mut set = Twice(0);
    let out = p.run(&mut Scratch::new(), &mut set, 0, &[21], ROOMY);
    assert_eq!((out.end, out.stack), (End::Exit, vec![84]));
    assert_eq!(set.0, 2);
    let p = MicroProgram::new(&asm("calls \"other\"")).unwrap();
    let out = p.run(&mut Scratch::new(), &mut set, 0, &[21], ROOMY);
    assert_eq!(out.end, End::Fault(Fault::NoService));
}

#[test]
fn scratch_is_reused_cleanly() {
    let p = MicroProgram::new(&asm("wadd")).unwrap();
    let mut scratch = Scratch::new();
    let mut services = Services::new();
    for i in 0..4u64 {
        let out = p.run(&mut scratch, &mut services, 0, &[i, 10], ROOMY);
        assert_eq!(out.stack, vec![i as i64 + 10]);
    }
}

#[test]
fn stack_values_read_as_integers() {
    let p = MicroProgram::new(&asm("pop\npush -5\ntowide\npush 9")).unwrap();
    let out = run(&p, &[1], ROOMY);
    assert_eq!(out.stack, vec![-5, 9]);
    assert_eq!(Value::int(9).as_int(), 9);
}

proptest! {
    /// Any code, unverified, with any operands: no panic, never more instructions than the
    /// code has from its entry point, never a send or delivery.
    #[test]
    fn arbitrary_code_is_contained(
        words in proptest::collection::vec(any::<u32>(), 1..40),
        operands in proptest::collection::vec(any::<u64>(), 0..6),
    ) {
        let program = Program {
            code: words.iter().map(|&w| snap_vm::value::Word(w)).collect(),
            ..Program::default()
        };
        let p = MicroProgram::unverified(&program);
        let out = run(&p, &operands, ROOMY);
        prop_assert!(out.executed as usize <= words.len());
        prop_assert!(matches!(out.end, End::Exit | End::Fault(_)));
        if let Ok(b) = verify_micro(&program) {
            prop_assert!(out.executed <= b.instructions);
            let out = run(&p, &operands, Limits::from_bounds(&b, operands.len()));
            prop_assert!(!matches!(out.end, End::Fault(Fault::BufferLimit | Fault::ResourceBound)));
        }
    }
}
