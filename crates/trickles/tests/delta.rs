//! Delta-encoded continuations (§5.3) end to end: negotiation, the client's rebuild, the
//! server's unchanged MAC check, and whole transfers with deltas on.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use trickles::Instant;
use trickles::client::{Client, ClientConfig};
use trickles::conn::{Addr, FourTuple};
use trickles::continuation::{CONTINUATION_LEN, EpochStart};
use trickles::delta::{ContinuationDelta, DELTA_MIN_LEN};
use trickles::server::{Rejected, Server, ServerConfig};
use trickles::sim::{self, Transfer};
use trickles::wire::{self, Request, Response, SegmentHeader};

const CLIENT: Addr = Addr::V4([10, 0, 0, 1]);
const SERVER: Addr = Addr::V4([10, 0, 0, 2]);

fn tuple() -> FourTuple {
    FourTuple {
        client_addr: CLIENT,
        client_port: 5555,
        server_addr: SERVER,
        server_port: 80,
    }
}

/// A client asking for deltas, acknowledging every packet (so every response carries a
/// continuation, which the counts below rely on); `deltas_with_delayed_acks` covers the
/// daemons' mode.
fn delta_client() -> ClientConfig {
    let mut cfg = ClientConfig {
        delta: true,
        ..ClientConfig::default()
    };
    cfg.cc.delayed_ack = false;
    cfg
}

/// With delayed acknowledgments (as the daemons run) only every other packet carries a
/// continuation, as a delta; transfers still arrive whole, with every delta rebuilt and
/// verified, at no loss and at 5% loss each way.
#[test]
fn deltas_with_delayed_acks() {
    let mut client = ClientConfig {
        delta: true,
        ..ClientConfig::default()
    };
    client.cc.delayed_ack = true;
    let mut server = ServerConfig::new(sim::sim_keys());
    server.cc.delayed_ack = true;
    for (len, loss, seed) in [(5_000u64, 0, 1), (1_000_000, 0, 2), (300_000, 50_000, 3)] {
        let mut t = Transfer::new(len, 5_000);
        t.loss_fwd_ppm = loss;
        t.loss_rev_ppm = loss;
        t.seed = seed;
        let o = sim::run(&t, server, client);
        assert!(o.complete && o.byte_exact, "len {len} loss {loss}: {o:?}");
        assert_eq!(o.server.mac_rejections, 0, "len {len} loss {loss}: {o:?}");
        assert!(o.client.deltas_rebuilt > 0, "{o:?}");
        assert!(o.server.deltas > 0, "{o:?}");
        if loss == 0 {
            assert_eq!(o.client.deltas_dropped, 0, "{o:?}");
            // About one continuation per two responses.
            assert!(o.server.deltas * 10 < o.server.responses * 6, "{o:?}");
        }
    }
}

/// Answers a request with 1 KB per allowed response.
fn answer(server: &mut Server, now: Instant, seg: &[u8]) -> Result<Vec<Vec<u8>>, Rejected> {
    let reply = server.handle_request(now, CLIENT, SERVER, seg)?;
    let mut out = Vec::new();
    for r in &reply.responses {
        let data = vec![7u8; r.allowed().min(1024)];
        let mut buf = vec![0u8; 2048];
        let n = server
            .emit(&reply.event.tuple, r, &[], &data, false, &mut buf)
            .unwrap();
        buf.truncate(n);
        out.push(buf);
    }
    Ok(out)
}

fn response_of(seg: &[u8]) -> Response<'_> {
    Response::parse(wire::parse_segment(&SERVER, &CLIENT, seg).unwrap().payload).unwrap()
}

fn request_of(seg: &[u8]) -> Request<'_> {
    Request::parse(wire::parse_segment(&CLIENT, &SERVER, seg).unwrap().payload).unwrap()
}

