//! Reconfiguring a running node ([`Node::reconfigure`]): a new [`Config`] applied without
//! losing the state the change does not touch.
//!
//! ```text
//!  Config' + from (new iface j continues old iface from[j]) ─► validate ─► Err: nothing changed
//!     ├─ ESP: same stores (size, τ, keys, shards, id)? keep every binding, renumber the
//!     │        port contexts (new ports empty) : rebuild (bindings lost, reported)
//!     ├─ SNAP: a new VM; its services (the ESS store) moved over if `snap_ess` is the same
//!     ├─ routes: static routes and groups replaced; down links stay down
//!     ├─ DV: same timers and id? links gone or renumbered down, new ones up, originated
//!     │       prefixes added and withdrawn : restarted (relearns from the neighbours)
//!     └─ addresses, ICMP, MTUs, local runs: the new config's
//! ```
//!
//! The counters ([`Node::stats`]) carry on. Frames the node queued for interfaces that are
//! gone are dropped; the others follow their interface's new number.

use alloc::vec::Vec;
use core::net::IpAddr;

use esp_proto::node::EspNode;
use fastpath::dv;
use fastpath::lpm::IpPrefix;

use super::{Node, snap};
use crate::Instant;
use crate::config::{Config, ConfigError, EspConfig, SnapEss};

/// What happened to a store of bindings (the ESP contexts, the SNAP services' ESS) in
/// [`Node::reconfigure`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreFate {
    /// There was none and is none.
    #[default]
    Absent,
    /// Kept with every binding (the store's size, lifetime and keys are unchanged).
    Kept,
    /// Created (empty): the old config had none.
    Started,
    /// Replaced by an empty one: its size, lifetime or key changed. Bindings are lost.
    Rebuilt,
    /// Removed: the new config has none.
    Stopped,
}

/// What happened to distance-vector routing in [`Node::reconfigure`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutingFate {
    /// Off before and after.
    #[default]
    Absent,
    /// Kept: learned routes stay (those through a link that went away or was renumbered
    /// are withdrawn and relearned over its new number).
    Kept,
    /// Started with the new config.
    Started,
    /// Restarted: the router's id or timers changed; learned routes are relearned from the
    /// neighbours (each new link asks its neighbour for its table at once).
    Restarted,
    /// Switched off: learned routes are gone.
    Stopped,
}

/// How a set of keyed entries (static routes, groups, originated prefixes) changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Keys only the new config has.
    pub added: usize,
    /// Keys only the old config had.
    pub removed: usize,
    /// Keys both have, with a different value (interfaces compared by what they are, not
    /// by their number: a link renumbered is not a change).
    pub changed: usize,
}

impl Diff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == Diff::default()
    }

    /// The difference between `old` and `new`, keyed by `K`, values compared by `same`.
    fn of<K: PartialEq, V>(old: &[(K, V)], new: &[(K, V)], same: impl Fn(&V, &V) -> bool) -> Diff {
        let mut d = Diff::default();
        for (k, v) in new {
            match old.iter().find(|(o, _)| o == k) {
                None => d.added += 1,
                Some((_, w)) if !same(w, v) => d.changed += 1,
                Some(_) => {}
            }
        }
        d.removed = old
            .iter()
            .filter(|(k, _)| !new.iter().any(|(n, _)| n == k))
            .count();
        d
    }
}

/// What [`Node::reconfigure`] changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reconfigured {
    /// Static routes ([`Config::routes`]).
    pub routes: Diff,
    /// Multicast groups ([`Config::groups`]).
    pub groups: Diff,
    /// Prefixes originated ([`Config::originate`]; `changed` is always 0).
    pub originate: Diff,
    /// The ESP contexts.
    pub esp: StoreFate,
    /// The SNAP services' store ([`Config::snap_ess`]).
    pub snap_ess: StoreFate,
    /// Distance-vector routing.
    pub routing: RoutingFate,
}

/// Whether two ESP configs build the same stores: every binding of one is valid in the
/// other. (The sites, sweep interval and budget may differ: they are applied in place.)
fn same_stores(a: &EspConfig, b: &EspConfig) -> bool {
    let (a, b) = (&a.node, &b.node);
    a.store == b.store
        && a.shards == b.shards
        && a.node_id == b.node_id
        && a.idmap_key == b.idmap_key
        && a.timestamp_shift == b.timestamp_shift
}

fn same_snap_ess(a: &SnapEss, b: &SnapEss) -> bool {
    a.store == b.store && a.key == b.key
}

/// Where each old interface went: `to[i]` is the new number of old interface `i`.
fn inverse(from: &[Option<usize>], old: usize) -> Vec<Option<usize>> {
    let mut to = alloc::vec![None; old];
    for (j, f) in from.iter().enumerate() {
        if let Some(slot) = f.and_then(|i| to.get_mut(i)) {
            *slot = Some(j);
        }
    }
    to
}

