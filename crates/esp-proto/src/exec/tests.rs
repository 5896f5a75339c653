use super::*;
use crate::instr::{CombineOp, CompareOp};
use crate::wire::HeaderRepr;
use ess::EssConfig;
use std::vec::Vec;

fn store() -> Ess {
    Ess::new(EssConfig::new(4, 10_000, 1, HashKey::from_seed(1)).unwrap())
}

const T0: Instant = Instant::from_ticks(0);

fn env(node: u64) -> Env {
    Env::new(node, HashKey::from_seed(node))
}

/// Runs `i` on `ess` as node 1.
fn run(ess: &mut Ess, i: &mut Instruction) -> Result<Verdict, Abort> {
    let env = env(1);
    execute(&mut Context::new(ess, &env, 9), T0, i)
}

#[test]
fn count_passes_up_to_the_threshold() {
    let mut ess = store();
    let mut i = Instruction::Count {
        counter: Tag(7),
        thresh: 2,
    };
    let v: Vec<_> = (0..4).map(|_| run(&mut ess, &mut i).unwrap()).collect();
    use Verdict::*;
    assert_eq!(v, [Forward, Forward, Drop, Drop]);
    assert_eq!(ess.get(T0, Tag(7)), Some(Value(4)), "counting goes on");
}

#[test]
fn compare_thins_to_an_increasing_sequence() {
    let mut ess = store();
    let passed: Vec<u64> = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
        .into_iter()
        .filter(|&u| {
            let mut i = Instruction::Compare {
                value: Tag(1),
                current: Value(u),
                op: CompareOp::Lt,
            };
            run(&mut ess, &mut i) == Ok(Verdict::Forward)
        })
        .collect();
    assert_eq!(passed, [3, 4, 5, 9]);
}

fn collect(val: u64) -> Instruction {
    Instruction::Collect {
        value: Tag(200),
        val: Value(val),
        counter: Tag(100),
        op: CombineOp::Add,
    }
}

#[test]
fn count_then_collect_forwards_the_aggregate_once() {
    let mut ess = store();
    for _ in 0..3 {
        count(&mut ess, Tag(100), 1);
    }
    let mut out = Vec::new();
    for val in [10, 20, 5] {
        let mut i = collect(val);
        out.push((run(&mut ess, &mut i).unwrap(), i));
    }
    assert_eq!(out[0].0, Verdict::Drop);
    assert_eq!(out[1].0, Verdict::Drop);
    assert_eq!(out[2], (Verdict::Forward, collect(35)));
    // A fourth report finds the count spent and is not forwarded.
    assert_eq!(run(&mut ess, &mut collect(1)), Ok(Verdict::Drop));
}

#[test]
fn collect_without_a_count_aborts_and_changes_nothing() {
    let mut ess = store();
    assert_eq!(run(&mut ess, &mut collect(1)), Err(Abort::MissingState));
    assert_eq!((ess.get(T0, Tag(200)), ess.occupied()), (None, 0));
}

#[test]
fn a_full_store_aborts() {
    let mut ess = store();
    for t in 0..16 {
        ess.put(T0, Tag(1000 + t), Value(0)).unwrap();
    }
    let mut i = Instruction::Count {
        counter: Tag(1),
        thresh: 9,
    };
    assert_eq!(run(&mut ess, &mut i), Err(Abort::StoreFull));
}

/// Runs COUNT on `counter` (a setup step for COLLECT).
fn count(ess: &mut Ess, counter: Tag, thresh: u64) {
    run(ess, &mut Instruction::Count { counter, thresh }).unwrap();
}

fn robust(thresh: u16, idmap: IdMap) -> Robust {
    Robust {
        thresh,
        k: 11,
        idmap,
    }
}

fn rchld(idmap: IdMap, thresh: u16) -> Instruction {
    Instruction::Rchld {
        children: Tag(500),
        counter: Tag(600),
        robust: robust(thresh, idmap),
    }
}

fn rcollect(idmap: IdMap, val: u64, thresh: u16) -> Instruction {
    Instruction::Rcollect {
        value: Tag(700),
        val: Value(val),
        heard: Tag(800),
        children: Tag(500),
        forwarded: Tag(900),
        op: CombineOp::Add,
        robust: robust(thresh, idmap),
    }
}

/// Runs `i` at a node with its own IDmap key.
fn run_at(ess: &mut Ess, node: &Env, i: &mut Instruction) -> Result<Verdict, Abort> {
    execute(&mut Context::new(ess, node, 9), T0, i)
}

