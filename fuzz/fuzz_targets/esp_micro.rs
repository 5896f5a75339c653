//! A router's microcode (`esp_micro::Micro`) gating an `EspNode`: arbitrary programs
//! installed under arbitrary opcodes, then packets carrying inline microcode (raw fields, or
//! structured programs over the ABI's services), installed opcodes with arbitrary operands,
//! and any other opcode, each run at one site of a two-port node (two shards per context),
//! with time advancing and the inline policy changing between packets.
//!
//! Asserts for every packet:
//! 1. nothing panics; an install under an opcode outside 64..=127 is refused;
//! 2. the SNAP instructions the run executed (`MicroStats::instructions`) are at most the
//!    verifier's bound for the program that ran (`Microcode::bounds`; 0 when none could),
//!    and at most `MAX_INSTRUCTIONS`; at most one run is counted;
//! 3. every context other than the one the site and CID select is unchanged (every shard
//!    of every site: its bookkeeping and the values of the tag palette);
//! 4. on an abort the selected store holds what it held (palette values, bindings
//!    created), the packet carries Err, its code and an empty Loc, and its operands are
//!    unchanged;
//! 5. the IP header never changes; with no abort the ESP header never changes; only the
//!    operands change, and for inline microcode only those after the program.
//!
//! Invariants 3 and 4 read the store through the tag palette programs and operands are
//! drawn from (plus the stores' own counters): a program that computes a tag outside it
//! and overwrites an existing binding there would go unseen.
//!
//! Input, read front to back (so seeds can be written by hand): a setup `[policy][n]` of
//! the inline policy and n % 4 installs `[opcode]` + a program ([`read_program`]), then
//! packets ([`read_packet`]). A seed of one raw inline COUNT field run at the central
//! context with inline microcode on is `[1, 0]` then `[0, 2, 1, cid, step, len, field…]`;
//! `fuzz/seeds/esp_micro/` holds a few (`.ci/run` adds them to the corpus).
#![no_main]

use std::sync::OnceLock;

use arbitrary::Unstructured;
use esp_micro::body::{Body, encode};
use esp_micro::{InlinePolicy, MAX_INSTRUCTIONS, MAX_OPERANDS, Micro, Microcode, OP_MICRO};
use esp_proto::exec::Processed;
use esp_proto::instr::INSTALLED;
use esp_proto::node::{EspNode, Found, NodeConfig, Outcome, Site};
use esp_proto::wire::{Header, HeaderRepr, Loc, emit_dedicated_ipv4};
use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};
use libfuzzer_sys::fuzz_target;
use snap_vm::op::{Imm, Op};
use snap_vm::program::Program;
use snap_vm::value::Word;

const COUNT: &str = esp_micro::shipped::COUNT;

/// Tags (and operand values) the inputs draw from, and the values the checks read.
const TAGS: [u64; 28] = [
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    15,
    16,
    17,
    18,
    19,
    20,
    21,
    22,
    23,
    1 << 63,
    (1 << 63) - 1,
    u64::MAX - 1,
    u64::MAX,
];

/// What structured programs share: a heap with every service's name and a wide constant,
/// the `calls` immediates naming them, and the `pushh` immediate of the constant.
struct Base {
    heap: Vec<u32>,
    calls: Vec<i32>,
    wide: i32,
    count: Program,
}

fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let services = [
            "ess.get",
            "ess.put",
            "ess.count",
            "esp.param",
            "wide.and",
            "wide.or",
            "wide.xor",
        ];
        let mut text = String::from(".wide big 0x8000000000000001\npushh @big\n");
        for s in services {
            text.push_str(&format!("calls \"{s}\"\n"));
        }
        let p = snap_vm::asm::assemble(&text).expect("the base assembles");
        Base {
            heap: p.heap.clone(),
            wide: p.code[0].imm(),
            calls: p.code[1..].iter().map(|w| w.imm()).collect(),
            count: snap_vm::asm::assemble(COUNT).expect("count.snap assembles"),
        }
    })
}

fn byte(u: &mut Unstructured<'_>) -> u8 {
    u.arbitrary().unwrap_or(0)
}

fn bytes<'a>(u: &mut Unstructured<'a>, n: usize) -> &'a [u8] {
    let n = n.min(u.len());
    u.bytes(n).unwrap_or_default()
}

