//! The ESP dissector (`tools/wireshark/waist_esp.lua`) on instructions beyond the built-ins
//! (issue 36): inline microcode (opcode 32; its field built by `esp_micro::body::encode`,
//! each code word checked against SNAP's own disassembler) and installed instructions
//! (opcodes 64–127), plus fields whose lengths do not add up.

use esp_proto::wire::{HeaderRepr, Loc, emit_dedicated_ipv4};
use snap_vm::asm::{assemble, instruction};

use crate::harness;

const CID: u32 = 0x36;

const FIELDS: [&str; 9] = [
    "esp.opcode",
    "esp.operand_len",
    "esp.micro.code_words",
    "esp.micro.heap_words",
    "esp.micro.entry",
    "esp.micro.insn",
    "esp.micro.heap",
    "esp.operand",
    "_ws.col.Info",
];

/// A dedicated IPv4 packet carrying `opcode` with the operand field `field`.
fn packet(opcode: u8, field: &[u8]) -> Vec<u8> {
    let repr = HeaderRepr {
        loc: Loc::CENTRAL,
        err: false,
        rb: false,
        opcode,
        cid: CID,
        operand_len: u8::try_from(field.len()).unwrap(),
    };
    let mut esp = vec![0u8; repr.buffer_len()];
    repr.emit(&mut esp).unwrap();
    esp[8..].copy_from_slice(field);
    let mut out = vec![0u8; 20 + esp.len()];
    let n = emit_dedicated_ipv4([10, 0, 0, 1], [10, 0, 0, 9], 64, &esp, &[], &mut out).unwrap();
    out.truncate(n);
    out
}

fn words(operands: &[u64]) -> Vec<u8> {
    operands.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// Inline COUNT (examples/esp-microcode/count.snap) and installed instruction 64.
#[test]
fn esp_microcode_inline_and_installed() {
    if !harness::have_tshark() {
        return;
    }
    let count = assemble(include_str!(
        "../../../../examples/esp-microcode/count.snap"
    ))
    .unwrap();
    let field = esp_micro::body::encode(&count, &[7, 2]).unwrap();
    let frames = vec![
        packet(32, &field),
        packet(64, &words(&[7, u64::MAX])),
        packet(127, &[]),
    ];
    let pcap = harness::write_pcap("esp-micro", &frames);
    let v = harness::verbose(&pcap);
    assert!(v.contains("0: pull 1  <- entry"), "{v}");
    assert!(!v.contains("Expert Info"), "{v}");
    let rows = harness::fields(&pcap, &FIELDS);
    assert_eq!(rows.len(), 3, "{rows:?}");

    let code: Vec<String> = count.code.iter().map(|&w| instruction(w)).collect();
    let heap: Vec<String> = count.heap.iter().map(|w| format!("{w:#010x}")).collect();
    let (c, h) = (count.code.len(), count.heap.len());
    assert_eq!(
        rows[0],
        [
            "32",
            &field.len().to_string(),
            &c.to_string(),
            &h.to_string(),
            "0",
            &code.join(","),
            &heap.join(","),
            "7,2",
            &format!("ESP inline microcode code={c} heap={h} entry=0 operands=7,2"),
        ]
    );
    assert_eq!(
        rows[1],
        [
            "64",
            "16",
            "",
            "",
            "",
            "",
            "",
            &format!("7,{}", u64::MAX),
            &format!("ESP installed instruction 64 operands=7,{}", u64::MAX),
        ]
    );
    assert_eq!(rows[2][0], "127");
    assert_eq!(rows[2][8], "ESP installed instruction 127 operands=");
}

/// Fields whose lengths do not add up are flagged, not misread.
#[test]
fn esp_microcode_malformed_fields() {
    if !harness::have_tshark() {
        return;
    }
    let count = assemble(include_str!(
        "../../../../examples/esp-microcode/count.snap"
    ))
    .unwrap();
    let field = esp_micro::body::encode(&count, &[7, 2]).unwrap();
    let nine = esp_micro::body::encode(&count, &[]).unwrap();
    let nine: Vec<u8> = nine.into_iter().chain(words(&[1; 9])).collect();
    let frames = vec![
        packet(32, &field[..2]),
        packet(32, &field[..40]),
        packet(32, &field[..field.len() - 3]),
        packet(32, &nine),
        packet(65, &words(&[7])[..5]),
    ];
    let pcap = harness::write_pcap("esp-micro-malformed", &frames);
    harness::verbose(&pcap);
    let rows = harness::fields(&pcap, &["_ws.col.Info", "_ws.expert.message"]);
    let want = [
        (
            "ESP inline microcode malformed",
            "Inline microcode truncated: 2 of 3 prefix bytes".to_string(),
        ),
        (
            "ESP inline microcode malformed",
            format!(
                "Inline microcode of {} code and {} heap words needs {} bytes, the field has 40",
                count.code.len(),
                count.heap.len(),
                field.len() - 16
            ),
        ),
        (
            "ESP inline microcode malformed",
            "Inline microcode: 13 operand bytes are not whole 64-bit operands".to_string(),
        ),
        (
            "ESP inline microcode malformed",
            "Inline microcode: 9 operands, at most 8".to_string(),
        ),
        (
            "ESP installed instruction 65 malformed",
            "installed instruction 65: 5 operand bytes are not whole 64-bit operands".to_string(),
        ),
    ];
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    for (row, (info, expert)) in rows.iter().zip(want) {
        assert_eq!(row[0], info);
        assert_eq!(row[1], expert);
    }
}