#[test]
fn robust_aggregation_at_one_node() {
    let mut ess = Ess::new(EssConfig::new(6, 10_000, 1, HashKey::from_seed(1)).unwrap());
    let me = env(42);
    let kids: Vec<IdMap> = (1..=3)
        .map(|c| IdMap::for_node(&HashKey::from_seed(c), 9, 11, 2))
        .collect();
    let mine = IdMap::for_node(&me.idmap_key, 9, 11, 2);
    // Phase 1: each child sends twice; the node forwards its first two packets, carrying
    // its own IDmap.
    let mut verdicts = Vec::new();
    for _ in 0..2 {
        for kid in &kids {
            let mut i = rchld(*kid, 2);
            verdicts.push(run_at(&mut ess, &me, &mut i).unwrap());
            if verdicts.last() == Some(&Verdict::Forward) {
                assert_eq!(i, rchld(mine, 2), "forwarded with this node's IDmap");
            }
        }
    }
    use Verdict::*;
    assert_eq!(verdicts, [Forward, Forward, Drop, Drop, Drop, Drop]);
    // Phase 2: values 10, 20, 30, each sent twice, interleaved; duplicates do not count.
    let mut out = Vec::new();
    for (kid, val) in kids.iter().zip([10, 20, 30]) {
        for _ in 0..2 {
            let mut i = rcollect(*kid, val, 2);
            let v = run_at(&mut ess, &me, &mut i).unwrap();
            out.push((v, i));
        }
    }
    let forwarded: Vec<_> = out.iter().filter(|(v, _)| *v == Forward).collect();
    assert_eq!(forwarded.len(), 2, "the forwarding limit: {out:?}");
    for (_, i) in forwarded {
        assert_eq!(*i, rcollect(mine, 60, 2), "the sum, once per child");
    }
    // A late duplicate after the limit is dropped and changes nothing.
    let before = ess.get(T0, Tag(700));
    assert_eq!(
        run_at(&mut ess, &me, &mut rcollect(kids[0], 99, 2)),
        Ok(Drop)
    );
    assert_eq!(ess.get(T0, Tag(700)), before);
}

#[test]
fn rcollect_needs_the_children_filter() {
    let mut ess = store();
    let id = IdMap::from_words(&[1]).unwrap();
    assert_eq!(
        run(&mut ess, &mut rcollect(id, 1, 1)),
        Err(Abort::MissingState)
    );
    assert_eq!(ess.occupied(), 0);
}

#[test]
fn multi_tag_instructions_are_atomic_when_full() {
    // 16 entries: RCHLD with 8 words needs 9 bindings.
    let mut ess = store();
    for t in 0..10 {
        ess.put(T0, Tag(1000 + t), Value(0)).unwrap();
    }
    let id = IdMap::from_words(&[1; 8]).unwrap();
    assert_eq!(run(&mut ess, &mut rchld(id, 1)), Err(Abort::StoreFull));
    assert_eq!(ess.occupied(), 10, "nothing was created");
    let small = IdMap::from_words(&[1; 4]).unwrap();
    assert_eq!(run(&mut ess, &mut rchld(small, 1)), Ok(Verdict::Forward));
    assert_eq!(ess.occupied(), 15);
}

#[test]
fn general_instructions() {
    let mut ess = store();
    let mut i = Instruction::Get {
        tag: Tag(1),
        value: Value(0),
    };
    assert_eq!(run(&mut ess, &mut i), Err(Abort::MissingState));
    run(
        &mut ess,
        &mut Instruction::Put {
            tag: Tag(1),
            value: Value(5),
        },
    )
    .unwrap();
    run(&mut ess, &mut i).unwrap();
    assert_eq!(
        i,
        Instruction::Get {
            tag: Tag(1),
            value: Value(5)
        }
    );
    let mut u = Instruction::Update {
        tag: Tag(1),
        value: Value(3),
        op: CombineOp::Max,
    };
    run(&mut ess, &mut u).unwrap();
    assert!(matches!(
        u,
        Instruction::Update {
            value: Value(5),
            ..
        }
    ));
    let test = |ess: &mut Ess, op, v| {
        run(
            ess,
            &mut Instruction::Test {
                tag: Tag(1),
                value: Value(v),
                op,
            },
        )
    };
    assert_eq!(test(&mut ess, CompareOp::Gt, 4), Ok(Verdict::Forward));
    assert_eq!(test(&mut ess, CompareOp::Gt, 5), Ok(Verdict::Drop));
    let exists = |ess: &mut Ess, tag| run(ess, &mut Instruction::Exists { tag });
    let absent = |ess: &mut Ess, tag| run(ess, &mut Instruction::Absent { tag });
    assert_eq!(exists(&mut ess, Tag(1)), Ok(Verdict::Forward));
    assert_eq!(exists(&mut ess, Tag(2)), Ok(Verdict::Drop));
    assert_eq!(absent(&mut ess, Tag(2)), Ok(Verdict::Forward));
    // CSWAP: nil counts as 0.
    let mut c = Instruction::Cswap {
        tag: Tag(3),
        expect: Value(0),
        new: Value(7),
    };
    assert_eq!(run(&mut ess, &mut c), Ok(Verdict::Forward));
    let mut c2 = Instruction::Cswap {
        tag: Tag(3),
        expect: Value(0),
        new: Value(8),
    };
    assert_eq!(run(&mut ess, &mut c2), Ok(Verdict::Drop));
    assert!(matches!(
        c2,
        Instruction::Cswap {
            expect: Value(7),
            ..
        }
    ));
}

