//! `trickles-web --check` refuses what the start refuses, with the same one-line error: each
//! known bad configuration is given to `--check` and to a real start of the binary, which
//! must fail the same way before it binds anything (issue 33).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_trickles-web");

const KEY: &str = "# trickles-web master secret\n000102030405060708090a0b0c0d0e0f\n";

/// Runs the binary with `args` (plus `--check` if `check`) until it exits; a start that does
/// not fail is stopped after a while and reported. Its status and its stderr.
fn run(args: &[String], check: bool) -> (bool, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    if check {
        cmd.arg("--check");
    }
    netio::process::run_to_exit(cmd, Duration::from_secs(30)).unwrap()
}

struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        let d = std::env::temp_dir().join(format!("trickles-web-check-{}", std::process::id()));
        std::fs::create_dir_all(d.join("site")).unwrap();
        std::fs::write(d.join("site/index.html"), "hi").unwrap();
        Dir(d)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn line_of(path: &str, text: &str) -> usize {
    let file = std::fs::read_to_string(path).unwrap();
    file[..file.find(text).expect(text)].matches('\n').count() + 1
}

#[test]
fn check_and_start_refuse_each_bad_configuration_with_the_same_error() {
    let dir = Dir::new();
    let root = dir.0.join("site").display().to_string();
    let keys = dir.write("keys", KEY);
    let base = |keys: &str| -> Vec<String> {
        [
            "--root",
            &root,
            "--keys",
            keys,
            "--listen",
            "udp:127.0.0.1:0",
        ]
        .map(String::from)
        .to_vec()
    };
    let (ok, err) = run(&base(&keys), true);
    assert!(ok, "a good configuration is refused: {err}");

    let bad_keys = dir.write("bad-keys", "# a comment\n0001020304zz\n");
    let config = |name: &str, text: &str| -> Vec<String> {
        let p = dir.write(
            name,
            &format!("root = \"{root}\"\nkeys = \"{keys}\"\n{text}"),
        );
        vec![
            "--config".into(),
            p,
            "--listen".into(),
            "udp:127.0.0.1:0".into(),
        ]
    };
    let with = |more: &[&str]| -> Vec<String> {
        let mut a = base(&keys);
        a.extend(more.iter().map(|s| s.to_string()));
        a
    };
    let mtu_file = config("mtu.toml", "mtu = 100\n");
    let misspelt = config("misspelt.toml", "rotate = 60\n");
    let pcap_file = dir.write("not-a-dir", "");
    // (what, arguments, what the one error line must say)
    let cases: Vec<(&str, Vec<String>, Vec<String>)> = vec![
        (
            "a malformed key file",
            base(&bad_keys),
            vec![format!(
                "key file {bad_keys}:2: the key line must be 32 hex digits"
            )],
        ),
        (
            "--mtu 100",
            with(&["--mtu", "100"]),
            vec!["--mtu: MTU 100 leaves no room for data".into()],
        ),
        (
            "--mtu 60",
            with(&["--mtu", "60"]),
            vec!["--mtu: MTU 60 not in 68..=65535".into()],
        ),
        (
            "mtu = 100 in the file",
            mtu_file.clone(),
            vec![
                format!(
                    "{}:{}:7: key `mtu`:",
                    mtu_file[1],
                    line_of(&mtu_file[1], "mtu")
                ),
                "MTU 100 leaves no room for data".into(),
            ],
        ),
        (
            "a misspelt key in the file",
            misspelt.clone(),
            vec![
                format!(
                    "{}:{}:1: key `rotate`:",
                    misspelt[1],
                    line_of(&misspelt[1], "rotate")
                ),
                "did you mean `rotate_s`?".into(),
            ],
        ),
        (
            "a capture directory that is a file",
            with(&["--pcap", &pcap_file]),
            vec![format!("pcap {pcap_file}: not a directory")],
        ),
    ];
    let mut failures = Vec::new();
    for (what, args, says) in cases {
        let (checked, check_err) = run(&args, true);
        let (started, start_err) = run(&args, false);
        let wrong = if checked {
            format!("--check passes it ({start_err})")
        } else if started {
            format!("a start passes it ({check_err})")
        } else if check_err != start_err {
            format!("--check says {check_err:?}, the start {start_err:?}")
        } else if check_err.lines().count() != 1
            || !check_err.starts_with("Error: ")
            || !says.iter().all(|s| check_err.contains(s.as_str()))
        {
            format!("{check_err:?} does not say {says:?}")
        } else {
            continue;
        };
        failures.push(format!("{what}: {wrong}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // --check wrote nothing: a missing key file is not created.
    let missing = dir.0.join("new-keys").display().to_string();
    let (ok, err) = run(&base(&missing), true);
    assert!(ok, "{err}");
    assert!(
        !Path::new(&missing).exists(),
        "--check created the key file"
    );
}
