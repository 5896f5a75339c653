use ess::Tag;
use std::net::Ipv4Addr;

use super::super::DEFAULT_SRC;
use super::args::{parse_loc, parse_opcode, parse_u64};
use super::*;

#[test]
fn operands_parse() {
    assert_eq!(parse_u64("0x1F"), Ok(31));
    assert_eq!(parse_u64("31"), Ok(31));
    assert!(parse_u64("x").is_err());
    assert_eq!(parse_loc("central"), Ok(Loc::CENTRAL));
    assert_eq!(parse_loc("output,input"), Ok(Loc::INPUT | Loc::OUTPUT));
    assert_eq!(parse_loc("none"), Ok(Loc::NONE));
    assert!(parse_loc("middle").is_err());
}

#[test]
fn opcodes_outside_64_to_127_are_refused() {
    assert_eq!(parse_opcode("64"), Ok(64));
    assert_eq!(parse_opcode("0x7f"), Ok(127));
    for bad in ["63", "128", "32", "1", "300", "x"] {
        assert!(parse_opcode(bad).is_err(), "{bad}");
    }
}

#[test]
fn reflect_is_on_unless_turned_off_last_flag_wins() {
    use clap::Parser;
    let q = |extra: &[&str]| {
        let mut args = vec!["waist", "esp", "send", "--via", "raw", "--dst", "10.0.0.2"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["mark", "--tag", "0x10"]);
        match crate::Cli::try_parse_from(args).map(|c| c.command) {
            Ok(crate::Command::Esp {
                command: EspCommand::Send(a),
            }) => Query::from_args(&a).ok(),
            _ => None,
        }
    };
    let base = q(&[]).map(|q| (q.reflect, q.instr, q.src));
    assert_eq!(
        base,
        Some((
            true,
            QueryInstr::Builtin(Instruction::Mark { tag: Tag(16) }),
            IpAddr::V4(DEFAULT_SRC)
        ))
    );
    assert_eq!(q(&["--no-reflect"]).map(|q| q.reflect), Some(false));
    assert_eq!(
        q(&["--no-reflect", "--reflect"]).map(|q| q.reflect),
        Some(true)
    );
    assert_eq!(
        q(&["--loc", "central", "--cid", "9"]).map(|q| (q.loc, q.cid)),
        Some((Loc::CENTRAL, 9))
    );
}

#[test]
fn option_queries_ride_on_udp_and_parse_back() {
    let mut q = Query::new(
        Ipv4Addr::new(10, 1, 0, 1).into(),
        Ipv4Addr::new(10, 0, 0, 2).into(),
        Instruction::Mark { tag: Tag(3) },
    );
    q.option = true;
    let p = q.packet().unwrap_or_default();
    assert_eq!(p.get(9), Some(&17));
    let got = q.endpoint().receive(&p);
    assert_eq!(
        got.map(|r| QueryInstr::Builtin(r.instr)),
        Ok(q.instr.clone())
    );
    assert_eq!(q.answer_protocol(), 17);
}

const COUNT_SNAP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/esp-microcode/count.snap"
);

/// `waist esp send --via raw --dst 10.0.0.2 ARGS…` parsed, and the query built.
fn micro_query(extra: &[&str]) -> Result<Query, String> {
    use clap::Parser;
    let mut args = vec!["waist", "esp", "send", "--via", "raw", "--dst", "10.0.0.2"];
    args.extend_from_slice(extra);
    match crate::Cli::try_parse_from(args)
        .map_err(|e| e.to_string())?
        .command
    {
        crate::Command::Esp {
            command: EspCommand::Send(a),
        } => Query::from_args(&a).map_err(|e| e.to_string()),
        _ => Err(String::from("not esp send")),
    }
}

#[test]
fn microcode_file_and_operands_build_an_inline_packet() {
    let q = micro_query(&[
        "--microcode",
        COUNT_SNAP,
        "--operand",
        "7",
        "--operand",
        "0x10",
    ]);
    let q = q.unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(COUNT_SNAP).unwrap_or_default();
    let want = esp_micro::endpoint::MicroInstruction::inline_assembly(&text, &[7, 16]);
    assert_eq!(
        q.instr,
        QueryInstr::Micro(MicroQuery {
            name: "count.snap".into(),
            instr: want.unwrap_or_else(|e| panic!("{e}")),
        })
    );
    // The packet: opcode 32, the body (program, then the operands) in the field.
    let p = q.packet().unwrap_or_default();
    let got = q
        .endpoint()
        .receive_raw(&p)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((got.opcode, got.operands.len()), (32, 87));
    assert_eq!(got.operands.get(71..79), Some(&7u64.to_be_bytes()[..]));
    assert_eq!(got.operands.get(79..), Some(&16u64.to_be_bytes()[..]));
    assert!(q.reflect);
}

const COUNT_PLAN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/esp-microcode/count.plan"
);