fn word(u: &mut Unstructured<'_>) -> u32 {
    let b = bytes(u, 4);
    b.iter().fold(0, |w, &x| (w << 8) | u32::from(x))
}

/// A program: `[mode]` 0 count.snap; 1 raw `[c][h][entry]` then c + h big-endian words;
/// else structured: `[n]` then n × `[choice][imm hi][imm lo]`, then `[verdict]`.
fn read_program(u: &mut Unstructured<'_>) -> Program {
    let base = base();
    match byte(u) % 3 {
        0 => base.count.clone(),
        1 => {
            let (c, h, entry) = (byte(u) % 64, byte(u) % 16, byte(u));
            Program {
                entry: u16::from(entry),
                code: (0..c).map(|_| Word(word(u))).collect(),
                heap: (0..h).map(|_| word(u)).collect(),
                ..Program::default()
            }
        }
        _ => {
            let n = byte(u) % 40;
            let mut code = Vec::new();
            for _ in 0..n {
                let choice = byte(u);
                let r = u16::from_be_bytes([byte(u), byte(u)]);
                code.push(structured(choice, r, base));
            }
            let verdict = byte(u);
            if verdict < 0xF0 {
                code.push(Word::new(Op::Push as u8, i32::from(verdict % 5)));
            }
            Program {
                code,
                heap: base.heap.clone(),
                ..Program::default()
            }
        }
    }
}

/// One instruction of a structured program, biased toward what the ABI uses.
fn structured(choice: u8, r: u16, base: &Base) -> Word {
    let small = i32::from(r % 24);
    if choice == 0xFF {
        return Word(u32::from(r) << 16 | u32::from(r.rotate_left(7)));
    }
    match choice % 10 {
        0 | 1 => Word::new(
            Op::Calls as u8,
            base.calls[usize::from(r) % base.calls.len()],
        ),
        2 => Word::new(Op::Push as u8, small),
        3 => Word::new(Op::Pull as u8, i32::from(r % 6)),
        4 => Word::new(Op::Pushh as u8, base.wide),
        5 => {
            let op = [Op::Bez, Op::Bne, Op::Ji][usize::from(r) % 3];
            Word::new(op as u8, 1 + i32::from(r >> 8) % 4)
        }
        6 => Word::new(Op::Store as u8, i32::from(r % 6)),
        _ => {
            let op = Op::ALL[usize::from(r) % Op::ALL.len()];
            let imm = match op.info().imm {
                Imm::None => 0,
                Imm::Branch => 1 + i32::from(r >> 8) % 4,
                Imm::Heap => base.calls[usize::from(r >> 8) % base.calls.len()],
                _ => i32::from((r >> 8) % 6),
            };
            Word::new(op as u8, imm)
        }
    }
}

/// `[n]` then n operands, each `[sel]`: a palette tag, or (sel ≥ 0xF0) 8 raw bytes.
fn read_operands(u: &mut Unstructured<'_>) -> Vec<u64> {
    let n = usize::from(byte(u)) % (MAX_OPERANDS + 2);
    (0..n)
        .map(|_| match byte(u) {
            s if s >= 0xF0 => bytes(u, 8).iter().fold(0, |w, &x| (w << 8) | u64::from(x)),
            s => TAGS[usize::from(s) % TAGS.len()],
        })
        .collect()
}

fn policy(b: u8) -> InlinePolicy {
    match b % 5 {
        0 => InlinePolicy::Off,
        1 => InlinePolicy::On,
        2 => InlinePolicy::Ifaces(vec![0]),
        3 => InlinePolicy::Ifaces(vec![1]),
        _ => InlinePolicy::Ifaces(vec![0, 1]),
    }
}

/// One packet to run at one site, arriving on `input`.
struct Packet {
    site: Site,
    input: Option<usize>,
    step: u64,
    /// The ESP header and operand field (or `None`: the policy changed instead).
    esp: Option<Vec<u8>>,
}

