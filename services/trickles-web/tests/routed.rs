//! Trickles across waist routers: real `waist-router` nodes (in-process, IP-in-UDP links on
//! loopback) between the clients and a trickles-web serving as `--address 10.2.0.80`.
//! trickles-get and trickles-proxy (with curl) send to the router's link socket
//! (`--via`) from the network's address 10.1.0.10 (`--src`) on the socket the router's
//! link names (`--bind`); the router forwards by the inner addresses. Byte-exact through
//! one router, and through a line of two whose middle link loses 5% each way; packets to
//! another inner address are refused by the server; the router's counters show the frames
//! it forwarded.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
mod support {
    pub mod client;
}

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{TempDir, Web, have, http_get, path_str};
use support::client::{Proc, Proxy, expect_ok, get, same};
use waist_router::embed::Embedded;

const LIMIT: Duration = Duration::from_secs(120);
const CLIENT: &str = "10.1.0.10";
const SERVER: &str = "10.2.0.80";

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

/// A `[[link]]` section, with `extra` lines (emulation) in it.
fn link(name: &str, local: SocketAddr, peer: SocketAddr, extra: &str) -> String {
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{extra}\n"
    )
}

fn route(prefix: &str, link: &str) -> String {
    format!("[[route]]\nprefix = \"{prefix}\"\nlink = \"{link}\"\n")
}

fn node(name: &str, address: &str) -> String {
    format!("[node]\nname = \"{name}\"\naddresses = [\"{address}\"]\n")
}

/// trickles-web serving `dir` on `listen` as inner address [`SERVER`].
fn server(dir: &TempDir, listen: SocketAddr) -> Web {
    Web::start(&[
        "--root",
        path_str(&dir.root()),
        "--keys",
        path_str(&dir.0.join("keys")),
        "--listen",
        &format!("udp:{listen}"),
        "--address",
        SERVER,
        "--metrics",
        "127.0.0.1:0",
    ])
}

/// The client options that put it behind the router's link `via`, on socket `bind`: the
/// link `udp:BIND=VIA`.
fn behind(via: SocketAddr, bind: SocketAddr) -> Vec<String> {
    vec![
        "--via".into(),
        format!("udp:{bind}={via}"),
        "--src".into(),
        CLIENT.into(),
    ]
}

/// The same in the older spelling: `--via VIA --bind BIND`.
fn behind_alias(via: SocketAddr, bind: SocketAddr) -> Vec<String> {
    vec![
        "--via".into(),
        via.to_string(),
        "--src".into(),
        CLIENT.into(),
        "--bind".into(),
        bind.to_string(),
    ]
}

fn get_via(args: &[&str], hop: &[String], limit: Duration) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(hop.iter().map(String::as_str));
    get(&all, limit)
}

/// `N` from the summary's `; ADDR sent S received N`.
fn received(summary: &str) -> u64 {
    summary
        .split("received ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no received count in {summary}"))
}