#[test]
fn plan_file_and_operands_build_an_inline_packet() {
    let q = micro_query(&["--plan", COUNT_PLAN, "--operand", "7", "--operand", "2"]);
    let q = q.unwrap_or_else(|e| panic!("{e}"));
    let p = q.packet().unwrap_or_default();
    let got = q
        .endpoint()
        .receive_raw(&p)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.opcode, 32);
    let body = esp_micro::body::Body::parse(&got.operands).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(body.operand_words().collect::<Vec<_>>(), [7, 2]);
    // The program is the compiled PLAN, verified as a router verifies it.
    assert!(esp_micro::Microcode::new(&body.to_program()).is_ok());
}

#[test]
fn opcode_and_operands_build_an_installed_packet() {
    let q = micro_query(&[
        "--opcode",
        "64",
        "--operand",
        "5",
        "--operand",
        "10",
        "--loc",
        "central",
    ]);
    let q = q.unwrap_or_else(|e| panic!("{e}"));
    let p = q.packet().unwrap_or_default();
    let mut field = 5u64.to_be_bytes().to_vec();
    field.extend_from_slice(&10u64.to_be_bytes());
    // IPv4 (20) + the ESP header: version 1 and Loc central, RB, opcode 64, 16 operand bytes, CID 1; then the field.
    assert_eq!(p.get(20..28), Some(&[0x12u8, 0x80, 64, 16, 0, 0, 0, 1][..]));
    assert_eq!(p.get(28..), Some(&field[..]));
    // Piggybacked: an installed instruction fits the IPv4 option space.
    let mut q = q;
    q.option = true;
    let p = q.packet().unwrap_or_default();
    assert_eq!(q.endpoint().receive_raw(&p).map(|r| r.operands), Ok(field));
}

#[test]
fn instructions_must_be_exactly_one() {
    let both = micro_query(&["--opcode", "64", "mark", "--tag", "1"]);
    assert!(both.is_err_and(|e| e.contains("not both")));
    let none = micro_query(&[]);
    assert!(none.is_err_and(|e| e.contains("no instruction")));
    let stray = micro_query(&["--operand", "1", "mark", "--tag", "1"]);
    assert!(stray.is_err_and(|e| e.contains("--operand goes with")));
    assert!(micro_query(&["--opcode", "32"]).is_err());
    assert!(micro_query(&["--opcode", "64", "--microcode", COUNT_SNAP]).is_err());
    assert!(micro_query(&["--plan", COUNT_PLAN, "--microcode", COUNT_SNAP]).is_err());
    assert!(micro_query(&["--plan", COUNT_PLAN, "--opcode", "64"]).is_err());
    let nine = ["--operand", "1"].repeat(9);
    assert!(micro_query(&[&["--opcode", "64"][..], &nine].concat()).is_err());
    let missing = micro_query(&["--microcode", "/nonexistent/x.snap"]);
    assert!(missing.is_err_and(|e| e.contains("reading /nonexistent/x.snap")));
}

#[test]
fn microcode_answers_report_the_returned_operands() {
    let q = micro_query(&[
        "--microcode",
        COUNT_SNAP,
        "--operand",
        "7",
        "--operand",
        "1",
    ]);
    let q = q.unwrap_or_else(|e| panic!("{e}"));
    let text = |o: &Outcome, json| {
        let mut out = Vec::new();
        report(&q, o, json, &mut out).map(|()| String::from_utf8_lossy(&out).into_owned())
    };
    let answer = Outcome::Micro(MicroAnswer {
        from: Ipv4Addr::new(10, 0, 0, 2).into(),
        opcode: 32,
        operands: vec![7, 9],
        loc: Loc::ALL,
        err: None,
    });
    assert_eq!(answer.exit_code(), EXIT_ANSWER);
    assert_eq!(
        text(&answer, false).ok().as_deref(),
        Some(
            "answer from 10.0.0.2: count.snap (inline microcode, opcode 32) delivered \
             operands=[7, 9] loc=input,central,output\n"
        )
    );
    let json: serde_json::Value =
        serde_json::from_str(&text(&answer, true).unwrap_or_default()).unwrap_or_default();
    assert_eq!(json["operands"], serde_json::json!([7, 9]));
    assert_eq!(
        (&json["status"], &json["verdict"]),
        (&"answer".into(), &"delivered".into())
    );
    assert_eq!(json["opcode"], 32);
    let abort = Outcome::Micro(MicroAnswer {
        err: Some(esp_proto::wire::ErrCode::Malformed),
        loc: Loc::NONE,
        ..match answer {
            Outcome::Micro(a) => a,
            _ => unreachable!(),
        }
    });
    assert_eq!(abort.exit_code(), EXIT_ABORT);
    assert_eq!(
        text(&abort, false).ok().as_deref(),
        Some(
            "abort from 10.0.0.2: count.snap (inline microcode, opcode 32) \
             operands=[7, 9] error=malformed\n"
        )
    );
    let json: serde_json::Value =
        serde_json::from_str(&text(&abort, true).unwrap_or_default()).unwrap_or_default();
    assert_eq!(
        (&json["status"], &json["error"]),
        (&"abort".into(), &"malformed".into())
    );
    assert_eq!(
        text(&Outcome::Timeout, false).ok().as_deref(),
        Some("no answer from 10.0.0.2 within 2000 ms: dropped (or lost)\n")
    );
    assert_eq!(Outcome::Timeout.exit_code(), EXIT_TIMEOUT);
}
