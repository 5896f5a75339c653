//! The application layer (§3, §4, §7.1): user continuations, the event queue and
//! minisockets, migration, and the example applications over lossy simulated links.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The examples' applications, public for their own binaries.
#[allow(unreachable_pub)]
#[path = "../examples/cart.rs"]
mod cart;
#[allow(unreachable_pub)]
#[path = "../examples/static_objects.rs"]
mod static_objects;
#[allow(unreachable_pub)]
#[path = "../examples/watermark.rs"]
mod watermark;

use proptest::prelude::*;
use trickles::Instant;
use trickles::app::{
    Absorbed, Binding, EventQueue, MigrationKey, Minisocket, MskError, PushError, UcontError,
    UcontKey, UserContinuation, absorb,
};
use trickles::client::{Client, ClientConfig};
use trickles::conn::{Addr, FourTuple};
use trickles::server::{EventKind, Server, ServerConfig};
use trickles::sim::app::{AppRun, Failover, run_app};
use trickles::sim::sim_keys;

fn tuple(port: u16) -> FourTuple {
    FourTuple {
        client_addr: Addr::V4([10, 0, 0, 1]),
        client_port: port,
        server_addr: Addr::V4([10, 0, 0, 2]),
        server_port: 80,
    }
}

fn uc_strategy() -> impl Strategy<Value = (u8, u64, u64, Vec<u8>)> {
    (
        0u8..5,
        any::<u64>(),
        any::<u64>(),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
}

fn build(kind: u8, a: u64, b: u64, body: &[u8]) -> UserContinuation<'_> {
    match kind {
        0 => UserContinuation::Input {
            consumed: a,
            state: body,
        },
        1 => UserContinuation::Output {
            valid_start: a.min(b),
            valid_end: a.max(b),
            skip_to: a.max(b).saturating_add(a % 1000),
            follows: None,
            app: body,
        },
        2 => UserContinuation::Output {
            valid_start: a.min(b),
            valid_end: a.max(b),
            skip_to: a.max(b),
            follows: Some(b ^ a),
            app: body,
        },
        3 => UserContinuation::Overflow { at: a, state: body },
        _ => UserContinuation::Opaque(body),
    }
}

proptest! {
    /// A sealed user continuation opens under its own connection and key, and never under
    /// another connection (other ports, addresses or connection nonce).
    #[test]
    fn ucont_never_validates_under_another_connection(
        (kind, a, b, body) in uc_strategy(),
        port in any::<u16>(),
        other_port in any::<u16>(),
        nonce in any::<u64>(),
        other_nonce in any::<u64>(),
    ) {
        let key = UcontKey::new(&[5; 16]);
        let conn = Binding { tuple: tuple(port), conn_nonce: nonce };
        let uc = build(kind, a, b, &body);
        let sealed = key.seal(&conn, &uc).unwrap();
        prop_assert_eq!(sealed.len(), uc.sealed_len());
        prop_assert_eq!(key.open(&conn, &sealed), Ok(uc));
        prop_assert_eq!(UserContinuation::parse(&sealed).map(|(u, _)| u), Ok(uc));
        let other = Binding { tuple: tuple(other_port), conn_nonce: other_nonce };
        if other != conn {
            prop_assert_eq!(key.open(&other, &sealed), Err(UcontError::Mac));
        }
        prop_assert_eq!(UcontKey::new(&[6; 16]).open(&conn, &sealed), Err(UcontError::Mac));
    }

    /// Any byte string: parse and open return a value, never panic, and anything that
    /// opens re-seals to the same bytes.
    #[test]
    fn ucont_parse_and_open_take_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let key = UcontKey::new(&[5; 16]);
        let conn = Binding { tuple: tuple(1), conn_nonce: 2 };
        let _ = UserContinuation::parse(&bytes);
        if let Ok(uc) = key.open(&conn, &bytes) {
            prop_assert_eq!(key.seal(&conn, &uc).unwrap(), bytes);
        }
    }

    /// `absorb` takes input exactly once, in stream order.
    #[test]
    fn absorb_applies_each_byte_once(consumed in 0u64..100, offset in 0u64..100, len in 0usize..50) {
        let data = vec![0u8; len];
        match absorb(consumed, Some(offset), &data) {
            Absorbed::New { from } => {
                prop_assert!(offset <= consumed && consumed < offset + len as u64);
                prop_assert_eq!(offset + from as u64, consumed);
            }
            Absorbed::Repeat => prop_assert!(offset + len as u64 <= consumed),
            Absorbed::Gap => prop_assert!(offset > consumed),
        }
    }
}