#[test]
fn trickles_get_through_a_router_is_byte_exact() {
    // client (10.1.0.10) ── host ── r (10.0.0.1) ── web ── trickles-web (10.2.0.80)
    let dir = TempDir::new("routed-get");
    let bytes = dir.file("big", 4 << 20);
    let small = dir.file("small", 1335);
    let (client, r_host, r_web, listen) = (free(), free(), free(), free());
    let text = format!(
        "{}{}{}{}{}",
        node("r", "10.0.0.1"),
        link("host", r_host, client, ""),
        link("web", r_web, listen, ""),
        route("10.1.0.0/16", "host"),
        route("10.2.0.0/16", "web"),
    );
    let router = Embedded::start("r.toml", text, false).unwrap();
    let web = server(&dir, listen);
    let hop = behind(r_host, client);

    let file = dir.0.join("big.out");
    let t = Instant::now();
    let out = get_via(
        &[&format!("trickles://{SERVER}/big"), "-o", path_str(&file)],
        &hop,
        LIMIT,
    );
    let summary = expect_ok(&out);
    eprintln!("4 MiB through one router in {:?}: {summary}", t.elapsed());
    same("big", &std::fs::read(&file).unwrap(), &bytes);
    assert!(summary.contains(&format!("to {SERVER}")), "{summary}");
    assert!(summary.contains(&format!("{r_host} sent")), "{summary}");
    let mut delivered = received(&summary);

    // To stdout over three connections, a port in the URL (ignored with --via).
    let out = get_via(
        &[
            &format!("trickles://{SERVER}:7700/small"),
            "--parallel",
            "3",
        ],
        &hop,
        LIMIT,
    );
    let summary = expect_ok(&out);
    same("small", &out.stdout, &small);
    delivered += received(&summary);

    // Another inner address behind the same link: the server refuses it.
    let out = get_via(
        &["trickles://10.2.0.81/small", "--timeout-s", "2"],
        &hop,
        LIMIT,
    );
    assert!(!out.status.success(), "an answer from 10.2.0.81");
    let refused = web.metric("trickles_refused_total{reason=\"other_address\"}");
    assert!(refused >= 1.0, "other_address refusals: {refused}");
    // --via takes one inner server, and no spraying.
    let small_url = format!("trickles://{SERVER}/small");
    for extra in [&["--server", "10.2.0.81"][..], &["--spray"][..]] {
        let mut args = vec![small_url.as_str()];
        args.extend_from_slice(extra);
        let out = get_via(&args, &hop, LIMIT);
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--via"), "{stderr}");
    }

    assert!(web.stop(), "graceful exit");
    let s = router.stop().unwrap();
    // Every datagram the client received was forwarded by the router, and its requests
    // went the other way through it too.
    assert!(
        s.node.forwarded > delivered,
        "forwarded {} for {delivered} datagrams delivered: {:?}",
        s.node.forwarded,
        s.node
    );
    let host = &s.links.iter().find(|(n, _)| n == "host").unwrap().1;
    let web_link = &s.links.iter().find(|(n, _)| n == "web").unwrap().1;
    assert!(host.tx_frames >= delivered, "{host:?}");
    assert!(web_link.rx_frames >= delivered, "{web_link:?}");
    assert!(web_link.tx_frames > 0 && host.rx_frames > 0);
}

#[test]
fn curl_through_the_proxy_and_a_router_is_byte_exact() {
    if !have("curl") {
        eprintln!("SKIPPED: curl is not installed");
        return;
    }
    let dir = TempDir::new("routed-proxy");
    let files: Vec<_> = [("one", 1), ("mss+1", 1335), ("big", 3 << 20)]
        .iter()
        .map(|(n, l)| (*n, dir.file(n, *l)))
        .collect();
    let (client, r_host, r_web, listen) = (free(), free(), free(), free());
    let text = format!(
        "{}{}{}{}{}",
        node("r", "10.0.0.1"),
        link("host", r_host, client, ""),
        link("web", r_web, listen, ""),
        route("10.1.0.0/16", "host"),
        route("10.2.0.0/16", "web"),
    );
    let router = Embedded::start("r.toml", text, false).unwrap();
    let web = server(&dir, listen);
    let hop = behind_alias(r_host, client);
    let mut args = vec!["--server", SERVER];
    args.extend(hop.iter().map(String::as_str));
    let proxy = Proxy::start(&args);
    for (name, bytes) in &files {
        let file = dir.0.join(format!("{name}.out"));
        let t = Instant::now();
        let child = Command::new("curl")
            .args(["-sS", "--fail", "-x", &format!("http://{}", proxy.tcp)])
            .args([&format!("http://{SERVER}/{name}"), "-o", path_str(&file)])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = Proc(child).finish(LIMIT);
        assert!(
            out.status.success(),
            "curl {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "{name}: {} bytes through the proxy and a router in {:?}",
            bytes.len(),
            t.elapsed()
        );
        same(name, &std::fs::read(&file).unwrap(), bytes);
    }
    assert!(proxy.stop(), "the proxy stops cleanly");
    assert!(web.stop(), "graceful exit");
    let s = router.stop().unwrap();
    assert!(s.node.forwarded > (3 << 20) / 1334, "{:?}", s.node);
}

