//! One router between two hosts over TUN, as `benches/kernel_path.sh` builds it, with TUN
//! offload (the default) and without: the kernel's ping and a bulk TCP transfer, byte for
//! byte.
//!
//! ```text
//!  namespace A                    namespace R                    namespace B
//! ┌─────────────────────┐        ┌────────────────────┐        ┌─────────────────────┐
//! │ 10.1.0.1/24 on wtA  │   fd   │                    │   fd   │  10.2.0.1/24 on wtB │
//! │ 10.2/16 via wtA ◄───┼────────┼─── waist-router ───┼────────┼───► 10.1/16 via wtB │
//! │ curl                │        │  link a     link b │        │ HTTP server (test)  │
//! └─────────────────────┘        └────────────────────┘        └─────────────────────┘
//! ```
//!
//! The router runs in R and creates both TUN devices there; each is then moved into its
//! host's namespace with the router's file descriptors still attached, so R's kernel never
//! forwards: every packet crosses the router in user space.
//!
//! With offload the devices carry a virtio-net header (`ip -d link`: `vnet_hdr on`), B's
//! kernel hands the router TSO super-packets (link b: many frames per read) and the router
//! writes coalesced ones to A (A's kernel receives skbs far longer than the MTU). Without
//! it, one packet per read and per write.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::env::{self, Env, poll, run, value};
use crate::traffic::{curl_within, ping, serve_once};

const A_ADDR: &str = "10.1.0.1";
const B_ADDR: &str = "10.2.0.1";
const MTU: u64 = 1500;

#[test]
fn one_router_over_tun_with_offload() {
    one_hop("off", true, 100_000_000);
}

#[test]
fn one_router_over_tun_without_offload() {
    one_hop("pl", false, 10_000_000);
}

/// The router's config: two TUN links, one route each way (`offload = false` on both
/// links unless `offload`).
fn config(offload: bool) -> String {
    let off = if offload { "" } else { "offload = false\n" };
    let mut c = String::from("[node]\nname = \"hop\"\naddresses = [\"10.0.0.1\"]\n\n");
    for (link, dev) in [("a", "wtA"), ("b", "wtB")] {
        c.push_str(&format!(
            "[[link]]\nname = \"{link}\"\nkind = \"tun\"\ndevice = \"{dev}\"\n{off}\n"
        ));
    }
    for (prefix, link) in [("10.1.0.0/16", "a"), ("10.2.0.0/16", "b")] {
        c.push_str(&format!(
            "[[route]]\nprefix = \"{prefix}\"\nlink = \"{link}\"\n\n"
        ));
    }
    c
}

/// Whether `dev` in `ns` carries a virtio-net header, as `ip -d link` reports it (`None`
/// if this iproute2 does not say).
fn vnet_hdr(ns: &str, dev: &str) -> Option<bool> {
    let out =
        run(std::process::Command::new("ip").args(["-d", "-n", ns, "link", "show", "dev", dev]));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    words.find(|w| *w == "vnet_hdr")?;
    match words.next() {
        Some("on") => Some(true),
        Some("off") => Some(false),
        _ => None,
    }
}

/// Namespace `ns`'s IP receive counters: packets (skbs) handed to IP, and their bytes.
fn ip_received(ns: &str) -> (u64, u64) {
    let read = |file: &str, prefix: &str, field: &str| -> u64 {
        let out = run(Env::exec(ns, "cat").arg(file));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut rows = text.lines().filter(|l| l.starts_with(prefix));
        let (Some(names), Some(values)) = (rows.next(), rows.next()) else {
            panic!("{file} in {ns}: no {prefix} rows");
        };
        let at = names
            .split_whitespace()
            .position(|n| n == field)
            .unwrap_or_else(|| panic!("{file} in {ns}: no {prefix} {field}"));
        values
            .split_whitespace()
            .nth(at)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{file} in {ns}: bad {prefix} {field}"))
    };
    (
        read("/proc/net/snmp", "Ip:", "InReceives"),
        read("/proc/net/netstat", "IpExt:", "InOctets"),
    )
}

/// The sample `waist_link_NAME_total{link="LINK"}` of a scrape.
fn link_counter(body: &str, name: &str, link: &str) -> u64 {
    value(body, &format!("waist_link_{name}_total{{link=\"{link}\"}}"))
        .unwrap_or_else(|| panic!("no waist_link_{name}_total for link {link}:\n{body}"))
}

