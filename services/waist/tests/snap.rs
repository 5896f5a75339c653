//! `waist snap`: the example programs through asm → verify → run → disasm, and rejections.
//!
//! The examples under `examples/snap/` are the source text of the paper's programs; `SNAP_BLESS=1 cargo
//! test -p waist --test snap` rewrites them from `snap_vm::paper::examples()`.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use clap::Parser;
use snap_vm::asm::assemble;
use snap_vm::paper;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/snap")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waist-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn waist(args: &[&str]) -> anyhow::Result<String> {
    let mut argv = vec!["waist", "snap"];
    argv.extend_from_slice(args);
    let cli = waist::Cli::try_parse_from(argv)?;
    let mut out = Vec::new();
    waist::run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn ok(args: &[&str]) -> String {
    waist(args).unwrap_or_else(|e| panic!("waist snap {args:?}: {e:#}"))
}

fn fail(args: &[&str]) -> String {
    match waist(args) {
        Ok(out) => panic!("waist snap {args:?} succeeded: {out}"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn the_examples_are_the_paper_programs_source() {
    let dir = examples_dir();
    if std::env::var_os("SNAP_BLESS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in paper::examples() {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    for (name, text) in paper::examples() {
        let on_disk = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e} (SNAP_BLESS=1 writes it)"));
        assert_eq!(on_disk, text, "{name} is stale: SNAP_BLESS=1 rewrites it");
    }
}

#[test]
fn every_example_assembles_verifies_runs_and_disassembles_back() {
    for (name, text) in paper::examples() {
        let src = examples_dir().join(name);
        let src = src.to_str().unwrap();
        let pkt = tmp(&name.replace(".snap", ".pkt"));
        let pkt = pkt.to_str().unwrap();
        let program = assemble(&text).unwrap();

        let said = ok(&["asm", src, "-o", pkt]);
        assert!(
            said.contains(&format!("{} bytes", program.packet_len())),
            "{said}"
        );
        assert_eq!(std::fs::read(pkt).unwrap(), program.to_bytes().unwrap());

        // Text and binary verify alike.
        for file in [src, pkt] {
            let v = ok(&["verify", file]);
            assert!(v.contains("accepted on a node with 2 interfaces"), "{v}");
            assert!(
                v.contains("instructions ≤") && v.contains("bandwidth    ≤"),
                "{v}"
            );
        }

        let r = ok(&["run", pkt]);
        assert!(r.starts_with("node "), "{r}");
        assert!(r.contains("\nend: ") && r.contains("\nstats: "), "{r}");

        let d = ok(&["disasm", pkt]);
        assert_eq!(assemble(&d).unwrap(), program, "{d}");
        let again = tmp(&name.replace(".snap", ".dis.snap"));
        std::fs::write(&again, &d).unwrap();
        assert_eq!(ok(&["disasm", again.to_str().unwrap()]), d);
    }
}

#[test]
fn an_ipv6_ping_assembles_runs_and_disassembles_back() {
    // Fig. 1's ping between IPv6 hosts, as text with IPv6 literals.
    let text = paper::ping_source([0; 4], [0; 4], 7, b"hi", 8)
        .replace(".src 0.0.0.0", ".src fd00::1")
        .replace(".dst 0.0.0.0", ".dst fd00::2");
    let src = tmp("ping6.snap");
    std::fs::write(&src, &text).unwrap();
    let src = src.to_str().unwrap();
    let pkt = tmp("ping6.pkt");
    let pkt = pkt.to_str().unwrap();
    let said = ok(&["asm", src, "-o", pkt]);
    let bytes = std::fs::read(pkt).unwrap();
    assert!(said.contains(&format!("{} bytes", bytes.len())), "{said}");
    assert_eq!(bytes[0], 0x10 | snap_vm::wire::FLAG_IPV6, "{said}");
    let v = ok(&["verify", pkt]);
    assert!(v.contains("heap         ≤ 5 words"), "{v}");
    // At its destination it turns round toward fd00::1; at the source it delivers.
    let r = ok(&["run", pkt]);
    assert!(r.starts_with("node fd00::2 (2 interfaces)"), "{r}");
    assert!(r.contains("fd00::1 → fd00::2 port 7 rb 8"), "{r}");
    assert!(r.contains("transmit 1: to fd00::1, "), "{r}");
    let r = ok(&["run", pkt, "--at", "fd00::3"]);
    assert!(r.contains("transmit 1: to fd00::2, "), "{r}");
    let d = ok(&["disasm", pkt]);
    assert!(d.contains(".src fd00::1\n.dst fd00::2\n"), "{d}");
    assert_eq!(assemble(&d).unwrap(), assemble(&text).unwrap());
}

#[test]
fn run_shows_the_end_transmits_and_delivery() {
    let ping = examples_dir().join("ping.snap");
    let ping = ping.to_str().unwrap();
    // At its destination (the default node) ping turns round toward the source.
    let r = ok(&["run", ping]);
    assert!(r.starts_with("node 10.0.0.4 (2 interfaces)"), "{r}");
    assert!(r.contains("end: forwarded"), "{r}");
    assert!(
        r.contains("transmit 1: to 10.0.0.1, ") && r.contains("rb 7 entry 0 (forw)"),
        "{r}"
    );
    assert!(r.contains("stack [@h0 7 1]"), "{r}");
    // At the source it goes out toward the destination; at a router likewise.
    let r = ok(&["run", ping, "--at", "10.0.0.1"]);
    assert!(r.contains("transmit 1: to 10.0.0.4, "), "{r}");
    // Back home (a ping to itself), it delivers.
    let home = tmp("home.snap");
    std::fs::write(
        &home,
        paper::ping_source([10, 0, 0, 1], [10, 0, 0, 1], 7, b"hello", 1),
    )
    .unwrap();
    let r = ok(&["run", home.to_str().unwrap()]);
    assert!(r.contains("end: delivered"), "{r}");
    assert!(
        r.contains("delivery: port 7 from 10.0.0.1: \"hello\""),
        "{r}"
    );
    // Multicast at its source sends one child per destination, splitting rb 9 − 1.
    let m = examples_dir().join("multicast.snap");
    let r = ok(&["run", m.to_str().unwrap()]);
    assert!(
        r.contains("transmit 1: to 10.0.0.2") && r.contains("transmit 2: to 10.0.0.3"),
        "{r}"
    );
    assert_eq!(r.matches(" rb 4 entry ").count(), 2, "{r}");
    // One interface: the second send faults.
    let r = ok(&["run", m.to_str().unwrap(), "--ifaces", "1"]);
    assert!(
        r.contains("end: fault: more sends than the node has interfaces"),
        "{r}"
    );
    // Traceroute at its destination sends the last report home.
    let t = examples_dir().join("traceroute.snap");
    let r = ok(&["run", t.to_str().unwrap(), "--now", "5", "--iface", "1"]);
    assert!(
        r.contains("end: exit") && r.contains("transmit 1: to 10.0.0.1"),
        "{r}"
    );
}

#[test]
fn verify_rejects_a_backward_branch_naming_instruction_and_rule() {
    let bad = tmp("backward.snap");
    std::fs::write(
        &bad,
        ".rb 1\ntop:  nop\n      ji -1      ; back to top: not allowed\n",
    )
    .unwrap();
    let e = fail(&["verify", bad.to_str().unwrap()]);
    assert!(e.contains("rejected: instruction 1 (`ji`)"), "{e}");
    assert!(e.contains("branch offset -1 must be positive"), "{e}");
    // Its packet still runs (the VM checks as it goes) and faults at the branch.
    let r = ok(&["run", bad.to_str().unwrap()]);
    assert!(
        r.contains("end: fault: instruction 1: branch offset -1"),
        "{r}"
    );
    // Written with a label, it does not even assemble.
    std::fs::write(&bad, "top:  nop\n      ji top\n").unwrap();
    let e = fail(&[
        "asm",
        bad.to_str().unwrap(),
        "-o",
        tmp("x.pkt").to_str().unwrap(),
    ]);
    assert!(
        e.contains("line 2: branch to label \"top\" does not go forward"),
        "{e}"
    );
}

#[test]
fn bad_files_are_errors_not_panics() {
    let f = tmp("frob.snap");
    std::fs::write(&f, "nop\nfrob 3\n").unwrap();
    let e = fail(&["disasm", f.to_str().unwrap()]);
    assert!(
        e.ends_with("frob.snap: line 2: unknown mnemonic \"frob\""),
        "{e}"
    );
    std::fs::write(&f, [0x10, 0xff, 0xfe]).unwrap();
    let e = fail(&["verify", f.to_str().unwrap()]);
    assert!(
        e.contains("neither a SNAP packet nor UTF-8 assembly"),
        "{e}"
    );
    let e = fail(&["run", tmp("missing.snap").to_str().unwrap()]);
    assert!(e.contains("reading "), "{e}");
    // A binary packet is read as one; cut short, it is neither a packet nor text.
    let bytes = paper::ping([1; 4], [2; 4], 1, b"\xff", 3)
        .to_bytes()
        .unwrap();
    std::fs::write(&f, &bytes).unwrap();
    assert!(ok(&["verify", f.to_str().unwrap()]).contains("accepted"));
    std::fs::write(&f, &bytes[..bytes.len() - 1]).unwrap();
    assert!(fail(&["verify", f.to_str().unwrap()]).contains("neither"));
    std::fs::write(&f, &bytes).unwrap();
    assert!(ok(&["verify", f.to_str().unwrap()]).contains("accepted"));
}
