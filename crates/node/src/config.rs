//! How to build a [`Node`](crate::Node): its addresses, interfaces and which stages run.
//!
//! Every pipeline stage but IP checking is optional: a node with `esp: None` forwards ESP
//! packets untouched (partial deployment, ESP §4.1), one with `snap: None` forwards SNAP
//! packets as plain IP (SNAP §III), one with `route_cache_log2: None` goes straight to the
//! longest-prefix match, one with `dv: None` routes by its static routes alone.

use alloc::vec::Vec;
use core::fmt;
use core::net::IpAddr;

use fastpath::dv;
use fastpath::lpm::IpPrefix;

/// One interface (a TUN device or a UDP link to one neighbour).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfaceConfig {
    /// The largest IP packet the link carries (a label shim's 5 bytes are the link's own
    /// overhead, not counted here).
    pub mtu: usize,
    /// The node's addresses on this interface (ICMP errors about packets that arrived here
    /// come from the one of the packet's family). May be empty: the node's addresses serve.
    pub addrs: Vec<IpAddr>,
    /// Whether distance-vector routing runs over this link, and at what cost (≥ 1).
    pub dv_cost: Option<u16>,
}

impl IfaceConfig {
    /// An interface with MTU `mtu`, no addresses of its own, no routing protocol.
    pub fn new(mtu: usize) -> IfaceConfig {
        IfaceConfig {
            mtu,
            addrs: Vec::new(),
            dv_cost: None,
        }
    }

    /// The same interface with distance-vector routing at `cost`.
    pub fn with_dv(mut self, cost: u16) -> IfaceConfig {
        self.dv_cost = Some(cost);
        self
    }

    /// The same interface with `addr` among its addresses.
    pub fn with_addr(mut self, addr: IpAddr) -> IfaceConfig {
        self.addrs.push(addr);
        self
    }
}

/// The node's ESP stage: per-interface and central contexts (ESP §2.2).
#[derive(Clone, Debug)]
pub struct EspConfig {
    /// Each context's store, shards, node id and secrets. Its `ifaces` is overwritten with
    /// the node's interface count.
    pub node: esp_proto::node::NodeConfig,
    /// Microseconds between sweeps that reclaim expired bindings.
    pub clean_interval: u64,
    /// Bindings each shard may reclaim per sweep.
    pub clean_budget: usize,
    /// The contexts that run instructions: input ports, central, output ports (all three
    /// by default); a packet whose Loc selects only contexts switched off is skipped.
    pub sites: esp_proto::wire::Loc,
    /// Instructions written in SNAP (ESP §8): inline microcode's policy and the installed
    /// instructions.
    pub microcode: MicrocodeConfig,
}

/// The node's ESP microcode ([`esp_micro`]): who may run inline programs, and the programs
/// installed under opcodes 64–127.
#[derive(Clone, Debug, Default)]
pub struct MicrocodeConfig {
    /// Where inline microcode (opcode 32) may come from: on (the default), off, or only
    /// packets that arrived on some interfaces (by index).
    pub inline: esp_micro::InlinePolicy,
    /// Installed instructions: opcode, name, verified program.
    pub installed: Vec<(u8, alloc::string::String, esp_micro::Microcode)>,
}

impl EspConfig {
    /// τ, the lifetime of every binding: the paper's 10 s (ESP §2.1).
    pub const LIFETIME: u64 = 10 * crate::SECONDS;
    /// The stores' clock resolution, 1 ms: bindings expire within a millisecond of τ, and
    /// an expiry fits the store's 32-bit field for 49 days of ticks.
    pub const RESOLUTION: u64 = crate::MILLIS;
    /// Right shift from the node's microsecond ticks to the coarse timestamp operand: 10,
    /// units of 1.024 ms ("milliseconds by convention", `Param::Timestamp`), without a
    /// division per packet.
    pub const TIMESTAMP_SHIFT: u32 = 10;
    /// Time between sweeps of expired bindings, 100 ms.
    pub const CLEAN_INTERVAL: u64 = 100 * crate::MILLIS;
    /// Expired bindings a sweep reclaims per shard, at most 64. Sweeps are not what keeps a
    /// store from filling: every creation first reclaims two expired entries itself, so
    /// reclamation keeps ahead of any creation rate. A sweep only returns the entries of a
    /// store gone quiet, and its budget bounds the work one timeout does (64 entries per
    /// shard of each of the `2 × ifaces + 1` contexts).
    pub const CLEAN_BUDGET: usize = 64;

