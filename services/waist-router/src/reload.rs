//! SIGHUP: the config file re-read and applied to the running router (nginx's
//! `-s reload`, BIRD's `configure`).
//!
//! ```text
//!  SIGHUP ─► netio::shutdown::Reloads ─► Router::reload
//!    load + plan (every check of a start) + each link's options ─► error: one line,
//!    │                                                              running config kept
//!    ├─ links by name: unchanged ─ untouched (same socket: not a datagram lost)
//!    │                 emulation or cost only ─ changed in place
//!    │                 other settings ─ reopened (counters and capture carry on)
//!    │                 added ─ opened │ removed ─ closed, capture flushed
//!    ├─ Node::reconfigure: routes, groups, originate, ESP, SNAP, DV (ESS kept if its
//!    │                     size and key are unchanged), ESP microcode (its policy and
//!    │                     installed instructions; counters kept)
//!    └─ one line: `reloaded: +1 link, -1 link, 1 route changed`
//! ```
//!
//! Nothing changes until everything that can fail without touching the running router
//! has succeeded: the file parses and plans, every link's options check, the links to add
//! open. A link reopened on the same port or device is closed first; if it then cannot
//! be opened, every link reopened so far goes back to its old settings and the reload
//! fails. `[node] name` cannot change while running (metrics and captures are named by
//! it): a new name is refused with a warning and the rest applied. A config without
//! `key_seed` keeps the running keys (not new random ones), so its stores survive.

use std::path::PathBuf;
use std::time::Instant as StdInstant;

use anyhow::Context;
use netio::config::{LinkConfig, Source};
use netio::link::{Link, LinkSpec, Links};
use netio::shutdown::Reloads;
use tracing::{error, info, warn};
use waist_node::{Diff, Reconfigured, RoutingFate, StoreFate};

use crate::Router;
use crate::config::{RouterFile, plan};

/// What a router reloads from: the file, and the config it runs now.
#[derive(Debug)]
pub(crate) struct Reload {
    reloads: Reloads,
    path: PathBuf,
    source: Source,
    file: RouterFile,
}

/// Returns when a reload is requested; never without reloads.
pub(crate) async fn requested(r: &mut Option<Reload>) {
    match r {
        Some(r) => r.reloads.next().await,
        None => std::future::pending().await,
    }
}

/// What became of one link of the new config.
enum Fate {
    /// The running link `old`, untouched (or its emulation or cost set in place).
    Kept(usize),
    /// The running link `old`, reopened with new settings: closed first (same port or
    /// device) or opened beside it.
    Reopened(usize),
    /// A link the running config does not have.
    Added,
}

/// Whether two sections differ only in what a running link can change in place.
fn same_but_emulation(a: &LinkConfig, b: &LinkConfig) -> bool {
    let strip = |c: &LinkConfig| LinkConfig {
        emulation: None,
        cost: None,
        ..c.clone()
    };
    strip(a) == strip(b)
}

/// Whether the new spec binds what the old one holds (the old must close first).
fn same_binding(old: &LinkSpec, new: &LinkSpec) -> bool {
    match (old, new) {
        (LinkSpec::Udp { local: a, .. }, LinkSpec::Udp { local: b, .. }) => {
            a.port() != 0 && a.port() == b.port()
        }
        (LinkSpec::Tun { device: a, .. }, LinkSpec::Tun { device: b, .. }) => a == b,
        _ => false,
    }
}

/// `n thing`/`n things`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The summary's words for a diff of `what`.
fn diff_words(d: Diff, one: &str, many: &str, out: &mut Vec<String>) {
    if d.added > 0 {
        out.push(format!("+{}", count(d.added, one, many)));
    }
    if d.removed > 0 {
        out.push(format!("-{}", count(d.removed, one, many)));
    }
    if d.changed > 0 {
        out.push(format!("{} changed", count(d.changed, one, many)));
    }
}

