//! Whole transfers between the stateless server and a client over simulated links.

use trickles::client::ClientConfig;
use trickles::server::ServerConfig;
use trickles::sim::{self, Transfer};

fn fetch(t: &Transfer) -> sim::Outcome {
    sim::run(t, ServerConfig::new(sim::sim_keys()), ClientConfig::default())
}

#[test]
fn loss_free_transfers_arrive_byte_exact() {
    for len in [1u64, 100, 1362, 1363, 5000, 100_000, 1_000_000] {
        let t = Transfer::new(len, 5_000);
        let o = fetch(&t);
        assert!(o.complete && o.byte_exact, "len {len}: {o:?}");
        assert_eq!(o.received, len);
        assert_eq!(o.client.losses, 0, "len {len}: {o:?}");
        assert_eq!(o.client.timeouts, 0, "len {len}: {o:?}");
    }
}

#[test]
fn lossy_transfers_arrive_byte_exact() {
    for (fwd, rev) in [(10_000, 0), (0, 10_000), (50_000, 50_000), (100_000, 100_000)] {
        for seed in 1..=3 {
            let mut t = Transfer::new(300_000, 5_000);
            t.loss_fwd_ppm = fwd;
            t.loss_rev_ppm = rev;
            t.seed = seed;
            let o = fetch(&t);
            assert!(o.complete && o.byte_exact, "loss {fwd}/{rev} seed {seed}: {o:?}");
        }
    }
}

#[test]
fn reordering_transfers_arrive_byte_exact() {
    for seed in 1..=3 {
        let mut t = Transfer::new(300_000, 5_000);
        t.link = t.link.jitter(3_000);
        t.loss_fwd_ppm = 20_000;
        t.seed = seed;
        let o = fetch(&t);
        assert!(o.complete && o.byte_exact, "seed {seed}: {o:?}");
    }
}

#[test]
fn server_memory_does_not_grow_with_clients() {
    let link = sim::LinkConfig::with_delay(2_000).rate(100, 20_000);
    let one = sim::run_clients(1, 20_000, link, 0, 1, 60_000_000);
    let many = sim::run_clients(1_000, 20_000, link, 50, 1, 60_000_000);
    assert_eq!(one.complete, 1);
    assert_eq!(many.complete, 1_000);
    assert!(one.byte_exact && many.byte_exact);
    assert_eq!(one.server_memory, many.server_memory);
    assert!(many.server.closes >= 990, "{:?}", many.server);
}

#[test]
fn uploads_arrive_whole_under_loss_in_both_directions() {
    for (fwd, rev, seed) in [(0, 0, 1), (20_000, 20_000, 2), (50_000, 50_000, 3)] {
        let mut t = Transfer::new(200_000, 5_000);
        t.upload_len = 60_000;
        t.loss_fwd_ppm = fwd;
        t.loss_rev_ppm = rev;
        t.seed = seed;
        let o = fetch(&t);
        assert!(o.complete && o.byte_exact, "loss {fwd}/{rev}: {o:?}");
        assert!(o.upload_exact, "loss {fwd}/{rev}: upload incomplete or corrupt: {o:?}");
    }
}