/// Re-frames a response from the server to the client with a valid checksum.
fn reframe(resp: &Response<'_>) -> Vec<u8> {
    let mut out = vec![0u8; wire::TCP_HEADER_LEN + resp.buffer_len()];
    let n = resp.emit(&mut out[wire::TCP_HEADER_LEN..]).unwrap();
    let t = tuple();
    let h = SegmentHeader {
        src_port: t.server_port,
        dst_port: t.client_port,
        syn: false,
        seq: resp.packet_number,
        ack: 0,
    };
    let len = wire::finish_segment(&SERVER, &CLIENT, &h, &mut out, n).unwrap();
    out.truncate(len);
    out
}

/// Connects a delta client, has the server answer its SYN, passes the first response
/// through `tamper`, delivers all of them, and returns the server's verdict on the request
/// the client made with packet 1's continuation, and that of packet 2's.
fn first_requests_after(
    tamper: impl Fn(&mut ContinuationDelta),
) -> (Result<usize, Rejected>, Result<usize, Rejected>) {
    let now = Instant::from_micros(1_000_000);
    let mut server = Server::new(ServerConfig::new(sim::sim_keys()));
    let mut client = Client::new(delta_client(), tuple(), 99);
    client.connect(now, &[]);
    let syn = client.poll_transmit().unwrap();
    assert!(request_of(&syn).accepts_delta(), "the SYN asks for deltas");
    for seg in answer(&mut server, now, &syn).unwrap() {
        let mut resp = response_of(&seg);
        assert!(resp.continuation.is_none());
        let mut d = resp.delta.expect("a delta client gets deltas");
        if resp.packet_number == 1 {
            tamper(&mut d);
        }
        resp.delta = Some(d);
        client
            .handle_segment(now.saturating_add(10_000), &reframe(&resp))
            .unwrap();
    }
    assert_eq!(client.stats().deltas_rebuilt, 3);
    let mut verdicts = std::collections::BTreeMap::new();
    while let Some(seg) = client.poll_transmit() {
        let req = request_of(&seg);
        assert!(req.accepts_delta());
        let number = req.continuation.unwrap().number;
        let verdict = answer(&mut server, now.saturating_add(20_000), &seg).map(|r| r.len());
        verdicts.insert(number, verdict);
    }
    (verdicts[&1], verdicts[&2])
}

/// A named edit of a delta.
type Tamper = fn(&mut ContinuationDelta);

#[test]
fn rebuilt_continuations_verify_and_tampered_deltas_fail_the_mac() {
    let (one, two) = first_requests_after(|_| {});
    assert!(one.unwrap() > 0 && two.unwrap() > 0, "{one:?} {two:?}");
    let tampers: [(&str, Tamper); 10] = [
        ("rtt", |d| d.rtt_us ^= 1),
        ("timestamp", |d| d.timestamp_ms ^= 1),
        ("tag", |d| d.tag[15] ^= 0x80),
        ("tcp_base", |d| d.tcp_base = Some(1)),
        ("ssthresh", |d| d.ssthresh = Some(77)),
        ("proof_start", |d| d.proof_start = Some(0)),
        ("key_epoch", |d| d.key_epoch = Some(1)),
        ("epoch_start", |d| {
            d.epoch_start = Some(EpochStart::Recovery)
        }),
        ("rtx", |d| d.rtx = Some(3)),
        ("site", |d| d.site = Some(5)),
    ];
    for (what, tamper) in tampers {
        let (one, two) = first_requests_after(tamper);
        assert_eq!(one, Err(Rejected::Mac), "tampered {what}");
        // The untampered sibling still verifies.
        assert!(two.is_ok_and(|n| n > 0), "{what}: {two:?}");
    }
}

#[test]
fn a_delta_without_a_prediction_is_dropped() {
    let now = Instant::from_micros(1_000_000);
    let mut server = Server::new(ServerConfig::new(sim::sim_keys()));
    let mut client = Client::new(delta_client(), tuple(), 99);
    client.connect(now, &[]);
    let syn = client.poll_transmit().unwrap();
    let segs = answer(&mut server, now, &syn).unwrap();
    // Packet 1's delta, presented as packet 500, for which the client predicted nothing.
    let mut resp = response_of(&segs[0]);
    resp.packet_number = 500;
    client
        .handle_segment(now.saturating_add(10_000), &reframe(&resp))
        .unwrap();
    assert_eq!(client.stats().deltas_dropped, 1);
    assert_eq!(client.stats().deltas_rebuilt, 0);
    assert!(
        client.poll_transmit().is_none(),
        "no request from a dropped delta"
    );
}

