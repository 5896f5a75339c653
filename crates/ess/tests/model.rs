//! The store against its reference model: a proptest state machine runs random operation
//! sequences, with time advancing by random steps (and sometimes stepping back or leaping
//! 2^32 units), on an `Ess` and an `Oracle` side by side and demands identical visible
//! results from every operation, including expiry and `Full`.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use ess::oracle::Oracle;
use ess::{Ess, EssConfig, HashKey, HashRatio, Instant, Tag, Value};
use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

#[derive(Clone, Debug)]
struct Params {
    capacity_log2: u8,
    lifetime_units: u64,
    resolution: u64,
    h_quarters: u8,
    seed: u64,
}

impl Params {
    fn config(&self) -> EssConfig {
        EssConfig::new(
            self.capacity_log2,
            self.lifetime_units * self.resolution,
            self.resolution,
            HashKey::from_seed(self.seed),
        )
        .unwrap()
        .with_hash_ratio(HashRatio::from_quarters(self.h_quarters).unwrap())
    }

    fn tag_space(&self) -> u64 {
        // A few more tags than fit, so the store fills, and tags are reused after expiry.
        (2u64 << self.capacity_log2) + 2
    }
}

#[derive(Clone, Debug)]
enum Op {
    Advance(u64),
    StepBack(u64),
    Leap,
    Get(u64),
    Probe(u64),
    FindCreate(u64, Option<u64>),
    Put(u64, u64),
    Clean(usize),
    CleanAll,
}

struct Reference;

impl ReferenceStateMachine for Reference {
    type State = Params;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Params> {
        (1u8..=5, 1u64..=8, 1u64..=5, 2u8..=16, any::<u64>())
            .prop_map(
                |(capacity_log2, lifetime_units, resolution, h_quarters, seed)| Params {
                    capacity_log2,
                    lifetime_units,
                    resolution,
                    h_quarters,
                    seed,
                },
            )
            .boxed()
    }

    fn transitions(p: &Params) -> BoxedStrategy<Op> {
        let tags = 0..p.tag_space();
        let step = 0..=(p.lifetime_units * p.resolution);
        prop_oneof![
            4 => step.clone().prop_map(Op::Advance),
            1 => step.prop_map(Op::StepBack),
            1 => Just(Op::Leap),
            4 => tags.clone().prop_map(Op::Get),
            1 => tags.clone().prop_map(Op::Probe),
            4 => (tags.clone(), proptest::option::of(any::<u64>())).prop_map(|(t, v)| Op::FindCreate(t, v)),
            4 => (tags, any::<u64>()).prop_map(|(t, v)| Op::Put(t, v)),
            1 => (0usize..4).prop_map(Op::Clean),
            1 => Just(Op::CleanAll),
        ]
        .boxed()
    }

    fn apply(state: Params, _: &Op) -> Params {
        state
    }
}

struct Sut {
    ess: Ess,
    oracle: Oracle,
    now: u64,
    /// Latest time given to a mutating call: the store's own time.
    latest: u64,
}

struct EssMatchesModel;

impl StateMachineTest for EssMatchesModel {
    type SystemUnderTest = Sut;
    type Reference = Reference;

    fn init_test(p: &Params) -> Sut {
        let config = p.config();
        Sut {
            ess: Ess::new(config),
            oracle: Oracle::new(&config),
            now: 0,
            latest: 0,
        }
    }

    fn apply(mut s: Sut, _: &Params, op: Op) -> Sut {
        let now = |s: &Sut| Instant::from_ticks(s.now);
        if matches!(
            op,
            Op::FindCreate(..) | Op::Put(..) | Op::Clean(_) | Op::CleanAll
        ) {
            s.latest = s.latest.max(s.now);
        }
        match op {
            Op::Advance(d) => s.now += d,
            Op::StepBack(d) => s.now = s.now.saturating_sub(d),
            Op::Leap => s.now += (1 << 32) + 1,
            Op::Get(t) => assert_eq!(
                s.ess.get(now(&s), Tag(t)),
                s.oracle.get(now(&s), Tag(t)),
                "get({t})"
            ),
            Op::Probe(t) => {
                let p = s.ess.probe(now(&s), Tag(t));
                assert_eq!(
                    p.found.map(|h| s.ess.read(h)),
                    s.oracle.get(now(&s), Tag(t)),
                    "probe({t})"
                );
                assert!(p.entries_examined as usize <= s.ess.capacity());
            }
            Op::FindCreate(t, v) => {
                let got = s.ess.find_create(now(&s), Tag(t));
                let want = s.oracle.find_create(now(&s), Tag(t));
                assert_eq!(got.map(|h| h.is_new()), want, "find_create({t})");
                if let (Ok(h), Some(v)) = (got, v) {
                    s.ess.write(h, Value(v));
                    s.oracle.write(Tag(t), Value(v));
                }
            }
            Op::Put(t, v) => {
                assert_eq!(
                    s.ess.put(now(&s), Tag(t), Value(v)),
                    s.oracle.put(now(&s), Tag(t), Value(v)),
                    "put({t})"
                )
            }
            Op::Clean(budget) => {
                assert!(s.ess.clean(now(&s), budget) <= budget);
                s.oracle.observe(now(&s));
            }
            Op::CleanAll => {
                s.ess.clean_all(now(&s));
                s.oracle.observe(now(&s));
                // Everything left after a full clean is live.
                assert_eq!(s.ess.occupied(), s.oracle.live(now(&s)));
            }
        }
        s
    }

    fn check_invariants(s: &Sut, _: &Params) {
        let now = Instant::from_ticks(s.now);
        assert!(s.ess.occupied() <= s.ess.capacity());
        assert!(s.ess.occupied() >= s.oracle.live(now));
        let stats = s.ess.chain_stats(now);
        assert_eq!(
            stats.visible as usize,
            s.oracle.live(now),
            "every live binding is on its chain"
        );
        // The next deadline is the oldest entry's expiry: due (at or before the store's time)
        // exactly when some expired entry is waiting to be reclaimed.
        let store_now = s.now.max(s.latest);
        match s.ess.poll_timeout() {
            None => assert_eq!(s.ess.occupied(), 0),
            Some(deadline) => {
                let waiting = s.ess.occupied() > s.oracle.live(now);
                assert_eq!(
                    deadline.ticks() <= store_now,
                    waiting,
                    "deadline {deadline} at t{store_now}"
                );
            }
        }
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn ess_matches_reference_model(sequential 1..200 => EssMatchesModel);
}
