//! `Node::reconfigure`: a new config applied to a running node keeps the ESS bindings, the
//! link states and the learned routes the change does not touch.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use ess::{HashKey, Tag};
use fastpath::lpm::IpPrefix;
use waist_node::routes::prefix;
use waist_node::{
    Config, ConfigError, Diff, EspConfig, IfaceConfig, Instant, Node, RoutingFate, SnapEss,
    StoreFate,
};

const T: Instant = Instant::ZERO;

fn p(a: [u8; 4], len: u8) -> IpPrefix {
    prefix(a.into(), len).unwrap()
}

/// A router with `n` links, ESP counting at input ports only (so a binding is tied to the
/// link a packet came in on), stores keyed by `seed`.
fn config(n: usize, seed: u64) -> Config {
    let mut c = Config::router([10, 0, 0, 1].into(), n);
    let mut esp = EspConfig::new(1, 8, HashKey::from_seed(seed)).unwrap();
    esp.sites = Loc::INPUT;
    c.esp = Some(esp);
    c
}

/// A COUNT packet (threshold 3) from 10.1.0.1 to 10.2.0.7.
fn count() -> Vec<u8> {
    Endpoint::new(5, [10, 1, 0, 1].into())
        .with_loc(Loc::INPUT)
        .packet_to(
            [10, 2, 0, 7].into(),
            &Instruction::Count {
                counter: Tag(9),
                thresh: 3,
            },
            &[],
        )
        .unwrap()
}

/// Where `packet` arriving on `iface` leaves, if it does.
fn out(node: &mut Node, iface: usize, mut packet: Vec<u8>) -> Option<usize> {
    node.handle_packet(T, iface, &mut packet).map(|t| t.iface)
}

/// Links a, b, c; the route to 10.2/16 over c; three COUNTs arrive on b.
fn counted_three_times() -> Node {
    let mut c = config(3, 7);
    c.routes = vec![(p([10, 2, 0, 0], 16), vec![2])];
    let mut node = Node::new(c, T).unwrap();
    for _ in 0..3 {
        assert_eq!(out(&mut node, 1, count()), Some(2));
    }
    node
}

#[test]
fn ess_bindings_follow_their_link_when_links_are_renumbered() {
    let mut node = counted_three_times();
    // Link a removed: b is now 0, c is 1; a route added over b.
    let mut c = config(2, 7);
    c.routes = vec![
        (p([10, 2, 0, 0], 16), vec![1]),
        (p([10, 3, 0, 0], 16), vec![0]),
    ];
    let done = node.reconfigure(T, c, &[Some(1), Some(2)]).unwrap();
    assert_eq!(done.esp, StoreFate::Kept);
    assert_eq!(
        done.routes,
        Diff {
            added: 1,
            removed: 0,
            changed: 0
        },
        "the route over c only changed its number"
    );
    // b's input context came along: the fourth COUNT is over the threshold.
    assert_eq!(out(&mut node, 0, count()), None);
    assert_eq!(node.stats().dropped.esp, 1);
    // The new route works, and the counters carried on.
    let mut to3 = vec![0u8; 28];
    waist_ip::emit_header(
        &mut to3,
        [10, 1, 0, 1].into(),
        [10, 3, 0, 3].into(),
        17,
        64,
        8,
    )
    .unwrap();
    assert_eq!(out(&mut node, 1, to3), Some(0));
    assert!(node.stats().balanced());
}

#[test]
fn ess_bindings_are_lost_only_when_the_store_changes() {
    // The same change with another key: the stores are rebuilt, the count starts over.
    let mut node = counted_three_times();
    let mut c = config(2, 8);
    c.routes = vec![(p([10, 2, 0, 0], 16), vec![1])];
    let done = node.reconfigure(T, c, &[Some(1), Some(2)]).unwrap();
    assert_eq!(done.esp, StoreFate::Rebuilt);
    assert_eq!(out(&mut node, 0, count()), Some(1));
    // And a link that was not b's takes b's place: its context is empty, so a COUNT
    // arriving on it passes.
    let mut node = counted_three_times();
    let mut c = config(2, 7);
    c.routes = vec![(p([10, 2, 0, 0], 16), vec![1])];
    node.reconfigure(T, c, &[None, Some(2)]).unwrap();
    assert_eq!(out(&mut node, 0, count()), Some(1));
}

