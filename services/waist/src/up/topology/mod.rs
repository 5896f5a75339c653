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
//! metrics_base = 28000              # process i's metrics endpoint: 127.0.0.1:(base + i)
//!                                   #   (default first_port + 1000; 0: any free port)
//! capture = { ring_mb = 8 }         # captures: at most 8 MiB per link; `false`: none;
//!                                   #   `true` (the default): unbounded ([`capture`])
//! [defaults.router]                 # waist-router sections every router gets (a router's
//! dv = { update_ms = 500 }          #   own section of the same name replaces the default;
//!                                   #   dv = { infinity = 32 } for networks wider than 15
//!                                   #   hops: a network whose cheapest path between two
//!                                   #   distance-vector routers reaches infinity is refused,
//!                                   #   naming the path)
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
//! # ESP microcode (waist-router's `[esp] microcode` and `[[esp.instruction]]`): inline
//! # programs only from h1's link, COUNT installed under opcode 64 (the program's path
//! # relative to this file); or `[router.esp]` and `[[router.esp.instruction]]` tables.
//! # esp = { rate = 5000, microcode = ["h1"], instruction = [
//! #     { opcode = 64, name = "count", program = "../esp-microcode/count.snap" } ] }
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
//!
//! [[host]]                          # an end host that is a kernel network namespace
//! name = "h2"                       #   (root): `ip netns exec waist-demo-h2 ping …`
//! address = "10.2.0.10"
//! router = "r4"
//! kind = "netns"                    # "udp" (default): the link above; "netns": below
//!
//! [[stream]]                        # a stream whose handlers run on a router
//! id = 7                            # the RUDP stream id
//! router = "r2"                     # gives it `[streams]` (settings: `streams = { … }`
//!                                   #   inline on the router; `stream_host = "10.9.0.10"`
//!                                   #   there starts a `waist stream host` process linked
//!                                   #   to it, for streams without headroom)
//! to = ["h1", "h2"]                 # destinations in order: hosts (port 7400) or ADDR:PORT
//! handlers = "fields flight | multicast 0=status==2 1=all"   # the spec after `to`
//! ```
//!
//! A `kind = "netns"` host is a network namespace named `waist-RUN-HOST`
//! (`waist-demo-h2`) whose only device is a TUN link of its router ([`NetnsHost`]): the
//! router routes and announces the host's address over it like any host's, and once the
//! router runs, `waist up` moves the device into the namespace and gives it the host's
//! address, `lo` up and a default route through the device, so the kernel's own tools
//! (ping, curl, iperf3) cross the routers. It needs root and `/dev/net/tun` (`waist up`
//! refuses to start without, saying which), and runs on its router's machine: a `host`
//! key naming another machine is refused (a TUN device cannot cross machines), and `waist
//! up --only` makes it on the router's machine. The run's name must suit a namespace's
//! (letters, digits, `-`, `_`, `.`).
//!
//! What a `[[link]]` passes on to its routers (`mtu`, `cost`, `emulation`) is checked here
//! with netio's own validators, and a router's inline sections by waist-router's parser,
//! with errors located at what the author wrote in this file (``t.toml:11:29: key `loss`:
//! …``), not in the router configs generated from it.
//!
//! Ports are assigned in a fixed order (links, then hosts (a netns host takes none), then servers, each machine
//! counting from its own `first_port`), so every machine's `waist up --only` computes the
//! same addresses for both ends of a link that crosses machines.
//!
//! Metrics endpoints get fixed TCP ports too, on 127.0.0.1 of the machine a process runs
//! on: the i-th process of the plan (routers in file order, then every server's replicas,
//! counted across all machines) listens on `metrics_base + i`, so `r1`'s page is at the
//! same address run after run ([`Plan::metrics_addr`]).

use std::collections::BTreeMap;
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
    /// `[[stream]]`.
    #[serde(default)]
    pub stream: Vec<StreamSection>,
}

/// `[defaults]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// The default machine's IP address (default 127.0.0.1).
    pub ip: Option<Spanned<String>>,
    /// The default first port (default 27000, below Linux's ephemeral range).
    pub first_port: Option<Spanned<u16>>,
    /// The TCP port of the first process's metrics endpoint; process i gets
    /// `metrics_base + i` (default `first_port + 1000`; 0: any free port, as the kernel
    /// picks).
    pub metrics_base: Option<Spanned<u16>>,
    /// waist-router sections every router starts from.
    pub router: Option<Spanned<toml::Table>>,
    /// What the daemons capture ([`capture`]).
    pub capture: Option<Spanned<toml::Value>>,
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
const ROUTER_SECTIONS: [&str; 5] = ["esp", "snap", "dv", "route_cache", "streams"];

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
    /// `streams = {…}`: the stream handlers' settings (rate, share, overruns).
    pub streams: Option<Spanned<toml::Table>>,
    /// The address of a stream host process (`waist stream host`) attached to this
    /// router: the streams it has no headroom for run there.
    pub stream_host: Option<Spanned<String>>,
}

/// `[[link]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    /// The two routers it joins.
    pub between: Spanned<Vec<String>>,
    /// Distance-vector cost (default 1).
    pub cost: Option<Spanned<u16>>,
    /// Largest packet (default 1500).
    pub mtu: Option<Spanned<usize>>,
    /// Emulation of both directions.
    pub emulation: Option<Spanned<EmulationConfig>>,
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
    /// `udp` (default: a link for waist's host tools) or `netns` (a network namespace).
    pub kind: Option<Spanned<String>>,
}

