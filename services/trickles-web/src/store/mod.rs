//! The served directory as an object store ([`trickles::app::http::Store`]).
//!
//! An object's id is a 64-bit FNV-1a hash of its path relative to the root, so every
//! server process serving the same directory — a replica, or this one after a restart —
//! names a file by the same id, and a user continuation sealed by one resolves on all.
//! Resolving an id needs the reverse map, built by walking the directory at start and
//! again (at most once a second) when an unknown id or path shows up. An object's version
//! is its length and modification time (in nanoseconds): a file changed mid-transfer is
//! detected, not spliced. The version is also the file's strong `ETag` (as nginx's is
//! made of the same two), and the modification time in seconds its `Last-Modified`.
//!
//! Only regular files under the root are served: paths are resolved and must stay inside
//! the root (no `..`, no symlink leading out). A directory is no object
//! ([`Store::is_directory`] says it is one): the core serves its `index.html` for
//! `/dir/` and redirects `/dir` there.
//!
//! Reads go through a small read cache ([`CACHE_BLOCK`] × [`CACHE_BLOCKS`], fixed): a
//! bulk transfer asks for a few kilobytes per request, and serving those out of a block
//! read once costs one copy instead of a system call each. A cached block is keyed by the
//! object and the identity of the open file it was read from (version, length, device,
//! inode, change time), so once a changed file is opened again none of its old bytes are
//! served. Many transfers at once over more blocks than the cache holds do not make every
//! small read load a whole block: a block still in use is not evicted, and a read
//! missing the cache then reads the file directly, as without a cache (see `Cache`).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use trickles::app::http::{ObjectInfo, Store, content_type_for};

mod cache;

#[cfg(test)]
use cache::CACHE_IDLE;
pub use cache::{CACHE_BLOCK, CACHE_BLOCKS};
use cache::{Cache, pread};

/// Files kept open at once (the oldest is closed beyond this).
const OPEN_FILES: usize = 256;

/// How long a path lookup is trusted before the file is looked at again (a file changed
/// within it is still caught: its version is checked when continuations come back).
const LOOKUP_TTL: Duration = Duration::from_millis(500);

/// Fewest time between two walks of the directory.
const RESCAN_EVERY: Duration = Duration::from_secs(1);

/// The files of one directory tree. Cheap to clone (shared): every clone serves the same
/// root, and [`FileStore::set_root`] moves them all to another.
#[derive(Clone, Debug)]
pub struct FileStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The directory served (canonical).
    root: PathBuf,
    /// Id → path relative to the root (with a leading `/`).
    paths: HashMap<u64, String>,
    /// Open files by id, with their info.
    open: HashMap<u64, OpenFile>,
    /// Recent lookups by request path, with when they were made: a path looked up again
    /// within [`LOOKUP_TTL`] costs no system call.
    recent: HashMap<String, (ObjectInfo, Instant)>,
    last_scan: Option<Instant>,
    /// Recently read blocks of open files.
    cache: Cache,
}

/// One open file.
#[derive(Debug)]
struct OpenFile {
    file: File,
    info: ObjectInfo,
    ident: Ident,
}

