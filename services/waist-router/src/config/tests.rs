//! The config's checks: a good file, located errors, defaults and write-back.

use super::*;

fn plan_of(text: &str) -> Result<Plan, ConfigError> {
    let s = Source::new("r1.toml", text);
    let f: RouterFile = s.parse()?;
    plan(&s, &f)
}

const GOOD: &str = r#"
[node]
name = "r1"
addresses = ["10.0.0.1"]

[esp]
rate = 1000
key_seed = 1

[snap]
services = ["ess"]
key_seed = 2

[dv]
originate = ["10.1.0.0/16"]

[[link]]
name = "a"
kind = "udp"
local = "127.0.0.1:0"
peer = "127.0.0.1:9"
cost = 1

[[route]]
prefix = "10.9.0.0/16"
link = "a"
"#;

#[test]
fn a_good_file_plans() {
    let p = plan_of(GOOD).unwrap();
    assert_eq!(p.name, "r1");
    assert!(p.node.esp.is_some() && p.node.snap && p.node.dv.is_some());
    assert!(p.node.snap_ess.is_some());
    let only =
        plan_of(&GOOD.replace("key_seed = 1", "key_seed = 1\ncontexts = [\"central\"]")).unwrap();
    assert_eq!(only.node.esp.unwrap().sites, esp_proto::wire::Loc::CENTRAL);
    let e = plan_of(&GOOD.replace("key_seed = 1", "key_seed = 1\ncontexts = [\"middle\"]"))
        .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("contexts"), "{e}");
    assert_eq!(p.node.ifaces[0].dv_cost, Some(1));
    assert_eq!(p.node.routes.len(), 1);
    assert_eq!(p.node.routes[0].1, vec![0]);
    assert_eq!(p.node.originate.len(), 1);
}

#[test]
fn errors_are_located() {
    let e = plan_of(&GOOD.replace("link = \"a\"", "link = \"b\"")).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (26, Some("link")), "{e}");
    assert!(e.message.contains("no [[link]] named `b`"));
    let e = plan_of(&GOOD.replace("10.9.0.0/16", "10.9.0.1/16")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("prefix"), "{e}");
    let e = plan_of(&GOOD.replace("rate = 1000", "rate = \"lots\"")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("rate"), "{e}");
    let e = plan_of(&GOOD.replace("[snap]", "[snap]\nturbo = true")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("turbo"), "{e}");
    let e = plan_of(&GOOD.replace("services = [\"ess\"]", "services = [\"dns\"]")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("services"), "{e}");
    assert!(e.message.contains("unknown SNAP service `dns`"), "{e}");
}

#[test]
fn dv_router_id_defaults_to_the_first_ipv4_address_and_is_needed_without_one() {
    let p = plan_of(&GOOD.replace("[\"10.0.0.1\"]", "[\"fd00::1\", \"10.0.0.7\"]")).unwrap();
    assert_eq!(p.node.dv.unwrap().id, u32::from_be_bytes([10, 0, 0, 7]));
    let v6 = GOOD
        .replace("[\"10.0.0.1\"]", "[\"fd00::1\"]")
        .replace("[snap]\nservices = [\"ess\"]\nkey_seed = 2\n", "");
    let e = plan_of(&v6).unwrap_err();
    let dv_line = v6.lines().position(|l| l == "[dv]").unwrap() + 1;
    assert_eq!((e.line, e.key.as_deref()), (dv_line, Some("dv")), "{e}");
    assert!(e.message.contains("router_id"), "{e}");
    let named = v6.replace("[dv]\n", "[dv]\nrouter_id = \"1.1.1.1\"\n");
    let p = plan_of(&named).unwrap();
    assert_eq!(p.node.dv.unwrap().id, 0x0101_0101);
    // An explicit id wins over the address.
    let p = plan_of(&GOOD.replace("[dv]\n", "[dv]\nrouter_id = \"9.9.9.9\"\n")).unwrap();
    assert_eq!(p.node.dv.unwrap().id, 0x0909_0909);
    let e = plan_of(&named.replace("1.1.1.1", "fd00::1")).unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (dv_line + 1, Some("router_id")),
        "{e}"
    );
}