#[test]
fn node_parameters_and_marks() {
    let mut ess = store();
    let mut e = env(0x0A00_0001);
    e.queue_len = 17;
    e.iface = 3;
    let mut p = Instruction::Param {
        param: Param::QueueLen,
        op: CombineOp::Max,
        value: Value(5),
    };
    execute(&mut Context::new(&mut ess, &e, 1), T0, &mut p).unwrap();
    assert!(matches!(
        p,
        Instruction::Param {
            value: Value(17),
            ..
        }
    ));
    let mut q = Instruction::LastMark {
        tag: Tag(4),
        node: Value(0),
    };
    execute(&mut Context::new(&mut ess, &e, 1), T0, &mut q).unwrap();
    assert!(matches!(q, Instruction::LastMark { node: Value(0), .. }));
    execute(
        &mut Context::new(&mut ess, &e, 1),
        T0,
        &mut Instruction::Mark { tag: Tag(4) },
    )
    .unwrap();
    execute(&mut Context::new(&mut ess, &e, 1), T0, &mut q).unwrap();
    assert!(matches!(
        q,
        Instruction::LastMark {
            node: Value(0x0A00_0001),
            ..
        }
    ));
    execute(
        &mut Context::new(&mut ess, &e, 1),
        T0,
        &mut Instruction::PutParam {
            tag: Tag(5),
            param: Param::Iface,
        },
    )
    .unwrap();
    assert_eq!(ess.get(T0, Tag(5)), Some(Value(3)));
}

#[test]
fn subcast_reads_the_port_input_side() {
    let mut input = store();
    let mut output = store();
    let e = env(1);
    input.put(T0, Tag(77), Value(1)).unwrap();
    let mut ctx = Context {
        store: &mut output,
        port_input: Some(&input),
        env: &e,
        cid: 1,
    };
    let mut s = Instruction::Subcast { tag: Tag(77) };
    assert_eq!(execute(&mut ctx, T0, &mut s), Ok(Verdict::Forward));
    let mut s = Instruction::Subcast { tag: Tag(78) };
    assert_eq!(execute(&mut ctx, T0, &mut s), Ok(Verdict::Drop));
}

/// A header carrying `instr`.
fn packet_of(instr: Instruction, err: bool, rb: bool) -> Vec<u8> {
    let mut ops = std::vec![0u8; instr.operand_len()];
    instr.emit(&mut ops).unwrap();
    packet(instr.opcode(), &ops, err, rb)
}

fn packet(opcode: u8, operands: &[u8], err: bool, rb: bool) -> Vec<u8> {
    let repr = HeaderRepr {
        loc: Loc::ALL,
        err,
        rb,
        opcode,
        cid: 9,
        operand_len: operands.len() as u8,
    };
    let mut buf = std::vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf).unwrap();
    buf[8..].copy_from_slice(operands);
    buf
}

fn proc(ess: &mut Ess, h: &mut Header<&mut [u8]>) -> Processed {
    let e = env(1);
    process(&mut Context::new(ess, &e, h.cid()), T0, h)
}

#[test]
fn process_writes_operands_back_and_marks_aborts() {
    let mut ess = store();
    count(&mut ess, Tag(100), 1);
    let mut buf = packet_of(collect(7), false, false);
    let before = buf.clone();
    let mut h = Header::new_checked(&mut buf[..]).unwrap();
    assert_eq!(proc(&mut ess, &mut h), Processed::PASS);
    assert_eq!(buf[..8], before[..8], "header untouched");

    // Same again: the count is spent → dropped, no abort.
    let mut buf2 = before.clone();
    let mut h = Header::new_checked(&mut buf2[..]).unwrap();
    assert_eq!(proc(&mut ess, &mut h).verdict, Verdict::Drop);

    // Unknown opcode: abort, Err set, Loc cleared, forwarded; nothing else changes.
    let mut bad = packet(99, &[1, 2, 3], false, false);
    let mut h = Header::new_checked(&mut bad[..]).unwrap();
    let p = proc(&mut ess, &mut h);
    assert_eq!(p.verdict, Verdict::Forward);
    assert!(matches!(
        p.abort,
        Some(Abort::Malformed(InstrError::Opcode { opcode: 99 }))
    ));
    assert!(h.err() && h.loc().is_empty());
    assert_eq!(h.err_code(), ErrCode::Malformed);
    assert_eq!(h.operands(), &[1, 2, 3]);

    // Err or RB set: forwarded unprocessed.
    for (err, rb) in [(true, false), (false, true)] {
        let mut pkt = packet_of(
            Instruction::Count {
                counter: Tag(5),
                thresh: 0,
            },
            err,
            rb,
        );
        let mut h = Header::new_checked(&mut pkt[..]).unwrap();
        assert_eq!(proc(&mut ess, &mut h).verdict, Verdict::Forward);
        assert_eq!(ess.get(T0, Tag(5)), None);
    }
}