/// What a cached block was read from: the object's version and the open file's identity.
/// Any write to a file changes its change time (which nobody can set), a file replaced by
/// another is another inode: a block read before is never served for the file opened
/// after, even when its length and modification time were kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ident {
    version: u64,
    /// The file's length (the cache's last block of it is shorter).
    pub(super) len: u64,
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
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
        let root = checked_root(root)?;
        let store = FileStore {
            inner: Arc::new(Mutex::new(Inner {
                root,
                ..Inner::default()
            })),
        };
        store.rescan(true);
        Ok(store)
    }

    /// Serves the tree at `root` from now on, in this store and every clone of it (a
    /// reload: the server's and the TCP fallback's): files, open files and cached blocks
    /// of the old root are forgotten, the new tree walked. Whether the root changed
    /// (`false`: it is the one served, and nothing was forgotten).
    ///
    /// # Errors
    ///
    /// `root` is not a readable directory; the store keeps its root then.
    pub fn set_root(&self, root: &Path) -> anyhow::Result<bool> {
        let root = checked_root(root)?;
        {
            let mut inner = self.lock();
            if inner.root == root {
                return Ok(false);
            }
            *inner = Inner {
                root,
                ..Inner::default()
            };
        }
        self.rescan(true);
        Ok(true)
    }

    /// The root directory (canonical).
    pub fn root(&self) -> PathBuf {
        self.lock().root.clone()
    }

    /// Files known by id.
    pub fn len(&self) -> usize {
        self.lock().paths.len()
    }

    /// Whether no file is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocks in the read cache now (at most [`CACHE_BLOCKS`]), for tests and statistics.
    pub fn cache_blocks(&self) -> usize {
        self.lock().cache.blocks()
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
        let root = inner.root.clone();
        let mut paths = HashMap::new();
        let mut stack = vec![root.clone()];
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
                    && let Ok(rel) = p.strip_prefix(&root)
                    && let Some(rel) = rel.to_str()
                {
                    let rel = format!("/{rel}");
                    paths.insert(id_of(&rel), rel);
                }
            }
        }
        inner.paths = paths;
    }

    /// `rel` (relative, leading `/`) resolved under `root`, if it exists inside it.
    fn resolve(root: &Path, rel: &str) -> Option<PathBuf> {
        let real = root.join(rel.trim_start_matches('/')).canonicalize().ok()?;
        real.starts_with(root).then_some(real)
    }

    /// Opens `rel` (relative, leading `/`) if it is a regular file inside the root: the
    /// file, its path relative to the root and the root it was found under.
    fn open_rel(&self, rel: &str) -> Option<(OpenFile, String, PathBuf)> {
        let root = self.root();
        let real = Self::resolve(&root, rel)?;
        let rel = format!("/{}", real.strip_prefix(&root).ok()?.to_str()?);
        let file = File::open(&real).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let since_epoch = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok());
        let mtime = since_epoch.map_or(0, |d| d.as_nanos() as u64);
        let info = ObjectInfo {
            id: id_of(&rel),
            len: meta.len(),
            version: mtime ^ meta.len().rotate_left(32),
            modified: since_epoch.map(|d| d.as_secs()),
            content_type: content_type_for(&rel),
        };
        let ident = Ident {
            version: info.version,
            len: info.len,
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        };
        Some((OpenFile { file, info, ident }, rel, root))
    }

    /// Keeps a file [`open_rel`](FileStore::open_rel) opened under `root`, unless the
    /// root changed meanwhile.
    fn remember(&self, open: OpenFile, rel: String, root: &Path) {
        let mut inner = self.lock();
        if inner.root != root {
            return;
        }
        if inner.open.len() >= OPEN_FILES {
            inner.open.clear();
        }
        if inner.recent.len() >= OPEN_FILES {
            inner.recent.clear();
        }
        let id = open.info.id;
        // Blocks of the file this one replaces could never be used again: free them now.
        inner.cache.forget_other(id, open.ident);
        inner.paths.insert(id, rel);
        inner.open.insert(id, open);
    }
}

/// `root` made canonical, if it is a directory.
fn checked_root(root: &Path) -> anyhow::Result<PathBuf> {
    let canonical = root
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("root {}: {e}", root.display()))?;
    if !canonical.is_dir() {
        anyhow::bail!("root {} is not a directory", root.display());
    }
    Ok(canonical)
}

impl Store for FileStore {
    fn lookup(&self, path: &str) -> Option<ObjectInfo> {
        if path.ends_with('/') {
            // A directory's name: no file (the core asks for its index.html next).
            return None;
        }
        if let Some((info, at)) = self.lock().recent.get(path)
            && at.elapsed() < LOOKUP_TTL
        {
            return Some(*info);
        }
        let (open, rel, root) = self.open_rel(path)?;
        let info = open.info;
        self.remember(open, rel, &root);
        let mut inner = self.lock();
        if inner.root == root {
            inner
                .recent
                .insert(path.to_string(), (info, Instant::now()));
        }
        Some(info)
    }

    fn is_directory(&self, path: &str) -> bool {
        Self::resolve(&self.root(), path).is_some_and(|p| p.is_dir())
    }

