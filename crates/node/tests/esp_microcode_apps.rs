//! The paper's applications (§1 Fig. 1 path intersection, §3.1.1 feedback thinning, §3.2
//! aggregation) run twice over the same simulated network and seeds: with ESP's built-in
//! instructions, and with the same instructions as SNAP microcode (installed under opcodes
//! 64..=68, COUNT also inline as opcode 32). Same answers, same deliveries, drops and
//! errors, and every router left with the same totals and the same bindings created.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use netsim::{NodeId, Rng, Simulator};
use waist_node::MILLIS as MS;
use waist_node::sim::SimNode;
use waist_node::sim::esp::aggregate::{AggTree, RunOutcome, Scheme, TreeSpec};
use waist_node::sim::esp::isa::{InstructionSet, Microcoded, Sources};
use waist_node::sim::esp::paths::{Answer, Fig1};
use waist_node::sim::esp::thinning::{Feedback, Round};
use waist_node::sim::esp::{Tally, tally};

const SOURCES: Sources<'static> = Sources::SHIPPED;

/// The built-ins, the installed microcode, and the installed microcode with COUNT inline.
fn sets() -> [(&'static str, InstructionSet); 3] {
    let micro = Microcoded::assemble(&SOURCES).unwrap();
    [
        ("built-in", InstructionSet::BuiltIn),
        ("installed", InstructionSet::Microcoded(micro.clone())),
        (
            "inline COUNT",
            InstructionSet::Microcoded(micro.with_inline_count(true)),
        ),
    ]
}

/// Microcode the routers ran: (inline runs, installed runs), and that none failed or was
/// refused.
fn micro_runs(sim: &Simulator<SimNode>, routers: &[NodeId]) -> (u64, u64) {
    let (mut inline, mut installed) = (0, 0);
    for &r in routers {
        let m = sim.node(r).router().unwrap().micro().stats();
        assert_eq!(
            m.failed
                + m.unknown_opcode
                + m.refused_off
                + m.refused_iface
                + m.refused_malformed
                + m.refused_verify
                + m.refused_operands,
            0,
            "{m:?}"
        );
        inline += m.inline_runs;
        installed += m.installed_runs;
    }
    (inline, installed)
}

/// An application's runs under one instruction set.
struct Run<R> {
    /// The set's name.
    name: &'static str,
    /// What the application delivered.
    result: R,
    /// The routers' tallies afterwards.
    tallies: Vec<Tally>,
    /// Microcode runs: (inline, installed).
    micro: (u64, u64),
}

/// What an application returns: its result, the routers' tallies, microcode runs.
type Outcome<R> = (R, Vec<Tally>, (u64, u64));

/// Runs `app` under each set.
fn under_each<R>(app: impl Fn(InstructionSet) -> Outcome<R>) -> Vec<Run<R>> {
    sets()
        .into_iter()
        .map(|(name, isa)| {
            let (result, tallies, micro) = app(isa);
            Run {
                name,
                result,
                tallies,
                micro,
            }
        })
        .collect()
}

/// Checks the runs under each set against the built-in one: equal results and tallies,
/// and microcode run where expected (`count_too`: the application sends COUNT).
fn same<R: PartialEq + core::fmt::Debug>(runs: &[Run<R>], count_too: bool) {
    let built_in = &runs[0];
    assert_eq!(built_in.micro, (0, 0), "the built-ins ran no microcode");
    for run in &runs[1..] {
        let (name, m) = (run.name, run.micro);
        assert_eq!(run.result, built_in.result, "{name}: results differ");
        assert_eq!(
            run.tallies, built_in.tallies,
            "{name}: router tallies differ"
        );
        assert!(m.1 > 0, "{name}: no installed microcode ran: {m:?}");
        if name == "inline COUNT" && count_too {
            assert!(m.0 > 0, "{name}: no inline microcode ran: {m:?}");
        } else {
            assert_eq!(m.0, 0, "{name}: {m:?}");
        }
    }
}

/// What B learned and how many markers A received, per deployment.
type Answers = Vec<(Option<Answer>, usize)>;

/// Fig. 1 under each deployment: B's answer, the markers A received, the tallies.
fn path_intersection(isa: &InstructionSet) -> Outcome<Answers> {
    let mut results = Vec::new();
    let (mut tallies, mut runs) = (Vec::new(), (0, 0));
    for esp in [&[0, 1, 2, 3, 4][..], &[0, 1, 3, 4], &[0, 3, 4], &[3, 4]] {
        let mut net = Fig1::build_with(esp, 1, isa.clone()).unwrap();
        let answer = net.query(ess::Tag(0xF161)).unwrap();
        results.push((answer, net.marks_delivered()));
        tallies.extend(tally(&net.sim, &net.routers));
        let m = micro_runs(&net.sim, &net.routers);
        runs = (runs.0 + m.0, runs.1 + m.1);
    }
    (results, tallies, runs)
}

#[test]
fn path_intersection_is_the_same_microcoded() {
    let runs = under_each(|isa| path_intersection(&isa));
    // The answers are the paper's: R2, then the last ESP-capable common node.
    let routers: Vec<_> = runs[0]
        .result
        .iter()
        .map(|(a, _)| a.unwrap().router)
        .collect();
    assert_eq!(routers, [Some(2), Some(1), Some(0), None]);
    same(&runs, false);
}

fn thinning(isa: InstructionSet) -> Outcome<Vec<Round>> {
    let mut net = Feedback::build(4, 25, 3, isa).unwrap();
    let mut rng = Rng::new(5);
    let rounds: Vec<Round> = (0..6).map(|_| net.round(&mut rng).unwrap()).collect();
    (
        rounds,
        tally(&net.sim, &net.routers),
        micro_runs(&net.sim, &net.routers),
    )
}

#[test]
fn feedback_thinning_is_the_same_microcoded() {
    let runs = under_each(thinning);
    // Thinned: an increasing sequence ending with the maximum, far fewer than sent.
    let (mut delivered, mut sent) = (0, 0);
    for round in &runs[0].result {
        assert!(round.delivered.windows(2).all(|w| w[0] < w[1]), "{round:?}");
        assert_eq!(round.delivered.last(), Some(&round.max));
        assert_eq!(round.errors, 0);
        delivered += round.delivered.len();
        sent += round.sent;
    }
    assert!(delivered * 5 < sent, "{delivered} of {sent}");
    // COMPARE drops at the routers' output ports: the tallies count them.
    assert!(
        runs[0]
            .tallies
            .iter()
            .map(|t| t.node.esp_copies_dropped)
            .sum::<u64>()
            > 0
    );
    same(&runs, false);
}

fn small_tree(isa: InstructionSet) -> AggTree {
    let spec = TreeSpec {
        leaves: 200,
        root_branching: 8,
        min_branching: 2,
        max_branching: 6,
        hop_delay: MS,
        seed: 1,
        store_log2: 6,
    };
    AggTree::build_with(spec, isa).unwrap()
}

/// Plain aggregation without loss, with loss on random links, with every link duplicating;
/// then one robust run (RCHLD and RCOLLECT have no microcode: built-ins under either set).
fn aggregation(isa: InstructionSet) -> Outcome<Vec<RunOutcome>> {
    let mut tree = small_tree(isa);
    let mut rng = Rng::new(2);
    let mut out = Vec::new();
    for _ in 0..2 {
        out.push(tree.run(Scheme::Plain, &[], 0, 100 * MS, &mut rng));
    }
    for _ in 0..6 {
        let lossy: Vec<_> = (0..4)
            .map(|_| tree.links[rng.below(tree.links.len() as u64) as usize])
            .collect();
        out.push(tree.run(Scheme::Plain, &lossy, 200_000, 100 * MS, &mut rng));
    }
    for &l in &tree.links.clone() {
        let c = tree.sim.link_config(l);
        tree.sim.set_link_config(l, c.duplicate_ppm(50_000));
    }
    for _ in 0..3 {
        out.push(tree.run(Scheme::Plain, &[], 0, 100 * MS, &mut rng));
    }
    let robust = Scheme::Robust {
        words: 8,
        k: 11,
        limit: 2,
    };
    out.push(tree.run(robust, &[], 0, 100 * MS, &mut rng));
    (
        out,
        tally(&tree.sim, &tree.routers),
        micro_runs(&tree.sim, &tree.routers),
    )
}

#[test]
fn aggregation_is_the_same_microcoded() {
    let runs = under_each(aggregation);
    let outcomes = &runs[0].result;
    // Right without loss; loss and duplication break some plain runs.
    assert!(
        outcomes[..2].iter().all(|o| o.correct && o.errors == 0),
        "{outcomes:?}"
    );
    assert!(outcomes[2..11].iter().any(|o| !o.correct), "{outcomes:?}");
    assert!(outcomes[11].correct, "robust: {:?}", outcomes[11]);
    // COUNT and COLLECT drop all but one packet per phase at every router.
    assert!(runs[0].tallies.iter().map(|t| t.esp.dropped).sum::<u64>() > 0);
    same(&runs, true);
}

/// The comparison can fail: LASTMARK microcode that records the node whether or not the
/// tag is bound, or COLLECT that forwards on every report, changes what the applications
/// deliver.
#[test]
fn wrong_microcode_is_caught() {
    let always = SOURCES.lastmark.replace("    bez done\n", "    pop\n");
    assert_ne!(always, SOURCES.lastmark);
    let wrong = Sources {
        lastmark: &always,
        ..SOURCES
    };
    let wrong = InstructionSet::Microcoded(Microcoded::assemble(&wrong).unwrap());
    assert_ne!(
        path_intersection(&wrong).0,
        path_intersection(&InstructionSet::BuiltIn).0
    );
    let eager = SOURCES.collect.replace("    bez wait\n", "    pop\n");
    assert_ne!(eager, SOURCES.collect);
    let wrong = Sources {
        collect: &eager,
        ..SOURCES
    };
    let wrong = InstructionSet::Microcoded(Microcoded::assemble(&wrong).unwrap());
    let mut tree = small_tree(wrong);
    let out = tree.run(Scheme::Plain, &[], 0, 100 * MS, &mut Rng::new(2));
    assert!(!out.correct, "{out:?}");
}
