//! `waist plan compile`: the paper's Fig. 2 ping from `examples/plan/ping.plan` to SNAP
//! assembly that `waist snap verify` accepts, and errors that name line and column.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use clap::Parser;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waist-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn waist(args: &[&str]) -> anyhow::Result<String> {
    let cli = waist::Cli::try_parse_from(args)?;
    let mut out = Vec::new();
    waist::run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

#[test]
fn fig2_ping_compiles_to_assembly_the_snap_tools_accept() {
    let ping = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan/ping.plan");
    let snap = tmp("ping.snap");
    let report = waist(&[
        "waist",
        "plan",
        "compile",
        ping.to_str().unwrap(),
        "-o",
        snap.to_str().unwrap(),
    ])
    .unwrap();
    assert!(report.contains("entry `p`"), "{report}");
    let text = std::fs::read_to_string(&snap).unwrap();
    assert!(
        text.contains("forw") && text.contains("send") && text.contains("demux"),
        "{text}"
    );
    // The same code as the library compiles, and the verifier takes it.
    let program = snap_vm::asm::assemble(&text).unwrap();
    let fig2 = snap_vm::fixtures::plan_ping([10, 0, 0, 1], [10, 0, 0, 2], 7, b"x", 8);
    assert!(
        program.code.len() <= 2 * fig2.code.len(),
        "{} vs the paper's {}",
        program.code.len(),
        fig2.code.len()
    );
    let verified = waist(&["waist", "snap", "verify", snap.to_str().unwrap()]).unwrap();
    assert!(verified.contains("accepted"), "{verified}");
}

#[test]
fn errors_name_the_file_line_and_column() {
    let bad = tmp("bad.plan");
    std::fs::write(&bad, "fun f(x:int) =\n  x + true\n").unwrap();
    let err = waist(&["waist", "plan", "compile", bad.to_str().unwrap()]).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("bad.plan:2:"), "{msg}");
    std::fs::write(&bad, "fun f(x:int) = g(x)\nfun g(y:int) = f(y)\n").unwrap();
    let msg = format!(
        "{:#}",
        waist(&["waist", "plan", "compile", bad.to_str().unwrap()]).unwrap_err()
    );
    assert!(msg.contains("recursion"), "{msg}");
    std::fs::write(&bad, "fun f(x:int) = ess.nope(x)\n").unwrap();
    let msg = format!(
        "{:#}",
        waist(&["waist", "plan", "compile", bad.to_str().unwrap()]).unwrap_err()
    );
    assert!(
        msg.contains("1:16") && msg.contains("known service"),
        "{msg}"
    );
}