/// `from` made sound for `old` interfaces and a config of `new`: an entry naming an
/// interface that does not exist, or one an earlier entry named, becomes `None` (a new
/// interface); missing entries are `None`, extra ones ignored.
fn sound(from: &[Option<usize>], old: usize, new: usize) -> Vec<Option<usize>> {
    let mut seen = alloc::vec![false; old];
    (0..new)
        .map(|j| {
            let i = from.get(j).copied().flatten()?;
            let s = seen.get_mut(i)?;
            (!core::mem::replace(s, true)).then_some(i)
        })
        .collect()
}

impl Node {
    /// Applies `config` to the running node at `now`, keeping what the change does not
    /// touch: new interface `j` continues old interface `from[j]` (`None`: a new link; an
    /// old interface no entry names is gone).
    ///
    /// * ESP bindings are kept while the stores' size, lifetime, keys and shards are the
    ///   same (each port's contexts follow their interface to its new number, new ports
    ///   start empty); otherwise the stores are rebuilt empty.
    /// * The SNAP services (their ESS store) are kept while [`Config::snap_ess`] is the
    ///   same.
    /// * Distance vector keeps its learned routes while its id and timers are the same: an
    ///   interface gone or renumbered goes down (its routes are relearned under the new
    ///   number), a new one comes up; otherwise routing restarts.
    /// * The stream handlers are kept while [`Config::streams`] is the same; otherwise they
    ///   start afresh from the new config (streams deployed by control messages are gone).
    /// * Interfaces that were down stay down; the counters carry on. Static routes,
    ///   groups, originated prefixes, addresses, ICMP and MTUs are the new config's.
    ///
    /// The returned [`Reconfigured`] says what changed and what was rebuilt.
    ///
    /// Call it between packets, after draining [`poll_transmit`](Node::poll_transmit)
    /// (frames still queued for an interface that is gone are dropped). Every interface
    /// starts up except those that were down ([`set_link`](Node::set_link)) under their
    /// old number.
    ///
    /// An entry of `from` naming an interface the node does not have, or one an earlier
    /// entry named, counts as `None`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] if `config` does not validate: then nothing changed.
    /// [`ConfigError::RoutingTableFull`] if a prefix to originate finds no room: the rest
    /// of the config is applied.
    pub fn reconfigure(
        &mut self,
        now: Instant,
        config: Config,
        from: &[Option<usize>],
    ) -> Result<Reconfigured, ConfigError> {
        config.validate()?;
        let old_n = self.config.ifaces.len();
        let from = sound(from, old_n, config.ifaces.len());
        let to = inverse(&from, old_n);
        // An old route or group in new interface numbers (an interface gone: usize::MAX,
        // so it differs from any new one).
        let renumber = |l: &Vec<usize>| -> Vec<usize> {
            l.iter()
                .map(|&i| to.get(i).copied().flatten().unwrap_or(usize::MAX))
                .collect()
        };
        let old_routes: Vec<(IpPrefix, Vec<usize>)> = (self.config.routes.iter())
            .map(|(p, l)| (*p, renumber(l)))
            .collect();
        let old_groups: Vec<(IpAddr, Vec<usize>)> = (self.config.groups.iter())
            .map(|(g, l)| (*g, renumber(l)))
            .collect();
        let unit = |v: &[IpPrefix]| v.iter().map(|p| (*p, ())).collect::<Vec<_>>();
        let mut done = Reconfigured {
            routes: Diff::of(&old_routes, &config.routes, |a, b| a == b),
            groups: Diff::of(&old_groups, &config.groups, |a, b| a == b),
            originate: Diff::of(
                &unit(&self.config.originate),
                &unit(&config.originate),
                |_, _| true,
            ),
            ..Reconfigured::default()
        };
        done.esp = self.reconfigure_esp(now, &config, &from);
        done.snap_ess = self.reconfigure_snap(&config);
        self.routes = self.routes.renumbered(config.route_cache_log2, &from);
        self.out.retain_mut(|(iface, _)| {
            to.get(*iface)
                .copied()
                .flatten()
                .map(|j| *iface = j)
                .is_some()
        });
        if self.config.streams != config.streams {
            self.streams = config.streams.as_ref().map(super::streams::Streams::new);
            self.streams_through = config.streams.as_ref().is_some_and(|s| s.through);
        }
        let old = core::mem::replace(&mut self.config, config);
        done.routing = self.reconfigure_dv(now, &old, &from);
        let mut own: Vec<IpAddr> = self.config.addrs.clone();
        own.extend(
            self.config
                .ifaces
                .iter()
                .flat_map(|f| f.addrs.iter().copied()),
        );
        own.sort_unstable();
        own.dedup();
        self.own = own;
        self.esp_found = esp_proto::node::Found::NotEsp;
        // Learned routes come back from distance vector (now renumbered), then the
        // config's static routes, groups and prefixes over them.
        self.dv_changes = None;
        self.drain_dv();
        self.install(now)?;
        Ok(done)
    }

