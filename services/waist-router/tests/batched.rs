//! The batched link layer under a router, on loopback: UDP GSO bursts come in as GRO runs
//! and are forwarded datagram by datagram (and leave again as GSO runs); datagrams a link
//! cannot carry (oversize, empty) are counted by reason and the books still balance; a
//! flooded link does not starve a quiet neighbour's ping, nor a scrape.
//!
//! ```text
//!  generator ──GSO bursts──► [in] router [out] ──GSO runs / sendmmsg──► sink (GRO or plain)
//!  flood ──GSO, flat out──► [a] router [b] ──► sink (never read)
//!                    pinger ◄──echo──► [c]
//! ```
//!
//! Every link says `batch = true`, as configs written for the earlier link layer did: that
//! layer read the first datagram after a wake-up with a plain `recv`, which glued a GRO run
//! into one frame (the node, trimming it to its IP length, forwarded only its first packet).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod batched_support;

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use batched_support::{
    Flood, MIN_PACKET, PATIENCE, Sink, counters, forwarded, free, generator, link, metric, packet,
    router, scrape, send_run, try_scrape, wait_until,
};
use netio::link::SHIM_ROOM;

/// IP packet sizes of the bursts.
const SIZES: [usize; 4] = [64, 576, 1000, 1400];
/// Packets one GSO `sendmsg` carries.
const BURST: usize = 8;
/// Bursts of each size (every other one with a shorter last packet).
const BURSTS: usize = 4;
/// Single datagrams after each size's bursts.
const SINGLES: usize = 3;

/// One run of the generator through a router to a sink with GRO on (`gro`) or a plain one.
fn bursts_through_a_router(gro: bool) {
    let (r_in, r_out) = (free(), free());
    let sink = Sink::start(gro);
    let (gen_sock, gen_state) = generator(r_in);
    assert!(
        gen_state.max_gso_segments() >= BURST,
        "this kernel sends no UDP GSO runs of {BURST} (max {})",
        gen_state.max_gso_segments()
    );
    let gen_addr = gen_sock.local_addr().unwrap();
    let r = router(
        &[
            link("in", r_in, gen_addr, ""),
            link("out", r_out, sink.addr, ""),
        ],
        &[("10.2.0.0/16", "out")],
    );

    let mut sent: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut next = 0u32;
    let mut make = |len: usize, sent: &mut BTreeMap<u32, Vec<u8>>| {
        let p = packet(next, len);
        sent.insert(next, p.clone());
        next += 1;
        p
    };
    // Each burst leaves the generator as one GSO sendmsg, each single as one send.
    let (mut bursts, mut singles) = (0usize, 0usize);
    let mut stalled = None;
    'sizes: for size in SIZES {
        for b in 0..BURSTS {
            // Every other burst ends in a shorter segment: a valid packet of its own.
            let run: Vec<Vec<u8>> = (0..BURST)
                .map(|k| {
                    let short = b % 2 == 1 && k == BURST - 1;
                    make(if short { size - 17 } else { size }, &mut sent)
                })
                .collect();
            send_run(&gen_sock, &gen_state, &run);
            bursts += 1;
            // Paced: the generator must not overflow the router's or the sink's socket.
            std::thread::sleep(Duration::from_millis(1));
        }
        for k in 0..SINGLES {
            let len = if k == 0 {
                size
            } else {
                (size / (k + 1)).max(MIN_PACKET)
            };
            send_run(&gen_sock, &gen_state, &[make(len, &mut sent)]);
            singles += 1;
        }
        // At most one size's worth of packets in flight: no socket on the way overflows,
        // however slow a loaded machine runs the router.
        if !sink.wait_for(sent.len()) {
            stalled = Some(sent.len());
            break 'sizes;
        }
    }
    let total = sent.len();
    // Anything sent twice would come now.
    std::thread::sleep(Duration::from_millis(50));
    let s = r.stop().unwrap();
    let got = sink.finish();

    // Every packet exactly once, byte for byte (TTL one lower, checksum valid).
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    let mut bad = Vec::new();
    for d in &got.datagrams {
        match forwarded(d, &sent) {
            Ok(seq) => *seen.entry(seq).or_default() += 1,
            Err(e) => bad.push(e),
        }
    }
    let missing: Vec<u32> = sent
        .keys()
        .filter(|k| !seen.contains_key(k))
        .copied()
        .collect();
    let twice: Vec<(&u32, &usize)> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        bad.is_empty() && missing.is_empty() && twice.is_empty() && stalled.is_none(),
        "sink (gro {gro}) got {} datagrams of {total} sent (stalled at {stalled:?}); \
         {} malformed, first {:?}; missing {missing:?}; more than once {twice:?}; router {s:?}",
        got.datagrams.len(),
        bad.len(),
        bad.first(),
    );
    assert_eq!(got.datagrams.len(), total);

    // The books: every datagram counted once at the link, and either handed to the node
    // or dropped there with a reason (none here: all fit the MTU).
    let (i, o) = (counters(&s, "in"), counters(&s, "out"));
    let n = total as u64;
    assert_eq!(i.rx_frames, n, "{i:?}");
    assert_eq!(i.rx_dropped(), 0, "{i:?}");
    assert_eq!(i.rx_frames, s.node.received + i.rx_dropped(), "{i:?} {s:?}");
    assert_eq!(i.rx_delivered(), s.node.received);
    assert!(s.node.balanced(), "{:?}", s.node);
    assert_eq!(s.node.forwarded, n, "{:?}", s.node);
    assert_eq!(o.tx_frames, s.node.forwarded, "{o:?}");
    assert_eq!((o.tx_full, o.tx_errors, o.refused), (0, 0, 0), "{o:?}");
    // Batched both ways: a burst arrives as one GRO message (one receive call at most) and
    // leaves as one GSO sendmsg; a single takes at most one sendmmsg.
    let sends = (bursts + singles) as u64;
    assert!(i.rx_calls <= sends, "{} receive calls: {i:?}", i.rx_calls);
    assert!(o.tx_calls <= sends, "{} send calls: {o:?}", o.tx_calls);
    assert!(o.tx_calls * 3 <= o.tx_frames, "{o:?}");
    if gro {
        // The runs reached the sink as runs: they went out with GSO.
        assert!(
            got.messages * 2 <= got.datagrams.len(),
            "{} messages for {} datagrams",
            got.messages,
            got.datagrams.len()
        );
    } else {
        assert_eq!(got.messages, got.datagrams.len());
    }
    println!(
        "gro sink {gro}: {total} packets in {bursts} bursts and {singles} singles; \
         in: {} receive calls, out: {} send calls; sink: {} messages",
        i.rx_calls, o.tx_calls, got.messages
    );
}

