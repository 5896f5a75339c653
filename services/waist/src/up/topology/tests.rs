//! The topology's tests: plans checked without starting anything.

use waist_router::config::RouterFile;

use super::*;

fn planned(text: &str) -> Result<Plan, ConfigError> {
    let source = Source::new("t.toml", text);
    let file: TopologyFile = source.parse()?;
    plan(&source, &file, Path::new("."))
}

fn config_of<'a>(p: &'a Plan, name: &str) -> &'a str {
    p.processes
        .iter()
        .find(|x| x.name == name)
        .and_then(|x| x.config.as_deref())
        .unwrap_or_default()
}

const LINE: &str = "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
                    [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
                    [[router]]\nname = \"r3\"\naddress = \"10.0.0.3\"\n\
                    [[link]]\nbetween = [\"r1\", \"r2\"]\n\
                    [[link]]\nbetween = [\"r2\", \"r3\"]\n\
                    [[link]]\nbetween = [\"r1\", \"r3\"]\ncost = 5\n\
                    [[host]]\nname = \"h3\"\naddress = \"10.3.0.1\"\nrouter = \"r3\"\n";

#[test]
fn without_dv_routes_follow_the_cheapest_first_hop() {
    let p = planned(LINE).unwrap();
    let r1: toml::Table = config_of(&p, "r1").parse().unwrap();
    let routes = r1["route"].as_array().unwrap();
    let via = |prefix: &str| {
        routes
            .iter()
            .find(|r| r["prefix"].as_str() == Some(prefix))
            .and_then(|r| r["link"].as_str())
    };
    // r1 → r2 → r3 costs 2, the direct link 5.
    assert_eq!(via("10.0.0.3/32"), Some("r2"));
    assert_eq!(via("10.3.0.1/32"), Some("r2"));
    assert_eq!(via("10.0.0.2/32"), Some("r2"));
    assert!(r1.get("dv").is_none());
    let links = r1["link"].as_array().unwrap();
    assert!(links.iter().all(|l| l.get("cost").is_none()), "{links:?}");
}

#[test]
fn with_dv_links_carry_costs_and_attached_prefixes_are_announced() {
    let p = planned(&format!("[defaults.router]\ndv = {{}}\n{LINE}")).unwrap();
    let r3: toml::Table = config_of(&p, "r3").parse().unwrap();
    let originate = r3["dv"]["originate"].as_array().unwrap();
    assert_eq!(originate, &vec![toml::Value::String("10.3.0.1/32".into())]);
    let r1: toml::Table = config_of(&p, "r1").parse().unwrap();
    let costs: Vec<_> = r1["link"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["cost"].as_integer())
        .collect();
    assert_eq!(costs, [Some(1), Some(5)]);
    // Only static routes to what is attached: r1 has nothing attached, so no routes (and
    // no empty `route` list either: the file is minimal).
    assert!(r1.get("route").is_none(), "{r1:?}");
    let r3_routes = r3["route"].as_array().unwrap();
    assert_eq!(r3_routes.len(), 1, "{r3_routes:?}");
    assert_eq!(r3_routes[0]["link"].as_str(), Some("h3"));
}

#[test]
fn ports_are_handed_out_in_file_order_per_machine() {
    let p = planned(&format!("[defaults]\nfirst_port = 30000\n{LINE}")).unwrap();
    let r1 = p.processes.iter().find(|x| x.name == "r1").unwrap();
    let ports: Vec<u16> = r1.links.iter().map(|l| l.local.port()).collect();
    // Links r1–r2 (30000/30001), r2–r3 (30002/30003), r1–r3 (30004/30005).
    assert_eq!(ports, [30000, 30004]);
    assert_eq!(p.hosts[0].local.port(), 30006);
    assert_eq!(p.hosts[0].peer.port(), 30007);
    assert_eq!(p.hosts[0].via(), "udp:127.0.0.1:30006=127.0.0.1:30007");
}

#[test]
fn errors_name_line_and_key() {
    let cases = [
        ("[[router]]\nname = \"r1\"\naddress = \"x\"\n", 3, "address"),
        (
            "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\nhost = \"nowhere\"\n",
            4,
            "host",
        ),
        (
            "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n[[router]]\nname = \"r1\"\naddress = \"10.0.0.2\"\n",
            5,
            "name",
        ),
        (
            "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n[[link]]\nbetween = [\"r1\", \"r1\"]\n",
            5,
            "between",
        ),
        (
            "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n[[link]]\nbetween = [\"r1\"]\n",
            5,
            "between",
        ),
        (
            "[[router]]\nname = \"r1\"\naddres = \"10.0.0.1\"\n",
            3,
            "addres",
        ),
    ];
    for (text, line, key) in cases {
        let e = planned(text).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (line, Some(key)), "{e}");
    }
}

