//! The shim dissector (`tools/wireshark/waist_shim.lua`) on the router node's link frames,
//! built with the node's and fastpath's own emitters (`waist_node::frame`,
//! `fastpath::dv::wire`): labelled packets, routing messages, both as capture records
//! (LINKTYPE_RAW) and inside UDP datagrams, where a heuristic must find them and leave
//! ordinary UDP alone.

use fastpath::dv::wire::{AdvEntry, Advertisement, MessageKind, PrefixEntry};
use fastpath::lpm::{IpPrefix, Prefix, Prefix6};
use fastpath::threaded::Label;
use waist_node::frame::{emit_label_frame, emit_routing_frame};

use crate::harness;

/// An IPv4/UDP packet 10.0.0.1:5000 → 10.0.0.2:5001 carrying `payload`.
fn udp4(payload: &[u8]) -> Vec<u8> {
    let b = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(5000, 5001);
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

/// An IPv6/UDP packet fd00::1:5000 → fd00::2:5001 carrying `payload`.
fn udp6(payload: &[u8]) -> Vec<u8> {
    let mut src = [0u8; 16];
    src[0] = 0xfd;
    let mut dst = src;
    src[15] = 1;
    dst[15] = 2;
    let b = etherparse::PacketBuilder::ipv6(src, dst, 64).udp(5000, 5001);
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

/// A frame of a UDP link between two routers: 192.0.2.1:41000 → 192.0.2.2:41001.
fn link_datagram(frame: &[u8]) -> Vec<u8> {
    let b = etherparse::PacketBuilder::ipv4([192, 0, 2, 1], [192, 0, 2, 2], 64).udp(41000, 41001);
    let mut out = Vec::new();
    b.write(&mut out, frame).unwrap();
    out
}

fn label_frame(label: Label, packet: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; packet.len() + 5];
    let n = emit_label_frame(label, packet, &mut out).unwrap();
    out.truncate(n);
    out
}

fn routing_frame(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; message.len() + 1];
    let n = emit_routing_frame(message, &mut out).unwrap();
    out.truncate(n);
    out
}

/// A router update of three entries from router 42.
fn update() -> (Vec<u8>, [AdvEntry; 3]) {
    let entries = [
        AdvEntry {
            dest: 7,
            cost: 3,
            index: 2,
        },
        AdvEntry {
            dest: 9,
            cost: 1,
            index: 0x00AB_CDEF,
        },
        AdvEntry {
            dest: 1_000_000,
            cost: u16::MAX,
            index: 0,
        },
    ];
    let mut bytes = Vec::new();
    Advertisement::emit(MessageKind::Update, 42, &entries, &mut bytes);
    (bytes, entries)
}

/// A prefix update from router 43: 10.1.0.0/16 and 2001:db8::/32.
fn prefix_update() -> Vec<u8> {
    let mut a6 = [0u8; 16];
    a6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    let entries = [
        PrefixEntry {
            prefix: IpPrefix::V4(Prefix::new([10, 1, 0, 0], 16).unwrap()),
            cost: 5,
            index: 17,
        },
        PrefixEntry {
            prefix: IpPrefix::V6(Prefix6::new(a6, 32).unwrap()),
            cost: 258,
            index: 0x12_3456,
        },
    ];
    let mut bytes = Vec::new();
    Advertisement::emit_prefixes(MessageKind::PrefixUpdate, 43, &entries, &mut bytes);
    bytes
}

/// The rendering of frame `n` (1-based) out of a `tshark -V` text.
fn frame_text(verbose: &str, n: usize) -> String {
    let start = verbose
        .find(&format!("Frame {n}:"))
        .unwrap_or_else(|| panic!("no frame {n}"));
    let rest = &verbose[start..];
    let end = rest[1..].find("\nFrame ").map_or(rest.len(), |e| e + 1);
    rest[..end].to_string()
}

/// Threaded and random labels in front of IPv4 and IPv6 packets: the label's three fields,
/// and the packet behind it handed to Wireshark's IP dissectors.
#[test]
fn labelled_frames_show_the_label() {
    if !harness::have_tshark() {
        return;
    }
    let frames = [
        label_frame(Label::threaded(7, 30), &udp4(b"hello")),
        label_frame(Label::random(0x00AB_CDEF, 127), &udp6(b"hello")),
        label_frame(Label::threaded(0x00FF_FFFF, 0), &udp4(b"hello")),
    ];
    assert_eq!(&frames[0][..5], [0xF1, 0x1E, 0, 0, 7]);
    let pcap = harness::write_pcap("shim-label", &frames);
    let rows = harness::fields(
        &pcap,
        &[
            "frame.protocols",
            "waist.shim.kind",
            "waist.label",
            "waist.label.random",
            "waist.label.hop_limit",
            "waist.label.index",
            "udp.dstport",
            "_ws.expert.message",
        ],
    );
    assert_eq!(
        rows,
        [
            [
                "waist:ip:udp:data",
                "0xf1",
                "0x1e000007",
                "0",
                "30",
                "7",
                "5001",
                ""
            ],
            [
                "waist:ipv6:udp:data",
                "0xf1",
                "0xffabcdef",
                "1",
                "127",
                "11259375",
                "5001",
                ""
            ],
            [
                "waist:ip:udp:data",
                "0xf1",
                "0x00ffffff",
                "0",
                "0",
                "16777215",
                "5001",
                "Hop limit 0: the next router drops it"
            ],
        ]
    );
    let v = harness::verbose(&pcap);
    let text = frame_text(&v, 1);
    assert!(text.contains("Waist threaded label shim, threaded index 7, hop limit 30"));
    println!("--- a labelled frame, tshark -V ---\n{text}");
}

