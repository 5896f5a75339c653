//! The exported demo topology carried out with Docker exactly as containerlab carries out
//! `kind: linux` nodes (containerlab itself is not installable here), then used.
//!
//! ```text
//!  private dockerd (--iptables=false --bridge=none, /tmp/waist-docker-PID)   docker.rs
//!  waist image --bins <this test's binaries>  ─► waist:latest
//!  waist up demo.toml --export containerlab DIR ─► DIR/demo.clab.yml
//!  per node: docker create --network none -e CLAB_INTFS=N -e … -v … waist:latest CMD; start
//!  per link: a veth pair, each end moved into its container, renamed, addressed   lab.rs
//!  then: every router holds every route (its /api/status, read inside its container);
//!        from h1 (docker exec): waist snap ping, waist esp send COUNT, trickles-get of a
//!        site file, byte for byte
//! ```
//!
//! `WAIST_IMAGE_BINS=DIR` builds the image from the binaries in DIR instead (the static
//! release build: `target/x86_64-unknown-linux-gnu/release`).
//!
//! Root only, with `dockerd`, `docker`, `ip` and `nsenter` in PATH; elsewhere it says why
//! and passes, except under CI (`CI` set), where a missing dockerd fails it (`.ci/run`
//! installs docker.io). Everything it made (containers, image, veths, the daemon and its
//! directory) is removed when it ends, on failure too.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "containerlab/docker.rs"]
mod docker;
#[path = "containerlab/lab.rs"]
mod lab;
mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use docker::Docker;
use support::WAIST;

/// The file fetched with trickles-get: 300 kB that do not compress.
fn blob() -> Vec<u8> {
    use std::io::Read;
    let mut blob = Vec::new();
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .take(300_000)
        .read_to_end(&mut blob)
        .unwrap();
    blob
}

fn text(o: &Output) -> String {
    support::text(o)
}

