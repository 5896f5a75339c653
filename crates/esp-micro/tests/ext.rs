//! A router's microcode ([`Micro`]) as esp-proto drives it: every refusal and its counter,
//! the cache of verified inline programs, the inline policy per input interface, reloads
//! ([`Micro::configure`]), what a run writes back into the packet and the store, and that a
//! run in one context of an [`EspNode`] touches no other.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use esp_micro::body::encode;
use esp_micro::{InlinePolicy, InstallError, Micro, MicroStats, Microcode, OP_MICRO};
use esp_proto::exec::{Abort, Context, Env, Processed, Verdict, process_with};
use esp_proto::instr::InstrError;
use esp_proto::node::{EspNode, Found, NodeConfig, Site};
use esp_proto::wire::{ErrCode, Header, HeaderRepr, Loc, emit_dedicated_ipv4};
use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};
use snap_vm::program::Program;
use snap_vm::value::Word;

const NOW: Instant = Instant::from_ticks(10);
const CID: u32 = 9;

const COUNT: &str = include_str!("../microcode/count.snap");

/// Operands [tag, value]: binds them, sets operand 0 to 99, then ends with `verdict`.
fn put_then(verdict: i32) -> String {
    format!("pull 1\npull 1\ncalls \"ess.put\"\npop\npush 99\nstore 2\npush {verdict}")
}

fn store() -> Ess {
    Ess::new(EssConfig::new(4, 100, 1, HashKey::from_seed(3)).unwrap())
}

