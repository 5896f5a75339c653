//! The ESP dissector (`tools/wireshark/waist_esp.lua`) on packets built by `esp_proto`'s own
//! endpoint: dedicated (IPv4 and IPv6, protocol 253), piggybacked in IPv4 option 158 and in
//! the IPv6 hop-by-hop option 0x3E, an aborted answer, and truncated instructions.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use esp_proto::endpoint::Endpoint;
use esp_proto::idmap::IdMap;
use esp_proto::instr::{CombineOp, CompareOp, Instruction, Robust};
use esp_proto::wire::{ErrCode, Loc, locate};
use ess::{Tag, Value};

use crate::harness;

const A4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);
const CID: u32 = 0x00C0_FFEE;

/// The fields every test reads, in this order.
const FIELDS: [&str; 14] = [
    "esp.carrier",
    "esp.opcode",
    "esp.loc",
    "esp.err",
    "esp.rb",
    "esp.errcode",
    "esp.cid",
    "esp.operand_len",
    "esp.tag",
    "esp.value",
    "esp.thresh",
    "esp.cmp",
    "esp.combine",
    "_ws.col.Info",
];

/// `esp.tag` as tshark prints a 64-bit hex field.
fn tag(t: u64) -> String {
    format!("{t:#018x}")
}

/// Writes `frames`, reads `FIELDS` back (one row per frame) and checks nothing is
/// malformed or a Lua error.
fn dissect(name: &str, frames: &[Vec<u8>]) -> Vec<Vec<String>> {
    let pcap = harness::write_pcap(name, frames);
    harness::verbose(&pcap);
    let rows = harness::fields(&pcap, &FIELDS);
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

fn udp4(payload: &[u8]) -> Vec<u8> {
    let b = etherparse::PacketBuilder::ipv4(A4.octets(), B4.octets(), 64).udp(40000, 40001);
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

fn udp6(payload: &[u8]) -> Vec<u8> {
    let b = etherparse::PacketBuilder::ipv6(
        Ipv6Addr::LOCALHOST.octets(),
        Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 9).octets(),
        64,
    )
    .udp(40000, 40001);
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

/// Dedicated IPv4 and IPv6 packets: COUNT, COMPARE, COLLECT, RCHLD, GET, PARAM.
#[test]
fn esp_dedicated_packets() {
    if !harness::have_tshark() {
        return;
    }
    let ep = Endpoint::new(CID, A4.into())
        .with_dest(B4.into())
        .with_loc(Loc::INPUT | Loc::CENTRAL);
    let count = Instruction::Count {
        counter: Tag(0xC0_0417),
        thresh: 3,
    };
    let compare = Instruction::Compare {
        value: Tag(0xF00D),
        current: Value(42),
        op: CompareOp::Ge,
    };
    let collect = Instruction::Collect {
        value: Tag(0x11),
        val: Value(1234),
        counter: Tag(0xC0_0417),
        op: CombineOp::Max,
    };
    let rchld = Instruction::Rchld {
        children: Tag(0x700),
        counter: Tag(0x701),
        robust: Robust {
            thresh: 2,
            k: 3,
            idmap: IdMap::from_words(&[0xAA, 0xBB]).unwrap(),
        },
    };
    let get = Instruction::Get {
        tag: Tag(0xFFFF_FFFF_FFFF_FFFF),
        value: Value(0),
    };
    let ep6 = Endpoint::new(
        CID + 1,
        IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
    )
    .with_loc(Loc::OUTPUT)
    .with_reflect(true);
    let param = Instruction::Param {
        param: esp_proto::instr::Param::QueueLen,
        op: CombineOp::Max,
        value: Value(5),
    };
    let frames = vec![
        ep.packet_to(B4.into(), &count, b"payload").unwrap(),
        ep.packet(&compare).unwrap(),
        ep.packet(&collect).unwrap(),
        ep.packet(&rchld).unwrap(),
        ep.packet(&get).unwrap(),
        ep6.packet_to(
            Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 9).into(),
            &param,
            &[],
        )
        .unwrap(),
    ];
    let rows = dissect("esp-dedicated", &frames);
    let cid = format!("{CID:#010x}");
    // carrier, opcode, loc (I|C = 0b101), err, rb, errcode, cid, operand len, tags, values,
    // thresh, cmp, combine, info
    let t = tag(0xC0_0417);
    let info = |i: &Instruction| format!("ESP {i}");
    assert_eq!(
        rows[0],
        [
            "1",
            "1",
            "5",
            "0",
            "0",
            "0",
            &cid,
            "16",
            &t,
            "",
            "3",
            "",
            "",
            &info(&count)
        ]
    );
    assert_eq!(rows[0][13], "ESP COUNT counter=0xc00417 thresh=3");
    assert_eq!(
        rows[1],
        [
            "1",
            "2",
            "5",
            "0",
            "0",
            "0",
            &cid,
            "17",
            &tag(0xF00D),
            "42",
            "",
            "3",
            "",
            &info(&compare)
        ]
    );
    let two_tags = format!("{},{}", tag(0x11), t);
    assert_eq!(
        rows[2],
        [
            "1",
            "3",
            "5",
            "0",
            "0",
            "0",
            &cid,
            "25",
            &two_tags,
            "1234",
            "",
            "",
            "2",
            &info(&collect)
        ]
    );
    assert_eq!(rows[3][1], "4");
    assert_eq!(rows[3][7], "36");
    assert_eq!(rows[3][8], format!("{},{}", tag(0x700), tag(0x701)));
    assert_eq!(rows[3][13], info(&rchld));
    assert_eq!(rows[4][8], "0xffffffffffffffff");
    assert_eq!(rows[4][13], info(&get));
    // IPv6, Loc = output (0b010), RB set; PARAM has no tag.
    let cid6 = format!("{:#010x}", CID + 1);
    assert_eq!(
        rows[5],
        [
            "1",
            "12",
            "2",
            "0",
            "1",
            "0",
            &cid6,
            "10",
            "",
            "5",
            "",
            "",
            "2",
            &format!("{} [RB]", info(&param))
        ]
    );
    // The robust operands and the payload after a dedicated instruction.
    let pcap = harness::write_pcap("esp-dedicated-extra", &frames[..4]);
    let extra = harness::fields(
        &pcap,
        &["esp.limit", "esp.k", "esp.words", "esp.idmap", "data.data"],
    );
    assert_eq!(extra[0], ["", "", "", "", "7061796c6f6164"]);
    assert_eq!(
        extra[3],
        ["2", "3", "2", "0x00000000000000aa,0x00000000000000bb", ""]
    );
    let v = show("esp-dedicated-ipv4-count", &frames[0]);
    assert!(v.contains("Opcode: COUNT (1)"), "{v}");
    assert!(v.contains("Tag: 0x0000000000c00417 (counter C)"), "{v}");
}

/// An answer whose computation aborted: Err set, Code = missing-state, Loc cleared, as a
/// router leaves it (the endpoint's receive reports the same error).
#[test]
fn esp_aborted_answer() {
    if !harness::have_tshark() {
        return;
    }
    let ep = Endpoint::new(CID, A4.into()).with_dest(B4.into());
    let collect = Instruction::Collect {
        value: Tag(0x11),
        val: Value(7),
        counter: Tag(0x12),
        op: CombineOp::Add,
    };
    let mut pkt = ep.packet(&collect).unwrap();
    let located = locate(&pkt).unwrap().unwrap();
    {
        let mut h = located.header_mut(&mut pkt).unwrap();
        h.set_err(true);
        h.set_err_code(ErrCode::MissingState);
        h.set_loc(Loc::NONE);
    }
    let got = ep.receive(&pkt).unwrap();
    assert_eq!(got.err, Some(ErrCode::MissingState));
    let rows = dissect("esp-aborted", std::slice::from_ref(&pkt));
    assert_eq!(rows[0][1], "3");
    assert_eq!((&*rows[0][2], &*rows[0][3], &*rows[0][5]), ("0", "1", "2"));
    assert_eq!(rows[0][13], format!("ESP {collect} [Err missing-state]"));
    let pcap = harness::write_pcap("esp-aborted-expert", &[pkt]);
    let ex = harness::fields(&pcap, &["_ws.expert.message"]);
    assert_eq!(ex[0], ["Computation aborted at a router: missing-state"]);
}

/// COUNT and COLLECT piggybacked on UDP in IPv4 option 158 (beside the Router Alert).
#[test]
fn esp_in_ipv4_option() {
    if !harness::have_tshark() {
        return;
    }
    let ep = Endpoint::new(CID, A4.into()).with_loc(Loc::ALL);
    let count = Instruction::Count {
        counter: Tag(0xAB),
        thresh: 10,
    };
    let collect = Instruction::Collect {
        value: Tag(0x1),
        val: Value(3),
        counter: Tag(0x2),
        op: CombineOp::Xor,
    };
    let frames = vec![
        ep.piggyback(&udp4(b"hello"), &count).unwrap(),
        ep.piggyback(&udp4(b"world"), &collect).unwrap(),
    ];
    let rows = dissect("esp-ipv4-option", &frames);
    let cid = format!("{CID:#010x}");
    assert_eq!(
        rows[0],
        [
            "2",
            "1",
            "7",
            "0",
            "0",
            "0",
            &cid,
            "16",
            &tag(0xAB),
            "",
            "10",
            "",
            "",
            "ESP COUNT counter=0xab thresh=10, 40000 → 40001 Len=5"
        ]
    );
    assert_eq!(rows[1][1], "3");
    assert_eq!(rows[1][8], format!("{},{}", tag(1), tag(2)));
    assert_eq!((&*rows[1][9], &*rows[1][12]), ("3", "5"));
    assert!(
        rows[1][13].starts_with(&format!("ESP {collect}, ")),
        "{}",
        rows[1][13]
    );
    // Wireshark's own dissection goes on around the option: Router Alert and UDP.
    let pcap = harness::write_pcap("esp-ipv4-option-ip", &frames);
    let ip = harness::fields(&pcap, &["ip.opt.type", "udp.dstport", "_ws.col.Protocol"]);
    assert_eq!(ip[0], ["148,0", "40001", "ESP/UDP"]);
    show("esp-ipv4-option-count", &frames[0]);
}

/// MARK and RCOLLECT (too large for an IPv4 option) in the IPv6 hop-by-hop option 0x3E.
#[test]
fn esp_in_ipv6_hop_by_hop() {
    if !harness::have_tshark() {
        return;
    }
    let ep = Endpoint::new(CID, Ipv6Addr::LOCALHOST.into()).with_loc(Loc::CENTRAL);
    let mark = Instruction::Mark { tag: Tag(0x4D4B) };
    let rcollect = Instruction::Rcollect {
        value: Tag(0x10),
        val: Value(99),
        heard: Tag(0x20),
        children: Tag(0x30),
        forwarded: Tag(0x40),
        op: CombineOp::Add,
        robust: Robust {
            thresh: 4,
            k: 2,
            idmap: IdMap::from_words(&[1, 2, 3]).unwrap(),
        },
    };
    let frames = vec![
        ep.piggyback(&udp6(b"hello"), &mark).unwrap(),
        ep.piggyback(&udp6(b"hi"), &rcollect).unwrap(),
    ];
    let rows = dissect("esp-ipv6-hbh", &frames);
    let cid = format!("{CID:#010x}");
    assert_eq!(
        rows[0],
        [
            "3",
            "9",
            "1",
            "0",
            "0",
            "0",
            &cid,
            "8",
            &tag(0x4D4B),
            "",
            "",
            "",
            "",
            "ESP MARK tag=0x4d4b, 40000 → 40001 Len=5"
        ]
    );
    assert_eq!(rows[1][1], "5");
    assert_eq!(rows[1][7], "69");
    assert_eq!(rows[1][8], [0x10, 0x20, 0x30, 0x40].map(tag).join(","));
    assert_eq!(rows[1][9], "99");
    assert!(
        rows[1][13].starts_with(&format!("ESP {rcollect}, ")),
        "{}",
        rows[1][13]
    );
    let pcap = harness::write_pcap("esp-ipv6-hbh-ip", &frames);
    let ip = harness::fields(&pcap, &["ipv6.opt.type", "udp.dstport", "esp.words"]);
    assert_eq!(ip[1], ["0x3e,0x01", "40001", "3"]);
    show("esp-ipv6-hbh-mark", &frames[0]);
}

/// Truncated instructions are flagged by the script (expert info), never a Lua error or
/// Wireshark's "Malformed Packet".
#[test]
fn esp_truncated_is_flagged() {
    if !harness::have_tshark() {
        return;
    }
    let ep = Endpoint::new(CID, A4.into()).with_dest(B4.into());
    let good = ep
        .packet(&Instruction::Count {
            counter: Tag(5),
            thresh: 1,
        })
        .unwrap();
    // The operand length claims 40 bytes; 16 follow.
    let mut long = good.clone();
    long[20 + 3] = 40;
    // An IPv4 packet of protocol 253 carrying only 5 bytes of ESP header.
    let mut short = vec![0u8; 25];
    waist_ip::emit_header(&mut short, A4.into(), B4.into(), 253, 64, 5).unwrap();
    short[20..].copy_from_slice(&good[20..25]);
    // A hop-by-hop option 0x3E of 4 bytes (Next header 59, HBH length 0).
    let mut hbh = vec![0u8; 48];
    waist_ip::emit_header(
        &mut hbh,
        Ipv6Addr::LOCALHOST.into(),
        Ipv6Addr::LOCALHOST.into(),
        0,
        64,
        8,
    )
    .unwrap();
    hbh[40..].copy_from_slice(&[59, 0, 0x3E, 4, 0x1E, 0, 1, 16]);
    let frames = vec![long, short, hbh];
    let pcap = harness::write_pcap("esp-truncated", &frames);
    let v = harness::verbose(&pcap);
    let rows = harness::fields(
        &pcap,
        &["esp.malformed", "_ws.expert.message", "_ws.col.Info"],
    );
    assert_eq!(
        rows[0],
        [
            "1",
            "ESP operand length 40 but 16 bytes follow the header",
            "ESP COUNT truncated"
        ]
    );
    assert_eq!(
        rows[1],
        [
            "1",
            "ESP header truncated: 5 of 8 bytes",
            "ESP truncated instruction"
        ]
    );
    assert_eq!(rows[2][0], "1");
    assert!(
        rows[2][1].contains("ESP header truncated: 4 of 8 bytes"),
        "{:?}",
        rows[2]
    );
    assert!(v.contains("[Expert Info (Error/Malformed): ESP header truncated: 5 of 8 bytes]"));
    show("esp-truncated-short", &frames[1]);
}
