//! Prefix destinations in distance-vector routing: one router fed hand-built prefix
//! updates (origination, withdrawal, poisoned reverse, local over learned, longest-prefix
//! match, address queries, message size), then random networks where every router
//! originates IPv4 and IPv6 prefixes: every router's route to every prefix has the
//! Floyd–Warshall cost of reaching its originator, threaded labels lead there along a
//! shortest path, longest-prefix match picks the longest reachable prefix, and after link
//! failures and withdrawals the routes go away and come back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use fastpath::dv::wire::{
    AdvEntry, Advertisement, MAX_MESSAGE_LEN, MAX_PREFIX_ENTRIES, MessageKind, PrefixEntry,
    UNREACHABLE, WireError,
};
use fastpath::dv::{Config, Dest, HandleError, LocalError, Router, RouterId, Transmit};
use fastpath::lpm::{IpPrefix, Prefix, Prefix6};
use fastpath::sim::Network;
use fastpath::threaded::NextHop;
use proptest::prelude::*;
use sansio::Instant;

/// `t` milliseconds after the origin (the router's timers count whole milliseconds).
fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn v4(a: [u8; 4], l: u8) -> IpPrefix {
    IpPrefix::V4(Prefix::new(a, l).unwrap())
}

/// `2001:db8:<x>::/<l>` (x in the third and fourth bytes).
fn v6(x: u16, l: u8) -> IpPrefix {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[4..6].copy_from_slice(&x.to_be_bytes());
    IpPrefix::V6(Prefix6::new(a, l).unwrap())
}

fn prefix_update(sender: RouterId, entries: &[(IpPrefix, u16, u32)]) -> Vec<u8> {
    let entries: Vec<PrefixEntry> = entries
        .iter()
        .map(|&(prefix, cost, index)| PrefixEntry {
            prefix,
            cost,
            index,
        })
        .collect();
    let mut out = Vec::new();
    Advertisement::emit_prefixes(MessageKind::PrefixUpdate, sender, &entries, &mut out);
    out
}

fn drain(r: &mut Router) -> Vec<Transmit> {
    core::iter::from_fn(|| r.poll_transmit()).collect()
}

/// The cost `t` advertises for `prefix` on `iface` (prefix updates only).
fn sent_cost(t: &[Transmit], iface: u16, prefix: IpPrefix) -> Option<u16> {
    t.iter()
        .filter(|t| t.iface == iface)
        .filter_map(|t| Advertisement::parse(&t.bytes).ok())
        .filter(|a| a.kind() == MessageKind::PrefixUpdate)
        .flat_map(|a| a.prefix_entries().collect::<Vec<_>>())
        .find(|e| e.prefix == prefix)
        .map(|e| e.cost)
}

const A: u16 = 1;
const B: u16 = 2;

#[test]
fn a_local_prefix_is_advertised_then_withdrawn_and_collected() {
    let mut r = Router::new(Config::new(1), ms(0));
    r.link_up(ms(0), A, 1).unwrap();
    drain(&mut r);
    let lan = v4([192, 168, 1, 0], 24);
    let index = r.add_local_prefix(ms(10), lan).unwrap();
    assert_ne!(index, 0, "index 0 is the router itself");
    assert_eq!(r.add_local_prefix(ms(11), lan), Ok(index), "idempotent");
    let route = r.route_to(lan).unwrap();
    assert_eq!(route.dest, Dest::from(lan));
    assert_eq!(
        (route.cost, route.next_hop, route.index),
        (0, NextHop::Local, index)
    );
    assert_eq!(r.table().get(index).unwrap().next_hop, NextHop::Local);
    assert_eq!(
        r.lookup_v4([192, 168, 1, 77]).map(|(_, r)| r.index),
        Some(index)
    );
    assert_eq!(r.local_prefixes().collect::<Vec<_>>(), vec![lan]);
    // The triggered update carries it at cost 0 in a kind 5 message.
    assert_eq!(r.poll_timeout(), Some(ms(1_010)));
    r.handle_timeout(ms(1_010));
    let sent = drain(&mut r);
    assert_eq!(sent_cost(&sent, A, lan), Some(0));
    // Withdrawn: poisoned (infinity), no forwarding, no LPM match, then collected.
    assert!(r.remove_local_prefix(ms(2_000), lan));
    assert!(!r.remove_local_prefix(ms(2_000), lan));
    assert_eq!(r.route_to(lan).unwrap().cost, 16);
    assert_eq!(r.table().get(index), None);
    assert_eq!(r.lookup_v4([192, 168, 1, 77]), None);
    r.handle_timeout(ms(3_000));
    assert_eq!(sent_cost(&drain(&mut r), A, lan), Some(16));
    r.handle_timeout(ms(2_000 + 120_000));
    assert_eq!(r.route_to(lan), None);
    assert_eq!(r.index_of_dest(lan), None);
}

