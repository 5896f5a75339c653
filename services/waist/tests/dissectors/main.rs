//! The Wireshark dissectors of `tools/wireshark/` on captures of every packet kind, built by
//! the cores' own builders, read back by `tshark` with the scripts loaded: each test asserts
//! field values (`-T fields`) and that nothing is left undissected or malformed.
//!
//! Needs `tshark` (built with Lua). Without it the tests say so and pass, except under CI
//! (`CI` set), where `.ci/run` installs it and a missing tshark fails.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod harness;

mod esp;
mod esp_micro;
mod shim;
mod snap;
mod stream;
mod trickles;

/// A plain IPv4/UDP packet and an IPv6 one pass through the scripts untouched: no waist
/// protocol claims them, and no script errors.
#[test]
fn plain_ip_is_left_to_wireshark() {
    if !harness::have_tshark() {
        return;
    }
    for s in harness::SCRIPTS {
        let p = harness::scripts_dir().join(s);
        assert!(p.exists(), "{} missing", p.display());
    }
    let udp4 = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(5000, 5001);
    let mut a = Vec::new();
    udp4.write(&mut a, b"hello").unwrap();
    let udp6 = etherparse::PacketBuilder::ipv6([1; 16], [2; 16], 64).udp(5000, 5001);
    let mut b = Vec::new();
    udp6.write(&mut b, b"hello").unwrap();
    let pcap = harness::write_pcap("plain", &[a, b]);
    let rows = harness::fields(&pcap, &["frame.protocols", "udp.dstport"]);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], ["waist:ip:udp:data", "5001"]);
    assert_eq!(rows[1], ["waist:ipv6:udp:data", "5001"]);
    harness::verbose(&pcap);
}
