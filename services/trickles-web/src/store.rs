//! The served directory as an object store ([`trickles::app::http::Store`]).
//!
//! An object's id is a 64-bit FNV-1a hash of its path relative to the root, so every
//! server process serving the same directory — a replica, or this one after a restart —
//! names a file by the same id, and a user continuation sealed by one resolves on all.
//! Resolving an id needs the reverse map, built by walking the directory at start and
//! again (at most once a second) when an unknown id or path shows up. An object's version
//! is its length and modification time: a file changed mid-transfer is detected, not
//! spliced.
//!
//! Only regular files under the root are served: paths are resolved and must stay inside
//! the root (no `..`, no symlink leading out); a directory serves its `index.html`.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use trickles::app::http::{ObjectInfo, Store, content_type_for};

/// Files kept open at once (the oldest is closed beyond this).
const OPEN_FILES: usize = 256;

/// How long a path lookup is trusted before the file is looked at again (a file changed
/// within it is still caught: its version is checked when continuations come back).
const LOOKUP_TTL: Duration = Duration::from_millis(500);

/// Fewest time between two walks of the directory.
const RESCAN_EVERY: Duration = Duration::from_secs(1);

/// The files of one directory tree. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct FileStore {
    root: PathBuf,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Id → path relative to the root (with a leading `/`).
    paths: HashMap<u64, String>,
    /// Open files by id, with their info.
    open: HashMap<u64, (File, ObjectInfo)>,
    /// Recent lookups by request path, with when they were made: a path looked up again
    /// within [`LOOKUP_TTL`] costs no system call.
    recent: HashMap<String, (ObjectInfo, Instant)>,
    last_scan: Option<Instant>,
}

/// 64-bit FNV-1a: stable across builds and processes.
fn id_of(rel: &str) -> u64 {
    rel.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl FileStore {
    /// The store of the tree at `root` (walked once now).
    ///
    /// # Errors
    ///
    /// `root` is not a readable directory.
    pub fn open(root: &Path) -> anyhow::Result<FileStore> {
        let root = root
            .canonicalize()
            .map_err(|e| anyhow::anyhow!("root {}: {e}", root.display()))?;
        if !root.is_dir() {
            anyhow::bail!("root {} is not a directory", root.display());
        }
        let store = FileStore {
            root,
            inner: Arc::new(Mutex::new(Inner::default())),
        };
        store.rescan(true);
        Ok(store)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Files known by id.
    pub fn len(&self) -> usize {
        self.lock().paths.len()
    }

    /// Whether no file is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Walks the tree again unless it was walked less than [`RESCAN_EVERY`] ago (or
    /// `force`).
    fn rescan(&self, force: bool) {
        let mut inner = self.lock();
        if !force && inner.last_scan.is_some_and(|t| t.elapsed() < RESCAN_EVERY) {
            return;
        }
        inner.last_scan = Some(Instant::now());
        let mut paths = HashMap::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                let p = e.path();
                if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_file()
                    && let Ok(rel) = p.strip_prefix(&self.root)
                    && let Some(rel) = rel.to_str()
                {
                    let rel = format!("/{rel}");
                    paths.insert(id_of(&rel), rel);
                }
            }
        }
        inner.paths = paths;
    }

    /// Opens `rel` (relative, leading `/`) if it is a regular file inside the root.
    fn open_rel(&self, rel: &str) -> Option<(File, ObjectInfo, String)> {
        let mut candidate = self.root.join(rel.trim_start_matches('/'));
        if candidate.is_dir() {
            candidate = candidate.join("index.html");
        }
        let real = candidate.canonicalize().ok()?;
        let rel = format!("/{}", real.strip_prefix(&self.root).ok()?.to_str()?);
        let file = File::open(&real).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let info = ObjectInfo {
            id: id_of(&rel),
            len: meta.len(),
            version: mtime ^ meta.len().rotate_left(32),
            content_type: content_type_for(&rel),
        };
        Some((file, info, rel))
    }

    fn remember(&self, file: File, info: ObjectInfo, rel: String) {
        let mut inner = self.lock();
        if inner.open.len() >= OPEN_FILES {
            inner.open.clear();
        }
        if inner.recent.len() >= OPEN_FILES {
            inner.recent.clear();
        }
        inner.paths.insert(info.id, rel);
        inner.open.insert(info.id, (file, info));
    }
}

impl Store for FileStore {
    fn lookup(&self, path: &str) -> Option<ObjectInfo> {
        if let Some((info, at)) = self.lock().recent.get(path)
            && at.elapsed() < LOOKUP_TTL
        {
            return Some(*info);
        }
        let (file, info, rel) = self.open_rel(path)?;
        self.remember(file, info, rel);
        self.lock()
            .recent
            .insert(path.to_string(), (info, Instant::now()));
        Some(info)
    }

    fn info(&self, id: u64) -> Option<ObjectInfo> {
        let rel = {
            let inner = self.lock();
            if let Some((_, info)) = inner.open.get(&id) {
                return Some(*info);
            }
            inner.paths.get(&id).cloned()
        };
        let rel = match rel {
            Some(r) => r,
            None => {
                self.rescan(false);
                self.lock().paths.get(&id).cloned()?
            }
        };
        let (file, info, rel) = self.open_rel(&rel)?;
        (info.id == id).then(|| {
            self.remember(file, info, rel);
            info
        })
    }

    fn read(&self, id: u64, offset: u64, len: usize, out: &mut Vec<u8>) -> bool {
        if self.info(id).is_none() {
            return false;
        }
        let inner = self.lock();
        let Some((file, info)) = inner.open.get(&id) else {
            return false;
        };
        let len = len.min(usize::try_from(info.len.saturating_sub(offset)).unwrap_or(usize::MAX));
        let start = out.len();
        out.resize(start + len, 0);
        let mut done = 0;
        while done < len {
            match file.read_at(&mut out[start + done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        out.truncate(start + done);
        done == len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_by_path_and_id_inside_the_root_only() {
        let dir = std::env::temp_dir().join(format!("tw-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.txt"), b"hello").unwrap();
        std::fs::write(dir.join("sub/index.html"), b"<p>").unwrap();
        let store = FileStore::open(&dir).unwrap();
        assert_eq!(store.len(), 2);
        let a = store.lookup("/a.txt").unwrap();
        assert_eq!((a.len, a.content_type), (5, "text/plain; charset=utf-8"));
        // Another process (a fresh store) resolves the same id without a lookup.
        let other = FileStore::open(&dir).unwrap();
        assert_eq!(other.info(a.id), Some(a));
        let mut out = Vec::new();
        assert!(other.read(a.id, 1, 3, &mut out));
        assert_eq!(out, b"ell");
        out.clear();
        assert!(other.read(a.id, 3, 100, &mut out));
        assert_eq!(out, b"lo");
        assert_eq!(store.lookup("/sub").map(|i| i.len), Some(3));
        assert!(store.lookup("/missing").is_none());
        assert!(store.lookup("/../etc/passwd").is_none());
        assert!(store.info(12345).is_none());
        // A file created later is found by a rescan.
        std::fs::write(dir.join("late"), b"x").unwrap();
        assert!(store.lookup("/late").is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
