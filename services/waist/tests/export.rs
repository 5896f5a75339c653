//! `waist up FILE --export containerlab DIR`: the shipped topologies exported and compared
//! byte for byte with `tests/golden/export/` (run with `UPDATE_GOLDEN=1` to rewrite the
//! golden files after a deliberate change, then read the diff), every lab file checked
//! against containerlab's schema (`tests/clab/`, with `check-jsonschema`), every router
//! config by `waist-router --check`; and each thing the export cannot express refused,
//! located at what the author wrote.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{WAIST, ensure_daemons, text};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn scratch(name: &str) -> PathBuf {
    support::scratch(&format!("export-{name}"))
}

/// `waist up TOPOLOGY --export containerlab out`, run in `dir`.
fn export(dir: &Path, topology: &str) -> Output {
    Command::new(WAIST)
        .current_dir(dir)
        .args(["up", topology, "--export", "containerlab", "out"])
        .output()
        .unwrap()
}

/// Every file under `dir`, relative to it, sorted.
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeSet<PathBuf>) {
        for e in std::fs::read_dir(at).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// Compares everything the export wrote into `out` (key files aside: fresh secrets), and
/// its output `stdout`, with `tests/golden/export/NAME/`; rewrites that with
/// `UPDATE_GOLDEN=1`.
fn compare_with_golden(name: &str, out: &Path, stdout: &str) {
    let golden = Path::new(MANIFEST).join("tests/golden/export").join(name);
    let written: BTreeSet<PathBuf> = files(out)
        .into_iter()
        .filter(|p| p.extension().is_none_or(|e| e != "key"))
        .collect();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&golden);
        for f in &written {
            let to = golden.join("files").join(f);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(out.join(f), to).unwrap();
        }
        std::fs::write(golden.join("stdout.txt"), stdout).unwrap();
        eprintln!("UPDATE_GOLDEN: rewrote {}", golden.display());
        return;
    }
    let expected = files(&golden.join("files"));
    assert_eq!(
        written,
        expected,
        "the files written differ from {} (UPDATE_GOLDEN=1 rewrites it)",
        golden.display()
    );
    for f in &written {
        let got = std::fs::read(out.join(f)).unwrap();
        let want = std::fs::read(golden.join("files").join(f)).unwrap();
        assert!(
            got == want,
            "{} differs from the golden file:\n{}",
            f.display(),
            String::from_utf8_lossy(&got)
        );
    }
    let want = std::fs::read_to_string(golden.join("stdout.txt")).unwrap();
    assert_eq!(stdout, want, "the export's output differs from stdout.txt");
}

/// Checks each `.clab.yml` in `out` against containerlab's schema: `check-jsonschema`
/// must be installed when `CI` is set; elsewhere its absence is a printed skip.
fn valid_against_schema(out: &Path) {
    let schema = Path::new(MANIFEST).join("tests/clab/clab.schema.json");
    let labs: Vec<PathBuf> = files(out)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".clab.yml"))
        .map(|p| out.join(p))
        .collect();
    assert!(!labs.is_empty(), "no lab file in {}", out.display());
    for lab in labs {
        let run = Command::new("check-jsonschema")
            .arg("--schemafile")
            .arg(&schema)
            .arg(&lab)
            .output();
        match run {
            Ok(o) => assert!(
                o.status.success(),
                "{} is not valid against containerlab's schema:\n{}",
                lab.display(),
                text(&o)
            ),
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!(
                    "skipped: check-jsonschema not found ({e}): `pip install check-jsonschema` \
                     to check {} against containerlab's schema",
                    lab.display()
                );
            }
            Err(e) => panic!("check-jsonschema is required in CI: {e}"),
        }
    }
}

/// `waist-router --check` accepts every router config in `out`.
fn routers_accept_their_configs(out: &Path) {
    ensure_daemons();
    let router = Path::new(WAIST).with_file_name("waist-router");
    let configs: Vec<PathBuf> = files(out)
        .into_iter()
        .filter(|p| p.ends_with("router.toml"))
        .collect();
    assert!(!configs.is_empty(), "no router config in {}", out.display());
    for c in configs {
        let o = Command::new(&router)
            .arg("--check")
            .arg("--config")
            .arg(out.join(&c))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", c.display(), text(&o));
    }
}

/// Copies the shipped topology `name` into `dir` (with a site beside it, as `waist demo`
/// makes one), so that the export names it as `name`.
fn shipped(dir: &Path, name: &str) {
    let from = Path::new(MANIFEST)
        .join("../../examples/topologies")
        .join(name);
    std::fs::copy(from, dir.join(name)).unwrap();
    std::fs::create_dir_all(dir.join("site/docs")).unwrap();
    std::fs::write(dir.join("site/index.html"), "<h1>waist</h1>\n").unwrap();
    std::fs::write(dir.join("site/docs/a.txt"), "a\n").unwrap();
}

