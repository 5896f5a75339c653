//! A capture with a size cap: a ring of pcap files, rotated like `tcpdump -C SIZE -W N`.
//!
//! ```text
//!  write ─► X.pcap      (the newest; when the next record would pass the file's share
//!           X.pcap.1     of the cap: X.pcap.K-2 → X.pcap.K-1 (the oldest is gone), …,
//!           …            X.pcap → X.pcap.1, and a new X.pcap with its own header)
//!           X.pcap.K-1  (the oldest)
//! ```
//!
//! A [`Ring`] of `total` bytes in `K` files gives each file `total / K` bytes, header
//! included, so the files on disk never hold more than `total` bytes together: a file is
//! closed before the record that would take it past its share. Every file is a whole
//! pcap (its own global header, whole records), so tshark, Wireshark or `pcap_file` read
//! any of them alone, and `mergecap X.pcap.3 X.pcap.2 X.pcap.1 X.pcap` gives the
//! capture's last `total` bytes in order.
//!
//! A file's share must hold the largest record (the header, a 16-byte record header and
//! [`SNAPLEN`] bytes: [`MIN_FILE_BYTES`]), so [`Ring::new`] refuses a smaller one: a
//! single record never has to pass the cap. The daemons ask for megabytes
//! ([`Ring::megabytes`]: MiB, 2^20 bytes, in [`RING_FILES`] files).
//!
//! Unlike tcpdump's numbered names, the newest file keeps the name an unbounded capture
//! has, so tools that read `X.pcap` need not know whether the capture is capped.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{HEADER_LEN, RECORD_HEADER_LEN, SNAPLEN};

/// How many files a ring from [`Ring::megabytes`] keeps (`X.pcap`, `X.pcap.1` …
/// `X.pcap.3`): enough that a rotation drops only a quarter of what the ring holds.
pub const RING_FILES: u32 = 4;

/// The smallest share of a ring one file may have: a header and the largest record.
pub const MIN_FILE_BYTES: u64 = HEADER_LEN + RECORD_HEADER_LEN + SNAPLEN as u64;

/// The most megabytes [`Ring::megabytes`] takes (1 TiB per link).
pub const MAX_MEGABYTES: u32 = 1 << 20;

/// A capture's size cap: `files` files of at most [`Ring::file_bytes`] bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    file_bytes: u64,
    files: u32,
}

/// Why a [`Ring`] cannot be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// No files.
    NoFiles,
    /// A ring of 0 megabytes ([`Ring::megabytes`]).
    NoMegabytes,
    /// Each file's share of the cap is smaller than one largest record.
    TooSmall {
        /// The cap asked for, bytes.
        total: u64,
        /// The files asked for.
        files: u32,
    },
    /// More than [`MAX_MEGABYTES`].
    TooLarge {
        /// The megabytes asked for.
        megabytes: u32,
    },
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RingError::NoFiles => f.write_str("a capture ring needs at least one file"),
            RingError::NoMegabytes => {
                f.write_str("a capture ring of 0 MB holds nothing: give 1 or more (or no ring)")
            }
            RingError::TooSmall { total, files } => write!(
                f,
                "a capture ring of {total} bytes in {files} files leaves each file less \
                 than the {MIN_FILE_BYTES} bytes of one largest packet"
            ),
            RingError::TooLarge { megabytes } => write!(
                f,
                "a capture ring of {megabytes} MB is more than the {MAX_MEGABYTES} MB allowed"
            ),
        }
    }
}

impl std::error::Error for RingError {}

impl Ring {
    /// A ring of at most `total` bytes on disk in `files` files.
    ///
    /// # Errors
    ///
    /// No files, or a file's share (`total / files`) below [`MIN_FILE_BYTES`].
    pub fn new(total: u64, files: u32) -> Result<Ring, RingError> {
        if files == 0 {
            return Err(RingError::NoFiles);
        }
        let file_bytes = total / u64::from(files);
        if file_bytes < MIN_FILE_BYTES {
            return Err(RingError::TooSmall { total, files });
        }
        Ok(Ring { file_bytes, files })
    }