/// Fig. 7 with prefixes: R learns a network from A (3 + 5) and B (1 + 6), takes B and B's
/// index, and advertises it back to B at infinity.
#[test]
fn learned_prefixes_take_the_cheapest_neighbour_and_its_index() {
    let net = v6(7, 48);
    let mut r = Router::new(Config::new(1), ms(0));
    r.link_up(ms(0), A, 3).unwrap();
    r.link_up(ms(0), B, 1).unwrap();
    r.handle_message(ms(0), A, &prefix_update(10, &[(net, 5, 4)]))
        .unwrap();
    r.handle_message(ms(0), B, &prefix_update(20, &[(net, 6, 9)]))
        .unwrap();
    let route = r.route_to(net).unwrap();
    assert_eq!(
        (route.cost, route.next_hop, route.next_index),
        (7, NextHop::Neighbour(B), 9)
    );
    assert_eq!(r.table().get(route.index).unwrap().next_index, 9);
    let IpPrefix::V6(p) = net else { unreachable!() };
    let mut host = p.addr();
    host[15] = 1;
    assert_eq!(r.lookup_v6(host), Some((p, route)));
    drain(&mut r);
    r.handle_timeout(ms(1_000));
    let sent = drain(&mut r);
    assert_eq!(sent_cost(&sent, A, net), Some(7));
    assert_eq!(sent_cost(&sent, B, net), Some(16), "poisoned reverse");
    // B withdraws: R moves to A and A's index.
    r.handle_message(ms(2), B, &prefix_update(20, &[(net, 16, 9)]))
        .unwrap();
    let route = r.route_to(net).unwrap();
    assert_eq!((route.cost, route.next_index), (8, 4));
    // A falls silent: the route times out like a router's would.
    r.handle_timeout(ms(180_000));
    assert_eq!(r.route_to(net).unwrap().cost, 16);
    assert_eq!(r.lookup_v6(host), None);
}

#[test]
fn a_local_prefix_beats_a_learned_one_until_withdrawn() {
    let net = v4([10, 0, 0, 0], 8);
    let mut r = Router::new(Config::new(1), ms(0));
    r.link_up(ms(0), A, 2).unwrap();
    r.handle_message(ms(0), A, &prefix_update(10, &[(net, 3, 6)]))
        .unwrap();
    assert_eq!(r.route_to(net).unwrap().cost, 5);
    let index = r.index_of_dest(net).unwrap();
    assert_eq!(r.add_local_prefix(ms(1), net), Ok(index), "keeps its index");
    assert_eq!(r.route_to(net).unwrap().next_hop, NextHop::Local);
    assert!(r.remove_local_prefix(ms(2), net));
    let route = r.route_to(net).unwrap();
    assert_eq!(
        (route.cost, route.next_hop, route.next_index),
        (5, NextHop::Neighbour(A), 6)
    );
}

