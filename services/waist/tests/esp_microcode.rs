//! `waist esp send` with SNAP microcode against real routers: two `waist-router`s on
//! loopback UDP links (`chain`, as `host_tools.rs` runs them), both with the shipped COUNT
//! installed under opcode 64, the tool as the far end of R1's host link. The query is
//! reflected by R2 and run by R1 on the way back (ESP §2.5), inline microcode being on by
//! default at a router.
//!
//! ```text
//!  tool 10.1.0.1 ─ host [R1 10.0.0.1] ── [R2 10.0.0.2] far ─ (nobody)
//! ```

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use esp_proto::wire::{ErrCode, Loc};
use waist::host::esp::{self, MicroQuery, Outcome, Query};
use waist::host::{EXIT_ABORT, EXIT_ANSWER, EXIT_TIMEOUT};

mod chain;

use chain::{Chain, R2, TOOL};

/// The shipped COUNT microcode.
const COUNT_SNAP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/esp-microcode/count.snap"
);

/// COUNT in PLAN.
const COUNT_PLAN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/esp-microcode/count.plan"
);

/// `[tag, _] -> [tag, count(tag)]`, forward: operand 1 comes back as the router's count.
const COUNTER: &str = "pull 1\ncalls \"ess.count\"\nstore 1\npush 0\n";

/// Verdict 2: abort with MissingState.
const MISSING: &str = "push 2\n";

/// Both routers with the shipped COUNT installed under opcode 64.
async fn chain() -> Chain {
    Chain::start_with(&format!(
        "[[esp.instruction]]\nopcode = 64\nname = \"count\"\nprogram = \"{COUNT_SNAP}\"\n"
    ))
    .await
}

fn inline(text: &str, operands: &[u64], loc: Loc) -> Query {
    let m = MicroQuery::inline(Path::new("test.snap"), text, operands).unwrap();
    let mut q = Query::new(TOOL.into(), R2.into(), m);
    q.loc = loc;
    q.timeout = Duration::from_millis(600);
    q
}

#[tokio::test]
async fn inline_microcode_returns_the_routers_operands_and_aborts_precisely() {
    let chain = chain().await;
    let mut link = chain.link(esp_proto::consts::IP_PROTOCOL).await;
    for count in 1..=2 {
        let o = esp::send(&mut link, &inline(COUNTER, &[9, 0], Loc::CENTRAL))
            .await
            .unwrap();
        let Outcome::Micro(a) = &o else {
            panic!("{o:?}")
        };
        // R2 reflected it; R1's central context counted tag 9 into operand 1.
        assert_eq!(
            (a.from, a.opcode, &a.operands, a.loc, a.err),
            (R2.into(), 32, &vec![9, count], Loc::CENTRAL, None)
        );
        assert_eq!(o.exit_code(), EXIT_ANSWER);
    }
    let o = esp::send(&mut link, &inline(MISSING, &[], Loc::CENTRAL))
        .await
        .unwrap();
    let Outcome::Micro(a) = &o else {
        panic!("{o:?}")
    };
    assert_eq!((a.err, a.loc), (Some(ErrCode::MissingState), Loc::NONE));
    assert_eq!(o.exit_code(), EXIT_ABORT);
    // Opcode 64, the installed COUNT: forwarded with its operands, then dropped at R1 over
    // its threshold. Opcode 65, installed nowhere: R1 aborts it as an unknown opcode.
    let installed = |opcode: u8| {
        let mut q = Query::new(
            TOOL.into(),
            R2.into(),
            MicroQuery::installed(opcode, &[7, 1]).unwrap(),
        );
        q.loc = Loc::CENTRAL;
        q.timeout = Duration::from_millis(600);
        q
    };
    let o = esp::send(&mut link, &installed(64)).await.unwrap();
    let Outcome::Micro(a) = &o else {
        panic!("{o:?}")
    };
    assert_eq!((a.opcode, &a.operands, a.err), (64, &vec![7, 1], None));
    let o = esp::send(&mut link, &installed(64)).await.unwrap();
    assert_eq!(o.exit_code(), EXIT_TIMEOUT, "{o:?}");
    let o = esp::send(&mut link, &installed(65)).await.unwrap();
    let Outcome::Micro(a) = &o else {
        panic!("{o:?}")
    };
    assert_eq!(
        (a.opcode, &a.operands, a.err),
        (65, &vec![7, 1], Some(ErrCode::Malformed))
    );
    let s = chain.stop();
    // Only R1 ran them (R2, addressed, reflects without running).
    assert_eq!(s[0].node.esp_executed, 6, "{:?}", s[0].node);
    assert_eq!(s[1].node.esp_executed, 0, "{:?}", s[1].node);
}