#[test]
fn gso_bursts_are_forwarded_datagram_by_datagram() {
    bursts_through_a_router(true);
    bursts_through_a_router(false);
}

#[test]
fn oversize_and_empty_datagrams_are_counted_not_lost() {
    const MTU: usize = 1000;
    let limit = MTU + SHIM_ROOM;
    let (r_in, r_out) = (free(), free());
    let sink = Sink::start(false);
    let (gen_sock, gen_state) = generator(r_in);
    let r = router(
        &[
            link(
                "in",
                r_in,
                gen_sock.local_addr().unwrap(),
                &format!("mtu = {MTU}"),
            ),
            link("out", r_out, sink.addr, ""),
        ],
        &[("10.2.0.0/16", "out")],
    );
    let send = |packets: &[Vec<u8>]| send_run(&gen_sock, &gen_state, packets);
    // Good packets carry 0..; the others 100.., never expected at the sink.
    let mut good = BTreeMap::new();
    let mut keep = |seq: u32, len: usize| {
        let p = packet(seq, len);
        good.insert(seq, p.clone());
        p
    };
    let (mut frames, mut oversize, mut empty) = (0u64, 0u64, 0u64);
    for seq in 0..4 {
        send(&[keep(seq, 100)]);
        frames += 1;
    }
    // Exactly the longest frame the link hands on (room for a shim in front of an MTU).
    send(&[keep(4, limit)]);
    frames += 1;
    // One byte more, and far more.
    for (k, len) in [limit + 1, 1500, 9000, 60_000].into_iter().enumerate() {
        send(&[packet(100 + k as u32, len)]);
        frames += 1;
        oversize += 1;
    }
    // A GSO run of oversize datagrams whose short last one fits: only that one goes on.
    send(&[
        packet(110, 1100),
        packet(111, 1100),
        packet(112, 1100),
        keep(5, 500),
    ]);
    frames += 4;
    oversize += 3;
    // A GSO run all oversize.
    send(&(120..124).map(|s| packet(s, 2000)).collect::<Vec<_>>());
    frames += 4;
    oversize += 4;
    for _ in 0..5 {
        gen_sock.send(&[]).unwrap();
        frames += 1;
        empty += 1;
    }
    send(&[keep(6, 100)]);
    frames += 1;
    let delivered = good.len() as u64;

    // The metrics endpoint: everything counted at the link, drops by reason.
    let rx = "waist_link_rx_frames_total{link=\"in\"}";
    let mut page = String::new();
    let counted = wait_until(PATIENCE, || {
        page = scrape(&r);
        metric(&page, rx) == Some(frames as f64)
    });
    assert!(counted, "{rx} should be {frames}: {page}");
    let dropped = |reason: &str| {
        metric(
            &page,
            &format!("waist_link_rx_dropped_total{{link=\"in\",reason=\"{reason}\"}}"),
        )
    };
    assert_eq!(dropped("oversize"), Some(oversize as f64), "{page}");
    assert_eq!(dropped("empty"), Some(empty as f64), "{page}");
    assert_eq!(dropped("truncated"), Some(0.0), "{page}");
    assert_eq!(dropped("offload"), Some(0.0), "{page}");
    assert_eq!(
        metric(&page, "waist_frames_received_total"),
        Some(delivered as f64),
        "{page}"
    );

    // The good ones, and only those, reach the sink.
    let have = sink.wait_for(good.len());
    std::thread::sleep(Duration::from_millis(50));
    let s = r.stop().unwrap();
    let got = sink.finish();
    let seqs: Result<Vec<u32>, String> =
        got.datagrams.iter().map(|d| forwarded(d, &good)).collect();
    assert_eq!(
        seqs,
        Ok(good.keys().copied().collect::<Vec<u32>>()),
        "(all there in time: {have}) {s:?}"
    );

    let i = counters(&s, "in");
    assert_eq!(
        (i.rx_frames, i.rx_oversize, i.rx_empty, i.rx_truncated),
        (frames, oversize, empty, 0),
        "{i:?}"
    );
    assert_eq!(i.rx_dropped(), oversize + empty);
    assert_eq!(i.rx_frames, s.node.received + i.rx_dropped(), "{i:?} {s:?}");
    assert_eq!(s.node.received, delivered);
    assert_eq!(s.node.forwarded, delivered);
    assert!(s.node.balanced(), "{:?}", s.node);
}

