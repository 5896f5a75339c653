//! [`plan`](super::plan) step by step: machines, routers, the links between them, hosts,
//! servers, static routes for routers without distance vector, and each router's config.
//!
//! The steps run in file order and hand out UDP ports as they go (links, then hosts, then
//! servers, each machine counting from its own `first_port`), so every machine's
//! `waist up --only` computes the same addresses for both ends of a link.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use netio::config::{ConfigError, Source};
use netsim::graph::Graph;
use toml::Spanned;
use waist_router::config::RouterFile;

use super::router::{RouterDraft, refused, router_file, write_router_file};
use super::{
    Addressing, DEFAULT_FIRST_PORT, DEFAULT_IP, HostPlan, HostSection, LOCAL, LinkEnd, NetnsHost,
    Plan, Process, Role, TopologyFile,
};

/// The plan under construction.
pub(super) struct Planner<'a> {
    source: &'a Source,
    file: &'a TopologyFile,
    base: &'a Path,
    /// How link ends are addressed.
    addressing: Addressing,
    /// How many addresses of a pool were handed out.
    pooled: u32,
    /// Every machine: its IP and the next UDP port handed out there (0: none left).
    machines: BTreeMap<String, (IpAddr, u16)>,
    /// Node names taken so far.
    names: BTreeSet<String>,
    /// Addresses taken so far, and by whom.
    addresses: BTreeMap<IpAddr, String>,
    routers: Vec<RouterDraft>,
    hosts: Vec<HostPlan>,
    netns: Vec<NetnsHost>,
    /// Every server: name, address and its replicas' names.
    servers: Vec<(String, IpAddr, Vec<String>)>,
    replicas: Vec<Process>,
}

impl<'a> Planner<'a> {
    /// Runs every step over `file` (read from `source`, relative paths from `base`).
    pub(super) fn plan(
        source: &'a Source,
        file: &'a TopologyFile,
        base: &'a Path,
        addressing: Addressing,
    ) -> Result<Plan, ConfigError> {
        let mut p = Planner::new(source, file, base);
        p.addressing = addressing;
        let static_routes = p.draft()?;
        let mut processes = Vec::new();
        let mut infinities = Vec::new();
        for (i, computed) in static_routes.iter().enumerate() {
            let (process, infinity) = p.router_process(i, computed)?;
            processes.push(process);
            infinities.push(infinity);
        }
        p.check_reach(&infinities)?;
        processes.append(&mut p.replicas);
        let name = p.run_name();
        let metrics_base = match addressing {
            Addressing::Ports => super::metrics_base(source, file, processes.len())?,
            Addressing::Pool { .. } => 0,
        };
        let capture = super::capture::parse(source, file.defaults.capture.as_ref())?;
        Ok(Plan {
            name,
            machines: p.machines.into_iter().map(|(m, (ip, _))| (m, ip)).collect(),
            processes,
            hosts: p.hosts,
            netns: p.netns,
            servers: p.servers,
            metrics_base,
            capture,
        })
    }

    /// Nothing planned yet.
    pub(super) fn new(source: &'a Source, file: &'a TopologyFile, base: &'a Path) -> Self {
        Planner {
            source,
            file,
            base,
            addressing: Addressing::Ports,
            pooled: 0,
            machines: BTreeMap::new(),
            names: BTreeSet::new(),
            addresses: BTreeMap::new(),
            routers: Vec::new(),
            hosts: Vec::new(),
            netns: Vec::new(),
            servers: Vec::new(),
            replicas: Vec::new(),
        }
    }

    /// Every step but the routers' configs; returns each router's static routes.
    pub(super) fn draft(&mut self) -> Result<Vec<Vec<(String, String)>>, ConfigError> {
        self.machines()?;
        self.routers()?;
        self.links()?;
        self.hosts()?;
        self.servers()?;
        self.stream_hosts()?;
        self.streams()?;
        Ok(self.static_routes())
    }

    /// The run's name: the file's `name`, else its stem.
    fn run_name(&self) -> String {
        self.file.name.clone().unwrap_or_else(|| {
            self.source
                .file()
                .file_stem()
                .map_or("waist".into(), |s| s.to_string_lossy().into_owned())
        })
    }

    /// An error located at `s`.
    fn err<T>(&self, s: &Spanned<T>, message: String) -> ConfigError {
        self.source.error_for(s, message)
    }