/// The summary's words for the sections whose other settings changed (addresses, ICMP,
/// stores' sizes, timers…): each applied, named by its section.
fn section_words(old: &RouterFile, new: &RouterFile, out: &mut Vec<String>) {
    let dv = |f: &RouterFile| {
        f.dv.as_ref().map(|d| crate::config::DvSection {
            originate: Vec::new(),
            ..d.get_ref().clone()
        })
    };
    // The microcode has words of its own (`crate::microcode::reload_words`).
    let esp = |f: &RouterFile| {
        f.esp.as_ref().map(|e| crate::config::EspSection {
            microcode: None,
            instruction: Vec::new(),
            ..e.clone()
        })
    };
    let changed = [
        (
            "[node]",
            (&old.node.addresses, old.node.icmp) != (&new.node.addresses, new.node.icmp),
        ),
        ("[esp]", esp(old) != esp(new)),
        ("[snap]", old.snap != new.snap),
        ("[route_cache]", old.route_cache != new.route_cache),
        ("[dv]", dv(old) != dv(new)),
    ];
    for (name, _) in changed.iter().filter(|(_, c)| *c) {
        out.push(format!("{name} changed"));
    }
}

/// Keeps the running keys where neither the old nor the new file gives a seed (each plan
/// draws new random ones): the stores then survive the reload.
fn keep_random_keys(
    old: &RouterFile,
    file: &RouterFile,
    running: &waist_node::Config,
    new: &mut waist_node::Config,
) {
    let unseeded = |f: &RouterFile| f.esp.as_ref().is_some_and(|e| e.key_seed.is_none());
    if let (true, Some(o), Some(n)) = (unseeded(old) && unseeded(file), &running.esp, &mut new.esp)
    {
        n.node.store = n.node.store.with_key(*o.node.store.key());
        n.node.idmap_key = o.node.idmap_key;
    }
    let unseeded = |f: &RouterFile| f.snap.as_ref().is_some_and(|s| s.key_seed.is_none());
    if let (true, Some(o), Some(n)) = (
        unseeded(old) && unseeded(file),
        &running.snap_ess,
        &mut new.snap_ess,
    ) {
        n.store = n.store.with_key(*o.store.key());
        n.key = o.key;
    }
}

impl Router {
    /// Re-reads `path` and applies it on each reload request from `reloads` (SIGHUP:
    /// [`netio::shutdown::on_reload`]); `source` and `file` are the config the router was
    /// opened with. See the [module docs](crate::reload).
    pub fn reload_from(
        &mut self,
        reloads: Reloads,
        path: PathBuf,
        source: Source,
        file: RouterFile,
    ) {
        self.reload = Some(Reload {
            reloads,
            path,
            source,
            file,
        });
    }

    /// Handles a reload request: applies the file, or logs why not and keeps running as
    /// before. `out` is the transmit buffer.
    pub(crate) async fn reload(&mut self, out: &mut [u8]) {
        let Some(r) = self.reload.take() else { return };
        let path = r.path.clone();
        match self.apply(&r, out).await {
            Ok((source, file, line)) => {
                info!(router = %self.name, "reloaded: {line}");
                self.reload = Some(Reload { source, file, ..r });
            }
            Err(e) => {
                error!(router = %self.name, config = %path.display(),
                    "reload failed, keeping the running config: {e:#}");
                self.reload = Some(r);
            }
        }
    }