    /// The paper's defaults (τ = 10 s at 1 ms resolution, one shard per context) with
    /// stores of `2^log2` bindings, the node id `node_id` (by convention its IPv4 address)
    /// and secrets derived from `key`; sweeps every 100 ms reclaiming up to 64 bindings per
    /// shard. (The numbers: the associated constants above.)
    ///
    /// # Errors
    ///
    /// [`ess::ConfigError`] if `log2` is out of range.
    pub fn new(node_id: u64, log2: u8, key: ess::HashKey) -> Result<EspConfig, ess::ConfigError> {
        let store = ess::EssConfig::new(log2, Self::LIFETIME, Self::RESOLUTION, key.derive(1))?;
        Ok(Self::with_store(node_id, store, key))
    }

    /// As [`EspConfig::new`], each store sized for a packet rate: the smallest that never
    /// refuses a creation while at most `creations_per_second` bindings are created per
    /// context for `lifetime` microseconds (τ; [`EspConfig::LIFETIME`] is the paper's), by
    /// [`ess::EssConfig::for_rate`] (ESP §2.3: resources are reclaimed at the rate they are
    /// allocated, so the size is fixed in advance).
    ///
    /// ```
    /// use waist_node::{EspConfig, SECONDS};
    /// // 100,000 packets a second creating bindings that live 10 s: 10^6 → 2^20 per store.
    /// let c = EspConfig::for_rate(1, 100_000, 10 * SECONDS, ess::HashKey::from_seed(7))?;
    /// assert_eq!(c.node.store.capacity(), 1 << 20);
    /// assert_eq!(c.clean_budget, EspConfig::CLEAN_BUDGET);
    /// # Ok::<(), ess::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ess::ConfigError`] if the rate needs a store larger than an ESS can be.
    pub fn for_rate(
        node_id: u64,
        creations_per_second: u64,
        lifetime: u64,
        key: ess::HashKey,
    ) -> Result<EspConfig, ess::ConfigError> {
        let store = ess::EssConfig::for_rate(
            creations_per_second,
            crate::SECONDS,
            lifetime,
            Self::RESOLUTION,
            key.derive(1),
        )?;
        Ok(Self::with_store(node_id, store, key))
    }

    /// The node's ESP stage over stores built from `store`, with the node's defaults.
    fn with_store(node_id: u64, store: ess::EssConfig, key: ess::HashKey) -> EspConfig {
        EspConfig {
            node: esp_proto::node::NodeConfig {
                ifaces: 0,
                store,
                shards: 1,
                node_id,
                idmap_key: key.derive(2),
                timestamp_shift: Self::TIMESTAMP_SHIFT,
            },
            clean_interval: Self::CLEAN_INTERVAL,
            clean_budget: Self::CLEAN_BUDGET,
            sites: esp_proto::wire::Loc::ALL,
            microcode: MicrocodeConfig::default(),
        }
    }
}

/// The ESS services SNAP programs may call at the node (`calls "ess.get"`, `"ess.put"`,
/// `"ess.count"`; [`snap_vm::service::EssService`]): one store shared by the three, and
/// the key that keeps computations apart (each sees only its own tags).
#[derive(Clone, Copy, Debug)]
pub struct SnapEss {
    /// The store, built afresh (empty) with the node.
    pub store: ess::EssConfig,
    /// The key that isolates computations.
    pub key: ess::HashKey,
}

impl SnapEss {
    /// A store that never refuses a binding while programs create at most
    /// `creations_per_second` of them, each living the ESP stage's τ
    /// ([`EspConfig::LIFETIME`], at its resolution), with secrets derived from `key`.
    ///
    /// # Errors
    ///
    /// [`ess::ConfigError`] if the rate needs a store larger than an ESS can be.
    pub fn for_rate(
        creations_per_second: u64,
        key: ess::HashKey,
    ) -> Result<SnapEss, ess::ConfigError> {
        let store = ess::EssConfig::for_rate(
            creations_per_second,
            crate::SECONDS,
            EspConfig::LIFETIME,
            EspConfig::RESOLUTION,
            key.derive(1),
        )?;
        Ok(SnapEss {
            store,
            key: key.derive(2),
        })
    }
}