/// The prefixes a router announces or owns: its `[node] addresses` (as /32) and its
/// `[dv] originate`.
fn announced(config: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let t: toml::Table = toml::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
    let own: BTreeSet<String> = t["node"]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{}/32", a.as_str().unwrap()))
        .collect();
    let originate = t
        .get("dv")
        .and_then(|dv| dv.get("originate"))
        .and_then(|o| o.as_array())
        .map(|o| o.iter().map(|p| p.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    (own, originate)
}

/// The prefixes in `docker exec C waist route show --metrics 127.0.0.1:9100 --json`.
fn routes(docker: &Docker, node: &str) -> Result<BTreeSet<String>, String> {
    let c = lab::container(node);
    let out = docker
        .cmd(&["exec", &c, "waist", "route", "show"])
        .args(["--metrics", "127.0.0.1:9100", "--json"])
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(text(&out));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(v["routes"]
        .as_array()
        .ok_or("no routes")?
        .iter()
        .filter_map(|r| r["prefix"].as_str().map(String::from))
        .collect())
}

#[test]
fn the_exported_demo_runs_in_docker_as_containerlab_runs_it() {
    if let Err(why) = docker::preflight() {
        let ci = std::env::var_os("CI").is_some();
        assert!(
            !(ci && why.contains("dockerd")),
            "CI is set but {why}: .ci/run installs docker.io"
        );
        eprintln!("skipped: {why} (the containerlab test needs root and Docker's daemon)");
        return;
    }
    let t0 = Instant::now();
    let step = |what: &str| eprintln!("[{:6.1} s] {what}", t0.elapsed().as_secs_f64());
    support::ensure_daemons();
    let mut docker = Docker::start();
    step("dockerd up");

    // The image, from this test's own (debug) binaries, or those in $WAIST_IMAGE_BINS
    // (the static release build, say).
    let bins = std::env::var_os("WAIST_IMAGE_BINS").map_or_else(
        || Path::new(WAIST).parent().unwrap().to_path_buf(),
        PathBuf::from,
    );
    let bins = bins.as_path();
    let out = std::process::Command::new(WAIST)
        .arg("image")
        .arg("--bins")
        .arg(bins)
        .env("DOCKER_HOST", &docker.host)
        .output()
        .unwrap();
    docker.images.extend([
        "waist:latest".into(),
        format!("waist:{}", env!("CARGO_PKG_VERSION")),
    ]);
    assert!(out.status.success(), "waist image: {}", text(&out));
    // `waist:latest, waist:0.1.0: N bytes (…)`: the copies lost their debug information,
    // which is most of a debug binary.
    let report = String::from_utf8_lossy(&out.stdout);
    let size: u64 = report
        .split(": ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in {report:?}"));
    let binaries: u64 = waist::image::BINARIES
        .iter()
        .map(|b| std::fs::metadata(bins.join(b)).unwrap().len())
        .sum();
    assert!(
        size < binaries / 2,
        "image {size} bytes, binaries {binaries}: not stripped?"
    );
    step(&format!(
        "image: {}",
        String::from_utf8_lossy(&out.stdout).trim()
    ));

    // The demo, with a site, exported.
    let work = docker.dir.join("lab");
    std::fs::create_dir_all(work.join("site")).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/topologies/demo.toml");
    std::fs::copy(&demo, work.join("demo.toml")).unwrap();
    let blob = blob();
    std::fs::write(work.join("site/blob.bin"), &blob).unwrap();
    std::fs::write(work.join("site/index.html"), "<p>waist in containers</p>\n").unwrap();
    let export = work.join("export");
    let out = support::waist(&[
        "up",
        work.join("demo.toml").to_str().unwrap(),
        "--export",
        "containerlab",
        export.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "export: {}", text(&out));
    let clab: PathBuf = export.join("demo.clab.yml");
    let lab = lab::read(&clab);
    assert_eq!(lab.name, "demo");

    let pids = lab::deploy(&mut docker, &lab, &export);
    step(&format!(
        "{} containers, {} links",
        pids.len(),
        lab.topology.links.len()
    ));

    // Every router holds a route to every other router's addresses and to everything
    // announced.
    let routers: Vec<(String, PathBuf)> = lab
        .topology
        .nodes
        .iter()
        .filter(|(_, n)| {
            n.cmd
                .as_deref()
                .is_some_and(|c| c.contains("-- waist-router"))
        })
        .map(|(name, n)| {
            let bind = n.binds.iter().find(|b| b.contains(":/etc/waist")).unwrap();
            (
                name.clone(),
                export
                    .join(bind.split(':').next().unwrap())
                    .join("router.toml"),
            )
        })
        .collect();
    assert_eq!(routers.len(), 4, "the demo has four routers");
    let mut all = BTreeSet::new();
    for (_, config) in &routers {
        let (own, originate) = announced(config);
        all.extend(own);
        all.extend(originate);
    }
    let end = Instant::now() + Duration::from_secs(60);
    for (name, config) in &routers {
        let (own, _) = announced(config);
        let want: BTreeSet<&String> = all.difference(&own).collect();
        loop {
            let held = routes(&docker, name);
            let missing: Vec<&&String> = match &held {
                Ok(held) => want.iter().filter(|p| !held.contains(**p)).collect(),
                Err(_) => want.iter().collect(),
            };
            if missing.is_empty() {
                break;
            }
            assert!(
                Instant::now() < end,
                "{name} does not hold {missing:?} after 60 s: {held:?}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    step(&format!("routes converged: every router holds {all:?}"));

    // From h1, across the routers.
    let h1 = lab::container("h1");
    // The host tools find their link and source in the node's environment (WAIST_VIA,
    // WAIST_SRC), as in a lab containerlab runs: no --via here.
    let env = &lab.topology.nodes["h1"].env;
    assert!(
        env.contains_key("WAIST_VIA") && env.contains_key("WAIST_SRC"),
        "{env:?}"
    );
    let r4 = "10.0.0.4";
    let ping = docker.run(&[
        "exec", &h1, "waist", "snap", "ping", "-c", "3", "-i", "100", r4,
    ]);
    let ping = text(&ping);
    assert!(ping.contains("3 received"), "{ping}");
    step(&format!(
        "snap ping {r4}: {}",
        ping.lines().last().unwrap_or("")
    ));

    let esp = docker.run(&[
        "exec", &h1, "waist", "esp", "send", "--dst", r4, "count", "--tag", "0xC0", "--thresh",
        "100",
    ]);
    step(&format!("esp send COUNT to {r4}: {}", text(&esp).trim()));

    let got = docker.run(&[
        "exec",
        &h1,
        "trickles-get",
        "trickles://10.2.0.80/blob.bin",
        "--timeout-s",
        "60",
    ]);
    assert!(
        got.stdout == blob,
        "trickles-get: {} of {} bytes, or different",
        got.stdout.len(),
        blob.len()
    );
    step(&format!(
        "trickles-get blob.bin: {} bytes, identical",
        got.stdout.len()
    ));
    drop(docker);
    step("all removed");
}