/// A packet: `[kind][at][flags][cid][step]`, then by kind: 0 (and 4+) a raw inline field
/// `[len][bytes]`; 1 a structured inline program and operands; 2 an opcode (top bit clear:
/// 64 + its low six bits) with operands and `[junk]` (below 8: that many stray bytes);
/// 3 a new inline policy `[policy]`. `at % 5`: input port 0 or 1, central, output port 0
/// or 1 (for the last three, `at / 5 % 3` picks the input: port 0, 1 or none). `flags`:
/// Loc in the low 3 bits, top bits 11 Err, 10 RB. `cid` × 0x01010101 is the CID.
fn read_packet(u: &mut Unstructured<'_>) -> Packet {
    let (kind, at, flags, cid, step) = (byte(u), byte(u), byte(u), byte(u), byte(u));
    let (site, input) = match at % 5 {
        0 => (Site::Input(0), Some(0)),
        1 => (Site::Input(1), Some(1)),
        k => (
            [Site::Central, Site::Output(0), Site::Output(1)][usize::from(k - 2)],
            [Some(0), Some(1), None][usize::from(at / 5 % 3)],
        ),
    };
    let (opcode, operands) = match kind % 5 {
        1 => {
            let program = read_program(u);
            let operands = read_operands(u);
            let mut program = program;
            let room = 255usize.saturating_sub(3 + 4 * program.heap.len() + 8 * operands.len());
            program.code.truncate(room / 4);
            (OP_MICRO, encode(&program, &operands).unwrap_or_default())
        }
        2 => {
            let op = byte(u);
            let opcode = if op & 0x80 == 0 { 64 + (op & 0x3F) } else { op };
            let mut field: Vec<u8> = read_operands(u)
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            let junk = byte(u);
            if junk < 8 {
                field.extend(std::iter::repeat_n(0xA5, usize::from(junk)));
            }
            (opcode, field)
        }
        3 => {
            return Packet {
                site,
                input,
                step: 0,
                esp: None,
            };
        }
        _ => {
            let len = usize::from(byte(u));
            (OP_MICRO, bytes(u, len).to_vec())
        }
    };
    let repr = HeaderRepr {
        loc: Loc::from_bits(flags & 7),
        err: flags >> 6 == 3,
        rb: flags >> 6 == 2,
        opcode,
        cid: u32::from(cid) * 0x0101_0101,
        operand_len: u8::try_from(operands.len()).unwrap_or(u8::MAX),
    };
    let mut esp = vec![0u8; repr.buffer_len()];
    repr.emit(&mut esp).expect("sized for the header");
    let n = esp.len().min(8 + operands.len());
    esp[8..n].copy_from_slice(&operands[..n - 8]);
    Packet {
        site,
        input,
        step: u64::from(step % 8),
        esp: Some(esp),
    }
}

const SITES: [Site; 5] = [
    Site::Input(0),
    Site::Input(1),
    Site::Central,
    Site::Output(0),
    Site::Output(1),
];

/// What a store holds, as far as the checks can see: bindings created and the palette's
/// values.
fn contents(s: &Ess, now: Instant) -> (u64, Vec<Option<Value>>) {
    let values = TAGS.iter().map(|&t| s.get(now, Tag(t))).collect();
    (s.counters().created, values)
}

/// One store as it was: its site, a CID that selects it, where it is, its bookkeeping
/// (`Debug`) and its contents.
struct Seen {
    site: Site,
    cid: u32,
    at: *const Ess,
    debug: String,
    contents: (u64, Vec<Option<Value>>),
}

/// Every store of the node (each shard once: CIDs 0..16 meet both of every context).
fn snapshot(node: &EspNode, now: Instant) -> Vec<Seen> {
    let mut out: Vec<Seen> = Vec::new();
    for site in SITES {
        for c in 0..16u32 {
            let cid = c * 0x0101_0101;
            let s = node.store(site, cid).expect("the node has the port");
            let at = s as *const Ess;
            if !out.iter().any(|seen| seen.at == at) {
                out.push(Seen {
                    site,
                    cid,
                    at,
                    debug: format!("{s:?}"),
                    contents: contents(s, now),
                });
            }
        }
    }
    out
}

