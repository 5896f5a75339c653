//! Distance-vector routing with threaded indices across simulated networks: on random
//! connected graphs with random positive costs the routers converge to shortest-path costs
//! (checked against Floyd–Warshall), and following threaded labels hop by hop from any
//! router reaches any destination along a shortest path. After link failures and cost
//! changes they reconverge and the indices are recomputed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use fastpath::sim::Network;
use proptest::prelude::*;
use sansio::Instant;

/// Path costs in these graphs stay below 10 · 9 = 90.
const INFINITY: u16 = 128;
/// Long enough for any of these graphs to settle, count-to-infinity included.
const SETTLE_MS: u64 = 20_000;

/// Checks every router's table against Floyd–Warshall and traces every pair.
fn check_converged(net: &Network) -> Result<(), TestCaseError> {
    let dist = net.shortest_paths();
    for (s, row) in dist.iter().enumerate() {
        for (d, want) in row.iter().enumerate() {
            let route = net.router(s).route(u32::try_from(d).unwrap());
            match want {
                Some(w) => {
                    let route = route
                        .ok_or_else(|| TestCaseError::fail(format!("{s} has no route to {d}")))?;
                    prop_assert_eq!(u32::from(route.cost), *w, "cost {} -> {}", s, d);
                    let path = net
                        .trace(s, d)
                        .map_err(|e| TestCaseError::fail(format!("trace {s}->{d}: {e}")))?;
                    prop_assert_eq!(path.first(), Some(&s));
                    prop_assert_eq!(path.last(), Some(&d));
                    prop_assert_eq!(net.path_cost(&path), Some(*w), "path {:?}", path);
                }
                None => {
                    prop_assert!(
                        route.is_none_or(|r| r.cost == INFINITY),
                        "{} still reaches partitioned {}",
                        s,
                        d
                    );
                    prop_assert!(net.trace(s, d).is_err());
                }
            }
        }
    }
    Ok(())
}