    /// The ESP stage for `config`: the same stores kept (ports renumbered), else new ones.
    fn reconfigure_esp(
        &mut self,
        now: Instant,
        config: &Config,
        from: &[Option<usize>],
    ) -> StoreFate {
        let build = |e: &EspConfig| {
            let mut c = e.node.clone();
            c.ifaces = config.ifaces.len();
            let mut esp = EspNode::new(c);
            esp.schedule_sweeps(now, e.clean_interval, e.clean_budget);
            esp.set_sites(e.sites);
            esp
        };
        if let Some(e) = &config.esp {
            // Validated with the config: every opcode is installable.
            let _ = self
                .micro
                .configure(e.microcode.inline.clone(), &e.microcode.installed);
        }
        match (&self.config.esp, &config.esp, &mut self.esp) {
            (None, None, _) => StoreFate::Absent,
            (Some(_), None, esp) => {
                *esp = None;
                StoreFate::Stopped
            }
            (Some(old), Some(new), Some(esp)) if same_stores(old, new) => {
                esp.remap_ports(from);
                esp.set_sites(new.sites);
                if (old.clean_interval, old.clean_budget) != (new.clean_interval, new.clean_budget)
                {
                    esp.schedule_sweeps(now, new.clean_interval, new.clean_budget);
                }
                StoreFate::Kept
            }
            (old, Some(new), esp) => {
                *esp = Some(build(new));
                if old.is_some() {
                    StoreFate::Rebuilt
                } else {
                    StoreFate::Started
                }
            }
        }
    }

    /// The SNAP VM for `config` (a fresh one: its address, interfaces and MTU may have
    /// changed), with the old services (and their store) moved over if `snap_ess` is the
    /// same.
    fn reconfigure_snap(&mut self, config: &Config) -> StoreFate {
        let mut vm = snap::vm_for(config);
        let old = self.vm.take();
        let fate = match (&self.config.snap_ess, &config.snap_ess) {
            (None, None) => StoreFate::Absent,
            (Some(_), None) => StoreFate::Stopped,
            (None, Some(_)) => StoreFate::Started,
            (Some(a), Some(b)) if same_snap_ess(a, b) => match (old, &mut vm) {
                (Some(mut old), Some(vm)) => {
                    vm.services = core::mem::take(&mut old.services);
                    StoreFate::Kept
                }
                _ => StoreFate::Started,
            },
            (Some(_), Some(_)) => StoreFate::Rebuilt,
        };
        self.vm = vm;
        fate
    }

    /// Distance vector for the new config (`self.config`; `old` the one it replaced).
    fn reconfigure_dv(
        &mut self,
        now: Instant,
        old: &Config,
        from: &[Option<usize>],
    ) -> RoutingFate {
        let fresh = |node: &mut Node, c: dv::Config| {
            let mut r = dv::Router::new(c, now);
            for (j, f) in node.config.ifaces.iter().enumerate() {
                let up = u16::try_from(j).is_ok_and(|j| node.routes.link_up(j));
                if let (Some(cost), Ok(j), true) = (f.dv_cost, u16::try_from(j), up) {
                    // The config validated: the cost is in range.
                    let _ = r.link_up(now, j, cost);
                }
            }
            node.dv = Some(r);
        };
        match (old.dv, self.config.dv) {
            (None, None) => RoutingFate::Absent,
            (Some(_), None) => {
                self.dv = None;
                RoutingFate::Stopped
            }
            (None, Some(c)) => {
                fresh(self, c);
                RoutingFate::Started
            }
            (Some(a), Some(b)) if a != b => {
                fresh(self, b);
                RoutingFate::Restarted
            }
            (Some(_), Some(_)) => {
                let Some(r) = &mut self.dv else {
                    return RoutingFate::Absent;
                };
                // Down: every old routing link that is gone, renumbered or no longer routed.
                let links: Vec<(u16, u16)> = r.links().collect();
                for (i, _) in &links {
                    let kept = from.get(usize::from(*i)).copied().flatten()
                        == Some(usize::from(*i))
                        && self
                            .config
                            .ifaces
                            .get(usize::from(*i))
                            .is_some_and(|f| f.dv_cost.is_some());
                    if !kept {
                        let _ = r.link_down(now, *i);
                    }
                }
                // Up: every new routing link that is up, at its (maybe new) cost.
                for (j, f) in self.config.ifaces.iter().enumerate() {
                    let Ok(j16) = u16::try_from(j) else { continue };
                    let Some(cost) = f.dv_cost else { continue };
                    let was = r.links().find(|(i, _)| *i == j16).map(|(_, c)| c);
                    if self.routes.link_up(j16) && was != Some(cost) {
                        let _ = r.link_up(now, j16, cost);
                    }
                }
                for p in &old.originate {
                    if !self.config.originate.contains(p) {
                        r.remove_local_prefix(now, *p);
                    }
                }
                RoutingFate::Kept
            }
        }
    }
}