    /// A ring of at most `megabytes` MiB (2^20 bytes) in [`RING_FILES`] files, as the
    /// daemons' `--pcap-ring-mb` and a topology's `capture = { ring_mb = N }` ask.
    ///
    /// # Errors
    ///
    /// 0, or more than [`MAX_MEGABYTES`].
    pub fn megabytes(megabytes: u32) -> Result<Ring, RingError> {
        if megabytes == 0 {
            return Err(RingError::NoMegabytes);
        }
        if megabytes > MAX_MEGABYTES {
            return Err(RingError::TooLarge { megabytes });
        }
        Ring::new(u64::from(megabytes) << 20, RING_FILES)
    }

    /// The most bytes one file holds, its header included.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// How many files the ring keeps.
    pub fn files(&self) -> u32 {
        self.files
    }

    /// The most bytes all the ring's files hold together.
    pub fn total_bytes(&self) -> u64 {
        self.file_bytes * u64::from(self.files)
    }

    /// The path of the ring's file `i` for a capture at `base`: `base` itself for 0 (the
    /// newest), `base.i` for the older ones.
    pub fn path(base: &Path, i: u32) -> PathBuf {
        if i == 0 {
            return base.to_path_buf();
        }
        let mut name = base.as_os_str().to_os_string();
        name.push(format!(".{i}"));
        PathBuf::from(name)
    }

    /// Every file of the ring at `base`, newest first (some may not exist yet).
    pub fn paths(&self, base: &Path) -> Vec<PathBuf> {
        (0..self.files).map(|i| Ring::path(base, i)).collect()
    }

