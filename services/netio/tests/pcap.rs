#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! The capture file is a pcap that `pcap_file` and tshark read back as raw IPv4.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime};

use netio::pcap::{PcapWriter, SNAPLEN};
use pcap_file::DataLink;
use pcap_file::pcap::PcapReader;

/// An IPv4/UDP-protocol packet with a valid header checksum and `payload_len` zero bytes.
fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, payload_len: usize) -> Vec<u8> {
    let mut packet = vec![0u8; waist_ip::IPV4_HEADER_LEN + payload_len];
    waist_ip::emit_header(&mut packet, src.into(), dst.into(), 17, 64, payload_len).unwrap();
    packet
}

fn temp_pcap(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("netio-test-{}-{name}.pcap", std::process::id()))
}

#[test]
fn three_packets_read_back_with_raw_datalink_lengths_and_times() {
    let path = temp_pcap("three");
    let flows = [
        (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 8),
        (Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 1), 100),
        (
            Ipv4Addr::new(192, 168, 7, 9),
            Ipv4Addr::new(172, 16, 3, 4),
            0,
        ),
    ];
    let packets: Vec<Vec<u8>> = flows.iter().map(|&(s, d, n)| ipv4(s, d, n)).collect();
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let times: Vec<Duration> = (0..3u64)
        .map(|i| Duration::from_secs(1_700_000_000) + Duration::from_micros(i * 250_001 + 7))
        .collect();

    let mut writer = PcapWriter::create(&path).unwrap();
    assert_eq!(writer.path(), path.as_path());
    for (packet, t) in packets.iter().zip(&times) {
        writer.write(SystemTime::UNIX_EPOCH + *t, packet).unwrap();
    }
    assert_eq!(writer.packets(), 3);
    let total: usize = packets.iter().map(Vec::len).sum();
    assert_eq!(writer.bytes(), total as u64);
    writer.flush().unwrap();

    let mut reader = PcapReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let header = reader.header();
    assert_eq!(header.datalink, DataLink::RAW);
    assert_eq!(header.snaplen, SNAPLEN);
    assert_eq!(header.ts_resolution, pcap_file::TsResolution::MicroSecond);
    let mut read = Vec::new();
    while let Some(record) = reader.next_packet() {
        let record = record.unwrap();
        read.push((record.timestamp, record.orig_len, record.data.into_owned()));
    }
    assert_eq!(read.len(), 3);
    for ((ts, orig_len, data), (packet, t)) in read.iter().zip(packets.iter().zip(&times)) {
        assert_eq!(ts, t);
        assert_eq!(*orig_len as usize, packet.len());
        assert_eq!(data, packet);
    }
    assert!(read[0].0 >= base.duration_since(SystemTime::UNIX_EPOCH).unwrap());

    check_with_tshark(&path, &flows.map(|(s, d, _)| (s, d)));
    drop(writer);
    std::fs::remove_file(&path).unwrap();
}

fn check_with_tshark(path: &std::path::Path, expected: &[(Ipv4Addr, Ipv4Addr)]) {
    let Some(stdout) = tshark(path, &["ip.src", "ip.dst"]) else {
        return;
    };
    let seen: Vec<(Ipv4Addr, Ipv4Addr)> = stdout
        .lines()
        .map(|line| {
            let (s, d) = line.split_once('\t').unwrap();
            (s.trim().parse().unwrap(), d.trim().parse().unwrap())
        })
        .collect();
    assert_eq!(seen, expected);
}

/// `tshark -r path -T fields -e field…`'s output, or `None` if tshark is not installed.
fn tshark(path: &std::path::Path, fields: &[&str]) -> Option<String> {
    let mut command = Command::new("tshark");
    command.arg("-r").arg(path).args(["-T", "fields"]);
    for field in fields {
        command.args(["-e", field]);
    }
    let output = match command.output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("tshark not installed: skipping the tshark check");
            return None;
        }
        Err(e) => panic!("running tshark: {e}"),
    };
    assert!(
        output.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8(output.stdout).unwrap())
}

#[test]
fn long_packets_are_cut_to_snaplen_and_keep_their_length() {
    let path = temp_pcap("long");
    let long = ipv4(
        Ipv4Addr::new(10, 1, 1, 1),
        Ipv4Addr::new(10, 2, 2, 2),
        65_515,
    );
    let longer: Vec<u8> = long
        .iter()
        .copied()
        .chain(std::iter::repeat_n(0xab, 1000))
        .collect();
    assert_eq!(longer.len(), SNAPLEN as usize + 1000);
    {
        let mut writer = PcapWriter::create(&path).unwrap();
        writer.write(SystemTime::UNIX_EPOCH, &longer).unwrap();
        assert_eq!(writer.bytes(), longer.len() as u64);
        // No explicit flush: dropping the writer must flush.
    }
    // pcap_file's validating reader refuses orig_len > snaplen (libpcap and tshark do
    // not), so the record is read raw.
    let mut reader = PcapReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let record = reader.next_raw_packet().unwrap().unwrap();
    assert_eq!(record.orig_len as usize, longer.len());
    assert_eq!(record.incl_len, SNAPLEN);
    assert_eq!(&record.data[..], &longer[..SNAPLEN as usize]);
    assert_eq!((record.ts_sec, record.ts_frac), (0, 0));
    assert!(reader.next_raw_packet().is_none());
    if let Some(fields) = tshark(&path, &["frame.len", "frame.cap_len", "ip.src"]) {
        assert_eq!(
            fields.trim(),
            format!("{}\t{SNAPLEN}\t10.1.1.1", longer.len())
        );
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn create_truncates_an_existing_file() {
    let path = temp_pcap("truncate");
    std::fs::write(&path, vec![0x55; 4096]).unwrap();
    drop(PcapWriter::create(&path).unwrap());
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        24,
        "only the global header"
    );
    std::fs::remove_file(&path).unwrap();
}
