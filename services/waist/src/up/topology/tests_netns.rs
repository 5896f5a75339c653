//! The topology's netns hosts (`kind = "netns"`): planned as TUN links of their routers,
//! and refused where they cannot work. Nothing starts.

use super::*;

fn planned(text: &str) -> Result<Plan, ConfigError> {
    let source = Source::new("t.toml", text);
    let file: TopologyFile = source.parse()?;
    plan(&source, &file, Path::new("."))
}

fn config_of(p: &Plan, name: &str) -> toml::Table {
    p.processes
        .iter()
        .find(|x| x.name == name)
        .and_then(|x| x.config.as_deref())
        .unwrap_or_default()
        .parse()
        .unwrap()
}

/// r1 – r2 – r3, h1 a namespace on r1, h3 a UDP host on r3.
fn line(dv: bool, h1: &str) -> String {
    format!(
        "{}[defaults]\nfirst_port = 30000\n\
         [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
         [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
         [[router]]\nname = \"r3\"\naddress = \"10.0.0.3\"\n\
         [[link]]\nbetween = [\"r1\", \"r2\"]\n\
         [[link]]\nbetween = [\"r2\", \"r3\"]\n\
         [[host]]\nname = \"h1\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\n{h1}\n\
         [[host]]\nname = \"h3\"\naddress = \"10.3.0.1\"\nrouter = \"r3\"\n",
        if dv {
            "[defaults.router]\ndv = {}\n"
        } else {
            ""
        }
    )
}

#[test]
fn a_netns_host_is_a_tun_link_that_its_router_routes_and_announces() {
    let p = planned(&line(true, "kind = \"netns\"")).unwrap();
    let device = format!("wh{}-0", std::process::id());
    assert!(device.len() <= 15, "{device}");
    assert_eq!(
        p.netns,
        [NetnsHost {
            name: "h1".into(),
            address: "10.1.0.10".parse().unwrap(),
            router: "r1".into(),
            router_address: "10.0.0.1".parse().unwrap(),
            machine: LOCAL.into(),
            namespace: "waist-t-h1".into(),
            device: device.clone(),
        }]
    );
    // Only h3 is a UDP host, and h1 took no UDP port: h3 gets the ports right after the
    // two links' four.
    assert_eq!(p.hosts.len(), 1);
    assert_eq!(p.hosts[0].local.port(), 30004);
    let r1 = config_of(&p, "r1");
    let tun = r1["link"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"].as_str() == Some("h1"))
        .unwrap_or_else(|| panic!("no link h1: {r1:?}"));
    assert_eq!(tun["kind"].as_str(), Some("tun"));
    assert_eq!(tun["device"].as_str(), Some(device.as_str()));
    assert!(
        tun.get("local").is_none() && tun.get("peer").is_none(),
        "{tun:?}"
    );
    let route = &r1["route"].as_array().unwrap()[0];
    assert_eq!(
        (route["prefix"].as_str(), route["link"].as_str()),
        (Some("10.1.0.10/32"), Some("h1"))
    );
    let originate = r1["dv"]["originate"].as_array().unwrap();
    assert_eq!(originate, &vec![toml::Value::String("10.1.0.10/32".into())]);
    // The TUN link is the router's, not a UDP port to check or bind.
    let r1p = p.processes.iter().find(|x| x.name == "r1").unwrap();
    assert!(r1p.links.iter().all(|l| l.name != "h1"), "{:?}", r1p.links);
}

#[test]
fn without_dv_the_other_routers_route_to_a_netns_host() {
    let p = planned(&line(false, "kind = \"netns\"")).unwrap();
    let r3 = config_of(&p, "r3");
    let to_h1 = r3["route"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["prefix"].as_str() == Some("10.1.0.10/32"))
        .unwrap_or_else(|| panic!("no route to h1: {r3:?}"));
    assert_eq!(to_h1["link"].as_str(), Some("r2"));
}

#[test]
fn udp_is_the_default_kind_and_others_are_refused_where_written() {
    let p = planned(&line(false, "kind = \"udp\"")).unwrap();
    assert!(p.netns.is_empty());
    assert_eq!(p.hosts.len(), 2);
    let e = planned(&line(false, "kind = \"tap\"")).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (20, Some("kind")), "{e}");
    assert!(
        e.message.contains("kind `tap`")
            && e.message.contains("`udp`")
            && e.message.contains("`netns`"),
        "{e}"
    );
}

/// Two machines, r1 on alpha, r2 on beta; h2 a namespace on r2 with `extra` keys.
fn two_machines(extra: &str) -> String {
    "[[machine]]\nname = \"alpha\"\nip = \"127.0.0.2\"\n\
     [[machine]]\nname = \"beta\"\nip = \"127.0.0.3\"\n\
     [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\nhost = \"alpha\"\n\
     [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\nhost = \"beta\"\n\
     [[link]]\nbetween = [\"r1\", \"r2\"]\n\
     [[host]]\nname = \"h2\"\naddress = \"10.2.0.10\"\nrouter = \"r2\"\nkind = \"netns\"\n"
        .to_string()
        + extra
}

#[test]
fn a_netns_host_is_on_its_routers_machine_and_another_is_refused() {
    // Without `host` it is on beta, r2's machine, so `waist up --only beta` makes it.
    let p = planned(&two_machines("")).unwrap();
    assert_eq!(p.netns[0].machine, "beta");
    assert!(planned(&two_machines("host = \"beta\"\n")).is_ok());
    let e = planned(&two_machines("host = \"alpha\"\n")).unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (22, Some("host")), "{e}");
    assert!(
        e.message
            .contains("router `r2`'s machine `beta`, not `alpha`")
            && e.message.contains("cannot cross machines"),
        "{e}"
    );
}

#[test]
fn a_run_name_that_cannot_name_a_namespace_is_refused() {
    let e = planned(&format!(
        "name = \"my run\"\n{}",
        line(false, "kind = \"netns\"")
    ))
    .unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (21, Some("kind")), "{e}");
    assert!(e.message.contains("`my run` cannot name"), "{e}");
    // A UDP host does not care.
    assert!(planned(&format!("name = \"my run\"\n{}", line(false, ""))).is_ok());
}
