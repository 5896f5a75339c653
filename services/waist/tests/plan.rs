//! `waist plan compile`: the paper's Fig. 2 ping from `examples/plan/ping.plan` to SNAP
//! assembly that `waist snap verify` accepts, errors that name line and column, and every
//! example in `examples/plan/` compiled, verified and (multicast, traceroute, flowroute) run.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use clap::Parser;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("waist-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn waist(args: &[&str]) -> anyhow::Result<String> {
    let cli = waist::Cli::try_parse_from(args)?;
    let mut out = Vec::new();
    waist::run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

#[test]
fn fig2_ping_compiles_to_assembly_the_snap_tools_accept() {
    let ping = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan/ping.plan");
    let snap = tmp("ping.snap");
    let report = waist(&[
        "waist",
        "plan",
        "compile",
        ping.to_str().unwrap(),
        "-o",
        snap.to_str().unwrap(),
    ])
    .unwrap();
    assert!(report.contains("entry `p`"), "{report}");
    let text = std::fs::read_to_string(&snap).unwrap();
    assert!(
        text.contains("forw") && text.contains("send") && text.contains("demux"),
        "{text}"
    );
    // The same code as the library compiles, and the verifier takes it.
    let program = snap_vm::asm::assemble(&text).unwrap();
    let fig2 = snap_vm::paper::plan_ping([10, 0, 0, 1], [10, 0, 0, 2], 7, b"x", 8);
    assert!(
        program.code.len() <= 2 * fig2.code.len(),
        "{} vs the paper's {}",
        program.code.len(),
        fig2.code.len()
    );
    let verified = waist(&["waist", "snap", "verify", snap.to_str().unwrap()]).unwrap();
    assert!(verified.contains("accepted"), "{verified}");
}

#[test]
fn errors_name_the_file_line_and_column() {
    let bad = tmp("bad.plan");
    std::fs::write(&bad, "fun f(x:int) =\n  x + true\n").unwrap();
    let err = waist(&["waist", "plan", "compile", bad.to_str().unwrap()]).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("bad.plan:2:"), "{msg}");
    std::fs::write(&bad, "fun f(x:int) = g(x)\nfun g(y:int) = f(y)\n").unwrap();
    let msg = format!(
        "{:#}",
        waist(&["waist", "plan", "compile", bad.to_str().unwrap()]).unwrap_err()
    );
    assert!(msg.contains("recursion"), "{msg}");
    std::fs::write(&bad, "fun f(x:int) = ess.nope(x)\n").unwrap();
    let msg = format!(
        "{:#}",
        waist(&["waist", "plan", "compile", bad.to_str().unwrap()]).unwrap_err()
    );
    assert!(
        msg.contains("1:16") && msg.contains("known service"),
        "{msg}"
    );
}

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "plan"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_compiles_and_verifies() {
    let files = examples();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in ["flowroute", "multicast", "ping", "retrans", "traceroute"] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let snap = tmp(&format!("{name}.snap"));
        let report = waist(&[
            "waist",
            "plan",
            "compile",
            file.to_str().unwrap(),
            "-o",
            snap.to_str().unwrap(),
        ])
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(report.contains("verified"), "{name}: {report}");
        let verified = waist(&["waist", "snap", "verify", snap.to_str().unwrap()]).unwrap();
        assert!(verified.contains("accepted"), "{name}: {verified}");
    }
}

mod on_the_vm {
    use snap_vm::plan::{Compiled, Options, compile};
    use snap_vm::program::Program;
    use snap_vm::value::Value;
    use snap_vm::vm::{Delivered, NodeConfig, Outcome, Vm};

    const S: [u8; 4] = [10, 0, 0, 1];

    fn example(name: &str, entry: &str) -> Compiled {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/plan")
            .join(name);
        let src = std::fs::read_to_string(path).unwrap();
        let opts = Options {
            fold_bound: 4,
            services: snap_vm::plan::ServiceSig::ess(),
            entry: entry.into(),
        };
        compile(&src, &opts).unwrap()
    }

    /// Runs `packet` at a node of four interfaces (a run sends at most one packet per
    /// interface).
    fn run(at: [u8; 4], packet: Vec<u8>) -> Outcome {
        let mut vm = Vm::new(NodeConfig {
            address: at,
            ifaces: 4,
            mtu: 1500,
        });
        vm.run(0, 0, packet)
    }

