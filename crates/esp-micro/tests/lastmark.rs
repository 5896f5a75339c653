//! The shipped microcoded LASTMARK (`examples/esp-microcode/lastmark.snap`) against the
//! built-in (`esp_proto::exec::execute`): two stores built alike, random pre-populated
//! bindings, MARKs (the built-in, on both stores) interleaved with LASTMARKs of random
//! tags, node operands and node ids over the whole u64 range, time advancing so marks
//! expire. Equal verdicts and operands, and equal store contents after every packet.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use esp_micro::Microcode;
use esp_proto::exec::{Context, Env, Verdict, execute};
use esp_proto::instr::Instruction;
use ess::{HashKey, Instant, Tag, Value};
use proptest::prelude::*;
use support::{Pre, TAGS, populated, pre, same_contents, value};

const LASTMARK: &str = include_str!("../microcode/lastmark.snap");

/// (a MARK rather than a LASTMARK, tag index, node operand, node id, ticks since the last
/// packet).
type Packets = Vec<(bool, usize, u64, u64, u64)>;

/// Runs `packets` through the built-in LASTMARK and through `micro` (MARKs through the
/// built-in on both) on two stores pre-populated by `pre`; the first difference, if any.
fn differ(micro: &Microcode, pre: &Pre, packets: &Packets) -> Result<(), String> {
    let (mut a, mut b, mut now) = populated(pre);
    for (i, &(mark, t, operand, node, dt)) in packets.iter().enumerate() {
        now += dt;
        let at = Instant::from_ticks(now);
        let env = Env::new(node, HashKey::from_seed(9));
        let tag = Tag(TAGS[t]);
        if mark {
            let ra = execute(
                &mut Context::new(&mut a, &env, 5),
                at,
                &mut Instruction::Mark { tag },
            );
            let rb = execute(
                &mut Context::new(&mut b, &env, 5),
                at,
                &mut Instruction::Mark { tag },
            );
            assert_eq!(ra, rb, "the built-in MARK diverged");
            continue;
        }
        let mut instr = Instruction::LastMark {
            tag,
            node: Value(operand),
        };
        let built_in = execute(&mut Context::new(&mut a, &env, 5), at, &mut instr);
        let mut operands = [tag.0, operand];
        let microcoded = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut operands);
        if built_in != microcoded {
            return Err(format!(
                "packet {i} (tag {:#x}, node {node:#x}): built-in {built_in:?}, microcode \
                 {microcoded:?}",
                tag.0
            ));
        }
        let Instruction::LastMark { tag: t, node: n } = instr else {
            unreachable!()
        };
        if [t.0, n.0] != operands {
            return Err(format!(
                "packet {i}: operands {:?} vs {operands:?}",
                [t.0, n.0]
            ));
        }
        same_contents(i, &mut a, &mut b, at)?;
    }
    Ok(())
}

fn packets() -> impl Strategy<Value = Packets> {
    proptest::collection::vec(
        (
            proptest::bool::weighted(0.3),
            0..TAGS.len(),
            value(6),
            value(6),
            0u64..12,
        ),
        1..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn microcoded_lastmark_is_the_built_in(pre in pre(6), packets in packets()) {
        let micro = Microcode::assemble(LASTMARK).unwrap();
        prop_assert_eq!(differ(&micro, &pre, &packets), Ok(()));
    }
}

/// The comparison can fail: microcode that records the node whether or not the tag is
/// bound, or records another parameter, is caught on a plain stream.
#[test]
fn wrong_microcode_is_caught() {
    // Mark tag 1 at node 0xA1; ask for tags 1 (marked) and 2 (not) at node 0xB2.
    let stream: Packets = vec![
        (true, 1, 0, 0xA1, 1),
        (false, 1, 0, 0xB2, 1),
        (false, 2, 0, 0xB2, 1),
    ];
    let right = Microcode::assemble(LASTMARK).unwrap();
    assert_eq!(differ(&right, &Vec::new(), &stream), Ok(()));
    let test = "    bez done\n";
    assert!(LASTMARK.contains(test));
    let always = Microcode::assemble(&LASTMARK.replace(test, "    pop\n")).unwrap();
    assert!(differ(&always, &Vec::new(), &stream).is_err());
    let inverted = Microcode::assemble(&LASTMARK.replace(test, "    bne done\n")).unwrap();
    assert!(differ(&inverted, &Vec::new(), &stream).is_err());
    let param = "    push 0              ; [t, n, 0]";
    assert!(LASTMARK.contains(param));
    let iface =
        Microcode::assemble(&LASTMARK.replace(param, &param.replace("push 0", "push 1"))).unwrap();
    assert!(differ(&iface, &Vec::new(), &stream).is_err());
}

/// A mark expires with its binding: after τ the node is no longer recorded.
#[test]
fn an_expired_mark_is_not_seen() {
    let micro = Microcode::assemble(LASTMARK).unwrap();
    let stream: Packets = vec![
        (true, 3, 0, 0xA1, 1),
        (false, 3, 9, 0xB2, 39),
        (false, 3, 9, 0xB2, 1),
    ];
    assert_eq!(differ(&micro, &Vec::new(), &stream), Ok(()));
    let (_, mut b, _) = populated(&Vec::new());
    let env = Env::new(0xB2, HashKey::from_seed(9));
    let mark = Env::new(0xA1, HashKey::from_seed(9));
    let t0 = Instant::from_ticks(1);
    execute(
        &mut Context::new(&mut b, &mark, 5),
        t0,
        &mut Instruction::Mark { tag: Tag(3) },
    )
    .unwrap();
    let mut ops = [3, 9];
    let live = Instant::from_ticks(40);
    let r = micro.run(&mut Context::new(&mut b, &env, 5), live, &mut ops);
    assert_eq!((r, ops), (Ok(Verdict::Forward), [3, 0xB2]));
    let mut ops = [3, 9];
    let gone = Instant::from_ticks(41);
    let r = micro.run(&mut Context::new(&mut b, &env, 5), gone, &mut ops);
    assert_eq!((r, ops), (Ok(Verdict::Forward), [3, 9]));
}
