//! The SNAP dissector (`tools/wireshark/waist_snap.lua`) on packets built by `snap_vm`'s own
//! builders: Fig. 1's ping fixture, the PLAN ping compiled by `snap_vm::plan`, a program with
//! every kind of heap object, each wrapped in IPv4 by `snap_vm::ip::encapsulate`; and
//! truncated or inconsistent packets.

use snap_vm::asm;
use snap_vm::ip::encapsulate;
use snap_vm::paper;
use snap_vm::plan::{self, Options, ServiceSig};
use snap_vm::program::Program;
use snap_vm::value::{Tag, Value};

use crate::harness;

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

/// The fields every test reads, in this order.
const FIELDS: [&str; 14] = [
    "snap.version",
    "snap.src",
    "snap.dst",
    "snap.port",
    "snap.rb",
    "snap.entry",
    "snap.code_len",
    "snap.heap_len",
    "snap.stack_len",
    "snap.insn",
    "snap.op",
    "snap.imm",
    "snap.stack.tag",
    "_ws.col.Info",
];

/// The instructions as `snap_vm::asm` disassembles them, one per word.
fn disassembly(p: &Program) -> Vec<String> {
    p.code.iter().map(|&w| asm::instruction(w)).collect()
}

/// The packet of `p` in IPv4, as a node sends it.
fn frame(p: &Program) -> Vec<u8> {
    encapsulate(&p.to_bytes().unwrap()).unwrap()
}

/// Writes `frames` and reads `fields` back, checking nothing is malformed or a Lua error.
fn dissect(name: &str, frames: &[Vec<u8>], fields: &[&str]) -> Vec<Vec<String>> {
    let pcap = harness::write_pcap(name, frames);
    harness::verbose(&pcap);
    let rows = harness::fields(&pcap, fields);
    assert_eq!(rows.len(), frames.len(), "{rows:?}");
    rows
}

/// Prints `tshark -V` of a one-frame capture of `frame` (quoted in the change's notes).
fn show(name: &str, frame: &[u8]) -> String {
    let pcap = harness::write_pcap(name, &[frame.to_vec()]);
    let v = harness::verbose(&pcap);
    println!("==== tshark -V: {name} ====\n{v}");
    v
}

/// Checks the header fields and the whole disassembly of `p` against `row`.
fn check_program(row: &[String], p: &Program) {
    let dis = disassembly(p);
    let mnemonics: Vec<&str> = dis
        .iter()
        .map(|t| t.split(' ').next().unwrap_or(""))
        .collect();
    let imms: Vec<String> = p
        .code
        .iter()
        .map(
            |&w| match snap_vm::op::Op::from_code(w.opcode()).map(|o| o.info().imm) {
                Some(snap_vm::op::Imm::Int | snap_vm::op::Imm::Branch) => w.imm().to_string(),
                _ => w.uimm().to_string(),
            },
        )
        .collect();
    let tags: Vec<&str> = p
        .stack
        .iter()
        .map(|v| v.tag().map_or("?", Tag::name))
        .collect();
    let ip = |a: [u8; 4]| std::net::Ipv4Addr::from(a).to_string();
    assert_eq!(
        row[..13],
        [
            "1".to_string(),
            ip(p.src),
            ip(p.dst),
            p.port.to_string(),
            p.rb.to_string(),
            p.entry.to_string(),
            p.code.len().to_string(),
            p.heap.len().to_string(),
            p.stack.len().to_string(),
            dis.join(","),
            mnemonics.join(","),
            imms.join(","),
            tags.join(","),
        ]
    );
}

/// Fig. 1's hand-written ping (`snap_vm::paper::ping`).
#[test]
fn snap_ping_fixture() {
    if !harness::have_tshark() {
        return;
    }
    let p = paper::ping(A, B, 7, b"hello", 16);
    let f = frame(&p);
    let rows = dissect("snap-ping", std::slice::from_ref(&f), &FIELDS);
    check_program(&rows[0], &p);
    // Spelled out, so the expectation does not rest on the disassembler alone.
    assert_eq!(rows[0][9], "forw,bne 5,push 1,getsrc,forwto,pop,demux");
    assert_eq!(rows[0][12], "bytes,int,int");
    assert_eq!(
        rows[0][13],
        "SNAP rb=16 entry=0 (forw) 7 insns, 3 heap words, stack [bytes@h0 7 0]"
    );
    let heap = dissect(
        "snap-ping-heap",
        std::slice::from_ref(&f),
        &[
            "snap.heap.offset",
            "snap.heap.tag",
            "snap.heap.len",
            "snap.heap.bytes",
            "snap.heap.payload",
            "snap.stack.data",
        ],
    );
    assert_eq!(
        heap[0],
        ["0", "bytes", "5", "\"hello\"", "68656c6c6f000000", "0,7,0"]
    );
    let v = show("snap-ping", &f);
    assert!(v.contains("1: bne 5"), "{v}");
    assert!(v.contains("0: forw  <- entry"), "{v}");
}