#[test]
fn longest_prefix_match_and_address_queries() {
    let mut r = Router::new(Config::new(1), ms(0));
    r.link_up(ms(0), A, 1).unwrap();
    let wide = v4([10, 0, 0, 0], 8);
    let narrow = v4([10, 1, 0, 0], 16);
    let local = v6(1, 48);
    r.handle_message(
        ms(0),
        A,
        &prefix_update(10, &[(wide, 1, 3), (narrow, 2, 4)]),
    )
    .unwrap();
    let local_index = r.add_local_prefix(ms(0), local).unwrap();
    let (p, route) = r.lookup_v4([10, 1, 2, 3]).unwrap();
    assert_eq!((IpPrefix::V4(p), route.cost), (narrow, 3));
    let (p, _) = r.lookup_v4([10, 2, 2, 3]).unwrap();
    assert_eq!(IpPrefix::V4(p), wide);
    assert_eq!(r.lookup_v4([11, 0, 0, 1]), None);

    // A host asks which prefixes hold three addresses.
    let ask = |a: [u8; 4]| PrefixEntry {
        prefix: v4(a, 32),
        cost: 0,
        index: 0,
    };
    let mut host6 = [0u8; 16];
    host6[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 1]);
    host6[15] = 5;
    let questions = [
        ask([10, 1, 2, 3]),
        ask([11, 0, 0, 1]),
        PrefixEntry {
            prefix: IpPrefix::V6(Prefix6::new(host6, 128).unwrap()),
            cost: 0,
            index: 0,
        },
    ];
    let mut query = Vec::new();
    Advertisement::emit_prefixes(MessageKind::AddressQuery, 900, &questions, &mut query);
    let before: Vec<_> = r.routes().collect();
    let mut answer = Vec::new();
    assert_eq!(r.answer_query(&query, &mut answer), Ok(3));
    assert_eq!(r.routes().collect::<Vec<_>>(), before);
    let adv = Advertisement::parse(&answer).unwrap();
    assert_eq!(adv.kind(), MessageKind::AddressAnswer);
    let got: Vec<(IpPrefix, u16, u32)> = adv
        .prefix_entries()
        .map(|e| (e.prefix, e.cost, e.index))
        .collect();
    assert_eq!(
        got,
        vec![
            (narrow, 3, r.index_of_dest(narrow).unwrap()),
            (v4([11, 0, 0, 1], 32), UNREACHABLE, 0),
            (local, 0, local_index),
        ]
    );
    // Host messages are not routing messages, and answers are not queries.
    assert_eq!(
        r.handle_message(ms(0), A, &query),
        Err(HandleError::HostMessage)
    );
    assert_eq!(
        r.answer_query(&answer, &mut Vec::new()),
        Err(HandleError::NotAQuery)
    );
}

#[test]
fn bad_prefix_updates_change_nothing() {
    let mut r = Router::new(Config::new(1), ms(0));
    r.link_up(ms(0), A, 1).unwrap();
    let net = v4([10, 0, 0, 0], 8);
    r.handle_message(ms(0), A, &prefix_update(10, &[(net, 1, 3)]))
        .unwrap();
    let before: Vec<_> = r.routes().collect();
    assert_eq!(
        r.handle_message(ms(1), A, &prefix_update(10, &[(net, 17, 3)])),
        Err(HandleError::CostAboveInfinity)
    );
    let mut bad = prefix_update(10, &[(net, 1, 3)]);
    bad[8] = 9;
    assert_eq!(
        r.handle_message(ms(1), A, &bad),
        Err(HandleError::Wire(WireError::BadFamily(9)))
    );
    assert_eq!(r.routes().collect::<Vec<_>>(), before);
}

#[test]
fn a_full_table_refuses_a_local_prefix() {
    let mut cfg = Config::new(1);
    cfg.max_destinations = 2;
    let mut r = Router::new(cfg, ms(0));
    assert!(r.add_local_prefix(ms(0), v4([10, 0, 0, 0], 8)).is_ok());
    assert_eq!(
        r.add_local_prefix(ms(0), v4([11, 0, 0, 0], 8)),
        Err(LocalError::TableFull)
    );
    assert_eq!(r.local_prefixes().count(), 1);
    assert_eq!(r.route_to(v4([11, 0, 0, 0], 8)), None);
}