/// `n` bytes of a seeded generator's output.
fn random_body(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = netsim::Rng::new(seed);
    let mut body = vec![0u8; n];
    for chunk in body.chunks_mut(8) {
        let r = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
    body
}

fn one_hop(tag: &str, offload: bool, bytes: usize) {
    if let Some(why) = env::unsupported() {
        println!("skipping netns test: {why}");
        return;
    }
    let _machine = env::exclusive();
    let what = if offload { "offload" } else { "no offload" };
    let pid = std::process::id();
    let (a, b, r) = (
        format!("w1{tag}A-{pid}"),
        format!("w1{tag}B-{pid}"),
        format!("w1{tag}R-{pid}"),
    );
    let mut env = Env::new(tag);
    for ns in [&a, &b, &r] {
        env.netns(ns);
    }
    let router = env.router("hop", &r, &config(offload), None);
    env.ip(&r, &["link", "set", "wtA", "netns", &a]);
    env.ip(&r, &["link", "set", "wtB", "netns", &b]);
    for (ns, dev, addr, far) in [
        (&a, "wtA", A_ADDR, "10.2.0.0/16"),
        (&b, "wtB", B_ADDR, "10.1.0.0/16"),
    ] {
        env.ip(ns, &["addr", "add", &format!("{addr}/24"), "dev", dev]);
        env.ip(ns, &["link", "set", dev, "up"]);
        env.ip(ns, &["route", "add", far, "dev", dev]);
    }
    for (ns, dev) in [(&a, "wtA"), (&b, "wtB")] {
        match vnet_hdr(ns, dev) {
            Some(on) => assert_eq!(on, offload, "{dev}: vnet_hdr ({what})"),
            // Old iproute2: the super-packet counts below still tell.
            None => println!("{dev}: `ip -d link` does not show vnet_hdr"),
        }
    }

    // (1) Kernel ping A → B through the router (TTL 64 − 1). One ping first, until the
    // path answers (at most 5 s), then the counted ones.
    let warm = poll(Duration::from_secs(5), || {
        (ping(&a, B_ADDR, 1, "1").received == 1).then_some(())
    });
    assert!(warm.is_some(), "{what}: no ping reply within 5 s");
    let p = ping(&a, B_ADDR, 20, "2");
    assert_eq!((p.transmitted, p.received), (20, 20), "{what}: {}", p.text);
    assert!(p.ttls.iter().all(|&t| t == 63), "TTL 64 - 1: {}", p.text);
    println!("({what}) ping A -> B: {}", p.summary);

    // (2) curl in A fetches `bytes` from a server in B, byte for byte.
    let body: Arc<[u8]> = random_body(bytes, 7).into();
    let before = router.scrape();
    let (a_skbs, a_octets) = ip_received(&a);
    let server = serve_once(&b, 8080, Arc::clone(&body));
    let t = Instant::now();
    let got = curl_within(&a, &format!("http://{B_ADDR}:8080/blob"), &env.dir, 180);
    let took = t.elapsed();
    assert!(server.join().unwrap(), "the server answered one request");
    assert_eq!(got.len(), body.len(), "{what}: bytes fetched");
    if let Some(at) = got.iter().zip(body.iter()).position(|(x, y)| x != y) {
        panic!("{what}: the fetched bytes differ from the served ones at offset {at}");
    }
    println!(
        "({what}) curl A -> B: {} bytes match, {:.0} MB/s",
        got.len(),
        bytes as f64 / took.as_secs_f64() / 1e6
    );
    drop(got);

    // (3) How the data crossed: super-packets read from B's device, writes to A's.
    let after = router.scrape();
    let (a_skbs2, a_octets2) = ip_received(&a);
    let delta = |name: &str, link: &str| {
        link_counter(&after, name, link) - link_counter(&before, name, link)
    };
    let (frames, reads) = (delta("rx_frames", "b"), delta("rx_calls", "b"));
    let (skbs, octets) = (a_skbs2 - a_skbs, a_octets2 - a_octets);
    assert!(skbs > 0 && reads > 0, "{what}: nothing counted");
    let per_read = frames as f64 / reads as f64;
    let per_skb = octets / skbs;
    println!(
        "({what}) link b: {frames} packets in {reads} reads ({per_read:.1} a read); \
         A's kernel: {skbs} skbs of {per_skb} bytes on average"
    );
    if offload {
        // B's kernel sends TSO super-packets (up to 64 KiB, ~44 packets; smaller only if
        // the transfer crawls: TSO sizes follow the pacing rate) and the router's GRO
        // coalesces what it forwards: both far from one packet each.
        assert!(per_read >= 3.0, "{what}: {per_read:.1} packets a read");
        assert!(
            per_skb >= 3 * MTU,
            "{what}: A received skbs of {per_skb} bytes: writes not coalesced"
        );
    } else {
        assert_eq!(frames, reads, "{what}: one packet a read");
        assert!(per_skb <= MTU, "{what}: A received skbs of {per_skb} bytes");
    }
    for link in ["a", "b"] {
        assert_eq!(
            link_counter(&after, "tx_errors", link),
            0,
            "{what}: write errors on link {link}"
        );
        assert_eq!(
            value(
                &after,
                &format!("waist_link_rx_dropped_total{{link=\"{link}\",reason=\"offload\"}}")
            ),
            Some(0),
            "{what}: reads that could not be split on link {link}"
        );
    }

    assert!(
        env.terminate(router.pid, Duration::from_secs(5)),
        "the router stops cleanly"
    );
}
