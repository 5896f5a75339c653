//! The microcode ABI: operands in and out, the verdict codes, the journal (reads see the
//! program's own writes; nothing is applied on an abort or a failure), and what fails.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use esp_micro::{Error, Failure, MAX_INSTRUCTIONS, Microcode, OP_MICRO};
use esp_proto::exec::{Abort, Context, Env, Verdict};
use esp_proto::instr::InstrError;
use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};
use snap_vm::verify::Rule;
use snap_vm::vm::Fault;

fn store() -> Ess {
    Ess::new(EssConfig::new(4, 100, 1, HashKey::from_seed(3)).unwrap())
}

const NOW: Instant = Instant::from_ticks(5);

fn run(text: &str, store: &mut Ess, operands: &mut [u64]) -> Result<Verdict, Failure> {
    let env = Env::new(1, HashKey::from_seed(9));
    Microcode::assemble(text).unwrap().run_detailed(
        &mut Context::new(store, &env, 1),
        NOW,
        operands,
    )
}

/// PUT, then GET of the same tag into operand 1, then `verdict`: operands [tag, value].
fn put_get(verdict: i32) -> String {
    format!(
        "pull 1\npull 1\ncalls \"ess.put\"\npop\npop\npull 0\ncalls \"ess.get\"\npush {verdict}"
    )
}

#[test]
fn reads_see_writes_and_operands_come_back() {
    let mut s = store();
    let mut operands = [7, 1234];
    // [t, v] -> [t, v, t, v] put -> [t, v] pop v -> [t] dup -> [t, t] get -> [t, v'] verdict.
    assert_eq!(
        run(&put_get(0), &mut s, &mut operands),
        Ok(Verdict::Forward)
    );
    assert_eq!(operands, [7, 1234]);
    assert_eq!(s.get(NOW, Tag(7)), Some(Value(1234)));
    // Drop applies the writes too, as a built-in's drop does.
    let mut operands = [8, 99];
    assert_eq!(run(&put_get(1), &mut s, &mut operands), Ok(Verdict::Drop));
    assert_eq!(s.get(NOW, Tag(8)), Some(Value(99)));
}

#[test]
fn aborts_and_failures_apply_nothing() {
    for (verdict, want) in [
        (2, Failure::Abort(Abort::MissingState)),
        (3, Failure::Abort(Abort::StoreFull)),
        (4, Failure::BadVerdict(4)),
        (-1, Failure::BadVerdict(-1)),
    ] {
        let mut s = store();
        let mut operands = [7, 1234];
        assert_eq!(run(&put_get(verdict), &mut s, &mut operands), Err(want));
        assert_eq!(s.get(NOW, Tag(7)), None, "verdict {verdict}");
        assert_eq!(operands, [7, 1234]);
    }
    // A fault after a write.
    let mut s = store();
    let mut operands = [7, 1234];
    let faulty = "pull 1\npull 1\ncalls \"ess.put\"\npush 0\npush 0\ndiv";
    assert_eq!(
        run(faulty, &mut s, &mut operands),
        Err(Failure::Fault(Fault::DivideByZero))
    );
    assert_eq!(s.get(NOW, Tag(7)), None);
    // Too short a stack: the operands were popped.
    let mut operands = [7, 1234];
    assert_eq!(
        run("pop\npop\npush 0", &mut s, &mut operands),
        Err(Failure::ShortStack)
    );
}

#[test]
fn router_sees_malformed_for_failures() {
    assert_eq!(
        Failure::BadVerdict(9).abort(),
        Abort::Malformed(InstrError::Opcode { opcode: OP_MICRO })
    );
    assert_eq!(Failure::Abort(Abort::StoreFull).abort(), Abort::StoreFull);
    let env = Env::new(1, HashKey::from_seed(9));
    let mut s = store();
    let m = Microcode::assemble("push 5").unwrap();
    let mut ctx = Context::new(&mut s, &env, 1);
    assert_eq!(
        m.run(&mut ctx, NOW, &mut []),
        Err(Abort::Malformed(InstrError::Opcode { opcode: OP_MICRO }))
    );
    assert_eq!(
        m.run(&mut ctx, NOW, &mut [0; 9]).unwrap_err(),
        Failure::TooManyOperands.abort()
    );
}

#[test]
fn programs_are_verified() {
    let e = Microcode::assemble("forw\npush 0").unwrap_err();
    assert!(
        matches!(e, Error::Verify(v) if v.rule == Rule::Network),
        "{e}"
    );
    assert!(matches!(Microcode::assemble("bogus"), Err(Error::Asm(_))));
    let long = "nop\n".repeat(MAX_INSTRUCTIONS as usize) + "push 0";
    assert!(matches!(
        Microcode::assemble(&long),
        Err(Error::TooLong { instructions }) if instructions == MAX_INSTRUCTIONS + 1
    ));
    let m = Microcode::assemble("push 0").unwrap();
    assert_eq!(m.bounds().instructions, 1);
}

#[test]
fn a_full_store_refuses_the_journal_whole() {
    // 16 bindings: 15 taken, a program creating two aborts and creates neither.
    let mut s = store();
    for t in 100..115 {
        s.put(NOW, Tag(t), Value(1)).unwrap();
    }
    let two = "push 1\ntowide\ncalls \"ess.count\"\npop\npush 2\ntowide\ncalls \"ess.count\"\npop\npush 0";
    assert_eq!(
        run(two, &mut s, &mut []),
        Err(Failure::Abort(Abort::StoreFull))
    );
    assert_eq!((s.get(NOW, Tag(1)), s.get(NOW, Tag(2))), (None, None));
    let one = "push 1\ntowide\ncalls \"ess.count\"\npop\npush 0";
    assert_eq!(run(one, &mut s, &mut []), Ok(Verdict::Forward));
    assert_eq!(s.get(NOW, Tag(1)), Some(Value(1)));
}

/// `wide.and`, `wide.or` and `wide.xor` on all 64 bits, small integers read as 64 bits;
/// an unknown service faults.
#[test]
fn wide_bitwise_services() {
    let a = 0xf0f0_0000_ffff_0001_u64;
    let b = 0x8ff0_0000_0f0f_0003_u64;
    for (service, want) in [("wide.and", a & b), ("wide.or", a | b), ("wide.xor", a ^ b)] {
        let mut s = store();
        // [a, b, r] with r = a op b stored back into operand 1.
        let text = format!("pull 1\npull 1\ncalls \"{service}\"\nstore 1\npush 0");
        let mut operands = [a, b];
        assert_eq!(run(&text, &mut s, &mut operands), Ok(Verdict::Forward));
        assert_eq!(operands, [a, want], "{service}");
    }
    let mut operands = [a];
    let text = "pull 0\npush 6\ncalls \"wide.and\"\nstore 1\npush 0";
    assert_eq!(run(text, &mut store(), &mut operands), Ok(Verdict::Forward));
    assert_eq!(operands, [a & 6]);
    let mut operands = [a, b];
    assert_eq!(
        run(
            "pull 1\npull 1\ncalls \"wide.nand\"\npush 0",
            &mut store(),
            &mut operands
        ),
        Err(Failure::Fault(Fault::NoService))
    );
}
