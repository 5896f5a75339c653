//! Writing captures and running `tshark` on them with our Lua dissectors.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use netio::pcap::PcapWriter;

/// The dissector scripts, in load order (the shim last: it takes raw IP over).
pub(crate) const SCRIPTS: [&str; 5] = [
    "waist_esp.lua",
    "waist_snap.lua",
    "waist_trickles.lua",
    "waist_stream.lua",
    "waist_shim.lua",
];

/// `tools/wireshark/` of the repository.
pub(crate) fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark")
}

/// Whether tshark can run here; `false` (after saying why) means the caller returns early.
/// Under CI a missing tshark is a failure, not a skip.
pub(crate) fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark is missing under CI (.ci/run installs it)"
        );
        eprintln!("skipped: tshark not found (apt-get install tshark)");
    }
    ok
}

/// Writes `frames` (each one LINKTYPE_RAW record, exactly as a daemon's capture holds them)
/// to a fresh pcap named `name` under the target's temporary directory.
pub(crate) fn write_pcap(name: &str, frames: &[Vec<u8>]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waist-dissectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.pcap"));
    let mut w = PcapWriter::create(&path).unwrap();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (i, f) in frames.iter().enumerate() {
        w.write(t0 + Duration::from_millis(i as u64), f).unwrap();
    }
    w.flush().unwrap();
    path
}

/// `tshark -r PCAP` with every script loaded, plus `args`; its standard output. Panics with
/// tshark's standard error if it fails or reports a Lua error.
pub(crate) fn tshark(pcap: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(pcap);
    for s in SCRIPTS {
        let p = scripts_dir().join(s);
        cmd.arg("-X").arg(format!("lua_script:{}", p.display()));
    }
    cmd.args(args);
    let out = cmd.output().expect("run tshark");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "tshark failed: {stderr}");
    assert!(
        !stderr.contains("Lua") && !stdout.contains("Lua Error"),
        "Lua error: {stderr}{stdout}"
    );
    stdout
}

/// One line per frame, the values of `fields` in order (`-T fields`, `|` between fields,
/// `,` between occurrences of one field).
pub(crate) fn fields(pcap: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec![
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ];
    for f in fields {
        args.push("-e");
        args.push(f);
    }
    tshark(pcap, &args)
        .lines()
        .map(|l| l.split('|').map(str::to_owned).collect())
        .collect()
}

/// The full protocol tree of every frame (`-V`). Asserts no frame is malformed.
pub(crate) fn verbose(pcap: &Path) -> String {
    let v = tshark(pcap, &["-V"]);
    assert!(!v.contains("Malformed Packet"), "{v}");
    v
}