#[test]
fn every_bit_flip_of_a_sealed_ucont_is_rejected() {
    let key = UcontKey::new(&[5; 16]);
    let conn = Binding {
        tuple: tuple(9),
        conn_nonce: 3,
    };
    let sealed = key
        .seal(
            &conn,
            &UserContinuation::Output {
                valid_start: 10,
                valid_end: 5000,
                skip_to: 8000,
                follows: None,
                app: b"/obj",
            },
        )
        .unwrap();
    for bit in 0..sealed.len() * 8 {
        let mut t = sealed.clone();
        t[bit / 8] ^= 1 << (bit % 8);
        assert!(
            key.open(&conn, &t).is_err(),
            "bit {bit} flipped still opens"
        );
    }
    let long = vec![0u8; trickles::app::MAX_UCONT_BODY + 1];
    assert_eq!(
        key.seal(&conn, &UserContinuation::Opaque(&long)),
        Err(UcontError::TooLong)
    );
}

fn server() -> Server {
    Server::new(ServerConfig::new(sim_keys()))
}

/// A SYN carrying `data`, from a fresh client on `port`.
fn syn(port: u16, data: &[u8]) -> (Client, Vec<u8>) {
    let mut c = Client::new(ClientConfig::default(), tuple(port), u32::from(port));
    c.connect(Instant::ZERO, data);
    let s = c.poll_transmit().unwrap();
    (c, s)
}

#[test]
fn queue_is_fifo_bounded_and_a_full_queue_costs_no_mac() {
    let mut srv = server();
    let mut q = EventQueue::new(2);
    let (a, b) = (tuple(1).client_addr, tuple(1).server_addr);
    for port in [1, 2] {
        let (_, s) = syn(port, &[port as u8]);
        q.push_segment(&mut srv, Instant::from_micros(10), a, b, &s)
            .unwrap();
    }
    let macs = srv.inbound_macs();
    let (_, s) = syn(3, b"x");
    assert_eq!(
        q.push_segment(&mut srv, Instant::from_micros(10), a, b, &s),
        Err(PushError::Full)
    );
    assert_eq!(
        srv.inbound_macs(),
        macs,
        "a full queue looked at the segment"
    );
    assert_eq!(q.stats().overflow, 1);
    // Garbage is refused and queues nothing.
    assert!(matches!(
        q.push_segment(&mut srv, Instant::from_micros(10), a, b, &[0u8; 40]),
        Err(PushError::Full)
    ));
    let first = q.pop().unwrap();
    assert_eq!((first.kind(), first.data()), (EventKind::Open, &[1u8][..]));
    assert!(matches!(
        q.push_segment(&mut srv, Instant::from_micros(10), a, b, &[0u8; 40]),
        Err(PushError::Rejected(_))
    ));
    assert_eq!(q.front().unwrap().data(), &[2u8]);
    let mem_one = q.memory_bytes();
    assert!(q.drop_front());
    assert!(q.is_empty());
    assert!(q.memory_bytes() < mem_one);
}