    fn info(&self, id: u64) -> Option<ObjectInfo> {
        let rel = {
            let inner = self.lock();
            if let Some(open) = inner.open.get(&id) {
                return Some(open.info);
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
        let (open, rel, root) = self.open_rel(&rel)?;
        let info = open.info;
        (info.id == id).then(|| {
            self.remember(open, rel, &root);
            info
        })
    }

    fn read(&self, id: u64, offset: u64, len: usize, out: &mut Vec<u8>) -> bool {
        if self.info(id).is_none() {
            return false;
        }
        let mut inner = self.lock();
        let Inner { open, cache, .. } = &mut *inner;
        let Some(OpenFile { file, info, ident }) = open.get(&id) else {
            return false;
        };
        let len = len.min(usize::try_from(info.len.saturating_sub(offset)).unwrap_or(usize::MAX));
        let start = out.len();
        if len < CACHE_BLOCK {
            if cache.read(file, id, *ident, offset, len, out) {
                return true;
            }
            // A read error: read it all again directly, as without a cache.
            out.truncate(start);
        }
        pread(file, offset, len, out)
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
        // A directory is no object, but says it is a directory; its index is a file.
        assert!(store.lookup("/sub").is_none() && store.lookup("/sub/").is_none());
        assert!(store.is_directory("/sub") && store.is_directory("/"));
        assert!(!store.is_directory("/a.txt") && !store.is_directory("/missing"));
        assert!(!store.is_directory("/.."), "outside the root");
        let index = store.lookup("/sub/index.html").unwrap();
        assert_eq!(index.len, 3);
        // Its modification time, in seconds, as the file system says.
        let mtime = std::fs::metadata(dir.join("sub/index.html"))
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert_eq!(index.modified, Some(mtime));
        assert!(store.lookup("/missing").is_none());
        assert!(store.lookup("/../etc/passwd").is_none());
        assert!(store.info(12345).is_none());
        // A file created later is found by a rescan.
        std::fs::write(dir.join("late"), b"x").unwrap();
        assert!(store.lookup("/late").is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn set_root_moves_every_clone_to_the_new_tree() {
        let (old, new) = (Dir::new("root-old"), Dir::new("root-new"));
        std::fs::write(old.0.join("index.html"), b"old").unwrap();
        std::fs::write(new.0.join("index.html"), b"new!").unwrap();
        std::fs::write(new.0.join("only-new"), b"x").unwrap();
        let store = FileStore::open(&old.0).unwrap();
        let tcp = store.clone();
        assert_eq!(store.lookup("/index.html").map(|i| i.len), Some(3));
        assert!(!store.set_root(&old.0).unwrap(), "the same root: no change");
        assert!(store.set_root(&new.0).unwrap());
        // The clone serves the new tree at once (no lookup remembered from the old one).
        let info = tcp.lookup("/index.html").unwrap();
        assert_eq!(info.len, 4);
        let mut out = Vec::new();
        assert!(tcp.read(info.id, 0, 4, &mut out));
        assert_eq!(out, b"new!");
        assert!(tcp.lookup("/only-new").is_some());
        assert_eq!(tcp.root(), new.0.canonicalize().unwrap());
        // A root that is not a directory is refused; the store keeps the one it has.
        assert!(store.set_root(&new.0.join("only-new")).is_err());
        assert!(store.set_root(&old.0.join("missing")).is_err());
        assert_eq!(store.root(), new.0.canonicalize().unwrap());
    }

    /// A fresh directory under the temporary one, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir = std::env::temp_dir().join(format!("tw-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// xorshift64*: deterministic test data and offsets.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    impl FileStore {
        /// Makes the next lookup of any path look at its file again (as [`LOOKUP_TTL`]
        /// later would).
        fn expire_lookups(&self) {
            self.lock().recent.clear();
        }

        /// Makes every cached block look unused for [`CACHE_IDLE`].
        fn pass_idle(&self) {
            for s in &mut self.lock().cache.slots {
                s.used_at = s.used_at.checked_sub(CACHE_IDLE).unwrap();
            }
        }

        /// Bytes of cache buffers allocated, and bytes loaded into blocks so far.
        fn cache_memory(&self) -> (usize, u64) {
            let inner = self.lock();
            let c = &inner.cache;
            let cap = c.slots.iter().map(|s| s.data.capacity()).sum();
            (cap, c.loaded)
        }
    }

    /// Reads `len` bytes at `offset` through the store, checked against `want`.
    fn check(store: &FileStore, id: u64, want: &[u8], offset: u64, len: usize) {
        let mut out = vec![7u8; 3]; // Appended to, not overwritten.
        let end = (offset as usize).saturating_add(len).min(want.len());
        let start = (offset as usize).min(end);
        let ok = store.read(id, offset, len, &mut out);
        assert!(ok, "read {len} at {offset}");
        assert_eq!(&out[..3], &[7, 7, 7]);
        assert!(
            out[3..] == want[start..end],
            "read {len} at {offset}: wrong bytes"
        );
        assert!(store.cache_blocks() <= CACHE_BLOCKS);
    }

    #[test]
    fn cached_reads_match_the_file_across_blocks() {
        let dir = Dir::new("cache-random");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // 20 blocks and a bit: more than the cache holds.
        let size = 20 * CACHE_BLOCK + 12_345;
        let data = rng.bytes(size);
        std::fs::write(dir.0.join("big"), &data).unwrap();
        let store = FileStore::open(&dir.0).unwrap();
        let id = store.lookup("/big").unwrap().id;
        let block = CACHE_BLOCK as u64;
        for i in 0..4000 {
            let (offset, len) = match i % 4 {
                // Anywhere, small.
                0 => (rng.below(size as u64), rng.below(6000) as usize),
                // Straddling a block boundary.
                1 => {
                    let b = (1 + rng.below(20)) * block;
                    (b - 1 - rng.below(3000), 1 + rng.below(6000) as usize)
                }
                // Up to a whole block and more (direct reads).
                2 => (rng.below(size as u64), rng.below(2 * block + 10) as usize),
                // Sequential 2.7 KB reads, as a transfer makes.
                _ => ((i as u64 / 4 * 2668) % size as u64, 2668),
            };
            check(&store, id, &data, offset, len);
        }
        // Exactly a block, a block boundary, the last bytes, the end, past the end.
        check(&store, id, &data, 0, CACHE_BLOCK);
        check(&store, id, &data, block - 1, 2);
        check(&store, id, &data, block, CACHE_BLOCK - 1);
        check(&store, id, &data, size as u64 - 5, 5);
        check(&store, id, &data, size as u64 - 5, 100);
        check(&store, id, &data, size as u64, 100);
        check(&store, id, &data, size as u64 + 10, 100);
        check(&store, id, &data, u64::MAX, 100);
        assert!(store.cache_blocks() > 0, "the cache was used");
        // Never more than 16 blocks of 256 KiB allocated.
        let (cap, _) = store.cache_memory();
        assert_eq!(store.cache_blocks(), CACHE_BLOCKS);
        assert!(cap <= CACHE_BLOCKS * CACHE_BLOCK, "{cap} bytes of cache");
        // An unknown id reads nothing, as before.
        let mut out = Vec::new();
        assert!(!store.read(id ^ 1, 0, 10, &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn small_files_and_many_files_stay_within_the_cache() {
        let dir = Dir::new("cache-many");
        let mut rng = Rng(42);
        let files: Vec<Vec<u8>> = (0..40).map(|i| rng.bytes(1 + i * 4099)).collect();
        for (i, f) in files.iter().enumerate() {
            std::fs::write(dir.0.join(format!("f{i}")), f).unwrap();
        }
        let store = FileStore::open(&dir.0).unwrap();
        let ids: Vec<u64> = (0..files.len())
            .map(|i| store.lookup(&format!("/f{i}")).unwrap().id)
            .collect();
        for _ in 0..3000 {
            let f = rng.below(files.len() as u64) as usize;
            let n = files[f].len() as u64;
            let offset = rng.below(n + 2);
            let len = rng.below(4000) as usize;
            check(&store, ids[f], &files[f], offset, len);
        }
        let (cap, _) = store.cache_memory();
        assert!(store.cache_blocks() <= CACHE_BLOCKS);
        assert!(cap <= CACHE_BLOCKS * CACHE_BLOCK, "{cap} bytes of cache");
    }

    #[test]
    fn a_changed_file_is_read_anew() {
        let dir = Dir::new("cache-change");
        let path = dir.0.join("f");
        let mut rng = Rng(7);
        let first = rng.bytes(3 * CACHE_BLOCK / 2);
        std::fs::write(&path, &first).unwrap();
        let store = FileStore::open(&dir.0).unwrap();
        let v1 = store.lookup("/f").unwrap();
        // Fill the cache with both blocks.
        for off in (0..first.len() as u64).step_by(2668) {
            check(&store, v1.id, &first, off, 2668);
        }
        assert_eq!(store.cache_blocks(), 2);

        // 1. Rewritten in place, another length.
        let second = rng.bytes(CACHE_BLOCK + 1000);
        std::fs::write(&path, &second).unwrap();
        store.expire_lookups();
        let v2 = store.lookup("/f").unwrap();
        assert_eq!(v2.id, v1.id);
        assert_ne!(v2.version, v1.version);
        assert_eq!(store.info(v1.id), Some(v2));
        for off in (0..second.len() as u64).step_by(2668) {
            check(&store, v2.id, &second, off, 2668);
        }
        check(&store, v2.id, &second, 0, 100_000);

        // 2. Rewritten in place, same length, a new modification time.
        let third = rng.bytes(second.len());
        std::fs::write(&path, &third).unwrap();
        let t = std::time::SystemTime::now() + Duration::from_secs(1000);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(t)
            .unwrap();
        store.expire_lookups();
        let v3 = store.lookup("/f").unwrap();
        assert_eq!(v3.len, v2.len);
        assert_ne!(v3.version, v2.version);
        for off in (0..third.len() as u64).step_by(2668) {
            check(&store, v3.id, &third, off, 2668);
        }

        // 3. Replaced by another file of the same length and the same modification time
        //    (as `rsync -t` or `cp -p` leave it): the version cannot tell, the file can.
        let fourth = rng.bytes(third.len());
        let tmp = dir.0.join(".f.new");
        std::fs::write(&tmp, &fourth).unwrap();
        File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_modified(t)
            .unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        store.expire_lookups();
        let v4 = store.lookup("/f").unwrap();
        assert_eq!(v4.version, v3.version);
        for off in (0..fourth.len() as u64).step_by(2668) {
            check(&store, v4.id, &fourth, off, 2668);
        }
        // The old file's blocks were freed when the new one was opened.
        assert!(store.cache_blocks() <= 2);
    }

    #[test]
    fn many_streams_do_not_make_every_read_load_a_block() {
        // 40 transfers at once, each at its own place in a large file: more blocks in use
        // than the cache holds. Least recently used alone would have each 2.7 KB read load
        // a 256 KiB block (evicting the one the next read needs).
        let dir = Dir::new("cache-thrash");
        let mut rng = Rng(99);
        let streams = 40;
        let size = streams * CACHE_BLOCK;
        let data = rng.bytes(size);
        std::fs::write(dir.0.join("big"), &data).unwrap();
        let store = FileStore::open(&dir.0).unwrap();
        let id = store.lookup("/big").unwrap().id;
        let mut asked = 0u64;
        let mut at: Vec<u64> = (0..streams as u64)
            .map(|s| s * CACHE_BLOCK as u64 + rng.below(CACHE_BLOCK as u64))
            .collect();
        for _ in 0..300 {
            for a in &mut at {
                let len = 2668.min(size as u64 - *a) as usize;
                check(&store, id, &data, *a, len);
                *a += len as u64;
                asked += len as u64;
            }
        }
        let (_, loaded) = store.cache_memory();
        assert!(
            loaded <= 2 * asked,
            "{loaded} bytes loaded for {asked} asked"
        );
        assert_eq!(store.cache_blocks(), CACHE_BLOCKS);

        // Those transfers stop; a while later one transfer alone reads in order: each
        // block is loaded once, the cached blocks of the others idle out.
        store.pass_idle();
        let before = store.cache_memory().1;
        let (mut a, mut asked) = (0u64, 0u64);
        while a < size as u64 / 2 {
            check(&store, id, &data, a, 2668);
            a += 2668;
            asked += 2668;
        }
        let loaded = store.cache_memory().1 - before;
        assert!(
            loaded >= asked - CACHE_BLOCK as u64 && loaded <= asked + CACHE_BLOCK as u64,
            "{loaded} bytes loaded for {asked} read in order"
        );
    }
}
