//! A router's ESP node processing arbitrary IP packets at every site.
//!
//! Asserts, for arbitrary bytes: processing never panics; the packet's length never
//! changes; every byte outside the located ESP instruction (the IP header, options, the
//! payload) is unchanged but for the IPv4 header checksum, so an instruction can never
//! divert a packet; an IPv4 packet whose header checksum was valid on input is valid on
//! output (an instruction in option 158 lies inside the header); a packet that is not ESP
//! is not touched at all; and each instruction creates at most 3w + 3 ≤ 27 bindings in the
//! contexts. Half the inputs get a valid header checksum first, so that property is reached.
#![no_main]

use esp_proto::node::{EspNode, NodeConfig, Outcome, Site};
use esp_proto::wire::{Form, locate};
use ess::{EssConfig, HashKey, Instant};
use libfuzzer_sys::fuzz_target;
use waist_ip::checksum::checksum;
use waist_ip::rewrite::fill_ipv4_checksum;

fuzz_target!(|data: &[u8]| {
    let config = NodeConfig {
        ifaces: 2,
        store: EssConfig::new(4, 8, 1, HashKey::from_seed(1)).expect("valid config"),
        shards: 2,
        node_id: 0x0A00_0001,
        idmap_key: HashKey::from_seed(3),
        timestamp_shift: 0,
    };
    let mut node = EspNode::new(config);
    // Input: repeated [len, site, packet bytes…]. Site byte: 0/1 input port, 2 central,
    // 3/4 output port, other values an unknown port.
    let mut rest = data;
    let mut now = 0u64;
    while let [len, site_byte, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (pkt, next) = tail.split_at(len);
        rest = next;
        now += 1;
        let site = match (site_byte & 0x7F) % 6 {
            0 => Site::Input(0),
            1 => Site::Input(1),
            2 => Site::Central,
            3 => Site::Output(0),
            4 => Site::Output(1),
            _ => Site::Output(9),
        };
        // A site byte with its top bit set asks for a valid IPv4 header checksum first.
        let mut pkt = pkt.to_vec();
        if site_byte & 0x80 != 0 {
            fill_ipv4_checksum(&mut pkt);
        }
        let pkt = &pkt[..];
        let valid_before = ipv4_checksum_valid(pkt);
        let mut buf = pkt.to_vec();
        let before = node_created(&node);
        let outcome = node.process_at(Instant::from_ticks(now), site, &mut buf);
        assert_eq!(buf.len(), pkt.len(), "length unchanged");
        assert!(node_created(&node) - before <= 27, "bounded store work");
        match locate(pkt) {
            Ok(Some(at)) => {
                let mut header = buf[..at.range.start].to_vec();
                if at.form == Form::Ipv4Option {
                    // The checksum follows the instruction's bytes (RFC 1624).
                    header[10..12].copy_from_slice(&pkt[10..12]);
                }
                assert_eq!(header, pkt[..at.range.start], "IP header unchanged");
                assert_eq!(
                    buf[at.range.end..],
                    pkt[at.range.end..],
                    "payload unchanged"
                );
            }
            _ => {
                assert_eq!(outcome, Outcome::NotEsp);
                assert_eq!(buf, pkt, "non-ESP packets untouched");
            }
        }
        if outcome == Outcome::Skipped {
            assert_eq!(buf, pkt, "skipped packets untouched");
        }
        if valid_before {
            assert!(ipv4_checksum_valid(&buf), "IPv4 header checksum kept valid");
        }
    }
});

/// Whether `p` is IPv4 with a header (IHL ≥ 5, present) whose checksum verifies.
fn ipv4_checksum_valid(p: &[u8]) -> bool {
    let Some(&first) = p.first() else {
        return false;
    };
    let ihl = usize::from(first & 0x0F) * 4;
    first >> 4 == 4 && ihl >= 20 && p.len() >= ihl && checksum(&p[..ihl]) == 0
}

fn node_created(node: &EspNode) -> u64 {
    node.created()
}