    fn ip_of(&self, s: &Spanned<String>) -> Result<IpAddr, ConfigError> {
        s.get_ref()
            .parse()
            .map_err(|_| self.err(s, format!("`{}` is not an IP address", s.get_ref())))
    }

    /// The default machine and every `[[machine]]`, each named once.
    fn machines(&mut self) -> Result<(), ConfigError> {
        let defaults = &self.file.defaults;
        let default_ip = match &defaults.ip {
            Some(s) => self.ip_of(s)?,
            None => IpAddr::V4(DEFAULT_IP),
        };
        let default_first = defaults
            .first_port
            .as_ref()
            .map_or(DEFAULT_FIRST_PORT, |p| *p.get_ref());
        self.machines
            .insert(LOCAL.to_string(), (default_ip, default_first));
        for m in &self.file.machine {
            let first = m
                .first_port
                .as_ref()
                .map_or(default_first, |p| *p.get_ref());
            let ip = self.ip_of(&m.ip)?;
            if self
                .machines
                .insert(m.name.get_ref().clone(), (ip, first))
                .is_some()
            {
                return Err(self.err(
                    &m.name,
                    format!("machine `{}` named twice", m.name.get_ref()),
                ));
            }
        }
        Ok(())
    }

    /// The machine a node's `host` names (the default one if none).
    fn machine_of(&self, host: &Option<Spanned<String>>) -> Result<String, ConfigError> {
        match host {
            None => Ok(LOCAL.to_string()),
            Some(s) if self.machines.contains_key(s.get_ref()) => Ok(s.get_ref().clone()),
            Some(s) => Err(self.err(s, format!("no [[machine]] named `{}`", s.get_ref()))),
        }
    }