#[test]
fn equal_costs_go_by_fewer_hops_then_the_link_listed_first() {
    // A square r1–r2–r3–r4–r1 and a two-hop detour r1–r5–r6–r3 of the same cost as
    // either side: r1's routes to r3 start on its first link (r2), not r4 nor r5.
    let text = "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
                [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
                [[router]]\nname = \"r3\"\naddress = \"10.0.0.3\"\n\
                [[router]]\nname = \"r4\"\naddress = \"10.0.0.4\"\n\
                [[router]]\nname = \"r5\"\naddress = \"10.0.0.5\"\n\
                [[router]]\nname = \"r6\"\naddress = \"10.0.0.6\"\n\
                [[link]]\nbetween = [\"r1\", \"r2\"]\ncost = 2\n\
                [[link]]\nbetween = [\"r2\", \"r3\"]\ncost = 2\n\
                [[link]]\nbetween = [\"r4\", \"r3\"]\ncost = 2\n\
                [[link]]\nbetween = [\"r1\", \"r4\"]\ncost = 2\n\
                [[link]]\nbetween = [\"r1\", \"r5\"]\n\
                [[link]]\nbetween = [\"r5\", \"r6\"]\n\
                [[link]]\nbetween = [\"r6\", \"r3\"]\ncost = 2\n";
    let p = planned(text).unwrap();
    let via = |router: &str, prefix: &str| {
        let f: RouterFile = toml::from_str(config_of(&p, router)).unwrap();
        f.route
            .into_iter()
            .find(|r| r.prefix.get_ref() == prefix)
            .and_then(|r| r.link)
            .map(|l| l.into_inner())
    };
    assert_eq!(via("r1", "10.0.0.3/32").as_deref(), Some("r2"));
    assert_eq!(via("r1", "10.0.0.6/32").as_deref(), Some("r5"));
    // r3's links in order: r2, r4, r6; r1 is as far over r2 as over r4.
    assert_eq!(via("r3", "10.0.0.1/32").as_deref(), Some("r2"));
    assert_eq!(via("r3", "10.0.0.5/32").as_deref(), Some("r6"));
}

/// A topology whose routers have every kind of section `waist up` writes.
const FULL: &str = r#"
[defaults.router]
dv = { update_ms = 500, originate = ["10.7.0.0/16"] }
esp = { rate = 1000, key_seed = 7, contexts = ["input", "central"] }
snap = { services = ["ess"], key_seed = 8, local_runs = 16 }

[[router]]
name = "r1"
address = "10.0.0.1"
route_cache = { log2 = 10 }

[[router]]
name = "r2"
address = "10.0.0.2"
dv = { update_ms = 700 }

[[link]]
between = ["r1", "r2"]
cost = 3
mtu = 1400
emulation = { delay_ms = 2, loss = 0.01, seed = 11 }

[[host]]
name = "h1"
address = "10.1.0.10"
router = "r1"

[[host]]
name = "h2"
address = "10.1.0.11"
router = "r2"
"#;

#[test]
fn a_written_router_config_parses_back_into_the_same_plan() {
    use waist_router::config::plan as router_plan;
    let source = Source::new("t.toml", FULL);
    let file: TopologyFile = source.parse().unwrap();
    let p = plan(&source, &file, Path::new(".")).unwrap();
    let mut planner = planner::Planner::new(&source, &file, Path::new("."));
    let routes = planner.draft().unwrap();
    for (i, name) in ["r1", "r2"].into_iter().enumerate() {
        let (built, text) = planner.router_config(i, &routes[i]).unwrap();
        assert_eq!(text, config_of(&p, name));
        let written = Source::new(format!("{name}.toml"), text.clone());
        let back: RouterFile = written.parse().unwrap();
        assert_eq!(back, built, "{text}");
        let (a, b) = (
            router_plan(&written, &built).unwrap(),
            router_plan(&written, &back).unwrap(),
        );
        assert_eq!(a.links, b.links);
        let strip = |mut p: waist_router::config::Plan| {
            p.links.clear();
            format!("{p:?}")
        };
        assert_eq!(strip(a), strip(b), "{text}");
    }
    // Minimal: no empty lists, no defaults, no absent options.
    let r1 = config_of(&p, "r1");
    assert!(
        !r1.contains("[]") && !r1.contains("icmp") && !r1.contains("lifetime_s"),
        "{r1}"
    );
    let back: RouterFile = toml::from_str(r1).unwrap();
    assert_eq!(back.node.name, "r1");
    assert_eq!(back.route_cache.map(|c| c.log2.into_inner()), Some(10));
    let dv = back.dv.unwrap().into_inner();
    assert_eq!(dv.update_ms, Some(500));
    let originate: Vec<_> = dv.originate.iter().map(|o| o.get_ref().as_str()).collect();
    assert_eq!(originate, ["10.7.0.0/16", "10.1.0.10/32"]);
    let link = &back.link[0];
    assert_eq!(link.cost.as_ref().map(|c| *c.get_ref()), Some(3));
    assert_eq!(link.mtu.as_ref().map(|m| *m.get_ref()), Some(1400));
    let emulation = *link.emulation.as_ref().unwrap().get_ref();
    assert_eq!(
        (emulation.delay_ms, emulation.loss, emulation.seed),
        (2.0, 0.01, Some(11))
    );
    let r2: RouterFile = toml::from_str(config_of(&p, "r2")).unwrap();
    assert_eq!(r2.dv.unwrap().get_ref().update_ms, Some(700));
}

/// Two routers and a link between them, with `link` appended to the `[[link]]` and `r1`
/// to the first router.
fn pair(r1: &str, link: &str) -> String {
    format!(
        "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n{r1}\
         [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
         [[link]]\nbetween = [\"r1\", \"r2\"]\n{link}"
    )
}

#[test]
fn link_settings_are_checked_in_the_topology() {
    let line_of = |text: &str, at: &str| text[..text.find(at).unwrap()].matches('\n').count() + 1;
    for (r1, link, key, at, message) in [
        (
            "",
            "emulation = { delay_ms = 5, loss = 2.0 }\n",
            "loss",
            "emulation",
            "emulation: must be a probability between 0 and 1",
        ),
        (
            "",
            "[link.emulation]\njitter_ms = 1\ndelay_ms = -3\n",
            "delay_ms",
            "delay_ms = -3",
            "emulation: must be a finite number of milliseconds ≥ 0",
        ),
        (
            "",
            "mtu = 40\n",
            "mtu",
            "mtu = 40",
            "MTU must be 68..=65535",
        ),
        (
            "",
            "cost = 0\n",
            "cost",
            "cost = 0",
            "a routing cost is at least 1",
        ),
        (
            "",
            "emulation = { los = 0.1 }\n",
            "los",
            "emulation",
            "did you mean `loss`?",
        ),
        (
            "",
            "betwen = 1\n",
            "betwen",
            "betwen",
            "did you mean `between`?",
        ),
        // A router's inline waist-router section: located where it is written.
        (
            "esp = { rat = 1000 }\n",
            "",
            "rat",
            "esp = ",
            "router `r1`: unknown field `rat`",
        ),
        (
            "esp = { rate = \"lots\" }\n",
            "",
            "rate",
            "esp = ",
            "router `r1`: invalid type",
        ),
    ] {
        let text = pair(r1, link);
        let e = planned(&text).unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (line_of(&text, at), Some(key)),
            "{e}"
        );
        assert!(e.to_string().starts_with("t.toml:"), "{e}");
        assert!(e.message.contains(message), "{e}");
    }
    let e = planned(&pair("esp = { rat = 1000 }\n", "")).unwrap_err();
    assert!(e.message.ends_with("did you mean `rate`?"), "{e}");
    // In `[defaults.router]`: located there.
    let text = format!(
        "[defaults.router]\ndv = {{ update_mss = 5 }}\n{}",
        pair("", "")
    );
    let e = planned(&text).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (2, Some("update_mss")), "{e}");
    assert!(e.message.ends_with("did you mean `update_ms`?"), "{e}");
}

