//! The store's read cache: a few fixed blocks of the files being served, so a bulk
//! transfer's small reads cost one copy each instead of a system call (see [`Cache`]).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use super::Ident;

/// Bytes of one block of the read cache. Blocks start at multiples of it in the file
/// (the last one of a file is shorter, a file no longer than this is one block). 256 KiB:
/// one block read serves about a hundred of a bulk transfer's 2.7 KB reads, and the whole
/// cache stays a few MiB. Reads of a block or more go to the file directly (one system
/// call is then cheap next to the copy).
pub const CACHE_BLOCK: usize = 256 * 1024;

/// Blocks cached at most (least recently used evicted): [`CACHE_BLOCKS`] × [`CACHE_BLOCK`]
/// = 4 MiB, whatever the number of clients or files.
pub const CACHE_BLOCKS: usize = 16;

/// A cached block unused this long may be evicted even though its transfer has not read
/// it to its end (the transfer stopped, or moved on).
pub(super) const CACHE_IDLE: Duration = Duration::from_secs(1);

/// Where a cached block comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BlockKey {
    /// Offset in the file / [`CACHE_BLOCK`] (first: compared first).
    index: u64,
    id: u64,
    ident: Ident,
}

/// One slot of the cache. Its buffer is kept when the slot is reused (no zeroing then).
pub(super) struct Slot {
    /// `None`: free (its bytes mean nothing).
    key: Option<BlockKey>,
    /// The block's bytes: [`CACHE_BLOCK`] of them, fewer for the last block of a file.
    pub(super) data: Vec<u8>,
    /// When it was last used: [`Cache::clock`] (the order), and the time.
    used: u64,
    pub(super) used_at: Instant,
    /// A read reached its last byte: its transfer (a sequential reader) has moved on.
    done: bool,
}

impl Slot {
    /// Whether a miss may take this slot: free, read to its end, or idle.
    fn evictable(&self, now: Instant) -> bool {
        self.key.is_none() || self.done || now.saturating_duration_since(self.used_at) >= CACHE_IDLE
    }
}

/// The read cache: at most [`CACHE_BLOCKS`] slots of at most [`CACHE_BLOCK`] bytes.
///
/// A miss loads its block into a slot that is free, or holds a block read to its end (a
/// bulk transfer reads a file in order, so it has left that block), or unused for
/// [`CACHE_IDLE`]; the least recently used such slot. When there is none (more transfers
/// at once, each at its own place, than there are slots), the miss reads just the asked
/// bytes from the file, as without a cache: evicting a block that a transfer still reads
/// would have every small read load a whole block, each evicting the next (least recently
/// used thrashes on such a cycle). The transfers whose blocks are cached keep them.
#[derive(Default)]
pub(super) struct Cache {
    pub(super) slots: Vec<Slot>,
    clock: u64,
    /// Bytes read into blocks so far (statistics).
    pub(super) loaded: u64,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("blocks", &self.blocks())
            .field("loaded", &self.loaded)
            .finish_non_exhaustive()
    }
}

impl Cache {
    /// Blocks holding data.
    pub(super) fn blocks(&self) -> usize {
        self.slots.iter().filter(|s| s.key.is_some()).count()
    }

    /// Frees the blocks of object `id` read from another file than `ident`.
    pub(super) fn forget_other(&mut self, id: u64, ident: Ident) {
        for s in &mut self.slots {
            if s.key.is_some_and(|k| k.id == id && k.ident != ident) {
                s.key = None;
            }
        }
    }

    /// Appends `len` bytes (all inside the file, fewer than [`CACHE_BLOCK`]) of `file` at
    /// `offset` to `out`, out of cached blocks where it can. `false` on a read error
    /// (`out` may then hold part of them).
    pub(super) fn read(
        &mut self,
        file: &File,
        id: u64,
        ident: Ident,
        offset: u64,
        len: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        let block = CACHE_BLOCK as u64;
        let end = offset + len as u64;
        let now = Instant::now();
        let mut pos = offset;
        while pos < end {
            let key = BlockKey {
                index: pos / block,
                id,
                ident,
            };
            let at = (pos % block) as usize;
            let take = (end - pos).min(block - at as u64) as usize;
            let slot = match self.slots.iter().position(|s| s.key == Some(key)) {
                Some(i) => i,
                None => match self.victim(now) {
                    Some(i) => {
                        if !self.load(i, file, key, now) {
                            return false;
                        }
                        i
                    }
                    None => {
                        if !pread(file, pos, take, out) {
                            return false;
                        }
                        pos += take as u64;
                        continue;
                    }
                },
            };
            self.clock += 1;
            let s = &mut self.slots[slot];
            s.used = self.clock;
            s.used_at = now;
            let Some(piece) = s.data.get(at..at + take) else {
                return false;
            };
            out.extend_from_slice(piece);
            s.done |= at + take == s.data.len();
            pos += take as u64;
        }
        true
    }

    /// The slot a miss loads its block into, if any (a new one while fewer than
    /// [`CACHE_BLOCKS`]).
    fn victim(&mut self, now: Instant) -> Option<usize> {
        if self.slots.len() < CACHE_BLOCKS {
            self.slots.push(Slot {
                key: None,
                data: Vec::new(),
                used: 0,
                used_at: now,
                done: false,
            });
            return Some(self.slots.len() - 1);
        }
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.evictable(now))
            .min_by_key(|(_, s)| (s.key.is_some(), s.used))
            .map(|(i, _)| i)
    }

    /// Reads block `key` of `file` into slot `i`; `false` on a read error (the slot is
    /// then free).
    fn load(&mut self, i: usize, file: &File, key: BlockKey, now: Instant) -> bool {
        let start = key.index * CACHE_BLOCK as u64;
        let n = usize::try_from(key.ident.len.saturating_sub(start))
            .unwrap_or(usize::MAX)
            .min(CACHE_BLOCK);
        let s = &mut self.slots[i];
        s.key = None;
        // Reuse the buffer: no zeroing unless it grows, and then to exactly `n` (never past
        // CACHE_BLOCK).
        if s.data.len() >= n {
            s.data.truncate(n);
        } else {
            s.data.reserve_exact(n - s.data.len());
            s.data.resize(n, 0);
        }
        if n == 0 || file.read_exact_at(&mut s.data, start).is_err() {
            return false;
        }
        s.key = Some(key);
        s.used_at = now;
        s.done = false;
        self.loaded += n as u64;
        true
    }
}

/// Appends `len` bytes of `file` at `offset` to `out` with `pread`; `true` iff all were
/// (`out` keeps what was read).
pub(super) fn pread(file: &File, offset: u64, len: usize, out: &mut Vec<u8>) -> bool {
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