fn words(operands: &[u64]) -> Vec<u8> {
    operands.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// An ESP header (Loc central, CID [`CID`]) naming `opcode` with `operands`.
fn header(opcode: u8, operands: &[u8]) -> Vec<u8> {
    let repr = HeaderRepr {
        loc: Loc::CENTRAL,
        err: false,
        rb: false,
        opcode,
        cid: CID,
        operand_len: u8::try_from(operands.len()).unwrap(),
    };
    let mut bytes = vec![0u8; repr.buffer_len()];
    repr.emit(&mut bytes).unwrap();
    bytes[8..].copy_from_slice(operands);
    bytes
}

/// The inline microcode header carrying `text` (assembled) and `operands`.
fn inline(text: &str, operands: &[u64]) -> Vec<u8> {
    inline_program(&snap_vm::asm::assemble(text).unwrap(), operands)
}

fn inline_program(program: &Program, operands: &[u64]) -> Vec<u8> {
    header(OP_MICRO, &encode(program, operands).unwrap())
}

/// Runs `packet` in `store` as a router's central context does, `micro` gating it for a
/// packet that arrived on `input`.
fn process(
    micro: &mut Micro,
    input: Option<usize>,
    store: &mut Ess,
    packet: &mut [u8],
) -> Processed {
    let env = Env::new(1, HashKey::from_seed(9));
    let mut header = Header::new_checked(packet).unwrap();
    process_with(
        &mut Context::new(store, &env, CID),
        NOW,
        &mut header,
        &mut micro.gate(input),
    )
}

/// The abort every refused inline program gets.
const REFUSED: Abort = Abort::Malformed(InstrError::Opcode { opcode: OP_MICRO });

/// Asserts `packet` went through untouched but for Err (code Malformed) and a cleared Loc.
fn assert_refused(p: Processed, before: &[u8], after: &[u8]) {
    assert_eq!(p.abort, Some(REFUSED));
    assert_eq!(p.verdict, Verdict::Forward);
    let h = Header::new_checked(after).unwrap();
    assert!(h.err() && h.loc().is_empty());
    assert_eq!(h.err_code(), ErrCode::Malformed);
    assert_eq!(
        after[2..],
        before[2..],
        "opcode, CID and operands unchanged"
    );
}

#[test]
fn inline_off_is_refused_and_counted_then_on_runs() {
    let mut micro = Micro::new(InlinePolicy::Off);
    let mut s = store();
    let before = inline(COUNT, &[7, 5]);
    assert_eq!(before.len(), 8 + 87, "the field size src/body.rs documents");
    let mut packet = before.clone();
    let p = process(&mut micro, Some(0), &mut s, &mut packet);
    assert_refused(p, &before, &packet);
    assert_eq!(s.get(NOW, Tag(7)), None);
    let want = MicroStats {
        refused_off: 1,
        ..MicroStats::default()
    };
    assert_eq!(micro.stats(), want);

    micro.set_policy(InlinePolicy::On);
    let mut packet = before.clone();
    let p = process(&mut micro, None, &mut s, &mut packet);
    assert_eq!(p, Processed::PASS);
    assert_eq!(packet, before, "COUNT leaves its operands");
    assert_eq!(s.get(NOW, Tag(7)), Some(Value(1)));
    let stats = micro.stats();
    assert_eq!((stats.inline_runs, stats.refused_off), (1, 1));
    assert!(stats.instructions > 0);
}

#[test]
fn ifaces_policy_admits_only_the_listed_inputs() {
    let mut micro = Micro::new(InlinePolicy::Ifaces(vec![1, 3]));
    let mut s = store();
    let before = inline(COUNT, &[7, 5]);
    for (input, admitted) in [
        (Some(1), true),
        (Some(3), true),
        (Some(0), false),
        (Some(2), false),
        (None, false),
    ] {
        let mut packet = before.clone();
        let p = process(&mut micro, input, &mut s, &mut packet);
        if admitted {
            assert_eq!(p, Processed::PASS, "input {input:?}");
        } else {
            assert_refused(p, &before, &packet);
        }
    }
    let stats = micro.stats();
    assert_eq!((stats.inline_runs, stats.refused_iface), (2, 3));
    assert_eq!(stats.refused_off, 0);
    assert_eq!(s.get(NOW, Tag(7)), Some(Value(2)));
}

#[test]
fn malformed_fields_are_refused_and_counted() {
    let mut micro = Micro::new(InlinePolicy::On);
    let mut s = store();
    let count = snap_vm::asm::assemble(COUNT).unwrap();
    let good = encode(&count, &[7, 5]).unwrap();
    let fields = [
        vec![1, 0],                       // shorter than the prefix
        good[..good.len() - 17].to_vec(), // truncated inside the code and heap
        good[..good.len() - 3].to_vec(),  // operands not whole words
        encode(&Program::default(), &[0; 8]) // nine operands
            .unwrap()
            .into_iter()
            .chain([0; 8])
            .collect(),
    ];
    for (i, field) in fields.iter().enumerate() {
        let before = header(OP_MICRO, field);
        let mut packet = before.clone();
        let p = process(&mut micro, Some(0), &mut s, &mut packet);
        assert_refused(p, &before, &packet);
        assert_eq!(micro.stats().refused_malformed, i as u64 + 1);
    }
    let stats = micro.stats();
    assert_eq!((stats.inline_runs, stats.refused_verify), (0, 0));
    assert_eq!(s.counters().created, 0);
}

#[test]
fn unverifiable_programs_are_refused_and_cached_as_refused() {
    let mut micro = Micro::new(InlinePolicy::On);
    let mut s = store();
    // push 0; ji -1 (a backward branch); and a lone `forw` (a network instruction).
    let backward = Program {
        code: vec![Word::new(12, 0), Word::new(3, -1)],
        ..Program::default()
    };
    let forw = Program {
        code: vec![Word::new(8, 0), Word::new(12, 0)],
        ..Program::default()
    };
    for (program, verified) in [(&backward, 1), (&forw, 2)] {
        for round in 0..2 {
            let before = inline_program(program, &[7]);
            let mut packet = before.clone();
            let p = process(&mut micro, Some(0), &mut s, &mut packet);
            assert_refused(p, &before, &packet);
            let stats = micro.stats();
            assert_eq!(stats.refused_verify, 2 * (verified - 1) + round + 1);
            assert_eq!(
                stats.cache_hits,
                verified - 1 + round,
                "the second time from the cache"
            );
            assert_eq!((stats.inline_runs, stats.instructions), (0, 0));
        }
    }
}

#[test]
fn the_cache_is_keyed_by_the_program_not_its_operands() {
    let mut micro = Micro::new(InlinePolicy::On);
    let mut s = store();
    for (i, tag) in [7, 8, 7].into_iter().enumerate() {
        let mut packet = inline(COUNT, &[tag, 5]);
        assert_eq!(
            process(&mut micro, Some(0), &mut s, &mut packet),
            Processed::PASS
        );
        assert_eq!(micro.stats().cache_hits, i as u64);
    }
    // Another program is verified afresh.
    let mut packet = inline(&put_then(0), &[7, 5]);
    assert_eq!(
        process(&mut micro, Some(0), &mut s, &mut packet),
        Processed::PASS
    );
    let stats = micro.stats();
    assert_eq!((stats.inline_runs, stats.cache_hits), (4, 2));
    assert_eq!(s.get(NOW, Tag(7)), Some(Value(5)));
    assert_eq!(s.get(NOW, Tag(8)), Some(Value(1)));
}

#[test]
fn installed_operands_must_be_whole_words() {
    let mut micro = Micro::new(InlinePolicy::Off);
    micro
        .install(64, "count", Microcode::assemble(COUNT).unwrap())
        .unwrap();
    let mut s = store();
    let nine = words(&[7; 9]);
    for (i, operands) in [&words(&[7, 5])[..15], &nine[..]].into_iter().enumerate() {
        let before = header(64, operands);
        let mut packet = before.clone();
        let p = process(&mut micro, Some(0), &mut s, &mut packet);
        assert!(
            matches!(p.abort, Some(Abort::Malformed(InstrError::Length { opcode: 64, actual, .. })) if actual == operands.len()),
            "{p:?}"
        );
        let h = Header::new_checked(&packet[..]).unwrap();
        assert!(h.err() && h.err_code() == ErrCode::Malformed);
        assert_eq!(packet[8..], before[8..]);
        assert_eq!(micro.stats().refused_operands, i as u64 + 1);
    }
    assert_eq!(micro.stats().installed_runs, 0);
    assert_eq!(micro.get(64).unwrap().runs, 0);
    assert_eq!(s.counters().created, 0);
}

#[test]
fn unknown_opcodes_are_malformed_naming_the_opcode() {
    let mut micro = Micro::new(InlinePolicy::On);
    micro
        .install(64, "count", Microcode::assemble(COUNT).unwrap())
        .unwrap();
    let mut s = store();
    // Neither built in, inline nor installed: below, inside and above the installed range.
    for (i, opcode) in [33u8, 65, 127, 128, 255].into_iter().enumerate() {
        let before = header(opcode, &words(&[7, 5]));
        let mut packet = before.clone();
        let p = process(&mut micro, Some(0), &mut s, &mut packet);
        assert_eq!(
            p.abort,
            Some(Abort::Malformed(InstrError::Opcode { opcode })),
            "opcode {opcode}"
        );
        assert_eq!(
            Header::new_checked(&packet[..]).unwrap().err_code(),
            ErrCode::Malformed
        );
        assert_eq!(micro.stats().unknown_opcode, i as u64 + 1);
    }
    let stats = micro.stats();
    assert_eq!((stats.installed_runs, stats.inline_runs), (0, 0));
}

#[test]
fn configure_keeps_runs_of_unchanged_instructions_only() {
    let count = Microcode::assemble(COUNT).unwrap();
    let put = Microcode::assemble(&put_then(0)).unwrap();
    let mut micro = Micro::new(InlinePolicy::Off);
    micro.install(64, "count", count.clone()).unwrap();
    micro.install(65, "count", count.clone()).unwrap();
    micro.install(66, "put", put.clone()).unwrap();
    let mut s = store();
    for opcode in [64, 64, 65, 66] {
        let mut packet = header(opcode, &words(&[7, 50]));
        assert_eq!(
            process(&mut micro, Some(0), &mut s, &mut packet).abort,
            None
        );
    }
    let runs = |m: &Micro| [64, 65, 66, 67].map(|op| m.get(op).map(|i| i.runs));
    assert_eq!(runs(&micro), [Some(2), Some(1), Some(1), None]);
    let stats = micro.stats();

    // An opcode outside 64..=127 changes nothing, the policy included.
    for bad in [32u8, 63, 128] {
        let config = [
            (64, String::from("count"), count.clone()),
            (bad, String::from("count"), count.clone()),
        ];
        assert_eq!(
            micro.configure(InlinePolicy::On, &config),
            Err(InstallError { opcode: bad })
        );
        assert_eq!(runs(&micro), [Some(2), Some(1), Some(1), None]);
        assert_eq!(micro.policy(), &InlinePolicy::Off);
    }

    // 64 unchanged keeps its runs; 65 gets another program and 66 another name: both start
    // over; 67 is new; the counters stay.
    let config = [
        (64, String::from("count"), count.clone()),
        (65, String::from("count"), put.clone()),
        (66, String::from("put2"), put.clone()),
        (67, String::from("count"), count.clone()),
    ];
    micro.configure(InlinePolicy::On, &config).unwrap();
    assert_eq!(runs(&micro), [Some(2), Some(0), Some(0), Some(0)]);
    assert_eq!(micro.get(65).unwrap().microcode, put);
    assert_eq!(micro.policy(), &InlinePolicy::On);
    assert_eq!(micro.stats(), stats);
    // A reload without 66 removes it.
    micro.configure(InlinePolicy::On, &config[..2]).unwrap();
    assert_eq!(runs(&micro), [Some(2), Some(0), None, None]);
}

#[test]
fn operands_are_written_back_on_a_verdict_only() {
    let mut micro = Micro::new(InlinePolicy::On);
    micro
        .install(64, "put", Microcode::assemble(&put_then(0)).unwrap())
        .unwrap();
    let mut s = store();
    // Installed: forwarded, operand 0 becomes 99 and the binding stays.
    let mut packet = header(64, &words(&[7, 5]));
    assert_eq!(
        process(&mut micro, Some(0), &mut s, &mut packet),
        Processed::PASS
    );
    assert_eq!(packet[8..], words(&[99, 5]));
    assert_eq!(s.get(NOW, Tag(7)), Some(Value(5)));
    // Inline: the operands after the program are written back, the program is not touched.
    let before = inline(&put_then(0), &[8, 6]);
    let mut packet = before.clone();
    assert_eq!(
        process(&mut micro, Some(0), &mut s, &mut packet),
        Processed::PASS
    );
    let at = packet.len() - 16;
    assert_eq!(packet[..at], before[..at]);
    assert_eq!(packet[at..], words(&[99, 6]));
    assert_eq!(s.get(NOW, Tag(8)), Some(Value(6)));
}

#[test]
fn an_abort_leaves_store_and_operands_unchanged() {
    let mut micro = Micro::new(InlinePolicy::On);
    let mut s = store();
    s.put(NOW, Tag(7), Value(1)).unwrap();
    // The program's own aborts, then failures (a bad verdict, a fault after the write).
    let fault = "pull 1\npull 1\ncalls \"ess.put\"\npop\npush 0\npush 0\ndiv";
    let cases = [
        (put_then(2), Abort::MissingState, ErrCode::MissingState),
        (put_then(3), Abort::StoreFull, ErrCode::StoreFull),
        (put_then(4), REFUSED, ErrCode::Malformed),
        (fault.to_string(), REFUSED, ErrCode::Malformed),
    ];
    for (i, (text, abort, code)) in cases.iter().enumerate() {
        for (tag, value) in [(7, 2), (8, 3)] {
            let before = inline(text, &[tag, value]);
            let mut packet = before.clone();
            let p = process(&mut micro, Some(0), &mut s, &mut packet);
            assert_eq!(p.abort, Some(*abort), "case {i}");
            let h = Header::new_checked(&packet[..]).unwrap();
            assert_eq!(h.err_code(), *code);
            assert_eq!(packet[8..], before[8..], "case {i}: operands unchanged");
        }
        assert_eq!(
            s.get(NOW, Tag(7)),
            Some(Value(1)),
            "case {i}: store unchanged"
        );
        assert_eq!(s.get(NOW, Tag(8)), None, "case {i}: store unchanged");
    }
    assert_eq!(s.counters().created, 1);
    let stats = micro.stats();
    assert_eq!((stats.aborted, stats.failed, stats.inline_runs), (4, 4, 8));
}

fn node() -> EspNode {
    EspNode::new(NodeConfig {
        ifaces: 2,
        store: EssConfig::new(4, 100, 1, HashKey::from_seed(1)).unwrap(),
        shards: 2,
        node_id: 1,
        idmap_key: HashKey::from_seed(2),
        timestamp_shift: 0,
    })
}

/// A dedicated IPv4 packet carrying installed opcode 64 with `operands`, run where `loc`
/// says, for computation `cid`.
fn ip_packet(loc: Loc, cid: u32, operands: &[u64]) -> Vec<u8> {
    let mut esp = header(64, &words(operands));
    let mut h = Header::new_checked(&mut esp[..]).unwrap();
    h.set_loc(loc);
    let repr = HeaderRepr::parse(&h);
    assert_eq!((repr.cid, repr.loc), (CID, loc));
    esp[4..8].copy_from_slice(&cid.to_be_bytes());
    let mut out = vec![0u8; 20 + esp.len()];
    let n = emit_dedicated_ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64, &esp, &[], &mut out).unwrap();
    out.truncate(n);
    out
}