#[test]
fn metrics_ports_follow_the_plan_order() {
    let addrs = |p: &Plan| -> Vec<String> {
        (0..p.processes.len())
            .map(|i| p.metrics_addr(i).to_string())
            .collect()
    };
    // Default: first_port + 1000, one port per process in plan order.
    let p = planned(&format!("[defaults]\nfirst_port = 30000\n{LINE}")).unwrap();
    assert_eq!(
        addrs(&p),
        ["127.0.0.1:31000", "127.0.0.1:31001", "127.0.0.1:31002"]
    );
    let p = planned(&format!("[defaults]\nmetrics_base = 9100\n{LINE}")).unwrap();
    assert_eq!(p.metrics_addr(0).to_string(), "127.0.0.1:9100");
    assert_eq!(p.metrics_addr(2).to_string(), "127.0.0.1:9102");
    // 0: the kernel picks, as before.
    let p = planned(&format!("[defaults]\nmetrics_base = 0\n{LINE}")).unwrap();
    assert_eq!(p.metrics_addr(1).to_string(), "127.0.0.1:0");
    // Past 65535: refused at the key.
    let e = planned(&format!("[defaults]\nmetrics_base = 65534\n{LINE}"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("t.toml:2:") && e.contains("metrics_base") && e.contains("65536"),
        "{e}"
    );
}

/// A line of `n` routers with distance vector, each link costing 1; `extra` goes into
/// `[defaults.router]`'s `dv`.
fn long_line(n: usize, extra: &str) -> String {
    let mut t = format!("[defaults.router]\ndv = {{ {extra} }}\n");
    for i in 1..=n {
        t += &format!(
            "[[router]]\nname = \"r{i}\"\naddress = \"10.0.{}.{}\"\n",
            i / 200,
            i % 200 + 1
        );
    }
    for i in 1..n {
        t += &format!("[[link]]\nbetween = [\"r{i}\", \"r{}\"]\n", i + 1);
    }
    t
}

#[test]
fn a_network_wider_than_distance_vectors_infinity_is_refused_with_its_path() {
    // 16 routers in a line: 15 hops, below the default infinity of 16.
    assert!(planned(&long_line(16, "")).is_ok());
    // 17: r1 → … → r17 costs 16, which is infinity: r1 would never learn r17.
    let text = long_line(17, "");
    let e = planned(&text).unwrap_err();
    let path: Vec<String> = (1..=17).map(|i| format!("r{i}")).collect();
    assert!(e.message.contains(&path.join(" → ")), "{e}");
    assert!(
        e.message.contains("costs 16, at or above its infinity 16"),
        "{e}"
    );
    assert!(e.message.contains("infinity = 32"), "{e}");
    // Located at the router that cannot reach: r1's name.
    let r1_line = text[..text.find("name = \"r1\"").unwrap()]
        .matches('\n')
        .count()
        + 1;
    assert_eq!((e.line, e.key.as_deref()), (r1_line, Some("name")), "{e}");
    // Raised in the topology, it plans, and every router's config carries it.
    let p = planned(&long_line(30, "infinity = 32")).unwrap();
    assert!(config_of(&p, "r30").contains("infinity = 32"));
    // Without distance vector nothing is refused: static routes have no infinity.
    let mut plain = long_line(30, "");
    plain = plain.replace("[defaults.router]\ndv = {  }\n", "");
    assert!(planned(&plain).is_ok());
}
