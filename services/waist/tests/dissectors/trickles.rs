//! The Trickles dissector (`tools/wireshark/waist_trickles.lua`) on a real exchange: the
//! core's client (`Demux`) fetching an object from the core's HTTP service (`Service` with
//! `HttpApp` over a `MemStore`), every IP packet captured as it was sent. The expected
//! values come from the core's own parsers (`trickles::ip`, `trickles::wire`,
//! `trickles::app::UserContinuation`) run on the same bytes.

use trickles::Instant;
use trickles::app::http::{HttpApp, MemStore};
use trickles::app::{Service, UserContinuation};
use trickles::client::{ClientConfig, Demux};
use trickles::conn::Addr;
use trickles::continuation::Continuation;
use trickles::crypto::KeySchedule;
use trickles::ip;
use trickles::sack::SackBlock;
use trickles::server::{Server, ServerConfig};
use trickles::wire::{self, Request, RequestKind, Response};

use crate::harness;

const CLIENT: Addr = Addr::V4([192, 168, 5, 1]);
const SERVER: Addr = Addr::V4([192, 168, 5, 2]);
const OBJECT_LEN: usize = 5000;

/// One GET of a 5000-byte object, whole; every IP packet in the order it was sent, with
/// whether the client sent it. Every `drop_nth` response (0: none) is lost on the way, so
/// that the client's SACK proofs have holes.
fn exchange(delta: bool, drop_nth: usize) -> Vec<(bool, Vec<u8>)> {
    let keys = KeySchedule::new(&[3; 16]);
    let mut store = MemStore::new();
    store.insert("/o", (0..OBJECT_LEN).map(|i| (i * 7) as u8).collect());
    let mut cfg = ServerConfig::new(keys.key_config(1));
    cfg.mss = ip::mss_for_mtu(1500, &SERVER);
    let mut host: Service<_, ()> = Service::new(
        Server::new(cfg),
        HttpApp::new(&keys.derive(b"ucont", 0), store),
        256,
    );
    let ccfg = ClientConfig {
        mss: cfg.mss,
        delta,
        ..ClientConfig::default()
    };
    let mut demux = Demux::new(ccfg, CLIENT, 11);
    let mut now = Instant::from_micros(1_000_000);
    let id = demux
        .open(now, SERVER, 80, b"GET /o HTTP/1.1\r\nHost: s\r\n\r\n")
        .unwrap();
    let mut packets = Vec::new();
    let mut responses = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..2_000 {
        now = now.saturating_add(2_000);
        demux.handle_timeout(now);
        while let Some((_, p)) = demux.poll_transmit() {
            let _ = host.handle_packet(now, &p, ());
            packets.push((true, p));
        }
        let mut to_client = Vec::new();
        host.serve(&mut |p, ()| to_client.push(p.to_vec()));
        for p in to_client {
            responses += 1;
            packets.push((false, p.clone()));
            if drop_nth > 0 && responses.is_multiple_of(drop_nth) {
                continue;
            }
            let _ = demux.handle_packet(now, &p);
        }
        while demux.read(id, &mut buf) > 0 {}
        if demux.get(id).unwrap().is_complete() {
            return packets;
        }
    }
    panic!("the exchange did not complete");
}