/// 150 prefixes and 150 router ids: every message fits one datagram, prefix updates carry
/// at most 60 entries, and together they carry every destination once.
#[test]
fn full_updates_are_split_to_fit_a_datagram() {
    let mut cfg = Config::new(1);
    cfg.max_entries = 1_000;
    let mut r = Router::new(cfg, ms(0));
    assert_eq!(r.config().max_entries, 121);
    r.link_up(ms(0), A, 1).unwrap();
    let routers: Vec<AdvEntry> = (0..150)
        .map(|i| AdvEntry {
            dest: 1_000 + i,
            cost: 1,
            index: i,
        })
        .collect();
    for chunk in routers.chunks(100) {
        let mut msg = Vec::new();
        Advertisement::emit(MessageKind::Update, 10, chunk, &mut msg);
        r.handle_message(ms(0), A, &msg).unwrap();
    }
    for i in 0..150u16 {
        r.add_local_prefix(ms(0), v6(i, 64)).unwrap();
    }
    r.link_up(ms(0), B, 1).unwrap();
    let sent: Vec<Transmit> = drain(&mut r).into_iter().filter(|t| t.iface == B).collect();
    let mut prefixes = 0;
    let mut ids = 0;
    for t in &sent {
        assert!(t.bytes.len() <= MAX_MESSAGE_LEN, "{} bytes", t.bytes.len());
        let adv = Advertisement::parse(&t.bytes).unwrap();
        match adv.kind() {
            MessageKind::PrefixUpdate => {
                assert!(adv.len() <= MAX_PREFIX_ENTRIES);
                prefixes += adv.len();
            }
            MessageKind::Update => ids += adv.len(),
            _ => {}
        }
    }
    assert_eq!((ids, prefixes), (151, 150));
}

// ---------------------------------------------------------------------------------------
// Random networks.

/// Path costs in these graphs stay below 10 · 9 = 90.
const INFINITY: u16 = 128;
const SETTLE_MS: u64 = 20_000;