#[test]
fn the_demo_topology_exports_as_its_golden_files() {
    let d = scratch("demo");
    shipped(&d, "demo.toml");
    let o = export(&d, "demo.toml");
    assert!(o.status.success(), "{}", text(&o));
    let out = d.join("out");
    compare_with_golden("demo", &out, &String::from_utf8_lossy(&o.stdout));
    valid_against_schema(&out);
    routers_accept_their_configs(&out);
    // The replicas share one key file: a trickles-web secret.
    let k1 = std::fs::read_to_string(out.join("demo/web-1/web.key")).unwrap();
    let k2 = std::fs::read_to_string(out.join("demo/web-2/web.key")).unwrap();
    assert_eq!(k1, k2, "the replicas' keys differ");
    let secret = k1.lines().find(|l| !l.starts_with('#')).unwrap();
    assert!(secret.len() == 32 && secret.chars().all(|c| c.is_ascii_hexdigit()));
    // Exported again, the lab keeps its key.
    let o = export(&d, "demo.toml");
    assert!(o.status.success(), "{}", text(&o));
    let again = std::fs::read_to_string(out.join("demo/web-1/web.key")).unwrap();
    assert_eq!(again, k1, "a second export changed the key");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_topology_on_two_machines_exports_one_file_per_machine_joined_by_vxlan() {
    let d = scratch("two");
    shipped(&d, "two-machines.toml");
    let o = export(&d, "two-machines.toml");
    assert!(o.status.success(), "{}", text(&o));
    let out = d.join("out");
    compare_with_golden("two-machines", &out, &String::from_utf8_lossy(&o.stdout));
    valid_against_schema(&out);
    routers_accept_their_configs(&out);
    // Both machines' files give each tunnel the same VNI, each pointing at the other.
    let alpha = std::fs::read_to_string(out.join("pair-alpha.clab.yml")).unwrap();
    let beta = std::fs::read_to_string(out.join("pair-beta.clab.yml")).unwrap();
    for vni in ["vni: 1\n", "vni: 2\n"] {
        assert!(alpha.contains(vni) && beta.contains(vni), "{vni}");
    }
    assert!(alpha.contains("remote: \"192.168.1.11\"") && !alpha.contains("192.168.1.10\""));
    assert!(beta.contains("remote: \"192.168.1.10\"") && !beta.contains("192.168.1.11\""));
    let _ = std::fs::remove_dir_all(&d);
}

/// Exports `topology` (written to `dir/t.toml`), expects a refusal, returns its message.
fn refused(dir: &Path, topology: &str) -> String {
    std::fs::write(dir.join("t.toml"), topology).unwrap();
    let o = export(dir, "t.toml");
    assert!(
        !o.status.success(),
        "exported what it should refuse:\n{}",
        text(&o)
    );
    assert!(!dir.join("out").exists(), "a refused export wrote files");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const TWO_ROUTERS: &str = "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
                           [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
                           [[link]]\nbetween = [\"r1\", \"r2\"]\n";

#[test]
fn a_router_config_file_with_its_own_link_is_refused_in_that_file() {
    let d = scratch("own-link");
    std::fs::write(
        d.join("r1.toml"),
        "[snap]\n\n[[link]]\nname = \"lan\"\non = \"tun:wr1,10.1.0.1/24\"\n",
    )
    .unwrap();
    let topology = TWO_ROUTERS.replacen(
        "address = \"10.0.0.1\"\n",
        "address = \"10.0.0.1\"\nconfig = \"r1.toml\"\n",
        1,
    );
    let e = refused(&d, &topology);
    assert!(e.contains("r1.toml:3:1: key `link`: router `r1`"), "{e}");
    assert!(e.contains("cannot carry a router's own [[link]]s"), "{e}");
    assert!(e.contains("t.toml:4)"), "names the topology's line: {e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_link_in_defaults_router_is_refused_at_it() {
    let d = scratch("defaults-link");
    let topology = format!(
        "[defaults.router]\nsnap = {{}}\nlink = [{{ name = \"x\", on = \"udp:127.0.0.1:9\" }}]\n{TWO_ROUTERS}"
    );
    let e = refused(&d, &topology);
    assert!(e.contains("t.toml:3:"), "{e}");
    assert!(e.contains("cannot carry a router's own [[link]]s"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn more_links_than_the_address_pool_holds_are_refused_at_the_first_too_many() {
    let d = scratch("pool");
    // One router and 32769 hosts: 32769 links, one more than 172.31.0.0/16's /31s.
    let mut t = String::from("[[router]]\nname = \"r\"\naddress = \"10.0.0.1\"\n");
    for i in 0..32_769u32 {
        t += &format!(
            "[[host]]\nname = \"h{i}\"\naddress = \"10.{}.{}.{}\"\nrouter = \"r\"\n",
            1 + i / 65_536,
            (i / 256) % 256,
            i % 256
        );
    }
    let e = refused(&d, &t);
    // The last host's name, on line 3 + 4 * 32768 + 2.
    let line = 3 + 4 * 32_768 + 2;
    assert!(e.contains(&format!("t.toml:{line}:")), "{e}");
    assert!(e.contains("at most 32768 links"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn names_containerlab_refuses_are_refused_at_them() {
    let d = scratch("names");
    let e = refused(&d, &TWO_ROUTERS.replace("\"r2\"", "\"_r2\""));
    assert!(e.contains("t.toml:5:8") && e.contains("`_r2` cannot name a containerlab node"));
    let e = refused(&d, &format!("name = \"my lab\"\n{TWO_ROUTERS}"));
    assert!(
        e.contains("t.toml:1:8") && e.contains("cannot name a containerlab lab"),
        "{e}"
    );
    let machine = "[[machine]]\nname = \"al/pha\"\nip = \"192.168.1.10\"\n";
    let e = refused(&d, &format!("{machine}{TWO_ROUTERS}"));
    assert!(
        e.contains("t.toml:2:8") && e.contains("cannot name an exported file"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_machine_a_tunnel_cannot_reach_is_refused_at_its_address() {
    let d = scratch("loopback");
    let t = "[[machine]]\nname = \"alpha\"\nip = \"127.0.0.2\"\n\
             [[machine]]\nname = \"beta\"\nip = \"192.168.1.11\"\n\
             [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\nhost = \"alpha\"\n\
             [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\nhost = \"beta\"\n\
             [[link]]\nbetween = [\"r1\", \"r2\"]\n";
    let e = refused(&d, t);
    assert!(
        e.contains("t.toml:3:6") && e.contains("VXLAN tunnel"),
        "{e}"
    );
    // The default machine, its address not written: at the node on it.
    let t = "[[machine]]\nname = \"beta\"\nip = \"192.168.1.11\"\n\
             [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
             [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\nhost = \"beta\"\n\
             [[link]]\nbetween = [\"r1\", \"r2\"]\n";
    let e = refused(&d, t);
    assert!(
        e.contains("t.toml:5:8") && e.contains("[defaults] ip"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_site_the_export_cannot_copy_and_a_node_named_like_it_are_refused() {
    let d = scratch("site");
    std::fs::create_dir_all(d.join("site")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", d.join("site/link")).unwrap();
    let server =
        "[[server]]\nname = \"web\"\naddress = \"10.2.0.80\"\nroot = \"site\"\nrouter = \"r1\"\n";
    let e = refused(&d, &format!("{TWO_ROUTERS}{server}"));
    assert!(
        e.contains("t.toml:12:8") && e.contains("link is a symbolic link"),
        "{e}"
    );
    std::fs::remove_file(d.join("site/link")).unwrap();
    let host = "[[host]]\nname = \"site-web\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\n";
    let e = refused(&d, &format!("{TWO_ROUTERS}{server}{host}"));
    assert!(
        e.contains("t.toml:15:8") && e.contains("server `web`'s site"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_unknown_format_is_refused() {
    let d = scratch("format");
    std::fs::write(d.join("t.toml"), TWO_ROUTERS).unwrap();
    let o = Command::new(WAIST)
        .current_dir(&d)
        .args(["up", "t.toml", "--export", "netlab", "out"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        text(&o).contains("the one format is `containerlab`"),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_namespace_host_exports_as_a_container_like_any_host() {
    let d = scratch("netns");
    let t = "name = \"ns\"\n\
             [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
             [[host]]\nname = \"h1\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\nkind = \"netns\"\n";
    std::fs::write(d.join("ns.toml"), t).unwrap();
    let o = export(&d, "ns.toml");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lab = std::fs::read_to_string(d.join("out").join("ns.clab.yml")).unwrap();
    assert!(
        lab.contains("    \"h1\":\n") && lab.contains("\"WAIST_VIA\""),
        "{lab}"
    );
    let router = std::fs::read_to_string(d.join("out/ns/r1/router.toml")).unwrap();
    // Its router reaches it over the veth, not a TUN device that would move into a namespace.
    assert!(
        !router.contains("tun") && router.contains("name = \"h1\"\nkind = \"udp\""),
        "{router}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
