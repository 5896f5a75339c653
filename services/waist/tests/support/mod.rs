//! What the tests that start real daemons share.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;

/// The `waist` binary under test.
pub(crate) const WAIST: &str = env!("CARGO_BIN_EXE_waist");

/// Builds the daemons beside `waist` if this test run did not (e.g. `cargo test -p waist`).
pub(crate) fn ensure_daemons() {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        let dir = Path::new(WAIST).parent().unwrap();
        let bins = [
            "waist-router",
            "trickles-web",
            "trickles-get",
            "trickles-proxy",
            "trickles-load",
        ];
        if bins.iter().all(|b| dir.join(b).is_file()) {
            return;
        }
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "waist-router", "-p", "trickles-web"])
            .env("CARGO_TARGET_DIR", dir.parent().unwrap());
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().unwrap().success(),
            "building the daemons failed"
        );
    });
}

/// Runs `waist ARGS`.
pub(crate) fn waist(args: &[&str]) -> Output {
    Command::new(WAIST).args(args).output().unwrap()
}

/// Stdout then stderr.
pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh scratch directory `waist-NAME-PID` in the temporary directory (what an earlier
/// run of the same test left there removed first).
pub(crate) fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("waist-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
