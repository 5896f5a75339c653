//! A router's ESP node processing arbitrary IP packets at every site.
//!
//! Asserts, for arbitrary bytes: processing never panics; the packet's length never
//! changes; every byte outside the located ESP instruction (the IP header, options, the
//! payload) is unchanged, so an instruction can never divert a packet; a packet that is not
//! ESP is not touched at all; and each instruction creates at most 3w + 3 ≤ 27 bindings in
//! the contexts.
#![no_main]

use esp_proto::node::{EspNode, NodeConfig, Outcome, Site};
use esp_proto::wire::locate;
use ess::{EssConfig, HashKey, Instant};
use libfuzzer_sys::fuzz_target;

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
    while let [len, site, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (pkt, next) = tail.split_at(len);
        rest = next;
        now += 1;
        let site = match site % 6 {
            0 => Site::Input(0),
            1 => Site::Input(1),
            2 => Site::Central,
            3 => Site::Output(0),
            4 => Site::Output(1),
            _ => Site::Output(9),
        };
        let mut buf = pkt.to_vec();
        let before = node_created(&node);
        let outcome = node.process_at(Instant::from_ticks(now), site, &mut buf);
        assert_eq!(buf.len(), pkt.len(), "length unchanged");
        assert!(node_created(&node) - before <= 27, "bounded store work");
        match locate(pkt) {
            Ok(Some(at)) => {
                assert_eq!(
                    buf[..at.range.start],
                    pkt[..at.range.start],
                    "IP header unchanged"
                );
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
    }
});

fn node_created(node: &EspNode) -> u64 {
    node.created()
}
