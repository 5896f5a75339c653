//! The simulator's promises: exact timing, seeded repeatability, link impairments at their
//! configured rates, FIFO links without jitter, timers on time.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use netsim::{Instant, LinkConfig, Node, NodeId, Outbox, Simulator};
use proptest::prelude::*;

/// Records every arrival; optionally echoes on the same interface.
#[derive(Default)]
struct Probe {
    got: Vec<(Instant, usize, Vec<u8>)>,
    echo: bool,
    /// Wake-ups requested, in order; each handled one is removed and recorded.
    timers: Vec<Instant>,
    woke: Vec<Instant>,
}

impl Node for Probe {
    fn handle_packet(&mut self, now: Instant, iface: usize, p: Vec<u8>, out: &mut Outbox) {
        if self.echo {
            out.send(iface, p.clone());
        }
        self.got.push((now, iface, p));
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.timers.remove(0);
        self.woke.push(now);
        out.send(0, b"tick".to_vec());
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().copied()
    }
}

fn pair(seed: u64, config: LinkConfig) -> (Simulator<Probe>, NodeId, NodeId) {
    let mut sim = Simulator::new(seed);
    let a = sim.add_node(Probe::default());
    let b = sim.add_node(Probe::default());
    sim.connect(a, b, config);
    (sim, a, b)
}

fn send_many(sim: &mut Simulator<Probe>, from: NodeId, n: u32, spacing: u64) {
    for i in 0..n {
        sim.act(from, |_, _, out| out.send(0, i.to_be_bytes().to_vec()));
        let next = sim.now().saturating_add(spacing);
        sim.run_until(next);
    }
    sim.run(u64::MAX);
}

fn seqs(p: &Probe) -> Vec<u32> {
    p.got
        .iter()
        .map(|(_, _, b)| u32::from_be_bytes(b[..4].try_into().unwrap()))
        .collect()
}

#[test]
fn perfect_link_delivers_in_order_after_exactly_its_delay() {
    let (mut sim, a, b) = pair(1, LinkConfig::with_delay(7));
    send_many(&mut sim, a, 50, 3);
    let got = &sim.node(b).got;
    assert_eq!(seqs(sim.node(b)), (0..50).collect::<Vec<_>>());
    for (i, (t, iface, _)) in got.iter().enumerate() {
        assert_eq!((t.ticks(), *iface), (i as u64 * 3 + 7, 0));
    }
}

#[test]
fn echo_round_trip_and_interface_numbers() {
    let mut sim = Simulator::new(2);
    let hub = sim.add_node(Probe {
        echo: true,
        ..Probe::default()
    });
    let x = sim.add_node(Probe::default());
    let y = sim.add_node(Probe::default());
    sim.connect(hub, x, LinkConfig::with_delay(2));
    sim.connect(hub, y, LinkConfig::with_delay(5));
    assert_eq!(sim.iface_count(hub), 2);
    assert_eq!(sim.peer(hub, 1), Some((y, 0)));
    assert_eq!(sim.peer(x, 0), Some((hub, 0)));
    assert_eq!(sim.peer(x, 1), None);
    sim.act(y, |_, _, out| out.send(0, b"hi".to_vec()));
    sim.run(10);
    assert_eq!(
        sim.node(hub).got[0].1,
        1,
        "arrived on the hub's second interface"
    );
    assert_eq!(
        sim.node(y).got[0].0.ticks(),
        10,
        "echoed back over the 5-tick link"
    );
    assert!(sim.node(x).got.is_empty());
}

