//! The topology file: routers, the links between them, Trickles servers and end hosts, and
//! the machines they run on; checked as a whole and turned into a [`Plan`] of processes
//! before anything starts. Every error names the file, line and key.
//!
//! ```toml
//! name = "demo"                     # names the run (default: the file's stem)
//!
//! [defaults]
//! ip = "127.0.0.1"                  # where the nodes of the default machine bind
//! first_port = 27000                # UDP ports are handed out from here, in file order
//! [defaults.router]                 # waist-router sections every router gets (a router's
//! dv = { update_ms = 500 }          #   own section of the same name replaces the default)
//! esp = { rate = 1000 }
//!
//! [[machine]]                       # only for a network spanning machines
//! name = "alpha"
//! ip = "192.168.1.10"               # its address: the link sockets of its nodes bind it
//! first_port = 27000                # (default: defaults.first_port)
//!
//! [[router]]
//! name = "r1"
//! address = "10.0.0.1"              # the router's own address (its DV router id)
//! host = "alpha"                    # the machine it runs on (default: this one)
//! originate = ["10.1.0.0/16"]       # extra prefixes to announce (attached hosts' and
//!                                   #   servers' addresses are announced anyway)
//! config = "r1-extra.toml"          # optional waist-router config to start from
//! esp = { rate = 5000 }             # any waist-router section, inline: esp, snap, dv,
//!                                   #   route_cache
//!
//! [[link]]
//! between = ["r1", "r2"]            # two routers
//! cost = 1                          # distance-vector cost (default 1)
//! mtu = 1500                        # default 1500
//! emulation = { delay_ms = 5, jitter_ms = 1, loss = 0.02, rate_mbps = 100 }
//!                                   # netio's user-space emulation, both directions
//!
//! [[server]]                        # trickles-web replicas serving one directory
//! name = "web"
//! address = "10.2.0.80"             # the address clients ask (all replicas answer as it)
//! root = "site"                     # relative to this file
//! replicas = 2                      # each its own process and link to the router
//! router = "r4"
//! host = "beta"
//!
//! [[host]]                          # an end host: a link on its router that host tools
//! name = "h1"                       #   (`waist esp send`, `waist snap ping`,
//! address = "10.1.0.10"             #   trickles-get, trickles-proxy) use with --via
//! router = "r1"
//! ```
//!
//! Ports are assigned in a fixed order (links, then hosts, then servers, each machine
//! counting from its own `first_port`), so every machine's `waist up --only` computes the
//! same addresses for both ends of a link that crosses machines.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use netio::config::{ConfigError, EmulationConfig, Source};
use serde::Deserialize;
use toml::Spanned;

/// The default machine's name (nodes without `host`).
pub const LOCAL: &str = "local";
/// Where the default machine's nodes bind.
pub const DEFAULT_IP: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// The first UDP port handed out on a machine unless told.
pub const DEFAULT_FIRST_PORT: u16 = 27000;

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    /// The run's name.
    pub name: Option<String>,
    /// `[defaults]`.
    #[serde(default)]
    pub defaults: Defaults,
    /// `[[machine]]`.
    #[serde(default)]
    pub machine: Vec<MachineSection>,
    /// `[[router]]`.
    #[serde(default)]
    pub router: Vec<RouterSection>,
    /// `[[link]]`.
    #[serde(default)]
    pub link: Vec<LinkSection>,
    /// `[[server]]`.
    #[serde(default)]
    pub server: Vec<ServerSection>,
    /// `[[host]]`.
    #[serde(default)]
    pub host: Vec<HostSection>,
}

/// `[defaults]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// The default machine's IP address (default 127.0.0.1).
    pub ip: Option<Spanned<String>>,
    /// The default first port (default 27000, below Linux's ephemeral range).
    pub first_port: Option<Spanned<u16>>,
    /// waist-router sections every router starts from.
    #[serde(default)]
    pub router: toml::Table,
}

/// `[[machine]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSection {
    /// Its name, as nodes' `host` keys give it.
    pub name: Spanned<String>,
    /// The address its nodes' link sockets bind.
    pub ip: Spanned<String>,
    /// The first UDP port handed out on it.
    pub first_port: Option<Spanned<u16>>,
}