/// A node's configuration: which stages run (each but IP checking is optional: a node
/// with `esp: None` forwards ESP packets untouched, partial deployment), its addresses and
/// interfaces.
#[derive(Clone, Debug)]
pub struct Config {
    /// The node's own addresses (packets to them are delivered, echo requests answered).
    /// The first IPv4 one and the first IPv6 one name the node to SNAP packets of their
    /// family (`here`); the first IPv4 one, by default, to routing.
    pub addrs: Vec<IpAddr>,
    /// Interfaces, numbered by position.
    pub ifaces: Vec<IfaceConfig>,
    /// The ESP stage, or `None`.
    pub esp: Option<EspConfig>,
    /// Whether SNAP packets (IP protocol 254) run here.
    pub snap: bool,
    /// The ESS services SNAP programs may call here (needs `snap`); `None`: none, and a
    /// program that calls one faults.
    pub snap_ess: Option<SnapEss>,
    /// Source-hash route cache of `2^n` slots in front of the IPv4 longest-prefix match.
    pub route_cache_log2: Option<u8>,
    /// Distance-vector routing (its `id` is the router's; links from
    /// [`IfaceConfig::dv_cost`]).
    pub dv: Option<dv::Config>,
    /// Whether the node sends ICMP errors (time exceeded, unreachable, too big) and echo
    /// replies.
    pub icmp: bool,
    /// Local runs one arriving SNAP packet may cause here (`send` to this node), beyond
    /// what its resource bound already limits.
    pub snap_local_runs: u32,
    /// Static routes the node starts with: each prefix leaves by the first of its
    /// interfaces (preference order, at least one) that is up
    /// ([`Node::add_route_via`](crate::Node::add_route_via)).
    pub routes: Vec<(IpPrefix, Vec<usize>)>,
    /// Multicast groups the node starts with: address and downstream interfaces
    /// ([`Node::add_group`](crate::Node::add_group)).
    pub groups: Vec<(IpAddr, Vec<usize>)>,
    /// Networks attached to the node, advertised through distance vector from the start
    /// ([`Node::originate`](crate::Node::originate); needs `dv`).
    pub originate: Vec<IpPrefix>,
    /// The stream handlers' node on the node's own addresses (UDP data and control
    /// ports), or `None`: such datagrams are delivered like any other.
    pub streams: Option<StreamsConfig>,
}

/// The node's stream handlers (the network-processor paper's overlay node): the
/// [`StreamNode`](stream_handlers::node::StreamNode)'s config and the streams deployed
/// when the node starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamsConfig {
    /// Ports, admission, host, limits.
    pub node: stream_handlers::node::NodeConfig,
    /// Stream id and its deployment, admitted in order when the node first runs its
    /// streams ([`Node::run_streams`](crate::Node::run_streams)).
    pub deploy: Vec<(u16, stream_handlers::spec::Spec)>,
    /// Whether streams passing *through* the node are taken too: a UDP datagram to the
    /// data port of another address, carrying a fragment of a stream deployed here, runs
    /// through the stream's handlers instead of being forwarded (the node as an
    /// on-path overlay node). Datagrams of other streams are forwarded as usual.
    pub through: bool,
}

impl Config {
    /// A plain IP router at `addr` with `ifaces` interfaces of MTU 1500: ICMP on, no ESP,
    /// no SNAP, no route cache, no routing protocol.
    pub fn router(addr: IpAddr, ifaces: usize) -> Config {
        Config {
            addrs: alloc::vec![addr],
            ifaces: alloc::vec![IfaceConfig::new(1500); ifaces],
            esp: None,
            snap: false,
            snap_ess: None,
            route_cache_log2: None,
            dv: None,
            icmp: true,
            snap_local_runs: 64,
            routes: Vec::new(),
            groups: Vec::new(),
            originate: Vec::new(),
            streams: None,
        }
    }

    /// The IPv4 address that names the node to SNAP and routing.
    pub fn ipv4(&self) -> Option<[u8; 4]> {
        self.addrs.iter().find_map(|a| match a {
            IpAddr::V4(a) => Some(a.octets()),
            IpAddr::V6(_) => None,
        })
    }

    /// The IPv6 address that names the node to IPv6 SNAP packets.
    pub fn ipv6(&self) -> Option<[u8; 16]> {
        self.addrs.iter().find_map(|a| match a {
            IpAddr::V4(_) => None,
            IpAddr::V6(a) => Some(a.octets()),
        })
    }