#[test]
fn a_config_that_does_not_validate_changes_nothing() {
    let mut node = counted_three_times();
    let mut c = config(3, 7);
    c.routes = vec![(p([10, 2, 0, 0], 16), vec![9])];
    assert_eq!(
        node.reconfigure(T, c, &[Some(0), Some(1), Some(2)])
            .unwrap_err(),
        ConfigError::UnknownIface { iface: 9 }
    );
    // The route and the counts are as they were.
    assert_eq!(node.config().ifaces.len(), 3);
    assert_eq!(out(&mut node, 1, count()), None);
}

#[test]
fn links_down_stay_down_and_routing_follows_the_renumbering() {
    let mut c = Config::router([10, 0, 0, 1].into(), 3);
    c.dv = Some(fastpath::dv::Config::new(0x0A00_0001));
    for f in &mut c.ifaces {
        *f = IfaceConfig::new(1500).with_dv(1);
    }
    c.originate = vec![p([10, 1, 0, 0], 16)];
    let mut node = Node::new(c.clone(), T).unwrap();
    node.set_link(T, 2, false);
    let links: Vec<(u16, u16)> = node.dv().unwrap().links().collect();
    assert_eq!(links, [(0, 1), (1, 1)]);
    // Link a removed; b costs 3 now; a fourth link d added; another prefix originated.
    let mut c2 = c.clone();
    c2.ifaces = vec![
        IfaceConfig::new(1500).with_dv(3),
        IfaceConfig::new(1500).with_dv(1),
        IfaceConfig::new(1500).with_dv(1),
    ];
    c2.originate = vec![p([10, 5, 0, 0], 16)];
    let done = node.reconfigure(T, c2, &[Some(1), Some(2), None]).unwrap();
    assert_eq!(done.routing, RoutingFate::Kept);
    assert_eq!(
        done.originate,
        Diff {
            added: 1,
            removed: 1,
            changed: 0
        }
    );
    // c (down before) is down as link 1; b is link 0 at cost 3; d is up.
    assert!(!node.routes().link_up(1));
    let links: Vec<(u16, u16)> = node.dv().unwrap().links().collect();
    assert_eq!(links, [(0, 3), (2, 1)]);
    let local: Vec<IpPrefix> = node.dv().unwrap().local_prefixes().collect();
    assert_eq!(local, [p([10, 5, 0, 0], 16)]);
    // New timers restart routing.
    let mut c3 = node.config().clone();
    c3.dv.as_mut().unwrap().update_interval = 5_000;
    let done = node
        .reconfigure(T, c3, &[Some(0), Some(1), Some(2)])
        .unwrap();
    assert_eq!(done.routing, RoutingFate::Restarted);
    let links: Vec<(u16, u16)> = node.dv().unwrap().links().collect();
    assert_eq!(links, [(0, 3), (2, 1)], "the down link stays down");
}

#[test]
fn snap_services_keep_their_store_unless_it_changes() {
    let mut c = Config::router([10, 0, 0, 1].into(), 2);
    c.snap = true;
    c.snap_ess = Some(SnapEss::for_rate(100, HashKey::from_seed(3)).unwrap());
    let mut node = Node::new(c.clone(), T).unwrap();
    let keep = node.reconfigure(T, c.clone(), &[Some(0), Some(1)]).unwrap();
    assert_eq!(keep.snap_ess, StoreFate::Kept);
    assert_eq!(keep.esp, StoreFate::Absent);
    let mut other = c.clone();
    other.snap_ess = Some(SnapEss::for_rate(100, HashKey::from_seed(4)).unwrap());
    let rebuilt = node.reconfigure(T, other, &[Some(0), Some(1)]).unwrap();
    assert_eq!(rebuilt.snap_ess, StoreFate::Rebuilt);
    c.snap_ess = None;
    let stopped = node.reconfigure(T, c, &[Some(0), Some(1)]).unwrap();
    assert_eq!(stopped.snap_ess, StoreFate::Stopped);
    assert!(node.vm_mut().is_some(), "SNAP still runs, without services");
}
