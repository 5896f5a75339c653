//! The router's TOML config, and its translation into a `waist_node::Config` plus the
//! routes, groups and prefixes to install. Every error names the file, line and key.
//!
//! ```toml
//! [node]
//! name = "r1"                      # for logs, metrics and pcap names
//! addresses = ["10.0.0.1"]         # the router's own addresses (first IPv4 names it to [dv])
//! icmp = true                      # ICMP errors and echo replies (default true)
//!
//! [esp]                            # absent: ESP packets are forwarded untouched
//! rate = 10000                     # bindings created per second each context must hold
//! lifetime_s = 10                  # τ (ESP §2.1)
//! key_seed = 7                     # secrets derived from it (absent: random at start)
//! contexts = ["input", "central", "output"]   # which contexts run instructions (default all)
//! microcode = "on"                 # inline microcode (opcode 32): "on" (default), "off", or
//!                                  # the links whose packets may carry it: ["to-r2"]
//!
//! [[esp.instruction]]              # a SNAP program installed as an ESP instruction
//! opcode = 64                      # 64..=127 (see [`crate::microcode`])
//! name = "count"
//! program = "count.snap"           # SNAP assembly, relative to this file's directory
//!
//! [snap]                           # absent: SNAP packets are forwarded as plain IP
//! local_runs = 64
//! services = ["ess"]               # ess.get / ess.put / ess.count for SNAP programs
//!
//! [route_cache]                    # absent: straight to the longest-prefix match
//! log2 = 12
//!
//! [dv]                             # absent: static routes only
//! router_id = "10.0.0.1"           # names the router (default: first IPv4 address;
//!                                  # required when [node] addresses are IPv6 only)
//! originate = ["10.1.0.0/16"]      # the networks attached here
//! update_ms = 30000                # RIP-like timers (defaults shown)
//! timeout_ms = 180000
//! gc_ms = 120000
//! triggered_ms = 1000
//! infinity = 16                    # the cost meaning unreachable (bounds the diameter)
//!
//! [[link]]                         # netio's link section: kind udp | tun, cost = DV cost
//! name = "to-r2"
//! kind = "udp"
//! local = "127.0.0.1:40001"
//! peer = "127.0.0.1:40002"
//! cost = 1
//! holddown_ms = 1000               # udp: down after a refusal this long, then retried
//!
//! [[link]]                         # the same, in the one notation flags use too
//! name = "to-r3"
//! on = "udp:127.0.0.1:40003=127.0.0.1:40004"
//!
//! [[link]]                         # a TUN device (root), offload on unless `offload = false`
//! name = "lan"
//! on = "tun:wr1,10.1.0.1/24"
//!
//! [[route]]
//! prefix = "10.9.0.0/16"
//! link = "to-r2"                   # one link …
//!
//! [[route]]
//! prefix = "10.8.0.0/16"
//! links = ["to-r2", "to-r3"]       # … or several, in preference order (backups)
//!
//! [[group]]
//! address = "224.1.1.1"
//! links = ["to-r2"]
//! ```
//!
//! ## Link liveness and backup routes
//!
//! A UDP link whose peer's port is closed (the peer process died) is refused by the kernel
//! (ICMP port unreachable); the link goes *down* at the first refusal, comes *up* when a
//! datagram from the peer arrives, and is tried again after its `holddown_ms` (default
//! 1000). On each change the daemon logs one line (`link to-r2 down: peer refused`) and
//! calls `Node::set_link`: distance vector withdraws the routes through a down link at once
//! (no waiting for `timeout_ms`), and a static route moves to the first of its `links` that
//! is up. A route whose links are all down is withdrawn: shorter or learned routes take
//! over. TUN links are always up.
//!
//! A `[[route]]` names either `link` (one) or `links` (a non-empty list, preference order,
//! no repeats); a prefix has one `[[route]]`.

use std::net::IpAddr;

use fastpath::lpm::IpPrefix;
use netio::config::{ConfigError, LinkConfig, Source};
use netio::link::parse_cidr;
use serde::{Deserialize, Serialize};
use toml::Spanned;
use waist_node::{Config, EspConfig, IfaceConfig, SnapEss};

use crate::microcode::{InstructionSection, MicrocodeSetting};

/// The whole file. It writes back as it reads (`toml::to_string`), absent sections, empty
/// lists and defaults left out: `waist up` builds one per router and writes it so.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouterFile {
    /// `[node]`.
    pub node: NodeSection,
    /// `[esp]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub esp: Option<EspSection>,
    /// `[snap]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snap: Option<SnapSection>,
    /// `[route_cache]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_cache: Option<CacheSection>,
    /// `[dv]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dv: Option<Spanned<DvSection>>,
    /// `[[link]]`, numbered in order (interface `i` is the `i`-th link).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link: Vec<LinkConfig>,
    /// `[[route]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<RouteSection>,
    /// `[[group]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group: Vec<GroupSection>,
    /// `[streams]` (stream handlers; see [`crate::streams`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<Spanned<crate::streams::StreamsSection>>,
    /// `[[stream]]`: streams deployed at start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream: Vec<crate::streams::StreamSection>,
}

