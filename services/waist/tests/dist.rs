//! The systemd units in `dist/` are valid and hardened: `systemd-analyze verify` accepts
//! each without a warning (the binary path pointed at the one this build made), and each
//! keeps the hardening the README promises.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::process::Command;

mod support;

use support::{WAIST, ensure_daemons};

const UNITS: [(&str, &str); 2] = [
    ("waist-router@.service", "waist-router"),
    ("trickles-web@.service", "trickles-web"),
];

fn dist() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../dist"))
}

#[test]
fn the_units_are_hardened() {
    for (unit, binary) in UNITS {
        let text = std::fs::read_to_string(dist().join(unit)).unwrap();
        for line in [
            "NoNewPrivileges=yes",
            "CapabilityBoundingSet=CAP_NET_ADMIN",
            "AmbientCapabilities=CAP_NET_ADMIN",
            "DynamicUser=yes",
            "ProtectSystem=strict",
            "ProtectHome=yes",
            "PrivateTmp=yes",
            "DeviceAllow=/dev/net/tun rw",
            "ExecReload=/bin/kill -HUP $MAINPID",
        ] {
            assert!(text.lines().any(|l| l == line), "{unit}: no `{line}`");
        }
        let check =
            format!("ExecStartPre=/usr/local/bin/{binary} --config /etc/waist/%i.toml --check");
        assert!(text.lines().any(|l| l == check), "{unit}: no `{check}`");
    }
}

#[test]
fn systemd_analyze_verifies_the_units_without_a_warning() {
    let analyze = Command::new("systemd-analyze").arg("--version").output();
    if !analyze.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "systemd-analyze is missing (.ci/run installs systemd)"
        );
        eprintln!("skipping: systemd-analyze is not installed");
        return;
    }
    ensure_daemons();
    let bins = Path::new(WAIST).parent().unwrap();
    let dir = std::env::temp_dir().join(format!("waist-units-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (unit, binary) in UNITS {
        // The unit as shipped, its binary where this build put it, as instance `test`.
        let text = std::fs::read_to_string(dist().join(unit)).unwrap().replace(
            &format!("/usr/local/bin/{binary}"),
            bins.join(binary).to_str().unwrap(),
        );
        let instance = dir.join(unit.replace("@.", "@test."));
        std::fs::write(&instance, text).unwrap();
        let out = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&instance)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.trim().is_empty(),
            "{unit}:\n{said}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