/// Routing messages (router update, prefix update, request), entry by entry.
#[test]
fn routing_messages_show_each_entry() {
    if !harness::have_tshark() {
        return;
    }
    let (update, entries) = update();
    let mut request = Vec::new();
    Advertisement::emit(MessageKind::Request, 44, &[], &mut request);
    let frames = [
        routing_frame(&update),
        routing_frame(&prefix_update()),
        routing_frame(&request),
    ];
    let pcap = harness::write_pcap("shim-routing", &frames);
    let rows = harness::fields(
        &pcap,
        &[
            "frame.protocols",
            "waist.shim.kind",
            "waist.dv.version",
            "waist.dv.kind",
            "waist.dv.count",
            "waist.dv.sender",
            "waist.dv.dest",
            "waist.dv.cost",
            "waist.dv.index",
            "waist.dv.family",
            "waist.dv.prefix_len",
            "waist.dv.prefix4",
            "waist.dv.prefix6",
            "_ws.col.Info",
            "_ws.expert.message",
        ],
    );
    let join =
        |f: &dyn Fn(&AdvEntry) -> String| entries.iter().map(f).collect::<Vec<_>>().join(",");
    assert_eq!(
        rows[0],
        [
            "waist".to_string(),
            "0xf2".to_string(),
            "1".to_string(),
            "1".to_string(),
            "3".to_string(),
            "0.0.0.42".to_string(),
            join(&|e| std::net::Ipv4Addr::from(e.dest).to_string()),
            join(&|e| e.cost.to_string()),
            join(&|e| e.index.to_string()),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            "Waist routing Update from 0.0.0.42, 3 entries".to_string(),
            String::new(),
        ]
    );
    assert_eq!(
        rows[1],
        [
            "waist",
            "0xf2",
            "1",
            "5",
            "2",
            "0.0.0.43",
            "",
            "5,258",
            "17,1193046",
            "1,2",
            "16,32",
            "10.1.0.0",
            "2001:db8::",
            "Waist routing Prefix update from 0.0.0.43, 2 entries",
            "",
        ]
    );
    assert_eq!(
        rows[2],
        [
            "waist",
            "0xf2",
            "1",
            "2",
            "0",
            "0.0.0.44",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "Waist routing Request from 0.0.0.44, 0 entries",
            "",
        ]
    );
    let v = harness::verbose(&pcap);
    let text = frame_text(&v, 1);
    assert!(text.contains("Router 9: cost 1, index 11259375"), "{text}");
    assert!(text.contains("(unreachable)"), "{text}");
    println!("--- a routing message, tshark -V ---\n{text}");
    println!("--- a prefix update, tshark -V ---\n{}", frame_text(&v, 2));
}

/// The same frames inside UDP datagrams (a router's UDP link; an IP-in-UDP tunnel): the
/// heuristic claims them and dissects them as on a capture record.
#[test]
fn frames_in_udp_are_found_by_the_heuristic() {
    if !harness::have_tshark() {
        return;
    }
    let (update, _) = update();
    let frames = [
        link_datagram(&label_frame(Label::threaded(7, 30), &udp4(b"hello"))),
        link_datagram(&routing_frame(&update)),
        link_datagram(&udp6(b"hello")),
        link_datagram(&label_frame(Label::random(5, 9), &udp6(b"hello"))),
    ];
    let pcap = harness::write_pcap("shim-udp", &frames);
    let rows = harness::fields(
        &pcap,
        &[
            "frame.protocols",
            "waist.shim.kind",
            "waist.label.index",
            "waist.label.hop_limit",
            "waist.dv.sender",
            "ip.src",
            "ipv6.src",
            "udp.dstport",
            "waist.ip_version",
        ],
    );
    assert_eq!(
        rows,
        [
            [
                "waist:ip:udp:waist:ip:udp:data",
                "0xf1",
                "7",
                "30",
                "",
                "192.0.2.1,10.0.0.1",
                "",
                "41001,5001",
                ""
            ],
            [
                "waist:ip:udp:waist",
                "0xf2",
                "",
                "",
                "0.0.0.42",
                "192.0.2.1",
                "",
                "41001",
                ""
            ],
            [
                "waist:ip:udp:waist:ipv6:udp:data",
                "",
                "",
                "",
                "",
                "192.0.2.1",
                "fd00::1",
                "41001,5001",
                "6"
            ],
            [
                "waist:ip:udp:waist:ipv6:udp:data",
                "0xf1",
                "5",
                "9",
                "",
                "192.0.2.1",
                "fd00::1",
                "41001,5001",
                ""
            ],
        ]
    );
    let v = harness::verbose(&pcap);
    println!(
        "--- a labelled frame on a UDP link, tshark -V ---\n{}",
        frame_text(&v, 1)
    );
    println!(
        "--- an IP-in-UDP frame, tshark -V ---\n{}",
        frame_text(&v, 3)
    );
}

