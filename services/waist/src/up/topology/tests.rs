//! The topology's tests: plans checked without starting anything.

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
    // Only static routes to what is attached.
    assert!(r1["route"].as_array().unwrap().is_empty());
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
fn first_hops_on_a_square() {
    // 0–1 (1), 1–2 (1), 0–3 (1), 3–2 (5).
    let g = vec![
        vec![(1, 1), (3, 1)],
        vec![(0, 1), (2, 1)],
        vec![(1, 1), (3, 5)],
        vec![(0, 1), (2, 5)],
    ];
    assert_eq!(first_hops(&g, 0), [None, Some(1), Some(1), Some(3)]);
    assert_eq!(first_hops(&g, 3), [Some(0), Some(0), Some(0), None]);
    let lonely = vec![vec![], vec![]];
    assert_eq!(first_hops(&lonely, 0), [None, None]);
}