    /// Moves each file one place older (`base.K-2` → `base.K-1`, …, `base` → `base.1`),
    /// the oldest replaced; with one file, `base` is simply started again. Files not
    /// there yet are skipped.
    ///
    /// # Errors
    ///
    /// A rename that fails for another reason than a missing file.
    pub fn shift(&self, base: &Path) -> anyhow::Result<()> {
        for i in (1..self.files).rev() {
            let (from, to) = (Ring::path(base, i - 1), Ring::path(base, i));
            match std::fs::rename(&from, &to) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| {
                        format!("rotating {} to {}", from.display(), to.display())
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Removes the older files of a ring at `base` (`base.1` … `base.K-1`), left by an
    /// earlier capture; `base` itself is truncated when the capture starts.
    ///
    /// # Errors
    ///
    /// A file that is there but cannot be removed.
    pub fn clear(&self, base: &Path) -> anyhow::Result<()> {
        for old in self.paths(base).iter().skip(1) {
            match std::fs::remove_file(old) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("removing {}", old.display()));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::{Duration, SystemTime};

    use pcap_file::pcap::PcapReader;

    use super::*;
    use crate::pcap::PcapWriter;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("netio-ring-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// An IPv4 header claiming `len` bytes, then zeros: the record's bytes are what count.
    fn packet(len: usize, seq: u32) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&u16::try_from(len).unwrap().to_be_bytes());
        p[20..24].copy_from_slice(&seq.to_be_bytes());
        p
    }

    /// Every record of the file at `path`, read by `pcap_file`'s validating reader: the
    /// sequence numbers the test wrote into them.
    fn read(path: &Path) -> Vec<u32> {
        let mut reader = PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
        assert_eq!(reader.header().datalink, pcap_file::DataLink::RAW);
        let mut seqs = Vec::new();
        while let Some(r) = reader.next_packet() {
            let r = r.unwrap();
            seqs.push(u32::from_be_bytes(r.data[20..24].try_into().unwrap()));
        }
        seqs
    }

    fn size(path: &Path) -> u64 {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }

    #[test]
    fn sizes_are_checked_and_split_evenly() {
        assert_eq!(Ring::new(1 << 20, 0), Err(RingError::NoFiles));
        assert_eq!(
            Ring::new(4 * MIN_FILE_BYTES - 1, 4),
            Err(RingError::TooSmall {
                total: 4 * MIN_FILE_BYTES - 1,
                files: 4
            })
        );
        let r = Ring::new(4 * MIN_FILE_BYTES + 3, 4).unwrap();
        assert_eq!((r.file_bytes(), r.files()), (MIN_FILE_BYTES, 4));
        assert_eq!(r.total_bytes(), 4 * MIN_FILE_BYTES);
        let mb = Ring::megabytes(8).unwrap();
        assert_eq!((mb.file_bytes(), mb.files()), (2 << 20, RING_FILES));
        assert_eq!(Ring::megabytes(0), Err(RingError::NoMegabytes));
        assert_eq!(Ring::megabytes(1).unwrap().file_bytes(), 1 << 18);
        assert_eq!(
            Ring::megabytes(MAX_MEGABYTES + 1),
            Err(RingError::TooLarge {
                megabytes: MAX_MEGABYTES + 1
            })
        );
        assert_eq!(
            Ring::path(Path::new("/c/r1-a.pcap"), 2),
            Path::new("/c/r1-a.pcap.2")
        );
    }

    #[test]
    fn the_ring_rotates_keeps_the_newest_and_never_passes_its_cap() {
        let d = dir("rotate");
        let base = d.join("r1-a.pcap");
        // 3 files of 100 000 bytes: 64 records of 1500 bytes (+16) fit in one.
        let ring = Ring::new(300_000, 3).unwrap();
        let mut w = PcapWriter::create_ring(&base, ring).unwrap();
        let per_file = (100_000 - HEADER_LEN) / (RECORD_HEADER_LEN + 1500);
        assert_eq!(per_file, 65);
        let ts = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let n: u32 = 1000;
        for seq in 0..n {
            w.write(ts, &packet(1500, seq)).unwrap();
            w.flush().unwrap();
            let on_disk: u64 = ring.paths(&base).iter().map(|p| size(p)).sum();
            assert!(on_disk <= ring.total_bytes(), "{on_disk} bytes after {seq}");
        }
        assert_eq!(w.packets(), u64::from(n));
        assert_eq!(w.rotations(), u64::from(n - 1) / per_file);
        drop(w);
        // The files hold the newest records, in order, oldest file first, each readable
        // on its own; nothing else sits beside them.
        let files: Vec<Vec<u32>> = ring.paths(&base).iter().rev().map(|p| read(p)).collect();
        for f in &files[..2] {
            assert_eq!(f.len() as u64, per_file);
        }
        let kept: Vec<u32> = files.concat();
        let first = n - u32::try_from(kept.len()).unwrap();
        assert_eq!(kept, (first..n).collect::<Vec<_>>());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn largest_packets_fill_the_smallest_ring_exactly() {
        let d = dir("largest");
        let base = d.join("x.pcap");
        let ring = Ring::new(2 * MIN_FILE_BYTES, 2).unwrap();
        let mut w = PcapWriter::create_ring(&base, ring).unwrap();
        for seq in 0..5 {
            w.write(SystemTime::UNIX_EPOCH, &packet(SNAPLEN as usize, seq))
                .unwrap();
        }
        w.flush().unwrap();
        // One record per file: the two newest.
        assert_eq!(size(&base), MIN_FILE_BYTES);
        assert_eq!(read(&Ring::path(&base, 1)), [3]);
        assert_eq!(read(&base), [4]);
        assert_eq!(w.rotations(), 4);
        drop(w);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_new_ring_removes_what_an_earlier_one_left() {
        let d = dir("clear");
        let base = d.join("x.pcap");
        let ring = Ring::new(3 * MIN_FILE_BYTES, 3).unwrap();
        for i in 0..3 {
            std::fs::write(Ring::path(&base, i), b"old").unwrap();
        }
        let mut w = PcapWriter::create_ring(&base, ring).unwrap();
        w.write(SystemTime::UNIX_EPOCH, &packet(100, 9)).unwrap();
        drop(w);
        assert_eq!(read(&base), [9]);
        assert!(!Ring::path(&base, 1).exists() && !Ring::path(&base, 2).exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_unbounded_capture_never_rotates() {
        let d = dir("unbounded");
        let base = d.join("x.pcap");
        let mut w = PcapWriter::create(&base).unwrap();
        for seq in 0..300 {
            w.write(SystemTime::UNIX_EPOCH, &packet(1500, seq)).unwrap();
        }
        drop(w);
        assert_eq!(read(&base).len(), 300);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