/// `[node]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSection {
    /// The router's name.
    pub name: String,
    /// Its own addresses.
    pub addresses: Vec<Spanned<String>>,
    /// ICMP on (default true).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub icmp: bool,
}

fn yes() -> bool {
    true
}

fn is_yes(v: &bool) -> bool {
    *v == yes()
}

/// `[esp]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EspSection {
    /// Bindings created per second each context must hold for τ.
    pub rate: Spanned<u64>,
    /// τ in seconds (default 10).
    #[serde(default = "ten", skip_serializing_if = "is_ten")]
    pub lifetime_s: u64,
    /// Shards per context (default 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub shards: u32,
    /// Seed of the stores' secret keys (absent: random).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_seed: Option<u64>,
    /// The contexts that run instructions: any of `input`, `central`, `output` (default
    /// all three).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Spanned<String>>>,
    /// Where inline microcode may come from (default on; [`crate::microcode`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub microcode: Option<MicrocodeSetting>,
    /// `[[esp.instruction]]`: SNAP programs installed under opcodes 64..=127.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction: Vec<InstructionSection>,
}

fn ten() -> u64 {
    10
}

fn is_ten(v: &u64) -> bool {
    *v == ten()
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == one()
}

/// `[snap]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SnapSection {
    /// Local runs one arrival may cause (default 64).
    #[serde(default = "sixty_four", skip_serializing_if = "is_sixty_four")]
    pub local_runs: u32,
    /// Services SNAP programs may call: `"ess"` registers `ess.get`, `ess.put` and
    /// `ess.count` over a store of the router's own (SNAP as ESP microcode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<Spanned<String>>,
    /// Bindings created per second the SNAP services' store holds for 10 s (default 1000).
    #[serde(default = "thousand", skip_serializing_if = "is_thousand")]
    pub ess_rate: u64,
    /// Seed of the services' secret key (absent: random).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_seed: Option<u64>,
}

fn thousand() -> u64 {
    1000
}

fn is_thousand(v: &u64) -> bool {
    *v == thousand()
}

fn sixty_four() -> u32 {
    64
}

fn is_sixty_four(v: &u32) -> bool {
    *v == sixty_four()
}

/// `[route_cache]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    /// 2^log2 slots.
    pub log2: Spanned<u8>,
}

/// `[dv]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DvSection {
    /// The 32-bit id that names this router to distance vector, written `"A.B.C.D"` as
    /// OSPF and BIRD write theirs (default: the first IPv4 address in `[node] addresses`;
    /// needed on a router with IPv6 addresses only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router_id: Option<Spanned<String>>,
    /// Prefixes attached here, advertised to the neighbours.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub originate: Vec<Spanned<String>>,
    /// Periodic update interval (default 30 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_ms: Option<u64>,
    /// Route timeout (default 180 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Garbage collection of unreachable destinations (default 120 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_ms: Option<u64>,
    /// Delay before a triggered update (default 1 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggered_ms: Option<u64>,
    /// The cost that means unreachable (default 16, RIP's): a route costing this much or
    /// more is dropped, which bounds counting to infinity but also the network's diameter.
    /// 2 to 65535; every link's `cost` must be below it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infinity: Option<Spanned<u16>>,
}

/// `[[route]]`: `link` or `links`, not both.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    /// `10.9.0.0/16`.
    pub prefix: Spanned<String>,
    /// The link's name (a route over one link).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Spanned<String>>,
    /// The links' names in preference order: packets leave by the first that is up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `[[group]]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSection {
    /// The multicast address.
    pub address: Spanned<String>,
    /// Downstream links by name.
    pub links: Vec<Spanned<String>>,
}

/// What the file says, checked and translated.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The router's name.
    pub name: String,
    /// The node's config, with its static routes, groups and prefixes to originate.
    pub node: Config,
    /// The links, as netio opens them.
    pub links: Vec<LinkConfig>,
}

fn prefix_of(source: &Source, s: &Spanned<String>) -> Result<IpPrefix, ConfigError> {
    let (addr, len) = parse_cidr(s.get_ref()).map_err(|m| source.error_for(s, m))?;
    waist_node::routes::prefix(addr, len).map_err(|e| source.error_for(s, e.to_string()))
}

