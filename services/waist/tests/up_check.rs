//! `waist up --check` refuses what `waist up` refuses, with the same one-line error naming
//! the topology file (never a generated router config), its line and the key the author
//! wrote; and `waist up` refuses it before any process starts (issue 33).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

mod support;

use support::{ensure_daemons, waist};

const TWO_ROUTERS: &str = "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n{R1}\n\
                           [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\n\
                           [[link]]\nbetween = [\"r1\", \"r2\"]\n";

fn scratch() -> PathBuf {
    support::scratch("up-check")
}

#[test]
fn check_and_up_refuse_each_bad_topology_with_the_same_located_error() {
    ensure_daemons();
    let d = scratch();
    // (what, extra for r1, extra for the link, key, text on the error's line, message)
    let cases = [
        (
            "loss above 1",
            "",
            "emulation = { delay_ms = 5, loss = 2.0 }\n",
            "loss",
            "emulation = ",
            "emulation: must be a probability between 0 and 1",
        ),
        (
            "a negative delay",
            "",
            "[link.emulation]\ndelay_ms = -5\n",
            "delay_ms",
            "delay_ms = -5",
            "emulation: must be a finite number of milliseconds",
        ),
        (
            "an MTU too small",
            "",
            "mtu = 40\n",
            "mtu",
            "mtu = 40",
            "MTU must be 68..=65535",
        ),
        (
            "a misspelt key",
            "",
            "betwen = 3\n",
            "betwen",
            "betwen = ",
            "did you mean `between`?",
        ),
        (
            "a misspelt emulation key",
            "",
            "emulation = { los = 0.5 }\n",
            "los",
            "emulation = ",
            "did you mean `loss`?",
        ),
        (
            "a misspelt key of a router's section",
            "esp = { rat = 1000 }\n",
            "",
            "rat",
            "esp = ",
            "did you mean `rate`?",
        ),
    ];
    let mut failures = Vec::new();
    for (i, (what, r1, link, key, line_text, message)) in cases.into_iter().enumerate() {
        let text = TWO_ROUTERS.replace("{R1}", r1) + link;
        let file = d.join(format!("t{i}.toml"));
        std::fs::write(&file, &text).unwrap();
        let line = text[..text.find(line_text).unwrap()].matches('\n').count() + 1;
        let f = file.to_str().unwrap();
        let run = d.join(format!("run{i}"));
        let checked = waist(&["up", "--check", f]);
        let started = waist(&["up", f, "--dir", run.to_str().unwrap()]);
        let (check_err, start_err) = (
            String::from_utf8_lossy(&checked.stderr).into_owned(),
            String::from_utf8_lossy(&started.stderr).into_owned(),
        );
        let want = format!("Error: {f}:{line}:");
        let wrong = if checked.status.success() {
            format!("--check passes it ({start_err})")
        } else if started.status.success() {
            format!("up passes it ({check_err})")
        } else if run.join("logs").exists() {
            "something started before the error".to_string()
        } else if check_err != start_err {
            format!("--check says {check_err:?}, up {start_err:?}")
        } else if check_err.lines().count() != 1
            || !check_err.starts_with(&want)
            || !check_err.contains(&format!("key `{key}`"))
            || !check_err.contains(message)
            || check_err.contains("generated")
        {
            format!("{check_err:?} is not {want} key `{key}`: …{message}…")
        } else {
            continue;
        };
        failures.push(format!("{what}: {wrong}"));
    }
    std::fs::remove_dir_all(&d).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
