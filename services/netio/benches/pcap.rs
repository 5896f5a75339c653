//! What a capture costs per packet, in one criterion group `pcap_write` (one element = one
//! 1400-byte IP packet appended to a capture file on /dev/shm, so the disk's noise stays
//! out):
//!
//! * `pcap_file/unbounded`: the baseline a user would otherwise write, `pcap_file`'s own
//!   `PcapWriter` over a `BufWriter<File>`, one `PcapPacket` per packet;
//! * `netio/unbounded`: [`netio::pcap::PcapWriter`] as the daemons use it without a cap;
//! * `netio/ring_4mb`: the same as a 4 MiB ring (`--pcap-ring-mb 4`), its rotations (a
//!   file closed, the older ones renamed, a new one begun about every 750 packets) counted
//!   in the per-packet time.
//!
//! `cargo bench -p netio --bench pcap`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // bench harness

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use netio::pcap::{PcapWriter, Ring};
use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket};

/// A scratch directory in memory (or the temporary directory where there is no /dev/shm).
fn scratch() -> PathBuf {
    let base = PathBuf::from("/dev/shm");
    let base = if base.is_dir() {
        base
    } else {
        std::env::temp_dir()
    };
    let d = base.join(format!("waist-pcap-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pcap_write(c: &mut Criterion) {
    let dir = scratch();
    let packet = vec![0x45u8; 1400];
    let mut g = c.benchmark_group("pcap_write");
    g.throughput(Throughput::Elements(1));

    let header = PcapHeader {
        datalink: DataLink::RAW,
        ..PcapHeader::default()
    };
    let file = BufWriter::new(File::create(dir.join("peer.pcap")).unwrap());
    let mut peer = pcap_file::pcap::PcapWriter::with_header(file, header).unwrap();
    let since = SystemTime::UNIX_EPOCH.elapsed().unwrap();
    g.bench_function(BenchmarkId::new("pcap_file", "unbounded"), |b| {
        b.iter(|| {
            let record = PcapPacket::new(since, 1400, &packet);
            peer.write_packet(&record).unwrap()
        })
    });
    drop(peer);
    // The unbounded files grow with every iteration: start each case afresh.
    let _ = std::fs::remove_file(dir.join("peer.pcap"));

    let mut ours = PcapWriter::create(&dir.join("ours.pcap")).unwrap();
    let now = SystemTime::now();
    g.bench_function(BenchmarkId::new("netio", "unbounded"), |b| {
        b.iter(|| ours.write(now, &packet).unwrap())
    });
    drop(ours);
    let _ = std::fs::remove_file(dir.join("ours.pcap"));

    let ring = Ring::megabytes(4).unwrap();
    let mut ringed = PcapWriter::create_ring(&dir.join("ring.pcap"), ring).unwrap();
    g.bench_function(BenchmarkId::new("netio", "ring_4mb"), |b| {
        b.iter(|| ringed.write(now, &packet).unwrap())
    });
    assert!(ringed.rotations() > 0, "the ring never rotated");
    drop(ringed);
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = pcap_write
}
criterion_main!(benches);
