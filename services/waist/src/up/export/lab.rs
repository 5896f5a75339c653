//! The lab a [`Plan`] becomes: its nodes, each a container running one program, and its
//! links, each a veth pair (ends on one machine) or a VXLAN-stitched end in each machine's
//! file (ends on two), grouped into one file per machine.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use netio::config::{ConfigError, Source};

use super::{CONFIG_DIR, METRICS};
use crate::up::topology::{LOCAL, Plan, Role, TopologyFile};

/// Bytes IPv4 and UDP add to each packet a link carries (its veth needs the link's MTU plus
/// these).
pub const UDP_OVERHEAD: usize = 28;

/// One container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Its name.
    pub name: String,
    /// The machine it runs on.
    pub machine: String,
    /// Its command line (`waist node …`).
    pub cmd: String,
    /// Its binds, `HOST:CONTAINER:ro`, the host side relative to the lab file.
    pub binds: Vec<String>,
    /// Its environment.
    pub env: Vec<(String, String)>,
}

/// One end of a link: a node's interface and its address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The node.
    pub node: String,
    /// Its interface (`eth1`, …).
    pub interface: String,
    /// The address (a /31).
    pub ipv4: String,
}

/// One link of a lab file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// A veth pair between two nodes of the file.
    Veth {
        /// Its two ends.
        endpoints: [Endpoint; 2],
        /// The interfaces' MTU.
        mtu: usize,
    },
    /// This machine's end of a link to another machine, stitched to a VXLAN tunnel.
    Vxlan {
        /// The end here.
        endpoint: Endpoint,
        /// The other machine's address.
        remote: IpAddr,
        /// The tunnel's VNI (both machines' files give the same).
        vni: u32,
        /// The interface's MTU.
        mtu: usize,
    },
}

/// One containerlab file: a machine's nodes and links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabFile {
    /// Its machine (`None`: the topology runs on one machine).
    pub machine: Option<String>,
    /// Its nodes.
    pub nodes: Vec<Node>,
    /// Its links.
    pub links: Vec<Link>,
}

/// A link end as the plan gives it.
struct End {
    node: String,
    machine: String,
    interface: String,
    /// The waist link's MTU (the veth's is this plus [`UDP_OVERHEAD`]).
    mtu: usize,
}

