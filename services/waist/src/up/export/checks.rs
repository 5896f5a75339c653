//! What the containerlab export refuses in the topology file before it plans: names
//! containerlab or a file name cannot carry, and router links it cannot build. Each
//! refusal is located at what the author wrote.

use std::path::Path;

use netio::config::{ConfigError, Source};
use serde::Deserialize;
use toml::Spanned;

use crate::up::topology::TopologyFile;

/// Whether containerlab takes `name` as a lab name (its schema's pattern for `name`,
/// which also makes a file name): a letter or digit, then letters, digits, `-`, `.`, `_`.
pub(super) fn lab_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

/// Just the topology's `name`, with its place in the file.
#[derive(Deserialize)]
struct LabName {
    name: Option<Spanned<String>>,
}

/// The lab's name (`name`, or the file's stem), refused unless containerlab takes it.
pub(super) fn lab_name(source: &Source) -> Result<String, ConfigError> {
    let written = source.parse::<LabName>()?.name;
    let name = match &written {
        Some(n) => n.get_ref().clone(),
        None => source
            .file()
            .file_stem()
            .map_or("waist".into(), |s| s.to_string_lossy().into_owned()),
    };
    if lab_name_ok(&name) {
        return Ok(name);
    }
    let message = format!(
        "`{name}` cannot name a containerlab lab (a letter or digit, then letters, digits, \
         -, . and _)"
    );
    Err(match &written {
        Some(n) => source.error_for(n, message),
        None => source.error_at(None, message + ": give the topology a `name`"),
    })
}

/// Refuses what the export cannot carry: node and machine names containerlab (or a file
/// name) refuses, and links a router's own config brings (its `config` file's or
/// `[defaults.router]`'s `[[link]]`s: TUN devices or sockets of the machine, not veths).
pub(super) fn refuse(source: &Source, file: &TopologyFile, base: &Path) -> Result<(), ConfigError> {
    let nodes = file
        .router
        .iter()
        .map(|r| &r.name)
        .chain(file.server.iter().map(|s| &s.name))
        .chain(file.host.iter().map(|h| &h.name));
    for name in nodes {
        // `waist up` takes letters, digits, - and _; containerlab wants a letter or digit
        // first.
        if name.get_ref().starts_with(['-', '_']) {
            return Err(source.error_for(
                name,
                format!(
                    "`{}` cannot name a containerlab node (it starts with a letter or digit)",
                    name.get_ref()
                ),
            ));
        }
    }
    for m in &file.machine {
        if !lab_name_ok(m.name.get_ref()) {
            return Err(source.error_for(
                &m.name,
                format!(
                    "machine `{}` cannot name an exported file (NAME-MACHINE.clab.yml): a \
                     letter or digit, then letters, digits, -, . and _",
                    m.name.get_ref()
                ),
            ));
        }
    }
    if let Some(defaults) = &file.defaults.router
        && defaults.get_ref().contains_key("link")
    {
        let at = source.value_span(defaults.span(), "link");
        return Err(source.error_at(at.or(Some(defaults.span())), LINKS_REFUSED));
    }
    for r in &file.router {
        if let Some(config) = &r.config {
            own_links(source, base, r.name.get_ref(), config)?;
        }
    }
    Ok(())
}

/// Why a router's own links are refused.
const LINKS_REFUSED: &str = "the containerlab export cannot carry a router's own [[link]]s \
     (a TUN device or a socket on this machine's addresses): a container's links are the \
     topology's veths; make it a [[link]], [[host]] or [[server]] of the topology";

/// The `[[link]]`s of a router's config file, with their place in it.
#[derive(Deserialize)]
struct OwnLinks {
    link: Option<Spanned<Vec<toml::Table>>>,
}

/// Refuses router `name`'s `config` file (`config`, relative to `base`) if it has
/// `[[link]]`s, located at the first in that file. A file that cannot be read or parsed is
/// left to the planner, which says so.
fn own_links(
    source: &Source,
    base: &Path,
    name: &str,
    config: &Spanned<String>,
) -> Result<(), ConfigError> {
    let full = base.join(config.get_ref());
    let Ok(text) = std::fs::read_to_string(&full) else {
        return Ok(());
    };
    let given = Source::new(&full, text);
    match given.parse::<OwnLinks>() {
        Ok(OwnLinks { link: Some(links) }) if !links.get_ref().is_empty() => {
            let e = given.error_for(&links, format!("router `{name}`: {LINKS_REFUSED}"));
            // Also say which topology line brought the file in.
            let by = source.error_for(config, "");
            Err(ConfigError {
                message: format!(
                    "{} (the config of `{name}`, {}:{})",
                    e.message,
                    by.file.display(),
                    by.line
                ),
                ..e
            })
        }
        _ => Ok(()),
    }
}
