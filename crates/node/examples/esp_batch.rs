//! A router's batch of ESP COUNT packets, one `handle_packet` call per frame against one
//! `handle_packets` call per batch (which warms the batch's ESS lookups first), for wall
//! time (interleaved: `benches/esp_batch.sh`) and instruction counts under callgrind:
//!
//! ```text
//! cargo build --release -p waist-node --example esp_batch
//! target/release/examples/esp_batch <single|batch> <churn|hit> <N> [log2] [fill%] [central|all] [batch]
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/esp_batch ...
//! ```
//!
//! The node has two interfaces and ESP stores of 2^log2 bindings (default 2^20; τ = 10 s at
//! 1 ms resolution, `EspConfig::new`), filled to fill% (default 50). Each frame is a
//! dedicated IPv4 COUNT packet from interface 0, forwarded in place by interface 1; its
//! Loc selects the central context (`central`, default) or all three (`all`). Frames come
//! in batches of `batch` (default 32), each at one `now`, as from one `recvmmsg`.
//!
//! * `churn`: every frame counts under a fresh tag, so each creates a binding; time runs
//!   at the rate that keeps fill% of the store live (one lifetime of creations = fill% of
//!   capacity), so bindings expire and are reclaimed, as in the ESS's steady churn. Set-up
//!   runs two lifetimes first.
//! * `hit`: the store is filled at time 0 with fill% of capacity tags, then every frame
//!   counts under a random one of them (found, never created).
//!
//! Set-up is the same for any `N`, so instructions per frame are
//! `(Ir(N2) − Ir(N1)) / (N2 − N1)`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // measurement driver

use std::hint::black_box;
use std::time::Instant as Wall;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use ess::{HashKey, Tag};
use waist_node::routes::prefix;
use waist_node::{Config, EspConfig, Instant, Node};

/// A tag no real frame uses, to find where the template carries its tag.
const MARK: u64 = 0x5A5A_1234_8765_A5A5;

/// τ in microseconds (`EspConfig::new`).
const LIFETIME_US: u64 = 10_000_000;

fn usage() -> ! {
    eprintln!(
        "usage: esp_batch <single|batch> <churn|hit> <N> [log2] [fill%] [central|all] [batch]"
    );
    std::process::exit(2)
}

struct Bench {
    node: Node,
    template: Vec<u8>,
    tag_at: usize,
    frames: Vec<(usize, Vec<u8>)>,
    batched: bool,
    forwarded: u64,
}

impl Bench {
    fn new(log2: u8, all: bool, batch: usize, batched: bool) -> Bench {
        let mut c = Config::router([10, 0, 0, 254].into(), 2);
        c.esp = Some(EspConfig::new(1, log2, HashKey::from_seed(5)).unwrap());
        let mut node = Node::new(c, Instant::ZERO).unwrap();
        node.add_route(prefix([10, 1, 0, 0].into(), 16).unwrap(), 0);
        node.add_route(prefix([10, 2, 0, 0].into(), 16).unwrap(), 1);
        let loc = if all { Loc::ALL } else { Loc::CENTRAL };
        let ep = Endpoint::new(7, [10, 1, 0, 1].into()).with_loc(loc);
        let count = Instruction::Count {
            counter: Tag(MARK),
            thresh: u64::MAX,
        };
        let template = ep
            .packet_to([10, 2, 7, 7].into(), &count, &[0; 16])
            .unwrap();
        let tag_at = template
            .windows(8)
            .position(|w| w == MARK.to_be_bytes())
            .expect("tag in template");
        let frames = (0..batch).map(|_| (0, template.clone())).collect();
        Bench {
            node,
            template,
            tag_at,
            frames,
            batched,
            forwarded: 0,
        }
    }

    /// One batch of frames, counting under `tags`, at `now`.
    #[inline(never)]
    fn run(&mut self, now: Instant, tags: impl Iterator<Item = u64>) {
        if self.node.poll_timeout().is_some_and(|t| t <= now) {
            self.node.handle_timeout(now);
        }
        for ((_, f), tag) in self.frames.iter_mut().zip(tags) {
            f.copy_from_slice(&self.template);
            f[self.tag_at..self.tag_at + 8].copy_from_slice(&tag.to_be_bytes());
        }
        let mut sent = 0u64;
        if self.batched {
            self.node
                .handle_packets(now, &mut self.frames, |_, out, f| {
                    sent += u64::from(out.is_some_and(|o| !black_box(&f[o.range]).is_empty()));
                });
        } else {
            for (iface, f) in &mut self.frames {
                let out = self.node.handle_packet(now, *iface, f);
                sent += u64::from(out.is_some_and(|o| !black_box(&f[o.range]).is_empty()));
            }
        }
        while self.node.poll_transmit_owned().is_some() {}
        self.forwarded += sent;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, work, n, rest @ ..] = args.as_slice() else {
        usage()
    };
    let batched = match mode.as_str() {
        "single" => false,
        "batch" => true,
        _ => usage(),
    };
    let n: u64 = n.parse().unwrap_or_else(|_| usage());
    let log2: u8 = rest
        .first()
        .map_or(20, |s| s.parse().unwrap_or_else(|_| usage()));
    let fill: u64 = rest
        .get(1)
        .map_or(50, |s| s.parse().unwrap_or_else(|_| usage()));
    let all = rest.get(2).is_some_and(|s| s == "all");
    let batch: usize = rest
        .get(3)
        .map_or(32, |s| s.parse().unwrap_or_else(|_| usage()));
    let live = (1u64 << log2) * fill / 100;
    let mut b = Bench::new(log2, all, batch, batched);
    let per_batch = batch as u64;

    let start = match work.as_str() {
        "churn" => {
            // Frame i goes at i·τ/live µs: one lifetime of frames is `live` creations.
            let at = |i: u64| Instant::from_micros(i * LIFETIME_US / live);
            let mut i = 0u64;
            let warm = 2 * live;
            let mut start = None;
            while i < warm + n {
                if i >= warm && start.is_none() {
                    start = Some(Wall::now());
                }
                let last = i + per_batch - 1;
                b.run(at(last), i..=last);
                i += per_batch;
            }
            start.unwrap_or_else(Wall::now)
        }
        "hit" => {
            let t0 = Instant::ZERO;
            let mut i = 0u64;
            while i < live {
                b.run(t0, i..i + per_batch);
                i += per_batch;
            }
            let now = Instant::from_micros(1_000_000);
            // The simulator's seeded generator picks the hit workload's tags.
            let mut rng = netsim::Rng::new(1);
            let start = Wall::now();
            for _ in 0..n / per_batch {
                b.run(now, (0..per_batch).map(|_| rng.below(live)));
            }
            start
        }
        _ => usage(),
    };
    let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
    let esp = b.node.esp().unwrap().stats();
    assert_eq!(esp.aborted, 0, "the store refused: {esp:?}");
    println!(
        "{mode} {work} 2^{log2}/{fill}% {} batch {batch}: {n} frames, {ns:.1} ns/frame (wall), forwarded {}",
        if all { "all" } else { "central" },
        b.forwarded
    );
}
