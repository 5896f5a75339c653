//! An exported `.clab.yml`, read back and carried out as containerlab carries out
//! `kind: linux` nodes: a container per node with `--network none`, `CLAB_INTFS`, its
//! `env` and `binds` (relative host paths resolved against the file's directory) and its
//! `cmd`; started; then per link one veth pair made in the root namespace under temporary
//! names, each end moved into its container's namespace, renamed to the endpoint's
//! interface, its `ipv4` added, its MTU set, brought up.
//!
//! Unknown keys are refused (`deny_unknown_fields`), so a key the export starts writing
//! cannot be silently left out here.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use super::docker::Docker;

/// A containerlab topology file (the part the export writes).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClabFile {
    /// The lab's name.
    pub(crate) name: String,
    /// Nodes and links.
    pub(crate) topology: Topology,
}

/// `topology:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Topology {
    /// The nodes by name.
    pub(crate) nodes: BTreeMap<String, Node>,
    /// The links.
    #[serde(default)]
    pub(crate) links: Vec<Link>,
}

/// A node.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Node {
    /// Must be `linux`.
    pub(crate) kind: String,
    /// The image.
    pub(crate) image: String,
    /// The command.
    pub(crate) cmd: Option<String>,
    /// `HOST:CONTAINER[:ro]`.
    #[serde(default)]
    pub(crate) binds: Vec<String>,
    /// Environment variables.
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
}

/// A link in the extended form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Link {
    /// Must be `veth`.
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// Its two ends.
    pub(crate) endpoints: Vec<Endpoint>,
    /// The MTU of both ends.
    pub(crate) mtu: Option<u32>,
}

/// One end of a link.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Endpoint {
    /// The node.
    pub(crate) node: String,
    /// Its interface name there.
    pub(crate) interface: String,
    /// `ADDR/LEN` to put on it.
    pub ipv4: Option<String>,
}

/// Reads a `.clab.yml`.
pub(crate) fn read(path: &Path) -> ClabFile {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The container of `node` in this run.
pub(crate) fn container(node: &str) -> String {
    format!("waist-{}-{node}", std::process::id())
}

/// Creates and starts a container per node and wires the links; returns each node's
/// container pid.
pub(crate) fn deploy(docker: &mut Docker, lab: &ClabFile, base: &Path) -> BTreeMap<String, u32> {
    let mut pids = BTreeMap::new();
    for (name, node) in &lab.topology.nodes {
        assert_eq!(
            node.kind, "linux",
            "node {name}: only kind linux is carried out"
        );
        let intfs = lab
            .topology
            .links
            .iter()
            .flat_map(|l| &l.endpoints)
            .filter(|e| &e.node == name)
            .count();
        let c = container(name);
        let mut args: Vec<String> = vec!["create".into(), "--network".into(), "none".into()];
        args.extend(["--name".into(), c.clone()]);
        args.extend(["-e".into(), format!("CLAB_INTFS={intfs}")]);
        for (k, v) in &node.env {
            args.extend(["-e".into(), format!("{k}={v}")]);
        }
        for bind in &node.binds {
            let (host, inside) = bind.split_once(':').expect("bind HOST:CONTAINER");
            let host = base.join(host);
            args.extend(["-v".into(), format!("{}:{inside}", host.display())]);
        }
        args.push(node.image.clone());
        if let Some(cmd) = &node.cmd {
            assert!(
                !cmd.contains(['"', '\'', '\\']),
                "node {name}: the cmd has quoting this test does not split: {cmd}"
            );
            args.extend(cmd.split_whitespace().map(String::from));
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        docker.run(&refs);
        docker.containers.push(c.clone());
        docker.run(&["start", &c]);
        let out = docker.run(&["inspect", "--format", "{{.State.Pid}}", &c]);
        let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(pid > 0, "container {c} is not running");
        pids.insert(name.clone(), pid);
    }
    for (i, link) in lab.topology.links.iter().enumerate() {
        assert_eq!(
            link.kind, "veth",
            "link {i}: only veth links are carried out"
        );
        let [a, b] = &link.endpoints[..] else {
            panic!("link {i}: a veth has two endpoints");
        };
        let tmp = [
            format!("wc{}x{i}a", std::process::id()),
            format!("wc{}x{i}b", std::process::id()),
        ];
        ip(
            None,
            &[
                "link", "add", &tmp[0], "type", "veth", "peer", "name", &tmp[1],
            ],
        );
        docker.veths.push(tmp[0].clone());
        for (end, tmp) in [(a, &tmp[0]), (b, &tmp[1])] {
            let pid = pids[&end.node];
            ip(None, &["link", "set", tmp, "netns", &pid.to_string()]);
            ip(Some(pid), &["link", "set", tmp, "name", &end.interface]);
            if let Some(addr) = &end.ipv4 {
                ip(Some(pid), &["addr", "add", addr, "dev", &end.interface]);
            }
            if let Some(mtu) = link.mtu {
                ip(
                    Some(pid),
                    &["link", "set", &end.interface, "mtu", &mtu.to_string()],
                );
            }
            ip(Some(pid), &["link", "set", &end.interface, "up"]);
        }
    }
    pids
}

/// `ip ARGS`, in the network namespace of process `pid` if given (`nsenter -n`).
fn ip(pid: Option<u32>, args: &[&str]) {
    let mut cmd = match pid {
        Some(pid) => {
            let mut c = Command::new("nsenter");
            c.args(["-t", &pid.to_string(), "-n", "ip"]);
            c
        }
        None => Command::new("ip"),
    };
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {} (in {pid:?}): {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}