    /// Reads, checks and applies the file; the new config and the summary line.
    async fn apply(
        &mut self,
        r: &Reload,
        out: &mut [u8],
    ) -> anyhow::Result<(Source, RouterFile, String)> {
        let (source, file) = netio::config::load::<RouterFile>(&r.path)?;
        let mut plan = plan(&source, &file)?;
        let mut specs = Vec::with_capacity(file.link.len());
        for (j, c) in file.link.iter().enumerate() {
            if file.link.iter().take(j).any(|o| o.name == c.name) {
                return Err(source
                    .error_for(&c.name, "a second link with this name")
                    .into());
            }
            specs.push(Links::options_of(c, &source)?);
        }
        let mut words = Vec::new();
        section_words(&r.file, &file, &mut words);
        if file.node.name != self.name {
            warn!(router = %self.name,
                "[node] name `{}` refused: a router is not renamed while it runs (restart it)",
                file.node.name);
        }
        keep_random_keys(&r.file, &file, self.node.config(), &mut plan.node);
        // Hand over what is pending under the old link numbers before they change.
        let (wall, _) = self.now();
        self.drain(out, wall);

        // Each new link: the running one of the same name kept or reopened, or a new one.
        let old_index = |name: &str| r.file.link.iter().position(|o| o.name.get_ref() == name);
        let fates: Vec<Fate> = file
            .link
            .iter()
            .map(|c| match old_index(c.name.get_ref()) {
                Some(i) if r.file.link.get(i).is_some_and(|o| same_but_emulation(o, c)) => {
                    Fate::Kept(i)
                }
                Some(i) => Fate::Reopened(i),
                None => Fate::Added,
            })
            .collect();
        let origin = self.clock.origin();
        // Open what binds something new, before anything is closed.
        let mut opened: Vec<Option<Link>> = Vec::with_capacity(fates.len());
        for ((c, fate), (spec, _)) in file.link.iter().zip(&fates).zip(&specs) {
            let beside = match fate {
                Fate::Added => true,
                Fate::Reopened(i) => {
                    let old = r.file.link.get(*i).map(|o| Links::options_of(o, &r.source));
                    !matches!(old, Some(Ok((o, _))) if same_binding(&o, spec))
                }
                Fate::Kept(_) => false,
            };
            opened.push(if beside {
                Some(Links::open_config(c, &source, origin).await?)
            } else {
                None
            });
        }
        // From here on the running links change.
        let mut old: Vec<Option<Link>> = self.links.take_all().into_iter().map(Some).collect();
        let mut new: Vec<Link> = Vec::with_capacity(fates.len());
        let mut reopened = Vec::new();
        for (j, fate) in fates.iter().enumerate() {
            let c = &file.link[j];
            let link = match (fate, opened[j].take()) {
                (Fate::Kept(i), _) => {
                    let mut l = old[*i].take().context("a link kept twice")?;
                    let was = &r.file.link[*i];
                    if was.emulation != c.emulation {
                        l.set_emulation(specs[j].1.emulation, origin);
                        words.push(format!("link {} emulation changed", c.name.get_ref()));
                    }
                    l.set_cost(specs[j].1.cost);
                    l
                }
                (Fate::Reopened(i), Some(mut l)) => {
                    let o = old[*i].take().context("a link reopened twice")?;
                    l.carry_on(o.close_carrying());
                    reopened.push(j);
                    l
                }
                (Fate::Reopened(i), None) => {
                    let o = old[*i].take().context("a link reopened twice")?;
                    let carried = o.close_carrying();
                    match Links::open_config(c, &source, origin).await {
                        Ok(mut l) => {
                            l.carry_on(carried);
                            reopened.push(j);
                            l
                        }
                        Err(e) => {
                            // Back to the running config: every link as it was.
                            let mut back = Links::open_config(&r.file.link[*i], &r.source, origin)
                                .await
                                .with_context(|| {
                                    format!("link {}: cannot reopen it as it was", c.name.get_ref())
                                })?;
                            back.carry_on(carried);
                            old[*i] = Some(back);
                            self.restore(r, &fates[..j], new, old, origin).await?;
                            return Err(e);
                        }
                    }
                }
                (Fate::Added, Some(l)) => l,
                (Fate::Added, None) => anyhow::bail!("link {}: not opened", c.name.get_ref()),
            };
            new.push(link);
        }
        let from: Vec<Option<usize>> = fates
            .iter()
            .map(|f| match f {
                Fate::Kept(i) | Fate::Reopened(i) => Some(*i),
                Fate::Added => None,
            })
            .collect();
        self.log.renumber(&from);
        let added = fates.iter().filter(|f| matches!(f, Fate::Added)).count();
        let mut removed = 0;
        for l in old.iter_mut().flatten() {
            removed += 1;
            if let Some((path, packets)) = l.close_capture() {
                info!(path = %path.display(), packets, "capture closed");
            }
        }
        drop(old);
        if let Err(e) = self.links.set_all(new) {
            warn!(router = %self.name, "after the reload: {e:#}");
        }
        let (_, now) = self.now();
        let esp_before = self.node.config().esp.clone();
        let done = match self.node.reconfigure(now, plan.node, &from) {
            Ok(d) => Some(d),
            Err(e) => {
                warn!(router = %self.name, "after the reload: {e}");
                None
            }
        };
        // The node's view of each link's state is the link's own.
        for (j, l) in self.links.iter().enumerate() {
            let up = l.is_up();
            if u16::try_from(j).is_ok_and(|i| self.node.routes().link_up(i) != up) {
                self.node.set_link(now, j, up);
            }
        }
        let mut summary = Vec::new();
        if added > 0 {
            summary.push(format!("+{}", count(added, "link", "links")));
        }
        if removed > 0 {
            summary.push(format!("-{}", count(removed, "link", "links")));
        }
        for j in reopened {
            summary.push(format!("link {} reopened", file.link[j].name.get_ref()));
        }
        summary.append(&mut words);
        if let Some(d) = done {
            self.node_words(d, &mut summary);
            let esp_now = self.node.config().esp.as_ref();
            let links = &file.link;
            crate::microcode::reload_words(
                &self.name,
                esp_before.as_ref(),
                esp_now,
                links,
                &mut summary,
            );
        }
        let line = if summary.is_empty() {
            "no change".to_string()
        } else {
            summary.join(", ")
        };
        let (wall, _) = self.now();
        self.drain(out, wall);
        Ok((source, file, line))
    }