#[test]
fn minisocket_never_sends_more_than_allowed_and_sets_ucont_per_packet() {
    let mut srv = server();
    let mut q = EventQueue::new(8);
    let (mut client, s) = syn(7, b"GET");
    q.push_segment(
        &mut srv,
        Instant::from_micros(1_000),
        tuple(7).client_addr,
        tuple(7).server_addr,
        &s,
    )
    .unwrap();
    let mut msk = q.pop().unwrap();
    let n = msk.responses().len();
    assert!(n >= 2);
    assert_eq!(msk.set_ucont(n, b"x"), Err(MskError::NoSuchResponse(n)));
    msk.set_ucont(0, b"first").unwrap();
    let cap = msk.capacity();
    let big = vec![7u8; cap * 3];
    let mut segs = Vec::new();
    let report = msk
        .sendv(&srv, &[&big[..10], &big[10..]], false, &mut |s: &[u8]| {
            segs.push(s.to_vec())
        })
        .unwrap();
    assert_eq!(report.segments, n);
    assert!(report.bytes <= cap, "{} > {cap}", report.bytes);
    for s in &segs {
        client
            .handle_segment(Instant::from_micros(2_000), s)
            .unwrap();
    }
    assert_eq!(client.delivered(), report.bytes as u64);
}

#[test]
fn extract_install_round_trip_and_refuse_tampering_and_staleness() {
    let mut srv = server();
    let mut q = EventQueue::new(8);
    let (_, s) = syn(8, b"hello");
    q.push_segment(
        &mut srv,
        Instant::from_micros(1_000),
        tuple(8).client_addr,
        tuple(8).server_addr,
        &s,
    )
    .unwrap();
    let mut msk = q.extract(|m| m.data() == b"hello").pop().unwrap();
    assert!(q.is_empty());
    msk.set_ucont(1, b"second").unwrap();
    let key = MigrationKey::new(&[1; 16], 1_000_000);
    let bytes = msk.extract(&key, Instant::from_micros(5_000));
    let back = Minisocket::install(&key, &bytes, Instant::from_micros(6_000)).unwrap();
    assert_eq!(back, msk);
    for bit in (0..bytes.len() * 8).step_by(7) {
        let mut t = bytes.clone();
        t[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(
            Minisocket::install(&key, &t, Instant::from_micros(6_000)),
            Err(MskError::Mac),
            "bit {bit}"
        );
    }
    assert_eq!(
        Minisocket::install(
            &MigrationKey::new(&[2; 16], 1_000_000),
            &bytes,
            Instant::from_micros(6_000)
        ),
        Err(MskError::Mac)
    );
    assert_eq!(
        Minisocket::install(&key, &bytes, Instant::from_micros(2_000_000)),
        Err(MskError::Stale)
    );
    assert_eq!(
        Minisocket::install(&key, &bytes, Instant::from_micros(4_000)),
        Err(MskError::Stale)
    );
    assert_eq!(
        Minisocket::install(&key, &bytes[..3], Instant::from_micros(6_000)),
        Err(MskError::Malformed)
    );
    q.install(back).unwrap();
    assert_eq!(q.len(), 1);
}

fn cfgs() -> (ServerConfig, ClientConfig) {
    (ServerConfig::new(sim_keys()), ClientConfig::default())
}

#[test]
fn static_objects_arrive_exact_under_loss_and_reordering() {
    let app = static_objects::server_app();
    for (name, loss, jitter) in [
        (&b"/index.html"[..], 0u32, 0u64),
        (b"/index.html", 50_000, 3_000),
        (b"/big.bin", 20_000, 2_000),
        (b"/missing", 30_000, 0),
    ] {
        let mut run = AppRun::new(5_000, vec![[b"GET ", name, b"\n"].concat()]);
        run.loss_fwd_ppm = loss;
        run.loss_rev_ppm = loss;
        run.link.jitter = jitter;
        let (s, c) = cfgs();
        let out = run_app(&run, &|| Box::new(static_objects::server_app()), s, c);
        let want = app
            .objects
            .get(name)
            .cloned()
            .unwrap_or_else(|| static_objects::NOT_FOUND.to_vec());
        assert!(out.complete, "{name:?} {loss}: {out:?}");
        assert_eq!(out.received, want, "{name:?} {loss}");
    }
}

#[test]
fn a_request_line_longer_than_a_packet_goes_through_input_continuations() {
    let name = [b"/search?q=".as_slice(), &[b'x'; 3000]].concat();
    let (s, c) = cfgs();
    let mut run = AppRun::new(5_000, vec![[b"GET ", &name[..], b"\n"].concat()]);
    run.loss_rev_ppm = 50_000;
    let out = run_app(&run, &|| Box::new(static_objects::server_app()), s, c);
    assert!(out.complete, "{out:?}");
    assert_eq!(
        &out.received,
        static_objects::server_app().objects.get(&name).unwrap()
    );
    // The line took several requests (the SYN carries at most 1024 bytes).
    assert!(out.server.events >= 4, "{:?}", out.server);
}

#[test]
fn a_request_the_server_cannot_summarise_is_refused_cleanly() {
    let name = [b"/search?q=".as_slice(), &[b'x'; 3000]].concat();
    let (s, c) = cfgs();
    let run = AppRun::new(5_000, vec![[b"GET ", &name[..], b"\n"].concat()]);
    let out = run_app(
        &run,
        &|| {
            let mut app = static_objects::server_app();
            app.max_line = 1500;
            Box::new(app)
        },
        s,
        c,
    );
    assert!(out.reset, "{out:?}");
    assert!(out.received.is_empty());
    assert!(
        out.elapsed_us < 1_000_000,
        "refusal took {} µs",
        out.elapsed_us
    );
}

#[test]
fn watermark_regenerates_lost_blocks() {
    let param = 0x1234_5678_9abc_u64;
    for (loss, seed) in [(0u32, 1u64), (30_000, 2), (80_000, 3)] {
        let (s, c) = cfgs();
        let mut run = AppRun::new(10_000, vec![format!("MARK {param:x}\n").into_bytes()]);
        run.loss_fwd_ppm = loss;
        run.seed = seed;
        let out = run_app(&run, &|| Box::new(watermark::server_app()), s, c);
        let img = watermark::image();
        let mut want = Vec::new();
        watermark::mark(&img, param, 0, img.len(), &mut want);
        assert!(out.complete, "{loss}: {out:?}");
        assert_eq!(out.received, want, "loss {loss}");
        if loss > 0 {
            assert!(out.client.losses > 0);
        }
    }
}

#[test]
fn a_retransmitted_add_adds_once() {
    for (loss, seed) in [(0u32, 1u64), (100_000, 2), (200_000, 3), (100_000, 4)] {
        let (s, c) = cfgs();
        let mut run = AppRun::new(10_000, cart::requests());
        run.loss_rev_ppm = loss;
        run.loss_fwd_ppm = loss / 2;
        run.link.jitter = 4_000;
        run.seed = seed;
        let out = run_app(&run, &|| Box::new(cart::server_app()), s, c);
        assert!(out.complete, "{loss}/{seed}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.received),
            "receipt\napple x2\npear x1\nplum x1\nfig x1\nkiwi x1\n",
            "loss {loss} seed {seed}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// A server replaced mid-transfer — state gone, replay filter empty, a new application
    /// instance — with its queued minisockets migrated or not: the transfer completes
    /// byte-exact either way.
    #[test]
    fn failover_completes_byte_exact(
        at_ms in 1u64..60,
        migrate in any::<bool>(),
        interval_us in prop_oneof![Just(0u64), 100u64..3_000],
        loss in 0u32..30_000,
        seed in any::<u64>(),
    ) {
        let (s, c) = cfgs();
        let mut run = AppRun::new(5_000, vec![b"GET /big.bin\n".to_vec()]);
        run.service_interval_us = interval_us;
        run.failover = Some(Failover { at_us: at_ms * 1_000, migrate });
        run.loss_fwd_ppm = loss;
        run.seed = seed;
        let out = run_app(&run, &|| Box::new(static_objects::server_app()), s, c);
        prop_assert!(out.complete, "{:?}", out.server);
        prop_assert!(
            &out.received == static_objects::server_app().objects.get(&b"/big.bin"[..]).unwrap()
        );
        if !migrate {
            prop_assert_eq!(out.server.migrated, 0);
        }
    }
}

#[test]
fn migration_moves_queued_events_and_saves_the_stall() {
    let (s, c) = cfgs();
    let (mut with, mut without, mut moved) = (0u64, 0u64, 0u64);
    for at_us in (10_000..80_000).step_by(2_500) {
        let mut stalls = [0u64; 2];
        for (i, migrate) in [false, true].into_iter().enumerate() {
            let mut run = AppRun::new(5_000, vec![b"GET /big.bin\n".to_vec()]);
            run.service_interval_us = 2_000;
            run.failover = Some(Failover { at_us, migrate });
            let out = run_app(&run, &|| Box::new(static_objects::server_app()), s, c);
            assert!(out.complete, "{at_us} {migrate}: {:?}", out.server);
            if migrate {
                assert_eq!(out.server.dropped, 0);
                moved += out.server.migrated;
            } else {
                assert_eq!(out.server.migrated, 0);
            }
            stalls[i] = out.failover_stall_us.unwrap_or(0);
        }
        without += stalls[0];
        with += stalls[1];
    }
    assert!(moved > 0, "no failover found events queued");
    assert!(
        with < without,
        "stall with migration {with} µs, without {without} µs"
    );
}

#[test]
fn minisockets_with_delta_responses_migrate_intact() {
    let mut srv = server();
    let mut q = EventQueue::new(8);
    let cfg = ClientConfig {
        delta: true,
        ..ClientConfig::default()
    };
    let mut c = Client::new(cfg, tuple(11), 11);
    c.connect(Instant::ZERO, b"delta");
    let s = c.poll_transmit().unwrap();
    q.push_segment(
        &mut srv,
        Instant::from_micros(1_000),
        tuple(11).client_addr,
        tuple(11).server_addr,
        &s,
    )
    .unwrap();
    let msk = q.pop().unwrap();
    assert!(msk.responses().iter().any(|r| r.delta.is_some()));
    let key = MigrationKey::new(&[1; 16], 1_000_000);
    let back = Minisocket::install(
        &key,
        &msk.extract(&key, Instant::from_micros(2_000)),
        Instant::from_micros(2_000),
    )
    .unwrap();
    assert_eq!(back, msk);
    // The migrated minisocket's responses still rebuild at the client.
    let mut segs = Vec::new();
    back.send(&srv, b"hello", true, &mut |x: &[u8]| segs.push(x.to_vec()))
        .unwrap();
    for x in &segs {
        c.handle_segment(Instant::from_micros(3_000), x).unwrap();
    }
    let mut buf = [0u8; 16];
    let n = c.read(&mut buf);
    assert_eq!(&buf[..n], b"hello");
    assert!(c.stats().deltas_rebuilt > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Parallel objects in sparse regions (§5.2), requested in parallel or through one
    /// input stream, under loss both ways and reordering: the client reads exactly each
    /// object in order, the unused part of every region skipped. Through an input
    /// stream, an object longer than its region goes on through a fresh input
    /// continuation into fresh regions, and still arrives whole and in order (in parallel
    /// mode it is cut at its region's end).
    #[test]
    fn any_interleaving_of_parallel_objects_reassembles_each_object(
        n in 1u64..8,
        len in 1u64..30_000,
        region in 2_000u64..40_000,
        parallel in any::<bool>(),
        loss in 0u32..50_000,
        jitter in 0u64..3_000,
        seed in any::<u64>(),
        delayed in any::<bool>(),
    ) {
        use trickles::sim::app::PipelineApp;
        let (mut s, mut c) = cfgs();
        // Either acknowledgment mode (the daemons run with delayed acks).
        s.cc.delayed_ack = delayed;
        c.cc.delayed_ack = delayed;
        let mut run = AppRun::new(5_000, PipelineApp::requests(n, len));
        run.framed = parallel;
        run.loss_fwd_ppm = loss;
        run.loss_rev_ppm = loss / 2;
        run.link.jitter = jitter;
        run.seed = seed;
        let out = run_app(&run, &|| Box::new(PipelineApp::new(&[3; 16], region, parallel)), s, c);
        prop_assert!(out.complete, "{:?} {:?}", out.client, out.server);
        let want = PipelineApp::new(&[3; 16], region, parallel).expected(n, len);
        prop_assert!(out.received == want, "{} bytes, want {}", out.received.len(), want.len());
    }
}

#[test]
fn send_object_serves_each_range_from_its_place_in_the_object() {
    let mut srv = server();
    let mut q = EventQueue::new(8);
    // Acknowledging every packet, so all three of the SYN's answers carry a continuation
    // and the same amount of data.
    let mut cfg = ClientConfig::default();
    cfg.cc.delayed_ack = false;
    let mut client = Client::new(cfg, tuple(12), 12);
    client.connect(Instant::ZERO, b"GET");
    let s = client.poll_transmit().unwrap();
    q.push_segment(
        &mut srv,
        Instant::from_micros(1_000),
        tuple(12).client_addr,
        tuple(12).server_addr,
        &s,
    )
    .unwrap();
    let msk = q.pop().unwrap();
    // The SYN asked for 0..1362, 1362..2724, 2724..4086; the object sits at 1362..3362.
    let object: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
    let mut segs = Vec::new();
    let report = msk
        .send_object(&srv, 1362, &object, true, &mut |x: &[u8]| {
            segs.push(x.to_vec())
        })
        .unwrap();
    assert_eq!(report.bytes, 2000);
    let mut by_offset = Vec::new();
    for x in &segs {
        let p = trickles::wire::parse_segment(&tuple(12).server_addr, &tuple(12).client_addr, x)
            .unwrap();
        let r = trickles::wire::Response::parse(p.payload).unwrap();
        by_offset.push((r.offset, r.data.to_vec(), r.end_of_stream));
        let _ = client.handle_segment(Instant::from_micros(2_000), x);
    }
    by_offset.sort();
    assert!(
        by_offset[0].1.is_empty(),
        "the range before the object carries none of it"
    );
    assert_eq!(by_offset[1].1, object[..1362]);
    assert_eq!(
        (by_offset[2].1.as_slice(), by_offset[2].2),
        (&object[1362..], true)
    );
}

/// §5.2: objects longer than their regions, requested through one input stream, go on
/// through fresh input continuations into fresh regions: each arrives whole and in
/// order, with and without loss.
#[test]
fn objects_longer_than_their_regions_continue_in_fresh_regions() {
    use trickles::sim::app::PipelineApp;
    for (n, len, region, loss) in [
        (1, 10_000, 3_000, 0),
        (4, 20_000, 8_192, 0),
        (5, 9_000, 4_000, 20_000),
        (3, 50_000, 7_000, 10_000),
    ] {
        let (s, c) = cfgs();
        let mut run = AppRun::new(5_000, PipelineApp::requests(n, len));
        run.loss_fwd_ppm = loss;
        run.loss_rev_ppm = loss;
        let app = || Box::new(PipelineApp::new(&[3; 16], region, false)) as Box<_>;
        let out = run_app(&run, &app, s, c);
        assert!(
            out.complete,
            "n {n} len {len} region {region}: {:?}",
            out.client
        );
        let want = PipelineApp::new(&[3; 16], region, false).expected(n, len);
        assert_eq!(
            out.received.len(),
            want.len(),
            "n {n} len {len} region {region}"
        );
        let first = out.received.iter().zip(&want).position(|(a, b)| a != b);
        if let Some(f) = first {
            let got = &out.received[f..f + 16];
            let whence: Vec<(u64, u64)> = (0..n)
                .flat_map(|k| (0..len).map(move |i| (k, i)))
                .filter(|&(k, i)| (0..16).all(|j| PipelineApp::byte(k, i + j) == got[j as usize]))
                .collect();
            eprintln!("at {f}: bytes of {whence:?}; client {:?}", out.client);
        }
        assert!(
            out.received == want,
            "n {n} len {len} region {region}: first difference at {first:?}"
        );
    }
}

/// Application-limited: while the client waits for the next object's continuation (SKIP
/// alone, one request line per round trip), it parks the continuations it cannot use
/// instead of bouncing empty requests at the window's pace; with parking off, the same
/// run sends over ten times the requests, growing the window on nothing.
#[test]
fn an_application_limited_client_parks_its_continuations() {
    use trickles::sim::app::PipelineApp;
    let run = |park_max_us| {
        let (s, mut c) = cfgs();
        c.park_max_us = park_max_us;
        let mut run = AppRun::new(5_000, PipelineApp::requests(10, 5_000));
        run.framed = false;
        let app = || Box::new(PipelineApp::new(&[3; 16], 10_000, false)) as Box<_>;
        let out = run_app(&run, &app, s, c);
        assert!(out.complete);
        assert!(out.received == PipelineApp::new(&[3; 16], 10_000, false).expected(10, 5_000));
        out
    };
    let parked = run(500_000);
    let eager = run(0);
    // 10 objects of 4 responses each, one request line per round trip.
    assert!(parked.client.requests < 200, "{:?}", parked.client);
    assert_eq!(parked.client.losses, 0, "{:?}", parked.client);
    assert!(
        eager.client.requests > 10 * parked.client.requests,
        "{:?}",
        eager.client
    );
    // The eager client's window grew on empty exchanges; the parked one's did not (as
    // TCP's does not while application-limited): at most a round trip more here.
    assert!(
        parked.elapsed_us <= eager.elapsed_us + 10_000,
        "{} {}",
        parked.elapsed_us,
        eager.elapsed_us
    );
}

/// The same application-limited client with delayed acknowledgments: its parked
/// continuations are spent with the SACK proof of their own moment, so nothing reads as
/// lost (spent with a later proof, each was refused and its packets counted as losses).
#[test]
fn parked_continuations_with_delayed_acks_lose_nothing() {
    use trickles::sim::app::PipelineApp;
    let (mut s, mut c) = cfgs();
    s.cc.delayed_ack = true;
    c.cc.delayed_ack = true;
    let mut run = AppRun::new(5_000, PipelineApp::requests(10, 5_000));
    run.framed = false;
    let app = || Box::new(PipelineApp::new(&[3; 16], 10_000, false)) as Box<_>;
    let out = run_app(&run, &app, s, c);
    assert!(out.complete, "{:?}", out.client);
    assert!(out.received == PipelineApp::new(&[3; 16], 10_000, false).expected(10, 5_000));
    assert_eq!(out.client.losses, 0, "{:?}", out.client);
    assert_eq!(out.client.timeouts, 0, "{:?}", out.client);
    assert!(out.client.requests < 200, "{:?}", out.client);
}

/// A client idle for longer than its parked continuations stay fresh (and its
/// retransmit timeout) speaks again: the new request goes out at once through a timeout
/// request, and the object arrives.
#[test]
fn a_client_idle_past_its_horizon_speaks_again() {
    use trickles::sim::app::PipelineApp;
    for framed in [false, true] {
        let (s, c) = cfgs();
        let mut all = PipelineApp::requests(3, 5_000);
        let last = all.pop().unwrap_or_default();
        let mut run = AppRun::new(5_000, all);
        run.framed = framed;
        run.late = Some((3_000_000, vec![last]));
        let app = || Box::new(PipelineApp::new(&[3; 16], 10_000, framed)) as Box<_>;
        let out = run_app(&run, &app, s, c);
        assert!(out.complete, "{framed}: {:?}", out.client);
        let want = PipelineApp::new(&[3; 16], 10_000, framed).expected(3, 5_000);
        assert!(out.received == want, "{framed}");
        // Done a few round trips after speaking again, not after a backed-off timeout.
        assert!(out.elapsed_us < 3_200_000, "{framed}: {}", out.elapsed_us);
        assert!(out.client.requests < 200, "{framed}: {:?}", out.client);
    }
}
