//! The ESP part of `waist demo`: a path-intersection query and a robust aggregation on
//! small simulated networks of waist nodes (`waist_node::sim::esp`), the code the router
//! daemon runs.

use std::io::Write;

use ess::Tag;
use netsim::{LinkId, Rng};
use waist_node::MILLIS as MS;
use waist_node::sim::esp::aggregate::{AggTree, Scheme, TreeSpec};
use waist_node::sim::esp::paths::Fig1;

/// Runs both ESP demos.
///
/// # Errors
///
/// If writing fails or a simulation cannot be built.
pub fn run(out: &mut dyn Write) -> anyhow::Result<()> {
    path_intersection(out)?;
    aggregation(out)
}

fn path_intersection(out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "4. Path intersection (ESP §1, Fig. 1): S marks its path to A, then asks along its path to B"
    )?;
    writeln!(out, "      S ── R0 ── R1 ── R2 ── R3 ── A")?;
    writeln!(out, "                        └── R4 ── B")?;
    for (esp, label) in [
        (&[0, 1, 2, 3, 4][..], "every router runs ESP"),
        (&[0, 1, 3, 4][..], "R2 does not run ESP"),
        (&[3, 4][..], "only R3 and R4 run ESP"),
    ] {
        let mut net = Fig1::build(esp, 7)?;
        let answer = net.query(Tag(0x000F_1610))?;
        let said = match answer.and_then(|a| a.router) {
            Some(r) => format!("the paths part at R{r}"),
            None => "no common ESP-capable router".to_string(),
        };
        writeln!(out, "   {label:<28} → B learns: {said}")?;
    }
    writeln!(out)?;
    Ok(())
}

fn aggregation(out: &mut dyn Write) -> anyhow::Result<()> {
    let spec = TreeSpec {
        leaves: 300,
        root_branching: 10,
        min_branching: 2,
        max_branching: 8,
        hop_delay: MS,
        seed: 11,
        store_log2: 6,
    };
    let mut tree = AggTree::build(spec)?;
    writeln!(
        out,
        "5. Counting {} leaves up a tree of {} ESP routers (ESP §3.2, §4.3), depth {} hops;",
        tree.leaves.len(),
        tree.routers.len(),
        tree.depth
    )?;
    writeln!(
        out,
        "   each run, 4 random links lose 10% of packets. Plain: COUNT then COLLECT, one packet per leaf."
    )?;
    writeln!(
        out,
        "   Robust: RCHLD then RCOLLECT, 3 copies, 512-bit Bloom IDmaps (k = 11), forwarding limit 3."
    )?;
    let mut rng = Rng::new(5);
    let robust = Scheme::Robust {
        words: 8,
        k: 11,
        limit: 3,
    };
    let (mut plain_ok, mut robust_ok) = (0, 0);
    let runs = 10;
    for run in 1..=runs {
        let lossy: Vec<LinkId> = (0..4)
            .map(|_| tree.links[rng.below(tree.links.len() as u64) as usize])
            .collect();
        let p = tree.run(Scheme::Plain, &lossy, 100_000, 100 * MS, &mut rng);
        let r = tree.run(robust, &lossy, 100_000, 100 * MS, &mut rng);
        let show = |x: Option<u64>| x.map_or("nothing".to_string(), |v| v.to_string());
        writeln!(
            out,
            "   run {run:>2}: plain delivered {:>7}   robust delivered {:>7}",
            show(p.result),
            show(r.result)
        )?;
        plain_ok += usize::from(p.correct);
        robust_ok += usize::from(r.correct);
    }
    writeln!(
        out,
        "   correct: plain {plain_ok}/{runs}, robust {robust_ok}/{runs} (the paper's 5000-leaf version: waist repro esp-aggregation)"
    )?;
    Ok(())
}