    /// The entry packet, from S to `dst`, with `args(program)` under the entry index.
    fn inject(
        c: &Compiled,
        dst: [u8; 4],
        args: impl FnOnce(&mut Program) -> Vec<Value>,
    ) -> Vec<u8> {
        let mut p = c.program.clone();
        (p.src, p.dst, p.rb) = (S, dst, 20);
        let mut stack = args(&mut p);
        stack.push(Value::int(c.entry_index.into()));
        p.stack = stack;
        p.to_bytes().unwrap()
    }

    #[test]
    fn multicast_sends_one_copy_to_each_address() {
        let c = example("multicast.plan", "multicast");
        let pkt = inject(&c, S, |p| vec![p.heap_bytes(b"hi")]);
        let out = run(S, pkt);
        let dsts: Vec<[u8; 4]> = out.transmits.iter().map(|t| t.dst).collect();
        assert_eq!(dsts, [[10, 0, 0, 2], [10, 0, 0, 3], [10, 0, 0, 4]]);
        let d = run([10, 0, 0, 3], out.transmits[1].packet.clone())
            .delivery
            .unwrap();
        assert_eq!((d.port, d.value), (5000, Delivered::Bytes(b"hi".to_vec())));
        // Each copy got the bound the accumulator carried.
        for t in &out.transmits {
            assert_eq!(
                snap_vm::wire::Packet::new_checked(&t.packet[..])
                    .unwrap()
                    .rb(),
                4
            );
        }
    }

    #[test]
    fn retrans_answers_twice_each_copy_delivering() {
        let c = example("retrans.plan", "p");
        let t = [10, 0, 0, 9];
        let pkt = inject(&c, t, |p| vec![p.heap_bytes(b"seq1"), Value::int(7)]);
        // Forwarded from S, it turns round at T: two answers home, half the bound each.
        let out = run(S, pkt);
        let out = run(t, out.transmits[0].packet.clone());
        assert_eq!(out.transmits.len(), 2, "{out:?}");
        for tr in &out.transmits {
            assert_eq!(tr.dst, S);
            let rb = snap_vm::wire::Packet::new_checked(&tr.packet[..])
                .unwrap()
                .rb();
            assert_eq!(rb, (20 - 2) / 2);
            let d = run(S, tr.packet.clone()).delivery.unwrap();
            assert_eq!((d.port, d.value), (7, Delivered::Bytes(b"seq1".to_vec())));
        }
    }

    #[test]
    fn traceroute_reports_every_hop_to_the_source() {
        let c = example("traceroute.plan", "traceroute");
        let (r, t) = ([10, 0, 0, 5], [10, 0, 0, 9]);
        let pkt = inject(&c, S, |p| vec![p.heap_addr(t)]);
        // At S: a report home, and the probe on toward T.
        let out = run(S, pkt);
        assert_eq!(out.transmits.len(), 2, "{out:?}");
        assert_eq!((out.transmits[0].dst, out.transmits[1].dst), (S, t));
        // At the router R: again a report home, and on toward T.
        let out = run(r, out.transmits[1].packet.clone());
        assert_eq!((out.transmits[0].dst, out.transmits[1].dst), (S, t));
        let report = run(S, out.transmits[0].packet.clone()).delivery.unwrap();
        assert_eq!(report.port, 33434);
        assert_eq!(report.value, Delivered::Addr(r));
        // At T: `report(T)` sent home.
        let out = run(t, out.transmits[1].packet.clone());
        assert_eq!(out.transmits.len(), 1);
        assert_eq!(out.transmits[0].dst, S);
        let report = run(S, out.transmits[0].packet.clone()).delivery.unwrap();
        assert_eq!((report.port, report.value), (33434, Delivered::Addr(t)));
    }

    #[test]
    fn flowroute_goes_by_way_of_the_gateway() {
        let c = example("flowroute.plan", "go");
        let (gw, dst) = ([10, 0, 1, 2], [10, 0, 2, 2]);
        let pkt = inject(&c, S, |p| {
            vec![p.heap_bytes(b"x"), Value::int(7), p.heap_addr(dst)]
        });
        let out = run(S, pkt);
        assert_eq!(out.transmits[0].dst, gw);
        let out = run(gw, out.transmits[0].packet.clone());
        assert_eq!(out.transmits[0].dst, dst);
        let d = run(dst, out.transmits[0].packet.clone()).delivery.unwrap();
        assert_eq!((d.port, d.value), (7, Delivered::Bytes(b"x".to_vec())));
    }
}
