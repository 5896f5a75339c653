//! The host tools against real routers: two `waist-router`s on loopback UDP links and the
//! tool as the far end of R1's host link (`chain`).

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use clap::Parser;

use esp_proto::instr::{CombineOp, Instruction};
use esp_proto::wire::{ErrCode, Loc};
use ess::{Tag, Value};
use waist::host::esp::{self, Outcome, Query};
use waist::host::snap::{self, Ping};
use waist::host::{EXIT_ABORT, EXIT_ANSWER, EXIT_TIMEOUT};
use waist_router::embed::Embedded;

mod chain;

use chain::{Chain, NOBODY, R1, R2, TOOL, free, link};

async fn query(chain: &Chain, q: &Query) -> Outcome {
    let mut link = chain.link(q.answer_protocol()).await;
    esp::send(&mut link, q).await.unwrap()
}

fn report(q: &Query, o: &Outcome, json: bool) -> String {
    let mut out = Vec::new();
    esp::report(q, o, json, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn esp_count_to_a_router_is_answered_by_it_dedicated_and_piggybacked() {
    let chain = Chain::start().await;
    let count = Instruction::Count {
        counter: Tag(5),
        thresh: 10,
    };
    let mut q = Query::new(TOOL.into(), R2.into(), count);
    let o = query(&chain, &q).await;
    let Outcome::Answer(r) = o else {
        panic!("{o:?}")
    };
    // R2 reflected it (the answer's source), nobody aborted, Loc intact.
    assert_eq!(
        (r.from, r.instr, r.loc, r.err),
        (R2.into(), count, Loc::ALL, None)
    );
    assert_eq!(o.exit_code(), EXIT_ANSWER);
    assert_eq!(
        report(&q, &o, false),
        "answer from 10.0.0.2: COUNT counter=0x5 thresh=10 loc=input,central,output\n"
    );
    let json: serde_json::Value = serde_json::from_str(&report(&q, &o, true)).unwrap();
    assert_eq!(json["status"], "answer");
    assert_eq!(json["from"], "10.0.0.2");
    assert_eq!(json["opcode"], 1);

    // The same instruction piggybacked on a UDP datagram, central context only.
    q.option = true;
    q.loc = Loc::CENTRAL;
    let o = query(&chain, &q).await;
    let Outcome::Answer(r) = o else {
        panic!("{o:?}")
    };
    assert_eq!((r.from, r.loc, r.err), (R2.into(), Loc::CENTRAL, None));

    let s = chain.stop();
    // With RB set the query passes R1 untouched on the way out; R2, addressed, reflects it
    // without running it; R1 runs it on the way back (once per context in Loc).
    assert_eq!(s[1].node.esp_executed, 0, "{:?}", s[1].node);
    assert_eq!(s[0].node.esp_executed, 4, "{:?}", s[0].node);
}

#[tokio::test]
async fn lastmark_names_the_marking_router_and_collect_without_count_aborts_precisely() {
    let chain = Chain::start().await;
    let mark = Query::new(TOOL.into(), R2.into(), Instruction::Mark { tag: Tag(77) });
    assert!(matches!(query(&chain, &mark).await, Outcome::Answer(_)));

    let last = |tag| {
        Query::new(
            TOOL.into(),
            R2.into(),
            Instruction::LastMark {
                tag: Tag(tag),
                node: Value(0),
            },
        )
    };
    let q = last(77);
    let o = query(&chain, &q).await;
    let Outcome::Answer(r) = o else {
        panic!("{o:?}")
    };
    // MARK ran at R1 on its way back (R2 only reflected it), so R1 is the last mark.
    assert_eq!(esp::last_mark(&r.instr), Some(R1));
    assert!(report(&q, &o, false).ends_with(" last-mark=10.0.0.1\n"));
    let json: serde_json::Value = serde_json::from_str(&report(&q, &o, true)).unwrap();
    assert_eq!(json["last_mark"], "10.0.0.1");
    // A tag nobody marked: no router named.
    let o = query(&chain, &last(78)).await;
    let Outcome::Answer(r) = o else {
        panic!("{o:?}")
    };
    assert_eq!(esp::last_mark(&r.instr), None);

    let collect = Instruction::Collect {
        value: Tag(1),
        val: Value(3),
        counter: Tag(2),
        op: CombineOp::Add,
    };
    let q = Query::new(TOOL.into(), R2.into(), collect);
    let o = query(&chain, &q).await;
    let Outcome::Abort(r) = o else {
        panic!("{o:?}")
    };
    let e = r.error().unwrap();
    assert_eq!(
        (e.instr, e.code, r.loc),
        (collect, ErrCode::MissingState, Loc::NONE)
    );
    assert_eq!(o.exit_code(), EXIT_ABORT);
    let line = report(&q, &o, false);
    assert!(
        line.starts_with(
            "abort from 10.0.0.2: COLLECT value=0x1 val=3 counter=0x2 op=add error=missing-state"
        ),
        "{line}"
    );
    let json: serde_json::Value = serde_json::from_str(&report(&q, &o, true)).unwrap();
    assert_eq!(
        (&json["status"], &json["error"]),
        (&"abort".into(), &"missing-state".into())
    );
    chain.stop();
}

#[tokio::test]
async fn snap_ping_through_r1_to_r2() {
    let chain = Chain::start().await;
    let mut link = chain.link(snap_vm::wire::IP_PROTOCOL).await;
    let p = Ping {
        src: TOOL.into(),
        host: R2.into(),
        count: 3,
        interval: Duration::from_millis(50),
        rb: 32,
        port: 7,
        timeout: Duration::from_secs(2),
    };
    let mut seen = Vec::new();
    let s = snap::ping(&mut link, &p, |r| {
        seen.push(r.seq);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!((s.sent, s.received(), seen), (3, 3, vec![1, 2, 3]));
    for r in &s.replies {
        // R1 and R2 out, R1 back, then this host: one unit each.
        assert_eq!((r.target, r.rb), (R2.into(), 32 - 4), "{r:?}");
        assert!(r.rtt_us > 0, "{r:?}");
    }
    assert_eq!(s.exit_code(), EXIT_ANSWER);
    let rs = chain.stop();
    assert_eq!((rs[0].node.snap_executed, rs[1].node.snap_executed), (6, 3));
}

#[tokio::test]
async fn nobody_answering_is_a_timeout() {
    let chain = Chain::start().await;
    let mut q = Query::new(
        TOOL.into(),
        NOBODY.into(),
        Instruction::Count {
            counter: Tag(9),
            thresh: 1,
        },
    );
    q.timeout = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let o = query(&chain, &q).await;
    assert_eq!(o, Outcome::Timeout);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(o.exit_code(), EXIT_TIMEOUT);
    assert_eq!(
        report(&q, &o, false),
        "no answer from 10.2.0.9 within 300 ms\n"
    );

    let mut link = chain.link(snap_vm::wire::IP_PROTOCOL).await;
    let p = Ping {
        src: TOOL.into(),
        host: NOBODY.into(),
        count: 1,
        interval: Duration::from_millis(10),
        rb: 32,
        port: 7,
        timeout: Duration::from_millis(300),
    };
    let s = snap::ping(&mut link, &p, |_| Ok(())).await.unwrap();
    assert_eq!((s.sent, s.received(), s.exit_code()), (1, 0, EXIT_TIMEOUT));
    let rs = chain.stop();
    // The query did reach R2 and leave by the far link (nobody there).
    assert!(rs[1].node.forwarded >= 2, "{:?}", rs[1].node);
}

#[tokio::test]
async fn the_waist_binary_pings_and_queries() {
    let chain = Chain::start().await;
    let via = chain.via_arg();
    let bin = env!("CARGO_BIN_EXE_waist");
    // The routers run on their own threads: blocking this one on the child is fine.
    let out = std::process::Command::new(bin)
        .args([
            "snap", "ping", "10.0.0.2", "--via", &via, "-c", "1", "-i", "50",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("SNAP PING 10.0.0.2 from 10.1.0.1 (rb 32, port 7): Fig. 1 ping"));
    assert!(text.contains("seq=1 from=10.0.0.2 rtt="), "{text}");
    assert!(text.contains(" µs rb=28\n"), "{text}");
    assert!(text.contains("1 sent, 1 received, 0% loss"), "{text}");
    assert!(text.contains("rtt min/avg/max = "), "{text}");

    // --json: one JSON document, nothing else.
    let out = std::process::Command::new(bin)
        .args([
            "snap", "ping", "10.0.0.2", "--via", &via, "-c", "2", "-i", "50", "--json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["target"], "10.0.0.2");
    assert_eq!((&json["sent"], &json["received"]), (&2.into(), &2.into()));
    assert_eq!(json["replies"][0]["from"], "10.0.0.2");
    assert_eq!(json["replies"][0]["rb"], 28);
    assert!(json["rtt_us"]["min"].as_u64().unwrap() > 0, "{json}");

    // An abort is exit code 1, with one JSON object.
    let out = std::process::Command::new(bin)
        .args([
            "esp",
            "send",
            "--via",
            &via,
            "--dst",
            "10.0.0.2",
            "--json",
            "collect",
            "--tag",
            "1",
            "--value",
            "3",
            "--counter",
            "0x2",
            "--op",
            "add",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["error"], "missing-state");
    chain.stop();
}

/// The paper's Fig. 2, `examples/plan/ping.plan`.
const PING_PLAN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plan/ping.plan");

#[tokio::test]
async fn the_waist_binary_pings_with_the_compiled_plan_ping() {
    let chain = Chain::start().await;
    let via = chain.via_arg();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_waist"))
        .args([
            "snap", "ping", "10.0.0.2", "--via", &via, "-c", "3", "-i", "50", "--plan", PING_PLAN,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    println!("{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    let header = text.lines().next().unwrap();
    assert!(
        header.starts_with("SNAP PING 10.0.0.2 from 10.1.0.1 (rb 32, port 7): ")
            && header.ends_with("ping.plan compiled from PLAN (entry `p`, 17 instructions)"),
        "{header}"
    );
    for seq in 1..=3 {
        // The same resource bound left as Fig. 1's (snap_ping_through_r1_to_r2): R1 and R2
        // out, R1 back, then this host, one unit each. At R2 the compiled `p` sends its
        // child `r` with getRB(), what R2 had left after its unit, as Fig. 1's `forwto`
        // keeps the packet's own bound.
        let line = format!("seq={seq} from=10.0.0.2 rtt=");
        let reply = text.lines().find(|l| l.starts_with(&line));
        assert!(
            reply.is_some_and(|l| l.ends_with(" µs rb=28")),
            "seq {seq}: {text}"
        );
    }
    assert!(text.contains("3 sent, 3 received, 0% loss"), "{text}");
    let rs = chain.stop();
    // As with Fig. 1: each ping runs at R1 out and back (the child's `defaultRoute`
    // preamble forwards it) and once at R2, where `p` runs and sends `r` home.
    assert_eq!((rs[0].node.snap_executed, rs[1].node.snap_executed), (6, 3));
}

#[test]
fn snap_ping_refuses_a_plan_that_is_not_a_ping() {
    // multicast.plan's entry takes (w: blob) only: refused before any link is opened.
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plan/multicast.plan");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_waist"))
        .args([
            "snap",
            "ping",
            "10.0.0.2",
            "--via",
            "udp:127.0.0.1:9=127.0.0.1:9",
            "--plan",
            plan,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("multicast.plan: entry `multicast`: ")
            && err.contains("must take (w: blob, n: int)"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn route_show_reads_a_routers_table_from_its_metrics() {
    let (local, peer) = (free(), free());
    let text = format!(
        "[node]\nname = \"rt\"\naddresses = [\"10.0.0.7\"]\n{}[[route]]\nprefix = \"10.5.0.0/16\"\nlink = \"host\"\n",
        link("host", local, peer, false)
    );
    let router = Embedded::start("rt.toml", text, true).unwrap();
    let metrics = router.metrics().unwrap().to_string();
    let show = |args: &[&str]| {
        let cli =
            waist::Cli::try_parse_from(["waist", "route", "show"].iter().chain(args)).unwrap();
        let mut out = Vec::new();
        let code = waist::run(cli, &mut out).unwrap();
        assert_eq!(code, 0);
        String::from_utf8(out).unwrap()
    };
    // By address, as ROUTER or as --metrics: a table.
    for args in [[metrics.as_str(), ""], ["--metrics", metrics.as_str()]] {
        let out = show(&args[..if args[1].is_empty() { 1 } else { 2 }]);
        assert!(
            out.contains("10.5.0.0/16") && out.contains("host") && out.contains("static"),
            "{out}"
        );
        assert!(out.contains(&peer.to_string()), "the next hop: {out}");
    }
    // --json: one document with the route's fields.
    let json: serde_json::Value = serde_json::from_str(&show(&[&metrics, "--json"])).unwrap();
    assert_eq!(json["router"], "rt");
    assert_eq!(json["metrics"], metrics.as_str());
    let r = &json["routes"][0];
    assert_eq!(
        (
            &r["prefix"],
            &r["link"],
            &r["source"],
            &r["state"],
            &r["rank"],
            &r["cost"]
        ),
        (
            &"10.5.0.0/16".into(),
            &"host".into(),
            &"static".into(),
            &"active".into(),
            &0.into(),
            &0.into()
        )
    );
    assert_eq!(r["next_hop"], peer.to_string());
    // A name needs a run to look it up in.
    let cli =
        waist::Cli::try_parse_from(["waist", "route", "show", "rt", "--dir", "/nonexistent-run"])
            .unwrap();
    let err = waist::run(cli, &mut Vec::new()).unwrap_err().to_string();
    assert!(
        err.contains("no `waist up` run in /nonexistent-run"),
        "{err}"
    );
    router.stop().unwrap();
}