    /// Checks the config.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first problem.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.ifaces.len() > usize::from(u16::MAX) {
            return Err(ConfigError::TooManyIfaces);
        }
        for (i, f) in self.ifaces.iter().enumerate() {
            if f.mtu < 68 || f.mtu > 65_535 {
                return Err(ConfigError::Mtu {
                    iface: i,
                    mtu: f.mtu,
                });
            }
            if f.dv_cost == Some(0) {
                return Err(ConfigError::ZeroCost { iface: i });
            }
            match (f.dv_cost, &self.dv) {
                (Some(_), None) => return Err(ConfigError::NoRouting { iface: i }),
                (Some(cost), Some(dv)) if cost >= dv.infinity => {
                    return Err(ConfigError::CostTooHigh { iface: i, cost });
                }
                _ => {}
            }
        }
        if self.snap && self.ipv4().is_none() && self.ipv6().is_none() {
            return Err(ConfigError::SnapNeedsAddress);
        }
        if self.snap_ess.is_some() && !self.snap {
            return Err(ConfigError::SnapServicesWithoutSnap);
        }
        if let Some(n) = self.route_cache_log2
            && !(1..=24).contains(&n)
        {
            return Err(ConfigError::CacheSize(n));
        }
        if self.routes.iter().any(|(_, list)| list.is_empty()) {
            return Err(ConfigError::EmptyRoute);
        }
        let ifaces = self.ifaces.len();
        let named = (self.routes.iter().map(|(_, l)| l)).chain(self.groups.iter().map(|(_, l)| l));
        if let Some(&iface) = named.flatten().find(|&&i| i >= ifaces) {
            return Err(ConfigError::UnknownIface { iface });
        }
        if !self.originate.is_empty() && self.dv.is_none() {
            return Err(ConfigError::OriginateWithoutRouting);
        }
        if self.streams.is_some() && self.addrs.is_empty() {
            return Err(ConfigError::StreamsNeedAddress);
        }
        if let Some(esp) = &self.esp
            && let Some(&(opcode, _, _)) = esp
                .microcode
                .installed
                .iter()
                .find(|(op, _, _)| !esp_micro::INSTALLED.contains(op))
        {
            return Err(ConfigError::Install(esp_micro::InstallError { opcode }));
        }
        Ok(())
    }
}

/// Why a [`Config`] cannot build a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// More than 65,535 interfaces.
    TooManyIfaces,
    /// An MTU below IPv4's 68-byte minimum or above 65,535.
    Mtu {
        /// The interface.
        iface: usize,
        /// Its MTU.
        mtu: usize,
    },
    /// A routing cost of 0.
    ZeroCost {
        /// The interface.
        iface: usize,
    },
    /// A routing cost at or above the distance-vector infinity.
    CostTooHigh {
        /// The interface.
        iface: usize,
        /// Its cost.
        cost: u16,
    },
    /// A link cost given with no distance-vector config.
    NoRouting {
        /// The interface.
        iface: usize,
    },
    /// SNAP on, but the node has no address to name it to SNAP packets (`here`).
    SnapNeedsAddress,
    /// SNAP services declared (`snap_ess`) with SNAP off.
    SnapServicesWithoutSnap,
    /// A route cache size outside 2^1 … 2^24.
    CacheSize(u8),
    /// A static route ([`Config::routes`]) with no interface.
    EmptyRoute,
    /// A static route or a group names an interface the node does not have.
    UnknownIface {
        /// The interface.
        iface: usize,
    },
    /// Prefixes to originate with no distance-vector config.
    OriginateWithoutRouting,
    /// Distance vector's table has no room for a prefix to originate
    /// ([`dv::Config::max_destinations`]).
    RoutingTableFull,
    /// Stream handlers on, but the node has no address to receive streams on.
    StreamsNeedAddress,
    /// An ESP instruction installed under an opcode outside 64–127.
    Install(esp_micro::InstallError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::TooManyIfaces => f.write_str("more than 65535 interfaces"),
            ConfigError::Mtu { iface, mtu } => {
                write!(f, "interface {iface}: MTU {mtu} outside 68..=65535")
            }
            ConfigError::ZeroCost { iface } => write!(f, "interface {iface}: routing cost 0"),
            ConfigError::CostTooHigh { iface, cost } => {
                write!(
                    f,
                    "interface {iface}: routing cost {cost} at or above infinity"
                )
            }
            ConfigError::NoRouting { iface } => {
                write!(f, "interface {iface}: a routing cost but no [dv] config")
            }
            ConfigError::SnapNeedsAddress => f.write_str("SNAP needs a node address"),
            ConfigError::StreamsNeedAddress => f.write_str("stream handlers need a node address"),
            ConfigError::SnapServicesWithoutSnap => f.write_str("SNAP services with SNAP off"),
            ConfigError::CacheSize(n) => write!(f, "route cache of 2^{n} slots (1..=24)"),
            ConfigError::EmptyRoute => f.write_str("a static route with no interface"),
            ConfigError::UnknownIface { iface } => {
                write!(
                    f,
                    "a route or group names interface {iface}, which the node lacks"
                )
            }
            ConfigError::OriginateWithoutRouting => {
                f.write_str("prefixes to originate but no [dv] config")
            }
            ConfigError::RoutingTableFull => {
                f.write_str("the routing table has no room for the prefixes to originate")
            }
            ConfigError::Install(e) => write!(f, "ESP microcode: {e}"),
        }
    }
}

impl core::error::Error for ConfigError {}
