//! What the differential tests share: the tags, two stores built alike and pre-populated
//! alike, the comparison of what they hold, and the value strategy.

// Each test file uses its own part of the support.
#![allow(dead_code)]

use esp_micro::Microcode;
use esp_proto::exec::{Context, Env, execute};
use esp_proto::instr::Instruction;
use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};
use proptest::prelude::*;

/// The tags packets and pre-population use: more than the store holds.
pub(crate) const TAGS: [u64; 14] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1 << 63, u64::MAX];

/// A store of 8 bindings living 40 ticks.
pub(crate) fn store() -> Ess {
    Ess::new(EssConfig::new(3, 40, 1, HashKey::from_seed(0xc0de)).unwrap())
}

/// (tag index, value, tick) puts, applied to both stores.
pub(crate) type Pre = Vec<(usize, u64, u64)>;

/// Two stores populated alike by `pre`, and the tick the last put happened at.
pub(crate) fn populated(pre: &Pre) -> (Ess, Ess, u64) {
    let (mut a, mut b) = (store(), store());
    let mut now = 0u64;
    for &(t, v, at) in pre {
        now = now.max(at);
        let at = Instant::from_ticks(now);
        let ra = a.put(at, Tag(TAGS[t]), Value(v));
        let rb = b.put(at, Tag(TAGS[t]), Value(v));
        assert_eq!(ra, rb, "pre-population diverged");
    }
    (a, b, now)
}

/// Whether `a` and `b` hold the same for every tag at `at` (after packet `i`), and have
/// created and refused as many bindings.
pub(crate) fn same_contents(i: usize, a: &mut Ess, b: &mut Ess, at: Instant) -> Result<(), String> {
    for tag in TAGS {
        let (x, y) = (a.get(at, Tag(tag)), b.get(at, Tag(tag)));
        if x != y {
            return Err(format!("packet {i}: tag {tag:#x} holds {x:?} vs {y:?}"));
        }
    }
    // Bindings created and creations refused are counted alike. (`reclaimed` may differ:
    // expired entries are reclaimed a little earlier or later, which no lookup sees.)
    let (x, y) = (a.counters(), b.counters());
    if (x.created, x.refused) != (y.created, y.refused) {
        return Err(format!("packet {i}: counters {x:?} vs {y:?}"));
    }
    Ok(())
}

/// Values near the edges of u64 (and small ones, below `small`), or any.
pub(crate) fn value(small: u64) -> impl Strategy<Value = u64> + Clone {
    prop_oneof![
        0u64..small,
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1 << 63),
        Just((1 << 63) - 1),
        any::<u64>(),
    ]
}

/// Pre-populations of up to 12 puts.
pub(crate) fn pre(small: u64) -> impl Strategy<Value = Pre> {
    proptest::collection::vec((0..TAGS.len(), value(small), 0u64..30), 0..12)
}

/// (tag index, threshold, ticks since the last packet).
pub(crate) type Packets = Vec<(usize, u64, u64)>;

/// COUNT's differential: runs `packets` through the built-in COUNT and through `micro` on
/// two stores pre-populated by `pre`; the first difference, if any.
pub(crate) fn count_differs(micro: &Microcode, pre: &Pre, packets: &Packets) -> Result<(), String> {
    let (mut a, mut b, mut now) = populated(pre);
    let env = Env::new(1, HashKey::from_seed(9));
    for (i, &(t, thresh, dt)) in packets.iter().enumerate() {
        now += dt;
        let at = Instant::from_ticks(now);
        let counter = Tag(TAGS[t]);
        let mut instr = Instruction::Count { counter, thresh };
        let built_in = execute(&mut Context::new(&mut a, &env, 5), at, &mut instr);
        let mut operands = [counter.0, thresh];
        let microcoded = micro.run(&mut Context::new(&mut b, &env, 5), at, &mut operands);
        if built_in != microcoded {
            return Err(format!(
                "packet {i} (tag {:#x}, thresh {thresh}): built-in {built_in:?}, microcode {microcoded:?}",
                counter.0
            ));
        }
        let Instruction::Count {
            counter: c,
            thresh: h,
        } = instr
        else {
            unreachable!()
        };
        if [c.0, h] != operands {
            return Err(format!(
                "packet {i}: operands {:?} vs {operands:?}",
                [c.0, h]
            ));
        }
        same_contents(i, &mut a, &mut b, at)?;
    }
    Ok(())
}

/// Packets for [`count_differs`]: tags, thresholds near the edges of u64, time steps.
pub(crate) fn count_packets() -> impl Strategy<Value = Packets> {
    proptest::collection::vec((0..TAGS.len(), value(6), 0u64..12), 1..40)
}