fn link_of(
    source: &Source,
    links: &[LinkConfig],
    name: &Spanned<String>,
) -> Result<usize, ConfigError> {
    links
        .iter()
        .position(|l| l.name.get_ref() == name.get_ref())
        .ok_or_else(|| source.error_for(name, format!("no [[link]] named `{}`", name.get_ref())))
}

/// The interfaces of one `[[route]]`, in preference order.
fn route_links(
    source: &Source,
    links: &[LinkConfig],
    r: &RouteSection,
) -> Result<Vec<usize>, ConfigError> {
    match (&r.link, &r.links) {
        (Some(one), None) => Ok(vec![link_of(source, links, one)?]),
        (None, Some(list)) => {
            if list.get_ref().is_empty() {
                return Err(source.error_for(list, "an empty list of links"));
            }
            let mut out = Vec::with_capacity(list.get_ref().len());
            for name in list.get_ref() {
                let i = link_of(source, links, name)?;
                if out.contains(&i) {
                    return Err(
                        source.error_for(name, format!("link `{}` listed twice", name.get_ref()))
                    );
                }
                out.push(i);
            }
            Ok(out)
        }
        (Some(_), Some(list)) => Err(source.error_for(list, "give `link` or `links`, not both")),
        (None, None) => Err(source.error_for(
            &r.prefix,
            "a route needs `link` (one) or `links` (in preference order)",
        )),
    }
}

