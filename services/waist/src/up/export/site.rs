//! A server's site, copied into the lab (`DIR/NAME/site-SERVER/`, bound read-only at
//! `/srv/SERVER` in each replica): only files and directories, so what the replicas serve
//! is what the export copied.

use std::path::{Path, PathBuf};

use anyhow::Context;
use netio::config::{ConfigError, Source};

use crate::up::topology::{Plan, TopologyFile};

/// One server's site, scanned.
pub(super) struct Site {
    /// The server.
    server: String,
    /// Its root on this machine.
    root: PathBuf,
    /// Its directories then files, relative to the root, sorted.
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

/// Every server's site (roots relative to `base`), scanned before anything is written.
///
/// # Errors
///
/// A site holding a symbolic link or anything but files and directories, located at the
/// server's `root`; a node named like a site's directory (`site-SERVER`), at its name.
pub(super) fn scan(
    source: &Source,
    file: &TopologyFile,
    plan: &Plan,
    base: &Path,
) -> Result<Vec<Site>, ConfigError> {
    let mut sites = Vec::new();
    for s in &file.server {
        let server = s.name.get_ref().clone();
        let dir = format!("site-{server}");
        let taken = file
            .router
            .iter()
            .map(|r| &r.name)
            .chain(file.server.iter().map(|s| &s.name))
            .chain(file.host.iter().map(|h| &h.name))
            .find(|n| *n.get_ref() == dir)
            .or_else(|| {
                // A replica (`SERVER-i`) of another server.
                let replica = plan.servers.iter().find(|(_, _, r)| r.contains(&dir))?;
                file.server
                    .iter()
                    .map(|s| &s.name)
                    .find(|n| *n.get_ref() == replica.0)
            });
        if let Some(n) = taken {
            return Err(source.error_for(
                n,
                format!(
                    "`{}` would share its directory with server `{server}`'s site ({dir}) \
                     in the export: rename one",
                    n.get_ref()
                ),
            ));
        }
        let root = base.join(s.root.get_ref());
        let mut site = Site {
            server,
            root: root.clone(),
            dirs: Vec::new(),
            files: Vec::new(),
        };
        walk(&root, Path::new(""), &mut site)
            .map_err(|m| source.error_for(&s.root, format!("{}: {m}", root.display())))?;
        site.dirs.sort();
        site.files.sort();
        sites.push(site);
    }
    Ok(sites)
}

/// Adds what is under `root/rel` to `site`.
fn walk(root: &Path, rel: &Path, site: &mut Site) -> Result<(), String> {
    let here = root.join(rel);
    let entries = std::fs::read_dir(&here).map_err(|e| format!("cannot read {rel:?}: {e}"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {rel:?}: {e}"))?;
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot read {rel:?}: {e}"))?;
        let path = rel.join(entry.file_name());
        if kind.is_dir() {
            site.dirs.push(path.clone());
            walk(root, &path, site)?;
        } else if kind.is_file() {
            site.files.push(path);
        } else {
            let what = if kind.is_symlink() {
                "a symbolic link"
            } else {
                "neither a file nor a directory"
            };
            return Err(format!(
                "{} is {what}: the export copies the site into the lab (files and \
                 directories only)",
                path.display()
            ));
        }
    }
    Ok(())
}

impl Site {
    /// Copies the site to `dir/NAME/site-SERVER/` (replacing an earlier copy); returns that
    /// directory, relative to `dir`.
    ///
    /// # Errors
    ///
    /// A file that cannot be copied.
    pub(super) fn copy(&self, dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
        let rel = PathBuf::from(name).join(format!("site-{}", self.server));
        let to = dir.join(&rel);
        if to.exists() {
            std::fs::remove_dir_all(&to)
                .with_context(|| format!("cannot replace {}", to.display()))?;
        }
        std::fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
        for d in &self.dirs {
            std::fs::create_dir_all(to.join(d))
                .with_context(|| format!("cannot create {}", to.join(d).display()))?;
        }
        for f in &self.files {
            std::fs::copy(self.root.join(f), to.join(f)).with_context(|| {
                format!(
                    "cannot copy {} to {}",
                    self.root.join(f).display(),
                    to.display()
                )
            })?;
        }
        Ok(rel)
    }
}
