//! `waist up FILE --export containerlab DIR`: the topology as a containerlab lab instead of
//! processes on this machine. Nothing starts; the files are written for `containerlab
//! deploy` (and, the same file, clabernetes on Kubernetes).
//!
//! The topology is checked as `waist up --check` checks it and planned by the same planner,
//! with container addressing: every waist link (router–router, router–host,
//! router–replica) is a veth pair with a /31 from `172.31.0.0/16`, handed out in plan
//! order, each end's UDP socket at `ADDR:6000`. Each router's config is written by the same
//! code as for `waist up`, so its ESP, SNAP, distance-vector and route-cache sections, the
//! links' costs, MTUs and emulation (netio does it in user space, inside the container)
//! are kept; only the link addresses differ.
//!
//! ```text
//! DIR/NAME.clab.yml                 one kind: linux node per router, replica and host
//! DIR/NAME-MACHINE.clab.yml         instead, one per machine when nodes span [[machine]]s
//! DIR/NAME/r1/router.toml           bound read-only at /etc/waist in node r1
//! DIR/NAME/r1/esp-64.snap           its ESP instructions' programs, named so in router.toml
//! DIR/NAME/web-1/web.key            a server's key file, the same in each replica
//! DIR/NAME/site-web/                the server's root, copied, bound at /srv/web
//! DIR/NAME/h1/host.env              a host's WAIST_VIA and WAIST_SRC, as its env sets them
//! ```
//!
//! Every node runs the image `waist:latest` with `cmd: "waist node --wait-address A … --
//! PROGRAM ARGS"`: `waist node` waits for its interfaces and addresses, then becomes the
//! program (a router's `waist-router --config /etc/waist/router.toml --metrics
//! 127.0.0.1:9100`, a replica's `trickles-web`); a host's holds, and its tools (`docker exec
//! clab-NAME-h1 waist snap ping 10.0.0.4`) take `--via` and `--src` from `WAIST_VIA` and
//! `WAIST_SRC`. Each node's interfaces are `eth1`, `eth2`, … in the order of its links in
//! the plan; a veth's MTU is its link's plus 28 (the IPv4 and UDP headers around each
//! packet). A link whose ends are on two machines is, in each machine's file, a
//! `vxlan-stitch` link to the other machine's `ip` (VNI 1, 2, … in plan order, UDP port
//! 4789; the network between the machines must carry 50 more bytes per packet).
//!
//! What containers make meaningless is ignored: `[defaults] ip` (except as the default
//! machine's address for tunnels), `first_port`, `metrics_base` (each process is alone in
//! its container, its metrics at 127.0.0.1:9100), `[defaults] capture` (a lab's daemons
//! write no captures: containerlab captures on the veths, `ip netns exec clab-LAB-NODE
//! tcpdump -nni eth1`). What the export cannot express is
//! refused, located at what the author wrote: a router's own `[[link]]`s (in its `config`
//! file or `[defaults.router]`), more links than the pool's 32768 /31s, a lab, node or
//! machine name containerlab refuses, a node named like a server's site directory, a
//! machine a tunnel cannot reach (a loopback address), a site with anything but files and
//! directories. Every `[node]` key of a router's config is honoured.

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use netio::config::{ConfigError, Source};

use super::topology::{self, Addressing, Plan, TopologyFile};

mod checks;
pub mod clab;
pub mod lab;
mod programs;
mod site;

/// The one format: containerlab.
pub const FORMAT: &str = "containerlab";
/// The image every node runs.
pub const IMAGE: &str = "waist:latest";
/// The veth addresses: a /31 per link from here.
pub const POOL: Ipv4Addr = Ipv4Addr::new(172, 31, 0, 0);
/// How many addresses the pool holds (a /16).
pub const POOL_SIZE: u32 = 1 << 16;
/// The UDP port of every link end.
pub const PORT: u16 = 6000;
/// Every process's metrics endpoint, inside its container.
pub const METRICS: &str = "127.0.0.1:9100";
/// The VXLAN port of links between machines.
pub const VXLAN_PORT: u16 = 4789;
/// Where a node's own directory is bound.
pub const CONFIG_DIR: &str = "/etc/waist";

/// What was written: files (relative to the export directory) and the lab files, each
/// with its machine.
#[derive(Clone, Debug, Default)]
pub struct Written {
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
    /// The lab files and their machines (`None`: one machine).
    pub labs: Vec<(PathBuf, Option<String>)>,
    /// How many nodes.
    pub nodes: usize,
    /// How many waist links.
    pub links: usize,
}