#[test]
fn timers_fire_on_time_and_in_order() {
    let mut sim = Simulator::new(3);
    let a = sim.add_node(Probe {
        timers: vec![
            Instant::from_ticks(5),
            Instant::from_ticks(9),
            Instant::from_ticks(30),
        ],
        ..Probe::default()
    });
    let b = sim.add_node(Probe::default());
    sim.connect(a, b, LinkConfig::with_delay(1));
    sim.run_until(Instant::from_ticks(20));
    assert_eq!(
        sim.node(a).woke,
        [Instant::from_ticks(5), Instant::from_ticks(9)]
    );
    assert_eq!(sim.now(), Instant::from_ticks(20));
    sim.run(u64::MAX);
    assert_eq!(sim.node(a).woke.len(), 3);
    assert_eq!(
        sim.node(b)
            .got
            .iter()
            .map(|g| g.0.ticks())
            .collect::<Vec<_>>(),
        [6, 10, 31]
    );
}

#[test]
fn link_down_loses_everything_and_mtu_drops_big_packets() {
    let (mut sim, a, b) = pair(4, LinkConfig::with_delay(1).mtu(100));
    let link = netsim::LinkId(0);
    sim.act(a, |_, _, out| {
        out.send(0, vec![0; 100]);
        out.send(0, vec![0; 101]);
        out.send(3, vec![0; 10]); // no such interface
    });
    sim.set_link_up(link, false);
    sim.act(a, |_, _, out| out.send(0, vec![1]));
    sim.run(u64::MAX);
    let s = sim.link_stats(link);
    assert_eq!((s.sent, s.delivered, s.too_big, s.lost), (3, 1, 1, 1));
    assert_eq!(sim.misrouted(), 1);
    assert_eq!(sim.node(b).got.len(), 1);
}

fn run_lossy(seed: u64) -> (Vec<u32>, netsim::LinkStats) {
    let config = LinkConfig::with_delay(10)
        .loss_ppm(200_000)
        .duplicate_ppm(100_000)
        .jitter(20);
    let (mut sim, a, b) = pair(seed, config);
    send_many(&mut sim, a, 5_000, 1);
    (seqs(sim.node(b)), sim.link_stats(netsim::LinkId(0)))
}

#[test]
fn impairments_happen_at_their_rates_and_repeat_with_the_seed() {
    let (got, s) = run_lossy(9);
    assert_eq!(s.sent, 5_000);
    assert!((900..1_100).contains(&s.lost), "lost {}", s.lost);
    assert!(
        (300..500).contains(&s.duplicated),
        "duplicated {}",
        s.duplicated
    );
    assert_eq!(got.len() as u64, s.delivered);
    assert_eq!(s.delivered, s.sent - s.lost + s.duplicated);
    let reordered = got.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(
        reordered > 500,
        "jitter of 20 over 1-tick spacing reorders: {reordered}"
    );
    // Same seed, same run; another seed, another run.
    assert_eq!(run_lossy(9), (got.clone(), s));
    assert_ne!(run_lossy(10).0, got);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Without jitter a link never reorders, whatever the loss, duplication and spacing;
    /// every arrival is exactly one delay after some send.
    #[test]
    fn no_jitter_means_fifo(
        seed in any::<u64>(),
        delay in 0u64..50,
        loss in 0u32..500_000,
        dup in 0u32..500_000,
        gaps in proptest::collection::vec(0u64..5, 1..200),
    ) {
        let config = LinkConfig::with_delay(delay).loss_ppm(loss).duplicate_ppm(dup);
        let (mut sim, a, b) = pair(seed, config);
        let mut sent_at = Vec::new();
        for (i, gap) in gaps.iter().enumerate() {
            let t = sim.now().saturating_add(*gap);
            sim.run_until(t);
            sent_at.push(sim.now().ticks());
            sim.act(a, |_, _, out| out.send(0, (i as u32).to_be_bytes().to_vec()));
        }
        sim.run(u64::MAX);
        let got = seqs(sim.node(b));
        prop_assert!(got.windows(2).all(|w| w[0] <= w[1]), "{:?}", got);
        for ((t, _, _), s) in sim.node(b).got.iter().zip(&got) {
            prop_assert_eq!(t.ticks(), sent_at[*s as usize] + delay);
        }
    }
}
