//! Per-link packet capture to classic pcap files, `LINKTYPE_RAW` (101).
//!
//! Every waist link carries raw IP packets (see `DESIGN.md`, "One packet model"), so a
//! capture needs no link-layer header: each record is the IP packet itself, and tshark or
//! Wireshark decode it as IPv4 or IPv6 by its first nibble.
//!
//! ```text
//!  link rx/tx ─► PcapWriter::write(ts, packet) ─► BufWriter ─► file
//!                                  daemon timer ─► PcapWriter::flush ─┘  (≥ once a second,
//!                                                                        at shutdown, on drop)
//! ```
//!
//! What it does: creates (or truncates) the file, writes the global header (snaplen
//! [`SNAPLEN`], microsecond timestamps, native byte order) and appends one record per
//! [`PcapWriter::write`]. Packets longer than [`SNAPLEN`] are cut to it; the record keeps
//! the original length, as libpcap does (tshark reads such records; `pcap_file`'s own
//! validating reader refuses them, its `next_raw_packet` does not).
//!
//! What it does not do: no clock (the caller passes the timestamp, normally the moment the
//! link saw the packet), no timer and no task. Writes go to a buffer, so a write is a
//! memory copy; the daemon that owns the writer calls [`PcapWriter::flush`] on a timer at
//! least once a second and at shutdown, so a capture being read while the daemon runs is
//! at most about a second behind. Dropping the writer flushes too (errors are then only
//! logged). It does not filter packets or write pcapng.
//!
//! A capture is off (no writer: the daemons' default without `--pcap`), unbounded
//! ([`PcapWriter::create`]: one file that grows as long as the link carries packets), or a
//! ring ([`PcapWriter::create_ring`] with a [`Ring`]: at most N bytes per link, kept in
//! `X.pcap` (the newest) and `X.pcap.1` … `X.pcap.K-1` (older), rotated like `tcpdump -C
//! -W`, each file a whole pcap with its own header; see [`mod@ring`]).
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use netio::pcap::PcapWriter;
//!
//! let path = std::env::temp_dir().join(format!("netio-doc-{}.pcap", std::process::id()));
//! let mut capture = PcapWriter::create(&path)?;
//! let ts = SystemTime::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
//! capture.write(ts, &[0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2])?;
//! capture.flush()?;
//! assert_eq!((capture.packets(), capture.bytes()), (1, 20));
//! # drop(capture);
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use pcap_file::pcap::PcapHeader;
use pcap_file::{DataLink, Endianness, TsResolution};

pub mod ring;

pub use ring::{Ring, RingError};

/// The size of the pcap global header at the start of every file.
pub const HEADER_LEN: u64 = 24;
/// The size of the header in front of every record.
pub const RECORD_HEADER_LEN: u64 = 16;

/// The snapshot length written in the global header: the longest record we store.
///
/// 65535 covers every IPv4 packet and every IPv6 packet without a jumbogram.
pub const SNAPLEN: u32 = 65535;

/// A buffered pcap file for one link, `LINKTYPE_RAW`, microsecond timestamps.
///
/// Create it with [`PcapWriter::create`], call [`PcapWriter::write`] for every packet the
/// link sends or receives, and [`PcapWriter::flush`] at least once a second and at
/// shutdown (drop also flushes).
///
/// The global header is written by `pcap_file`'s writer; the 16-byte record headers are
/// written here, in the same (native) byte order, because `pcap_file`'s writer owns its
/// inner writer and could not be flushed without being consumed.
#[derive(Debug)]
pub struct PcapWriter {
    out: BufWriter<File>,
    path: PathBuf,
    packets: u64,
    bytes: u64,
    /// The size cap and the file count, for a ring.
    ring: Option<Ring>,
    /// The bytes in the current file (its header and records, buffered ones included).
    file_bytes: u64,
    /// How many times the current file was closed and a new one begun.
    rotations: u64,
}

impl PcapWriter {
    /// Creates (or truncates) the file at `path` and writes the pcap global header: an
    /// unbounded capture.
    ///
    /// The header says: version 2.4, `LINKTYPE_RAW`, snaplen [`SNAPLEN`], microsecond
    /// timestamps, this machine's byte order. Fails if the file cannot be created or the
    /// header cannot be written.
    pub fn create(path: &Path) -> anyhow::Result<PcapWriter> {
        PcapWriter::create_with(path, None)
    }

    /// Creates a ring capture at `path`: at most [`Ring::total_bytes`] on disk, in
    /// `path` (written now) and `path.1` … (the older files, see [`mod@ring`]). Older
    /// files of the ring left by an earlier capture at `path` are removed first, so the
    /// cap holds from the start.
    ///
    /// # Errors
    ///
    /// As [`PcapWriter::create`], or an old ring file that cannot be removed.
    pub fn create_ring(path: &Path, ring: Ring) -> anyhow::Result<PcapWriter> {
        PcapWriter::create_with(path, Some(ring))
    }

