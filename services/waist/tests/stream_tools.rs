//! `waist stream pub|sub|deploy|set|terminate` against a fake router: a plain UDP socket
//! playing the router's side of the tool's IP-in-UDP link (each datagram one IP packet).
//! The fake router reads what the tools send (IP, UDP, RUDP, control envelopes) and
//! plays fragments and replies to them, so no router runs.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use stream_handlers::control::ControlMessage;
use stream_handlers::endpoint::{Publisher, PublisherConfig, generate};
use stream_handlers::envelope::{Envelope, Request, Status};
use stream_handlers::rudp::{HEADER_LEN, Header};
use stream_handlers::spec::Fields;
use stream_handlers::{Field, Predicate};

const WAIST: &str = env!("CARGO_BIN_EXE_waist");
const TOOL: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const NODE: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// The router's side of a link, and the tool's `--via` for it.
struct FakeRouter {
    sock: UdpSocket,
    via: String,
}

impl FakeRouter {
    fn new() -> FakeRouter {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let tool = netio::ports::udp([127, 0, 0, 1].into()).unwrap();
        sock.connect(tool).unwrap();
        let via = format!("udp:{tool}={}", sock.local_addr().unwrap());
        FakeRouter { sock, via }
    }

    /// Starts `waist stream ARGS --via OURS`.
    fn tool(&self, args: &[&str]) -> Child {
        Command::new(WAIST)
            .arg("stream")
            .args(args)
            .args(["--via", &self.via])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The next IP packet from the tool.
    fn recv(&self) -> Vec<u8> {
        let mut buf = vec![0u8; 70_000];
        let n = self.sock.recv(&mut buf).expect("a packet from the tool");
        buf.truncate(n);
        buf
    }

    /// Sends a UDP datagram `from` → `to` to the tool, as one IP packet.
    fn send(&self, from: SocketAddr, to: SocketAddr, data: &[u8]) {
        let p = waist::host::stream::datagram(from.ip(), from.port(), to, data).unwrap();
        self.sock.send(&p).unwrap();
    }

    /// Waits until the tool's socket is bound: a probe (a datagram no tool takes) is no
    /// longer refused, three times running.
    fn wait_bound(&self) {
        let probe =
            waist::host::stream::datagram(NODE.into(), 9, SocketAddr::from((TOOL, 9)), b"?")
                .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut quiet = 0;
        while quiet < 3 {
            assert!(Instant::now() < deadline, "the tool never bound its socket");
            let refused = self.sock.send(&probe).is_err();
            std::thread::sleep(Duration::from_millis(30));
            let refused = refused || self.sock.take_error().unwrap().is_some();
            quiet = if refused { 0 } else { quiet + 1 };
        }
    }
}

fn finish(child: Child) -> (Option<i32>, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&stdout).into_owned();
    let err = String::from_utf8_lossy(&stderr);
    assert!(err.is_empty() || status.code() == Some(0), "stderr: {err}");
    (status.code(), out)
}

/// `waist stream pub` sends well-formed IPv4/UDP to the node's data port: RUDP fragments
/// of messages 0, 1, 2, …, sequence numbers running on, each message's bytes what the
/// publisher's generator makes of its id and timestamp.
#[test]
fn pub_sends_rudp_fragments_to_the_data_port() {
    let r = FakeRouter::new();
    let src = TOOL.to_string();
    let child = r.tool(&[
        "pub", "--src", &src, "--to", "10.0.0.1", "--stream", "5", "--fields", "flight", "--size",
        "3000", "--rate", "200", "--count", "4", "--seed", "3",
    ]);
    let mut messages: Vec<Vec<u8>> = vec![Vec::new(); 4];
    for i in 0..12u32 {
        let p = r.recv();
        let d = waist_ip::udp::parse_datagram(&p).expect("IPv4/UDP, checksum right");
        assert_eq!((d.src, d.dst), (IpAddr::from(TOOL), IpAddr::from(NODE)));
        assert_eq!(d.dport, 7400);
        let h = Header::parse(d.data).unwrap();
        assert_eq!(
            (h.stream, h.seq, h.len, h.size, h.count),
            (5, i, 3000, 1400, 3)
        );
        assert_eq!((h.message, h.index), (i / 3, (i % 3) as u16));
        messages[h.message as usize].extend_from_slice(&d.data[HEADER_LEN..]);
    }
    for (id, m) in messages.iter().enumerate() {
        let ts = u64::from_be_bytes(m[4..12].try_into().unwrap());
        let want = generate(Some(Fields::Flight), id as u32, ts, 3, 3000).unwrap();
        assert_eq!(m, &want, "message {id}");
    }
    let (code, out) = finish(child);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("stream 5 to 10.0.0.1:7400: 4 messages, 12 fragments, 12288 bytes in "),
        "{out}"
    );
}