#[test]
fn a_line_of_two_routers_with_five_percent_loss_is_byte_exact() {
    // client ── host ── r1 ══ 5% loss each way ══ r2 ── web ── trickles-web
    let dir = TempDir::new("routed-line");
    let bytes = dir.file("big", 2 << 20);
    let (client, r1_host, r1_r2, r2_r1, r2_web, listen) =
        (free(), free(), free(), free(), free(), free());
    let r1 = format!(
        "{}{}{}{}{}",
        node("r1", "10.0.0.1"),
        link("host", r1_host, client, ""),
        link("r2", r1_r2, r2_r1, "emulation = { loss = 0.05, seed = 7 }"),
        route("10.1.0.0/16", "host"),
        route("10.2.0.0/16", "r2"),
    );
    let r2 = format!(
        "{}{}{}{}{}",
        node("r2", "10.0.0.2"),
        link("r1", r2_r1, r1_r2, "emulation = { loss = 0.05, seed = 8 }"),
        link("web", r2_web, listen, ""),
        route("10.1.0.0/16", "r1"),
        route("10.2.0.0/16", "web"),
    );
    let r1 = Embedded::start("r1.toml", r1, true).unwrap();
    let r2 = Embedded::start("r2.toml", r2, true).unwrap();
    let web = server(&dir, listen);
    let file = dir.0.join("big.out");
    let t = Instant::now();
    let out = get_via(
        &[&format!("trickles://{SERVER}/big"), "-o", path_str(&file)],
        &behind(r1_host, client),
        LIMIT,
    );
    let summary = expect_ok(&out);
    eprintln!(
        "2 MiB over two routers, 5% loss each way, in {:?}: {summary}",
        t.elapsed()
    );
    same("big", &std::fs::read(&file).unwrap(), &bytes);
    // Both directions lost frames on the emulated link, and the transfer recovered.
    for (r, link) in [(&r1, "r2"), (&r2, "r1")] {
        let metrics = http_get(r.metrics().unwrap(), "/metrics");
        let lost: f64 = metrics
            .lines()
            .find(|l| {
                l.starts_with("waist_link_emulated_lost") && l.contains(&format!("link=\"{link}\""))
            })
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no emulated loss on {link}:\n{metrics}"));
        assert!(lost > 0.0, "nothing lost on {link}");
    }
    assert!(web.stop(), "graceful exit");
    for r in [r1, r2] {
        let s = r.stop().unwrap();
        assert!(s.node.forwarded > received(&summary) / 2, "{:?}", s.node);
    }
}

#[test]
fn the_address_key_of_the_config_file_is_checked() {
    let dir = TempDir::new("routed-config");
    let cfg = dir.0.join("web.toml");
    let check = |text: String| {
        std::fs::write(&cfg, text).unwrap();
        Command::new(env!("CARGO_BIN_EXE_trickles-web"))
            .args(["--config", path_str(&cfg), "--check"])
            .output()
            .unwrap()
    };
    let root = dir.root();
    let head = format!("root = \"{}\"\nkeys = \"/tmp/k\"\n", root.display());
    let o = check(format!("{head}address = \"10.2.0.800\"\n"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("web.toml") && err.contains(":3"),
        "{err}"
    );
    let o = check(format!(
        "{head}listen = \"tun:tw9,10.9.0.1/24\"\naddress = \"10.2.0.80\"\n"
    ));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("udp:"), "{err}");
    let o = check(format!(
        "{head}listen = \"udp:127.0.0.1:0\"\naddress = \"10.2.0.80\"\n"
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
