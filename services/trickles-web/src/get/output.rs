//! Where a download's body goes: a file written at each part's offset, or stdout in
//! order; and what is left of a file when the download fails (`FILE.partial`, or nothing).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use anyhow::{Context as _, bail};

/// Where the body goes.
pub(super) enum Output {
    /// A file, with its path when it is a regular file this client made (renamed to
    /// `.partial` or removed if the download fails).
    File(File, Option<PathBuf>),
    /// Stdout in order: bytes ahead of `next` wait in `early`.
    Stdout {
        next: u64,
        early: BTreeMap<u64, Vec<u8>>,
    },
}

impl Output {
    pub(super) fn open(path: Option<&PathBuf>) -> anyhow::Result<Output> {
        match path {
            Some(p) if p.as_os_str() != "-" => {
                let f =
                    File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
                let regular = f.metadata().is_ok_and(|m| m.is_file());
                Ok(Output::File(f, regular.then(|| p.clone())))
            }
            _ => Ok(Output::Stdout {
                next: 0,
                early: BTreeMap::new(),
            }),
        }
    }

    pub(super) fn write_at(&mut self, offset: u64, bytes: &[u8]) -> anyhow::Result<()> {
        match self {
            Output::File(f, _) => f
                .write_all_at(bytes, offset)
                .context("writing the output")?,
            Output::Stdout { next, early } => {
                if offset != *next {
                    early.insert(offset, bytes.to_vec());
                    return Ok(());
                }
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).context("writing to stdout")?;
                *next += bytes.len() as u64;
                while let Some(chunk) = early.remove(next) {
                    out.write_all(&chunk).context("writing to stdout")?;
                    *next += chunk.len() as u64;
                }
            }
        }
        Ok(())
    }

    pub(super) fn finish(self, len: u64) -> anyhow::Result<()> {
        match self {
            Output::File(f, _) => {
                // Only a regular file has a length to set (not /dev/null, a pipe, a tty).
                if f.metadata().is_ok_and(|m| m.is_file()) {
                    f.set_len(len).context("sizing the output")?;
                }
                f.sync_all().ok();
            }
            Output::Stdout { early, .. } => {
                if !early.is_empty() {
                    bail!("parts of the body never joined up");
                }
                std::io::stdout().flush().context("writing to stdout")?;
            }
        }
        Ok(())
    }

    /// The download failed after `bytes` body bytes: a file of ours is renamed
    /// `FILE.partial` (returned) if it holds any, removed if not; stdout is flushed.
    pub(super) fn abandon(self, bytes: u64) -> Option<PathBuf> {
        match self {
            Output::File(f, Some(path)) => {
                drop(f);
                if bytes == 0 {
                    let _ = std::fs::remove_file(&path);
                    return None;
                }
                let mut partial = path.clone().into_os_string();
                partial.push(".partial");
                let partial = PathBuf::from(partial);
                match std::fs::rename(&path, &partial) {
                    Ok(()) => Some(partial),
                    Err(_) => Some(path),
                }
            }
            Output::File(..) => None,
            Output::Stdout { .. } => {
                let _ = std::io::stdout().flush();
                None
            }
        }
    }
}