/// The fragments of `ids` of an image stream (seed 9, 2000 bytes, 1400-byte fragments:
/// two each); `corrupt` gets a body byte flipped.
fn image_fragments(ids: &[u32], corrupt: Option<u32>) -> Vec<Vec<u8>> {
    let cfg = PublisherConfig {
        stream: 6,
        fields: Some(Fields::Image),
        size: 2000,
        seed: 9,
        fragment: 1400,
    };
    let mut p = Publisher::new(cfg).unwrap();
    let now = waist::host::stream::wall_ns();
    let mut out = Vec::new();
    for id in 0..=*ids.iter().max().unwrap() {
        let mut frags = p.next(now).unwrap();
        if corrupt == Some(id) {
            frags[1][HEADER_LEN + 100] ^= 0x40;
        }
        if ids.contains(&id) {
            out.extend(frags);
        }
    }
    out
}

/// `waist stream sub` reports a message with a flipped byte as not intact and a missing
/// one as lost, and fails; with every message intact it succeeds; with fewer than
/// `--count` by the timeout it fails.
#[test]
fn sub_reports_intact_corrupt_and_lost_messages() {
    let r = FakeRouter::new();
    let (from, to) = (
        SocketAddr::from((NODE, 7400)),
        SocketAddr::from((TOOL, 7400)),
    );
    let sub_for = |count: &str, timeout: &str, extra: &[&str]| {
        let mut args = vec![
            "sub",
            "--src",
            "10.1.0.1",
            "--stream",
            "6",
            "--fields",
            "image",
            "--size",
            "2000",
            "--seed",
            "9",
            "--count",
            count,
            "--timeout",
            timeout,
        ];
        args.extend_from_slice(extra);
        let child = r.tool(&args);
        r.wait_bound();
        child
    };
    let sub = |count: &str, extra: &[&str]| sub_for(count, "20", extra);

    // 0, 1, 2 (corrupt), 4, 5: five messages received, one not intact, id 3 lost.
    let child = sub("5", &["--json"]);
    for f in image_fragments(&[0, 1, 2, 4, 5], Some(2)) {
        r.send(from, to, &f);
    }
    let (code, out) = finish(child);
    assert_eq!(code, Some(1), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            &v["received"],
            &v["intact"],
            &v["corrupt"],
            &v["lost"],
            &v["ok"]
        ),
        (&5.into(), &4.into(), &1.into(), &1.into(), &false.into())
    );
    assert_eq!((&v["stream"], &v["duplicates"]), (&6.into(), &0.into()));
    assert!(v["latency_us"]["p99"].as_f64().unwrap() >= 0.0, "{v}");

    // Two intact messages, a repeated fragment, and a datagram to another port (ignored).
    let child = sub("2", &["--verbose"]);
    let frags = image_fragments(&[0, 1], None);
    r.send(from, SocketAddr::from((TOOL, 7500)), &frags[0]);
    r.send(from, to, &frags[0]);
    r.send(from, to, &frags[0]);
    for f in &frags[1..] {
        r.send(from, to, f);
    }
    let (code, out) = finish(child);
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("message 0 seq=0 len=2000 latency="),
        "{out}"
    );
    assert!(lines[0].ends_with(" µs intact"), "{out}");
    assert!(lines[1].starts_with("message 1 seq=1 "), "{out}");
    assert_eq!(
        lines[2],
        "stream 6: 2 received, 2 intact, 0 not intact, 0 lost, 1 duplicates, 0 reordered"
    );
    assert!(
        lines[3].starts_with("latency min/avg/p50/p99/max = "),
        "{out}"
    );

    // A message byte-swapped on the way (as a `byteswap` handler does): intact once undone.
    let child = sub("1", &["--undo", "byteswap"]);
    let mut body: Vec<u8> = image_fragments(&[0], None)
        .iter()
        .flat_map(|f| f[HEADER_LEN..].to_vec())
        .collect();
    for w in body.chunks_exact_mut(4) {
        w.reverse();
    }
    for f in stream_handlers::rudp::fragment(6, 0, 0, &body, 1400).unwrap() {
        r.send(from, to, &f);
    }
    let (code, out) = finish(child);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("stream 6: 1 received, 1 intact, 0 not intact"),
        "{out}"
    );

    // One of three, then the timeout.
    let child = sub_for("3", "1", &[]);
    for f in image_fragments(&[0], None) {
        r.send(from, to, &f);
    }
    let started = Instant::now();
    let (code, out) = finish(child);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("1 received, 1 intact, 0 not intact, 2 lost"),
        "{out}"
    );
    assert!(out.contains("only 1 of 3 messages within 1 s"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(15));
}