/// The waist-router sections a router may give inline.
const ROUTER_SECTIONS: [&str; 4] = ["esp", "snap", "dv", "route_cache"];

/// `[[router]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterSection {
    /// Its name.
    pub name: Spanned<String>,
    /// Its own address.
    pub address: Spanned<String>,
    /// The machine it runs on.
    pub host: Option<Spanned<String>>,
    /// Prefixes it announces besides its attached hosts and servers.
    #[serde(default)]
    pub originate: Vec<Spanned<String>>,
    /// A waist-router config file to start from (relative to the topology file).
    pub config: Option<Spanned<String>>,
    /// `esp = {…}`.
    pub esp: Option<Spanned<toml::Table>>,
    /// `snap = {…}`.
    pub snap: Option<Spanned<toml::Table>>,
    /// `dv = {…}`.
    pub dv: Option<Spanned<toml::Table>>,
    /// `route_cache = {…}`.
    pub route_cache: Option<Spanned<toml::Table>>,
}

/// `[[link]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    /// The two routers it joins.
    pub between: Spanned<Vec<String>>,
    /// Distance-vector cost (default 1).
    pub cost: Option<u16>,
    /// Largest packet (default 1500).
    pub mtu: Option<usize>,
    /// Emulation of both directions.
    pub emulation: Option<EmulationConfig>,
}

/// `[[server]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Its name (replicas are NAME-1, NAME-2, …).
    pub name: Spanned<String>,
    /// The address every replica answers as. The router has one route to it over the
    /// replicas' links in order, so it sends to the first replica that is up.
    pub address: Spanned<String>,
    /// The directory served.
    pub root: Spanned<String>,
    /// How many processes (default 1).
    pub replicas: Option<Spanned<u16>>,
    /// The router the replicas are linked to.
    pub router: Spanned<String>,
    /// The machine they run on.
    pub host: Option<Spanned<String>>,
}

/// `[[host]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSection {
    /// Its name.
    pub name: Spanned<String>,
    /// Its address (the source of what it sends).
    pub address: Spanned<String>,
    /// The router it is linked to.
    pub router: Spanned<String>,
    /// The machine its tools run on.
    pub host: Option<Spanned<String>>,
}

/// What a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `waist-router`.
    Router,
    /// `trickles-web`.
    Server,
}

impl Role {
    /// The binary it runs.
    pub fn program(self) -> &'static str {
        match self {
            Role::Router => "waist-router",
            Role::Server => "trickles-web",
        }
    }
}

/// One UDP link end a process binds: its name there and both addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkEnd {
    /// The link's name at this process.
    pub name: String,
    /// The address it binds.
    pub local: SocketAddr,
    /// The address it sends to.
    pub peer: SocketAddr,
}

/// One process to start.
#[derive(Clone, Debug)]
pub struct Process {
    /// Its name (a router's, or a replica's `SERVER-i`).
    pub name: String,
    /// What it is.
    pub role: Role,
    /// The machine it runs on.
    pub machine: String,
    /// Its links.
    pub links: Vec<LinkEnd>,
    /// A router's generated config.
    pub config: Option<String>,
    /// A replica's server: (address, root directory).
    pub serves: Option<(IpAddr, PathBuf)>,
    /// A replica's server name (all replicas share its key file).
    pub server: Option<String>,
}

/// An end host: what its tools need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPlan {
    /// Its name.
    pub name: String,
    /// Its address.
    pub address: IpAddr,
    /// Its router.
    pub router: String,
    /// The machine its tools run on.
    pub machine: String,
    /// Its socket (the router link's peer).
    pub local: SocketAddr,
    /// The router's end (the tools' `--via` target).
    pub peer: SocketAddr,
}

impl HostPlan {
    /// The host tools' `--via` argument.
    pub fn via(&self) -> String {
        crate::host::Via::Udp {
            local: self.local,
            peer: self.peer,
        }
        .to_string()
    }
}