/// The verifier's instruction bound for what `opcode` with `field` runs, 0 if nothing can.
fn bound(micro: &Micro, opcode: u8, field: &[u8]) -> u32 {
    if opcode == OP_MICRO {
        Body::parse(field)
            .ok()
            .and_then(|b| Microcode::new(&b.to_program()).ok())
            .map_or(0, |m| m.bounds().instructions)
    } else {
        micro
            .get(opcode)
            .map_or(0, |i| i.microcode.bounds().instructions)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut micro = Micro::new(policy(byte(&mut u)));
    for _ in 0..byte(&mut u) % 4 {
        let opcode = byte(&mut u);
        let program = read_program(&mut u);
        if let Ok(code) = Microcode::new(&program) {
            assert!(code.bounds().instructions <= MAX_INSTRUCTIONS);
            let installed = micro.install(opcode, "fuzz", code);
            assert_eq!(
                installed.is_ok(),
                INSTALLED.contains(&opcode),
                "opcode {opcode}"
            );
        }
    }
    let mut node = EspNode::new(NodeConfig {
        ifaces: 2,
        store: EssConfig::new(3, 20, 1, HashKey::from_seed(1)).expect("valid config"),
        shards: 2,
        node_id: 0x0A00_0001,
        idmap_key: HashKey::from_seed(3),
        timestamp_shift: 0,
    });
    let mut now = 0u64;
    while !u.is_empty() {
        let packet = read_packet(&mut u);
        now += packet.step;
        let Some(esp) = packet.esp else {
            micro.set_policy(policy(byte(&mut u)));
            continue;
        };
        let at = Instant::from_ticks(now);
        let mut ip = vec![0u8; 20 + esp.len()];
        let n = emit_dedicated_ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64, &esp, &[], &mut ip)
            .expect("a well-formed instruction");
        ip.truncate(n);
        let before_ip = ip.clone();
        let header = Header::new_checked(&esp[..]).expect("built whole");
        let (opcode, cid) = (header.opcode(), header.cid());
        let field = header.operands();
        let limit = bound(&micro, opcode, field);
        let stats = micro.stats();
        let stores = snapshot(&node, at);
        let selected = node.store(packet.site, cid).expect("a port the node has") as *const Ess;

        let found = Found::in_packet(&ip);
        let outcome = node.process_found_with(
            at,
            packet.site,
            &mut ip,
            &found,
            &mut micro.gate(packet.input),
        );

        // 2. Bounded work, one run at most.
        let after = micro.stats();
        let executed = after.instructions - stats.instructions;
        assert!(
            executed <= u64::from(limit),
            "{executed} instructions, bound {limit}"
        );
        assert!(executed <= u64::from(MAX_INSTRUCTIONS));
        let runs =
            (after.inline_runs + after.installed_runs) - (stats.inline_runs + stats.installed_runs);
        assert!(runs <= 1);
        // 3, 4. Other contexts untouched; an abort leaves the selected one as it was.
        let abort = match outcome {
            Outcome::Ran(Processed { abort, .. }) => abort,
            _ => None,
        };
        let ran = matches!(outcome, Outcome::Ran(_));
        for seen in &stores {
            let site = seen.site;
            let s = node.store(site, seen.cid).expect("the port is still there");
            if seen.at == selected && ran {
                if abort.is_some() {
                    assert_eq!(contents(s, at), seen.contents, "an abort changed {site:?}");
                }
            } else {
                assert_eq!(format!("{s:?}"), seen.debug, "context {site:?} touched");
                assert_eq!(contents(s, at), seen.contents, "context {site:?} changed");
            }
        }
        // 5. Only operands and, on an abort, Loc/Err/code change.
        assert_eq!(ip.len(), before_ip.len());
        assert_eq!(ip[..20], before_ip[..20], "IP header");
        let (new, old) = (&ip[20..], &before_ip[20..]);
        if !ran {
            assert_eq!(new, old, "a packet not run is untouched");
        } else if let Some(abort) = abort {
            let h = Header::new_checked(new).expect("still a header");
            assert!(h.err() && h.loc().is_empty());
            assert_eq!(h.err_code(), abort.code());
            assert_eq!(new[0] >> 4, old[0] >> 4, "version");
            assert_eq!(new[1] & 0x8F, old[1] & 0x8F, "RB and reserved bits");
            assert_eq!(new[2..], old[2..], "opcode, CID and operands on an abort");
        } else {
            assert_eq!(new[..8], old[..8], "the ESP header without an abort");
            if opcode == OP_MICRO {
                let program = Body::parse(&old[8..]).expect("it ran").operands_at();
                assert_eq!(
                    new[8..8 + program],
                    old[8..8 + program],
                    "the inline program"
                );
            }
        }
    }
});
