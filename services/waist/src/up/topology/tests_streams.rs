//! `[[stream]]` and `stream_host` in a topology: what the routers' configs and the plan get.

use super::*;

fn planned(text: &str) -> Result<Plan, ConfigError> {
    let source = Source::new("t.toml", text);
    let file: TopologyFile = source.parse()?;
    plan(&source, &file, Path::new("."))
}

const NET: &str = "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
                   [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\nstream_host = \"10.9.0.10\"\n\
                   streams = { rate_pps = 200000 }\n\
                   [[link]]\nbetween = [\"r1\", \"r2\"]\n\
                   [[host]]\nname = \"h1\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\n\
                   [[host]]\nname = \"h2\"\naddress = \"10.3.0.10\"\nrouter = \"r2\"\n";

#[test]
fn a_stream_is_deployed_on_its_router_with_its_hosts_addresses() {
    let p = planned(&format!(
        "{NET}[[stream]]\nid = 7\nrouter = \"r2\"\nto = [\"h1\", \"h2\", \"10.5.0.1:9000\"]\n\
         handlers = \"fields flight | multicast 0=status==2 1=all 2=all\"\n"
    ))
    .unwrap();
    let r2 = p.processes.iter().find(|x| x.name == "r2").unwrap();
    let text = r2.config.as_deref().unwrap();
    let f: toml::Table = text.parse().unwrap();
    assert_eq!(f["streams"]["host"].as_str(), Some("10.9.0.10"));
    assert_eq!(f["streams"]["rate_pps"].as_integer(), Some(200_000));
    let spec = f["stream"][0]["spec"].as_str().unwrap();
    assert!(
        spec.starts_with("to 10.1.0.10:7400 10.3.0.10:7400 10.5.0.1:9000 | fields flight"),
        "{spec}"
    );
    // The stream host: a process linked to r2, which routes and announces its address.
    let sh = p.processes.iter().find(|x| x.name == "r2-streams").unwrap();
    assert_eq!(sh.role, Role::Router);
    let host: toml::Table = sh.config.as_deref().unwrap().parse().unwrap();
    assert_eq!(host["streams"]["admission"].as_bool(), Some(false));
    assert_eq!(host["node"]["addresses"][0].as_str(), Some("10.9.0.10"));
    assert_eq!(
        sh.links[0].peer,
        r2.links
            .iter()
            .find(|l| l.name == "r2-streams")
            .unwrap()
            .local
    );
    assert!(
        f["route"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["prefix"].as_str() == Some("10.9.0.10/32"))
    );
    // r1 has no [streams].
    let r1: toml::Table = p.processes[0].config.as_deref().unwrap().parse().unwrap();
    assert!(r1.get("streams").is_none());
}

#[test]
fn stream_errors_are_located_in_the_topology() {
    for (extra, line, what) in [
        (
            "[[stream]]\nid = 1\nrouter = \"r9\"\nto = [\"h1\"]\n",
            21,
            "no [[router]] named `r9`",
        ),
        (
            "[[stream]]\nid = 1\nrouter = \"r1\"\nto = [\"h7\"]\n",
            22,
            "neither a [[host]] nor ADDR:PORT",
        ),
        (
            "[[stream]]\nid = 1\nrouter = \"r1\"\nto = []\n",
            22,
            "at least one destination",
        ),
        (
            "[[stream]]\nid = 1\nrouter = \"r1\"\nto = [\"h1\"]\nhandlers = \"multicast 3=all\"\n",
            23,
            "past the `to` list",
        ),
        (
            "[[stream]]\nid = 1\nrouter = \"r1\"\nto = [\"h1\"]\n[[stream]]\nid = 1\nrouter = \"r1\"\nto = [\"h2\"]\n",
            24,
            "twice",
        ),
    ] {
        let e = planned(&format!("{NET}{extra}")).unwrap_err().to_string();
        assert!(e.contains(&format!("t.toml:{line}:")), "{extra}: {e}");
        assert!(e.contains(what), "{extra}: {e}");
    }
    let bad = NET.replace("rate_pps = 200000", "rate_pps = 0");
    let e = planned(&bad).unwrap_err().to_string();
    assert!(e.contains("t.toml:8:") && e.contains("packet rate"), "{e}");
}
