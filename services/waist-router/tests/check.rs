//! `--check` refuses what the start refuses, with the same one-line error naming the file,
//! line and key: each known bad config is given to `waist-router --check` and to a real
//! start of the binary, which must fail the same way before it binds anything (issue 33).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_waist-router");

/// A good config: one link, loopback, ports chosen by the kernel (nothing leaks if a start
/// were to get as far as binding).
const GOOD: &str = r#"[node]
name = "r1"
addresses = ["10.0.0.1"]

[dv]

[[link]]
name = "a"
kind = "udp"
local = "127.0.0.1:0"
peer = "127.0.0.1:9"
cost = 1

[[route]]
prefix = "10.9.0.0/16"
link = "a"
"#;

/// A second link, appended.
const SECOND: &str = "\n[[link]]\nname = \"b\"\non = \"udp:127.0.0.1:0=127.0.0.1:9\"\n";

/// The bad configs: what is changed, then the key named, a line the error is on (as text
/// of that line) and what the message says.
fn cases() -> Vec<(
    &'static str,
    String,
    &'static str,
    &'static str,
    &'static str,
)> {
    let good = GOOD.to_string();
    vec![
        (
            "peer port out of range",
            good.replace("127.0.0.1:9\"", "127.0.0.1:400020\""),
            "peer",
            "peer = ",
            "not a socket address",
        ),
        (
            "two links with one name",
            format!("{good}{}", SECOND.replace("\"b\"", "\"a\"")),
            "name",
            "name = \"a\"\non",
            "a second link named `a`",
        ),
        (
            "two links on one local address",
            good.replace("127.0.0.1:0\"", "127.0.0.1:40999\"")
                + &SECOND.replace("127.0.0.1:0=", "127.0.0.1:40999="),
            "on",
            "on = ",
            "link `a` is there already",
        ),
        (
            "loss above 1",
            good.replace(
                "cost = 1\n",
                "cost = 1\nemulation = { delay_ms = 5, loss = 2.0 }\n",
            ),
            "loss",
            "emulation = ",
            "emulation: must be a probability between 0 and 1",
        ),
        (
            "negative delay",
            good.replace(
                "cost = 1\n",
                "cost = 1\n[link.emulation]\nloss = 0.1\ndelay_ms = -5\n",
            ),
            "delay_ms",
            "delay_ms = -5",
            "emulation: must be a finite number of milliseconds",
        ),
        (
            "MTU too small",
            good.replace("cost = 1\n", "cost = 1\nmtu = 40\n"),
            "mtu",
            "mtu = 40",
            "MTU must be 68..=65535",
        ),
        (
            "a zero cost",
            good.replace("cost = 1\n", "cost = 0\n"),
            "cost",
            "cost = 0",
            "a routing cost is at least 1",
        ),
        (
            "a misspelt key",
            good.replace("addresses = ", "adress = "),
            "adress",
            "adress = ",
            "did you mean `addresses`?",
        ),
        (
            "a misspelt kind",
            good.replace("kind = \"udp\"", "kind = \"upd\""),
            "kind",
            "kind = ",
            "did you mean `udp`?",
        ),
        (
            "a hold-down on a TUN link",
            format!("{good}\n[[link]]\nname = \"t\"\non = \"tun:wchk0\"\nholddown_ms = 5\n"),
            "holddown_ms",
            "holddown_ms = 5",
            "no hold-down",
        ),
        (
            "a TUN device name too long",
            format!(
                "{good}\n[[link]]\nname = \"t\"\nkind = \"tun\"\ndevice = \"a-very-long-device\"\n"
            ),
            "device",
            "device = ",
            "1 to 15 characters",
        ),
        (
            "inline microcode from a link there is not",
            format!("{good}\n[esp]\nrate = 100\nmicrocode = [\"a\", \"nowhere\"]\n"),
            "microcode",
            "microcode = ",
            "no [[link]] named `nowhere`",
        ),
        (
            "inline microcode neither on nor off",
            format!("{good}\n[esp]\nrate = 100\nmicrocode = \"sometimes\"\n"),
            "microcode",
            "microcode = ",
            "expected \"on\", \"off\" or a list of link names",
        ),
        (
            "an instruction under a built-in opcode",
            format!(
                "{good}\n[esp]\nrate = 100\n{}",
                instruction("5", "count.snap")
            ),
            "esp.instruction[0].opcode",
            "opcode = 5",
            "opcode 5 is not installable",
        ),
        (
            "an instruction whose program is not there",
            format!(
                "{good}\n[esp]\nrate = 100\n{}",
                instruction("64", "missing.snap")
            ),
            "esp.instruction[0].program",
            "program = ",
            "cannot read",
        ),
        (
            "an instruction whose program does not assemble",
            format!(
                "{good}\n[esp]\nrate = 100\n{}{}",
                instruction("64", "count.snap"),
                instruction("65", "bad.snap")
            ),
            "esp.instruction[1].program",
            "program = \"bad.snap\"",
            "bad.snap: assembly: ",
        ),
    ]
}