/// Everything to start, checked.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The run's name.
    pub name: String,
    /// Every machine's name and IP.
    pub machines: BTreeMap<String, IpAddr>,
    /// Every process of every machine, in start order (routers first).
    pub processes: Vec<Process>,
    /// Every end host.
    pub hosts: Vec<HostPlan>,
    /// Every server: name, address and its replicas' names.
    pub servers: Vec<(String, IpAddr, Vec<String>)>,
}

impl Plan {
    /// The processes that run on `machine` (all of them for `None`).
    pub fn on<'a>(&'a self, machine: Option<&'a str>) -> impl Iterator<Item = &'a Process> {
        self.processes
            .iter()
            .filter(move |p| machine.is_none_or(|m| p.machine == m))
    }
}

/// Reads and checks the topology at `path`.
///
/// # Errors
///
/// The first problem found, located in the file.
pub fn load(path: &Path) -> Result<Plan, ConfigError> {
    let (source, file) = netio::config::load::<TopologyFile>(path)?;
    plan(&source, &file, path.parent().unwrap_or(Path::new(".")))
}

/// Checks `file` (read from `source`, relative paths from `base`) and plans its processes.
///
/// # Errors
///
/// The first problem found, located in the file.
pub fn plan(source: &Source, file: &TopologyFile, base: &Path) -> Result<Plan, ConfigError> {
    let err = |s: &dyn HasSpan, m: String| source.error_at(Some(s.span()), m);
    let ip_of = |s: &Spanned<String>| -> Result<IpAddr, ConfigError> {
        s.get_ref()
            .parse()
            .map_err(|_| err(s, format!("`{}` is not an IP address", s.get_ref())))
    };

    // Machines.
    let default_ip = match &file.defaults.ip {
        Some(s) => ip_of(s)?,
        None => IpAddr::V4(DEFAULT_IP),
    };
    let default_first = file
        .defaults
        .first_port
        .as_ref()
        .map_or(DEFAULT_FIRST_PORT, |p| *p.get_ref());
    let mut machines: BTreeMap<String, (IpAddr, u16)> = BTreeMap::new();
    machines.insert(LOCAL.to_string(), (default_ip, default_first));
    for m in &file.machine {
        let first = m
            .first_port
            .as_ref()
            .map_or(default_first, |p| *p.get_ref());
        if machines
            .insert(m.name.get_ref().clone(), (ip_of(&m.ip)?, first))
            .is_some()
        {
            return Err(err(
                &m.name,
                format!("machine `{}` named twice", m.name.get_ref()),
            ));
        }
    }
    let machine_of = |h: &Option<Spanned<String>>| -> Result<String, ConfigError> {
        match h {
            None => Ok(LOCAL.to_string()),
            Some(s) if machines.contains_key(s.get_ref()) => Ok(s.get_ref().clone()),
            Some(s) => Err(err(s, format!("no [[machine]] named `{}`", s.get_ref()))),
        }
    };

    // Names and addresses, each used once.
    let mut names = BTreeSet::new();
    let mut addresses = BTreeMap::new();
    let mut name = |s: &Spanned<String>| -> Result<String, ConfigError> {
        let n = s.get_ref();
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(err(s, format!("`{n}`: names are letters, digits, - and _")));
        }
        if !names.insert(n.clone()) {
            return Err(err(s, format!("`{n}` names two nodes")));
        }
        Ok(n.clone())
    };
    let mut address = |s: &Spanned<String>, owner: &str| -> Result<IpAddr, ConfigError> {
        let a = ip_of(s)?;
        if let Some(other) = addresses.insert(a, owner.to_string()) {
            return Err(err(s, format!("address {a} is also {other}'s")));
        }
        Ok(a)
    };

    struct R {
        name: String,
        address: IpAddr,
        machine: String,
        /// Link ends, with the `[[link]]` they come from (none for hosts and servers).
        links: Vec<(LinkEnd, Option<usize>)>,
        routes: Vec<(String, String)>,
        originate: Vec<String>,
    }
    let mut routers: Vec<R> = Vec::new();
    for r in &file.router {
        let n = name(&r.name)?;
        routers.push(R {
            address: address(&r.address, &n)?,
            name: n,
            machine: machine_of(&r.host)?,
            links: Vec::new(),
            routes: Vec::new(),
            originate: r.originate.iter().map(|p| p.get_ref().clone()).collect(),
        });
    }
    let router_names: Vec<String> = routers.iter().map(|r| r.name.clone()).collect();
    let router_index = |s: &Spanned<String>| -> Result<usize, ConfigError> {
        router_names
            .iter()
            .position(|r| r == s.get_ref())
            .ok_or_else(|| err(s, format!("no [[router]] named `{}`", s.get_ref())))
    };

    // Ports, in file order per machine.
    let mut next_port: BTreeMap<String, u16> = machines
        .iter()
        .map(|(m, (_, first))| (m.clone(), *first))
        .collect();
    let mut take = |machine: &str, at: &dyn HasSpan| -> Result<SocketAddr, ConfigError> {
        let (ip, _) = machines[machine];
        let port = next_port.get_mut(machine).map_or(0, |p| {
            let got = *p;
            *p = p.wrapping_add(1);
            got
        });
        if port == 0 {
            return Err(err(at, format!("machine `{machine}` ran out of UDP ports")));
        }
        Ok(SocketAddr::new(ip, port))
    };

    let mut linked: Vec<(usize, usize)> = Vec::new();
    for (li, l) in file.link.iter().enumerate() {
        let ends = l.between.get_ref();
        let [a, b] = ends.as_slice() else {
            return Err(err(&l.between, "`between` names two routers".into()));
        };
        let at = |n: &String| Spanned::new(l.between.span(), n.clone());
        let (ia, ib) = (router_index(&at(a))?, router_index(&at(b))?);
        if ia == ib {
            return Err(err(&l.between, format!("a link from `{a}` to itself")));
        }
        if linked.contains(&(ia, ib)) || linked.contains(&(ib, ia)) {
            return Err(err(
                &l.between,
                format!("`{a}` and `{b}` are already linked"),
            ));
        }
        let sa = take(&routers[ia].machine.clone(), &l.between)?;
        let sb = take(&routers[ib].machine.clone(), &l.between)?;
        let end = |name: &String, local, peer| LinkEnd {
            name: name.clone(),
            local,
            peer,
        };
        routers[ia].links.push((end(b, sa, sb), Some(li)));
        routers[ib].links.push((end(a, sb, sa), Some(li)));
        linked.push((ia, ib));
    }

    let mut hosts = Vec::new();
    for h in &file.host {
        let n = name(&h.name)?;
        let a = address(&h.address, &n)?;
        let ir = router_index(&h.router)?;
        let machine = machine_of(&h.host)?;
        let local = take(&machine, &h.name)?;
        let peer = take(&routers[ir].machine.clone(), &h.name)?;
        routers[ir].links.push((
            LinkEnd {
                name: n.clone(),
                local: peer,
                peer: local,
            },
            None,
        ));
        routers[ir].routes.push((host_prefix(a), n.clone()));
        routers[ir].originate.push(host_prefix(a));
        hosts.push(HostPlan {
            name: n,
            address: a,
            router: routers[ir].name.clone(),
            machine,
            local,
            peer,
        });
    }

    let mut replicas = Vec::new();
    let mut servers = Vec::new();
    for s in &file.server {
        let n = name(&s.name)?;
        let a = address(&s.address, &n)?;
        let ir = router_index(&s.router)?;
        let machine = machine_of(&s.host)?;
        let root = base.join(s.root.get_ref());
        if !root.is_dir() {
            return Err(err(
                &s.root,
                format!("{} is not a directory to serve", root.display()),
            ));
        }
        let count = s.replicas.as_ref().map_or(1, |r| *r.get_ref());
        if let Some(r) = s.replicas.as_ref().filter(|_| count == 0) {
            return Err(err(r, "a server needs at least one replica".into()));
        }
        let mut names_of = Vec::new();
        for i in 1..=count {
            let rn = format!("{n}-{i}");
            let at = Spanned::new(s.name.span(), rn.clone());
            name(&at)?;
            let local = take(&machine, &s.name)?;
            let peer = take(&routers[ir].machine.clone(), &s.name)?;
            routers[ir].links.push((
                LinkEnd {
                    name: rn.clone(),
                    local: peer,
                    peer: local,
                },
                None,
            ));
            // One route over every replica's link, in order: the router sends to the
            // first whose peer answers (a dead replica's refusals take its link down).
            routers[ir].routes.push((host_prefix(a), rn.clone()));
            if i == 1 {
                routers[ir].originate.push(host_prefix(a));
            }
            replicas.push(Process {
                name: rn.clone(),
                role: Role::Server,
                machine: machine.clone(),
                links: vec![LinkEnd {
                    name: routers[ir].name.clone(),
                    local,
                    peer,
                }],
                config: None,
                serves: Some((a, root.clone())),
                server: Some(n.clone()),
            });
            names_of.push(rn);
        }
        servers.push((n, a, names_of));
    }

    // Routes for routers without distance vector: every other router's address and
    // attached prefixes over the first hop of a cheapest path.
    let graph: Vec<Vec<(usize, u32)>> = routers
        .iter()
        .map(|r| {
            r.links
                .iter()
                .filter_map(|(end, li)| {
                    let cost = file.link.get((*li)?)?.cost.unwrap_or(1);
                    let j = router_names.iter().position(|n| n == &end.name)?;
                    Some((j, u32::from(cost)))
                })
                .collect()
        })
        .collect();
    let mut computed: Vec<Vec<(String, String)>> = Vec::new();
    for (i, _) in routers.iter().enumerate() {
        let hops = first_hops(&graph, i);
        let mut routes = Vec::new();
        for (j, other) in routers.iter().enumerate() {
            let Some(hop) = hops.get(j).copied().flatten() else {
                continue;
            };
            let via = router_names[hop].clone();
            routes.push((host_prefix(other.address), via.clone()));
            for (prefix, _) in &other.routes {
                if !routes.iter().any(|(p, _)| p == prefix) {
                    routes.push((prefix.clone(), via.clone()));
                }
            }
        }
        computed.push(routes);
    }

    // Each router's waist-router config, checked by the router's own parser.
    let mut processes = Vec::new();
    for ((r, section), computed) in routers.iter().zip(&file.router).zip(&computed) {
        let text = router_config(
            source,
            base,
            file,
            section,
            r.address,
            &r.links,
            &r.routes,
            computed,
            &r.originate,
        )?;
        let generated = Source::new(format!("{}.toml (generated)", r.name), text.clone());
        let checked = generated
            .parse::<waist_router::config::RouterFile>()
            .and_then(|f| waist_router::config::plan(&generated, &f).map(|_| ()));
        if let Err(e) = checked {
            return Err(err(
                &section.name,
                format!(
                    "router `{}`: its waist-router config is refused: {e}",
                    r.name
                ),
            ));
        }
        processes.push(Process {
            name: r.name.clone(),
            role: Role::Router,
            machine: r.machine.clone(),
            links: r.links.iter().map(|(l, _)| l.clone()).collect(),
            config: Some(text),
            serves: None,
            server: None,
        });
    }
    processes.extend(replicas);

    let name = file.name.clone().unwrap_or_else(|| {
        source
            .file()
            .file_stem()
            .map_or("waist".into(), |s| s.to_string_lossy().into_owned())
    });
    Ok(Plan {
        name,
        machines: machines.into_iter().map(|(m, (ip, _))| (m, ip)).collect(),
        processes,
        hosts,
        servers,
    })
}

/// `a/32` or `a/128`.
fn host_prefix(a: IpAddr) -> String {
    match a {
        IpAddr::V4(_) => format!("{a}/32"),
        IpAddr::V6(_) => format!("{a}/128"),
    }
}

/// Anything with a byte span in the file.
trait HasSpan {
    fn span(&self) -> std::ops::Range<usize>;
}

impl<T> HasSpan for Spanned<T> {
    fn span(&self) -> std::ops::Range<usize> {
        Spanned::span(self)
    }
}

mod router;

use router::{first_hops, router_config};

#[cfg(test)]
mod tests;
