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
        format!("udp:{}={}", self.local, self.peer)
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

/// A router's waist-router config: the `config` file if any, then `[defaults.router]`, then
/// its inline sections (each replacing the one before), then what the topology makes: its
/// name and address, its links, routes to its hosts and servers, and the prefixes it
/// announces (if it runs distance vector).
#[allow(clippy::too_many_arguments)]
fn router_config(
    source: &Source,
    base: &Path,
    file: &TopologyFile,
    section: &RouterSection,
    address: IpAddr,
    links: &[(LinkEnd, Option<usize>)],
    routes: &[(String, String)],
    computed: &[(String, String)],
    originate: &[String],
) -> Result<String, ConfigError> {
    use toml::{Table, Value};
    let mut t = match &section.config {
        Some(path) => {
            let full = base.join(path.get_ref());
            let text = std::fs::read_to_string(&full).map_err(|e| {
                source.error_for(path, format!("cannot read {}: {e}", full.display()))
            })?;
            text.parse::<Table>().map_err(|e| {
                source.error_for(
                    path,
                    format!("{} is not TOML: {}", full.display(), e.message()),
                )
            })?
        }
        None => Table::new(),
    };
    for (k, v) in &file.defaults.router {
        t.insert(k.clone(), v.clone());
    }
    let inline = [
        &section.esp,
        &section.snap,
        &section.dv,
        &section.route_cache,
    ];
    for (k, v) in ROUTER_SECTIONS.iter().zip(inline) {
        if let Some(v) = v {
            t.insert((*k).to_string(), Value::Table(v.get_ref().clone()));
        }
    }
    let mut node = match t.remove("node") {
        Some(Value::Table(n)) => n,
        _ => Table::new(),
    };
    node.insert("name".into(), Value::String(section.name.get_ref().clone()));
    node.insert(
        "addresses".into(),
        Value::Array(vec![Value::String(address.to_string())]),
    );
    t.insert("node".into(), Value::Table(node));
    let dv_on = t.contains_key("dv");
    if let Some(Value::Table(dv)) = t.get_mut("dv") {
        let mut all = match dv.remove("originate") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        all.extend(originate.iter().map(|p| Value::String(p.clone())));
        dv.insert("originate".into(), Value::Array(all));
    }
    let mut link_list = match t.remove("link") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    for (end, settings) in links {
        let mut l = Table::new();
        l.insert("name".into(), Value::String(end.name.clone()));
        l.insert("kind".into(), Value::String("udp".into()));
        l.insert("local".into(), Value::String(end.local.to_string()));
        l.insert("peer".into(), Value::String(end.peer.to_string()));
        if let Some(s) = settings.and_then(|i| file.link.get(i)) {
            if dv_on {
                let cost = Value::Integer(i64::from(s.cost.unwrap_or(1)));
                l.insert("cost".into(), cost);
            }
            if let Some(mtu) = s.mtu {
                l.insert("mtu".into(), Value::Integer(mtu as i64));
            }
            if let Some(e) = &s.emulation {
                l.insert("emulation".into(), emulation_table(e));
            }
        }
        link_list.push(Value::Table(l));
    }
    t.insert("link".into(), Value::Array(link_list));
    let mut route_list = match t.remove("route") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let without_dv = if dv_on { &[][..] } else { computed };
    // Routes to one prefix over several links become one route with backups.
    let mut grouped: Vec<(&String, Vec<Value>)> = Vec::new();
    for (prefix, link) in routes.iter().chain(without_dv) {
        let link = Value::String(link.clone());
        match grouped.iter_mut().find(|(p, _)| *p == prefix) {
            Some((_, links)) => links.push(link),
            None => grouped.push((prefix, vec![link])),
        }
    }
    for (prefix, mut links) in grouped {
        let mut r = Table::new();
        r.insert("prefix".into(), Value::String(prefix.clone()));
        if links.len() == 1 {
            r.insert("link".into(), links.remove(0));
        } else {
            r.insert("links".into(), Value::Array(links));
        }
        route_list.push(Value::Table(r));
    }
    t.insert("route".into(), Value::Array(route_list));
    let header = format!(
        "# Generated by `waist up` from {} (router `{}`).\n",
        source.file().display(),
        section.name.get_ref()
    );
    let body = toml::to_string(&t).map_err(|e| {
        source.error_for(
            &section.name,
            format!("cannot write its router config: {e}"),
        )
    })?;
    Ok(header + &body)
}

/// netio's `emulation` table for `e`.
fn emulation_table(e: &EmulationConfig) -> toml::Value {
    let mut t = toml::Table::new();
    for (k, v) in [
        ("delay_ms", e.delay_ms),
        ("jitter_ms", e.jitter_ms),
        ("loss", e.loss),
        ("duplicate", e.duplicate),
        ("rate_mbps", e.rate_mbps),
        ("queue_ms", e.queue_ms),
    ] {
        if v != 0.0 {
            t.insert(k.into(), toml::Value::Float(v));
        }
    }
    if let Some(seed) = e.seed {
        t.insert("seed".into(), toml::Value::Integer(seed as i64));
    }
    toml::Value::Table(t)
}

/// For each router, the neighbour a cheapest path from `from` starts with (`None` for
/// `from` itself and for routers it cannot reach). Dijkstra over small graphs.
fn first_hops(graph: &[Vec<(usize, u32)>], from: usize) -> Vec<Option<usize>> {
    let n = graph.len();
    let mut dist = vec![u32::MAX; n];
    let mut hop: Vec<Option<usize>> = vec![None; n];
    let mut done = vec![false; n];
    if let Some(d) = dist.get_mut(from) {
        *d = 0;
    }
    while let Some(u) = (0..n)
        .filter(|&i| !done[i] && dist[i] != u32::MAX)
        .min_by_key(|&i| (dist[i], i))
    {
        done[u] = true;
        for &(v, cost) in &graph[u] {
            let d = dist[u].saturating_add(cost);
            if d < dist[v] {
                dist[v] = d;
                hop[v] = if u == from { Some(v) } else { hop[u] };
            }
        }
    }
    hop
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

#[cfg(test)]
mod tests {
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
}
