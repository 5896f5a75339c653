//! The stream dissector (`tools/wireshark/waist_stream.lua`) on packets built by the
//! `stream-handlers` crate's own publisher and envelopes, carried in IPv4/UDP as the
//! `waist stream` tools send them: RUDP fragments on 7400, control envelopes on 7401, and
//! truncated or inconsistent ones flagged.

use std::net::{Ipv4Addr, SocketAddr};

use stream_handlers::control::ControlMessage;
use stream_handlers::endpoint::{Publisher, PublisherConfig};
use stream_handlers::envelope::{Envelope, Request, Status};
use stream_handlers::spec::Fields;
use stream_handlers::{Field, Predicate};

use crate::harness;

const HOST: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const NODE: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn udp(sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    waist::host::stream::datagram(HOST.into(), sport, SocketAddr::from((NODE, dport)), data)
        .unwrap()
}

fn envelope(stream: u16, id: u32, request: Request) -> Vec<u8> {
    let mut b = Vec::new();
    Envelope {
        stream,
        id,
        request,
    }
    .emit(&mut b);
    b
}

/// A 3000-byte flight record in three fragments: header fields, the message's own seq
/// and timestamp on the first fragment only.
#[test]
fn stream_fragments_show_their_header() {
    if !harness::have_tshark() {
        return;
    }
    let mut p = Publisher::new(PublisherConfig {
        stream: 7,
        fields: Some(Fields::Flight),
        size: 3000,
        seed: 1,
        fragment: 1400,
    })
    .unwrap();
    p.next(1).unwrap();
    let frames: Vec<Vec<u8>> = p
        .next(1_700_000_000_123_456_789)
        .unwrap()
        .iter()
        .map(|f| udp(7400, 7400, f))
        .collect();
    let pcap = harness::write_pcap("stream-fragments", &frames);
    harness::verbose(&pcap);
    let rows = harness::fields(
        &pcap,
        &[
            "frame.protocols",
            "wstream.stream",
            "wstream.message",
            "wstream.seq",
            "wstream.index",
            "wstream.count",
            "wstream.len",
            "wstream.size",
            "wstream.msg_seq",
            "wstream.timestamp_ns",
            "_ws.expert.message",
            "_ws.col.Info",
        ],
    );
    assert_eq!(
        rows[0],
        [
            "waist:ip:udp:waist_stream",
            "7",
            "1",
            "3",
            "0",
            "3",
            "3000",
            "1400",
            "1",
            "1700000000123456789",
            "",
            "RUDP stream 7 message 1 fragment 0/3 seq 3 (msg seq 1)"
        ]
    );
    assert_eq!(rows[2][3..9], ["5", "2", "3", "3000", "1400", ""]);
    assert_eq!(rows[2][11], "RUDP stream 7 message 1 fragment 2/3 seq 5");
}