#[test]
fn a_server_without_delta_answers_full_continuations() {
    let mut server_cfg = ServerConfig::new(sim::sim_keys());
    server_cfg.delta = false;
    let t = Transfer::new(300_000, 5_000);
    let o = sim::run(&t, server_cfg, delta_client());
    assert!(o.complete && o.byte_exact, "{o:?}");
    assert_eq!(o.server.deltas, 0);
    assert_eq!(o.client.deltas_rebuilt, 0);
    assert_eq!(o.server.continuation_bytes % CONTINUATION_LEN as u64, 0);
    assert!(o.server.continuation_bytes > 0);

    // And a client that does not ask gets none from a server that could.
    let o = sim::run(
        &t,
        ServerConfig::new(sim::sim_keys()),
        ClientConfig::default(),
    );
    assert!(o.complete && o.byte_exact, "{o:?}");
    assert_eq!(o.server.deltas, 0);
}

#[test]
fn loss_free_deltas_carry_only_the_unpredictable_fields() {
    for len in [1u64, 5_000, 1_000_000] {
        let t = Transfer::new(len, 5_000);
        let full = sim::run(
            &t,
            ServerConfig::new(sim::sim_keys()),
            ClientConfig {
                delta: false,
                ..delta_client()
            },
        );
        let o = sim::run(&t, ServerConfig::new(sim::sim_keys()), delta_client());
        assert!(o.complete && o.byte_exact, "len {len}: {o:?}");
        assert_eq!(o.server.mac_rejections, 0);
        assert_eq!(o.client.deltas_dropped, 0);
        // The run stops when the object is in, with the last responses still in flight.
        assert!(o.client.deltas_rebuilt > 0 && o.client.deltas_rebuilt <= o.server.deltas);
        // The SYN's three responses also carry the connection nonce (8 bytes) the client
        // could not know; every later delta is the 26-byte minimum.
        assert_eq!(
            o.server.continuation_bytes,
            DELTA_MIN_LEN as u64 * o.server.deltas + 8 * 3,
            "len {len}"
        );
        // The same responses, 28 bytes shorter each.
        assert_eq!(o.server.responses, full.server.responses, "len {len}");
        assert_eq!(
            full.server.response_bytes - o.server.response_bytes,
            (CONTINUATION_LEN - DELTA_MIN_LEN) as u64 * o.server.deltas - 8 * 3,
            "len {len}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 32, ..Default::default() })]
    /// Any size, loss up to 10% each way, reordering, either ack mode, deltas on:
    /// byte-exact, and every continuation the client rebuilt verified at the server.
    #[test]
    fn any_delta_transfer_completes_and_verifies(
        len in 1u64..400_000,
        fwd in 0u32..=100_000,
        rev in 0u32..=100_000,
        jitter in 0u64..4_000,
        delayed in proptest::bool::ANY,
        seed in 1u64..1_000,
    ) {
        let mut server_cfg = ServerConfig::new(sim::sim_keys());
        server_cfg.cc.delayed_ack = delayed;
        let mut client_cfg = delta_client();
        client_cfg.cc.delayed_ack = delayed;
        let mut t = Transfer::new(len, 5_000);
        t.link = t.link.rate(100, 20_000).jitter(jitter);
        t.loss_fwd_ppm = fwd;
        t.loss_rev_ppm = rev;
        t.seed = seed;
        t.upload_len = len % 5_000;
        let o = sim::run(&t, server_cfg, client_cfg);
        proptest::prop_assert!(o.complete && o.byte_exact && o.upload_exact, "{:?}", o);
        proptest::prop_assert_eq!(o.server.mac_rejections, 0, "{:?}", o);
        proptest::prop_assert!(o.server.deltas > 0 && o.client.deltas_rebuilt > 0, "{:?}", o);
    }
}