    /// Puts the running links back after a link could not be reopened: `new` (the links
    /// of the new config done so far, in order, whose fates are `done`) return to their old
    /// settings and places; links only opened for the new config close.
    async fn restore(
        &mut self,
        r: &Reload,
        done: &[Fate],
        new: Vec<Link>,
        mut old: Vec<Option<Link>>,
        origin: StdInstant,
    ) -> anyhow::Result<()> {
        for (fate, l) in done.iter().zip(new) {
            match fate {
                Fate::Kept(i) => old[*i] = Some(l),
                Fate::Reopened(i) => {
                    let carried = l.close_carrying();
                    let mut back = Links::open_config(&r.file.link[*i], &r.source, origin).await?;
                    back.carry_on(carried);
                    old[*i] = Some(back);
                }
                Fate::Added => {}
            }
        }
        let links: Option<Vec<Link>> = old.into_iter().collect();
        self.links
            .set_all(links.context("a running link lost in the reload")?)
    }

    /// The summary's words for what the node changed; warnings for state lost.
    fn node_words(&self, d: Reconfigured, out: &mut Vec<String>) {
        diff_words(d.routes, "route", "routes", out);
        diff_words(d.groups, "group", "groups", out);
        diff_words(d.originate, "originated prefix", "originated prefixes", out);
        for (what, fate) in [("ESP", d.esp), ("SNAP ESS", d.snap_ess)] {
            match fate {
                StoreFate::Absent | StoreFate::Kept => {}
                StoreFate::Started => out.push(format!("{what} on")),
                StoreFate::Stopped => out.push(format!("{what} off")),
                StoreFate::Rebuilt => {
                    warn!(router = %self.name,
                        "{what} store rebuilt empty (its size, lifetime or key changed): its bindings are gone");
                    out.push(format!("{what} store rebuilt"));
                }
            }
        }
        match d.routing {
            RoutingFate::Absent | RoutingFate::Kept => {}
            RoutingFate::Started => out.push("routing on".into()),
            RoutingFate::Stopped => out.push("routing off".into()),
            RoutingFate::Restarted => {
                warn!(router = %self.name,
                    "routing restarted ([dv] or the router's id changed): routes are relearned from the neighbours");
                out.push("routing restarted".into());
            }
        }
    }
}
