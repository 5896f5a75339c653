//! A router's waist-router config from the topology, as waist-router's own typed file
//! ([`RouterFile`]), written with `toml::to_string`.
//!
//! What the topology's author gives is layered first, each replacing the one before: the
//! router's `config` file, then `[defaults.router]`, then its inline sections. Those are
//! TOML fragments, so they are merged as tables and read as a [`RouterFile`] by the
//! router's own parser. Everything `waist up` adds is typed: the node's name and address,
//! the links, the routes to attached hosts and servers (and, without distance vector, to
//! everything else) and the prefixes it announces. The programs of ESP instructions
//! (`esp = { instruction = [{ opcode, name, program }] }`) are written with absolute paths:
//! a relative one is read from the directory of the file that names it (the topology, or
//! the router's `config` file).

use std::net::IpAddr;
use std::path::Path;

use netio::config::{ConfigError, LinkConfig, LinkKind, Source};
use toml::{Spanned, Table, Value};
use waist_router::config::{RouteSection, RouterFile};

use super::{LinkEnd, ROUTER_SECTIONS, RouterSection, TopologyFile};

/// What the topology makes of a router (the planner builds it up step by step).
pub(super) struct RouterDraft {
    /// Its name.
    pub(super) name: String,
    /// Its own address.
    pub(super) address: IpAddr,
    /// The machine it runs on.
    pub(super) machine: String,
    /// Link ends, with the `[[link]]` they come from (none for hosts and servers).
    pub(super) links: Vec<(LinkEnd, Option<usize>)>,
    /// TUN links to netns hosts: (link name, device).
    pub(super) tuns: Vec<(String, String)>,
    /// Static routes to what is attached: (prefix, link name).
    pub(super) routes: Vec<(String, String)>,
    /// Prefixes it announces (if it runs distance vector).
    pub(super) originate: Vec<String>,
    /// Its stream host's address, if it has one.
    pub(super) stream_host: Option<IpAddr>,
    /// Streams deployed at start: id and spec text.
    pub(super) streams: Vec<(u16, String)>,
}

/// A value written by `waist up`, not read from a file (no place in one).
fn at<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

/// An error about router `section`'s config: where the author wrote the key it names, in
/// one of the router's inline sections (`esp = { … }`) or in `[defaults.router]`; else at
/// the router's name in the topology, quoting the generated file's error.
pub(super) fn refused(
    source: &Source,
    file: &TopologyFile,
    section: &RouterSection,
    e: ConfigError,
) -> ConfigError {
    let name = section.name.get_ref();
    let inline = [
        &section.esp,
        &section.snap,
        &section.dv,
        &section.route_cache,
        &section.streams,
    ];
    let written = e.key.as_deref().and_then(|key| {
        let given = inline.into_iter().flatten().map(Spanned::span);
        let defaults = file.defaults.router.iter().map(Spanned::span);
        given
            .chain(defaults)
            .find_map(|span| source.value_span(span, key))
    });
    match written {
        Some(at) => {
            let mut located = source.error_at(Some(at), format!("router `{name}`: {}", e.message));
            located.key = e.key;
            located
        }
        None => source.error_for(
            &section.name,
            format!("router `{name}`: its waist-router config is refused: {e}"),
        ),
    }
}

/// A router's waist-router config: what the author gave (its `config` file, then
/// `[defaults.router]`, then its inline sections), then what the topology makes: its name
/// and address, its links, routes to its hosts and servers (and `computed`, the routes to
/// everything else, if it runs no distance vector), and the prefixes it announces (if it
/// does).
///
/// # Errors
///
/// The `config` file cannot be read, or what was given is not a waist-router config;
/// located in the topology.
pub(super) fn router_file(
    source: &Source,
    base: &Path,
    file: &TopologyFile,
    section: &RouterSection,
    router: &RouterDraft,
    computed: &[(String, String)],
) -> Result<RouterFile, ConfigError> {
    let mut given = given_sections(source, base, file, section)?;
    // The node's name and address are the topology's, whatever was given.
    let mut node = match given.remove("node") {
        Some(Value::Table(n)) => n,
        _ => Table::new(),
    };
    node.insert("name".into(), Value::String(router.name.clone()));
    let address = Value::String(router.address.to_string());
    node.insert("addresses".into(), Value::Array(vec![address]));
    given.insert("node".into(), Value::Table(node));
    let text = toml::to_string(&given).map_err(|e| {
        source.error_for(
            &section.name,
            format!("cannot write its router config: {e}"),
        )
    })?;
    let given = Source::new(format!("{}.toml (generated)", router.name), text);
    let mut f: RouterFile = given
        .parse()
        .map_err(|e| refused(source, file, section, e))?;

    let dv_on = f.dv.is_some();
    if let Some(dv) = f.dv.as_mut().map(Spanned::get_mut) {
        dv.originate
            .extend(router.originate.iter().cloned().map(at));
    }
    for (end, settings) in &router.links {
        let mut l = LinkConfig::udp(&end.name, end.local, end.peer);
        if let Some(s) = settings.and_then(|i| file.link.get(i)) {
            l.cost = dv_on.then(|| at(s.cost.as_ref().map_or(1, |c| *c.get_ref())));
            l.mtu = s.mtu.as_ref().map(|m| at(*m.get_ref()));
            l.emulation = s.emulation.as_ref().map(|e| at(*e.get_ref()));
        }
        f.link.push(l);
    }
    for (name, device) in &router.tuns {
        f.link.push(tun_link(name, device));
    }
    if router.stream_host.is_some() || !router.streams.is_empty() {
        let s = f.streams.get_or_insert_with(|| at(no_settings()));
        if let Some(h) = router.stream_host {
            s.get_mut().host = Some(at(h.to_string()));
        }
        for (id, spec) in &router.streams {
            f.stream.push(waist_router::streams::StreamSection {
                id: at(*id),
                spec: at(spec.clone()),
            });
        }
    }
    let without_dv = if dv_on { &[][..] } else { computed };
    // Routes to one prefix over several links become one route with backups.
    let mut grouped: Vec<(&String, Vec<Spanned<String>>)> = Vec::new();
    for (prefix, link) in router.routes.iter().chain(without_dv) {
        match grouped.iter_mut().find(|(p, _)| *p == prefix) {
            Some((_, links)) => links.push(at(link.clone())),
            None => grouped.push((prefix, vec![at(link.clone())])),
        }
    }
    for (prefix, mut links) in grouped {
        let one = (links.len() == 1).then(|| links.remove(0));
        f.route.push(RouteSection {
            prefix: at(prefix.clone()),
            links: one.is_none().then(|| at(links)),
            link: one,
        });
    }
    Ok(f)
}