    /// A node's name, checked and taken.
    fn name(&mut self, s: &Spanned<String>) -> Result<String, ConfigError> {
        let n = s.get_ref();
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(self.err(s, format!("`{n}`: names are letters, digits, - and _")));
        }
        if !self.names.insert(n.clone()) {
            return Err(self.err(s, format!("`{n}` names two nodes")));
        }
        Ok(n.clone())
    }

    /// A node's address, checked and taken by `owner`.
    fn address(&mut self, s: &Spanned<String>, owner: &str) -> Result<IpAddr, ConfigError> {
        let a = self.ip_of(s)?;
        if let Some(other) = self.addresses.insert(a, owner.to_string()) {
            return Err(self.err(s, format!("address {a} is also {other}'s")));
        }
        Ok(a)
    }

    /// The next UDP address of `machine`; `at` locates the error if none is left.
    fn take<T>(&mut self, machine: &str, at: &Spanned<T>) -> Result<SocketAddr, ConfigError> {
        if let Addressing::Pool { first, count, port } = self.addressing {
            if self.pooled >= count {
                let e = format!(
                    "the {count} link addresses from {first} are used up: at most {} links \
                     (router links, hosts and server replicas; one /31 each)",
                    count / 2
                );
                return Err(self.err(at, e));
            }
            let ip = Ipv4Addr::from(u32::from(first).wrapping_add(self.pooled));
            self.pooled += 1;
            return Ok(SocketAddr::new(IpAddr::V4(ip), port));
        }
        let (ip, port) = match self.machines.get_mut(machine) {
            Some((ip, next)) if *next != 0 => {
                let got = *next;
                *next = next.wrapping_add(1);
                (*ip, got)
            }
            _ => {
                let e = format!("machine `{machine}` ran out of UDP ports");
                return Err(self.err(at, e));
            }
        };
        Ok(SocketAddr::new(ip, port))
    }

    /// The router `s` names.
    fn router_index(&self, s: &Spanned<String>) -> Result<usize, ConfigError> {
        self.routers
            .iter()
            .position(|r| &r.name == s.get_ref())
            .ok_or_else(|| self.err(s, format!("no [[router]] named `{}`", s.get_ref())))
    }

    /// Every `[[router]]`: its name, address and machine.
    fn routers(&mut self) -> Result<(), ConfigError> {
        for r in &self.file.router {
            let name = self.name(&r.name)?;
            let draft = RouterDraft {
                address: self.address(&r.address, &name)?,
                name,
                machine: self.machine_of(&r.host)?,
                links: Vec::new(),
                tuns: Vec::new(),
                routes: Vec::new(),
                originate: r.originate.iter().map(|p| p.get_ref().clone()).collect(),
                stream_host: None,
                streams: Vec::new(),
            };
            self.routers.push(draft);
        }
        Ok(())
    }

    /// Every `[[link]]`: two routers, once each pair, a port at each end.
    fn links(&mut self) -> Result<(), ConfigError> {
        let mut linked: Vec<(usize, usize)> = Vec::new();
        for (li, l) in self.file.link.iter().enumerate() {
            let [a, b] = l.between.get_ref().as_slice() else {
                return Err(self.err(&l.between, "`between` names two routers".into()));
            };
            let at = |n: &String| Spanned::new(l.between.span(), n.clone());
            let (ia, ib) = (self.router_index(&at(a))?, self.router_index(&at(b))?);
            if ia == ib {
                return Err(self.err(&l.between, format!("a link from `{a}` to itself")));
            }
            if linked.contains(&(ia, ib)) || linked.contains(&(ib, ia)) {
                let e = format!("`{a}` and `{b}` are already linked");
                return Err(self.err(&l.between, e));
            }
            let sa = self.take(&self.routers[ia].machine.clone(), &l.between)?;
            let sb = self.take(&self.routers[ib].machine.clone(), &l.between)?;
            let mtu = l.mtu.as_ref().map_or(DEFAULT_MTU, |m| *m.get_ref());
            let end = |name: &String, local, peer| LinkEnd {
                name: name.clone(),
                local,
                peer,
                mtu,
            };
            self.routers[ia].links.push((end(b, sa, sb), Some(li)));
            self.routers[ib].links.push((end(a, sb, sa), Some(li)));
            linked.push((ia, ib));
            self.link_settings(l)?;
        }
        Ok(())
    }

    /// A `[[link]]`'s MTU, cost and emulation, checked here as each router's start checks
    /// them (netio's and waist-router's own checks) so that errors name the topology's
    /// lines, not the generated configs'.
    fn link_settings(&self, l: &super::LinkSection) -> Result<(), ConfigError> {
        let mtu = l.mtu.as_ref().map_or(DEFAULT_MTU, |m| *m.get_ref());
        if let Some(m) = &l.mtu
            && !(68..=65_535).contains(&mtu)
        {
            return Err(self.err(m, "MTU must be 68..=65535".into()));
        }
        if let Some(c) = l.cost.as_ref().filter(|c| *c.get_ref() == 0) {
            return Err(self.err(c, "a routing cost is at least 1".into()));
        }
        if let Some(e) = &l.emulation {
            self.source.emulation(e, mtu)?;
        }
        Ok(())
    }

    /// Every `[[host]]`: a link on its router (UDP, or TUN for a netns host), which routes
    /// and announces its address.
    fn hosts(&mut self) -> Result<(), ConfigError> {
        for h in &self.file.host {
            let n = self.name(&h.name)?;
            let a = self.address(&h.address, &n)?;
            let ir = self.router_index(&h.router)?;
            match h.kind.as_ref().map(|k| (k, k.get_ref().as_str())) {
                None | Some((_, "udp")) => {}
                // In a container lab every host is a container: a namespace host too.
                Some((_, "netns")) if matches!(self.addressing, Addressing::Pool { .. }) => {}
                Some((_, "netns")) => {
                    self.netns_host(h, n, a, ir)?;
                    continue;
                }
                Some((k, other)) => {
                    let e = format!(
                        "host `{n}`: kind `{other}`: a host is `udp` (a link for waist's \
                         host tools) or `netns` (a kernel network namespace)"
                    );
                    return Err(self.err(k, e));
                }
            }
            let machine = self.machine_of(&h.host)?;
            let local = self.take(&machine, &h.name)?;
            let peer = self.take(&self.routers[ir].machine.clone(), &h.name)?;
            let router = &mut self.routers[ir];
            let end = LinkEnd {
                name: n.clone(),
                local: peer,
                peer: local,
                mtu: DEFAULT_MTU,
            };
            router.links.push((end, None));
            router.routes.push((host_prefix(a), n.clone()));
            router.originate.push(host_prefix(a));
            self.hosts.push(HostPlan {
                name: n,
                address: a,
                router: router.name.clone(),
                machine,
                local,
                peer,
            });
        }
        Ok(())
    }

    /// A `kind = "netns"` host `h` (named `n`, address `a`, router `ir`): a TUN link on its
    /// router, on the router's machine, which routes and announces its address; the device
    /// moves into the namespace `waist-RUN-HOST` once the router runs.
    fn netns_host(
        &mut self,
        h: &HostSection,
        n: String,
        a: IpAddr,
        ir: usize,
    ) -> Result<(), ConfigError> {
        let machine = self.routers[ir].machine.clone();
        if let Some(m) = h.host.as_ref().filter(|m| *m.get_ref() != machine) {
            let e = format!(
                "host `{n}` is a network namespace, so it is on its router `{}`'s machine \
                 `{machine}`, not `{}` (a TUN device cannot cross machines): drop `host`",
                self.routers[ir].name,
                m.get_ref()
            );
            return Err(self.err(m, e));
        }
        let run = self.run_name();
        if run.is_empty()
            || !run
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            let at = h.kind.as_ref().map_or(h.name.span(), Spanned::span);
            let e = format!(
                "host `{n}`: the run's name `{run}` cannot name its network namespace: give \
                 the file a `name` of letters, digits, -, _ and ."
            );
            return Err(self.source.error_at(Some(at), e));
        }
        let router = &mut self.routers[ir];
        let device = format!("wh{}-{}", std::process::id(), self.netns.len());
        router.tuns.push((n.clone(), device.clone()));
        router.routes.push((host_prefix(a), n.clone()));
        router.originate.push(host_prefix(a));
        self.netns.push(NetnsHost {
            namespace: format!("waist-{run}-{n}"),
            name: n,
            address: a,
            router: router.name.clone(),
            router_address: router.address,
            machine,
            device,
        });
        Ok(())
    }

    /// Every `[[server]]`: its replicas, each a process with a link on the router, which
    /// has one route to the server's address over all of them.
    fn servers(&mut self) -> Result<(), ConfigError> {
        for s in &self.file.server {
            let n = self.name(&s.name)?;
            let a = self.address(&s.address, &n)?;
            let ir = self.router_index(&s.router)?;
            let machine = self.machine_of(&s.host)?;
            let root = self.base.join(s.root.get_ref());
            if !root.is_dir() {
                let e = format!("{} is not a directory to serve", root.display());
                return Err(self.err(&s.root, e));
            }
            let count = s.replicas.as_ref().map_or(1, |r| *r.get_ref());
            if let Some(r) = s.replicas.as_ref().filter(|_| count == 0) {
                return Err(self.err(r, "a server needs at least one replica".into()));
            }
            let mut names_of = Vec::new();
            for i in 1..=count {
                let rn = format!("{n}-{i}");
                self.name(&Spanned::new(s.name.span(), rn.clone()))?;
                let local = self.take(&machine, &s.name)?;
                let peer = self.take(&self.routers[ir].machine.clone(), &s.name)?;
                let router = &mut self.routers[ir];
                let end = LinkEnd {
                    name: rn.clone(),
                    local: peer,
                    peer: local,
                    mtu: DEFAULT_MTU,
                };
                router.links.push((end, None));
                // One route over every replica's link, in order: the router sends to the
                // first whose peer answers (a dead replica's refusals take its link down).
                router.routes.push((host_prefix(a), rn.clone()));
                if i == 1 {
                    router.originate.push(host_prefix(a));
                }
                self.replicas.push(Process {
                    name: rn.clone(),
                    role: Role::Server,
                    machine: machine.clone(),
                    links: vec![LinkEnd {
                        name: router.name.clone(),
                        local,
                        peer,
                        mtu: DEFAULT_MTU,
                    }],
                    config: None,
                    serves: Some((a, root.clone())),
                    server: Some(n.clone()),
                });
                names_of.push(rn);
            }
            self.servers.push((n, a, names_of));
        }
        Ok(())
    }

    /// Every router's `stream_host`: a stream host process (a waist-router run with
    /// [`waist_router::streams::host_config`]) named `ROUTER-streams`, linked to it; the
    /// router routes and announces its address and hands it the streams it cannot admit.
    fn stream_hosts(&mut self) -> Result<(), ConfigError> {
        for (ir, r) in self.file.router.iter().enumerate() {
            let Some(at) = &r.stream_host else { continue };
            let n = self.name(&Spanned::new(
                at.span(),
                format!("{}-streams", r.name.get_ref()),
            ))?;
            let a = self.address(at, &n)?;
            let machine = self.routers[ir].machine.clone();
            let local = self.take(&machine, at)?;
            let peer = self.take(&machine, at)?;
            let router = &mut self.routers[ir];
            router.links.push((
                LinkEnd {
                    name: n.clone(),
                    local: peer,
                    peer: local,
                    mtu: DEFAULT_MTU,
                },
                None,
            ));
            router.routes.push((host_prefix(a), n.clone()));
            router.originate.push(host_prefix(a));
            router.stream_host = Some(a);
            let via = crate::host::Via::Udp { local, peer }.to_string();
            self.replicas.push(Process {
                name: n.clone(),
                role: Role::Router,
                machine,
                links: vec![LinkEnd {
                    name: "router".into(),
                    local,
                    peer,
                    mtu: DEFAULT_MTU,
                }],
                config: Some(waist_router::streams::host_config(&n, a, &via)),
                serves: None,
                server: None,
            });
        }
        Ok(())
    }

    /// Every `[[stream]]`: its spec (`to` the destinations' addresses, then its handlers),
    /// checked by the stream handlers' own parser, deployed on its router at start.
    fn streams(&mut self) -> Result<(), ConfigError> {
        for st in &self.file.stream {
            let ir = self.router_index(&st.router)?;
            let mut to = Vec::new();
            for d in st.to.get_ref() {
                let named = self.hosts.iter().map(|h| (&h.name, h.address));
                let netns = self.netns.iter().map(|h| (&h.name, h.address));
                let addr = match named.chain(netns).find(|(n, _)| *n == d.get_ref()) {
                    Some((_, a)) => SocketAddr::new(a, stream_handlers::node::DATA_PORT),
                    None => d.get_ref().parse().map_err(|_| {
                        self.err(
                            d,
                            format!("`{}` is neither a [[host]] nor ADDR:PORT", d.get_ref()),
                        )
                    })?,
                };
                to.push(addr.to_string());
            }
            if to.is_empty() {
                return Err(self.err(&st.to, "a stream needs at least one destination".into()));
            }
            let mut spec = format!("to {}", to.join(" "));
            if let Some(h) = &st.handlers {
                spec = format!("{spec} | {}", h.get_ref());
            }
            if let Err(e) = spec.parse::<stream_handlers::spec::Spec>() {
                let at = st.handlers.as_ref().map_or(st.to.span(), Spanned::span);
                return Err(self.source.error_at(Some(at), e.to_string()));
            }
            let id = *st.id.get_ref();
            if self.routers[ir].streams.iter().any(|(i, _)| *i == id) {
                let e = format!("stream {id} is on router `{}` twice", st.router.get_ref());
                return Err(self.err(&st.id, e));
            }
            self.routers[ir].streams.push((id, spec));
        }
        Ok(())
    }

    /// The routers and their links as a graph, each link at its cost (default 1).
    fn graph(&self) -> Graph {
        let mut graph = Graph::new(self.routers.len());
        for (i, r) in self.routers.iter().enumerate() {
            for (iface, (end, li)) in r.links.iter().enumerate() {
                let cost = li
                    .and_then(|li| self.file.link.get(li))
                    .map(|l| l.cost.as_ref().map(|c| *c.get_ref()));
                let peer = self.routers.iter().position(|o| o.name == end.name);
                if let (Some(cost), Some(j)) = (cost, peer) {
                    graph.add_arc(i, iface, j, u64::from(cost.unwrap_or(1)));
                }
            }
        }
        graph
    }

    /// Refuses a network distance vector cannot span: a router (`infinities[i]`: its
    /// infinity, `None` without distance vector) whose cheapest path to another router
    /// running distance vector costs its infinity or more would never learn that router's
    /// prefixes. The error names the longest such path and is located at the router.
    fn check_reach(&self, infinities: &[Option<u16>]) -> Result<(), ConfigError> {
        let graph = self.graph();
        for (i, infinity) in infinities.iter().enumerate() {
            let Some(infinity) = *infinity else { continue };
            let paths = graph.shortest_paths(i);
            let far = paths
                .iter()
                .enumerate()
                .filter(|(j, _)| infinities.get(*j).is_some_and(Option::is_some))
                .filter_map(|(j, p)| p.map(|p| (j, p.cost)))
                .filter(|(_, cost)| *cost >= u64::from(infinity))
                .max_by_key(|(j, cost)| (*cost, core::cmp::Reverse(*j)));
            let (Some((j, cost)), Some(section)) = (far, self.file.router.get(i)) else {
                continue;
            };
            let names: Vec<&str> = self
                .path(&graph, i, j)
                .iter()
                .filter_map(|k| self.routers.get(*k).map(|r| r.name.as_str()))
                .collect();
            return Err(self.err(
                &section.name,
                format!(
                    "distance vector cannot span this network: {} costs {cost}, at or above \
                     its infinity {infinity}, so `{}` would never learn `{}`'s prefixes \
                     (raise it: `dv = {{ infinity = {} }}` under [defaults.router])",
                    names.join(" → "),
                    names.first().unwrap_or(&"?"),
                    names.last().unwrap_or(&"?"),
                    (cost + 1).next_power_of_two().max(32)
                ),
            ));
        }
        Ok(())
    }

    /// The routers along a cheapest path from `from` to `to` (both included), following
    /// each router's own first hop.
    fn path(&self, graph: &Graph, from: usize, to: usize) -> Vec<usize> {
        let mut path = vec![from];
        let mut at = from;
        while at != to && path.len() <= self.routers.len() {
            let Some(hop) = graph
                .shortest_paths(at)
                .get(to)
                .copied()
                .flatten()
                .and_then(|p| p.first)
            else {
                break;
            };
            at = hop.next;
            path.push(at);
        }
        path
    }

    /// Routes for routers without distance vector, per router: every other router's
    /// address and attached prefixes over the first hop of a cheapest path
    /// (`netsim::graph`: on a tie, fewer hops, then the link listed first).
    fn static_routes(&self) -> Vec<Vec<(String, String)>> {
        let graph = self.graph();
        let mut all = Vec::new();
        for i in 0..self.routers.len() {
            let paths = graph.shortest_paths(i);
            let mut routes: Vec<(String, String)> = Vec::new();
            for (path, other) in paths.iter().zip(&self.routers) {
                let Some(hop) = path.and_then(|p| p.first) else {
                    continue;
                };
                let via = &self.routers[hop.next].name;
                routes.push((host_prefix(other.address), via.clone()));
                for (prefix, _) in &other.routes {
                    if !routes.iter().any(|(p, _)| p == prefix) {
                        routes.push((prefix.clone(), via.clone()));
                    }
                }
            }
            all.push(routes);
        }
        all
    }

    /// Router `i`'s waist-router config (`computed`: its static routes), typed and as
    /// written, checked by the router's own parser.
    pub(super) fn router_config(
        &self,
        i: usize,
        computed: &[(String, String)],
    ) -> Result<(RouterFile, String), ConfigError> {
        let (Some(r), Some(section)) = (self.routers.get(i), self.file.router.get(i)) else {
            return Err(self.source.error_at(None, format!("no router {i}")));
        };
        let config = router_file(self.source, self.base, self.file, section, r, computed)?;
        let text = write_router_file(self.source, section, &config)?;
        let generated = Source::new(format!("{}.toml (generated)", r.name), text.clone());
        generated
            .parse::<RouterFile>()
            .and_then(|f| waist_router::config::plan(&generated, &f).map(|_| ()))
            .map_err(|e| refused(self.source, self.file, section, e))?;
        Ok((config, text))
    }

    /// Router `i`'s process (`computed`: its static routes) and its distance vector's
    /// infinity (`None` without distance vector).
    fn router_process(
        &self,
        i: usize,
        computed: &[(String, String)],
    ) -> Result<(Process, Option<u16>), ConfigError> {
        let (config, text) = self.router_config(i, computed)?;
        let infinity = config.dv.as_ref().map(|d| {
            let default = fastpath::dv::Config::new(0).infinity;
            d.get_ref()
                .infinity
                .as_ref()
                .map_or(default, |x| *x.get_ref())
        });
        let r = &self.routers[i];
        let process = Process {
            name: r.name.clone(),
            role: Role::Router,
            machine: r.machine.clone(),
            links: r.links.iter().map(|(l, _)| l.clone()).collect(),
            config: Some(text),
            serves: None,
            server: None,
        };
        Ok((process, infinity))
    }
}

/// A link's MTU unless its `[[link]]` gives one.
const DEFAULT_MTU: usize = 1500;

/// `a/32` or `a/128`.
fn host_prefix(a: IpAddr) -> String {
    match a {
        IpAddr::V4(_) => format!("{a}/32"),
        IpAddr::V6(_) => format!("{a}/128"),
    }
}
