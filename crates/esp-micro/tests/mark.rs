//! The shipped microcoded MARK (`examples/esp-microcode/mark.snap`) against the built-in
//! (`esp_proto::exec::execute`): two stores built alike, random pre-populated bindings,
//! random tags, a node id per packet over the whole u64 range (as if the packet crossed a
//! different router each time), time advancing so bindings expire (a refreshed lifetime
//! would show as a binding one store still has), a store small enough to fill. Equal
//! verdicts, aborts and operands, and equal store contents after every packet.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use esp_micro::Microcode;
use esp_proto::exec::{Abort, Context, Env, execute};
use esp_proto::instr::Instruction;
use ess::{HashKey, Instant, Tag, Value};
use proptest::prelude::*;
use support::{Pre, TAGS, populated, pre, same_contents, value};

const MARK: &str = include_str!("../microcode/mark.snap");

/// (tag index, node id, ticks since the last packet).
type Packets = Vec<(usize, u64, u64)>;

/// Runs `packets` through the built-in MARK and through `micro` on two stores
/// pre-populated by `pre`; the first difference, if any.
fn differ(micro: &Microcode, pre: &Pre, packets: &Packets) -> Result<(), String> {
    let (mut a, mut b, mut now) = populated(pre);
    for (i, &(t, node, dt)) in packets.iter().enumerate() {
        now += dt;
        let at = Instant::from_ticks(now);
        let env = Env::new(node, HashKey::from_seed(9));
        let tag = Tag(TAGS[t]);
        let mut instr = Instruction::Mark { tag };
        let built_in = execute(&mut Context::new(&mut a, &env, 5), at, &mut instr);
        let mut operands = [tag.0];
        let microcoded = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut operands);
        if built_in != microcoded {
            return Err(format!(
                "packet {i} (tag {:#x}, node {node:#x}): built-in {built_in:?}, microcode \
                 {microcoded:?}",
                tag.0
            ));
        }
        let Instruction::Mark { tag: t } = instr else {
            unreachable!()
        };
        if [t.0] != operands {
            return Err(format!("packet {i}: operands {:?} vs {operands:?}", [t.0]));
        }
        same_contents(i, &mut a, &mut b, at)?;
    }
    Ok(())
}

fn packets() -> impl Strategy<Value = Packets> {
    proptest::collection::vec((0..TAGS.len(), value(6), 0u64..12), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn microcoded_mark_is_the_built_in(pre in pre(6), packets in packets()) {
        let micro = Microcode::assemble(MARK).unwrap();
        prop_assert_eq!(differ(&micro, &pre, &packets), Ok(()));
    }
}

/// The comparison can fail: microcode binding another parameter than the node id, or
/// nothing at all, is caught on a plain stream.
#[test]
fn wrong_microcode_is_caught() {
    let stream: Packets = (0..4).map(|i| (i, 0xA000 + i as u64, 1)).collect();
    let right = Microcode::assemble(MARK).unwrap();
    assert_eq!(differ(&right, &Vec::new(), &stream), Ok(()));
    let param = "    push 0              ; [t, t, 0]";
    assert!(MARK.contains(param));
    // Param 1 is the interface, not the node id.
    let wrong =
        Microcode::assemble(&MARK.replace(param, &param.replace("push 0", "push 1"))).unwrap();
    assert!(differ(&wrong, &Vec::new(), &stream).is_err());
    // Writes nothing: the journal is never committed.
    let put = "calls \"ess.put\"";
    assert_eq!(MARK.matches(put).count(), 1);
    let wrong = Microcode::assemble(&MARK.replace(put, "pop\n    pop\n    push 1")).unwrap();
    assert!(differ(&wrong, &Vec::new(), &stream).is_err());
}

/// A full store: both abort with StoreFull and leave the store as it was; an existing
/// binding is overwritten without a new one.
#[test]
fn store_full_aborts_alike() {
    let pre: Pre = (0..8).map(|t| (t, 1, 0)).collect();
    let micro = Microcode::assemble(MARK).unwrap();
    // Tag 8 finds no room until the pre-populated bindings expire at tick 40; tag 0 is
    // bound and is overwritten.
    let stream: Packets = vec![(8, 5, 1), (0, 6, 1), (8, 7, 40)];
    assert_eq!(differ(&micro, &pre, &stream), Ok(()));
    let (_, mut b, _) = populated(&pre);
    let env = Env::new(77, HashKey::from_seed(9));
    let at = Instant::from_ticks(1);
    let full = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut [TAGS[8]]);
    assert_eq!(full, Err(Abort::StoreFull));
    assert_eq!(b.get(at, Tag(TAGS[8])), None);
    let ok = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut [TAGS[0]]);
    assert_eq!(ok, Ok(esp_proto::exec::Verdict::Forward));
    assert_eq!(b.get(at, Tag(TAGS[0])), Some(Value(77)));
}