    /// [`PcapWriter::create`] for `None`, [`PcapWriter::create_ring`] for a ring.
    ///
    /// # Errors
    ///
    /// As those.
    pub fn create_with(path: &Path, ring: Option<Ring>) -> anyhow::Result<PcapWriter> {
        if let Some(r) = &ring {
            r.clear(path)?;
        }
        Ok(PcapWriter {
            out: start_file(path)?,
            path: path.to_path_buf(),
            packets: 0,
            bytes: 0,
            ring,
            file_bytes: HEADER_LEN,
            rotations: 0,
        })
    }

    /// Appends one record: `packet` (an IP packet) seen at `ts`.
    ///
    /// Only the first [`SNAPLEN`] bytes are stored; the record's original length is the
    /// packet's full length. A `ts` before 1970 is written as 1970-01-01, and one past
    /// 2106 (the format's 32-bit seconds) is an error. The record may sit in the buffer
    /// until the next [`PcapWriter::flush`].
    pub fn write(&mut self, ts: SystemTime, packet: &[u8]) -> anyhow::Result<()> {
        let since_epoch = ts
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let ts_sec = u32::try_from(since_epoch.as_secs())
            .with_context(|| format!("timestamp {since_epoch:?} after the epoch is past 2106"))?;
        let ts_usec = since_epoch.subsec_micros();
        let orig_len = u32::try_from(packet.len()).unwrap_or(u32::MAX);
        let captured = packet.get(..SNAPLEN as usize).unwrap_or(packet);
        // `captured` is at most SNAPLEN (< u32::MAX) bytes long.
        let incl_len = captured.len() as u32;
        let record_len = RECORD_HEADER_LEN + u64::from(incl_len);
        if let Some(ring) = self.ring
            && self.file_bytes > HEADER_LEN
            && self.file_bytes + record_len > ring.file_bytes()
        {
            self.rotate(ring)?;
        }
        let mut record = [0u8; 16];
        for (chunk, field) in record
            .chunks_exact_mut(4)
            .zip([ts_sec, ts_usec, incl_len, orig_len])
        {
            chunk.copy_from_slice(&field.to_ne_bytes());
        }
        self.out
            .write_all(&record)
            .and_then(|()| self.out.write_all(captured))
            .with_context(|| format!("writing a record to {}", self.path.display()))?;
        self.packets += 1;
        self.bytes += packet.len() as u64;
        self.file_bytes += record_len;
        Ok(())
    }

    /// Closes the current file (flushed), shifts the ring's files one place older (the
    /// oldest is gone) and starts a new current file.
    fn rotate(&mut self, ring: Ring) -> anyhow::Result<()> {
        self.flush()?;
        ring.shift(&self.path)?;
        self.out = start_file(&self.path)?;
        self.file_bytes = HEADER_LEN;
        self.rotations += 1;
        Ok(())
    }

    /// Writes the buffered records to the file.
    ///
    /// Call this on a timer (at least once a second) and at shutdown, so that readers of
    /// a live capture are never far behind and nothing is lost when the daemon stops.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out
            .flush()
            .with_context(|| format!("flushing {}", self.path.display()))
    }

    /// The file this writer appends to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many records have been written (including those still in the buffer).
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The ring this capture keeps to, if it is one.
    pub fn ring(&self) -> Option<Ring> {
        self.ring
    }

    /// How many times a ring capture began a new file (0 for an unbounded one).
    pub fn rotations(&self) -> u64 {
        self.rotations
    }

    /// The sum of the written packets' original lengths, in bytes (before any cut to
    /// [`SNAPLEN`]).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Creates (or truncates) the file at `path` and writes the global header into its buffer.
fn start_file(path: &Path) -> anyhow::Result<BufWriter<File>> {
    let file =
        File::create(path).with_context(|| format!("creating pcap file {}", path.display()))?;
    let header = PcapHeader {
        version_major: 2,
        version_minor: 4,
        ts_correction: 0,
        ts_accuracy: 0,
        snaplen: SNAPLEN,
        datalink: DataLink::RAW,
        ts_resolution: TsResolution::MicroSecond,
        endianness: Endianness::native(),
    };
    Ok(
        pcap_file::pcap::PcapWriter::with_header(BufWriter::new(file), header)
            .with_context(|| format!("writing the pcap header to {}", path.display()))?
            .into_writer(),
    )
}

impl Drop for PcapWriter {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(error = %e, "pcap capture not fully written");
        }
    }
}