const SITES: [Site; 5] = [
    Site::Input(0),
    Site::Input(1),
    Site::Central,
    Site::Output(0),
    Site::Output(1),
];

/// Which of [`SITES`] have created a binding, in any shard (CIDs 0..8 meet both).
fn touched(node: &EspNode) -> Vec<Site> {
    SITES
        .into_iter()
        .filter(|&site| (0..8).any(|cid| node.store(site, cid).unwrap().counters().created > 0))
        .collect()
}

/// Runs an installed PUT of tag 7 for `cid` that arrived on `input`, at the sites `loc`
/// selects: ingress, then egress by `output`. Returns the node.
fn run_at(micro: &mut Micro, loc: Loc, cid: u32, input: usize, output: usize) -> EspNode {
    let mut node = node();
    let mut packet = ip_packet(loc, cid, &[7, 5]);
    let found = Found::in_packet(&packet);
    let mut gate = micro.gate(Some(input));
    assert!(node.ingress_found_with(NOW, input, &mut packet, &found, &mut gate));
    assert!(node.egress_found_with(NOW, output, &mut packet, &found, &mut gate));
    node
}

#[test]
fn a_run_changes_only_the_context_it_ran_in() {
    let mut micro = Micro::new(InlinePolicy::Off);
    micro
        .install(64, "put", Microcode::assemble(&put_then(0)).unwrap())
        .unwrap();
    assert!(node().store(Site::Input(2), CID).is_none());
    let mut runs = 0;
    for cid in 0..4 {
        for (input, output) in [(0, 1), (1, 0)] {
            for (loc, site) in [
                (Loc::INPUT, Site::Input(input)),
                (Loc::CENTRAL, Site::Central),
                (Loc::OUTPUT, Site::Output(output)),
            ] {
                let node = run_at(&mut micro, loc, cid, input, output);
                runs += 1;
                assert_eq!(touched(&node), [site], "cid {cid}, {loc:?}");
                let store = node.store(site, cid).unwrap();
                assert_eq!(store.get(NOW, Tag(7)), Some(Value(5)));
                assert_eq!(store.counters().created, 1);
            }
        }
    }
    assert_eq!(micro.get(64).unwrap().runs, runs);
}
