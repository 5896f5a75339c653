//! Long reproductions show a progress bar on a terminal and nothing extra when piped.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;

fn out_dir() -> String {
    let d = std::env::temp_dir().join(format!("waist-progress-{}", std::process::id()));
    d.to_string_lossy().into_owned()
}

#[test]
fn piped_output_has_no_bar() {
    let dir = out_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_waist"))
        .args(["repro", "esp-aggregation", "--runs", "2", "--out", &dir])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("robust"), "{stdout}");
    assert!(!stderr.contains("aggregation runs"), "{stderr}");
    assert!(!stdout.contains('\r') && !stderr.contains('\r'));
}

#[test]
fn a_terminal_gets_a_bar_on_standard_error() {
    // `script` (util-linux) runs the command on a pseudo-terminal and records what it drew.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) not found");
        return;
    }
    let dir = out_dir();
    let log = std::path::Path::new(&dir).join("typescript");
    std::fs::create_dir_all(&dir).unwrap();
    let cmd = format!(
        "{} repro esp-aggregation --runs 6 --out {dir}",
        env!("CARGO_BIN_EXE_waist")
    );
    let status = Command::new("script")
        .args(["-qec", &cmd])
        .arg(&log)
        .env("COLUMNS", "100")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let drawn = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
    assert!(drawn.contains("aggregation runs"), "{drawn}");
    assert!(drawn.contains("/6"), "{drawn}");
    // The report itself is still there, after the bar is cleared.
    assert!(drawn.contains("robust"), "{drawn}");
}