/// Checks `file` (read from `source`) and builds the plan.
///
/// # Errors
///
/// A located [`ConfigError`] for the first problem.
pub fn plan(source: &Source, file: &RouterFile) -> Result<Plan, ConfigError> {
    let mut addrs = Vec::new();
    for a in &file.node.addresses {
        addrs.push(
            a.get_ref()
                .parse::<IpAddr>()
                .map_err(|e| source.error_for(a, format!("not an IP address: {e}")))?,
        );
    }
    let Some(first) = addrs.first().copied() else {
        return Err(source.error_at(None, "[node] addresses: at least one address is needed"));
    };
    let mut node = Config::router(first, file.link.len());
    node.addrs = addrs;
    node.icmp = file.node.icmp;
    // Every check netio makes before it opens the links: the start makes them again with
    // the same code, so a file that passes here fails there only for the kernel's reasons.
    let specs = netio::link::check(&file.link, source)?;
    for (i, (l, (_, spec, _))) in file.link.iter().zip(&specs).enumerate() {
        // A router's UDP link is point to point: one peer, the other end of the link.
        if let netio::link::LinkSpec::Udp { peer: None, .. } = spec {
            let at = l.on.as_ref().or(l.local.as_ref()).unwrap_or(&l.name);
            return Err(source.error_for(
                at,
                "a router's udp link needs its peer (`peer`, or `on = \"udp:LOCAL=PEER\"`)",
            ));
        }
        if let Some(c) = l.cost.as_ref().filter(|c| *c.get_ref() == 0) {
            return Err(source.error_for(c, "a routing cost is at least 1"));
        }
        let mtu = l.mtu.as_ref().map_or(1500, |m| *m.get_ref());
        let mut f = IfaceConfig::new(mtu);
        f.dv_cost = l.cost.as_ref().map(|c| *c.get_ref());
        if let (Some(c), None) = (&l.cost, &file.dv) {
            return Err(source.error_for(c, "a routing cost needs a [dv] section"));
        }
        if let Some(slot) = node.ifaces.get_mut(i) {
            *slot = f;
        }
    }
    if let Some(e) = &file.esp {
        let key = ess::HashKey::from_seed(e.key_seed.unwrap_or_else(random_seed));
        let node_id = node.ipv4().map_or(0, |a| u64::from(u32::from_be_bytes(a)));
        let lifetime = e.lifetime_s.saturating_mul(waist_node::SECONDS);
        let mut esp = EspConfig::for_rate(node_id, *e.rate.get_ref(), lifetime, key)
            .map_err(|err| source.error_for(&e.rate, err.to_string()))?;
        esp.node.shards = e.shards.max(1);
        let (setting, instructions) = (e.microcode.as_ref(), &e.instruction);
        crate::microcode::plan(source, setting, instructions, &file.link, &mut esp)?;
        node.esp = Some(EspConfig {
            sites: match &e.contexts {
                None => esp_proto::wire::Loc::ALL,
                Some(list) => {
                    let mut l = esp_proto::wire::Loc::NONE;
                    for c in list {
                        l = l | match c.get_ref().as_str() {
                            "input" => esp_proto::wire::Loc::INPUT,
                            "central" => esp_proto::wire::Loc::CENTRAL,
                            "output" => esp_proto::wire::Loc::OUTPUT,
                            other => {
                                return Err(source.error_for(
                                    c,
                                    format!(
                                        "unknown ESP context `{other}` (input, central, output)"
                                    ),
                                ));
                            }
                        };
                    }
                    l
                }
            },
            ..esp
        });
    }
    if let Some(s) = &file.snap {
        node.snap = true;
        node.snap_local_runs = s.local_runs;
        for svc in &s.services {
            match svc.get_ref().as_str() {
                "ess" => {
                    let key = ess::HashKey::from_seed(s.key_seed.unwrap_or_else(random_seed));
                    let ess = SnapEss::for_rate(s.ess_rate, key)
                        .map_err(|e| source.error_for(svc, e.to_string()))?;
                    node.snap_ess = Some(ess);
                }
                other => {
                    return Err(source
                        .error_for(svc, format!("unknown SNAP service `{other}` (known: ess)")));
                }
            }
        }
    }
    if let Some(c) = &file.route_cache {
        node.route_cache_log2 = Some(*c.log2.get_ref());
    }
    let mut originate = Vec::new();
    if let Some(spanned) = &file.dv {
        let d = spanned.get_ref();
        let id = match &d.router_id {
            Some(text) => text
                .get_ref()
                .parse::<std::net::Ipv4Addr>()
                .map(u32::from)
                .map_err(|_| {
                    source.error_for(
                        text,
                        format!("router_id `{}` is not A.B.C.D", text.get_ref()),
                    )
                })?,
            None => node.ipv4().map(u32::from_be_bytes).ok_or_else(|| {
                source.error_for(
                    spanned,
                    "[dv] needs a router id: set router_id = \"A.B.C.D\" (the default, the \
                     first IPv4 address in [node] addresses, is missing)",
                )
            })?,
        };
        let mut c = fastpath::dv::Config::new(id);
        c.update_interval = d.update_ms.unwrap_or(c.update_interval);
        c.route_timeout = d.timeout_ms.unwrap_or(c.route_timeout);
        c.gc_timeout = d.gc_ms.unwrap_or(c.gc_timeout);
        c.triggered_delay = d.triggered_ms.unwrap_or(c.triggered_delay);
        if let Some(inf) = &d.infinity {
            if *inf.get_ref() < 2 {
                return Err(source.error_for(inf, "distance vector's infinity is at least 2"));
            }
            c.infinity = *inf.get_ref();
        }
        // A link must cost less than infinity, or nothing is learned over it.
        for l in &file.link {
            if let Some(cost) = l.cost.as_ref().filter(|x| *x.get_ref() >= c.infinity) {
                return Err(source.error_for(
                    cost,
                    format!(
                        "a routing cost below distance vector's infinity ({}; raise it with \
                         [dv] infinity)",
                        c.infinity
                    ),
                ));
            }
        }
        node.dv = Some(c);
        for p in &d.originate {
            originate.push(prefix_of(source, p)?);
        }
    }
    let mut routes: Vec<(IpPrefix, Vec<usize>)> = Vec::new();
    for r in &file.route {
        let prefix = prefix_of(source, &r.prefix)?;
        if routes.iter().any(|(p, _)| *p == prefix) {
            return Err(source.error_for(
                &r.prefix,
                "a second [[route]] for this prefix (list backups in `links`)",
            ));
        }
        routes.push((prefix, route_links(source, &file.link, r)?));
    }
    let mut groups = Vec::new();
    for g in &file.group {
        let addr = g
            .address
            .get_ref()
            .parse::<IpAddr>()
            .map_err(|e| source.error_for(&g.address, format!("not an IP address: {e}")))?;
        let links = g
            .links
            .iter()
            .map(|l| link_of(source, &file.link, l))
            .collect::<Result<Vec<_>, _>>()?;
        groups.push((addr, links));
    }
    (node.routes, node.groups, node.originate) = (routes, groups, originate);
    node.streams = crate::streams::plan(source, file.streams.as_ref(), &file.stream)?;
    // The node the start builds, built once here (it is a value: no I/O), so whatever it
    // refuses (a zero cost, a route it cannot install) is refused by `--check` too.
    waist_node::Node::new(node.clone(), waist_node::Instant::ZERO)
        .map_err(|e| node_error(source, &e))?;
    Ok(Plan {
        name: file.node.name.clone(),
        node,
        links: file.link.clone(),
    })
}

/// What the node refuses, as the file's error (the router's start reports it the same way).
pub fn node_error(source: &Source, e: &waist_node::ConfigError) -> ConfigError {
    source.error_at(None, e.to_string())
}

/// A seed from the operating system's randomness (std's per-process hash keys).
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    h.finish()
}

#[cfg(test)]
mod tests;
