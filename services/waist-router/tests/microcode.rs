//! ESP microcode on running routers (issue 36): two routers in a chain on loopback run an
//! installed instruction (opcode 64, count.snap) and inline microcode (opcode 32, the
//! same program in the packet) each at its own store, as the metrics of each show; the
//! threshold drops the third packet at the first router. Inline microcode is refused where
//! the config says (`microcode = "off"`, or links by name): the packet goes on with Err
//! (Malformed), and the refusal is counted by reason.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod microcode_support;

use esp_proto::wire::ErrCode;
use microcode_support::{
    COUNT, Host, count_path, esp_of, esp_packet, inline_count, marker, metric, operands, route,
    router_link, scrape,
};
use waist_router::embed::Embedded;

const INSTALLED_RUNS: &str = "waist_esp_microcode_runs_total{kind=\"installed\"}";
const INLINE_RUNS: &str = "waist_esp_microcode_runs_total{kind=\"inline\"}";
const COUNT_RUNS: &str = "waist_esp_installed_runs_total{opcode=\"64\",name=\"count\"}";

fn refused(reason: &str) -> String {
    format!("waist_esp_microcode_refused_total{{reason=\"{reason}\"}}")
}

/// A router named `name` with `links` (and their routes), ESP with `esp` and COUNT
/// installed under opcode 64.
fn router(name: &str, n: u8, links: &str, esp: &str) -> Embedded {
    let text = format!(
        "[node]\nname = \"{name}\"\naddresses = [\"10.0.0.{n}\"]\n\n{links}\
         [esp]\nrate = 100\n{esp}\n\n\
         [[esp.instruction]]\nopcode = 64\nname = \"count\"\nprogram = \"{}\"\n",
        count_path()
    );
    Embedded::start(&format!("{name}.toml"), text, true).unwrap()
}

/// Sends `packet` from `from` after which the marker goes; asserts the marker arrives at
/// `to` next (the packet was dropped on the way).
#[track_caller]
fn dropped(from: &Host, to: &Host, packet: &[u8], n: u32) {
    from.send(packet);
    let m = marker(from.addr, to.addr, n);
    from.send(&m);
    let got = to.recv();
    assert_eq!(got.len(), m.len(), "the packet arrived: {got:?}");
    assert_eq!(got[28..32], m[28..32], "the marker arrived next");
}

#[test]
fn installed_and_inline_microcode_run_at_both_routers() {
    // a ─ r1 ─ r2 ─ b
    let (a, b) = (Host::new([10, 1, 0, 5]), Host::new([10, 2, 0, 5]));
    let (to_r2, to_r1) = router_link();
    let r1 = router(
        "r1",
        1,
        &format!("{}{to_r2}{}", a.link("a"), route("10.2.0.0/16", "r2")),
        "",
    );
    let r2 = router(
        "r2",
        2,
        &format!("{}{to_r1}{}", b.link("b"), route("10.1.0.0/16", "r1")),
        "",
    );
    let (m1, m2) = (r1.metrics().unwrap(), r2.metrics().unwrap());

    // Opcode 64: COUNT installed; counter 0xC0, threshold 2.
    let installed = esp_packet(a.addr, b.addr, 64, 1, &operands(&[0xC0, 2]));
    a.send(&installed);
    let (opcode, err, field) = esp_of(&b.recv());
    assert_eq!((opcode, err), (64, None));
    assert_eq!(field, operands(&[0xC0, 2]), "operands as COUNT leaves them");
    for page in [scrape(m1), scrape(m2)] {
        assert_eq!(metric(&page, INSTALLED_RUNS), 1.0, "{page}");
        assert_eq!(metric(&page, COUNT_RUNS), 1.0, "{page}");
        assert_eq!(metric(&page, INLINE_RUNS), 0.0, "{page}");
        assert!(metric(&page, "waist_esp_microcode_instructions_total") >= 10.0);
    }
    // Counts 2 (forwarded by both), then 3 > 2: dropped at r1, which counts first.
    a.send(&installed);
    assert_eq!(esp_of(&b.recv()).1, None);
    dropped(&a, &b, &installed, 1);
    let (p1, p2) = (scrape(m1), scrape(m2));
    assert_eq!(metric(&p1, COUNT_RUNS), 3.0, "{p1}");
    assert_eq!(metric(&p2, COUNT_RUNS), 2.0, "{p2}");

    // Opcode 32: the same program inline, in computation 2 (counter 0xC1, threshold 2).
    let field = inline_count(0xC1, 2);
    let inline = esp_packet(a.addr, b.addr, 32, 2, &field);
    a.send(&inline);
    let (opcode, err, got) = esp_of(&b.recv());
    assert_eq!((opcode, err), (32, None));
    assert_eq!(got, field, "program and operands as they were sent");
    for page in [scrape(m1), scrape(m2)] {
        assert_eq!(metric(&page, INLINE_RUNS), 1.0, "{page}");
    }
    a.send(&inline);
    assert_eq!(esp_of(&b.recv()).1, None);
    dropped(&a, &b, &inline, 2);
    let (p1, p2) = (scrape(m1), scrape(m2));
    assert_eq!(metric(&p1, INLINE_RUNS), 3.0, "{p1}");
    assert_eq!(metric(&p2, INLINE_RUNS), 2.0, "{p2}");
    for page in [&p1, &p2] {
        assert_eq!(metric(page, "waist_esp_microcode_aborted_total"), 0.0);
        assert_eq!(metric(page, "waist_esp_microcode_failed_total"), 0.0);
        assert_eq!(metric(page, &refused("verify")), 0.0);
    }
    for r in [r1, r2] {
        assert!(r.stop().unwrap().node.balanced());
    }
}

