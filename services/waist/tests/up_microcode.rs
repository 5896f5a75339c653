//! ESP microcode on real routers (issue 36): `examples/topologies/esp-microcode.toml`, three
//! `waist-router` processes in a line started by `waist up`, each with COUNT, COMPARE and
//! COLLECT installed as SNAP programs; `waist esp send --microcode` (inline) and `--opcode`
//! (installed) from h1 are executed at every hop, as each router's metrics show, and a
//! reflected query comes back with the operands the routers left.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod support;

use support::{ensure_daemons, text, waist};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A first port apart from the other tests' (below the ephemeral range and the demo's).
fn base() -> u16 {
    23_000 + (std::process::id() % 100) as u16 * 20
}

fn eventually(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "{what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of the sample `name` with label `key = value` (all if `key` is empty) on a
/// router's metrics page; 0 if absent.
fn sample(metrics: SocketAddr, name: &str, key: &str, value: &str) -> f64 {
    let Ok(page) = waist::host::scrape::fetch(metrics, Duration::from_secs(1)) else {
        return -1.0;
    };
    waist::host::scrape::parse(&page)
        .iter()
        .filter(|s| s.name == name && (key.is_empty() || s.label(key) == Some(value)))
        .map(|s| s.value)
        .sum()
}

/// `waist down` when the test ends, failing or not.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if self.0.join("state.json").exists() {
            let o = waist(&["down", "--dir", self.0.to_str().unwrap()]);
            assert!(
                o.status.success() || std::thread::panicking(),
                "{}",
                text(&o)
            );
        }
    }
}

#[test]
fn microcode_sent_through_a_waist_up_line_runs_at_every_hop() {
    ensure_daemons();
    let d = support::scratch("up-microcode");
    let first = base();
    let metrics = first + 1000;
    // The shipped topology on this test's ports, its programs named from the repository.
    let programs = repo().join("examples/esp-microcode");
    let shipped =
        std::fs::read_to_string(repo().join("examples/topologies/esp-microcode.toml")).unwrap();
    assert!(shipped.contains("first_port = 27400") && shipped.contains("../esp-microcode/"));
    let topology = shipped
        .replace(
            "first_port = 27400",
            &format!("first_port = {first}\nmetrics_base = {metrics}"),
        )
        .replace(
            "../esp-microcode/",
            &format!("{}/", programs.to_str().unwrap()),
        );
    let file = d.join("esp-microcode.toml");
    std::fs::write(&file, topology).unwrap();
    let run = d.join("run");
    let o = waist(&[
        "up",
        file.to_str().unwrap(),
        "--detach",
        "--dir",
        run.to_str().unwrap(),
    ]);
    let _down = Down(run.clone());
    assert!(o.status.success(), "{}", text(&o));
    // h1's link, as the table printed it.
    let table = text(&o);
    let via = table
        .lines()
        .find(|l| l.starts_with("h1 "))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("udp:")))
        .unwrap_or_else(|| panic!("no --via for h1 in:\n{table}"))
        .to_string();
    let routers: Vec<SocketAddr> = (0..3)
        .map(|i| format!("127.0.0.1:{}", metrics + i).parse().unwrap())
        .collect();
    // Each router installed the three programs (logged with their bounds), and knows the
    // far end of the line.
    for (i, r) in routers.iter().enumerate() {
        let log = run.join("logs").join(format!("r{}.log", i + 1));
        eventually(Duration::from_secs(10), "no install log line", || {
            std::fs::read_to_string(&log)
                .is_ok_and(|t| t.contains("installed ESP instruction 66 `collect`: at most"))
        });
        eventually(Duration::from_secs(15), "routes did not converge", || {
            let page = waist::host::scrape::fetch(*r, Duration::from_secs(1)).unwrap_or_default();
            let routes = waist::host::scrape::parse(&page);
            let others = (1..=3)
                .filter(|j| *j != i + 1)
                .map(|j| format!("10.0.0.{j}/32"));
            let mut wanted = others.chain(["10.1.0.10/32".into(), "10.2.0.10/32".into()]);
            wanted.all(|p| {
                routes
                    .iter()
                    .any(|s| s.name == "waist_route" && s.label("prefix") == Some(p.as_str()))
            })
        });
    }
    let send = |extra: &[&str]| {
        let mut args = vec![
            "esp",
            "send",
            "--via",
            &via,
            "--src",
            "10.1.0.10",
            "--loc",
            "central",
        ];
        args.extend_from_slice(extra);
        waist(&args)
    };
    let count = programs.join("count.snap");
    // Inline COUNT to h2, not reflected: run in r1, r2 and r3 on the way.
    let o = send(&[
        "--dst",
        "10.2.0.10",
        "--no-reflect",
        "--microcode",
        count.to_str().unwrap(),
        "--operand",
        "7",
        "--operand",
        "10",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // Installed COUNT (opcode 64), the same way.
    let o = send(&[
        "--dst",
        "10.2.0.10",
        "--no-reflect",
        "--opcode",
        "64",
        "--operand",
        "8",
        "--operand",
        "10",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    for (i, r) in routers.iter().enumerate() {
        eventually(
            Duration::from_secs(5),
            &format!("r{} did not run both", i + 1),
            || {
                sample(*r, "waist_esp_microcode_runs_total", "kind", "inline") == 1.0
                    && sample(*r, "waist_esp_microcode_runs_total", "kind", "installed") == 1.0
                    && sample(*r, "waist_esp_installed_runs_total", "name", "count") == 1.0
            },
        );
        assert_eq!(sample(*r, "waist_esp_microcode_failed_total", "", ""), 0.0);
        assert!(sample(*r, "waist_esp_microcode_instructions_total", "", "") >= 20.0);
    }
    // COMPARE (opcode 65) reflected by r3: run in r2 and r1 on the way back, and answered
    // with its operands; the same value again fails `<` and is dropped (no answer).
    let compare = |current: &str| {
        send(&[
            "--dst",
            "10.0.0.3",
            "--timeout-ms",
            "1500",
            "--json",
            "--opcode",
            "65",
            "--operand",
            "0x77",
            "--operand",
            current,
            "--operand",
            "0",
        ])
    };
    let o = compare("5");
    assert!(o.status.success(), "{}", text(&o));
    let answer: serde_json::Value = serde_json::from_str(text(&o).trim()).unwrap();
    assert_eq!(answer["verdict"], "delivered", "{answer}");
    assert_eq!(answer["from"], "10.0.0.3", "{answer}");
    assert_eq!(
        answer["operands"],
        serde_json::json!([0x77, 5, 0]),
        "{answer}"
    );
    let o = compare("5");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // COLLECT without its child count aborts: Err, MissingState, exit 1.
    let o = send(&[
        "--dst",
        "10.0.0.3",
        "--opcode",
        "66",
        "--operand",
        "1",
        "--operand",
        "3",
        "--operand",
        "2",
        "--operand",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("missing-state"), "{}", text(&o));
    assert!(
        sample(routers[1], "waist_esp_microcode_aborted_total", "", "") >= 1.0,
        "r2 counted no abort"
    );
    drop(_down);
    std::fs::remove_dir_all(&d).unwrap();
}