/// `waist up FILE --export FORMAT DIR`: writes the lab and says what it wrote and how to
/// deploy it; returns the exit code.
///
/// # Errors
///
/// An unknown format, a topology the export refuses (located), a file it cannot write.
pub fn run(file: &Path, format: &str, dir: &Path, out: &mut dyn Write) -> anyhow::Result<u8> {
    if format != FORMAT {
        bail!("--export {format}: the one format is `{FORMAT}`");
    }
    let written = export(file, dir)?;
    writeln!(
        out,
        "{}: exported for containerlab: {} nodes, {} links, into {}",
        file.display(),
        written.nodes,
        written.links,
        dir.display()
    )?;
    for f in &written.files {
        writeln!(out, "  wrote {}", dir.join(f).display())?;
    }
    writeln!(
        out,
        "\nbuild the image {IMAGE} once (`waist image`), then deploy:"
    )?;
    for (lab, machine) in &written.labs {
        let on = machine
            .as_ref()
            .map_or(String::new(), |m| format!("    (on machine {m})"));
        writeln!(
            out,
            "  containerlab deploy -t {}{on}",
            dir.join(lab).display()
        )?;
    }
    Ok(0)
}

/// Plans `file` for containers, refusing what the export cannot carry; returns the plan,
/// the topology and its lab name.
///
/// # Errors
///
/// The first problem, located in the topology (or a router's config file).
pub fn plan(file: &Path) -> Result<(Source, TopologyFile, Plan, String), ConfigError> {
    let (source, topo) = netio::config::load::<TopologyFile>(file)?;
    let base = file.parent().unwrap_or(Path::new("."));
    let name = checks::lab_name(&source)?;
    checks::refuse(&source, &topo, base)?;
    let addressing = Addressing::Pool {
        first: POOL,
        count: POOL_SIZE,
        port: PORT,
    };
    let mut plan = topology::plan_with(&source, &topo, base, addressing)?;
    plan.name.clone_from(&name);
    Ok((source, topo, plan, name))
}

/// Writes `file`'s lab into `dir`.
///
/// # Errors
///
/// A refused topology (located), a file that cannot be written.
pub fn export(file: &Path, dir: &Path) -> anyhow::Result<Written> {
    let (source, topo, plan, name) = plan(file)?;
    let labs = lab::build(&source, &topo, &plan, &name)?;
    let sites = site::scan(
        &source,
        &topo,
        &plan,
        file.parent().unwrap_or(Path::new(".")),
    )?;
    let origin = file.display().to_string();
    let links = labs.iter().flat_map(|l| &l.links);
    let mut w = Written {
        nodes: labs.iter().map(|l| l.nodes.len()).sum(),
        // A link between machines is in both machines' files.
        links: links
            .map(|l| match l {
                lab::Link::Veth { .. } => 2,
                lab::Link::Vxlan { .. } => 1,
            })
            .sum::<usize>()
            / 2,
        ..Written::default()
    };
    let mut put = |rel: PathBuf, text: &str| -> anyhow::Result<()> {
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        w.files.push(rel);
        Ok(())
    };
    for l in &labs {
        let rel = PathBuf::from(clab::file_name(&name, l.machine.as_deref()));
        put(rel.clone(), &clab::write(l, &name, IMAGE, &origin))?;
        w.labs.push((rel, l.machine.clone()));
    }
    let node_dir = |node: &str| PathBuf::from(&name).join(node);
    for p in &plan.processes {
        if let Some(config) = &p.config {
            let (config, programs) = programs::beside(config)?;
            for (file, from) in programs {
                let text = std::fs::read_to_string(&from).with_context(|| {
                    format!("router `{}`: cannot read {}", p.name, from.display())
                })?;
                put(node_dir(&p.name).join(file), &text)?;
            }
            put(node_dir(&p.name).join("router.toml"), &config)?;
        }
    }
    for h in &plan.hosts {
        let env: String = lab::host_env(h)
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        put(node_dir(&h.name).join("host.env"), &env)?;
    }
    for (server, _, replicas) in &plan.servers {
        w.files.extend(
            keys(dir, &name, server, replicas).with_context(|| {
                format!("server `{server}`: cannot write its replicas' key file")
            })?,
        );
    }
    for s in &sites {
        w.files.push(s.copy(dir, &name)?);
    }
    Ok(w)
}

/// The key file server `server`'s replicas share, in each replica's directory: the first
/// replica's, created with a fresh secret by trickles-web's own code unless one is there
/// (a lab exported again keeps its key), copied to the others.
fn keys(dir: &Path, name: &str, server: &str, replicas: &[String]) -> anyhow::Result<Vec<PathBuf>> {
    let rel = |replica: &str| {
        PathBuf::from(name)
            .join(replica)
            .join(format!("{server}.key"))
    };
    let Some(first) = replicas.first() else {
        return Ok(Vec::new());
    };
    let path = dir.join(rel(first));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    trickles_web::keys::Keys::load_or_create(&path, Duration::from_secs(60))?;
    let mut written = vec![rel(first)];
    for r in replicas.iter().skip(1) {
        let to = dir.join(rel(r));
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(&path, &to)?;
        written.push(rel(r));
    }
    Ok(written)
}