/// `waist esp send --via VIA --dst 10.0.0.2 ARGS…`.
fn waist(via: &str, args: &[&str]) -> Output {
    let mut all = vec!["esp", "send", "--via", via, "--dst", "10.0.0.2"];
    all.extend_from_slice(args);
    std::process::Command::new(env!("CARGO_BIN_EXE_waist"))
        .args(all)
        .output()
        .unwrap()
}

#[tokio::test]
async fn the_waist_binary_sends_count_snap_and_count_plan_inline_forwarded_then_dropped() {
    let chain = chain().await;
    let via = chain.via_arg();
    let count = [
        "--microcode",
        COUNT_SNAP,
        "--operand",
        "7",
        "--operand",
        "1",
    ];
    // The routers run on their own threads: blocking this one on the child is fine.
    let out = waist(&via, &count);
    let text = String::from_utf8(out.stdout).unwrap();
    println!(
        "$ waist esp send --via … --dst 10.0.0.2 {}\n{text}",
        count.join(" ")
    );
    assert_eq!(out.status.code(), Some(EXIT_ANSWER.into()), "{text}");
    assert_eq!(
        text,
        "answer from 10.0.0.2: count.snap (inline microcode, opcode 32) delivered \
         operands=[7, 1] loc=input,central,output\n"
    );
    // Counter 7 is now 1 in each of R1's three contexts: the second query passes the
    // threshold at the first and is dropped there.
    let out = waist(
        &via,
        &[&count[..], &["--timeout-ms", "500", "--json"]].concat(),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    println!("{text}");
    assert_eq!(out.status.code(), Some(EXIT_TIMEOUT.into()), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (&json["status"], &json["verdict"]),
        (&"timeout".into(), &"dropped".into())
    );

    // Another counter: delivered again, in JSON with the operands.
    let out = waist(
        &via,
        &[
            "--microcode",
            COUNT_SNAP,
            "--operand",
            "0x8",
            "--operand",
            "1",
            "--json",
        ],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(EXIT_ANSWER.into()), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["operands"], serde_json::json!([8, 1]));
    assert_eq!(json["verdict"], "delivered");

    // COUNT written in PLAN, compiled by the tool: the same answers as count.snap's.
    let plan = ["--plan", COUNT_PLAN, "--operand", "11", "--operand", "1"];
    let out = waist(&via, &plan);
    let text = String::from_utf8(out.stdout).unwrap();
    println!(
        "$ waist esp send --via … --dst 10.0.0.2 {}\n{text}",
        plan.join(" ")
    );
    assert_eq!(out.status.code(), Some(EXIT_ANSWER.into()), "{text}");
    assert_eq!(
        text,
        "answer from 10.0.0.2: count.plan (inline microcode, opcode 32) delivered \
         operands=[11, 1] loc=input,central,output\n"
    );
    let out = waist(&via, &[&plan[..], &["--timeout-ms", "500"]].concat());
    assert_eq!(out.status.code(), Some(EXIT_TIMEOUT.into()));

    // An abort is exit code 1, naming the Err code.
    let dir = tempdir();
    let missing = dir.join("missing.snap");
    std::fs::write(&missing, MISSING).unwrap();
    let out = waist(&via, &["--microcode", missing.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(EXIT_ABORT.into()), "{text}");
    assert_eq!(
        text,
        "abort from 10.0.0.2: missing.snap (inline microcode, opcode 32) operands=[] \
         error=missing-state\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let s = chain.stop();
    // count.snap: 3 contexts, then dropped at the first, then 3 (another counter); as
    // much for count.plan; the abort 1.
    assert_eq!(
        s[0].node.esp_executed,
        3 + 1 + 3 + 3 + 1 + 1,
        "{:?}",
        s[0].node
    );
}

/// A directory of this process's own under the system's temporary directory.
fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waist-esp-micro-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