/// Ordinary UDP is left alone: a DNS query, and datagrams that only begin like a frame
/// (0xF1 without an IP header after the label, 0xF2 with a bad message, IPv4 and IPv6
/// headers whose length or checksum does not fit, bare or behind a label).
#[test]
fn ordinary_udp_is_not_claimed() {
    if !harness::have_tshark() {
        return;
    }
    // A DNS query for example.com, type A.
    let dns: &[u8] = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\
\x07example\x03com\x00\x00\x01\x00\x01";
    let (update, _) = update();
    let mut bad_update = update.clone();
    bad_update[3] = 4; // four entries announced, three present
    let mut long_ip = udp4(b"hello");
    long_ip.push(0); // a byte past the IPv4 total length
    let mut long_ip6 = udp6(b"hello");
    long_ip6.push(0); // a byte past the IPv6 payload length
    let mut bad_sum = udp4(b"hello");
    bad_sum[10] ^= 1; // IPv4 header checksum
    let payloads: [Vec<u8>; 7] = [
        dns.to_vec(),
        [&[0xF1, 0, 0, 0, 7][..], b"hello, world"].concat(),
        routing_frame(&bad_update),
        long_ip,
        bad_sum,
        long_ip6.clone(),
        label_frame(Label::threaded(1, 2), &long_ip6),
    ];
    let frames: Vec<Vec<u8>> = payloads
        .iter()
        .map(|p| {
            let b =
                etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(40000, 40001);
            let mut out = Vec::new();
            b.write(&mut out, p).unwrap();
            out
        })
        .collect();
    let pcap = harness::write_pcap("shim-ordinary", &frames);
    let rows = harness::fields(&pcap, &["frame.protocols", "waist.shim.kind"]);
    assert_eq!(rows.len(), payloads.len());
    // Wireshark's own DNS heuristic takes the query; nothing else is claimed.
    assert_eq!(rows[0], ["waist:ip:udp:dns", ""]);
    for (i, row) in rows.iter().enumerate().skip(1) {
        assert_eq!(row, &["waist:ip:udp:data", ""], "datagram {}", i + 1);
    }
    let v = harness::verbose(&pcap);
    println!(
        "--- UDP that only begins like a label frame, tshark -V ---\n{}",
        frame_text(&v, 2)
    );
}

/// Truncated and invalid frames as capture records: the script flags each with an expert
/// item of its own, and nothing raises a Lua error or a malformed-packet exception.
#[test]
fn truncated_frames_are_flagged() {
    if !harness::have_tshark() {
        return;
    }
    let (update, _) = update();
    let mut short_update = routing_frame(&update);
    short_update.truncate(1 + 8 + 12 + 5); // two entries cut off
    let mut bad_entry = update.clone();
    bad_entry[8 + 6] = 1; // the first entry's reserved field
    let frames = [
        vec![0xF1, 0x1E, 0],
        short_update,
        vec![0xF2, 1, 1],
        vec![0xF1, 0x1E, 0, 0, 7],
        vec![0xF7, 1, 2, 3],
        routing_frame(&bad_entry),
    ];
    let pcap = harness::write_pcap("shim-truncated", &frames);
    let rows = harness::fields(&pcap, &["waist.shim.kind", "_ws.expert.message"]);
    let want = [
        ("0xf1", "Truncated: the label needs 4 bytes, 2 left"),
        ("0xf2", "Truncated: 3 entries need 44 bytes, 25 present"),
        (
            "0xf2",
            "Truncated: the distance-vector header needs 8 bytes, 2 left",
        ),
        ("0xf1", "No packet after the label"),
        ("0xf7", "Unknown shim kind 0xf7"),
        ("0xf2", "Reserved not zero"),
    ];
    assert_eq!(rows.len(), want.len());
    for (i, (row, (kind, msg))) in rows.iter().zip(want).enumerate() {
        assert_eq!(row, &[kind, msg], "frame {}", i + 1);
    }
    let v = harness::verbose(&pcap);
    let text = frame_text(&v, 2);
    assert!(text.contains("Expert Info"), "{text}");
    println!("--- a truncated routing message, tshark -V ---\n{text}");

    // An exception in a dissector the script calls (Wireshark's CPFI heuristic throws on
    // a one-byte UDP payload to port 5001, with or without our scripts) is caught and
    // flagged, not turned into a Lua error (`harness::fields` asserts there is none).
    let pcap = harness::write_pcap(
        "shim-inner-exception",
        &[label_frame(Label::threaded(7, 30), &udp4(b"x"))],
    );
    let rows = harness::fields(&pcap, &["waist.label.index", "_ws.expert.message"]);
    assert_eq!(rows[0][0], "7");
    assert!(
        rows[0][1].contains("The inner packet's dissection failed: Malformed frame"),
        "{:?}",
        rows[0]
    );
}