/// An `[[esp.instruction]]` named `count` under `opcode`, its program `program` (beside the
/// config: [`tempdir`] holds `count.snap` and `bad.snap`).
fn instruction(opcode: &str, program: &str) -> String {
    format!("\n[[esp.instruction]]\nopcode = {opcode}\nname = \"count\"\nprogram = \"{program}\"\n")
}

/// The shipped COUNT microcode's text.
fn count_snap() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/esp-microcode/count.snap"
    ))
    .unwrap()
}

/// Runs the binary with `args` until it exits (a start that does not fail is stopped after
/// a while and reported): its status and its stderr.
fn run(config: &Path, check: bool) -> (bool, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("--config").arg(config);
    if check {
        cmd.arg("--check");
    }
    netio::process::run_to_exit(cmd, Duration::from_secs(30)).unwrap()
}

/// This process's directory of configs, with the programs they install.
fn tempdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("waist-router-check-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("count.snap"), count_snap()).unwrap();
    std::fs::write(d.join("bad.snap"), "pull 1\nfrobnicate\n").unwrap();
    d
}

#[test]
fn check_and_start_refuse_each_bad_config_with_the_same_located_error() {
    let dir = tempdir();
    let good = dir.join("good.toml");
    std::fs::write(&good, GOOD).unwrap();
    let (ok, err) = run(&good, true);
    assert!(ok, "the good config is refused: {err}");
    let mut failures = Vec::new();
    for (i, (what, text, key, line_text, message)) in cases().into_iter().enumerate() {
        assert_ne!(text, GOOD, "{what}: the case changes nothing");
        let path = dir.join(format!("r{i}.toml"));
        std::fs::write(&path, &text).unwrap();
        let line = text[..text.find(line_text).expect(line_text)]
            .matches('\n')
            .count()
            + 1;
        let (checked, check_err) = run(&path, true);
        let (started, start_err) = run(&path, false);
        let want = format!("Error: {}:{line}:", path.display());
        let wrong = if checked {
            format!("--check passes it ({start_err})")
        } else if started {
            format!("a start passes it ({check_err})")
        } else if check_err != start_err {
            format!("--check says {check_err:?}, the start {start_err:?}")
        } else if !check_err.starts_with(&want)
            || !check_err.contains(&format!("key `{key}`"))
            || !check_err.contains(message)
            || check_err.lines().count() != 1
        {
            format!("{check_err:?} is not {want} key `{key}`: …{message}…")
        } else {
            continue;
        };
        failures.push(format!("{what}: {wrong}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn check_prints_the_bounds_of_each_installed_instruction() {
    let dir = tempdir().join("bounds");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("count.snap"), count_snap()).unwrap();
    let path = dir.join("r.toml");
    let text = format!(
        "{GOOD}\n[esp]\nrate = 100\n{}",
        instruction("64", "count.snap")
    );
    std::fs::write(&path, text).unwrap();
    let out = Command::new(BIN)
        .args(["--check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let b = esp_micro::Microcode::assemble(&count_snap())
        .unwrap()
        .bounds();
    let want = format!(
        ": ok (1 links, 1 routes, 0 groups)\n  ESP instruction 64 `count`: at most {} \
         instructions, stack depth {}, {} heap words\n",
        b.instructions, b.stack_depth, b.heap_words
    );
    assert!(
        stdout.ends_with(&want),
        "{stdout:?} does not end with {want:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
