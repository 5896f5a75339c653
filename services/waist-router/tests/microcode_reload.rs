//! ESP microcode across SIGHUP (issue 36): the running binary logs each installed
//! instruction's bounds at start; a reload installs a new opcode and switches inline
//! microcode off (one summary line says so; the instruction kept keeps its run count); a
//! program that does not assemble refuses the reload with a located error and the running
//! microcode goes on; a reload that drops an instruction leaves its opcode unknown.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod microcode_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use esp_proto::wire::ErrCode;
use microcode_support::{
    COUNT, Host, WAIT, esp_of, esp_packet, inline_count, metric, operands, scrape,
};
use netio::process::Daemon;

const BIN: &str = env!("CARGO_BIN_EXE_waist-router");

fn wait_for(log: &mpsc::Receiver<String>, what: &str) -> String {
    netio::process::wait_for(log, what, WAIT)
}

/// An `[[esp.instruction]]`.
fn instruction(opcode: u8, name: &str, program: &str) -> String {
    format!(
        "\n[[esp.instruction]]\nopcode = {opcode}\nname = \"{name}\"\nprogram = \"{program}\"\n"
    )
}

#[test]
fn sighup_installs_new_microcode_and_refuses_a_bad_program() {
    let dir = std::env::temp_dir().join(format!("waist-router-mreload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("count.snap"), COUNT).unwrap();
    std::fs::write(dir.join("bad.snap"), "pull 1\nfrobnicate\n").unwrap();
    let (a, b) = (Host::new([10, 1, 0, 5]), Host::new([10, 2, 0, 5]));
    let head = format!(
        "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n\n{}{}[esp]\nrate = 100\n",
        a.link("a"),
        b.link("b")
    );
    let path = dir.join("r1.toml");
    std::fs::write(
        &path,
        format!("{head}{}", instruction(64, "count", "count.snap")),
    )
    .unwrap();
    let mut child = Daemon::new(
        Command::new(BIN)
            .arg("--config")
            .arg(&path)
            .args(["--metrics", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let log = child.log_lines("router");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = out.next().unwrap().unwrap();
    let metrics = url
        .trim_start_matches("metrics http://")
        .trim_end_matches("/metrics")
        .parse()
        .unwrap();
    let b0 = esp_micro::Microcode::assemble(COUNT).unwrap().bounds();
    let line = wait_for(&log, "installed ESP instruction 64");
    let want = format!(
        "`count`: at most {} instructions, stack depth {}, {} heap words",
        b0.instructions, b0.stack_depth, b0.heap_words
    );
    assert!(line.contains(&want), "{line}");

    let count = |opcode: u8| esp_packet(a.addr, b.addr, opcode, 1, &operands(&[0xC0, 100]));
    let inline = esp_packet(a.addr, b.addr, 32, 1, &inline_count(0xC1, 100));
    a.send(&count(64));
    assert_eq!(esp_of(&b.recv()).1, None, "64 runs");
    a.send(&count(65));
    assert_eq!(esp_of(&b.recv()).1, Some(ErrCode::Malformed), "65 unknown");
    a.send(&inline);
    assert_eq!(esp_of(&b.recv()).1, None, "inline runs");

    // Opcode 65 installed, inline microcode switched off.
    let v2 = format!(
        "{head}microcode = \"off\"\n{}{}",
        instruction(64, "count", "count.snap"),
        instruction(65, "count2", "count.snap")
    );
    std::fs::write(&path, &v2).unwrap();
    child.signal("-HUP");
    let installed = wait_for(&log, "installed ESP instruction 65");
    assert!(installed.contains("`count2`: at most"), "{installed}");
    let line = wait_for(&log, "reloaded:");
    assert!(
        line.contains("reloaded: inline microcode off, +1 ESP instruction"),
        "{line}"
    );
    assert!(!line.contains("[esp] changed"), "{line}");
    a.send(&count(65));
    assert_eq!(esp_of(&b.recv()).1, None, "65 runs");
    a.send(&count(64));
    assert_eq!(esp_of(&b.recv()).1, None, "64 runs");
    a.send(&inline);
    assert_eq!(esp_of(&b.recv()).1, Some(ErrCode::Malformed), "inline off");
    let page = scrape(metrics);
    let runs = |op: u8, name: &str| {
        metric(
            &page,
            &format!("waist_esp_installed_runs_total{{opcode=\"{op}\",name=\"{name}\"}}"),
        )
    };
    assert_eq!(runs(64, "count"), 2.0, "counted across the reload: {page}");
    assert_eq!(runs(65, "count2"), 1.0, "{page}");
    let refused = |reason: &str| {
        metric(
            &page,
            &format!("waist_esp_microcode_refused_total{{reason=\"{reason}\"}}"),
        )
    };
    assert_eq!((refused("off"), refused("unknown_opcode")), (1.0, 1.0));

    // A program that does not assemble: refused, located; the running microcode goes on.
    let bad = format!("{v2}{}", instruction(66, "bad", "bad.snap"));
    std::fs::write(&path, &bad).unwrap();
    child.signal("-HUP");
    let line = wait_for(&log, "reload failed");
    let at = bad
        .lines()
        .position(|l| l == "program = \"bad.snap\"")
        .unwrap()
        + 1;
    assert!(
        line.contains(&format!(
            "r1.toml:{at}:11: key `esp.instruction[2].program`: {}: assembly: ",
            dir.join("bad.snap").display()
        )),
        "{line}"
    );
    a.send(&count(65));
    assert_eq!(esp_of(&b.recv()).1, None, "65 still runs");
    a.send(&inline);
    assert_eq!(esp_of(&b.recv()).1, Some(ErrCode::Malformed), "still off");

    // 64 dropped, inline back on.
    std::fs::write(
        &path,
        format!("{head}{}", instruction(65, "count2", "count.snap")),
    )
    .unwrap();
    child.signal("-HUP");
    wait_for(&log, "removed ESP instruction 64 `count`");
    let line = wait_for(&log, "reloaded:");
    assert!(
        line.contains("reloaded: inline microcode on, -1 ESP instruction"),
        "{line}"
    );
    a.send(&count(64));
    assert_eq!(esp_of(&b.recv()).1, Some(ErrCode::Malformed), "64 gone");
    a.send(&inline);
    assert_eq!(esp_of(&b.recv()).1, None, "inline on again");

    child.signal("-TERM");
    wait_for(&log, "stopped");
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}