/// Reads the tool's next control envelope: from our source to the node's port 7401.
fn request(r: &FakeRouter) -> (SocketAddr, Envelope) {
    let p = r.recv();
    let d = waist_ip::udp::parse_datagram(&p).expect("IPv4/UDP");
    assert_eq!(
        (d.dst, d.dport, d.src),
        (IpAddr::from(NODE), 7401, IpAddr::from(TOOL))
    );
    (
        SocketAddr::new(d.src, d.sport),
        Envelope::parse(d.data).unwrap(),
    )
}

fn reply(r: &FakeRouter, to: SocketAddr, e: &Envelope, status: Status, detail: &str) {
    let mut b = Vec::new();
    Envelope {
        stream: e.stream,
        id: e.id,
        request: Request::Reply(status, detail.into()),
    }
    .emit(&mut b);
    r.send(SocketAddr::from((NODE, 7401)), to, &b);
}

/// `deploy` sends the spec as written (and again when no reply comes), `set` and
/// `terminate` the control messages their options name; each prints the reply, and a
/// refusal or silence is a failing exit code.
#[test]
fn control_tools_send_envelopes_and_print_replies() {
    let r = FakeRouter::new();
    let spec = "to 10.1.0.2:7400 10.1.0.3:7400 | fields flight | multicast 0=status==2 1=all";
    let base = ["--src", "10.1.0.1", "--router", "10.0.0.1", "--stream", "7"];
    let with = |sub: &str, extra: &[&str]| {
        let mut a = vec![sub];
        a.extend_from_slice(&base);
        a.extend_from_slice(extra);
        r.tool(&a)
    };

    // Deploy: the first try goes unanswered, the retry (same id) is answered.
    let child = with("deploy", &["--timeout-ms", "300", spec]);
    let (_, first) = request(&r);
    let (from, again) = request(&r);
    assert_eq!(first, again);
    assert_eq!(
        (again.stream, &again.request),
        (7, &Request::Deploy(spec.into()))
    );
    // A reply to another request id is not ours.
    let mut other = again.clone();
    other.id ^= 1;
    reply(&r, from, &other, Status::Refused, "not yours");
    reply(
        &r,
        from,
        &again,
        Status::OnNode,
        "cost 812 ns per packet, headroom 5000 ns",
    );
    let (code, out) = finish(child);
    assert_eq!(
        (code, out.as_str()),
        (
            Some(0),
            "stream 7: on-node (cost 812 ns per packet, headroom 5000 ns)\n"
        )
    );

    // Set one destination's predicate, by field name; refused.
    let child = with(
        "set",
        &[
            "--handler",
            "1",
            "--fields",
            "flight",
            "--dest",
            "1",
            "--predicate",
            "status==3",
        ],
    );
    let (from, e) = request(&r);
    let status = Field::new(30, 1);
    assert_eq!(
        e.request,
        Request::Control(ControlMessage::SetDestPredicate {
            handler: 1,
            dest: 1,
            predicate: Predicate::Eq(status, 3)
        })
    );
    reply(
        &r,
        from,
        &e,
        Status::Refused,
        "handler 1: unsupported parameter",
    );
    let (code, out) = finish(child);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out,
        "stream 7: refused (handler 1: unsupported parameter)\n"
    );

    // Terminate, applied.
    let child = with("terminate", &[]);
    let (from, e) = request(&r);
    assert_eq!(
        e.request,
        Request::Control(ControlMessage::Terminate { stream: 7 })
    );
    reply(&r, from, &e, Status::Applied, "terminated");
    let (code, out) = finish(child);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "stream 7: applied (terminated)\n")
    );

    // Nobody answers: every try goes out, then exit code 2.
    let child = with(
        "set",
        &["--rate", "20000", "--timeout-ms", "100", "--retries", "1"],
    );
    for _ in 0..2 {
        let (_, e) = request(&r);
        assert_eq!(
            e.request,
            Request::Control(ControlMessage::SetRate { rate: 20000 })
        );
    }
    let (code, out) = finish(child);
    assert_eq!(code, Some(2), "{out}");
    assert_eq!(out, "no reply from 10.0.0.1:7401 within 100 ms (2 tries)\n");

    // A spec that does not parse never leaves.
    let (code, _) = {
        let child = with("deploy", &["to nowhere"]);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(err.contains("stream spec at"), "{err}");
        (o.status.code(), err)
    };
    assert_ne!(code, Some(0));
}