/// The TCP payload of an IP packet: one Trickles message.
fn message(packet: &[u8]) -> &[u8] {
    let p = ip::parse(packet).unwrap();
    wire::parse_segment(&p.src, &p.dst, p.segment)
        .unwrap()
        .payload
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

/// The transport continuation's fields, as `trickles.tcont.*` prints them, in the
/// order of `TCONT_FIELDS`.
fn tcont_values(c: &Continuation) -> Vec<String> {
    vec![
        c.number.to_string(),
        c.tcp_base.to_string(),
        c.start_cwnd.to_string(),
        c.ssthresh.to_string(),
        c.proof_start.to_string(),
        c.rtt_us.to_string(),
        c.timestamp_ms.to_string(),
        u8::from(c.epoch_start).to_string(),
        c.rtx.to_string(),
        c.site.to_string(),
        c.key_epoch.to_string(),
        format!("0x{:016x}", c.conn_nonce),
        hex(&c.tag),
    ]
}

const TCONT_FIELDS: [&str; 13] = [
    "trickles.tcont.seq",
    "trickles.tcont.tcp_base",
    "trickles.tcont.start_cwnd",
    "trickles.tcont.ssthresh",
    "trickles.tcont.proof_start",
    "trickles.tcont.rtt_us",
    "trickles.tcont.timestamp_ms",
    "trickles.tcont.epoch_start",
    "trickles.tcont.rtx",
    "trickles.tcont.site",
    "trickles.tcont.key_epoch",
    "trickles.tcont.conn_nonce",
    "trickles.mac",
];

/// Every request of a real exchange: kind, flags, the full transport continuation, the
/// SACK proof block by block, the byte ranges and the user continuation.
#[test]
fn requests_show_continuation_and_sack_proof() {
    if !harness::have_tshark() {
        return;
    }
    let packets = exchange(false, 4);
    let frames: Vec<Vec<u8>> = packets.iter().map(|(_, p)| p.clone()).collect();
    let pcap = harness::write_pcap("trickles-requests", &frames);
    let mut fields = vec![
        "trickles.msg",
        "trickles.kind",
        "trickles.flags",
        "trickles.retry",
        "trickles.sack.count",
        "trickles.sack.left",
        "trickles.sack.right",
        "trickles.sack.nonce",
        "trickles.range.start",
        "trickles.range.len",
        "trickles.ucont.len",
        "trickles.ucont.kind",
        "trickles.data.len",
        "_ws.col.Info",
        "trickles.http.request",
        "trickles.http.header",
    ];
    fields.extend(TCONT_FIELDS);
    let rows = harness::fields(&pcap, &fields);
    assert_eq!(rows.len(), packets.len());
    let mut with_sack = None;
    for (i, ((from_client, packet), row)) in packets.iter().zip(&rows).enumerate() {
        if !from_client {
            assert_eq!(row[0], "response", "frame {}", i + 1);
            continue;
        }
        let req = Request::parse(message(packet)).unwrap();
        let blocks: Vec<SackBlock> = req.sack_chunks().map(SackBlock::parse).collect();
        let list =
            |f: &dyn Fn(&SackBlock) -> String| blocks.iter().map(f).collect::<Vec<_>>().join(",");
        let ranges = req.ranges.as_slice();
        let ucont_kind = req
            .user_continuation
            .first()
            .map_or(String::new(), u8::to_string);
        let data_len = if req.data.is_empty() {
            String::new()
        } else {
            req.data.len().to_string()
        };
        let mut want = vec![
            "request".to_string(),
            u8::from(req.kind).to_string(),
            // The wire's flags byte: parse moves the data-offset bit into `data_offset`.
            format!(
                "0x{:02x}",
                req.flags | (u8::from(req.data_offset.is_some()) * wire::REQUEST_FLAG_DATA_OFFSET)
            ),
            req.retry.to_string(),
            blocks.len().to_string(),
            list(&|b| b.left.to_string()),
            list(&|b| b.right.to_string()),
            list(&|b| format!("0x{:08x}", b.nonce)),
            ranges
                .iter()
                .map(|r| r.start.to_string())
                .collect::<Vec<_>>()
                .join(","),
            ranges
                .iter()
                .map(|r| r.len.to_string())
                .collect::<Vec<_>>()
                .join(","),
            req.user_continuation.len().to_string(),
            ucont_kind,
            data_len,
        ];
        let kind = ["", "SYN", "Request", "Timeout", "FIN"][usize::from(u8::from(req.kind))];
        // The info column: kind, sequence (the continuation's number), SACK blocks, ranges,
        // the user continuation's kind, the data's length.
        let mut info = format!("Trickles request {kind}");
        if let Some(c) = &req.continuation {
            info += &format!(" seq={}", c.number);
        }
        if !blocks.is_empty() {
            info += &format!(" sack={}", list(&|b| format!("{}-{}", b.left, b.right)));
        }
        if !ranges.is_empty() {
            let r: Vec<String> = ranges
                .iter()
                .map(|r| format!("{}+{}", r.start, r.len))
                .collect();
            info += &format!(" ranges={}", r.join(","));
        }
        if let Some(&k) = req.user_continuation.first() {
            let names = [
                "",
                "Input",
                "Output",
                "Opaque",
                "Bundle",
                "Overflow",
                "Output (follows)",
            ];
            info += &format!(" ucont={}", names[usize::from(k)]);
        }
        if !req.data.is_empty() {
            info += &format!(" len={}", req.data.len());
        }
        // A SYN's data is the HTTP request: its request line in the info column, and the
        // request as text (the request line, then each header line).
        let (request, headers) = if req.kind == RequestKind::Syn {
            let text = std::str::from_utf8(req.data).unwrap();
            let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
            let line = lines.next().unwrap().to_string();
            info += &format!(" {line}");
            (line, lines.collect::<Vec<_>>().join(","))
        } else {
            (String::new(), String::new())
        };
        want.push(info);
        want.push(request);
        want.push(headers);
        want.extend(match &req.continuation {
            Some(c) => tcont_values(c),
            None => vec![String::new(); TCONT_FIELDS.len()],
        });
        assert_eq!(row, &want, "frame {}", i + 1);
        if blocks.len() > 1 && with_sack.is_none() {
            with_sack = Some(i + 1);
        }
    }
    let v = harness::verbose(&pcap);
    let syn = frame_text(&v, 1);
    assert!(syn.contains("HTTP request: GET /o HTTP/1.1"), "{syn}");
    assert!(syn.contains("Header: Host: s"), "{syn}");
    println!("--- a Trickles SYN (frame 1), tshark -V ---\n{syn}");
    let n = with_sack.expect("a request whose SACK proof has a hole");
    let text = frame_text(&v, n);
    assert!(text.contains("Transport continuation"), "{text}");
    assert!(text.contains("SACK proof"), "{text}");
    println!("--- a Trickles request (frame {n}), tshark -V ---\n{text}");
}

/// Every response: packet number, nonce, offset, the new continuation, and the HTTP
/// application's output user continuation with its sealed answer.
#[test]
fn responses_show_nonce_and_user_continuation() {
    if !harness::have_tshark() {
        return;
    }
    let packets = exchange(false, 0);
    let frames: Vec<Vec<u8>> = packets.iter().map(|(_, p)| p.clone()).collect();
    let pcap = harness::write_pcap("trickles-responses", &frames);
    let mut fields = vec![
        "trickles.msg",
        "trickles.kind",
        "trickles.pkt",
        "trickles.nonce",
        "trickles.offset",
        "trickles.eos",
        "trickles.ucont.len",
        "trickles.ucont.kind",
        "trickles.ucont.valid_start",
        "trickles.ucont.valid_end",
        "trickles.ucont.skip_to",
        "trickles.ucont.mac",
        "trickles.http.status",
        "trickles.http.body_end",
        "trickles.data.len",
    ];
    fields.extend(TCONT_FIELDS);
    let rows = harness::fields(&pcap, &fields);
    assert_eq!(rows.len(), packets.len());
    let mut first = None;
    let mut delivered = 0usize;
    for (i, ((from_client, packet), row)) in packets.iter().zip(&rows).enumerate() {
        if *from_client {
            assert_eq!(row[0], "request", "frame {}", i + 1);
            continue;
        }
        let resp = Response::parse(message(packet)).unwrap();
        let mut want = vec![
            "response".to_string(),
            u8::from(resp.kind).to_string(),
            resp.packet_number.to_string(),
            format!("0x{:08x}", resp.nonce),
            resp.offset.to_string(),
            (if resp.end_of_stream { "1" } else { "0" }).to_string(),
            resp.user_continuation.len().to_string(),
        ];
        if resp.user_continuation.is_empty() {
            want.extend(vec![String::new(); 7]);
        } else {
            let (uc, tag) = UserContinuation::parse(resp.user_continuation).unwrap();
            let UserContinuation::Output {
                valid_start,
                valid_end,
                skip_to,
                follows: None,
                app,
            } = uc
            else {
                panic!("not the HTTP answer's output continuation: {uc:?}")
            };
            // The sealed answer: format 2, status code, flags, then LEB128 numbers.
            assert_eq!(app[0], 2);
            let status = u16::from_be_bytes([app[1], app[2]]);
            want.extend([
                "2".to_string(),
                valid_start.to_string(),
                valid_end.to_string(),
                skip_to.to_string(),
                hex(tag),
                status.to_string(),
                OBJECT_LEN.to_string(),
            ]);
            first.get_or_insert(i + 1);
        }
        want.push(if resp.data.is_empty() {
            String::new()
        } else {
            resp.data.len().to_string()
        });
        delivered += resp.data.len();
        want.extend(match &resp.continuation {
            Some(c) => tcont_values(c),
            None => vec![String::new(); TCONT_FIELDS.len()],
        });
        assert_eq!(row, &want, "frame {}", i + 1);
    }
    assert!(delivered > OBJECT_LEN, "head and body");
    let v = harness::verbose(&pcap);
    let n = first.expect("a response with a user continuation");
    let text = frame_text(&v, n);
    assert!(text.contains("User continuation"), "{text}");
    assert!(text.contains("Status: 200"), "{text}");
    println!("--- a Trickles response (frame {n}), tshark -V ---\n{text}");
}

/// With delta-encoded continuations asked for, responses carry deltas: the bitmap and the
/// fields present are shown.
#[test]
fn delta_continuations_are_decoded() {
    if !harness::have_tshark() {
        return;
    }
    let packets = exchange(true, 0);
    let frames: Vec<Vec<u8>> = packets.iter().map(|(_, p)| p.clone()).collect();
    let pcap = harness::write_pcap("trickles-delta", &frames);
    let rows = harness::fields(
        &pcap,
        &[
            "trickles.msg",
            "trickles.delta.present",
            "trickles.tcont.rtt_us",
            "trickles.tcont.timestamp_ms",
            "trickles.mac",
        ],
    );
    let mut first = None;
    for (i, ((from_client, packet), row)) in packets.iter().zip(&rows).enumerate() {
        if *from_client {
            continue;
        }
        let resp = Response::parse(message(packet)).unwrap();
        let Some(d) = resp.delta else {
            assert_eq!(row[1], "");
            continue;
        };
        first.get_or_insert(i + 1);
        assert_eq!(
            row[1..],
            [
                format!("0x{:04x}", d.present()),
                d.rtt_us.to_string(),
                d.timestamp_ms.to_string(),
                hex(&d.tag),
            ]
        );
    }
    let n = first.expect("a response carrying a delta");
    let v = harness::verbose(&pcap);
    let text = frame_text(&v, n);
    assert!(text.contains("Delta continuation"), "{text}");
    println!(
        "--- a Trickles response with a delta continuation (frame {n}), tshark -V ---\n{text}"
    );
}

/// The IP-in-UDP tunnel of `trickles-web`'s UDP link: one whole IP packet per datagram.
/// The shim dissector's UDP heuristic hands the inner packet to IP, and the Trickles
/// dissector finds the request in it.
#[test]
fn ip_in_udp_carries_trickles() {
    if !harness::have_tshark() {
        return;
    }
    let packets = exchange(false, 0);
    let (_, syn) = &packets[0];
    let (_, resp) = &packets[1];
    let mut frames = Vec::new();
    for (p, (sport, dport)) in [(syn, (40000, 8000)), (resp, (8000, 40000))] {
        let outer =
            etherparse::PacketBuilder::ipv4([10, 9, 0, 1], [10, 9, 0, 2], 64).udp(sport, dport);
        let mut d = Vec::new();
        outer.write(&mut d, p).unwrap();
        frames.push(d);
    }
    let pcap = harness::write_pcap("trickles-udp", &frames);
    let rows = harness::fields(
        &pcap,
        &[
            "frame.protocols",
            "trickles.msg",
            "trickles.kind",
            "trickles.pkt",
            "ip.src",
        ],
    );
    let want_pkt = Response::parse(message(resp)).unwrap().packet_number;
    assert_eq!(
        rows[0],
        [
            "waist:ip:udp:waist:ip:tcp:trickles_option:trickles",
            "request",
            "1",
            "",
            "10.9.0.1,192.168.5.1"
        ]
    );
    assert_eq!(
        rows[1][..4],
        [
            "waist:ip:udp:waist:ip:tcp:trickles_option:trickles",
            "response",
            "1",
            &want_pkt.to_string()
        ]
    );
    let v = harness::verbose(&pcap);
    println!(
        "--- a Trickles SYN in IP-in-UDP, tshark -V ---\n{}",
        frame_text(&v, 1)
    );
}

/// A request cut short inside its transport continuation, and one with a bad version:
/// the script flags them itself (expert info), with no Lua error and no exception.
#[test]
fn truncated_and_bad_messages_are_flagged() {
    if !harness::have_tshark() {
        return;
    }
    let packets = exchange(false, 0);
    let (_, req) = packets
        .iter()
        .find(|(c, p)| *c && Request::parse(message(p)).unwrap().continuation.is_some())
        .unwrap();
    let p = ip::parse(req).unwrap();
    let msg = message(req);
    // Cut inside the continuation (8 header bytes + 20 of its 54), and re-frame it so
    // TCP and IP are intact: the message itself is what is short.
    let cut = &msg[..28];
    let mut bad_version = msg.to_vec();
    bad_version[0] = 9;
    let mut frames = Vec::new();
    for payload in [cut, &bad_version[..]] {
        let seg = wire::Segment {
            src_port: 40000,
            dst_port: 80,
            syn: false,
            seq: 1,
            ack: 0,
            payload,
        };
        let mut out = vec![0u8; wire::TCP_HEADER_LEN + payload.len()];
        let n = wire::emit_segment(&p.src, &p.dst, &seg, &mut out).unwrap();
        frames.push(ip::wrap(&p.src, &p.dst, &out[..n]).unwrap());
    }
    let pcap = harness::write_pcap("trickles-bad", &frames);
    let rows = harness::fields(&pcap, &["trickles.msg", "_ws.expert.message"]);
    assert_eq!(rows[0][0], "request");
    assert!(rows[0][1].contains("Truncated"), "{:?}", rows[0]);
    assert!(rows[1][1].contains("version 9"), "{:?}", rows[1]);
    let v = harness::tshark(&pcap, &["-V"]);
    let text = frame_text(&v, 1);
    assert!(text.contains("Expert Info"), "{text}");
    println!("--- a truncated Trickles request, tshark -V ---\n{text}");
}

/// Option 253 of another RFC 6994 experiment (ExID 0xF989) is left to Wireshark's own
/// experimental-option dissector, and its payload is not taken for Trickles.
#[test]
fn other_experiments_are_left_to_wireshark() {
    if !harness::have_tshark() {
        return;
    }
    let (src, dst) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
    let seg = wire::Segment {
        src_port: 40000,
        dst_port: 40001,
        syn: false,
        seq: 1,
        ack: 0,
        payload: &[1, 2, 0, 0, 0, 0, 0, 0],
    };
    let mut out = vec![0u8; wire::TCP_HEADER_LEN + 8];
    let n = wire::emit_segment(&src, &dst, &seg, &mut out).unwrap();
    assert_eq!(out[20..24], [253, 4, 0x54, 0x72]);
    out[22..24].copy_from_slice(&[0xF9, 0x89]); // Wireshark leaves the checksum unverified
    let pcap = harness::write_pcap(
        "trickles-other-exid",
        &[ip::wrap(&src, &dst, &out[..n]).unwrap()],
    );
    let rows = harness::fields(&pcap, &["tcp.options.experimental.exid", "trickles.msg"]);
    assert_eq!(rows, [["0xf989", ""]]);
    let v = harness::verbose(&pcap);
    println!(
        "--- option 253 of another experiment, tshark -V ---\n{}",
        frame_text(&v, 1)
    );
}