/// Deploy, SetDestPredicate, SetRate, Terminate and replies (one refused): kinds, opcodes
/// by name, operands, spec and detail text.
#[test]
fn stream_control_envelopes_show_their_requests() {
    if !harness::have_tshark() {
        return;
    }
    let spec = "to 10.1.0.2:7400 | fields flight | filter status==2";
    let status = Field::new(30, 1);
    let frames = vec![
        udp(
            50000,
            7401,
            &envelope(7, 0xA1, Request::Deploy(spec.into())),
        ),
        udp(
            50000,
            7401,
            &envelope(
                7,
                0xA2,
                Request::Control(ControlMessage::SetDestPredicate {
                    handler: 1,
                    dest: 2,
                    predicate: Predicate::Range(status, 1, 3),
                }),
            ),
        ),
        udp(
            50000,
            7401,
            &envelope(
                7,
                0xA3,
                Request::Control(ControlMessage::SetRate { rate: 20000 }),
            ),
        ),
        udp(
            50000,
            7401,
            &envelope(
                7,
                0xA4,
                Request::Control(ControlMessage::Terminate { stream: 7 }),
            ),
        ),
        udp(
            7401,
            50000,
            &envelope(
                7,
                0xA1,
                Request::Reply(
                    Status::OnNode,
                    "cost 812 ns per packet, headroom 5000 ns".into(),
                ),
            ),
        ),
        udp(
            7401,
            50000,
            &envelope(
                7,
                0xA2,
                Request::Reply(Status::Refused, "no such stream".into()),
            ),
        ),
    ];
    let pcap = harness::write_pcap("stream-control", &frames);
    let v = harness::verbose(&pcap);
    let rows = harness::fields(
        &pcap,
        &[
            "wstream.env_kind",
            "wstream.stream",
            "wstream.id",
            "wstream.ctl.opcode",
            "wstream.ctl.handler",
            "wstream.ctl.dest",
            "wstream.pred.kind",
            "wstream.pred.offset",
            "wstream.pred.value",
            "wstream.pred.hi",
            "wstream.ctl.rate",
            "wstream.ctl.target",
            "wstream.spec",
            "wstream.status",
            "wstream.detail",
            "_ws.col.Info",
        ],
    );
    // (The spec's own `|` split row 0 further: read it from the tree.)
    assert_eq!(rows[0][..3], ["1", "7", "0x000000a1"]);
    assert!(v.contains(&format!("Spec: {spec}\n")), "{v}");
    assert!(
        v.contains(&format!(
            "control envelope, stream 7 id 0x000000a1: deploy {spec}\n"
        )),
        "{v}"
    );
    assert_eq!(
        rows[1][..10],
        ["0", "7", "0x000000a2", "7", "1", "2", "4", "30", "1", "3"]
    );
    assert_eq!(
        rows[1][15],
        "Stream control stream 7 id 0x000000a2: SetDestPredicate handler=1 dest=2 u8@30 in 1..3"
    );
    assert_eq!((rows[2][3].as_str(), rows[2][10].as_str()), ("1", "20000"));
    assert_eq!((rows[3][3].as_str(), rows[3][11].as_str()), ("6", "7"));
    assert_eq!(
        rows[4][13..15],
        ["0", "cost 812 ns per packet, headroom 5000 ns"]
    );
    assert_eq!(
        rows[5][15],
        "Stream control stream 7 id 0x000000a2: reply refused (no such stream)"
    );
    assert!(v.contains("Opcode: SetDestPredicate (7)"), "{v}");
    assert!(v.contains("Request refused by the stream node"), "{v}");
}

/// A cut RUDP header, a fragment whose count disagrees with its length, one carrying the
/// wrong number of bytes, a control message cut in its predicate, a bad magic: each an
/// expert item, no Lua error, no "Malformed Packet".
#[test]
fn stream_truncated_and_inconsistent_are_flagged() {
    if !harness::have_tshark() {
        return;
    }
    let mut p = Publisher::new(PublisherConfig {
        stream: 2,
        fields: None,
        size: 100,
        seed: 1,
        fragment: 60,
    })
    .unwrap();
    let frags = p.next(5).unwrap();
    let mut wrong_count = frags[0].clone();
    wrong_count[15] = 3; // count 3, but 100 bytes in 60-byte fragments make 2
    let mut short_body = frags[1].clone();
    short_body.pop();
    let mut cut = envelope(
        2,
        9,
        Request::Control(ControlMessage::SetPredicate {
            handler: 0,
            predicate: Predicate::All,
        }),
    );
    cut.truncate(cut.len() - 4);
    let mut magic = envelope(2, 9, Request::Deploy("to 10.0.0.1:1".into()));
    magic[0] = b'X';
    let frames = vec![
        udp(7400, 7400, &frags[0][..10]),
        udp(7400, 7400, &wrong_count),
        udp(7400, 7400, &short_body),
        udp(50000, 7401, &cut),
        udp(50000, 7401, &magic),
    ];
    let pcap = harness::write_pcap("stream-malformed", &frames);
    harness::verbose(&pcap);
    let rows = harness::fields(&pcap, &["_ws.expert.message"]);
    assert_eq!(rows[0], ["RUDP header truncated: 10 of 24 bytes"]);
    assert_eq!(
        rows[1],
        ["count 3, but a 100-byte message in 60-byte fragments has 2"]
    );
    assert_eq!(
        rows[2],
        ["fragment 1 of a 100-byte message carries 39 bytes, 40 expected"]
    );
    assert_eq!(rows[3], ["predicate truncated: 8 of 12 bytes"]);
    assert_eq!(rows[4], ["magic is not \"SH\""]);
}