#[test]
fn inline_microcode_is_refused_where_the_config_says() {
    // a, c ─ r1 ─ r2 ─ b; r1 runs inline microcode from a only, r2 none.
    let (a, b, c) = (
        Host::new([10, 1, 0, 5]),
        Host::new([10, 2, 0, 5]),
        Host::new([10, 3, 0, 5]),
    );
    let (to_r2, to_r1) = router_link();
    let r1 = router(
        "r1",
        1,
        &format!(
            "{}{}{to_r2}{}",
            a.link("a"),
            c.link("c"),
            route("10.2.0.0/16", "r2")
        ),
        "microcode = [\"a\"]",
    );
    let r2 = router(
        "r2",
        2,
        &format!("{}{to_r1}{}", b.link("b"), route("10.1.0.0/16", "r1")),
        "microcode = \"off\"",
    );
    let (m1, m2) = (r1.metrics().unwrap(), r2.metrics().unwrap());
    let field = inline_count(0xC2, 100);

    // From a (allowed at r1) to c: run.
    a.send(&esp_packet(a.addr, c.addr, 32, 3, &field));
    assert_eq!(esp_of(&c.recv()).1, None);
    // From c (not allowed at r1) to a: refused, goes on with Err.
    c.send(&esp_packet(c.addr, a.addr, 32, 3, &field));
    assert_eq!(esp_of(&a.recv()).1, Some(ErrCode::Malformed));
    // From a to b: r1 runs it, r2 (off) refuses it.
    a.send(&esp_packet(a.addr, b.addr, 32, 3, &field));
    let (opcode, err, _) = esp_of(&b.recv());
    assert_eq!((opcode, err), (32, Some(ErrCode::Malformed)));
    // Installed instructions run whatever the inline policy.
    a.send(&esp_packet(a.addr, b.addr, 64, 3, &operands(&[0xC3, 100])));
    assert_eq!(esp_of(&b.recv()).1, None);
    // An opcode nothing is installed under: refused as unknown.
    a.send(&esp_packet(a.addr, c.addr, 65, 3, &operands(&[1])));
    assert_eq!(esp_of(&c.recv()).1, Some(ErrCode::Malformed));

    let (p1, p2) = (scrape(m1), scrape(m2));
    assert_eq!(metric(&p1, INLINE_RUNS), 2.0, "{p1}");
    assert_eq!(metric(&p1, &refused("iface")), 1.0, "{p1}");
    assert_eq!(metric(&p1, &refused("off")), 0.0, "{p1}");
    assert_eq!(metric(&p1, &refused("unknown_opcode")), 1.0, "{p1}");
    assert_eq!(metric(&p1, INSTALLED_RUNS), 1.0, "{p1}");
    assert_eq!(metric(&p2, INLINE_RUNS), 0.0, "{p2}");
    assert_eq!(metric(&p2, &refused("off")), 1.0, "{p2}");
    assert_eq!(metric(&p2, &refused("iface")), 0.0, "{p2}");
    assert_eq!(metric(&p2, INSTALLED_RUNS), 1.0, "{p2}");
    assert!(COUNT.contains("ess.count"));
    for r in [r1, r2] {
        r.stop().unwrap();
    }
}