/// A `[streams]` section with every setting at its default.
fn no_settings() -> waist_router::streams::StreamsSection {
    waist_router::streams::StreamsSection {
        rate_pps: None,
        share_percent: None,
        overrun_messages: None,
        admission: None,
        through: None,
        host: None,
        control_from: None,
        presets: Vec::new(),
    }
}

/// A TUN link named `name` on `device` (created by the router, moved into a namespace
/// by `waist up`), every other field absent.
fn tun_link(name: &str, device: &str) -> LinkConfig {
    let unspecified = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    LinkConfig {
        kind: Some(at(LinkKind::Tun)),
        local: None,
        peer: None,
        device: Some(at(device.to_string())),
        ..LinkConfig::udp(name, unspecified, unspecified)
    }
}

/// The sections the author gave router `section`, merged: its `config` file, then
/// `[defaults.router]`, then its inline sections, each replacing a section of the same
/// name.
fn given_sections(
    source: &Source,
    base: &Path,
    file: &TopologyFile,
    section: &RouterSection,
) -> Result<Table, ConfigError> {
    let mut t = match &section.config {
        Some(path) => {
            let full = base.join(path.get_ref());
            let text = std::fs::read_to_string(&full).map_err(|e| {
                source.error_for(path, format!("cannot read {}: {e}", full.display()))
            })?;
            let mut t = text.parse::<Table>().map_err(|e| {
                let m = format!("{} is not TOML: {}", full.display(), e.message());
                source.error_for(path, m)
            })?;
            if let Some(esp) = t.get_mut("esp") {
                absolute_programs(esp, full.parent().unwrap_or(base));
            }
            t
        }
        None => Table::new(),
    };
    for (k, v) in file.defaults.router.iter().flat_map(|t| t.get_ref()) {
        let mut v = v.clone();
        if k == "esp" {
            absolute_programs(&mut v, base);
        }
        t.insert(k.clone(), v);
    }
    let inline = [
        &section.esp,
        &section.snap,
        &section.dv,
        &section.route_cache,
        &section.streams,
    ];
    for (k, v) in ROUTER_SECTIONS.iter().zip(inline) {
        if let Some(v) = v {
            let mut v = Value::Table(v.get_ref().clone());
            if *k == "esp" {
                absolute_programs(&mut v, base);
            }
            t.insert((*k).to_string(), v);
        }
    }
    Ok(t)
}

/// Makes the `program` of each of an `esp` section's instructions (`instruction = [{
/// opcode, name, program }]`, waist-router's `[[esp.instruction]]`) absolute, read from
/// `dir` (where the file that names it is): the generated config is read from elsewhere.
fn absolute_programs(esp: &mut Value, dir: &Path) {
    let Some(list) = esp.get_mut("instruction").and_then(Value::as_array_mut) else {
        return;
    };
    for i in list {
        if let Some(Value::String(p)) = i.get_mut("program") {
            let joined = dir.join(&*p);
            let full = std::path::absolute(&joined).unwrap_or(joined);
            *p = full.to_string_lossy().into_owned();
        }
    }
}

/// `f` as the text of router `section`'s config file, with a header saying where it came
/// from.
///
/// # Errors
///
/// If TOML cannot hold it (located at the router's name).
pub(super) fn write_router_file(
    source: &Source,
    section: &RouterSection,
    f: &RouterFile,
) -> Result<String, ConfigError> {
    let header = format!(
        "# Generated by `waist up` from {} (router `{}`).\n",
        source.file().display(),
        section.name.get_ref()
    );
    let body = toml::to_string(f).map_err(|e| {
        source.error_for(
            &section.name,
            format!("cannot write its router config: {e}"),
        )
    })?;
    Ok(header + &body)
}