/// A random connected graph: a random spanning tree plus extra edges, costs 1..=10.
fn graph() -> impl Strategy<Value = (usize, Vec<(usize, usize, u16)>)> {
    (2usize..=9).prop_flat_map(|n| {
        let tree = proptest::collection::vec((any::<prop::sample::Index>(), 1u16..=10), n - 1);
        let extra = proptest::collection::vec((0..n, 0..n, 1u16..=10), 0..=n);
        (Just(n), tree, extra).prop_map(|(n, tree, extra)| {
            let mut links: Vec<(usize, usize, u16)> = tree
                .into_iter()
                .enumerate()
                .map(|(i, (parent, cost))| (i + 1, parent.index(i + 1), cost))
                .collect();
            links.extend(extra.into_iter().filter(|(a, b, _)| a != b));
            (n, links)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn converges_to_shortest_paths((n, links) in graph()) {
        let mut net = Network::new(n, &links, INFINITY);
        net.run_for(SETTLE_MS);
        check_converged(&net)?;
    }

    #[test]
    fn reconverges_after_failures_and_cost_changes(
        (n, links) in graph(),
        changes in proptest::collection::vec((any::<prop::sample::Index>(), proptest::option::of(1u16..=10)), 1..4),
    ) {
        let mut net = Network::new(n, &links, INFINITY);
        net.run_for(SETTLE_MS);
        let before: Vec<Option<u32>> = (0..n).map(|d| net.router(0).index_of(u32::try_from(d).unwrap())).collect();
        for (link, cost) in changes {
            let i = link.index(links.len());
            prop_assert!(net.set_link(i, cost));
        }
        net.run_for(SETTLE_MS);
        check_converged(&net)?;
        // Destinations still reachable keep their index at router 0 (indices are stable
        // positions), so sources holding them keep working.
        let dist = net.shortest_paths();
        for d in 0..n {
            if dist[0][d].is_some() && before[d].is_some() {
                let now = net.router(0).index_of(u32::try_from(d).unwrap());
                prop_assert!(now.is_some());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// 5% of advertisements lost: periodic updates repair what triggered ones missed.
    #[test]
    fn converges_despite_loss((n, links) in graph(), seed in any::<u64>()) {
        let mut net = Network::new(n, &links, INFINITY);
        net.set_loss(seed, 50);
        net.run_for(SETTLE_MS);
        // Losses kept on to the end: a lost periodic update changes nothing in a settled
        // network (a route needs six in a row lost to time out).
        // (A tiny graph may lose nothing: 0.95^400 ≈ 1e-9, so only bigger runs must.)
        prop_assert!(net.dropped > 0 || net.delivered < 400);
        check_converged(&net)?;
    }
}

#[test]
fn ring_failure_reroutes_the_long_way_and_rewrites_labels() {
    // 0–1–2–3–0 ring, all cost 1, plus nothing else.
    let mut net = Network::new(4, &[(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 0, 1)], 16);
    net.run_for(5_000);
    assert_eq!(net.trace(0, 1).unwrap(), vec![0, 1]);
    let via_1 = net.router(0).route(1).unwrap();
    assert_eq!(via_1.next_index, net.router(1).index_of(1).unwrap());
    assert!(net.set_link(0, None));
    net.run_for(5_000);
    assert_eq!(net.trace(0, 1).unwrap(), vec![0, 3, 2, 1]);
    let r = net.router(0).route(1).unwrap();
    assert_eq!(r.cost, 3);
    // The next index is now router 3's index for destination 1.
    assert_eq!(r.next_index, net.router(3).index_of(1).unwrap());
    assert_ne!(r.next_hop, via_1.next_hop);
}

#[test]
fn partition_counts_to_infinity_and_garbage_collects() {
    let mut net = Network::new(3, &[(0, 1, 1), (1, 2, 1)], 16);
    net.run_for(5_000);
    assert_eq!(net.router(0).route(2).unwrap().cost, 2);
    assert!(net.set_link(1, None));
    net.run_for(1_000);
    assert_eq!(net.router(0).route(2).unwrap().cost, 16);
    assert!(net.trace(0, 2).is_err());
    net.run_for(10_000);
    assert_eq!(net.router(0).route(2), None, "garbage collected");
    assert!(net.set_link(1, Some(2)));
    net.run_for(5_000);
    assert_eq!(net.router(0).route(2).unwrap().cost, 3);
    assert_eq!(net.trace(0, 2).unwrap(), vec![0, 1, 2]);
}

/// Fig. 6: a host beside router `s` asks `s` for every destination's index, then sends
/// with the labels it learned: each packet reaches its destination along a shortest path.
/// After a link change and reconvergence the old answers have aged out and the host asks
/// again; the new labels follow the new shortest paths.
fn hosts_ask_their_first_router(net: &mut Network, max_age: u64) -> Result<(), TestCaseError> {
    use fastpath::dv::host::FirstHop;
    use fastpath::threaded::MAX_HOP_LIMIT;
    let dist = net.shortest_paths();
    let now = Instant::from_millis(net.now());
    let later = Instant::from_millis(net.now() + max_age);
    let n = net.len();
    let dests: Vec<u32> = (0..n).map(|d| u32::try_from(d).unwrap()).collect();
    for (s, row) in dist.iter().enumerate() {
        let mut host = FirstHop::new(1_000 + s as u32, max_age, n);
        let mut query = Vec::new();
        prop_assert_eq!(host.query(now, &dests, &mut query), n);
        let mut answer = Vec::new();
        let mut router = net.router(s).clone();
        prop_assert_eq!(router.answer_query(&query, &mut answer), Ok(n));
        host.handle_answer(now, &answer).unwrap();
        for (d, want) in row.iter().enumerate() {
            let label = host.label(now, dests[d], MAX_HOP_LIMIT);
            match want {
                Some(w) => {
                    let label = label
                        .ok_or_else(|| TestCaseError::fail(format!("{s}: no index for {d}")))?;
                    prop_assert_eq!(host.cost(now, dests[d]).map(u32::from), Some(*w));
                    let path = net
                        .trace_label(s, d, label)
                        .map_err(|e| TestCaseError::fail(format!("host at {s} -> {d}: {e}")))?;
                    prop_assert_eq!(net.path_cost(&path), Some(*w), "path {:?}", path);
                }
                None => prop_assert!(
                    label.is_none(),
                    "{} answered a route to partitioned {}",
                    s,
                    d
                ),
            }
        }
        // Answers age out: the host asks again rather than trust a reused index.
        prop_assert!(host.label(later, 0, MAX_HOP_LIMIT).is_none());
        let mut again = Vec::new();
        prop_assert_eq!(host.query(later, &dests, &mut again), n);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn hosts_learn_indices_from_their_first_router(
        (n, links) in graph(),
        change in (any::<prop::sample::Index>(), proptest::option::of(1u16..=10)),
    ) {
        let mut net = Network::new(n, &links, INFINITY);
        net.run_for(SETTLE_MS);
        hosts_ask_their_first_router(&mut net, 5_000)?;
        let i = change.0.index(net.links().len());
        prop_assert!(net.set_link(i, change.1));
        net.run_for(SETTLE_MS);
        hosts_ask_their_first_router(&mut net, 5_000)?;
    }
}

/// A host's query or answer sent as a routing message is refused without touching the
/// link's peer; an answer handed to a router's query entry point is refused too.
#[test]
fn index_queries_are_not_routing_messages() {
    use fastpath::dv::HandleError;
    use fastpath::dv::host::FirstHop;
    let mut net = Network::new(2, &[(0, 1, 1)], INFINITY);
    net.run_for(SETTLE_MS);
    let mut router = net.router(0).clone();
    let before = router.route(1);
    let mut host = FirstHop::new(77, 1_000, 4);
    let mut query = Vec::new();
    host.query(Instant::ZERO, &[1], &mut query);
    let iface = router.links().next().unwrap().0;
    assert_eq!(
        router.handle_message(Instant::ZERO, iface, &query),
        Err(HandleError::HostMessage)
    );
    assert_eq!(router.route(1), before);
    let mut answer = Vec::new();
    router.answer_query(&query, &mut answer).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        router.answer_query(&answer, &mut out),
        Err(HandleError::NotAQuery)
    );
    assert!(out.is_empty());
    assert_eq!(router.stats().queries, 1);
    // Answers for destinations never asked about are ignored.
    let mut other = FirstHop::new(78, 1_000, 4);
    assert_eq!(other.handle_answer(Instant::ZERO, &answer), Ok(0));
    assert!(other.is_empty());
}