/// A random connected graph: a random spanning tree plus extra edges, costs 1..=10 (as in
/// `tests/dv_sim.rs`).
fn graph() -> impl Strategy<Value = (usize, Vec<(usize, usize, u16)>)> {
    (2usize..=8).prop_flat_map(|n| {
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

/// A random prefix from a small space, so that prefixes of different routers nest:
/// IPv4 under 10.0.0.0/14, IPv6 under 2001:db8::/30.
fn prefix() -> impl Strategy<Value = IpPrefix> {
    prop_oneof![
        (any::<u32>(), 8u8..=30).prop_map(|(a, l)| {
            let a = 0x0a00_0000 | (a & 0x0003_ffff);
            let mask = u32::MAX << (32 - u32::from(l));
            IpPrefix::V4(Prefix::new((a & mask).to_be_bytes(), l).unwrap())
        }),
        (any::<u128>(), 16u8..=64).prop_map(|(a, l)| {
            let a = (0x2001_0db8u128 << 96) | (a >> 98);
            let mask = u128::MAX << (128 - u32::from(l));
            IpPrefix::V6(Prefix6::new((a & mask).to_be_bytes(), l).unwrap())
        }),
    ]
}

/// Each router's one or two IPv4 and one or two IPv6 prefixes.
fn origins(n: usize) -> impl Strategy<Value = Vec<Vec<IpPrefix>>> {
    let v4 = prefix().prop_filter("v4", |p| matches!(p, IpPrefix::V4(_)));
    let v6 = prefix().prop_filter("v6", |p| matches!(p, IpPrefix::V6(_)));
    let one = (
        proptest::collection::vec(v4, 1..=2),
        proptest::collection::vec(v6, 1..=2),
    )
        .prop_map(|(mut a, b)| {
            a.extend(b);
            a
        });
    proptest::collection::vec(one, n)
}

/// Originates the prefixes (each at the first router that names it) and returns the
/// (originator, prefix) pairs.
fn originate(net: &mut Network, origins: &[Vec<IpPrefix>]) -> Vec<(usize, IpPrefix)> {
    let mut owned: Vec<(usize, IpPrefix)> = Vec::new();
    for (r, list) in origins.iter().enumerate() {
        for &p in list {
            if !owned.iter().any(|&(_, q)| q == p) {
                assert!(net.add_prefix(r, p));
                owned.push((r, p));
            }
        }
    }
    owned
}

fn contains(p: IpPrefix, probe: IpPrefix) -> bool {
    match (p, probe) {
        (IpPrefix::V4(p), IpPrefix::V4(a)) => p.contains(a.addr()),
        (IpPrefix::V6(p), IpPrefix::V6(a)) => p.contains(a.addr()),
        _ => false,
    }
}

/// An address inside `p` (its last address bit set when the prefix leaves room), as a
/// full-length prefix.
fn probe_in(p: IpPrefix) -> IpPrefix {
    match p {
        IpPrefix::V4(p) => {
            let a = u32::from_be_bytes(p.addr()) | 1;
            v4(a.to_be_bytes(), 32)
        }
        IpPrefix::V6(p) => {
            let a = u128::from_be_bytes(p.addr()) | 1;
            IpPrefix::V6(Prefix6::new(a.to_be_bytes(), 128).unwrap())
        }
    }
}

fn lookup(r: &Router, probe: IpPrefix) -> Option<(IpPrefix, u16)> {
    match probe {
        IpPrefix::V4(a) => r
            .lookup_v4(a.addr())
            .map(|(p, route)| (IpPrefix::V4(p), route.cost)),
        IpPrefix::V6(a) => r
            .lookup_v6(a.addr())
            .map(|(p, route)| (IpPrefix::V6(p), route.cost)),
    }
}

/// Checks every router's route to every originated prefix against Floyd–Warshall, traces
/// the threaded labels to the originator, checks longest-prefix match on an address in
/// every prefix, and checks that no router still reaches a withdrawn prefix.
fn check(
    net: &Network,
    owned: &[(usize, IpPrefix)],
    withdrawn: &[IpPrefix],
) -> Result<(), TestCaseError> {
    let dist = net.shortest_paths();
    for (s, row) in dist.iter().enumerate() {
        let router = net.router(s);
        for &(o, p) in owned {
            let route = router.route_to(p);
            match row[o] {
                Some(w) => {
                    let route = route
                        .ok_or_else(|| TestCaseError::fail(format!("{s}: no route to {p:?}")))?;
                    prop_assert_eq!(u32::from(route.cost), w, "cost {} -> {:?}", s, p);
                    let path = net
                        .trace_dest(s, p, o)
                        .map_err(|e| TestCaseError::fail(format!("trace {s}->{p:?}: {e}")))?;
                    prop_assert_eq!(net.path_cost(&path), Some(w), "path {:?}", path);
                }
                None => {
                    prop_assert!(route.is_none_or(|r| r.cost == INFINITY));
                    prop_assert!(net.trace_dest(s, p, o).is_err());
                }
            }
        }
        for &p in withdrawn {
            prop_assert!(
                router.route_to(p).is_none_or(|r| r.cost == INFINITY),
                "{} still reaches withdrawn {:?}",
                s,
                p
            );
        }
        // Longest-prefix match: the longest reachable originated prefix holding the probe.
        for &(_, p) in owned {
            let probe = probe_in(p);
            let want = owned
                .iter()
                .filter(|&&(o, q)| row[o].is_some() && contains(q, probe))
                .max_by_key(|&&(_, q)| q.len())
                .map(|&(o, q)| (q, u16::try_from(row[o].unwrap()).unwrap()));
            prop_assert_eq!(lookup(router, probe), want, "{} looking up {:?}", s, probe);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn prefixes_converge_to_shortest_paths(
        (n, links, origins) in graph().prop_flat_map(|(n, l)| (Just(n), Just(l), origins(n))),
    ) {
        let mut net = Network::new(n, &links, INFINITY);
        let owned = originate(&mut net, &origins);
        net.run_for(SETTLE_MS);
        check(&net, &owned, &[])?;
    }

    /// A link fails and a prefix is withdrawn: routes follow the new shortest paths, the
    /// withdrawn prefix disappears everywhere (and is garbage collected). Then the link
    /// comes back and the prefix is originated again: everything is re-learned.
    #[test]
    fn failures_and_withdrawals_are_unlearned_and_relearned(
        (n, links, origins) in graph().prop_flat_map(|(n, l)| (Just(n), Just(l), origins(n))),
        link in any::<prop::sample::Index>(),
        gone in any::<prop::sample::Index>(),
    ) {
        let mut net = Network::new(n, &links, INFINITY);
        let mut owned = originate(&mut net, &origins);
        net.run_for(SETTLE_MS);
        check(&net, &owned, &[])?;

        let link = link.index(links.len());
        let cost = net.links()[link].cost;
        prop_assert!(net.set_link(link, None));
        let (owner, withdrawn) = owned.remove(gone.index(owned.len()));
        prop_assert!(net.add_prefix(owner, withdrawn), "re-adding a local prefix is fine");
        prop_assert!(net.remove_prefix(owner, withdrawn));
        net.run_for(SETTLE_MS);
        check(&net, &owned, &[withdrawn])?;
        for s in 0..n {
            prop_assert_eq!(net.router(s).route_to(withdrawn), None, "{} not collected", s);
        }

        prop_assert!(net.set_link(link, Some(cost)));
        prop_assert!(net.add_prefix(owner, withdrawn));
        owned.push((owner, withdrawn));
        net.run_for(SETTLE_MS);
        check(&net, &owned, &[])?;
    }
}

/// A ring loses a link: the prefix behind it is reached the long way round, and the first
/// label now names the new neighbour's index.
#[test]
fn ring_failure_reroutes_a_prefix() {
    let mut net = Network::new(4, &[(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 0, 1)], 16);
    let lan = v6(0xbeef, 48);
    assert!(net.add_prefix(1, lan));
    net.run_for(5_000);
    assert_eq!(net.trace_dest(0, lan, 1).unwrap(), vec![0, 1]);
    assert!(net.set_link(0, None));
    net.run_for(5_000);
    assert_eq!(net.trace_dest(0, lan, 1).unwrap(), vec![0, 3, 2, 1]);
    let route = net.router(0).route_to(lan).unwrap();
    assert_eq!(route.cost, 3);
    assert_eq!(route.next_index, net.router(3).index_of_dest(lan).unwrap());
}

/// Two routers at the ends of a line originate the same prefix (anycast): everyone
/// reaches the nearer one, and when one withdraws, everyone reaches the other.
#[test]
fn anycast_prefix_goes_to_the_nearer_originator() {
    let mut net = Network::new(5, &[(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 4, 1)], 16);
    let any = v4([192, 0, 2, 0], 24);
    assert!(net.add_prefix(0, any));
    assert!(net.add_prefix(4, any));
    net.run_for(5_000);
    assert_eq!(net.trace_dest(1, any, 0).unwrap(), vec![1, 0]);
    assert_eq!(net.trace_dest(3, any, 4).unwrap(), vec![3, 4]);
    assert_eq!(net.router(2).route_to(any).unwrap().cost, 2);
    assert!(net.remove_prefix(0, any));
    net.run_for(5_000);
    assert_eq!(net.trace_dest(1, any, 4).unwrap(), vec![1, 2, 3, 4]);
    assert_eq!(net.router(0).route_to(any).unwrap().cost, 4);
}
