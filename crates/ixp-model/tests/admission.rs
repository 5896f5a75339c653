//! Admission never accepts a handler whose cost exceeds headroom; throughput never falls
//! when the runtime gets more threads.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use ixp_model::admission::Admission;
use proptest::prelude::*;
use stream_handlers::deploy::{Deployment, Point};
use stream_handlers::handlers::{ByteSwap, ContentRouter, CustomMulticast, Delta, Filter, Mirror};
use stream_handlers::{Field, Predicate, StreamHandler};

fn handler(k: u8, n: u16) -> Box<dyn StreamHandler> {
    let f = Field::new(0, 2);
    match k % 6 {
        0 => Box::new(ContentRouter::new(f, Some(1), 8)),
        1 => Box::new(Mirror::new((0..n).collect())),
        2 => Box::new(Filter::new(Predicate::Lt(f, 9))),
        3 => Box::new(CustomMulticast::new(
            (0..n).collect(),
            vec![(0, Predicate::Ge(f, 3))],
        )),
        4 => Box::new(Delta::paper(1)),
        _ => Box::new(ByteSwap),
    }
}

fn point(k: u8) -> Point {
    Point::ALL[usize::from(k) % Point::ALL.len()]
}

proptest! {
    #[test]
    fn admitted_handlers_fit_their_headroom(
        stages in proptest::collection::vec((any::<u8>(), any::<u8>(), 1u16..6), 1..4),
        pps in 0u64..2_000_000,
        engines in 1u64..7,
        len in 0u64..200_000,
    ) {
        let mut dep = Deployment::new();
        for (h, p, n) in &stages {
            dep.push(point(*p), handler(*h, *n));
        }
        let adm = Admission { engines, ..Admission::new(pps) };
        let (placed, d) = adm.place(dep, len);
        if d.on_np {
            prop_assert!(d.cost <= d.headroom, "{d:?}");
            prop_assert!(d.instructions <= d.issue_headroom, "{d:?}");
        } else {
            prop_assert!(d.cost > d.headroom || d.instructions > d.issue_headroom, "{d:?}");
            prop_assert!(placed.stages.iter().all(|s| !s.point.on_np()));
        }
        // More offered load never turns a refusal into an admission.
        let busier = Admission { engines, ..Admission::new(pps.saturating_mul(2).max(1)) };
        let again = Deployment::single(Point::RxSide, handler(stages[0].0, stages[0].2));
        let (_, d1) = adm.place(Deployment::single(Point::RxSide, handler(stages[0].0, stages[0].2)), len);
        let (_, d2) = busier.place(again, len);
        prop_assert!(!d2.on_np || d1.on_np, "{d1:?} {d2:?}");
    }

    #[test]
    fn more_threads_never_lower_the_admitted_rate(
        k in any::<u8>(),
        n in 1u16..5,
        len in 1u64..100_000,
        threads in 1u32..8,
    ) {
        // The highest admissible rate (by bisection) with t and t + 1 threads per engine.
        let max_rate = |t: u32| {
            let (mut lo, mut hi) = (0u64, 10_000_000u64);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                let mut a = Admission::new(mid);
                a.costs.params.threads_per_engine = t;
                let d = a.decide(&Deployment::single(Point::RxSide, handler(k, n)), len);
                if d.on_np { lo = mid } else { hi = mid - 1 }
            }
            lo
        };
        prop_assert!(max_rate(threads + 1) >= max_rate(threads));
    }
}
