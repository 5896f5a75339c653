//! ESP paper §4.3: aggregation over a 5000-leaf tree with four lossy links, plain
//! (COUNT/COLLECT) against robust (RCHLD/RCOLLECT with a 512-bit Bloom filter, k = 11,
//! forwarding limits 2 and 3), 1000 runs each.
//!
//! The paper does not describe its tree beyond 5000 leaves and a maximum branching factor
//! of 40. Ours ([`TreeSpec::paper`]): the collector hangs off a root router with 40
//! subtrees of 125 leaves; inside each subtree, routers adopt 2–12 children (uniformly
//! random), grouping upward from the leaves; every link has a 1 ms delay. Each run picks four
//! distinct links uniformly at random and gives them 10% loss; every scheme sees the same
//! four links in run *i*. Phases are 100 ms apart (more than 2δ for this tree's depth).

use std::io::Write;

use netsim::{LinkId, Rng};
use waist_node::MILLIS as MS;
use waist_node::sim::esp::aggregate::{AggTree, Scheme, TreeSpec};

use crate::common::{Options, Progress};

/// The paper's figures: (label, completed, correct) out of 1000 runs.
pub const PAPER: [(&str, u32, u32); 3] = [
    ("plain COUNT/COLLECT", 690, 454),
    ("robust, limit 2", 926, 874),
    ("robust, limit 3", 997, 945),
];

/// The schemes, in [`PAPER`] order.
pub const SCHEMES: [Scheme; 3] = [
    Scheme::Plain,
    Scheme::Robust {
        words: 8,
        k: 11,
        limit: 2,
    },
    Scheme::Robust {
        words: 8,
        k: 11,
        limit: 3,
    },
];

/// Per-scheme tallies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Runs.
    pub runs: u32,
    /// Runs where a result reached the collector.
    pub completed: u32,
    /// Runs whose first result was 5000.
    pub correct: u32,
}

/// Four distinct random links of `tree`.
fn lossy_links(tree: &AggTree, rng: &mut Rng) -> Vec<LinkId> {
    let mut picked: Vec<LinkId> = Vec::new();
    while picked.len() < 4 && picked.len() < tree.links.len() {
        let l = tree.links[rng.below(tree.links.len() as u64) as usize];
        if !picked.contains(&l) {
            picked.push(l);
        }
    }
    picked
}

/// Runs runs `first..first + n` of every scheme on its own tree.
fn run_slice(
    spec: TreeSpec,
    seed: u64,
    first: u64,
    n: u64,
    progress: &Progress,
) -> anyhow::Result<[Tally; 3]> {
    let mut tree = AggTree::build(spec)?;
    let mut tallies = [Tally::default(); 3];
    for i in first..first + n {
        let mut pick = Rng::new(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let lossy = lossy_links(&tree, &mut pick);
        for (scheme, tally) in SCHEMES.iter().zip(&mut tallies) {
            let out = tree.run(*scheme, &lossy, 100_000, 100 * MS, &mut pick);
            tally.runs += 1;
            tally.completed += u32::from(out.completed());
            tally.correct += u32::from(out.correct);
        }
        progress.advance(1);
    }
    Ok(tallies)
}

/// Runs the reproduction with `runs` runs per scheme and prints ours beside the paper's.
///
/// # Errors
///
/// If the tree cannot be built or the output cannot be written.
pub fn run(opts: &Options, runs: u64, out: &mut dyn Write) -> anyhow::Result<[Tally; 3]> {
    let spec = TreeSpec::paper();
    let tree = AggTree::build(spec)?;
    let mut hist = [0usize; 5];
    for &b in &tree.branching {
        hist[(b / 10).min(4)] += 1;
    }
    writeln!(
        out,
        "ESP §4.3 aggregation: {} leaves, {} routers, {} links, depth {} hops, branching: root {}, others {}–{} \
         (routers with 1–9 children: {}, 10–19: {}, 20–29: {}, 30–39: {}, 40+: {})",
        tree.leaves.len(),
        tree.routers.len(),
        tree.links.len(),
        tree.depth,
        tree.branching.first().copied().unwrap_or(0),
        spec.min_branching,
        spec.max_branching,
        hist[0],
        hist[1],
        hist[2],
        hist[3],
        hist[4]
    )?;
    writeln!(
        out,
        "{runs} runs per scheme; each run: 4 random links at 10% loss; 512-bit filters, k = 11"
    )?;
    drop(tree);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4) as u64;
    let started = std::time::Instant::now();
    let per = runs.div_ceil(threads);
    opts.progress.phase("aggregation runs", runs);
    let results: Vec<anyhow::Result<[Tally; 3]>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let first = t * per;
                let n = per.min(runs.saturating_sub(first));
                let progress = &opts.progress;
                s.spawn(move || run_slice(spec, opts.seed, first, n, progress))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("worker panicked")))
            })
            .collect()
    });
    opts.progress.finish();
    let mut total = [Tally::default(); 3];
    for r in results {
        for (t, x) in total.iter_mut().zip(r?) {
            t.runs += x.runs;
            t.completed += x.completed;
            t.correct += x.correct;
        }
    }
    let scale = |x: u32, n: u32| f64::from(x) * 1000.0 / f64::from(n.max(1));
    writeln!(
        out,
        "\n{:<22} {:>18} {:>18} {:>18} {:>18}",
        "scheme", "completed (ours)", "completed (paper)", "correct (ours)", "correct (paper)"
    )?;
    let mut csv = String::from("scheme,runs,completed,correct,paper_completed,paper_correct\n");
    for ((label, pc, pk), t) in PAPER.iter().zip(&total) {
        writeln!(
            out,
            "{:<22} {:>18} {:>18} {:>18} {:>18}",
            label,
            format!("{:.0}/1000", scale(t.completed, t.runs)),
            format!("{pc}/1000"),
            format!("{:.0}/1000", scale(t.correct, t.runs)),
            format!("{pk}/1000"),
        )?;
        csv += &format!(
            "{label},{},{},{},{pc},{pk}\n",
            t.runs, t.completed, t.correct
        );
    }
    writeln!(
        out,
        "\n{} runs × 3 schemes in {:.1} s on {threads} threads",
        runs,
        started.elapsed().as_secs_f64()
    )?;
    std::fs::create_dir_all(&opts.dir)?;
    let path = opts.dir.join("esp-aggregation.csv");
    std::fs::write(&path, csv)?;
    writeln!(out, "wrote {}", path.display())?;
    Ok(total)
}
