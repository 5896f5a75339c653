//! `--pcap-ring-mb`: under traffic worth three times its cap, a link's capture stays within
//! the cap, spread over `NAME-LINK.pcap` and `.1` … `.3`, each a whole pcap holding the
//! newest packets.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_waist-router");

/// The records of a classic pcap file (native byte order, as netio writes): each
/// record's ICMP sequence number and type, after checking the global header.
fn records(path: &Path) -> Vec<(u16, u8)> {
    let bytes = std::fs::read(path).unwrap();
    let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(u32_at(0), 0xa1b2_c3d4, "{}: pcap magic", path.display());
    assert_eq!(u32_at(20), 101, "{}: LINKTYPE_RAW", path.display());
    let mut at = 24;
    let mut out = Vec::new();
    while at < bytes.len() {
        let incl = u32_at(at + 8) as usize;
        let packet = &bytes[at + 16..at + 16 + incl];
        // IPv4, 20-byte header, then ICMP: type, code, checksum, ident, seq.
        out.push((u16::from_be_bytes([packet[26], packet[27]]), packet[20]));
        at += 16 + incl;
    }
    assert_eq!(at, bytes.len(), "{}: a cut record", path.display());
    out
}

#[test]
fn a_ring_caps_a_links_capture_under_traffic() {
    let dir = std::env::temp_dir().join(format!("waist-router-ring-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let local = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
    let peer = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
    let config = dir.join("r1.toml");
    std::fs::write(
        &config,
        format!(
            "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n\n[[link]]\nname = \"host\"\n\
             kind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n\n[[route]]\n\
             prefix = \"10.1.0.0/16\"\nlink = \"host\"\n"
        ),
    )
    .unwrap();
    let pcaps = dir.join("pcap");
    let mut child = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .arg("--pcap")
        .arg(&pcaps)
        .args(["--pcap-ring-mb", "1", "--metrics", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().starts_with("metrics "));

    // 1200 pings of 1400 bytes: 2400 records of 1416 bytes (with their headers), 3.2 MiB.
    let host = UdpSocket::bind(peer).unwrap();
    host.connect(local).unwrap();
    host.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let data = vec![0x5a; 1400 - 28];
    let (mut ping, mut buf) = ([0u8; 1500], [0u8; 1500]);
    let pings: u16 = 1200;
    for seq in 0..pings {
        let n = waist_ip::icmp::emit_echo_request(
            [10, 1, 0, 9].into(),
            [10, 0, 0, 1].into(),
            1,
            seq,
            &data,
            &mut ping,
        )
        .unwrap();
        host.send(&ping[..n]).unwrap();
        assert_eq!(host.recv(&mut buf).unwrap(), n, "echo reply {seq}");
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());

    // Four files (oldest first), within the cap together, nothing else.
    let file = |i: u32| -> PathBuf {
        match i {
            0 => pcaps.join("r1-host.pcap"),
            i => pcaps.join(format!("r1-host.pcap.{i}")),
        }
    };
    let mut names: Vec<String> = std::fs::read_dir(&pcaps)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "r1-host.pcap",
            "r1-host.pcap.1",
            "r1-host.pcap.2",
            "r1-host.pcap.3"
        ]
    );
    let total: u64 = (0..4)
        .map(|i| std::fs::metadata(file(i)).unwrap().len())
        .sum();
    assert!(total <= 1 << 20, "{total} bytes on disk for a 1 MiB ring");
    // The newest records, in order: each request (type 8) then its reply (type 0), up to
    // the last ping.
    let kept: Vec<(u16, u8)> = (0..4).rev().flat_map(|i| records(&file(i))).collect();
    // A file of the ring holds a quarter MiB: 185 records; the newest one may be partly
    // filled.
    let per_file = ((1 << 20) / 4 - 24) / 1416;
    assert!(
        kept.len() > 3 * per_file && kept.len() <= 4 * per_file,
        "{} records kept",
        kept.len()
    );
    assert_eq!(kept.last(), Some(&(pings - 1, 0)));
    for pair in kept.windows(2) {
        let ((a, ta), (b, tb)) = (pair[0], pair[1]);
        assert!(
            (a == b && ta == 8 && tb == 0) || (b == a + 1 && ta == 0 && tb == 8),
            "{pair:?} out of order"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