/// `[[stream]]`: a stream whose handlers run on a router.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSection {
    /// The stream id (the RUDP header's).
    pub id: Spanned<u16>,
    /// The router its handlers run on (or its stream host, without headroom).
    pub router: Spanned<String>,
    /// Its destinations in order (destination `i` of the handlers): host names (their
    /// address, port 7400) or `ADDR:PORT`.
    pub to: Spanned<Vec<Spanned<String>>>,
    /// The handlers, in the spec grammar after `to`: `fields flight | multicast 0=… 1=…`.
    #[serde(default)]
    pub handlers: Option<Spanned<String>>,
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
    /// The largest packet it carries (its `[[link]]`'s `mtu`; 1500 for a host's or a
    /// replica's link).
    pub mtu: usize,
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

/// An end host that is a kernel network namespace (`kind = "netns"`), as planned and, once
/// made, as a run's state file records it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetnsHost {
    /// Its name.
    pub name: String,
    /// Its address (the namespace's device's).
    pub address: IpAddr,
    /// Its router.
    pub router: String,
    /// Its router's own address.
    pub router_address: IpAddr,
    /// The machine it is on (its router's).
    pub machine: String,
    /// The namespace: `waist-RUN-HOST`.
    pub namespace: String,
    /// The router's TUN device that moves into it (`whPID-I`: unique while this `waist up`
    /// runs, at most 15 bytes).
    pub device: String,
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
    /// Every end host with a UDP link (`kind = "udp"`).
    pub hosts: Vec<HostPlan>,
    /// Every end host that is a network namespace (`kind = "netns"`).
    pub netns: Vec<NetnsHost>,
    /// Every server: name, address and its replicas' names.
    pub servers: Vec<(String, IpAddr, Vec<String>)>,
    /// The metrics port of the first process (0: any free port); see [`Plan::metrics_addr`].
    pub metrics_base: u16,
    /// What every daemon captures (`[defaults] capture`).
    pub capture: Capture,
}

impl Plan {
    /// Where the process at `index` in [`Plan::processes`] serves its metrics:
    /// `127.0.0.1:(metrics_base + index)`, or `127.0.0.1:0` (any free port) if
    /// `metrics_base` is 0.
    pub fn metrics_addr(&self, index: usize) -> SocketAddr {
        let port = match self.metrics_base {
            0 => 0,
            base => u16::try_from(index)
                .ok()
                .and_then(|i| base.checked_add(i))
                .unwrap_or(0),
        };
        SocketAddr::from((DEFAULT_IP, port))
    }

    /// The processes that run on `machine` (all of them for `None`).
    pub fn on<'a>(&'a self, machine: Option<&'a str>) -> impl Iterator<Item = &'a Process> {
        self.processes
            .iter()
            .filter(move |p| machine.is_none_or(|m| p.machine == m))
    }
}

/// The metrics port of the first process of `file`'s `processes`: `[defaults]
/// metrics_base`, or `first_port + 1000`.
///
/// # Errors
///
/// If the last process's port would pass 65535 (located at the key that set the base).
pub(crate) fn metrics_base(
    source: &Source,
    file: &TopologyFile,
    processes: usize,
) -> Result<u16, ConfigError> {
    let d = &file.defaults;
    let (base, key): (u32, Option<&Spanned<u16>>) = match (&d.metrics_base, &d.first_port) {
        (Some(b), _) => (u32::from(*b.get_ref()), Some(b)),
        (None, first) => (
            u32::from(first.as_ref().map_or(DEFAULT_FIRST_PORT, |f| *f.get_ref())) + 1000,
            first.as_ref(),
        ),
    };
    if base == 0 {
        return Ok(0);
    }
    let last = base.saturating_add(u32::try_from(processes.saturating_sub(1)).unwrap_or(u32::MAX));
    match (u16::try_from(base), u16::try_from(last)) {
        (Ok(b), Ok(_)) => Ok(b),
        _ => {
            let message = format!(
                "metrics ports {base}..={last} (one per process) pass 65535: set a lower \
                 `metrics_base` in [defaults]"
            );
            Err(match key {
                Some(k) => source.error_for(k, message),
                None => source.error_at(None, message),
            })
        }
    }
}

/// How the planner hands out the link ends' UDP addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressing {
    /// Ports on each machine's IP, counting from its `first_port` (`waist up`).
    Ports,
    /// Addresses from a pool, in plan order, all at one port: the `n`-th end taken gets
    /// `first + n`, so the two ends of a link (always taken one after the other) share a
    /// /31. The pool holds `count` addresses (an even number). The containerlab export's
    /// veth addressing.
    Pool {
        /// The pool's first address.
        first: Ipv4Addr,
        /// How many addresses it holds.
        count: u32,
        /// The UDP port of every end.
        port: u16,
    },
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

/// Checks `file` (read from `source`, relative paths from `base`) and plans its processes,
/// step by step (the `planner` module): machines, routers, links, hosts, servers, static
/// routes, each router's config checked by waist-router's own parser.
///
/// # Errors
///
/// The first problem found, located in the file.
pub fn plan(source: &Source, file: &TopologyFile, base: &Path) -> Result<Plan, ConfigError> {
    plan_with(source, file, base, Addressing::Ports)
}

/// [`plan`] with the link ends addressed as `addressing` says. With a pool the metrics
/// ports are not planned (`metrics_base` 0): each process is alone in its container.
///
/// # Errors
///
/// The first problem found, located in the file (a pool that runs out too).
pub fn plan_with(
    source: &Source,
    file: &TopologyFile,
    base: &Path,
    addressing: Addressing,
) -> Result<Plan, ConfigError> {
    planner::Planner::plan(source, file, base, addressing)
}

pub mod capture;
mod planner;
mod router;

pub use capture::Capture;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_microcode;
#[cfg(test)]
mod tests_netns;
#[cfg(test)]
mod tests_streams;