#[test]
fn dv_infinity_is_settable_and_bounds_link_costs() {
    assert_eq!(plan_of(GOOD).unwrap().node.dv.unwrap().infinity, 16);
    let wide = GOOD.replace("[dv]\n", "[dv]\ninfinity = 64\n");
    assert_eq!(plan_of(&wide).unwrap().node.dv.unwrap().infinity, 64);
    let e = plan_of(&GOOD.replace("[dv]\n", "[dv]\ninfinity = 1\n")).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (15, Some("infinity")), "{e}");
    let e = plan_of(&wide.replace("cost = 1\n", "cost = 64\n")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("cost"), "{e}");
    assert!(e.message.contains("infinity (64"), "{e}");
    assert!(plan_of(&wide.replace("cost = 1\n", "cost = 63\n")).is_ok());
}

#[test]
fn links_in_the_one_notation_and_a_peer_required() {
    let two = GOOD.replace(
        "cost = 1\n",
        "cost = 1\n\n[[link]]\nname = \"b\"\non = \"udp:127.0.0.1:0=127.0.0.1:9\"\n",
    );
    let p = plan_of(&two.replace("link = \"a\"", "links = [\"b\", \"a\"]")).unwrap();
    assert_eq!(p.node.routes[0].1, vec![1, 0]);
    let e = plan_of(&two.replace("=127.0.0.1:9", "")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("on"), "{e}");
    assert!(e.message.contains("needs its peer"), "{e}");
    let e = plan_of(&two.replace("=127.0.0.1:9", "=nowhere")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("on"), "{e}");
    assert!(e.message.contains("peer `nowhere`"), "{e}");
    let e = plan_of(&two.replace("on = ", "kind = \"udp\"\non = ")).unwrap_err();
    assert!(e.message.contains("not both"), "{e}");
}

#[test]
fn routes_with_backups() {
    let two = GOOD.replace(
        "cost = 1\n",
        "cost = 1\n\n[[link]]\nname = \"b\"\nkind = \"udp\"\nlocal = \"127.0.0.1:0\"\npeer = \"127.0.0.1:9\"\nholddown_ms = 50\n",
    );
    let p = plan_of(&two.replace("link = \"a\"", "links = [\"b\", \"a\"]")).unwrap();
    assert_eq!(p.node.routes[0].1, vec![1, 0]);
    let line_of =
        |text: &str, key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    let bad = two.replace("link = \"a\"", "links = [\"a\", \"c\"]");
    let e = plan_of(&bad).unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (line_of(&bad, "links"), Some("links")),
        "{e}"
    );
    assert!(e.message.contains("no [[link]] named `c`"), "{e}");
    let e = plan_of(&two.replace("link = \"a\"", "links = [\"a\", \"a\"]")).unwrap_err();
    assert!(e.message.contains("listed twice"), "{e}");
    let e = plan_of(&two.replace("link = \"a\"", "links = []")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("links"), "{e}");
    let e = plan_of(&two.replace("link = \"a\"", "link = \"a\"\nlinks = [\"b\"]")).unwrap_err();
    assert!(e.message.contains("not both"), "{e}");
    let e = plan_of(&two.replace("link = \"a\"", "")).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("prefix"), "{e}");
    let again = format!("{two}\n[[route]]\nprefix = \"10.9.0.0/16\"\nlink = \"b\"\n");
    let e = plan_of(&again).unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (again.lines().count() - 1, Some("prefix")),
        "{e}"
    );
    assert!(e.message.contains("a second [[route]]"), "{e}");
}

#[test]
fn a_file_writes_back_minimal_and_reads_back_the_same() {
    let s = Source::new("r1.toml", GOOD);
    let f: RouterFile = s.parse().unwrap();
    let text = toml::to_string(&f).unwrap();
    let back: RouterFile = toml::from_str(&text).unwrap();
    assert_eq!(back, f, "{text}");
    // Defaults and absent options are not written.
    for absent in [
        "icmp",
        "lifetime_s",
        "shards",
        "local_runs",
        "ess_rate",
        "group",
    ] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
}