/// What [`ping_through_a_flood`] saw.
struct PingRun {
    /// Each ping's round trip, by sequence number.
    rtts: Vec<Duration>,
    /// How long a scrape asked for just after the first ping took (or why it failed).
    scrape: Result<Duration, String>,
}

impl PingRun {
    fn sorted(&self) -> Vec<Duration> {
        let mut r = self.rtts.clone();
        r.sort();
        r
    }

    fn median(&self) -> Duration {
        self.sorted()[self.rtts.len() / 2]
    }

    fn slowest(&self) -> Duration {
        self.sorted()[self.rtts.len() - 1]
    }
}

/// Floods link A of a router (out through B to a neighbour that never reads) for at least
/// two seconds while C's neighbour pings the router 100 times, 100 a second, and a scrape
/// asks for the metrics; checks that every ping is answered (within [`PATIENCE`]) with the
/// right reply, that the flood reached the router and the books balance.
fn ping_through_a_flood() -> PingRun {
    const PINGS: u16 = 100;
    const IDENT: u16 = 0x5a5a;
    const FLOOD_FOR: Duration = Duration::from_secs(2);
    let (r_a, r_b, r_c) = (free(), free(), free());
    let (flood, flood_state) = generator(r_a);
    // B's neighbour never reads: its queue fills and the kernel drops there; the router's
    // sends still succeed.
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let pinger = UdpSocket::bind("127.0.0.1:0").unwrap();
    pinger.connect(r_c).unwrap();
    pinger
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let r = router(
        &[
            link("a", r_a, flood.local_addr().unwrap(), ""),
            link("b", r_b, sink.local_addr().unwrap(), ""),
            link("c", r_c, pinger.local_addr().unwrap(), ""),
        ],
        &[("10.2.0.0/16", "b"), ("10.3.0.0/16", "c")],
    );

    // The flood: GSO runs of 1400-byte packets as fast as the socket takes them.
    let flooder = Flood::start(flood, flood_state);
    let flood_start = Instant::now();

    // The replies, as they come.
    let stop = Arc::new(AtomicBool::new(false));
    let answered: Arc<Mutex<BTreeMap<u16, Instant>>> = Arc::default();
    let listener = {
        let (answered, stop) = (answered.clone(), stop.clone());
        let s = pinger.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            let mut wrong = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let Ok(n) = s.recv(&mut buf) else { continue };
                let Ok((ip, m)) = waist_ip::icmp::read(&buf[..n]) else {
                    wrong.push(buf[..n].to_vec());
                    continue;
                };
                let seq = u16::from_be_bytes([m.rest[2], m.rest[3]]);
                let ok = m.kind == 0
                    && ip.src == std::net::IpAddr::from([10, 0, 0, 1])
                    && ip.dst == std::net::IpAddr::from([10, 3, 0, 5])
                    && m.rest[..2] == IDENT.to_be_bytes()
                    && m.body == format!("ping {seq}").as_bytes();
                if ok {
                    answered.lock().unwrap().insert(seq, Instant::now());
                } else {
                    wrong.push(buf[..n].to_vec());
                }
            }
            wrong
        })
    };

    // Let the flood build up, then ping the router from C at 100 a second.
    std::thread::sleep(Duration::from_millis(200));
    let mut sent_at = BTreeMap::new();
    let mut scraper = None;
    let start = Instant::now();
    for seq in 0..PINGS {
        let due = start + Duration::from_millis(10) * u32::from(seq);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let mut ping = [0u8; 64];
        let n = waist_ip::icmp::emit_echo_request(
            [10, 3, 0, 5].into(),
            [10, 0, 0, 1].into(),
            IDENT,
            seq,
            format!("ping {seq}").as_bytes(),
            &mut ping,
        )
        .unwrap();
        pinger.send(&ping[..n]).unwrap();
        sent_at.insert(seq, Instant::now());
        if seq == 0 {
            let metrics = r.metrics().unwrap();
            scraper = Some(std::thread::spawn(move || {
                let asked = Instant::now();
                // Not PATIENCE: the flood goes on until this returns.
                try_scrape(metrics, Duration::from_secs(5))
                    .map(|_| asked.elapsed())
                    .map_err(|e| format!("{e} after {:?}", asked.elapsed()))
            }));
        }
    }
    let all = wait_until(PATIENCE, || {
        answered.lock().unwrap().len() == usize::from(PINGS)
    });
    let scrape = scraper.unwrap().join().unwrap();
    let flooding = flood_start.elapsed();
    if let Some(rest) = FLOOD_FOR.checked_sub(flooding) {
        std::thread::sleep(rest);
    }
    let flooded = flooder.stop();
    stop.store(true, Ordering::Relaxed);
    let wrong = listener.join().unwrap();
    let s = r.stop().unwrap();
    drop(sink);

    let answered = answered.lock().unwrap().clone();
    let missing: Vec<u16> = (0..PINGS).filter(|q| !answered.contains_key(q)).collect();
    let (a, b, c) = (counters(&s, "a"), counters(&s, "b"), counters(&s, "c"));
    assert!(
        all && missing.is_empty(),
        "{} of {PINGS} pings answered; missing {missing:?}; {} wrong replies; a {a:?} c {c:?} node {:?}",
        answered.len(),
        wrong.len(),
        s.node
    );
    assert!(wrong.is_empty(), "{} wrong replies", wrong.len());
    // The flood was real.
    assert!(
        a.rx_frames >= 10_000,
        "the flood hardly reached the router: {a:?}"
    );
    // C carried the pings and their replies, nothing else; the books balance.
    assert_eq!(
        (c.rx_frames, c.tx_frames),
        (u64::from(PINGS), u64::from(PINGS)),
        "{c:?}"
    );
    assert_eq!(
        a.rx_frames + b.rx_frames + c.rx_frames,
        s.node.received + a.rx_dropped() + b.rx_dropped() + c.rx_dropped(),
        "{s:?}"
    );
    assert!(s.node.balanced(), "{:?}", s.node);
    assert!(s.node.delivered >= u64::from(PINGS), "{:?}", s.node);
    let run = PingRun {
        rtts: sent_at
            .iter()
            .map(|(q, t)| answered[q].saturating_duration_since(*t))
            .collect(),
        scrape,
    };
    println!(
        "flood: {flooded} packets sent, {} reached the router, {} forwarded in {:?}; \
         pings: median {:?}, slowest {:?}; scrape {:?}",
        a.rx_frames,
        b.tx_frames,
        FLOOD_FOR.max(flooding),
        run.median(),
        run.slowest(),
        run.scrape,
    );
    run
}

/// Every ping answered beside a flood, and promptly, and a scrape too. This guards the
/// router loop: under a flood tokio refreshes the other links' readiness only when the
/// router task yields (without the yield after a full `ROUND`, only when its cooperative
/// budget of 128 ready polls ran out: a quarter of a million frames, seconds in a debug
/// build), and a biased `select!` that polls the scrape channel after the links leaves a
/// scrape waiting until the flooded link is empty.
#[test]
fn a_flooded_link_does_not_starve_a_ping() {
    let run = ping_through_a_flood();
    // Generous for a loaded 2-core machine: a turn takes milliseconds, not seconds.
    assert!(
        run.slowest() < Duration::from_secs(5),
        "a ping took {:?}",
        run.slowest()
    );
    assert!(
        run.median() < Duration::from_millis(500),
        "ping median {:?}",
        run.median()
    );
    assert!(
        run.scrape
            .as_ref()
            .is_ok_and(|t| *t < Duration::from_secs(3)),
        "scrape during the flood: {:?}",
        run.scrape
    );
}
