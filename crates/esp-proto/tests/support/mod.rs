//! Strategies shared by the property tests: any instruction, with small tags and values so
//! random streams meet each other's state.

use esp_proto::idmap::IdMap;
use esp_proto::instr::{CombineOp, CompareOp, Instruction, Param, Robust};
use ess::{Tag, Value};
use proptest::prelude::*;

pub(crate) fn robust(thresh: u16, words: u8, bits: u64) -> Robust {
    let mut idmap = IdMap::empty(words);
    for i in 0..usize::from(words) {
        idmap.set_word(i, bits.rotate_left(i as u32 * 7) & 0x0F0F);
    }
    Robust {
        thresh,
        k: 3,
        idmap,
    }
}

pub(crate) fn instruction() -> impl Strategy<Value = Instruction> {
    let tag = || (0u64..6).prop_map(Tag);
    let val = || (0u64..8).prop_map(Value);
    let cmp = || (0u8..6).prop_map(|b| CompareOp::try_from(b).unwrap());
    let comb = || (0u8..6).prop_map(|b| CombineOp::try_from(b).unwrap());
    let rob = || (0u16..3, 1u8..4, any::<u64>()).prop_map(|(t, w, b)| robust(t, w, b));
    let param = (0u8..5).prop_map(|b| Param::try_from(b).unwrap());
    prop_oneof![
        (tag(), 0u64..4).prop_map(|(counter, thresh)| Instruction::Count { counter, thresh }),
        (tag(), val(), cmp()).prop_map(|(value, current, op)| Instruction::Compare {
            value,
            current,
            op
        }),
        (tag(), val(), tag(), comb()).prop_map(|(value, val, counter, op)| {
            Instruction::Collect {
                value,
                val,
                counter,
                op,
            }
        }),
        (tag(), tag(), rob()).prop_map(|(children, counter, robust)| Instruction::Rchld {
            children,
            counter,
            robust
        }),
        ((tag(), val(), tag(), tag(), tag()), comb(), rob()).prop_map(
            |((value, val, heard, children, forwarded), op, robust)| Instruction::Rcollect {
                value,
                val,
                heard,
                children,
                forwarded,
                op,
                robust
            }
        ),
        (tag(), val()).prop_map(|(tag, value)| Instruction::Get { tag, value }),
        (tag(), val()).prop_map(|(tag, value)| Instruction::Put { tag, value }),
        (tag(), val(), comb()).prop_map(|(tag, value, op)| Instruction::Update { tag, value, op }),
        tag().prop_map(|tag| Instruction::Mark { tag }),
        (tag(), val()).prop_map(|(tag, node)| Instruction::LastMark { tag, node }),
        tag().prop_map(|tag| Instruction::Subcast { tag }),
        (param.clone(), comb(), val()).prop_map(|(param, op, value)| Instruction::Param {
            param,
            op,
            value
        }),
        (tag(), param).prop_map(|(tag, param)| Instruction::PutParam { tag, param }),
        (tag(), val(), cmp()).prop_map(|(tag, value, op)| Instruction::Test { tag, value, op }),
        tag().prop_map(|tag| Instruction::Exists { tag }),
        tag().prop_map(|tag| Instruction::Absent { tag }),
        (tag(), val(), val()).prop_map(|(tag, expect, new)| Instruction::Cswap {
            tag,
            expect,
            new
        }),
    ]
}