/// `services/waist/examples/plan/ping.plan` compiled by `snap_vm::plan`, its packet built as
/// the Fig. 2 reproduction builds it (payload, port, then the entry function's index).
#[test]
fn snap_plan_ping() {
    if !harness::have_tshark() {
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plan/ping.plan");
    let source = std::fs::read_to_string(path).unwrap();
    let opts = Options {
        fold_bound: 1,
        services: ServiceSig::ess(),
        entry: "p".into(),
    };
    let compiled = plan::compile(&source, &opts).unwrap();
    let mut p = Program {
        src: A,
        dst: B,
        port: 9,
        rb: 12,
        code: compiled.program.code.clone(),
        heap: compiled.program.heap.clone(),
        entry: compiled.program.entry,
        ..Program::default()
    };
    let w = p.heap_bytes(b"ping payload");
    p.stack = vec![
        w,
        Value::int(9),
        Value::int(i32::from(compiled.entry_index)),
    ];
    let f = frame(&p);
    let rows = dissect("snap-plan-ping", std::slice::from_ref(&f), &FIELDS);
    check_program(&rows[0], &p);
    let dis = disassembly(&p);
    let first: Vec<&str> = rows[0][9].split(',').take(4).collect();
    assert_eq!(first, dis[..4]);
    let entry = &dis[usize::from(p.entry)];
    assert!(
        rows[0][13].starts_with(&format!(
            "SNAP rb=12 entry={} ({entry}) {} insns,",
            p.entry,
            p.code.len()
        )),
        "{}",
        rows[0][13]
    );
    show("snap-plan-ping", &f);
}

/// A program with every kind of heap object and a stack pointing into the heap.
#[test]
fn snap_heap_objects_and_stack() {
    if !harness::have_tshark() {
        return;
    }
    let mut p = asm::assemble(
        ".src 10.0.0.1\n.dst 10.0.0.2\n.port 5\n.rb 3\n.entry 1\n\
         nop\npushh 0\ncalls 0\nistag bytes\npush -2\npaj -1\nexit\n",
    )
    .unwrap();
    let bytes = p.heap_bytes(&[0, 1, 2, 0xFF, 9]);
    let addr = p.heap_addr([192, 0, 2, 7]);
    let tuple = p.heap_tuple(&[Value::int(-4), addr]);
    let wide = p.heap_wide(-5_000_000_000);
    p.stack = vec![bytes, tuple, wide, Value::int(123)];
    let f = frame(&p);
    let rows = dissect("snap-heap", std::slice::from_ref(&f), &FIELDS);
    check_program(&rows[0], &p);
    assert_eq!(rows[0][12], "bytes,tuple,wide,int");
    assert_eq!(rows[0][11], "0,0,0,5,-2,-1,0");
    let heap = dissect(
        "snap-heap-objects",
        std::slice::from_ref(&f),
        &[
            "snap.heap.offset",
            "snap.heap.tag",
            "snap.heap.len",
            "snap.heap.bytes",
            "snap.heap.addr",
            "snap.heap.elem",
            "snap.heap.wide",
            "snap.stack.data",
            "snap.stack.word",
        ],
    );
    assert_eq!(
        heap[0],
        [
            "0,3,5,8",
            "bytes,addr,tuple,wide",
            "5,1,2,2",
            "0x000102ff09",
            "192.0.2.7",
            "-4,addr@h3",
            "-5000000000",
            "0,5,8,123",
            &p.stack
                .iter()
                .map(|v| format!("{:#010x}", v.0))
                .collect::<Vec<_>>()
                .join(","),
        ]
    );
    assert_eq!(
        (bytes.data(), addr.data(), tuple.data(), wide.data()),
        (0, 3, 5, 8)
    );
    show("snap-heap", &f);
}

/// Truncated and inconsistent packets are flagged by the script (expert info), never a Lua
/// error or Wireshark's "Malformed Packet".
#[test]
fn snap_truncated_is_flagged() {
    if !harness::have_tshark() {
        return;
    }
    let snap = paper::ping(A, B, 7, b"hello", 16).to_bytes().unwrap();
    let ip = |payload: &[u8]| {
        let mut out = vec![0u8; 20 + payload.len()];
        waist_ip::emit_header(&mut out, A.into(), B.into(), 254, 64, payload.len()).unwrap();
        out[20..].copy_from_slice(payload);
        out
    };
    // Only 10 header bytes; then the sections cut off after 3 instructions.
    let short = ip(&snap[..10]);
    let cut = ip(&snap[..24 + 12]);
    // Entry point outside the code.
    let mut bad_entry = snap.clone();
    bad_entry[14..16].copy_from_slice(&99u16.to_be_bytes());
    let bad_entry = ip(&bad_entry);
    let frames = vec![short, cut, bad_entry];
    let rows = dissect(
        "snap-truncated",
        &frames,
        &[
            "snap.malformed",
            "_ws.expert.message",
            "snap.insn",
            "_ws.col.Info",
        ],
    );
    assert_eq!(
        rows[0],
        [
            "1",
            "SNAP packet truncated: 10 of 24 header bytes",
            "",
            "SNAP truncated (10 bytes)"
        ]
    );
    assert_eq!(rows[1][0], "1,1,1,1");
    assert_eq!(
        rows[1][1],
        format!(
            "SNAP sections declare {} bytes but the packet has 36,\
             Code truncated: 3 of 7 instructions present,\
             Heap truncated: 0 of 3 words present,\
             Stack truncated: 0 of 3 values present",
            snap.len()
        )
    );
    assert_eq!(rows[1][2], "forw,bne 5,push 1");
    assert_eq!(rows[2][0], "1");
    assert_eq!(
        rows[2][1],
        "SNAP entry point 99 outside the code (7 instructions)"
    );
    assert!(
        rows[2][3].ends_with("[malformed: SNAP entry point 99 outside the code (7 instructions)]")
    );
    show("snap-truncated", &frames[1]);
}