/// The lab files of `plan` (of `file`, read from `source`; lab `name`).
///
/// # Errors
///
/// A link between machines whose far end's address a tunnel cannot reach (a loopback or
/// unspecified address), located at the address (or the node, if it is the default one).
pub fn build(
    source: &Source,
    file: &TopologyFile,
    plan: &Plan,
    name: &str,
) -> Result<Vec<LabFile>, ConfigError> {
    let mut ends: BTreeMap<Ipv4Addr, End> = BTreeMap::new();
    let mut nodes = Vec::new();
    let mut add_end = |node: &str, machine: &str, i: usize, addr: SocketAddr, mtu: usize| {
        if let IpAddr::V4(ip) = addr.ip() {
            let end = End {
                node: node.to_string(),
                machine: machine.to_string(),
                interface: format!("eth{}", i + 1),
                mtu,
            };
            ends.insert(ip, end);
        }
    };
    for p in &plan.processes {
        for (i, l) in p.links.iter().enumerate() {
            add_end(&p.name, &p.machine, i, l.local, l.mtu);
        }
        let wait = wait_addresses(p.links.iter().map(|l| l.local));
        let own = format!("{name}/{}:{CONFIG_DIR}:ro", p.name);
        let (cmd, binds) = match p.role {
            Role::Router => {
                let cmd = format!(
                    "waist node{wait} -- waist-router --config {CONFIG_DIR}/router.toml \
                     --metrics {METRICS}"
                );
                (cmd, vec![own])
            }
            Role::Server => {
                let server = p.server.as_deref().unwrap_or(&p.name);
                let address = p.serves.as_ref().map(|(a, _)| a.to_string());
                let listen = p.links.first().map(|l| l.local.to_string());
                let cmd = format!(
                    "waist node{wait} -- trickles-web --root /srv/{server} --keys \
                     {CONFIG_DIR}/{server}.key --listen udp:{} --address {} --metrics {METRICS}",
                    listen.unwrap_or_default(),
                    address.unwrap_or_default()
                );
                let site = format!("{name}/site-{server}:/srv/{server}:ro");
                (cmd, vec![own, site])
            }
        };
        nodes.push(Node {
            name: p.name.clone(),
            machine: p.machine.clone(),
            cmd,
            binds,
            env: Vec::new(),
        });
    }
    for h in &plan.hosts {
        add_end(&h.name, &h.machine, 0, h.local, 1500);
        nodes.push(Node {
            name: h.name.clone(),
            machine: h.machine.clone(),
            cmd: format!("waist node{}", wait_addresses([h.local])),
            binds: vec![format!("{name}/{}:{CONFIG_DIR}:ro", h.name)],
            env: host_env(h),
        });
    }
    let mut machines: Vec<&str> = nodes.iter().map(|n| n.machine.as_str()).collect();
    machines.sort_unstable();
    machines.dedup();
    let spanning = machines.len() > 1;
    let mut files: Vec<LabFile> = machines
        .iter()
        .map(|m| LabFile {
            machine: spanning.then(|| (*m).to_string()),
            nodes: nodes.iter().filter(|n| n.machine == *m).cloned().collect(),
            links: Vec::new(),
        })
        .collect();
    let index = |m: &str| machines.iter().position(|x| *x == m).unwrap_or(0);
    let mut vni = 0;
    let ends: Vec<(Ipv4Addr, End)> = ends.into_iter().collect();
    for pair in ends.chunks(2) {
        let [(ia, a), (ib, b)] = pair else { continue };
        let mtu = a.mtu.max(b.mtu) + UDP_OVERHEAD;
        let end = |e: &End, ip: &Ipv4Addr| Endpoint {
            node: e.node.clone(),
            interface: e.interface.clone(),
            ipv4: format!("{ip}/31"),
        };
        if a.machine == b.machine {
            let link = Link::Veth {
                endpoints: [end(a, ia), end(b, ib)],
                mtu,
            };
            files[index(&a.machine)].links.push(link);
            continue;
        }
        vni += 1;
        for (here, ip, there) in [(a, ia, b), (b, ib, a)] {
            let remote = remote(source, file, plan, there)?;
            let link = Link::Vxlan {
                endpoint: end(here, ip),
                remote,
                vni,
                mtu,
            };
            files[index(&here.machine)].links.push(link);
        }
    }
    Ok(files)
}

/// ` --wait-address A` for each address of `ends`.
fn wait_addresses(ends: impl IntoIterator<Item = SocketAddr>) -> String {
    ends.into_iter()
        .map(|a| format!(" --wait-address {}", a.ip()))
        .collect()
}

/// A host's environment: the link and source address its tools take when not told.
pub fn host_env(h: &crate::up::topology::HostPlan) -> Vec<(String, String)> {
    vec![
        ("WAIST_VIA".into(), h.via()),
        ("WAIST_SRC".into(), h.address.to_string()),
    ]
}

/// The address another machine's tunnel reaches `there`'s machine at.
///
/// # Errors
///
/// A loopback or unspecified address, located where it was given (or at the node, for the
/// default machine without `[defaults] ip`).
fn remote(
    source: &Source,
    file: &TopologyFile,
    plan: &Plan,
    there: &End,
) -> Result<IpAddr, ConfigError> {
    let ip = plan
        .machines
        .get(&there.machine)
        .copied()
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    if !ip.is_loopback() && !ip.is_unspecified() {
        return Ok(ip);
    }
    let message = format!(
        "`{}` runs on machine `{}` at {ip}, which a VXLAN tunnel from another machine \
         cannot reach: give the machine its address on the network between the machines",
        there.node, there.machine
    );
    let given = match there.machine.as_str() {
        LOCAL => file.defaults.ip.as_ref(),
        m => file
            .machine
            .iter()
            .find(|s| s.name.get_ref() == m)
            .map(|s| &s.ip),
    };
    if let Some(at) = given {
        return Err(source.error_for(at, message));
    }
    // The default machine, its address not written: at the node (a replica: its server).
    let node = plan
        .servers
        .iter()
        .find(|(_, _, replicas)| replicas.contains(&there.node))
        .map_or(there.node.as_str(), |(server, _, _)| server.as_str());
    let names = file.router.iter().map(|r| &r.name);
    let mut names = names
        .chain(file.server.iter().map(|s| &s.name))
        .chain(file.host.iter().map(|h| &h.name));
    Err(match names.find(|n| n.get_ref() == node) {
        Some(n) => source.error_for(n, message + " (`[defaults] ip`, or a `host`)"),
        None => source.error_at(None, message),
    })
}
