//! Source hashing paper Table 4: instructions to compute a table index from a packet —
//! source hash, XOR folding, CRC, and (ours) a keyed SipHash — counted with callgrind.
//!
//! The paper counted instructions by single-stepping gcc 2.6.3 code with `adb` on a
//! SPARC: source hash 2, XOR hash 15, CRC hash (CRC-8 on both halves of the flow id) 100.
//! We count x86-64 instructions retired (callgrind's `Ir`) in one `#[inline(never)]`
//! function per case of `crates/fastpath/examples/sh_lookup.rs`, selected with
//! `--toggle-collect`, over N and 2N packets; (Ir(2N) − Ir(N)) / N is the per-packet
//! count with every fixed cost cancelled. The call and return are included (≈ 2–4
//! instructions the paper's inline code did not pay).
//!
//! The shared machinery (build the example, run callgrind, parse the total) lives here
//! and [`crate::fastpath_table5`] uses it too. Without valgrind the repro says so and
//! reports nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::common::Options;

/// Packets per callgrind run unless `--runs` says otherwise.
pub const DEFAULT_PACKETS: u64 = 10_000;

/// The workspace root (this crate is `crates/repro`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `valgrind` runs here.
pub fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds the `sh_lookup` example in release mode and returns its path.
///
/// # Errors
///
/// If cargo fails.
pub fn build_example() -> anyhow::Result<PathBuf> {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "-q",
            "-p",
            "fastpath",
            "--example",
            "sh_lookup",
        ])
        .arg("--message-format=json")
        .output()
        .context("running cargo build for the sh_lookup example")?;
    if !built.status.success() {
        bail!(
            "cargo build of fastpath's sh_lookup example failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
    }
    // The artifact message names the executable wherever the target directory is.
    let stdout = String::from_utf8_lossy(&built.stdout);
    let from_json = stdout
        .lines()
        .filter(|l| l.contains("\"compiler-artifact\"") && l.contains("\"name\":\"sh_lookup\""))
        .find_map(|l| {
            let rest = l.split("\"executable\":\"").nth(1)?;
            Some(PathBuf::from(rest.split('"').next()?))
        });
    Ok(from_json.unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| root.join("target"), PathBuf::from)
            .join("release/examples/sh_lookup")
    }))
}

/// Instructions collected by callgrind in `case_<case>` over `n` packets.
fn collected(binary: &Path, case: &str, n: u64) -> anyhow::Result<u64> {
    let out = std::env::temp_dir().join(format!(
        "waist-callgrind-{}-{case}-{n}.out",
        std::process::id()
    ));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(format!("--toggle-collect=*case_{case}*"))
        .arg(binary)
        .arg(case)
        .arg(n.to_string())
        .output()
        .context("running valgrind")?;
    if !status.status.success() {
        bail!(
            "callgrind run of {case} failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
    let text = std::fs::read_to_string(&out).context("reading callgrind output")?;
    let _ = std::fs::remove_file(&out);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no instruction total in callgrind output for {case}"))
}

/// Per-packet instructions of `case`: (Ir(2n) − Ir(n)) / n.
///
/// # Errors
///
/// If valgrind fails or its output has no total.
pub fn instructions(binary: &Path, case: &str, n: u64) -> anyhow::Result<f64> {
    let one = collected(binary, case, n)?;
    let two = collected(binary, case, 2 * n)?;
    Ok(two.saturating_sub(one) as f64 / n as f64)
}

/// One row: our count beside the paper's.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What is counted.
    pub scheme: &'static str,
    /// The example's case name.
    pub case: &'static str,
    /// Our instructions per packet.
    pub ours: f64,
    /// The paper's count, where it gave one.
    pub paper: Option<u32>,
}

/// The cases of Table 4: (scheme, case, paper's count).
pub const CASES: [(&str, &str, Option<u32>); 5] = [
    ("source hash", "index_source_hash", Some(2)),
    ("XOR folding (16 bits)", "index_xor_fold", Some(15)),
    ("CRC-32 (table)", "index_crc", None),
    ("CRC-8 of both halves", "index_crc8", Some(100)),
    ("SipHash-1-3 (keyed)", "index_siphash", None),
];

/// Counts `cases` and prints them beside the paper's numbers; `None` without valgrind.
///
/// # Errors
///
/// If the example does not build, valgrind fails, or output cannot be written.
pub fn measure(
    title: &str,
    cases: &[(&'static str, &'static str, Option<u32>)],
    opts: &Options,
    csv_name: &str,
    out: &mut dyn Write,
) -> anyhow::Result<Option<Vec<Row>>> {
    writeln!(out, "{title}")?;
    if !valgrind_available() {
        writeln!(
            out,
            "valgrind is not installed: instruction counts need `valgrind --tool=callgrind` \
             (apt-get install -y valgrind). Nothing measured."
        )?;
        return Ok(None);
    }
    let n = opts.runs.unwrap_or(DEFAULT_PACKETS).max(100);
    let binary = build_example()?;
    writeln!(
        out,
        "ours: x86-64 instructions per packet (callgrind Ir, (Ir(2N) − Ir(N)) / N, N = {n}); \
         paper: SPARC instructions counted with adb\n"
    )?;
    writeln!(out, "{:<34} {:>8} {:>8}", "scheme", "ours", "paper")?;
    let mut rows = Vec::new();
    let mut csv = String::from("scheme,case,ours_instructions,paper_instructions\n");
    opts.progress.phase("callgrind runs", cases.len() as u64);
    for &(scheme, case, paper) in cases {
        let ours = instructions(&binary, case, n)?;
        opts.progress.advance(1);
        let p = paper.map_or_else(|| "—".to_string(), |p| p.to_string());
        writeln!(out, "{scheme:<34} {ours:>8.1} {p:>8}")?;
        csv += &format!(
            "{scheme},{case},{ours:.2},{}\n",
            paper.map_or_else(String::new, |p| p.to_string())
        );
        rows.push(Row {
            scheme,
            case,
            ours,
            paper,
        });
    }
    opts.progress.finish();
    std::fs::create_dir_all(&opts.dir)?;
    let path = opts.dir.join(csv_name);
    std::fs::write(&path, csv)?;
    writeln!(out, "\nwrote {}", path.display())?;
    Ok(Some(rows))
}

/// Our count for `case` (NaN if it was not measured).
pub fn ours(rows: &[Row], case: &str) -> f64 {
    rows.iter()
        .find(|r| r.case == case)
        .map_or(f64::NAN, |r| r.ours)
}

/// Runs Table 4.
///
/// # Errors
///
/// As [`measure`].
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Option<Vec<Row>>> {
    let rows = measure(
        "fastpath-table4: instructions to compute a table index from a 12-byte flow id \
         (source hashing paper, Table 4)",
        &CASES,
        opts,
        "fastpath-table4.csv",
        out,
    )?;
    if let Some(rows) = &rows {
        let get = |c: &str| ours(rows, c);
        writeln!(
            out,
            "source hash / XOR: {:.2} (paper {:.2}); source hash / CRC-8 halves: {:.3} \
             (paper {:.3}); source hash / SipHash: {:.3}",
            get("index_source_hash") / get("index_xor_fold"),
            2.0 / 15.0,
            get("index_source_hash") / get("index_crc8"),
            2.0 / 100.0,
            get("index_source_hash") / get("index_siphash"),
        )?;
    }
    Ok(rows)
}
