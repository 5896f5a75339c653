//! The TCP baseline: smoltcp's TCP over the same simulated links as Trickles, and the two
//! compared. Only what must hold is asserted (transfers complete byte-exact); the goodput
//! ratio against the goal (≥ 0.95× TCP; the paper reached 0.93×) is printed — run with
//! `--nocapture` to see it.

use trickles::client::ClientConfig;
use trickles::server::ServerConfig;
use trickles::sim::tcp::{self, TcpConfig};
use trickles::sim::{self, LinkConfig, Transfer};

fn trickles(t: &Transfer) -> sim::Outcome {
    sim::run(t, ServerConfig::new(sim::sim_keys()), ClientConfig::default())
}

/// A 100 Mb/s bottleneck of one-way `delay_us`, queueing one bandwidth-delay product.
fn bottleneck(len: u64, delay_us: u64) -> Transfer {
    let mut t = Transfer::new(len, delay_us);
    t.link = LinkConfig::with_delay(delay_us).rate(100, (2 * delay_us).max(1_000));
    t
}

#[test]
fn tcp_loss_free_transfers_arrive_byte_exact() {
    for len in [1u64, 1460, 1461, 100_000, 1_000_000] {
        let o = tcp::run_tcp(&Transfer::new(len, 5_000));
        assert!(o.complete && o.byte_exact, "len {len}: {o:?}");
        assert_eq!(o.received, len);
        assert_eq!(o.client.retransmissions, 0, "len {len}: {o:?}");
    }
    let o = tcp::run_tcp(&bottleneck(2_000_000, 5_000));
    assert!(o.complete && o.byte_exact, "{o:?}");
    assert!(o.goodput_mbps() < 100.0, "{o:?}");
}

#[test]
fn tcp_lossy_transfers_arrive_byte_exact() {
    for (fwd, rev) in [(10_000, 0), (0, 10_000), (10_000, 10_000)] {
        for seed in 1..=3 {
            let mut t = bottleneck(1_000_000, 5_000);
            t.loss_fwd_ppm = fwd;
            t.loss_rev_ppm = rev;
            t.seed = seed;
            let o = tcp::run_tcp(&t);
            assert!(o.complete && o.byte_exact, "loss {fwd}/{rev} seed {seed}: {o:?}");
        }
    }
}

#[test]
fn tcp_mss_follows_the_config() {
    let t = Transfer::new(13_620, 1_000);
    let full = tcp::run_tcp(&t);
    let small = tcp::run_tcp_with(&t, &TcpConfig { mss: 1362, ..TcpConfig::default() });
    assert!(full.complete && full.byte_exact && small.complete && small.byte_exact);
    assert!(small.server.responses >= full.server.responses, "{small:?} {full:?}");
    let tiny = tcp::run_tcp_with(&t, &TcpConfig { mss: 536, ..TcpConfig::default() });
    assert!(tiny.complete && tiny.byte_exact);
    assert!(tiny.server.responses > full.server.responses + 10, "{tiny:?} {full:?}");
}

#[test]
fn trickles_against_tcp() {
    println!("{:>8} {:>6} {:>10} {:>10} {:>7}", "one-way", "loss", "Trickles", "TCP", "ratio");
    for delay_ms in [5u64, 25, 50] {
        for loss in [0u32, 10_000] {
            let mut t = bottleneck(5_000_000, delay_ms * 1_000);
            t.loss_fwd_ppm = loss;
            let ours = trickles(&t);
            let base = tcp::run_tcp(&t);
            assert!(ours.complete && ours.byte_exact, "Trickles {delay_ms} ms {loss} ppm: {ours:?}");
            assert!(base.complete && base.byte_exact, "TCP {delay_ms} ms {loss} ppm: {base:?}");
            let (a, b) = (ours.goodput_mbps(), base.goodput_mbps());
            println!("{:>6}ms {:>5}% {:>10.2} {:>10.2} {:>7.3}", delay_ms, f64::from(loss) / 10_000.0, a, b, a / b);
        }
    }
}

#[test]
fn scratch() {
    for len in [1_000_000u64, 5_000_000, 20_000_000] {
        for delay in [5_000u64, 25_000, 50_000] {
            let t = bottleneck(len, delay);
            let o = tcp::run_tcp(&t);
            let s = trickles(&t);
            println!("len {len} delay {delay}: TCP {:.2} Mb/s {} us rtx {} segs {} | Trickles {:.2} Mb/s {} us {:?}", o.goodput_mbps(), o.elapsed_us, o.client.retransmissions, o.server.responses, s.goodput_mbps(), s.elapsed_us, s.client);
        }
    }
}
